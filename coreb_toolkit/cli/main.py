"""Entry point of the ``coreb`` command.

Each command is a module in :mod:`coreb_toolkit.cli.commands` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding a command is one module plus one line
in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from coreb_toolkit.cli.commands import build, compare, evaluate, execute, qualcode, release
from coreb_toolkit.sandbox.isolation import IsolationUnavailable, SandboxError
from coreb_toolkit.sandbox.languages import ToolchainMissing

COMMANDS = (release, build, qualcode, evaluate, compare, execute)

DESCRIPTION = """\
Quality-aware code-search benchmarks (CoREB, QualCode) on the Hugging Face stack.

Run `coreb <command> --help` for the arguments and an example of each command."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coreb",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    sub.required = True
    for command in COMMANDS:
        p = sub.add_parser(
            command.NAME,
            help=command.HELP,
            description=command.DESCRIPTION,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(_command=command, _parser=p)
    return parser


class Interrupted(KeyboardInterrupt):
    """A termination signal, raised in the main thread like Ctrl-C's ``KeyboardInterrupt``, so
    that every ``finally`` and context manager on the way out cleans up (the executor kills its
    sandboxes and removes their cgroups and folders; the lock on ``--out`` is released)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum: int, frame: object) -> None:
    # Once: a second signal must not cut the cleanup the first one started short (SIGKILL
    # still ends everything, and the next run reclaims what that leaves).
    for sig in STOP_SIGNALS:
        signal.signal(sig, _note_signal)
    raise Interrupted(signum)


def _note_signal(signum: int, frame: object) -> None:
    logging.getLogger(__name__).warning(
        "%s received while cleaning up: finishing the cleanup", signal.Signals(signum).name
    )


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """While the command runs, SIGINT, SIGTERM and SIGHUP interrupt it as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        with _signals_interrupt():
            return args._command.run(args)
    except KeyboardInterrupt as err:
        signum = getattr(err, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        sys.stderr.write(
            f"coreb {args.command}: interrupted by {name}: the work in flight was stopped and "
            "cleaned up; what was written is kept (run the same command again to resume)\n"
        )
        return 128 + signum  # as a shell reports a process ended by that signal
    except (
        ValueError, TypeError, OSError, ToolchainMissing, IsolationUnavailable, SandboxError,
    ) as err:  # fmt: skip
        # Bad input is the user's to fix, a broken sandbox the operator's: say what and where,
        # without a traceback.
        args._parser.exit(2, f"coreb {args.command}: error: {err}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
