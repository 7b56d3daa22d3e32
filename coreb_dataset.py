"""The CoREB Hub dataset: one config per subtask, built from a release in the official layout.

CoREB (the CoREB paper, Appendix A.3-A.6; ``SPEC.md`` §1-§2) publishes a release as 8 configs
(``code_corpus``, ``text_corpus``, ``{text2code,code2code,code2text}_{queries,qrels}``) with one
split per release (``release_v2602``, ``release_v2603``). This module turns that into what an
evaluator wants, one config per subtask (``t2c_full_retro_any``, ``c2c_cross_lang``,
``c2t_match``, ...), each row a query with its positives, hard negatives, exclusions and the name
of the corpus config it ranks.

The configs are defined once, by :class:`Coreb`, a :class:`datasets.GeneratorBasedBuilder`:

* with ``datasets`` 3.x this file is a loading script::

      load_dataset("coreb_dataset.py", "t2c_full_retro_any", data_dir="path/to/release",
                   trust_remote_code=True)

* with ``datasets`` 4+ (no scripts) the class is used directly (:func:`load_config`), and
  :func:`build` (``coreb build``) writes, through the same builder, a folder of Parquet files plus
  a README whose ``configs:`` make ``load_dataset("coreb", "t2c_full_retro_any")`` work anywhere.

This file imports only the standard library, ``datasets`` and ``pyarrow`` so that it still runs
as a standalone loading script.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

logger = logging.getLogger(__name__)

LANGUAGES: tuple[str, ...] = ("python", "java", "cpp", "ruby", "go")
LANGUAGE_SUFFIXES: tuple[str, ...] = ("any", *LANGUAGES)

# --------------------------------------------------------------------------------------------
# The official layout [CoREB A.4]
# --------------------------------------------------------------------------------------------

FAMILIES: dict[str, dict[str, str]] = {
    # family: its queries config, its qrels config, the id field and corpus it ranks
    "t2c": {"queries": "text2code_queries", "qrels": "text2code_qrels", "split": "text2code"},
    "c2c": {"queries": "code2code_queries", "qrels": "code2code_qrels", "split": "code2code"},
    "c2t": {"queries": "code2text_queries", "qrels": "code2text_qrels", "split": "code2text"},
}
MAIN_TASK_NAMES = {"t2c": "text-to-code", "c2c": "code-to-code", "c2t": "code-to-text"}

# Field name -> (type, required). "meta" is parsed from a dict, a JSON string or a Python
# literal string; every other field must already have its type.
_STR, _INT, _FLOAT, _BOOL = "string", "int64", "float64", "bool"
OFFICIAL_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "code_corpus": {
        "code_id": (_STR, True),
        "code": (_STR, True),
        "language": (_STR, True),
        "model": (_STR, False),
        "code_length": (_INT, False),
    },
    "text_corpus": {
        "text_id": (_STR, True),
        "text_style": (_STR, False),
        "text": (_STR, True),
        "text_length": (_INT, False),
        "abbreviated_text": (_STR, False),
        "abbreviated_text_length": (_INT, False),
    },
    "text2code_queries": {
        "query_id": (_STR, True),
        "query": (_STR, True),
        "split": (_STR, False),
        "subtask": (_STR, True),
        "query_type": (_STR, False),
        "sub_query_type": (_STR, False),
        "language_constraint": (_STR, False),
    },
    "code2code_queries": {
        "query_id": (_STR, True),
        "query": (_STR, True),
        "split": (_STR, False),
        "subtask": (_STR, True),
        "anchor_language": (_STR, False),
        "anchor_model": (_STR, False),
    },
    "code2text_queries": {
        # retrieval queries carry the code in "query", c2t_match instances in "code"
        "query_id": (_STR, True),
        "query": (_STR, False),
        "code": (_STR, False),
        "text_id": (_STR, False),
        "split": (_STR, False),
        "subtask": (_STR, True),
        "label": (_INT, False),
        "text_type": (_STR, False),
        "anchor_language": (_STR, False),
        "anchor_model": (_STR, False),
    },
}
for _family in FAMILIES.values():
    OFFICIAL_FIELDS[_family["qrels"]] = {
        "query_id": (_STR, True),
        "doc_id": (_STR, True),
        "relevance": (_INT, True),
    }
OFFICIAL_CONFIGS: tuple[str, ...] = (
    "code_corpus",
    "text_corpus",
    "text2code_queries",
    "text2code_qrels",
    "code2code_queries",
    "code2code_qrels",
    "code2text_queries",
    "code2text_qrels",
)
# every official record may carry meta; fields outside the schema are kept in "extra"
_META, _EXTRA = "meta", "extra"

# --------------------------------------------------------------------------------------------
# Subtasks = configs [CoREB A.3, Tables 6-9]
# --------------------------------------------------------------------------------------------

CORPUS_CODE = "corpus_code"
CORPUS_TEXT = "corpus_text"
CORPUS_TEXT_ABBREVIATED = "corpus_text_abbreviated"
CORPUS_CONFIGS: tuple[str, ...] = (CORPUS_CODE, CORPUS_TEXT, CORPUS_TEXT_ABBREVIATED)

_T2C_VARIANTS = ("canonical_retro", "full_retro", "search")
_C2T_VARIANTS = ("canonical_retro", "full_retro")
_C2C_VARIANTS = ("cross_lang", "cross_model", "mono_lang")
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# A subtask config is a folder beside these in the built folder: one of these names would
# replace that config (or the card); compared casefolded, as a case-insensitive disk does.
RESERVED_CONFIG_NAMES: frozenset[str] = frozenset(
    name.casefold() for name in (*CORPUS_CONFIGS, *OFFICIAL_CONFIGS, "README.md")
)


@dataclass(frozen=True)
class Subtask:
    """One CoREB subtask: its family, variant, language slice and the corpus config it ranks."""

    name: str
    family: str  # t2c | c2c | c2t
    variant: str  # canonical_retro, full_retro, search, cross_lang, match, ... or the raw rest
    language: str | None  # the suffix: any | python | ... ; None where the subtask has none
    corpus: str
    known: bool = True


def _registry() -> dict[str, Subtask]:
    out: dict[str, Subtask] = {}
    for variant in _T2C_VARIANTS:
        for lang in LANGUAGE_SUFFIXES:
            name = f"t2c_{variant}_{lang}"
            out[name] = Subtask(name, "t2c", variant, lang, CORPUS_CODE)
    for variant in _C2C_VARIANTS:
        out[f"c2c_{variant}"] = Subtask(f"c2c_{variant}", "c2c", variant, None, CORPUS_CODE)
    for variant in _C2T_VARIANTS:
        # canonical_retro ranks the abbreviated descriptions, full_retro the full ones [A.3]
        corpus = CORPUS_TEXT_ABBREVIATED if variant == "canonical_retro" else CORPUS_TEXT
        for lang in LANGUAGE_SUFFIXES:
            name = f"c2t_{variant}_{lang}"
            out[name] = Subtask(name, "c2t", variant, lang, corpus)
    out["c2t_match"] = Subtask("c2t_match", "c2t", "match", None, CORPUS_TEXT)
    return out


SUBTASKS: dict[str, Subtask] = _registry()
"""Every subtask the paper names; a release may hold a subset, or more (kept, with a warning)."""


def classify_subtask(name: str, family: str) -> Subtask:
    """The :class:`Subtask` of ``name``; one outside the registry is kept as its own subtask.

    An unknown name keeps the family of the file it came from and ranks that family's corpus.
    """
    if name in SUBTASKS and SUBTASKS[name].family == family:
        return SUBTASKS[name]
    rest = name[4:] if name.startswith(f"{family}_") else name
    language = None
    for lang in LANGUAGE_SUFFIXES:
        if rest.endswith(f"_{lang}"):
            rest, language = rest[: -len(lang) - 1], lang
            break
    corpus = CORPUS_CODE if family in ("t2c", "c2c") else CORPUS_TEXT
    return Subtask(name, family, rest, language, corpus, known=False)


# --------------------------------------------------------------------------------------------
# Qrels from execution outcomes [CoREB §3 Step 4, A.2, Table 5]
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QrelsOptions:
    """How qrels are derived for a release that ships execution metadata but no qrels.

    Shipped qrels are always used as given; these options only matter where a release has no
    ``*_qrels`` file for a family.

    Args:
        scheme: ``"v2"`` (graded, the paper's current scheme) or ``"v1"`` (binary, the older one:
            every solution of the queried problem is relevant).
        min_hard_negatives: the paper supplements the failed-solution pool with correct
            solutions that do not qualify (wrong language, same language in cross-language
            pairs) "when the failed pool is insufficient" without a number. Default 1: only a
            query with no failed solution at all is supplemented, up to this many, in doc id
            order, so every query that can have a hard negative has one and no correct solution
            is called a hard negative without need.
        c2t_hard_negatives: noise descriptions per code-to-text query (the paper's 4); when the
            problem has fewer, texts of other problems fill in (the paper's fallback), chosen by
            a hash of (query id, text id) so the choice is reproducible.
        original_text_style: the ``text_style`` of the original description in the text corpus;
            every other style is a noise description.
    """

    scheme: str = "v2"
    min_hard_negatives: int = 1
    c2t_hard_negatives: int = 4
    original_text_style: str = "original"

    def __post_init__(self) -> None:
        if self.scheme not in ("v1", "v2"):
            raise ValueError(f"QrelsOptions.scheme must be 'v1' or 'v2', got {self.scheme!r}")
        for name in ("min_hard_negatives", "c2t_hard_negatives"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"QrelsOptions.{name} must be an int >= 0, got {value!r}")


# --------------------------------------------------------------------------------------------
# Reading and validating a release
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a release, with where it is."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class ReleaseError(ValueError):
    """A release that cannot be built; ``problems`` lists every problem found, not the first."""

    def __init__(self, problems: Sequence[Problem]):
        self.problems = list(problems)
        shown = "\n".join(f"  {p}" for p in self.problems[:50])
        more = len(self.problems) - 50
        tail = f"\n  ... and {more} more" if more > 0 else ""
        super().__init__(
            f"the release has {len(self.problems)} problem(s); nothing was written:\n{shown}{tail}"
        )


@dataclass
class Record:
    """One row of an official config, its fields normalised, and where it came from."""

    fields: dict[str, Any]
    meta: dict[str, Any]
    extra: dict[str, Any]
    where: str


@dataclass
class ReleaseData:
    """One release (one split of the official configs), validated."""

    name: str
    records: dict[str, list[Record]]  # official config -> records in file order
    code: dict[str, Record] = field(default_factory=dict)
    texts: dict[str, Record] = field(default_factory=dict)
    queries: dict[str, tuple[Subtask, Record]] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    qrels_source: dict[str, str] = field(default_factory=dict)  # family -> shipped | derived-v2


@dataclass
class Release:
    """Every release found in one folder (official layout), validated together."""

    path: str
    releases: dict[str, ReleaseData]
    options: QrelsOptions
    warnings: list[Problem] = field(default_factory=list)
    inputs: tuple[str, ...] = ()  # real paths read (folders and files): no output may touch them

    @property
    def subtasks(self) -> dict[str, Subtask]:
        """Every subtask present in some release, known ones in registry order, then the rest."""
        found: dict[str, Subtask] = {}
        for data in self.releases.values():
            for subtask, _ in data.queries.values():
                found.setdefault(subtask.name, subtask)
        order = {name: i for i, name in enumerate(SUBTASKS)}
        return dict(sorted(found.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


# What the written Parquet columns and TREC files can hold. pyarrow raises OverflowError on an
# int64 column value outside this range, so every int is checked before it gets there.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT64_RANGE = "an integer in [-2**63, 2**63 - 1]"
# TREC run and qrels files split their lines on whitespace, and trec_eval reads C strings: an id
# with whitespace, a control character or nothing at all cannot round-trip through them.
_BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_ID_FIELDS = frozenset({"code_id", "text_id", "query_id", "doc_id"})
_ID_RULE = (
    "must be a non-empty id without whitespace or control characters (TREC run and qrels "
    "files split on whitespace)"
)
# A lone surrogate (an unpaired \ud800-\udfff escape in JSON) is a valid Python str but not
# Unicode: it cannot be written as UTF-8, so pyarrow would fail on it while writing.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_DIGIT_LIMIT = "Exceeds the limit"  # Python's message for ints past sys.get_int_max_str_digits()


def _show(value: Any) -> str:
    """``repr(value)`` cut to 60 characters; never fails (a huge int has no decimal repr)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _unreadable(err: BaseException) -> str:
    """Why json/ast could not read a value, in terms of what to fix."""
    if isinstance(err, (RecursionError, MemoryError)):
        return (
            "nested too deeply (Python's parser stops at about "
            f"{sys.getrecursionlimit()} levels): flatten the value"
        )
    if _DIGIT_LIMIT in str(err):
        return (
            f"a number with more than {sys.get_int_max_str_digits()} digits (Python's limit on "
            "converting ints; no CoREB field holds such a number): write it as a string"
        )
    return str(err)


# meta and extra are re-serialised when the folder is written, deeper in the call stack than
# when they were read: a fixed bound far below the recursion limit keeps that from failing.
_MAX_DEPTH = 100


def _too_deep(value: Any, limit: int = _MAX_DEPTH) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as the JSON of a meta/extra column, or None if it can."""
    if _too_deep(value):
        return f"nested too deeply (more than {_MAX_DEPTH} levels): flatten the value"
    try:
        text = _json(value)
    except (ValueError, RecursionError, MemoryError) as err:
        return _unreadable(err)
    except TypeError as err:  # a Python-literal meta with non-string or mixed-type keys
        return f"cannot be stored as JSON ({err}): use string keys"
    bad = _SURROGATE.search(text)
    return None if bad is None else _not_unicode(bad)


def _not_unicode(bad: re.Match[str]) -> str:
    return (
        f"is not valid Unicode (the lone surrogate \\u{ord(bad.group()):04x} at character "
        f"{bad.start()}, an unpaired \\uXXXX escape in the JSON?): fix the text"
    )


def _parse_meta(value: Any, where: str, problems: list[Problem]) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            try:
                # Python-literal dumps ({'source_problem_id': 'lcb_3487', 'passed': False})
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as err:
                if _DIGIT_LIMIT in str(err) or isinstance(err, (RecursionError, MemoryError)):
                    problems.append(Problem(where, f"meta: {_unreadable(err)}"))
                else:
                    problems.append(
                        Problem(where, f"meta is neither JSON nor a Python literal: {text[:80]!r}")
                    )
                return {}
        except (ValueError, RecursionError, MemoryError) as err:
            # valid JSON syntax that Python cannot hold: a too-long number, too deep a nesting
            problems.append(Problem(where, f"meta: {_unreadable(err)}"))
            return {}
        if isinstance(parsed, Mapping):
            return dict(parsed)
        problems.append(Problem(where, f"meta must be an object, got {type(parsed).__name__}"))
        return {}
    problems.append(
        Problem(where, f"meta must be an object or a string, got {type(value).__name__}")
    )
    return {}


def _check_type(value: Any, kind: str) -> Any:
    """``value`` as ``kind``, or raise TypeError. Integral floats (Parquet nulls) become ints;
    ints must fit the int64 column they are written to."""
    if kind == _STR:
        if isinstance(value, str):
            return value
    elif kind == _INT:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            return value
    elif kind == _FLOAT:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind == _BOOL and isinstance(value, bool):
        return value
    raise TypeError


def _normalise(raw: Any, config: str, where: str, problems: list[Problem]) -> Record | None:
    if not isinstance(raw, Mapping):
        problems.append(Problem(where, f"expected a JSON object, got {type(raw).__name__}"))
        return None
    spec = OFFICIAL_FIELDS[config]
    fields: dict[str, Any] = {}
    ok = True
    for name, (kind, required) in spec.items():
        value = raw.get(name)
        if value is None:
            if required:
                problems.append(Problem(where, f"missing required field {name!r}"))
                ok = False
            fields[name] = None
            continue
        try:
            fields[name] = _check_type(value, kind)
        except TypeError:
            expected = f"an int64 ({_INT64_RANGE})" if kind == _INT else f"a {kind}"
            problems.append(
                Problem(
                    where,
                    f"field {name!r} must be {expected}, got {type(value).__name__} {_show(value)}",
                )
            )
            ok = False
            continue
        if kind == _STR:
            bad = _SURROGATE.search(value)
            if bad:
                problems.append(Problem(where, f"field {name!r} {_not_unicode(bad)}"))
                ok = False
            elif name in _ID_FIELDS and (not value or _BAD_ID_CHAR.search(value)):
                problems.append(Problem(where, f"field {name!r} {_ID_RULE}, got {_show(value)}"))
                ok = False
    n_problems = len(problems)
    meta = _parse_meta(raw.get(_META), where, problems)
    extra = {k: v for k, v in raw.items() if k not in spec and k != _META}
    for subject, verb, value in (("meta", "is", meta), ("extra fields", "are", extra)):
        why = _json_problem(value) if value else None
        if why is not None:
            text = f"{subject} {verb} {why[3:]}" if why.startswith("is ") else f"{subject}: {why}"
            problems.append(Problem(where, text))
    if config == "code_corpus":
        _check_execution_meta(meta, where, problems)
    ok = ok and len(problems) == n_problems
    return Record(fields, meta, extra, where) if ok else None


def _check_execution_meta(meta: Mapping[str, Any], where: str, problems: list[Problem]) -> None:
    """The meta keys that become typed columns of ``corpus_code`` must fit them."""
    for key in ("test_passed", "test_total"):
        value = meta.get(key)
        out_of_range = isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX
        if out_of_range and not isinstance(value, bool):
            problems.append(
                Problem(where, f"meta.{key} must be an int64 ({_INT64_RANGE}), got {_show(value)}")
            )
    rate = meta.get("pass_rate")
    if isinstance(rate, int) and not isinstance(rate, bool):
        try:
            float(rate)
        except OverflowError:
            problems.append(
                Problem(where, f"meta.pass_rate is too large for a float64, got {_show(rate)}")
            )


_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")  # Hub shards: release_v2603-00000-of-00001.parquet


def _split_files(
    root: Path, config: str, problems: list[Problem], warnings: list[Problem]
) -> dict[str, Path | tuple[Path, ...]]:
    """``{split: file(s)}`` for one official config folder (.jsonl, .parquet or Hub shards).

    A config or split path that exists but cannot be read (a symlink loop, a dangling link, a
    folder where a file belongs, a missing shard) is a problem: skipping it would silently turn
    shipped qrels into derived ones, or drop records.
    """
    folder = root / config
    if not os.path.lexists(folder):
        return {}
    try:
        mode = folder.stat().st_mode
    except OSError as err:
        problems.append(
            Problem(
                str(folder),
                f"cannot read the config folder ({err.strerror}; a dangling symlink or a "
                f"symlink loop?): point it at the folder of {config}'s split files, or remove it",
            )
        )
        return {}
    if not stat.S_ISDIR(mode):
        problems.append(
            Problem(
                str(folder),
                "an official config must be a folder of <split>.jsonl or .parquet files; "
                "this is a file",
            )
        )
        return {}
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        problems.append(Problem(str(folder), f"cannot read the config folder: {err.strerror}"))
        return {}
    found: dict[str, list[Path]] = defaultdict(list)
    shards: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for path in entries:
        if path.suffix not in (".jsonl", ".parquet"):
            if not path.name.startswith("."):  # .gitattributes, .DS_Store: not data
                warnings.append(Problem(str(path), "not a .jsonl or .parquet file; ignored"))
            continue
        try:
            mode = path.stat().st_mode
        except OSError as err:
            problems.append(
                Problem(str(path), f"cannot read ({err.strerror}; a dangling symlink?)")
            )
            continue
        if stat.S_ISDIR(mode):
            problems.append(Problem(str(path), "a split must be a file, this is a folder"))
            continue
        if not stat.S_ISREG(mode):
            problems.append(Problem(str(path), "a split must be a regular file"))
            continue
        shard = _SHARD.search(path.stem)
        split = path.stem[: shard.start()] if shard else path.stem
        if shard:
            shards[split][int(shard.group(2))].add(int(shard.group(1)))
        found[split].append(path)
    for split, by_total in shards.items():
        if len(by_total) > 1:
            problems.append(
                Problem(
                    str(folder),
                    f"split {split!r} has shards of {len(by_total)} different counts "
                    f"(-of-{', -of-'.join(f'{n:05d}' for n in sorted(by_total))}): keep one set",
                )
            )
        for total, have in sorted(by_total.items()):
            missing = sorted(set(range(total)) - have)
            if missing:
                problems.append(
                    Problem(
                        str(folder),
                        f"split {split!r} has shards {', '.join(map(str, sorted(have)))} of "
                        f"{total}; missing: {', '.join(map(str, missing))}",
                    )
                )
    return {split: paths[0] if len(paths) == 1 else tuple(paths) for split, paths in found.items()}


def _read_rows(
    paths: Path | tuple[Path, ...], problems: list[Problem]
) -> Iterator[tuple[str, Any]]:
    """``(where, raw record)`` for each row; malformed lines become problems, never skipped."""
    for path in paths if isinstance(paths, tuple) else (paths,):
        if path.suffix == ".parquet":
            yield from _parquet_rows(path, problems)
            continue
        try:
            with path.open("rb") as fh:
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    where = f"{path}:{lineno}"
                    try:
                        yield where, json.loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError) as err:
                        problems.append(Problem(where, f"malformed JSON: {err}"))
                    except (ValueError, RecursionError, MemoryError) as err:
                        # valid JSON that Python cannot hold: a number past the int digit
                        # limit, an array or object nested past the recursion limit
                        problems.append(Problem(where, f"unreadable JSON: {_unreadable(err)}"))
        except OSError as err:
            problems.append(Problem(str(path), f"cannot read: {err.strerror or err}"))


def _parquet_rows(path: Path, problems: list[Problem]) -> Iterator[tuple[str, Any]]:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        problems.append(Problem(str(path), f"unreadable Parquet file: {err}"))
        return
    try:
        rows = table.to_pylist()
    except (ValueError, OverflowError, pa.ArrowException):
        rows = None  # some value has no Python form: find which, row by row, below
    if rows is not None:
        for i, row in enumerate(rows):
            yield f"{path}:row {i}", row
        return
    for i in range(table.num_rows):
        where = f"{path}:row {i}"
        row: dict[str, Any] = {}
        bad = False
        for name in table.column_names:
            try:
                row[name] = table.column(name)[i].as_py()
            except UnicodeDecodeError:
                problems.append(Problem(where, f"column {name!r} is not valid UTF-8"))
                bad = True
            except (ValueError, OverflowError, pa.ArrowException) as err:
                problems.append(Problem(where, f"column {name!r} cannot be read: {err}"))
                bad = True
        if not bad:
            yield where, row


def resolve_release_path(source: str | os.PathLike[str]) -> Path:
    """A local folder in the official layout; a Hub dataset id is downloaded first."""
    path = Path(source)
    if path.is_dir():
        return path
    if re.fullmatch(r"[\w.-]+/[\w.-]+", str(source)) and not path.exists():
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(str(source), repo_type="dataset"))
    raise FileNotFoundError(
        f"release folder {str(source)!r} does not exist: give a folder holding the official "
        f"configs ({', '.join(OFFICIAL_CONFIGS[:2])}, ...) as <config>/<split>.jsonl|.parquet, "
        "or a Hub dataset id"
    )


def read_release(source: str | os.PathLike[str], options: QrelsOptions | None = None) -> Release:
    """Read, validate and (where qrels are missing) judge every release in ``source``.

    Raises:
        ReleaseError: listing every problem found, with file and line.
    """
    options = options or QrelsOptions()
    root = resolve_release_path(source)
    problems: list[Problem] = []
    warnings: list[Problem] = []
    files = {config: _split_files(root, config, problems, warnings) for config in OFFICIAL_CONFIGS}
    for config in ("code_corpus", "text_corpus"):
        if not files[config]:
            problems.append(Problem(str(root / config), "missing: a release needs its corpora"))
    for config in os.listdir(root):
        if (
            (root / config).is_dir()
            and config not in OFFICIAL_CONFIGS
            and not config.startswith(".")
        ):
            warnings.append(Problem(str(root / config), "not an official config; ignored"))
    split_names = sorted({s for by_split in files.values() for s in by_split})
    releases: dict[str, ReleaseData] = {}
    for split in split_names:
        if not re.fullmatch(r"\w+(\.\w+)*", split):
            problems.append(Problem(split, "a split name must match \\w+(\\.\\w+)*"))
            continue
        records: dict[str, list[Record]] = {}
        empty: set[str] = set()
        for config in OFFICIAL_CONFIGS:
            paths = files[config].get(split)
            rows = []
            if paths is not None:
                n_read, n_problems = 0, len(problems)
                for where, raw in _read_rows(paths, problems):
                    n_read += 1
                    record = _normalise(raw, config, where, problems)
                    if record is not None:
                        rows.append(record)
                if n_read == 0 and len(problems) == n_problems:  # not a file of bad lines
                    empty.add(config)
            records[config] = rows
        releases[split] = ReleaseData(split, records)
        _index(releases[split], files, problems, warnings, empty)
    _check_across(releases, problems)
    if not problems:
        for data in releases.values():
            _judge(data, files, options, problems, warnings)
    if problems:
        raise ReleaseError(problems)
    for warning in warnings:
        logger.warning("%s", warning)
    return Release(str(root), releases, options, warnings, inputs=_input_paths(root, files))


def local_inputs(source: str | os.PathLike[str]) -> tuple[str, ...]:
    """The real paths a build of the local release ``source`` reads, found without reading it
    (none for a Hub id): what :func:`check_destination` must keep out of an output."""
    root = Path(source)
    if not root.is_dir():
        return ()
    scratch: list[Problem] = []  # read_release reports these problems, with the rest
    files = {c: _split_files(root, c, scratch, scratch) for c in OFFICIAL_CONFIGS}
    return _input_paths(root, files)


def _input_paths(root: Path, files: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    """The real paths a build reads: the release folder, each config folder, each split file
    (any of them may be a symlink to somewhere else)."""
    found = {root.resolve()}
    for config, by_split in files.items():
        if by_split:
            found.add((root / config).resolve())
        for paths in by_split.values():
            found.update(p.resolve() for p in (paths if isinstance(paths, tuple) else (paths,)))
    return tuple(sorted(str(p) for p in found))


def _index(
    data: ReleaseData,
    files: dict[str, dict[str, Any]],
    problems: list[Problem],
    warnings: list[Problem],
    empty: set[str] = frozenset(),  # configs whose files for this split held no row
) -> None:
    for rec in data.records["code_corpus"]:
        _unique(data.code, rec.fields["code_id"], rec, problems)
    for rec in data.records["text_corpus"]:
        _unique(data.texts, rec.fields["text_id"], rec, problems)
    for family, spec in FAMILIES.items():
        for rec in data.records[spec["queries"]]:
            qid, name = rec.fields["query_id"], rec.fields["subtask"]
            if qid in data.queries:
                problems.append(
                    Problem(
                        rec.where,
                        f"duplicate query id {qid!r} (first at {data.queries[qid][1].where})",
                    )
                )
                continue
            if not _CONFIG_NAME.fullmatch(name):
                problems.append(Problem(rec.where, f"subtask {name!r} is not a valid config name"))
                continue
            if name.casefold() in RESERVED_CONFIG_NAMES:
                problems.append(
                    Problem(
                        rec.where,
                        f"subtask {name!r} is a reserved config name (a corpus view, an official "
                        "config or the card): its config would replace that one in the built "
                        "folder; rename the subtask",
                    )
                )
                continue
            if name in SUBTASKS and SUBTASKS[name].family != family:
                problems.append(
                    Problem(
                        rec.where,
                        f"subtask {name!r} is a {SUBTASKS[name].family} subtask "
                        f"but the query is in {spec['queries']}",
                    )
                )
                continue
            subtask = classify_subtask(name, family)
            if not subtask.known:
                warnings.append(
                    Problem(
                        rec.where,
                        f"subtask {name!r} fits no known CoREB pattern; kept as its own config",
                    )
                )
            split_field = rec.fields.get("split")
            if split_field is not None and split_field != spec["split"]:
                warnings.append(
                    Problem(rec.where, f"split field {split_field!r}, expected {spec['split']!r}")
                )
            if family == "c2c":
                anchor = rec.meta.get("anchor_code_id")
                if not isinstance(anchor, str) or not anchor:
                    problems.append(
                        Problem(rec.where, "code-to-code query without meta.anchor_code_id")
                    )
                    continue
                if _BAD_ID_CHAR.search(anchor):
                    problems.append(
                        Problem(rec.where, f"meta.anchor_code_id {_ID_RULE}, got {_show(anchor)}")
                    )
                    continue
                if anchor not in data.code:
                    problems.append(
                        Problem(
                            rec.where, f"anchor {anchor!r} is not in this release's code corpus"
                        )
                    )
                    continue
            if family == "c2t" and subtask.variant == "match":
                text_id = rec.fields.get("text_id")
                if text_id is None or rec.fields.get("label") not in (0, 1):
                    problems.append(
                        Problem(rec.where, "c2t_match instance needs text_id and label (1 or 0)")
                    )
                    continue
                if text_id not in data.texts:
                    problems.append(
                        Problem(
                            rec.where, f"text_id {text_id!r} is not in this release's text corpus"
                        )
                    )
                    continue
            if _query_text(rec) is None:
                problems.append(Problem(rec.where, "no query text (field 'query' or 'code')"))
                continue
            data.queries[qid] = (subtask, rec)
    for family, spec in FAMILIES.items():
        if data.name not in files[spec["qrels"]]:
            continue
        data.qrels_source[family] = "shipped"
        family_queries = [q for q, (s, _) in data.queries.items() if s.family == family]
        if spec["qrels"] in empty and family_queries:
            # An empty file is more likely a truncated copy or a failed export than a release
            # whose queries have no positive; building it would score every query 0.
            paths = files[spec["qrels"]][data.name]
            problems.append(
                Problem(
                    str(paths[0] if isinstance(paths, tuple) else paths),
                    f"the qrels file holds no judgment, yet {len(family_queries)} queries "
                    f"in {spec['queries']} ({data.name}) need them: ship the judgments, or "
                    "remove the file to derive them from the execution outcomes",
                )
            )
            continue
        seen: dict[tuple[str, str], str] = {}
        for rec in data.records[spec["qrels"]]:
            qid, doc, rel = (rec.fields[k] for k in ("query_id", "doc_id", "relevance"))
            entry = data.queries.get(qid)
            if entry is None or entry[0].family != family:
                problems.append(Problem(rec.where, f"qrel for unknown {family} query {qid!r}"))
                continue
            if family == "c2c" and doc == entry[1].meta.get("anchor_code_id"):
                # the anchor is dropped from the query's ranking before scoring (exclude_ids)
                if rel == 2:
                    problems.append(
                        Problem(
                            rec.where,
                            f"the qrel judges the query's anchor {doc!r} as a positive, but the "
                            "anchor is dropped from the ranking before scoring (exclude_ids), "
                            "so the query could never reach it: remove this line",
                        )
                    )
                    continue
                warnings.append(
                    Problem(
                        rec.where,
                        f"the qrel judges the query's anchor {doc!r}, which is dropped from the "
                        "ranking before scoring: the judgment has no effect",
                    )
                )
            corpus = data.code if family in ("t2c", "c2c") else data.texts
            if doc not in corpus:
                problems.append(
                    Problem(
                        rec.where,
                        f"qrel document {doc!r} is not in this release's "
                        f"{'code' if corpus is data.code else 'text'} corpus",
                    )
                )
                continue
            if rel not in (1, 2):
                problems.append(Problem(rec.where, f"relevance must be 1 or 2, got {rel!r}"))
                continue
            if (qid, doc) in seen:
                problems.append(
                    Problem(
                        rec.where, f"duplicate qrel ({qid!r}, {doc!r}), first at {seen[qid, doc]}"
                    )
                )
                continue
            seen[qid, doc] = rec.where
            data.qrels.setdefault(qid, {})[doc] = rel
        for qid in family_queries:
            if qid not in data.qrels:
                warnings.append(
                    Problem(data.queries[qid][1].where, f"query {qid!r} has no judged document")
                )


def _unique(index: dict[str, Record], key: str, rec: Record, problems: list[Problem]) -> None:
    if key in index:
        problems.append(Problem(rec.where, f"duplicate id {key!r} (first at {index[key].where})"))
    else:
        index[key] = rec


def _check_across(releases: dict[str, ReleaseData], problems: list[Problem]) -> None:
    """Releases are independent: an id may appear in only one of them. A subtask name is one
    config of the built folder: one main task, and one spelling (a case-insensitive disk would
    give ``Foo`` and ``foo`` one folder)."""
    first: dict[str, tuple[Subtask, Record]] = {}
    for data in releases.values():
        for subtask, rec in data.queries.values():
            seen = first.setdefault(subtask.name.casefold(), (subtask, rec))
            if seen[0].name != subtask.name:
                problems.append(
                    Problem(
                        rec.where,
                        f"subtask {subtask.name!r} differs only in case from subtask "
                        f"{seen[0].name!r} (first at {seen[1].where}): their configs would "
                        "share a folder on a case-insensitive disk; spell them alike",
                    )
                )
            elif seen[0].family != subtask.family:
                problems.append(
                    Problem(
                        rec.where,
                        f"subtask {subtask.name!r} is also a {seen[0].family} subtask (first at "
                        f"{seen[1].where}): a config holds the queries of one main task; "
                        "rename one of them",
                    )
                )
    owner: dict[str, str] = {}
    for name, data in releases.items():
        for key in [*data.code, *data.texts, *data.queries]:
            if key in owner and owner[key] != name:
                problems.append(
                    Problem(
                        name,
                        f"id {key!r} is also in release {owner[key]!r}: releases "
                        "must not share ids",
                    )
                )
            owner.setdefault(key, name)


def _query_text(rec: Record) -> str | None:
    return rec.fields.get("query") or rec.fields.get("code")


# --------------------------------------------------------------------------------------------
# Deriving qrels (only for families a release ships without qrels)
# --------------------------------------------------------------------------------------------


def _problem_of(rec: Record) -> str | None:
    value = rec.meta.get("source_problem_id")
    return value if isinstance(value, str) and value else None


def _judge(
    data: ReleaseData,
    files: dict[str, dict[str, Any]],
    options: QrelsOptions,
    problems: list[Problem],
    warnings: list[Problem],
) -> None:
    missing = [f for f in FAMILIES if f not in data.qrels_source]
    if not missing:
        return
    by_problem: dict[str, list[str]] = defaultdict(list)
    for doc_id, rec in sorted(data.code.items()):
        pid = _problem_of(rec)
        if pid is None:
            problems.append(
                Problem(
                    rec.where, "qrels must be derived but the code has no meta.source_problem_id"
                )
            )
        elif not isinstance(rec.meta.get("passed"), bool):
            problems.append(
                Problem(rec.where, "qrels must be derived but meta.passed is not true/false")
            )
        else:
            by_problem[pid].append(doc_id)
    texts_by_problem: dict[str, list[str]] = defaultdict(list)
    for text_id, rec in sorted(data.texts.items()):
        pid = _problem_of(rec)
        if pid is not None:
            texts_by_problem[pid].append(text_id)
    if problems:
        return
    for family in missing:
        data.qrels_source[family] = f"derived-{options.scheme}"
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family not in missing:
            continue
        pid = _problem_of(rec)
        if pid is None:
            problems.append(
                Problem(
                    rec.where, "qrels must be derived but the query has no meta.source_problem_id"
                )
            )
            continue
        try:
            if subtask.family == "t2c":
                judged = _t2c_qrels(data, rec, subtask, by_problem[pid], options)
            elif subtask.family == "c2c":
                judged = _c2c_qrels(data, rec, subtask, by_problem[pid], options)
            else:
                judged = _c2t_qrels(data, qid, rec, subtask, pid, texts_by_problem, options)
        except ValueError as err:
            problems.append(Problem(rec.where, str(err)))
            continue
        data.qrels[qid] = judged
        if not judged:
            warnings.append(Problem(rec.where, f"query {qid!r} has no judged document"))


def _graded(
    positives: list[str], failed: list[str], spare: list[str], options: QrelsOptions
) -> dict[str, int]:
    hard = list(failed)
    if len(hard) < options.min_hard_negatives:
        hard += spare[: options.min_hard_negatives - len(hard)]
    return {**dict.fromkeys(hard, 1), **dict.fromkeys(positives, 2)}


def _t2c_qrels(
    data: ReleaseData, rec: Record, subtask: Subtask, pool: list[str], options: QrelsOptions
) -> dict[str, int]:
    if options.scheme == "v1":
        return dict.fromkeys(pool, 2)
    constraint = rec.fields.get("language_constraint") or subtask.language or "none"
    if constraint in ("none", "any"):
        constraint = None
    elif constraint not in LANGUAGES:
        raise ValueError(f"unknown language_constraint {constraint!r}")
    code = data.code
    passed = [d for d in pool if code[d].meta["passed"]]
    positives = [
        d for d in passed if constraint is None or code[d].fields["language"] == constraint
    ]
    failed = [d for d in pool if not code[d].meta["passed"]]
    spare = [d for d in passed if d not in positives]
    return _graded(positives, failed, spare, options)


def _c2c_qrels(
    data: ReleaseData, rec: Record, subtask: Subtask, pool: list[str], options: QrelsOptions
) -> dict[str, int]:
    anchor_id = rec.meta["anchor_code_id"]
    anchor = data.code[anchor_id]
    pool = [d for d in pool if d != anchor_id]
    if options.scheme == "v1":
        return dict.fromkeys(pool, 2)
    code = data.code
    lang = rec.fields.get("anchor_language") or anchor.fields["language"]
    model = rec.fields.get("anchor_model") or anchor.fields.get("model")
    targets = rec.meta.get("target_languages")
    passed = [d for d in pool if code[d].meta["passed"]]
    if subtask.variant == "cross_lang":
        wanted = set(targets) if targets else set(LANGUAGES) - {lang}
        positives = [
            d
            for d in passed
            if code[d].fields["language"] in wanted - {lang}
            and code[d].fields.get("model") == model
        ]
    elif subtask.variant == "cross_model":
        wanted = set(targets) if targets else {lang}
        positives = [
            d
            for d in passed
            if code[d].fields["language"] in wanted and code[d].fields.get("model") != model
        ]
    elif subtask.variant == "mono_lang":
        positives = [d for d in passed if code[d].fields["language"] == lang]
    else:
        raise ValueError(
            f"no rule derives qrels for the code-to-code subtask {subtask.name!r}: ship "
            "code2code_qrels for it"
        )
    failed = [d for d in pool if not code[d].meta["passed"]]
    spare = [d for d in passed if d not in positives]
    return _graded(positives, failed, spare, options)


def _c2t_qrels(
    data: ReleaseData,
    qid: str,
    rec: Record,
    subtask: Subtask,
    pid: str,
    texts_by_problem: Mapping[str, list[str]],
    options: QrelsOptions,
) -> dict[str, int]:
    if subtask.variant == "match":
        text_id = rec.fields["text_id"]
        if rec.fields["label"] == 1:
            return {text_id: 2}
        return {} if options.scheme == "v1" else {text_id: 1}
    style = options.original_text_style
    same = texts_by_problem.get(pid, [])
    originals = [t for t in same if data.texts[t].fields.get("text_style") == style]
    if not originals:
        raise ValueError(
            f"no original description (text_style {style!r}) for problem {pid!r} in the text "
            "corpus; set QrelsOptions.original_text_style if the release names it otherwise"
        )
    if options.scheme == "v1":
        return dict.fromkeys(originals, 2)
    noise = [t for t in same if t not in originals][: options.c2t_hard_negatives]
    if len(noise) < options.c2t_hard_negatives:
        others = [
            t
            for t, r in sorted(data.texts.items())
            if r.fields.get("text_style") != style and _problem_of(r) != pid
        ]
        others.sort(key=lambda t: hashlib.sha256(f"{qid}\0{t}".encode()).hexdigest())
        noise += others[: options.c2t_hard_negatives - len(noise)]
    return {**dict.fromkeys(noise, 1), **dict.fromkeys(originals, 2)}


# --------------------------------------------------------------------------------------------
# Rows of every config
# --------------------------------------------------------------------------------------------

_S = datasets.Value("string")
_LIST = datasets.Sequence(_S)

SUBTASK_FEATURES = datasets.Features(
    {
        "query_id": _S,
        "query": _S,
        "positive_ids": _LIST,  # relevance 2
        "hard_negative_ids": _LIST,  # relevance 1
        "exclude_ids": _LIST,  # dropped from the ranking before scoring (the c2c anchor)
        "corpus": _S,  # the corpus config this query ranks
        "release": _S,
        "main_task": _S,
        "subtask": _S,
        "query_type": _S,
        "sub_query_type": _S,
        "language_constraint": _S,
        "anchor_language": _S,
        "anchor_model": _S,
        "anchor_code_id": _S,
        "target_languages": _LIST,
        "source_problem_id": _S,
        "task_type": _S,
        "text_type": _S,
        "text_id": _S,
        "label": datasets.Value("int64"),
        "pair_type": _S,
        "qrels_source": _S,  # shipped | derived-v2 | derived-v1
        "meta": _S,  # the query's meta as JSON, keys sorted
    }
)
CORPUS_FEATURES: dict[str, datasets.Features] = {
    CORPUS_CODE: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,
            "language": _S,
            "model": _S,
            "code_length": datasets.Value("int64"),
            "source_problem_id": _S,
            "solution_key": _S,
            "passed": datasets.Value("bool"),
            "pass_rate": datasets.Value("float64"),
            "test_passed": datasets.Value("int64"),
            "test_total": datasets.Value("int64"),
            "meta": _S,
        }
    ),
    CORPUS_TEXT: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,
            "text_style": _S,
            "text_length": datasets.Value("int64"),
            "abbreviated_text": _S,
            "abbreviated_text_length": datasets.Value("int64"),
            "source_problem_id": _S,
            "meta": _S,
        }
    ),
    CORPUS_TEXT_ABBREVIATED: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,  # abbreviated_text, or the full text where a record has none
            "text_field": _S,  # which field "text" came from: abbreviated_text | text
            "text_style": _S,
            "source_problem_id": _S,
        }
    ),
}
_ARROW_KIND = {_STR: "string", _INT: "int64", _FLOAT: "float64", _BOOL: "bool"}
OFFICIAL_FEATURES: dict[str, datasets.Features] = {
    config: datasets.Features(
        {
            **{name: datasets.Value(_ARROW_KIND[kind]) for name, (kind, _) in spec.items()},
            **({} if config.endswith("_qrels") else {_META: _S}),
            _EXTRA: _S,  # fields outside the published schema, as JSON (null when none)
        }
    )
    for config, spec in OFFICIAL_FIELDS.items()
}


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def subtask_rows(data: ReleaseData, subtask: str) -> Iterator[dict[str, Any]]:
    """The rows of one subtask config for one release, by query id."""
    for qid in sorted(q for q, (s, _) in data.queries.items() if s.name == subtask):
        spec, rec = data.queries[qid]
        judged = data.qrels.get(qid, {})
        meta, f = rec.meta, rec.fields
        anchor = meta.get("anchor_code_id") if spec.family in ("c2c", "c2t") else None
        targets = meta.get("target_languages")
        constraint = f.get("language_constraint")
        if constraint is None and spec.family == "t2c" and spec.language is not None:
            constraint = "none" if spec.language == "any" else spec.language
        yield {
            "query_id": qid,
            "query": _query_text(rec),
            "positive_ids": sorted(d for d, r in judged.items() if r == 2),
            "hard_negative_ids": sorted(d for d, r in judged.items() if r == 1),
            "exclude_ids": [anchor] if spec.family == "c2c" else [],
            "corpus": spec.corpus,
            "release": data.name,
            "main_task": spec.family,
            "subtask": spec.name,
            "query_type": f.get("query_type"),
            "sub_query_type": f.get("sub_query_type"),
            "language_constraint": constraint,
            "anchor_language": f.get("anchor_language"),
            "anchor_model": f.get("anchor_model"),
            "anchor_code_id": anchor if isinstance(anchor, str) else None,
            "target_languages": [str(t) for t in targets] if isinstance(targets, list) else None,
            "source_problem_id": _problem_of(rec),
            "task_type": _str_or_none(meta.get("task_type")),
            "text_type": f.get("text_type") or _str_or_none(meta.get("text_type")),
            "text_id": f.get("text_id"),
            "label": f.get("label"),
            "pair_type": _str_or_none(meta.get("pair_type")),
            "qrels_source": data.qrels_source.get(spec.family),
            "meta": _json(meta),
        }


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _typed(value: Any, kind: type) -> Any:
    if kind is float:
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if ok else None
    return value if isinstance(value, kind) else None


def corpus_rows(data: ReleaseData, corpus: str) -> Iterator[dict[str, Any]]:
    """The rows of one corpus config for one release, by document id."""
    if corpus == CORPUS_CODE:
        for doc_id, rec in sorted(data.code.items()):
            f, m = rec.fields, rec.meta
            yield {
                "doc_id": doc_id,
                "text": f["code"],
                "language": f["language"],
                "model": f.get("model"),
                "code_length": f.get("code_length"),
                "source_problem_id": _problem_of(rec),
                "solution_key": _str_or_none(m.get("solution_key")),
                "passed": _typed(m.get("passed"), bool),
                "pass_rate": _typed(m.get("pass_rate"), float),
                "test_passed": _typed(m.get("test_passed"), int),
                "test_total": _typed(m.get("test_total"), int),
                "meta": _json(m),
            }
    elif corpus == CORPUS_TEXT:
        for doc_id, rec in sorted(data.texts.items()):
            f = rec.fields
            yield {
                "doc_id": doc_id,
                **{k: f.get(k) for k in OFFICIAL_FIELDS["text_corpus"] if k != "text_id"},
                "source_problem_id": _problem_of(rec),
                "meta": _json(rec.meta),
            }
    elif corpus == CORPUS_TEXT_ABBREVIATED:
        for doc_id, rec in sorted(data.texts.items()):
            f = rec.fields
            short = f.get("abbreviated_text")
            yield {
                "doc_id": doc_id,
                "text": short or f["text"],
                "text_field": "abbreviated_text" if short else "text",
                "text_style": f.get("text_style"),
                "source_problem_id": _problem_of(rec),
            }
    else:
        raise ValueError(f"unknown corpus config {corpus!r}; choose one of {CORPUS_CONFIGS}")


def official_rows(data: ReleaseData, config: str) -> Iterator[dict[str, Any]]:
    """The records of one official config, in file order; derived qrels where none shipped."""
    if config.endswith("_qrels"):
        family = next(f for f, spec in FAMILIES.items() if spec["qrels"] == config)
        if data.qrels_source.get(family) == "shipped":
            for rec in data.records[config]:
                yield {**rec.fields, _EXTRA: _json(rec.extra) if rec.extra else None}
            return
        for qid in sorted(data.qrels):
            if data.queries[qid][0].family == family:
                for doc, rel in sorted(data.qrels[qid].items()):
                    yield {"query_id": qid, "doc_id": doc, "relevance": rel, _EXTRA: None}
        return
    for rec in data.records[config]:
        yield {
            **rec.fields,
            _META: _json(rec.meta),
            _EXTRA: _json(rec.extra) if rec.extra else None,
        }


# --------------------------------------------------------------------------------------------
# The builder: one definition of every config
# --------------------------------------------------------------------------------------------

_CITATION = """\
@article{coreb2026,
  title   = {CoREB: A Contamination-Limited Benchmark for Code Retrieval and Reranking},
  author  = {The CoREB authors},
  year    = {2026},
  note    = {see the CoREB paper for the full author list}
}"""
_DESCRIPTION = (
    "CoREB: text-to-code, code-to-text and code-to-code retrieval over execution-verified "
    "solutions in five languages, with graded qrels (relevance 2 = positive, 1 = hard negative)."
)


@dataclass
class CorebConfig(datasets.BuilderConfig):
    """A CoREB config: a subtask, a corpus view or one of the 8 official configs.

    Args:
        kind: ``"subtask"``, ``"corpus"`` or ``"official"``.
        qrels_scheme, min_hard_negatives, c2t_hard_negatives, original_text_style: the
            :class:`QrelsOptions` used where a release ships no qrels.
    """

    kind: str = "subtask"
    family: str | None = None
    qrels_scheme: str = "v2"
    min_hard_negatives: int = 1
    c2t_hard_negatives: int = 4
    original_text_style: str = "original"

    def qrels_options(self) -> QrelsOptions:
        return QrelsOptions(
            self.qrels_scheme,
            self.min_hard_negatives,
            self.c2t_hard_negatives,
            self.original_text_style,
        )


def _config(name: str, kind: str, family: str | None = None) -> CorebConfig:
    if kind == "subtask":
        description = f"CoREB {MAIN_TASK_NAMES.get(family or '', family)} subtask {name}"
    elif kind == "corpus":
        description = f"CoREB corpus view {name} (doc_id, text)"
    else:
        description = f"the official CoREB config {name}, unchanged in content"
    return CorebConfig(name=name, kind=kind, family=family, description=description)


def _configs(subtasks: Iterable[Subtask]) -> list[CorebConfig]:
    return [
        *(_config(s.name, "subtask", s.family) for s in subtasks),
        *(_config(c, "corpus") for c in CORPUS_CONFIGS),
        *(_config(c, "official") for c in OFFICIAL_CONFIGS),
    ]


_RELEASE_CACHE: dict[tuple, Release] = {}


def _cached_release(path: str, options: QrelsOptions) -> Release:
    root = resolve_release_path(path)
    stamp = tuple(
        sorted(
            (str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*") if p.is_file()
        )
    )
    key = (str(root.resolve()), options, stamp)
    if key not in _RELEASE_CACHE:
        _RELEASE_CACHE.clear()
        _RELEASE_CACHE[key] = read_release(root, options)
    return _RELEASE_CACHE[key]


class Coreb(datasets.GeneratorBasedBuilder):
    """CoREB: one config per subtask (one split per release), the corpora, the official configs.

    ``data_dir`` is a release folder in the official layout (``<config>/<split>.jsonl`` or
    ``.parquet``) or a Hub dataset id holding it.
    """

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = CorebConfig
    BUILDER_CONFIGS = _configs(SUBTASKS.values())

    def _info(self) -> datasets.DatasetInfo:
        config = self.config
        if config.kind == "subtask":
            features = SUBTASK_FEATURES
        elif config.kind == "corpus":
            features = CORPUS_FEATURES[config.name]
        else:
            features = OFFICIAL_FEATURES[config.name]
        return datasets.DatasetInfo(
            description=_DESCRIPTION, features=features, citation=_CITATION, license="apache-2.0"
        )

    def _release(self) -> Release:
        if not self.config.data_dir:
            raise ValueError(
                f"{type(self).__name__} needs data_dir: the release folder in the official layout "
                "(<config>/<split>.jsonl or .parquet), e.g. data_dir='path/to/release'"
            )
        return _cached_release(self.config.data_dir, self.config.qrels_options())

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        release = self._release()
        names = [
            name
            for name, data in release.releases.items()
            if self.config.kind != "subtask"
            or any(s.name == self.config.name for s, _ in data.queries.values())
        ]
        if not names:
            raise ValueError(
                f"no release in {release.path} has queries of subtask {self.config.name!r}; "
                f"present: {', '.join(release.subtasks) or 'none'}"
            )
        return [datasets.SplitGenerator(name=n, gen_kwargs={"release": n}) for n in names]

    def _generate_examples(self, release: str) -> Iterator[tuple[str, dict[str, Any]]]:
        data = self._release().releases[release]
        for i, row in enumerate(config_rows(data, self.config.name, self.config.kind)):
            yield str(i), row


def config_rows(data: ReleaseData, name: str, kind: str) -> Iterator[dict[str, Any]]:
    """The rows of config ``name`` (of ``kind`` subtask | corpus | official) for one release."""
    if kind == "subtask":
        return subtask_rows(data, name)
    if kind == "corpus":
        return corpus_rows(data, name)
    return official_rows(data, name)


def builder_class(subtasks: Iterable[Subtask]) -> type[Coreb]:
    """:class:`Coreb` with the configs of a release that holds subtasks outside the registry."""
    extra = [s for s in subtasks if s.name not in SUBTASKS]
    if not extra:
        return Coreb
    configs = [*Coreb.BUILDER_CONFIGS, *(_config(s.name, "subtask", s.family) for s in extra)]
    return type("Coreb", (Coreb,), {"BUILDER_CONFIGS": configs})


def load_config(
    release_dir: str | os.PathLike[str],
    config: str,
    *,
    cache_dir: str | None = None,
    options: QrelsOptions | None = None,
) -> datasets.DatasetDict:
    """One config straight from a release folder, through :class:`Coreb` (datasets 4+ path)."""
    options = options or QrelsOptions()
    release = _cached_release(str(release_dir), options)
    cls = builder_class(release.subtasks.values())
    builder = cls(
        config_name=config,
        data_dir=str(release_dir),
        cache_dir=cache_dir,
        qrels_scheme=options.scheme,
        min_hard_negatives=options.min_hard_negatives,
        c2t_hard_negatives=options.c2t_hard_negatives,
        original_text_style=options.original_text_style,
    )
    builder.download_and_prepare()
    return builder.as_dataset()


# --------------------------------------------------------------------------------------------
# The Hub folder: Parquet + README configs, written atomically and reproducibly
# --------------------------------------------------------------------------------------------

DEFAULT_OUT = "coreb"


def _features_of(cls: type[Coreb], name: str) -> tuple[str, datasets.Features]:
    config = next(c for c in cls.BUILDER_CONFIGS if c.name == name)
    if config.kind == "subtask":
        return "subtask", SUBTASK_FEATURES
    if config.kind == "corpus":
        return "corpus", CORPUS_FEATURES[name]
    return "official", OFFICIAL_FEATURES[name]


def write_parquet(rows: Iterable[dict[str, Any]], features: datasets.Features, path: Path) -> int:
    """Write ``rows`` as one Parquet file with ``features``' schema; returns the row count.

    Fixed writer settings, so that a rebuild of the same input is byte-identical."""
    table = pa.Table.from_pylist(list(rows), schema=features.arrow_schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    if table.num_rows == 0:
        # no row group at all: `datasets` cannot read a file whose one row group is empty
        pq.ParquetWriter(path, table.schema, compression="zstd", compression_level=3).close()
        return 0
    pq.write_table(table, path, compression="zstd", compression_level=3, row_group_size=100_000)
    return table.num_rows


def configs_yaml(
    layout: Mapping[str, Sequence[str]], rows: Mapping[str, Mapping[str, int]] | None = None
) -> list[str]:
    """The ``configs:`` block of a dataset card for ``{config: [split, ...]}`` laid out as
    ``<config>/<split>.parquet``; with ``rows`` (the counts), empty splits are left out."""
    yaml = ["configs:"]
    for name, splits in layout.items():
        if rows is not None:
            splits = [s for s in splits if rows.get(name, {}).get(s, 0) > 0]
        if not splits:
            continue
        yaml.append(f"- config_name: {name}")
        yaml.append("  data_files:")
        for split in splits:
            yaml.append(f"  - split: {split}")
            yaml.append(f"    path: {name}/{split}.parquet")
    return yaml


# --------------------------------------------------------------------------------------------
# Destinations: checked before anything is written; what killed builds left is reclaimed
# --------------------------------------------------------------------------------------------


def _host_token() -> str:
    # a PID means something only on its own host: a folder shared over NFS may hold scratch
    # folders of builds running elsewhere, which must never be judged dead from here
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _scratch_prefix(out: Path, kind: str) -> str:
    """``.<name>.<kind>-<host>-<pid>-``: names that say which process owns a scratch folder."""
    return f".{out.name}.{kind}-{_host_token()}-{os.getpid()}-"


def scratch_folder(out_dir: str | os.PathLike[str]) -> Path:
    """A new, empty scratch folder beside ``out_dir``, named for its owner process, in which a
    build is written before :func:`replace_folder` moves it in; one a killed process left is
    removed by the next build's :func:`reclaim_leftovers`."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=_scratch_prefix(out, "tmp"), dir=out.parent))


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (when unsure: yes, so nothing is removed)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def reclaim_leftovers(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the scratch folders that killed builds of ``out_dir`` left beside it.

    A build writes into ``.<name>.tmp-<host>-<pid>-*`` and moves the folder it replaces to
    ``.<name>.old-<host>-<pid>-*``. A SIGKILL (or a power cut) leaves them; only those whose
    owner process is gone on this host are touched. Where the kill came between moving the old
    folder aside and moving the new one in, the old folder is put back, so a killed rebuild
    never loses the previous build. Returns the paths removed or restored.
    """
    out = Path(out_dir)
    if not out.parent.is_dir():
        return []
    pattern = re.compile(
        rf"\.{re.escape(out.name)}\.(tmp|old)-{_host_token()}-(\d+)-[a-z0-9_]+", re.ASCII
    )
    dead: dict[str, list[Path]] = {"tmp": [], "old": []}
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and not _pid_alive(int(match.group(2))):
            dead[match.group(1)].append(Path(entry.path))
    touched: list[Path] = []
    if dead["old"] and not os.path.lexists(out):
        newest = max(dead["old"], key=lambda p: p.lstat().st_mtime_ns)
        try:
            newest.rename(out)
        except OSError as err:  # another process restored it first, or it is gone
            logger.debug("could not restore %s: %s", newest, err)
        else:
            logger.warning("restored %s from %s, left by a killed build", out, newest)
            dead["old"].remove(newest)
            touched.append(newest)
    for path in dead["tmp"] + dead["old"]:
        logger.info("removing %s, left by a killed build", path)
        shutil.rmtree(path, ignore_errors=True)
        touched.append(path)
    return touched


def _foreign_files(out: Path, keep: Iterable[str]) -> list[str]:
    """What ``out`` holds beyond a folder this module writes (README.md, <config>/*.parquet and
    the ``keep`` files): ``--force`` must not delete a user's other data."""
    allowed = {"README.md", *keep}
    foreign = []
    for entry in sorted(out.iterdir()):
        name = entry.name
        if name in allowed and entry.is_file() and not entry.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink() and not name.startswith("."):
            for inner in sorted(entry.iterdir()):
                rel = f"{name}/{inner.name}"
                plain = inner.is_file() and not inner.is_symlink()
                if not (plain and (inner.suffix == ".parquet" or rel in allowed)):
                    foreign.append(rel)
            continue
        foreign.append(name)
    return foreign


def check_destination(
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
    keep: Iterable[str] = (),
    label: str = "the output folder",
) -> Path:
    """Raise unless a build may write ``out_dir``; first reclaim what killed builds left there.

    Refused, whatever ``overwrite`` says: an output that is, contains or lies inside one of
    ``inputs`` (symlinks resolved), one that exists but is not a folder, a folder holding
    anything a build does not write (README.md, ``<config>/*.parquet``, the ``keep`` files), and
    a place where a folder cannot be created (probed by creating one). An existing folder needs
    ``overwrite``. Returns the folder to write: ``out_dir``, or where it points if a symlink.

    Raises:
        ValueError: the output would touch an input or user data, or cannot be written.
        FileExistsError: it exists and ``overwrite`` is false.
    """
    out = Path(out_dir)
    if out.name in ("", ".", ".."):  # "." or "a/..": name the folder, so it has a sibling
        out = Path(os.path.abspath(out))
    real = out.resolve()
    for inp in inputs:
        inp = Path(inp).resolve()
        if real == inp or real in inp.parents or inp in real.parents:
            raise ValueError(
                f"{label} {out} is, contains or lies inside {inp}, an input of this build: "
                "writing it would replace or change the release being read; choose a folder "
                "outside the release"
            )
    if out.is_symlink():
        out = real  # write where it points, so that the link keeps working
    reclaim_leftovers(out)
    if os.path.lexists(out):
        if not overwrite:
            raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
        if not out.is_dir():
            raise ValueError(
                f"{label} {out} exists and is not a folder; refusing to replace it: remove it "
                "or choose another folder"
            )
        foreign = _foreign_files(out, keep)
        if foreign:
            more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
            shown = ", ".join(foreign[:5]) + more
            raise ValueError(
                f"{label} {out} holds files a build does not write ({shown}); replacing it "
                "would delete them: remove them yourself or choose another folder"
            )
        for folder in (out, *(p for p in out.iterdir() if p.is_dir())):
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{label} {out} cannot be replaced: {folder} is not writable")
    ancestor = out.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        probe = tempfile.mkdtemp(prefix=_scratch_prefix(out, "tmp"), dir=ancestor)
    except OSError as err:
        raise ValueError(
            f"{label} {out} cannot be written: no folder can be created in {ancestor} "
            f"({err.strerror or err}); choose a writable place"
        ) from err
    os.rmdir(probe)
    return out


def write_hub_folder(
    out_dir: str | os.PathLike[str],
    files: Mapping[str, Mapping[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]],
    card: Callable[[dict[str, dict[str, int]]], str],
    *,
    overwrite: bool = False,
    progress: bool = True,
    desc: str = "build",
    extra: Mapping[str, str] | None = None,
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> dict[str, dict[str, int]]:
    """Write a Hub dataset folder atomically: ``<config>/<split>.parquet`` + ``README.md``.

    The machinery shared by every builder of the toolkit (``coreb build``, ``coreb qualcode
    build``). ``files`` maps ``config -> split -> (rows factory, features)``; ``card`` gets the
    row counts ``{config: {split: n}}`` and returns the README text; ``extra`` adds small files
    (``{relative path: text}``, e.g. a build report). The folder appears (or replaces the old
    one, with ``overwrite``) in one rename, so a failed build leaves nothing half-written; the
    destination is checked first (:func:`check_destination`, against ``inputs``), and scratch
    folders of killed builds are reclaimed.
    """
    from tqdm.auto import tqdm

    out = check_destination(out_dir, overwrite=overwrite, inputs=inputs, keep=[*(extra or {})])
    tmp = scratch_folder(out)
    rows: dict[str, dict[str, int]] = {}
    try:
        for name, parts in tqdm(files.items(), desc=desc, unit="config", disable=not progress):
            for split, (make_rows, features) in parts.items():
                items = list(make_rows())
                # `datasets` has no empty split: an empty one is left out of the folder and of
                # the card's configs (configs_yaml with the counts), and the card says so
                rows.setdefault(name, {})[split] = (
                    write_parquet(items, features, tmp / name / f"{split}.parquet") if items else 0
                )
        (tmp / "README.md").write_text(card(rows), encoding="utf-8")
        for rel, text in (extra or {}).items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text, encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rows


@dataclass
class BuildReport:
    """What :func:`build` wrote: ``{config: {split: rows}}`` and the warnings it logged."""

    out_dir: Path
    rows: dict[str, dict[str, int]]
    warnings: list[str]


def _layout(release: Release) -> dict[str, list[tuple[str, str]]]:
    """``{config: [(kind, split), ...]}``: which config/split files the folder holds."""
    layout: dict[str, list[tuple[str, str]]] = {}
    for name in release.subtasks:
        layout[name] = [
            ("subtask", r)
            for r, d in release.releases.items()
            if any(s.name == name for s, _ in d.queries.values())
        ]
    for name in CORPUS_CONFIGS:
        layout[name] = [("corpus", r) for r in release.releases]
    qrels_family = {spec["qrels"]: family for family, spec in FAMILIES.items()}
    for name in OFFICIAL_CONFIGS:
        splits = []
        for split, data in release.releases.items():
            family = qrels_family.get(name)
            if family is None or data.qrels_source.get(family) == "shipped":
                present = bool(data.records[name])  # as published, where published
            else:  # derived qrels: present when the family has queries
                present = any(s.family == family for s, _ in data.queries.values())
            if present or name in ("code_corpus", "text_corpus"):
                splits.append(("official", split))
        layout[name] = splits
    return {k: v for k, v in layout.items() if v}


def build(
    source: str | os.PathLike[str] | Release,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    options: QrelsOptions | None = None,
    overwrite: bool = False,
    pretty_name: str = "CoREB",
    license: str = "apache-2.0",
    progress: bool = True,
) -> BuildReport:
    """Write the Hub dataset folder for every release in ``source``.

    The folder holds ``<config>/<split>.parquet`` for every subtask, corpus view and official
    config, and a README.md dataset card whose ``configs:`` declare them, so
    ``load_dataset(out_dir, "t2c_full_retro_any")`` works with any ``datasets`` version.

    Nothing is written unless the whole release validates; the folder appears (or replaces the
    old one, with ``overwrite``) in one rename, so a failed build leaves nothing half-written.
    """
    options = options or QrelsOptions()
    out = Path(out_dir)
    # fail before the (long) read where the answer does not depend on it
    early = _release_inputs(source) if isinstance(source, Release) else local_inputs(source)
    check_destination(out, overwrite=overwrite, inputs=early)
    release = source if isinstance(source, Release) else read_release(source, options)
    cls = builder_class(release.subtasks.values())
    layout = _layout(release)
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {}
    for name, parts in layout.items():
        kind, features = _features_of(cls, name)
        for _, split in parts:
            data = release.releases[split]
            files.setdefault(name, {})[split] = (
                lambda data=data, name=name, kind=kind: config_rows(data, name, kind),
                features,
            )
    rows = write_hub_folder(
        out,
        files,
        lambda rows: render_card(release, layout, rows, pretty_name=pretty_name, license=license),
        overwrite=overwrite,
        progress=progress,
        desc="coreb build",
        inputs=_release_inputs(release),
    )
    return BuildReport(out, rows, [str(w) for w in release.warnings])


def _release_inputs(release: Release) -> tuple[str, ...]:
    return (*release.inputs, release.path)


def replace_folder(tmp: Path, out: Path) -> None:
    """Move ``tmp`` to ``out``; an existing ``out`` is swapped out first, then removed.

    The swapped-out folder is named for its owner process, so that if this process is killed
    between the two renames, :func:`reclaim_leftovers` puts it back."""
    old = None
    if out.exists():
        old = out.with_name(f"{_scratch_prefix(out, 'old')}{secrets.token_hex(4)}")
        out.rename(old)
    try:
        tmp.rename(out)
    except BaseException:
        if old is not None:
            old.rename(out)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The dataset card
# --------------------------------------------------------------------------------------------


def size_category(n: int) -> str:
    for bound, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < bound:
            return label
    return "1M<n<10M"


def markdown_table(header: Sequence[str], body: Iterable[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in body]
    return "\n".join(lines)


def release_statistics(data: ReleaseData) -> dict[str, Any]:
    """Counts in the shapes of the paper's Tables 5, 10, 11 and 12, computed from the data."""
    qrels = {f: Counter() for f in FAMILIES}
    for qid, judged in data.qrels.items():
        fam = data.queries[qid][0].family
        for rel in judged.values():
            qrels[fam][rel] += 1
    by_lang = {f: Counter() for f in FAMILIES}
    by_variant: Counter = Counter()
    for subtask, rec in data.queries.values():
        lang = subtask.language or rec.fields.get("anchor_language") or "-"
        by_lang[subtask.family][lang] += 1
        by_variant[(subtask.family, subtask.variant)] += 1
    per_subtask: dict[str, list[int]] = {}
    for qid, (subtask, _) in data.queries.items():
        judged = data.qrels.get(qid, {})
        row = per_subtask.setdefault(subtask.name, [0, 0, 0])
        row[0] += 1
        row[1] += sum(1 for r in judged.values() if r == 2)
        row[2] += sum(1 for r in judged.values() if r == 1)
    code_lang = Counter(r.fields["language"] for r in data.code.values())
    code_passed = Counter(
        r.fields["language"] for r in data.code.values() if r.meta.get("passed") is True
    )
    code_model = Counter(r.fields.get("model") or "-" for r in data.code.values())
    text_style = Counter(r.fields.get("text_style") or "-" for r in data.texts.values())
    return {
        "qrels": qrels,
        "queries_by_language": by_lang,
        "queries_by_variant": by_variant,
        "code_by_language": code_lang,
        "code_passed_by_language": code_passed,
        "code_by_model": code_model,
        "text_by_style": text_style,
        "per_subtask": {k: tuple(v) for k, v in per_subtask.items()},
        "n_code": len(data.code),
        "n_text": len(data.texts),
        "n_queries": len(data.queries),
    }


def _statistics_section(release: Release) -> str:
    parts = []
    for name, data in release.releases.items():
        st = release_statistics(data)
        langs = sorted(
            {lang for c in st["queries_by_language"].values() for lang in c},
            key=lambda x: (LANGUAGE_SUFFIXES.index(x) if x in LANGUAGE_SUFFIXES else 99, x),
        )
        parts.append(
            f"### {name}\n\n{st['n_code']:,} code documents, {st['n_text']:,} texts, "
            f"{st['n_queries']:,} queries; qrels "
            + ", ".join(f"{f}: {data.qrels_source.get(f, 'none')}" for f in FAMILIES)
            + "."
        )
        parts.append(
            "Corpus composition (cf. Table 12):\n\n"
            + markdown_table(
                ["language", "code documents", "verified correct (passed)", "pass rate"],
                [
                    (
                        lang,
                        st["code_by_language"][lang],
                        st["code_passed_by_language"][lang],
                        f"{st['code_passed_by_language'][lang] / st['code_by_language'][lang]:.2f}",
                    )
                    for lang in sorted(st["code_by_language"])
                ]
                + [
                    (
                        "total",
                        st["n_code"],
                        sum(st["code_passed_by_language"].values()),
                        f"{sum(st['code_passed_by_language'].values()) / max(1, st['n_code']):.2f}",
                    )
                ],
            )
            + "\n\n"
            + markdown_table(
                ["generator model", "code documents"], sorted(st["code_by_model"].items())
            )
            + "\n\n"
            + markdown_table(["text style", "texts"], sorted(st["text_by_style"].items()))
        )
        parts.append(
            "Queries per main task and language (cf. Tables 10, 11; `-` = no suffix):\n\n"
            + markdown_table(
                ["main task", *langs, "total"],
                [
                    (
                        f,
                        *(st["queries_by_language"][f][lang] for lang in langs),
                        sum(st["queries_by_language"][f].values()),
                    )
                    for f in FAMILIES
                ],
            )
        )
        parts.append(
            "Queries per subtask variant (cf. Table 11):\n\n"
            + markdown_table(
                ["main task", "variant", "queries"],
                [(f, v, n) for (f, v), n in sorted(st["queries_by_variant"].items())],
            )
        )
        parts.append(
            "Queries, positives and hard negatives per query, by subtask:\n\n"
            + markdown_table(
                ["subtask", "queries", "positives / query", "hard negatives / query"],
                [
                    (name, n, f"{pos / n:.2f}", f"{neg / n:.2f}")
                    for name, (n, pos, neg) in sorted(st["per_subtask"].items())
                ],
            )
        )
        parts.append(
            "Graded judgments (cf. Table 5):\n\n"
            + markdown_table(
                ["main task", "relevance 2 (positive)", "relevance 1 (hard negative)", "total"],
                [
                    (f, st["qrels"][f][2], st["qrels"][f][1], st["qrels"][f][1] + st["qrels"][f][2])
                    for f in FAMILIES
                ]
                + [
                    (
                        "all",
                        *(sum(st["qrels"][f][r] for f in FAMILIES) for r in (2, 1)),
                        sum(sum(c.values()) for c in st["qrels"].values()),
                    )
                ],
            )
        )
    return "\n\n".join(parts)


def render_card(
    release: Release,
    layout: Mapping[str, list[tuple[str, str]]],
    rows: Mapping[str, Mapping[str, int]],
    *,
    pretty_name: str = "CoREB",
    license: str = "apache-2.0",
) -> str:
    """The README.md: YAML metadata with ``configs:``, then the card."""
    total = sum(n for name in release.subtasks for n in rows.get(name, {}).values())
    total += sum(n for name in (CORPUS_CODE, CORPUS_TEXT) for n in rows.get(name, {}).values())
    yaml = [
        "---",
        f"pretty_name: {pretty_name}",
        f"license: {license}",
        "language:",
        "- en",
        "- code",
        "task_categories:",
        "- text-retrieval",
        "- text-ranking",
        "size_categories:",
        f"- {size_category(total)}",
        "tags:",
        "- code",
        "- code-search",
        "- reranking",
        "- graded-relevance",
    ]
    yaml += configs_yaml(
        {name: [split for _, split in parts] for name, parts in layout.items()}, rows
    )
    yaml.append("---")
    opts = release.options
    subtask_table = markdown_table(
        ["config", "main task", "ranks", *release.releases],
        [
            (
                f"`{name}`" + ("" if s.known else " (not in the paper)"),
                MAIN_TASK_NAMES[s.family],
                f"`{s.corpus}`",
                *(rows.get(name, {}).get(r, 0) for r in release.releases),
            )
            for name, s in release.subtasks.items()
        ],
    )
    derived = any(
        src.startswith("derived")
        for d in release.releases.values()
        for src in d.qrels_source.values()
    )
    qrels_note = (
        f"Some qrels were derived from execution outcomes (scheme `{opts.scheme}`, "
        f"`min_hard_negatives={opts.min_hard_negatives}`, "
        f"`c2t_hard_negatives={opts.c2t_hard_negatives}`, "
        f"`original_text_style={opts.original_text_style!r}`); see the statistics for which."
        if derived
        else "Every release shipped its qrels; they are used as given."
    )
    body = f"""
# {pretty_name}

CoREB is a contamination-limited benchmark for code retrieval and reranking: text-to-code (T2C),
code-to-text (C2T) and code-to-code (C2C) retrieval over counterfactually rewritten LiveCodeBench
problems, with candidate solutions in Python, Java, C++, Ruby and Go generated by two models and
executed against the full test suite. Relevance comes from execution: relevance 2 is a positive
(a verified-correct solution, or the original description), relevance 1 a hard negative (a failed
solution of the same problem, or an LLM-written noise description); everything else in the
corpus is an easy negative. Releases are independent: each ranks only its own corpora.

This folder was written by `coreb build` (coreb-toolkit) from the release at build time. It
loads with plain `datasets` (no loading script):

```python
from datasets import load_dataset
queries = load_dataset("coreb", "t2c_full_retro_any", split="{next(iter(release.releases))}")
corpus = load_dataset("coreb", queries[0]["corpus"], split="{next(iter(release.releases))}")
```

## Configs

**One config per subtask**, one split per release, one row per query: `query_id`, `query`,
`positive_ids` (relevance 2), `hard_negative_ids` (relevance 1), `exclude_ids` (documents to drop
from the ranking before scoring: the code-to-code anchor), `corpus` (the config of the corpus the
query ranks), and the query's metadata (`language_constraint`, `anchor_language`,
`anchor_model`, `anchor_code_id`, `target_languages`, `source_problem_id`, `sub_query_type`,
`label`/`text_id`/`pair_type` for `c2t_match`, `qrels_source`, and the original `meta` as JSON).

{subtask_table}

**Corpus views** (`doc_id`, `text`, plus the original fields):

- `corpus_code`: the code corpus; `text` is the code, with `language`, `model`, and the execution
  outcome (`passed`, `pass_rate`, `test_passed`, `test_total`).
- `corpus_text`: the text corpus; `text` is the full description (original or noise).
- `corpus_text_abbreviated`: the same texts, `text` = `abbreviated_text` where the record has
  one, else the full text (`text_field` says which). The `c2t_canonical_retro_*` subtasks rank
  this view: they retrieve abbreviated descriptions from code (paper, Appendix A.3), so the
  documents must be the abbreviated forms; texts without an abbreviated form stay in the view
  with their full text so that the corpus keeps every document the qrels may name.

**The 8 official configs** (`code_corpus`, `text_corpus`, `text2code_queries`,
`text2code_qrels`, `code2code_queries`, `code2code_qrels`, `code2text_queries`,
`code2text_qrels`) with the records as published; `meta` is stored as a JSON string (keys
sorted) whatever encoding it arrived in, and any field outside the published schema is kept in
`extra` (JSON). Where a release shipped no qrels, its `*_qrels` config holds the derived ones.

## Evaluation protocol

- Rank the whole corpus named by `corpus` for every query (cosine similarity for embedders),
  `c2t_match` included.
- nDCG@{{1,3,5,10}}, MAP@{{10,100}}, Recall@{{1,3,5,10,100}}, MRR@10, P@{{1,3,5,10}};
  primary nDCG@10
  and Recall@10, computed with pytrec_eval.
- `relevance_level = 2`: binary measures count only relevance-2 documents; for nDCG the hard
  negatives are set to 0 before scoring, so they earn nothing but still occupy ranks.
- Code-to-code: drop every id in `exclude_ids` (the anchor) from the query's ranking before any
  measure.
- `c2t_match` negative pairs (label 0) have only a relevance-1 judgment. The paper says both that
  they are excluded (A.3) and that they score zero (A.6); the official runner scores them 0 and
  counts them, which reproduces the published numbers. State which policy a report uses.
- Aggregate per subtask, per main task, and overall weighted by query count.

`coreb evaluate` and `evaluate.load("coreb_metric")` implement exactly this.

## Qrels

{qrels_note} The v2 scheme: T2C positives are the passed solutions of the query's problem in the
constrained language (any language for `_any`), hard negatives its failed solutions, supplemented
when fewer than `min_hard_negatives` by passed solutions outside the constraint; C2T positives
are the original description of the anchor's problem, hard negatives its noise descriptions,
filled from other problems' noise texts up to `c2t_hard_negatives`; C2C positives are passed
solutions of the anchor's problem by the anchor's model in the target languages
(`cross_lang`), by another model (`cross_model`) or in the anchor's language (`mono_lang`),
hard negatives the failed ones, supplemented like T2C; the anchor is never judged.

## Statistics

Computed from the data at build time.

{_statistics_section(release)}

## Citation

```bibtex
{_CITATION}
```

The license above is the one given to `coreb build` (default: apache-2.0, the license of the
official CoREB code); check it against the release you publish.
"""
    return "\n".join(yaml) + "\n" + body.lstrip("\n")


# --------------------------------------------------------------------------------------------
# Helpers for the rest of the toolkit
# --------------------------------------------------------------------------------------------


@dataclass
class SubtaskData:
    """One subtask of one release in the shapes ``eval_metrics`` takes.

    ``evaluate_retrieval(data.qrels, run, exclude=data.exclude)`` scores a run over
    ``data.corpus`` for ``data.queries``.
    """

    subtask: str
    release: str
    corpus_name: str
    queries: dict[str, str]  # query_id -> query text
    corpus: dict[str, str]  # doc_id -> text
    qrels: dict[str, dict[str, int]]  # query_id -> {doc_id: 2 | 1}; every query present
    exclude: dict[str, list[str]]  # query_id -> doc ids to drop (only queries with some)


def subtask_data(
    subtask: str,
    release: str,
    q_rows: Iterable[Mapping],
    c_rows: Iterable[Mapping] | Mapping[str, str],
) -> SubtaskData:
    """:class:`SubtaskData` from a subtask config's rows and its corpus (rows, or a ready
    ``{doc_id: text}`` shared by the subtasks that rank it)."""
    q_rows = list(q_rows)
    if not q_rows:
        raise ValueError(f"subtask {subtask!r} has no query in release {release!r}")
    corpus_name = q_rows[0]["corpus"]
    qrels = {
        r["query_id"]: {
            **dict.fromkeys(r["hard_negative_ids"], 1),
            **dict.fromkeys(r["positive_ids"], 2),
        }
        for r in q_rows
    }
    return SubtaskData(
        subtask=subtask,
        release=release,
        corpus_name=corpus_name,
        queries={r["query_id"]: r["query"] for r in q_rows},
        corpus=c_rows if isinstance(c_rows, Mapping) else {r["doc_id"]: r["text"] for r in c_rows},
        qrels=qrels,
        exclude={r["query_id"]: list(r["exclude_ids"]) for r in q_rows if r["exclude_ids"]},
    )


def load_subtask(
    source: str | os.PathLike[str],
    subtask: str,
    release: str | None = None,
    *,
    options: QrelsOptions | None = None,
) -> SubtaskData:
    """Queries, corpus, qrels and exclusions of one subtask, ready for ``eval_metrics``.

    ``source`` is a folder written by :func:`build` (or its Hub id), or a release folder in the
    official layout. ``release`` is the split (default: the only one, else an error naming them).
    """
    path = Path(source)
    built = (path / "README.md").is_file() and (path / subtask).is_dir()
    if not built and (path.is_dir() or not re.fullmatch(r"[\w.-]+/[\w.-]+", str(source))):
        data = _cached_release(str(source), options or QrelsOptions())
        names = [
            n
            for n, d in data.releases.items()
            if any(s.name == subtask for s, _ in d.queries.values())
        ]
        release = _pick_release(release, names, subtask)
        rel = data.releases[release]
        spec = next(s for s, _ in rel.queries.values() if s.name == subtask)
        return subtask_data(
            subtask, release, subtask_rows(rel, subtask), corpus_rows(rel, spec.corpus)
        )
    queries = datasets.load_dataset(str(source), subtask)
    release = _pick_release(release, list(queries), subtask)
    q_rows = queries[release]
    corpus = datasets.load_dataset(str(source), q_rows[0]["corpus"], split=release)
    return subtask_data(subtask, release, q_rows, corpus)


def _pick_release(release: str | None, names: Sequence[str], subtask: str) -> str:
    if not names:
        raise ValueError(f"no release holds subtask {subtask!r}")
    if release is None:
        if len(names) > 1:
            raise ValueError(
                f"subtask {subtask!r} is in several releases ({', '.join(names)}); pick one"
            )
        return names[0]
    if release not in names:
        raise ValueError(
            f"subtask {subtask!r} is not in release {release!r}; it is in {', '.join(names)}"
        )
    return release


def export_mteb(
    release: Release,
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, dict[str, int]]:
    """Write an MTEB-style folder: ``{subset}-corpus``, ``{subset}-queries``, ``{subset}-qrels``.

    Corpus rows are ``id, title, text``, queries ``id, text``, qrels ``query-id, corpus-id,
    score`` with positives as 1 and hard negatives as 0 (kept, so the judgments are not lost,
    and scored as non-relevant, which for CoREB's zeroed-gain nDCG gives the same numbers). One
    split per release. MTEB has no per-query exclusion, so on the ``c2c_*`` subsets the anchor
    stays in the corpus: scores there are not comparable with CoREB's unless the anchor is
    dropped from each ranking; the card says so.
    """
    corpus_f = datasets.Features({"id": _S, "title": _S, "text": _S})
    queries_f = datasets.Features({"id": _S, "text": _S})
    qrels_f = datasets.Features({"query-id": _S, "corpus-id": _S, "score": datasets.Value("int64")})
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {}
    for subset, spec in release.subtasks.items():
        for split, data in release.releases.items():
            if not any(s.name == subset for s, _ in data.queries.values()):
                continue

            def docs(data: ReleaseData = data, corpus: str = spec.corpus) -> Iterator[dict]:
                for d in corpus_rows(data, corpus):
                    yield {"id": d["doc_id"], "title": "", "text": d["text"]}

            def queries(data: ReleaseData = data, subset: str = subset) -> Iterator[dict]:
                for r in subtask_rows(data, subset):
                    yield {"id": r["query_id"], "text": r["query"]}

            def qrels(data: ReleaseData = data, subset: str = subset) -> Iterator[dict]:
                for r in subtask_rows(data, subset):
                    for ids, score in ((r["positive_ids"], 1), (r["hard_negative_ids"], 0)):
                        for doc in ids:
                            yield {"query-id": r["query_id"], "corpus-id": doc, "score": score}

            for suffix, make, feats in (
                ("corpus", docs, corpus_f),
                ("queries", queries, queries_f),
                ("qrels", qrels, qrels_f),
            ):
                files.setdefault(f"{subset}-{suffix}", {})[split] = (make, feats)

    def card(rows: dict[str, dict[str, int]]) -> str:
        yaml = ["---", *configs_yaml({n: list(parts) for n, parts in rows.items()}, rows), "---"]
        return (
            "\n".join(yaml)
            + "\n\n# CoREB in the MTEB layout\n\nWritten by `coreb build --mteb`. Qrels: score 1 ="
            " relevance 2, score 0 = hard negative (relevance 1). MTEB cannot drop the code-to-code"
            " anchor from each ranking, so `c2c_*` scores differ from CoREB's protocol.\n"
        )

    written = write_hub_folder(
        out_dir,
        files,
        card,
        overwrite=overwrite,
        progress=progress,
        desc="mteb export",
        inputs=_release_inputs(release),
    )
    return {name: {s: n for s, n in parts.items() if n} for name, parts in written.items()}
