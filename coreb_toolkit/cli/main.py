"""Entry point of the ``coreb`` command.

Each command is a module in :mod:`coreb_toolkit.cli.commands` whose ``COMMANDS`` holds its
:class:`~coreb_toolkit.cli.parsing.Command` (two for ``qualcode``: ``build`` and ``evaluate``):
a dataclass of its arguments, with ``help`` on every field and checks in ``__post_init__``, and
a ``run`` function. The parser is generated from the dataclasses by
``transformers.HfArgumentParser``, so the same dataclass serves Python, ``--config file.yaml``
and the command line. Adding a command is one module plus one line in :data:`COMMANDS`.

``coreb --help`` lists the commands without importing them (``transformers`` is slow to import):
a command's module and parser are built once it is named.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import IO

# name, one line of help, module under coreb_toolkit.cli.commands
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("release", "cut a CoREB release (official layout) from real problems, run in the sandbox",
     "release"),
    ("build", "build the Hub dataset folder (one config per subtask) from a CoREB release",
     "build"),
    ("qualcode", "QualCode: `qualcode build` the quality-aware reranking sets from CodeNet, "
     "`qualcode evaluate` scorers and rerankers on them", "qualcode"),
    ("evaluate", "run retrievers (and a reranker) over every subtask of a CoREB dataset",
     "evaluate"),
    ("score", "score TREC run files against TREC qrels under the CoREB protocol", "score"),
    ("compare", "paired significance test of run B against run A (p-value, bootstrap CI)",
     "compare"),
    ("execute", "run code candidates against their tests in the sandbox (results to JSONL)",
     "execute"),
    ("synh-rank", "SynH-Rank training data: `synh-rank data` builds verified quality lists, "
     "`synh-rank diversity` compares their candidates", "synh_rank"),
    ("train", "fine-tune rerankers: `train reranker` (the CoREB-Reranker, LoRA yes/no), "
     "`train synh-rank` (quality-aware, SynH-Rank's hierarchical lists)", "train"),
    ("card", "render a model card (YAML metadata, model-index, .eval_results) from results files",
     "card"),
    ("push", "upload a model, dataset or Space folder to the Hub in one commit (or --dry-run)",
     "push"),
    ("publish", "from a trained reranker checkpoint to the Hub: evaluate, write the card, push",
     "publish"),
    ("submit", "leaderboard submissions: `submit mteb` writes MTEB's results layout, validated by "
     "mteb", "submit"),
    ("leaderboard", "the CoREB leaderboard: `leaderboard validate` submissions, `build` its "
     "table and Space, `serve` the page", "leaderboard"),
)  # fmt: skip

DESCRIPTION = """\
Quality-aware code-search benchmarks (CoREB, QualCode) on the Hugging Face stack.

Run `coreb <command> --help` for the arguments and an example of each command; every command
also reads its options from `--config FILE.yaml`."""


def build_parser() -> argparse.ArgumentParser:
    """The top level: ``-v`` and the command names (each command parses its own arguments)."""
    parser = argparse.ArgumentParser(
        prog="coreb", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log progress details (INFO, every library)"
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    sub.required = True
    for name, text, _ in COMMANDS:
        sub.add_parser(name, help=text, add_help=False)
    return parser


def command_module(name: str) -> ModuleType:
    module = dict((n, m) for n, _, m in COMMANDS)[name]
    return importlib.import_module(f"coreb_toolkit.cli.commands.{module}")


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one top-level command, generated from its dataclasses."""
    from coreb_toolkit.cli.parsing import CommandParser, HelpFormatter

    module = command_module(name)
    leaves = module.COMMANDS
    classes = {c.parser_class or CommandParser for c in leaves}
    if len(classes) != 1:
        raise TypeError(f"the commands of coreb {name} must share one parser_class")
    leaf_class = classes.pop()
    if len(leaves) == 1 and leaves[0].name == name:
        parser = leaf_class(
            leaves[0].arguments,
            prog=f"coreb {name}",
            description=leaves[0].description,
            epilog=leaves[0].epilog or None,
        )
        pairs = [(leaves[0], parser)]
    else:  # a group: coreb qualcode build | evaluate
        parser = argparse.ArgumentParser(
            prog=f"coreb {name}", description=module.DESCRIPTION, formatter_class=HelpFormatter
        )
        sub = parser.add_subparsers(
            dest="action", metavar="<action>", parser_class=leaf_class, required=True
        )
        pairs = []
        for command in leaves:
            leaf = sub.add_parser(
                command.name.split()[-1],
                dataclass_types=command.arguments,
                help=command.help,
                description=command.description,
                epilog=command.epilog or None,
            )
            pairs.append((command, leaf))
    for command, leaf in pairs:
        if command.extra_arguments is not None:
            command.extra_arguments(leaf)
        leaf.set_defaults(_command=command, _parser=leaf)
    return parser


def leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The leaf parsers of a command (itself, or each action of a group such as qualcode)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for p in dict.fromkeys(subs[0].choices.values()) for leaf in leaves(p)]


def _owners(flag: str) -> list:
    """The commands that take ``flag`` (every command's parser is built: the error path only)."""
    owners = []
    for name, _, _ in COMMANDS:
        for leaf in leaves(command_parser(name)):
            if flag in leaf._option_string_actions:
                owners.append(leaf.get_default("_command"))
    return owners


def legacy_spelling(name: str, rest: list[str]) -> tuple[str, list[str], str | None]:
    """The command the old ``coreb evaluate`` spellings now are, for one release of transition:
    ``evaluate --qualcode DIR`` -> ``qualcode evaluate DIR``; ``evaluate RUN --qrels FILE`` ->
    ``score RUN --qrels FILE``. Returns the command, its arguments and the note to print."""
    if name != "evaluate":
        return name, rest, None
    for i, token in enumerate(rest):
        if token == "--qualcode" or token.startswith("--qualcode="):
            if "=" in token:
                folder, others = token.split("=", 1)[1], rest[:i] + rest[i + 1 :]
            elif i + 1 < len(rest):
                folder, others = rest[i + 1], rest[:i] + rest[i + 2 :]
            else:
                raise ValueError("--qualcode needs a folder: coreb qualcode evaluate DIR")
            if not any(t == "--out" or t.startswith("--out=") for t in others):
                raise ValueError(
                    "--qualcode needs --out DIR for results.json, summary.md and the plot: "
                    f"coreb qualcode evaluate {folder} --model bm25 --out results"
                )
            note = "`coreb evaluate --qualcode DIR` is now `coreb qualcode evaluate DIR`"
            return "qualcode", ["evaluate", folder, *others], note
    dataset = any(t == "--dataset" or t.startswith("--dataset=") for t in rest)
    qrels = any(t == "--qrels" or t.startswith("--qrels=") for t in rest)
    if not dataset and (qrels or (rest and not rest[0].startswith("-"))):
        note = "`coreb evaluate RUN --qrels FILE` is now `coreb score RUN --qrels FILE`"
        return "score", rest, note
    return name, rest, None


#: loggers whose INFO lines are progress (one per finished stage), shown without -v too
PROGRESS_LOGGERS = ("coreb_toolkit.releases.pipeline", "trainers.coreb_reranker_trainer",
                    "trainers.common", "coreb_toolkit.benchmark.runner",
                    "coreb_toolkit.retrieval.dense")  # fmt: skip


def configure_logging(verbose: bool, stream: IO[str] | None = None) -> None:
    """Log to stderr: WARNING and above, INFO too with ``-v``. The level is the handler's, so a
    library that sets its own logger to DEBUG (``bm25s`` does) stays quiet without ``-v``.
    Like ``logging.basicConfig``, nothing changes when the root logger already has a handler."""
    root = logging.getLogger()
    if root.handlers:
        return
    level = logging.INFO if verbose else logging.WARNING
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.INFO)
    if not verbose:
        # without -v only warnings, except the one-line-per-stage progress of long commands
        # (their bars show on a terminal only, so a log would otherwise say nothing for minutes)
        handler.addFilter(lambda r: r.levelno >= logging.WARNING or r.name in PROGRESS_LOGGERS)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)
    for name in PROGRESS_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


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
    """Run ``coreb`` with ``argv`` (default: the process's); returns the exit status."""
    top = build_parser()
    top_args, rest = top.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    configure_logging(top_args.verbose)
    name = typed = top_args.command
    try:
        name, rest, note = legacy_spelling(name, rest)
    except ValueError as err:
        top.exit(2, f"coreb {name}: error: {err}\n")
    if note:
        sys.stderr.write(f"coreb: note: {note}; the old spelling goes in the next release\n")
    try:
        parser = command_parser(name)
    except ImportError as err:  # an extra that is not installed (coreb train needs [train])
        top.exit(2, f"coreb {name}: error: {err}\n")
    args, extras = parser.parse_known_args(rest)
    command, leaf = args._command, args._parser
    # errors name the command the user typed, subcommand included (`coreb leaderboard build`)
    shown = typed if note else leaf.prog.removeprefix("coreb ")
    flags = [e.split("=", 1)[0] for e in extras if e.startswith("-")]
    if flags:
        from coreb_toolkit.cli.parsing import unknown_flag_message

        others = [c for c in _owners(flags[0]) if c is not command]
        leaf.exit(2, f"coreb {shown}: error: {unknown_flag_message(flags[0], command, others)}\n")
    if extras:
        leaf.error(f"unrecognized arguments: {' '.join(extras)}")
    from coreb_toolkit.sandbox.isolation import IsolationUnavailable, SandboxError
    from coreb_toolkit.sandbox.languages import ToolchainMissing

    try:
        configs = leaf.parse_dict(vars(args), allow_extra_keys=True)
        with _signals_interrupt():
            return command.run(*configs)
    except KeyboardInterrupt as err:
        signum = getattr(err, "signum", signal.SIGINT)
        sys.stderr.write(
            f"coreb {shown}: interrupted by {signal.Signals(signum).name}: the work in "
            "flight was stopped and cleaned up; what was written is kept (run the same command "
            "again to resume)\n"
        )
        return 128 + signum  # as a shell reports a process ended by that signal
    except (
        ValueError, TypeError, OSError, ToolchainMissing, IsolationUnavailable, SandboxError,
    ) as err:  # fmt: skip
        # Bad input is the user's to fix, a broken sandbox the operator's: say what and where,
        # without a traceback.
        leaf.exit(2, f"coreb {shown}: error: {err}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
