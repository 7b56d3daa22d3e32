"""The fields of CodeNet-style records, read strictly, and the repairs of how code was stored.

Used by :mod:`coreb_toolkit.sources.codenet`: a malformed field raises :class:`Malformed` with a
message that says which field and what came; code gets ``"\\n"`` line endings and, where a
source stored every line break twice, single ones again (:func:`undouble_newlines`).
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

PROBLEM_ID = re.compile(r"p\d+")
"""A CodeNet problem id (``p03371``)."""
SUBMISSION_ID = re.compile(r"s\d+")
"""A CodeNet submission id (``s504204235``)."""


class Malformed(Exception):
    """A record that cannot be read; its message says what is wrong with it."""


def string_field(row: dict[str, Any], name: str, pattern: re.Pattern[str] | None = None) -> str:
    """``row[name]``, a string (matching ``pattern`` in full, when given)."""
    value = row.get(name)
    if not isinstance(value, str):
        got = "nothing" if name not in row else f"{type(value).__name__} {value!r}"
        raise Malformed(f"field {name!r} must be a string, got {got}")
    if pattern is not None and not pattern.fullmatch(value):
        raise Malformed(f"field {name!r} = {value!r} is not a CodeNet id ({pattern.pattern})")
    return value


def optional_string_field(row: dict[str, Any], name: str) -> str | None:
    """``row[name]`` as a string, or ``None`` when absent or empty."""
    return None if row.get(name) in (None, "") else string_field(row, name)


def number_field(value: Any, name: str) -> float | None:
    """A non-negative finite number (numeric strings too); ``None`` when absent or empty."""
    if value is None or value == "":
        return None
    number = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)
    if not math.isfinite(number) or number < 0:
        raise Malformed(f"{name} must be a non-negative number, got {value!r}")
    return number


def pie_record(row: dict[str, Any], version: str, code_field: str) -> dict[str, Any]:
    """The submission fields of one side (``"v0"`` or ``"v1"``) of a PIE pair."""
    return {
        "problem_id": string_field(row, "problem_id", PROBLEM_ID),
        "submission_id": string_field(row, f"submission_id_{version}", SUBMISSION_ID),
        "language": string_field(row, "language"),
        "code": undouble_newlines(unify_newlines(string_field(row, code_field))),
        "cpu_time_ms": number_field(row.get(f"cpu_time_{version}"), f"cpu_time_{version}"),
        "memory_kb": number_field(row.get(f"memory_{version}"), f"memory_{version}"),
        "status": string_field(row, f"status_{version}"),
        "user_id": optional_string_field(row, "user_id"),
    }


def unify_newlines(text: str) -> str:
    """``"\\r\\n"`` and ``"\\r"`` line endings as ``"\\n"``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


_NEWLINE_RUN = re.compile(r"\n+")


def undouble_newlines(code: str) -> str:
    """Undo line breaks stored twice (``"\\r\\n"`` written as ``"\\n\\n"``).

    Code is taken as doubled when most of its runs of line breaks have an even length (in code
    as written, most lines follow each other with a single break); each run of ``k`` breaks
    then becomes ``ceil(k / 2)`` (a file mixing ``"\\n"`` and ``"\\r\\n"`` lines keeps its
    single breaks). A two-line program whose lines are one blank line apart is ambiguous, and
    is read as doubled.
    """
    runs = [len(m) for m in _NEWLINE_RUN.findall(code)]
    if not runs or 2 * sum(r % 2 == 0 for r in runs) <= len(runs):
        return code
    return _NEWLINE_RUN.sub(lambda m: "\n" * ((len(m[0]) + 1) // 2), code)


def decode_code(raw: bytes) -> str | None:
    """Code file bytes as text: UTF-8, else Shift-JIS (cp932, Japanese comments), else None."""
    for encoding in ("utf-8-sig", "cp932"):
        try:
            return unify_newlines(raw.decode(encoding))
        except UnicodeDecodeError:
            continue
    return None
