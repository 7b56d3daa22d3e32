"""Entry point of the ``coreb`` command.

Each command is a module in :mod:`coreb_cli.commands` with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; adding a command is one module plus one line
in ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from coreb_cli.commands import build, compare, evaluate, execute, qualcode, release
from sandbox.isolation import IsolationUnavailable
from sandbox.languages import ToolchainMissing

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args._command.run(args)
    except (ValueError, TypeError, OSError, ToolchainMissing, IsolationUnavailable) as err:
        # Bad input is the user's to fix: say what and where, without a traceback.
        args._parser.exit(2, f"coreb {args.command}: error: {err}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
