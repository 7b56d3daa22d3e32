"""Reference pages generated from the code, for the documentation site (``make docs``).

* :func:`cli_reference`: every ``coreb`` command with its description, its options (flags, help,
  default, choices) and its epilog, read from the parsers that the commands' argument
  dataclasses generate (:func:`coreb_toolkit.cli.main.command_parser`): the page and
  ``coreb <command> --help`` cannot disagree.
* :func:`subtask_reference`: the subtask table from :data:`coreb_toolkit.vocabulary.SUBTASKS`
  and the main tasks with their instructions from :data:`~coreb_toolkit.vocabulary.MAIN_TASKS`.

Every string is escaped for a Markdown table cell (``|``, ``<``, ``&``, backticks in code spans),
so a help text can never break the page or inject HTML.
"""

from __future__ import annotations

import argparse
import contextlib
import html
from collections.abc import Iterator

from coreb_toolkit.cli.main import COMMANDS, DESCRIPTION, command_parser, leaves
from coreb_toolkit.vocabulary import MAIN_TASKS, SUBTASKS

__all__ = ["cli_reference", "subtask_reference"]

#: the options every command has, documented once at the top of the page
_COMMON = {"-h", "--help", "--config"}


def _cell(text: str) -> str:
    """Text for one Markdown table cell: HTML escaped, pipes escaped, one line."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def _code(text: str) -> str:
    """A code span in a table cell: backticks and pipes cannot close it or the cell."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _help(action: argparse.Action) -> str:
    """The help as ``--help`` prints it (argparse's ``%(default)s`` / ``%%`` expanded)."""
    text = action.help or ""
    if "%" in text:
        params = {**vars(action), "prog": "coreb"}
        # a help with a bare % (third-party fields) is shown as written
        with contextlib.suppress(KeyError, TypeError, ValueError):
            text = text % params
    return text


def _default(action: argparse.Action) -> str:
    if action.required or isinstance(action, argparse._StoreTrueAction):
        return "required" if action.required else ""
    default = action.default
    if default is None or default is argparse.SUPPRESS or default == []:
        return ""
    if isinstance(default, (list, tuple)):
        default = " ".join(map(str, default))
    return _code(default)


def _options(parser: argparse.ArgumentParser) -> Iterator[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if set(action.option_strings) & _COMMON:
            continue
        if action.option_strings:
            flag = ", ".join(action.option_strings)
            if action.nargs != 0:
                flag += " " + (action.metavar or action.dest.upper())
        else:
            flag = action.metavar or action.dest
        name = _code(flag)
        help_text = _cell(_help(action))
        if action.choices is not None:
            help_text += " (one of " + ", ".join(_code(c) for c in action.choices) + ")"
        rows.append(f"| {name} | {help_text} | {_default(action)} |")
    if rows:
        yield "| option | what it does | default |"
        yield "|---|---|---|"
        yield from rows
        yield ""


def _text_block(text: str | None) -> Iterator[str]:
    if text:
        yield "```text"
        yield from text.strip("\n").splitlines()
        yield "```"
        yield ""


def cli_reference() -> str:
    """The CLI reference page's body (Markdown), every command and every option."""
    out = [
        "Generated from the commands' argument dataclasses (the parsers `coreb --help` prints);",
        "every command also takes `--config FILE.yaml` (its keys are the option names with",
        "underscores; flags on the command line override them) and `-h`/`--help`.",
        "",
        *_text_block(DESCRIPTION),
    ]
    for name, summary, _ in COMMANDS:
        out += [f"## coreb {name}", "", _cell(summary), ""]
        for leaf in leaves(command_parser(name)):
            if leaf.prog != f"coreb {name}":
                out += [f"### {leaf.prog}", ""]
            out += [*_text_block(leaf.description), *_options(leaf), *_text_block(leaf.epilog)]
    return "\n".join(out).rstrip("\n") + "\n"


def subtask_reference() -> str:
    """The main tasks and the subtask registry as Markdown tables."""
    out = [
        "| main task | queries | documents | instruction (instruction-following models) |",
        "|---|---|---|---|",
    ]
    for task in MAIN_TASKS.values():
        out.append(
            f"| {task.label} ({_cell(task.name)}) | {task.query_type} | {task.document_type} | "
            f"{_cell(task.instruction)} |"
        )
    out += [
        "",
        "| subtask (dataset config) | main task | variant | language | corpus ranked | "
        "main score | what it is |",
        "|---|---|---|---|---|---|---|",
    ]
    for meta in SUBTASKS.values():
        language = meta.language or "-"
        out.append(
            f"| `{meta.name}` | {MAIN_TASKS[meta.family].label} | {_cell(meta.variant)} | "
            f"{_cell(language)} | `{meta.corpus}` | `{meta.main_score}` | "
            f"{_cell(meta.description)} |"
        )
    return "\n".join(out) + "\n"
