"""How a command's dataclasses become its parser: ``transformers.HfArgumentParser`` plus three
things it lacks, each small: positional fields, ``--config file.yaml`` (TRL's ``TrlParser``
habit: the file's values become defaults, flags on the command line override them, unknown keys
are an error) and help taken from a library dataclass's ``Args:`` docstring where its fields
carry no ``help`` metadata (so ``QrelsOptions`` keeps its one description).

A command is a :class:`Command`: its name, the dataclasses of its arguments (the first is the
command's own, further ones are library options such as ``coreb_dataset.QrelsOptions``), the
function that runs it and the phrase naming what it applies to (used when a flag of another
command is given: ``--k only applies with a run file (`coreb score`)``).

``transformers`` is imported here, and this module only once a command was named, so that
``coreb --help`` stays fast.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import HfArgumentParser
from transformers.hf_argparser import string_to_bool

#: the largest --config file read (an option file is a few hundred bytes)
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Command:
    """One ``coreb`` command (a leaf: ``coreb qualcode build`` is one, ``coreb qualcode`` not)."""

    name: str
    help: str
    description: str
    arguments: tuple[type, ...]
    run: Callable[..., int]
    mode: str
    epilog: str = ""
    # flags users bring from another command, with the message that says where they belong
    refused: Mapping[str, str] = field(default_factory=dict)
    # further spellings kept for compatibility (e.g. --no-control), added after the dataclasses
    extra_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    # the parser class of the leaf (a CommandParser subclass; the commands of a group share one)
    parser_class: type | None = None


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (they hold examples); every default shown, except
    the ``None`` of an option that is simply off unless given."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default is None or action.default is False:
            return action.help or ""
        return super()._get_help_string(action)


def docstring_help(dtype: type) -> dict[str, str]:
    """``{field: text}`` from the ``Args:`` section of a dataclass's docstring (Google style)."""
    doc = dtype.__doc__ or ""
    if "Args:" not in doc:
        return {}
    out: dict[str, str] = {}
    current: list[str] = []
    for line in doc.split("Args:", 1)[1].splitlines():
        if line.strip() and not line.startswith(" "):
            break
        match = re.match(r"^\s{4,8}([\w, ]+):\s*(.*)$", line)
        if match and not line.startswith(" " * 12):
            current = [name.strip() for name in match.group(1).split(",")]
            for name in current:
                out[name] = match.group(2).strip()
        elif line.strip() and current:
            for name in current:
                out[name] += " " + line.strip()
    return {name: text.replace("%", "%%") for name, text in out.items()}


class _Capture:
    """Stands in for a parser to learn the keyword arguments HfArgumentParser would pass."""

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self.kwargs = kwargs


class CommandParser(HfArgumentParser):
    """An ``HfArgumentParser`` for one command; see the module docstring."""

    #: help shows --top-k, not --top_k (both parse); "-" shows TRL's --output_dir spelling
    hidden_separator = "_"

    def __init__(self, dataclass_types: Sequence[type], **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)  # a flag is what it says, never a prefix
        self._docstring_help: dict[str, str] = {}
        super().__init__(dataclass_types, **kwargs)
        self.add_argument(
            "--config",
            type=Path,
            metavar="FILE.yaml",
            help="read option values from this YAML file (keys are the option names with "
            "underscores: top_k: 100); flags given on the command line override them",
        )

    def _add_dataclass_arguments(self, dtype: type) -> None:
        self._docstring_help = docstring_help(dtype)
        super()._add_dataclass_arguments(dtype)

    def _parse_dataclass_field(self, parser: Any, field: dataclasses.Field) -> None:
        meta = dict(field.metadata)
        positional = meta.pop("positional", False)
        if "help" not in meta and field.name in self._docstring_help:
            meta["help"] = self._docstring_help[field.name]
        field = copy.copy(field)  # HfArgumentParser rewrites .type; keep the class's own
        field.metadata = types.MappingProxyType(meta)
        if positional:
            capture = _Capture()
            HfArgumentParser._parse_dataclass_field(capture, field)
            kwargs = capture.kwargs
            if not kwargs.pop("required", False):
                kwargs["nargs"] = "*" if kwargs.get("nargs") == "+" else "?"
            kwargs.setdefault("metavar", field.name.upper())
            parser.add_argument(field.name, **kwargs)
            return
        HfArgumentParser._parse_dataclass_field(parser, field)
        action = parser._actions[-1]
        # --top-k parses as --top_k too (HfArgumentParser's two spellings); help shows one
        shown = [s for s in action.option_strings if self.hidden_separator not in s[2:]]
        if shown and len(shown) < len(action.option_strings):
            action.option_strings = shown

    def field_names(self) -> set[str]:
        return {f.name for t in self.dataclass_types for f in dataclasses.fields(t) if f.init}

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None):
        args = list(args) if args is not None else None
        if args is not None:
            pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
            pre.add_argument("--config", type=Path)
            found, _ = pre.parse_known_args(args)
            if found.config is not None:
                self.set_config_defaults(found.config)
        return super().parse_known_args(args, namespace)

    def read_config(self, path: Path) -> dict[str, Any]:
        """The option values of a YAML file (a mapping), keys with underscores."""
        import yaml

        from coreb_toolkit.untrusted import regular_file

        try:
            with open(regular_file(path), "rb") as handle:  # a FIFO or /dev/zero is not read
                raw = handle.read(MAX_CONFIG_BYTES + 1)
            if len(raw) > MAX_CONFIG_BYTES:
                raise ValueError(f"larger than {MAX_CONFIG_BYTES} bytes")
            values = yaml.safe_load(raw.decode("utf-8"))
        except (OSError, ValueError, yaml.YAMLError) as err:  # UnicodeDecodeError: a ValueError
            self.error(f"--config {path}: cannot read it: {err}")
        if values is None:
            values = {}
        if not isinstance(values, dict):
            self.error(f"--config {path}: expected a mapping of option: value, got {values!r}")
        return {str(k).replace("-", "_"): v for k, v in values.items()}

    def set_config_defaults(self, path: Path) -> None:
        """The values of a YAML file as this parser's defaults (TRL's ``set_defaults_with_config``:
        a flag given on the command line still wins)."""
        values = self.read_config(path)
        unknown = sorted(set(values) - self.field_names())
        if unknown:
            self.error(
                f"--config {path}: unknown option(s) {', '.join(unknown)} for {self.prog}; "
                f"the options are {', '.join(sorted(self.field_names()))}"
            )
        for action in self._actions:
            if action.dest not in values or isinstance(action, argparse._StoreFalseAction):
                continue
            value = self._config_value(path, action, values[action.dest])
            items = value if isinstance(value, list) else [value]
            if action.choices is not None and any(v not in action.choices for v in items):
                self.error(
                    f"--config {path}: {action.dest}: {value!r} is not one of "
                    f"{', '.join(map(str, action.choices))}"
                )
            action.default = value
            action.required = False
            if not action.option_strings:  # a positional the file gives: now optional
                action.nargs = {"+": "*", None: "?"}.get(action.nargs, action.nargs)

    def _config_value(self, path: Path, action: argparse.Action, value: Any) -> Any:
        """A YAML value as the same text on the command line parses: every scalar goes through
        the flag's type as its string (``1.5`` is no integer, a YAML date is its ISO text); a
        list only where the flag takes several values; ``null`` stays ``None``."""
        several = action.nargs in ("+", "*")
        if isinstance(value, list) and not several:
            self.error(f"--config {path}: {action.dest}: expected one value, got a list {value!r}")
        if action.type is None or value is None:
            return value
        items = value if isinstance(value, list) else [value]
        converted = []
        for item in items:
            try:
                if isinstance(item, (dict, list)):
                    raise TypeError("a mapping or list")
                converted.append(action.type(item if isinstance(item, str) else str(item)))
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                name = getattr(action.type, "__name__", "value")
                expected = _EXPECTED.get(action.type, f"a {name}")
                self.error(f"--config {path}: {action.dest}: expected {expected}, got {item!r}")
        return converted if several else converted[0]


#: how an error names the type a --config value must have, by the flag's converter
_EXPECTED = {int: "an integer", float: "a number", string_to_bool: "true or false", Path: "a path"}


def unknown_flag_message(flag: str, command: Command, owners: Sequence[Command]) -> str:
    """What to say about ``flag``, which ``command`` does not take, given the commands that do."""
    if flag in command.refused:
        return command.refused[flag]
    if owners:
        return f"{flag} only applies with " + " or ".join(c.mode for c in owners)
    return f"unrecognized argument {flag}; see `coreb {command.name} --help`"
