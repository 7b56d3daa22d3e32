"""Reading and writing TREC run and qrels files.

Run lines:   ``query_id Q0 doc_id rank score tag``  (whitespace separated)
Qrels lines: ``query_id iteration doc_id relevance``

Readers read a file as trec_eval reads it, and reject what trec_eval would silently misread or
what would make another tool read it differently. Errors name the file and the line:

* a file is UTF-8 text; fields are separated by ASCII whitespace (space, tab, CR, LF, VT, FF:
  C's ``isspace``, what trec_eval splits on). A field holding other whitespace (U+00A0,
  U+2003, U+001C-U+001F, ...) or a NUL is refused: trec_eval keeps it inside the field, Python's
  ``str.split`` and most tools split there;
* a relevance grade is ``[+-]?[0-9]+`` in ASCII digits, between 0 and
  :data:`eval_metrics.checks.MAX_RELEVANCE` (trec_eval reads it with C ``atol``, which turns
  ``1.5`` into 1, ``1_000`` into 1 and ``３`` into 0);
* a score is a decimal number in ASCII, read in full: an optional sign, digits with an optional
  point, an optional exponent (``1e5``, ``.5``, ``5.``, ``-0.25E-3``: the decimal forms C ``atof``
  reads). Digit separators (``1_000``), other scripts' digits (``０.５``, ``٠.٥``) and hex floats
  (``0x1p3``) are refused; so are NaN, infinities and scores beyond single precision
  (|score| > 3.4e38), which trec_eval would rank as ties;
* a duplicate (query, doc) pair, a wrong number of fields and an empty file are errors;
* a line longer than :data:`coreb_toolkit.untrusted.MAX_LINE_BYTES` is refused before it is
  held (a file with no newline is never read whole), and so is a FIFO or a device.

Lines whose first field starts with ``#`` are comments. Writers order each query's documents as
trec_eval ranks them (score descending, ties by doc id descending: :mod:`eval_metrics.trec_order`,
on the scores as written), number the ranks from 1, and refuse what a reader would refuse.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from coreb_toolkit.untrusted import MAX_LINE_BYTES, bounded_lines
from eval_metrics.checks import (
    FLOAT32_MAX,
    Qrels,
    Run,
    check_ranking_score,
    check_relevance,
    relevance_out_of_range,
)
from eval_metrics.trec_order import trec_order

PathLike = str | os.PathLike

# Characters Python's str.split (and most tools) treat as separators but C's isspace does not,
# and NUL, where a C string ends.
_ODD_CHARACTER = re.compile(
    "[\x00\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_ODD_ASCII = re.compile(rb"[\x00\x1c-\x1f]")
_GRADE = re.compile(r"[+-]?[0-9]+")  # [0-9], not \d: ASCII digits only
# Digits beyond which a grade is out of range whatever they are (int() of a 5,000-digit string
# would stop at Python's digit limit).
_GRADE_DIGITS = len(str(2**63))


def _decoded(raw: bytes, where: str) -> str:
    if raw.isascii() and not _ODD_ASCII.search(raw):  # the common case, decoded at C speed
        return raw.decode("ascii")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{where}: the line is not valid UTF-8 (byte 0x{raw[err.start]:02x} at column "
            f"{err.start + 1}); TREC files are read as UTF-8 text, re-encode the file"
        ) from None
    odd = _ODD_CHARACTER.search(text)
    if odd:
        char = odd.group()
        kind = "a NUL character" if char == "\x00" else f"the whitespace U+{ord(char):04X}"
        raise ValueError(
            f"{where}: column {odd.start() + 1} holds {kind}: trec_eval keeps it inside a field "
            "but Python and most tools split fields there; separate fields with spaces or tabs "
            "and keep ids free of it"
        )
    return text


def _lines(path: PathLike) -> Iterator[tuple[int, list[str]]]:
    # one bounded line at a time: a file without newlines is refused, never read whole
    for number, raw in bounded_lines(path, MAX_LINE_BYTES):
        fields = _decoded(raw, f"{path}:{number}").split()
        if fields and not fields[0].startswith("#"):
            yield number, fields


def _score(text: str, where: str, query_id: str, doc_id: str) -> float:
    """A score field as C atof reads it in full, refused where atof would read it otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = None
    # float() also takes digit separators and other scripts' digits, which atof does not
    if value is None or not text.isascii() or "_" in text:
        raise ValueError(
            f"{where}: score {text!r} is not a number in ASCII decimal notation (trec_eval "
            "reads scores with C atof: an optional sign, digits 0-9 with an optional point and "
            "exponent; no digit separators, hex or other scripts' digits)"
        )
    if -FLOAT32_MAX <= value <= FLOAT32_MAX:  # NaN fails both comparisons
        return value
    try:
        return check_ranking_score(value, query_id, doc_id)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def _grade(text: str, where: str, query_id: str, doc_id: str) -> int:
    """A relevance field as C atol reads it in full, refused where atol would misread it."""
    if not _GRADE.fullmatch(text):
        raise ValueError(
            f"{where}: qrels[{query_id!r}][{doc_id!r}] must be a non-negative integer "
            f"relevance grade written with ASCII digits (trec_eval reads it with C atol, which "
            f"misreads anything else), got {text!r}"
        )
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _GRADE_DIGITS:
        # its length alone decides (int() of a 5,000-digit string stops at Python's digit limit)
        if text.startswith("-"):
            raise ValueError(
                f"{where}: qrels[{query_id!r}][{doc_id!r}] must be a non-negative integer "
                f"relevance grade, got a negative {len(digits)}-digit integer"
            )
        shown = f"a {len(digits)}-digit integer"
        raise ValueError(f"{where}: {relevance_out_of_range(query_id, doc_id, shown)}")
    try:
        return check_relevance(int(text), query_id, doc_id)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def read_run(path: PathLike) -> dict[str, dict[str, float]]:
    """Read a TREC run file into ``{query_id: {doc_id: score}}``.

    The rank column is ignored (trec_eval ranks by score); duplicates are an error.
    """
    run: dict[str, dict[str, float]] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 6:
            raise ValueError(
                f"{where}: a run line has 6 fields 'query_id Q0 doc_id rank score tag', "
                f"got {len(fields)}: {' '.join(fields)!r}"
            )
        query_id, _, doc_id, _, score_text, _ = fields
        score = _score(score_text, where, query_id, doc_id)
        docs = run.setdefault(query_id, {})
        if doc_id in docs:
            raise ValueError(f"{where}: duplicate (query, doc) pair ({query_id!r}, {doc_id!r})")
        docs[doc_id] = score
    if not run:
        raise ValueError(f"{path}: the run file holds no line")
    return run


def read_qrels(path: PathLike) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file into ``{query_id: {doc_id: relevance}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 4:
            raise ValueError(
                f"{where}: a qrels line has 4 fields 'query_id iteration doc_id relevance', "
                f"got {len(fields)}: {' '.join(fields)!r}"
            )
        query_id, _, doc_id, rel_text = fields
        rel = _grade(rel_text, where, query_id, doc_id)
        docs = qrels.setdefault(query_id, {})
        if doc_id in docs:
            raise ValueError(f"{where}: duplicate (query, doc) pair ({query_id!r}, {doc_id!r})")
        docs[doc_id] = rel
    if not qrels:
        raise ValueError(f"{path}: the qrels file holds no line")
    return qrels


def _check_token(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        raise ValueError(
            f"{what} {value!r} cannot be written to a TREC file: it needs a "
            "non-empty str without whitespace"
        )
    if _ODD_CHARACTER.search(value) or (not value.isascii() and _unencodable(value)):
        raise ValueError(
            f"{what} {value!r} cannot be written to a TREC file: it holds a NUL or a lone "
            "surrogate, which a UTF-8 TREC file cannot carry"
        )
    return value


def _unencodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def write_run(run: Run, path: PathLike, tag: str = "coreb") -> Path:
    """Write ``{query_id: {doc_id: score}}`` as a TREC run file, ranked as trec_eval ranks."""
    _check_token(tag, "run tag")
    lines = []
    for query_id in sorted(run):
        _check_token(query_id, "query id")
        ranking = run[query_id]
        # trec_eval's order on the scores as given: they never rise down the file
        for rank, doc_id in enumerate(trec_order(ranking, single_precision=False), start=1):
            _check_token(doc_id, f"doc id (query {query_id!r})")
            score = check_ranking_score(ranking[doc_id], query_id, doc_id)
            lines.append(f"{query_id} Q0 {doc_id} {rank} {score!r} {tag}\n")
    return _write(path, lines)


def write_qrels(qrels: Qrels, path: PathLike) -> Path:
    """Write ``{query_id: {doc_id: relevance}}`` as a TREC qrels file."""
    lines = []
    for query_id in sorted(qrels):
        _check_token(query_id, "query id")
        for doc_id in sorted(qrels[query_id]):
            _check_token(doc_id, f"doc id (query {query_id!r})")
            rel = check_relevance(qrels[query_id][doc_id], query_id, doc_id)
            lines.append(f"{query_id} 0 {doc_id} {rel}\n")
    return _write(path, lines)


def _write(path: PathLike, lines: list[str]) -> Path:
    """Write all lines or nothing: a temporary file renamed into place."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
    return path


def read_exclusions(path: PathLike) -> dict[str, list[str]]:
    """Read per-query exclusions: JSON ``{query_id: doc_id | [doc_id, ...]}`` (the c2c anchor
    map ships as ``{query_id: anchor_code_id}``) or TSV lines ``query_id<TAB>doc_id``."""
    raw = Path(path).read_bytes()
    if raw.lstrip().startswith(b"{"):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            raise ValueError(f"{path}:{line}: the file is not valid UTF-8") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: not valid JSON: {err.msg}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object {{query_id: doc_id | [doc_id]}}")
        out: dict[str, list[str]] = {}
        for query_id, docs in data.items():
            if isinstance(docs, str):
                docs = [docs]
            if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
                raise ValueError(
                    f"{path}: exclusions of {query_id!r} must be a doc id or a list of doc ids, "
                    f"got {docs!r}"
                )
            out[query_id] = docs
        return out
    out = {}
    for number, fields in _lines(path):
        if len(fields) != 2:
            raise ValueError(
                f"{path}:{number}: an exclusion line has 2 fields 'query_id doc_id', "
                f"got {len(fields)}"
            )
        out.setdefault(fields[0], []).append(fields[1])
    return out


__all__ = ["read_exclusions", "read_qrels", "read_run", "write_qrels", "write_run"]
