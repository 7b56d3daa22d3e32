"""What strangers hand us, read safely; what they wrote, shown safely.

Submissions, pushed folders, checkpoints and cards come from people we do not know, and what we
publish shows their strings to other people. One place holds the rules, so every reader and
every page applies the same ones.

Reading -- every error is a ``ValueError`` naming the file (and the line):

* :func:`inside` resolves a path under a folder a command was given and refuses what leaves it
  (``..``, a symlink pointing out) and what is not a regular file (a FIFO, ``/dev/zero``, a
  socket: reading them blocks or never ends);
* :func:`read_json` reads a JSON file of bounded size as UTF-8 and refuses ``NaN`` /
  ``Infinity`` (not JSON; Python's ``json`` takes them by default), numbers that overflow to an
  infinity, integers of more than :data:`MAX_INT_DIGITS` digits and nesting deeper than
  :data:`MAX_JSON_DEPTH` (a ``RecursionError`` later, in whatever walks the value);
  ``nonfinite=True`` takes ``NaN`` / ``Infinity`` where the writer is a library that writes
  them (a Trainer's ``trainer_state.json`` logs an infinite gradient norm as ``Infinity``);
* :func:`jsonl_objects` does the same per line of a JSON Lines file, each line an object, no
  line longer than ``max_line_bytes`` (a file with no newline is never read whole);
* :func:`bounded_lines` yields a binary file's lines, refusing one longer than the limit;
* :func:`check_finite` refuses non-finite floats anywhere in a value about to be published.

Showing:

* :func:`markdown_text`: a string safe in Markdown and in the HTML a Markdown renderer emits;
  :func:`markdown_code` / :func:`markdown_fence`: a string shown verbatim as inline code or a
  code block, whatever backticks it holds;
* :func:`csv_cell`: a string a spreadsheet shows as text, never runs as a formula (OWASP's
  "CSV injection" rule: a leading ``= + - @``, tab or carriage return is quoted with ``'``);
* :func:`plot_text`: a string matplotlib draws literally (no mathtext between ``$`` signs).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: the deepest nesting a JSON file we read may have (results, metadata and checkpoints need < 10)
MAX_JSON_DEPTH = 64
#: the most digits an integer in a JSON file may have (Python refuses > 4300 with a bare error)
MAX_INT_DIGITS = 64
#: the largest JSON file read whole (results.json of every subtask is well under 10 MiB)
MAX_JSON_BYTES = 256 * 1024 * 1024
#: the longest line of a JSON Lines or TREC file (one query's values, one ranked document)
MAX_LINE_BYTES = 16 * 1024 * 1024


# -- reading -----------------------------------------------------------------------------------


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str], what: str = "file") -> Path:
    """``path`` resolved, when it stays inside ``root``. ``path`` is absolute, or a path that
    begins with ``root`` as ``root`` was given (``root / name``, relative to the working folder
    when ``root`` is), or else a name relative to ``root``.

    A ``..`` or a symlink that leads out of ``root`` is refused, and so is anything but a
    regular file or a folder (``what="folder"`` asks for a folder). A missing path is returned
    as it is, resolved, for the caller to report.
    """
    base = Path(root).resolve()
    given = Path(path)
    if not given.is_absolute() and not given.is_relative_to(Path(root)):
        given = Path(root) / given
    resolved = given.resolve()
    if resolved != base and base not in resolved.parents:
        link = " (a symlink pointing out of it)" if _has_symlink(Path(root), given) else ""
        raise ValueError(
            f"{given}: leads outside {root}{link}; only what lies inside the folder is read"
        )
    try:
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        return resolved
    expected = stat.S_ISDIR if what == "folder" else stat.S_ISREG
    if not expected(mode):
        raise ValueError(f"{given}: not a regular {what} ({_kind(mode)}); it is not read")
    return resolved


def _has_symlink(root: Path, path: Path) -> bool:
    try:
        rel = path.relative_to(root)
    except ValueError:
        return path.is_symlink()
    current = root
    for part in rel.parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a file")):  # fmt: skip
        if test(mode):
            return name
    return "a special file"


def regular_file(path: str | os.PathLike[str]) -> Path:
    """``path`` when it is (or links to) a regular file; a FIFO, device or socket is refused."""
    target = Path(path)
    mode = target.stat().st_mode
    if not stat.S_ISREG(mode):
        raise ValueError(f"{target}: not a regular file ({_kind(mode)}); it is not read")
    return target


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write finite numbers (or null)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} overflows a float")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def json_value(text: str | bytes, where: str, *, nonfinite: bool = False) -> Any:
    """The JSON value of ``text``, refused (naming ``where``) as :func:`read_json` refuses."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise ValueError(
                f"{where}: not UTF-8 text (byte 0x{text[err.start]:02x} at offset {err.start}); "
                "JSON files are UTF-8"
            ) from None
    try:
        value = json.loads(
            text,
            parse_constant=None if nonfinite else _refuse_constant,
            parse_float=None if nonfinite else _float,
            parse_int=_int,
        )
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    _check_depth(value, where)
    return value


def _check_depth(value: Any, where: str) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise ValueError(f"{where}: nested deeper than {MAX_JSON_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def read_json(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_JSON_BYTES, nonfinite: bool = False
) -> Any:
    """The JSON value of the file ``path``; see the module docstring for what is refused
    (``nonfinite``: ``NaN`` and ``Infinity`` are taken)."""
    target = Path(path)
    try:
        regular_file(target)
        with open(target, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ValueError(f"{target}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{target}: a folder, not a JSON file") from None
    except PermissionError:
        raise ValueError(f"{target}: not readable (permission denied)") from None
    if len(raw) > max_bytes:
        raise ValueError(f"{target}: larger than {max_bytes} bytes; it is not read")
    return json_value(raw, str(target), nonfinite=nonfinite)


def bounded_lines(
    path: str | os.PathLike[str], max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes]]:
    """``(line_number, raw_line)`` of a file, never holding more than one bounded line."""
    target = regular_file(path)
    with open(target, "rb") as handle:
        number = 0
        while True:
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line_bytes:
                raise ValueError(
                    f"{target}:{number}: the line is longer than {max_line_bytes} bytes; "
                    "it is not read"
                )
            yield number, raw


def jsonl_objects(
    path: str | os.PathLike[str], max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` of each non-blank line of a JSON Lines file of objects."""
    try:
        lines = bounded_lines(path, max_line_bytes)
        for number, raw in lines:
            if not raw.strip():
                continue
            where = f"{path}:{number}"
            value = json_value(raw, where)
            if not isinstance(value, dict):
                raise ValueError(
                    f"{where}: each line must be a JSON object, got {type(value).__name__}"
                )
            yield number, value
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None


def check_finite(value: Any, where: str) -> Any:
    """``value`` when no float in it is NaN or infinite; else a ``ValueError`` naming the key."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, key = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{where}: {key or 'the value'} is {item}; only finite numbers")
        if isinstance(item, dict):
            stack.extend((v, f"{key}.{k}" if key else str(k)) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, f"{key}[{i}]") for i, v in enumerate(item))
    return value


# -- showing -----------------------------------------------------------------------------------

# What Markdown, inline HTML, an autolinker or a page's LaTeX acts on inside a line: emphasis,
# code, link and image brackets (without '[' a '(' or '!' is text), HTML tags and entities,
# table pipes, strikethrough, the ':' of a bare URL and '$'. An '_' between two letters or
# digits never opens emphasis (CommonMark 6.2), so ``t2c_full_retro_any`` stays as it is. What
# acts only at a line start ('#', '-', '+', '1.') cannot: the text is never put at one and line
# breaks are removed.
_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>|~:&$]|(?<![^\W_])_|_(?![^\W_])")
_CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def markdown_text(text: Any) -> str:
    """``text`` safe in Markdown (a table cell, a list item, a heading): every character
    Markdown, HTML or an autolinker would act on is backslash-escaped; line breaks become
    spaces."""
    return _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), " ".join(str(text).split()))


def markdown_code(text: Any, *, table: bool = False) -> str:
    """``text`` as an inline code span, whatever backticks it holds: the fence is one backtick
    longer than its longest run (CommonMark 6.1); line breaks become spaces. Inside a span
    nothing is markup, so HTML and links show as text. ``table``: the span sits in a GFM table
    cell, where ``|`` ends the cell even inside a span unless written ``\\|``."""
    body = " ".join(str(text).split())
    if table:
        body = body.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def markdown_fence(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that no line of it can close (the fence is longer than
    any backtick run in it)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def csv_cell(text: Any) -> Any:
    """A CSV cell value a spreadsheet shows as text: a string that would start a formula is
    prefixed with ``'``; numbers pass unchanged."""
    if isinstance(text, str) and text.startswith(_CSV_FORMULA_START):
        return "'" + text
    return text


def plot_text(text: Any) -> str:
    """``text`` matplotlib draws as it is: ``$`` (mathtext) escaped, line breaks as spaces."""
    return " ".join(str(text).split()).replace("$", r"\$")


__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_LINE_BYTES",
    "bounded_lines",
    "check_finite",
    "csv_cell",
    "inside",
    "json_value",
    "jsonl_objects",
    "markdown_code",
    "markdown_fence",
    "markdown_text",
    "plot_text",
    "read_json",
    "regular_file",
]
