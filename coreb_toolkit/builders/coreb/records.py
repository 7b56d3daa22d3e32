"""Records of a release: their shapes, the checks every value passes, and reading the files.

A release folder holds ``<config>/<split>.jsonl`` or ``.parquet`` (or Hub shards) per official
config. Every row becomes a :class:`Record` with its fields normalised to the layout's types,
or a :class:`Problem` saying what is wrong and where; nothing is skipped silently.
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from coreb_toolkit.builders.coreb.layout import (
    BOOL,
    FLOAT64,
    INT64,
    META_FIELD,
    OFFICIAL_FIELDS,
    STRING,
)
from coreb_toolkit.vocabulary import SUBTASKS, SubtaskMetadata

if TYPE_CHECKING:
    from coreb_toolkit.builders.coreb.qrels import QrelsOptions


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
    queries: dict[str, tuple[SubtaskMetadata, Record]] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    qrels_source: dict[str, str] = field(default_factory=dict)  # family -> shipped | derived-v2
    # family -> the shipped qrels against the execution metadata (qrels.audit_qrels)
    qrels_audit: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Release:
    """Every release found in one folder (official layout), validated together."""

    path: str
    releases: dict[str, ReleaseData]
    options: QrelsOptions
    warnings: list[Problem] = field(default_factory=list)
    inputs: tuple[str, ...] = ()  # real paths read (folders and files): no output may touch them

    @property
    def subtasks(self) -> dict[str, SubtaskMetadata]:
        """Every subtask present in some release, known ones in registry order, then the rest."""
        found: dict[str, SubtaskMetadata] = {}
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
BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_ID_FIELDS = frozenset({"code_id", "text_id", "query_id", "doc_id"})
ID_RULE = (
    "must be a non-empty id without whitespace or control characters (TREC run and qrels "
    "files split on whitespace)"
)
# A lone surrogate (an unpaired \ud800-\udfff escape in JSON) is a valid Python str but not
# Unicode: it cannot be written as UTF-8, so pyarrow would fail on it while writing.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_DIGIT_LIMIT = "Exceeds the limit"  # Python's message for ints past sys.get_int_max_str_digits()


def show_value(value: Any) -> str:
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
        text = json_text(value)
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


FLAT_META_PREFIX = "meta_"
"""The Hub serves ``meta`` flattened: its key ``k`` is the top-level column ``meta_k`` (Parquet
holds one column per key, null in the rows that do not use it)."""


def _merge_flat_meta(
    raw: Mapping[str, Any], meta: dict[str, Any], where: str, problems: list[Problem]
) -> None:
    """Fold the flattened ``meta_<key>`` columns of ``raw`` into ``meta``; a null column is a
    key the row does not use. A key given both nested and flattened must agree."""
    for column, value in raw.items():
        if not isinstance(column, str) or not column.startswith(FLAT_META_PREFIX):
            continue
        key = column[len(FLAT_META_PREFIX) :]
        if value is None or not key:
            continue
        if key in meta and meta[key] != value:
            problems.append(
                Problem(
                    where,
                    f"meta.{key} is {show_value(meta[key])} but column {column!r} is "
                    f"{show_value(value)}: give the key once (nested in meta or flattened)",
                )
            )
            continue
        meta[key] = value


def _check_type(value: Any, kind: str) -> Any:
    """``value`` as ``kind``, or raise TypeError. Integral floats (Parquet nulls) become ints;
    ints must fit the int64 column they are written to."""
    if kind == STRING:
        if isinstance(value, str):
            return value
    elif kind == INT64:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            return value
    elif kind == FLOAT64:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind == BOOL and isinstance(value, bool):
        return value
    raise TypeError


def normalise_record(raw: Any, config: str, where: str, problems: list[Problem]) -> Record | None:
    """``raw`` (one row of official ``config``) as a :class:`Record` with fields of the layout's
    types, or None, with every reason appended to ``problems``."""
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
            expected = f"an int64 ({_INT64_RANGE})" if kind == INT64 else f"a {kind}"
            problems.append(
                Problem(
                    where,
                    f"field {name!r} must be {expected}, got {type(value).__name__} "
                    f"{show_value(value)}",
                )
            )
            ok = False
            continue
        if kind == STRING:
            bad = _SURROGATE.search(value)
            if bad:
                problems.append(Problem(where, f"field {name!r} {_not_unicode(bad)}"))
                ok = False
            elif name in _ID_FIELDS and (not value or BAD_ID_CHAR.search(value)):
                problems.append(
                    Problem(where, f"field {name!r} {ID_RULE}, got {show_value(value)}")
                )
                ok = False
    n_problems = len(problems)
    meta = _parse_meta(raw.get(META_FIELD), where, problems)
    _merge_flat_meta(raw, meta, where, problems)
    extra = {
        k: v
        for k, v in raw.items()
        if k not in spec and k != META_FIELD and not k.startswith(FLAT_META_PREFIX)
    }
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
                Problem(
                    where, f"meta.{key} must be an int64 ({_INT64_RANGE}), got {show_value(value)}"
                )
            )
    rate = meta.get("pass_rate")
    if isinstance(rate, int) and not isinstance(rate, bool):
        try:
            float(rate)
        except OverflowError:
            problems.append(
                Problem(where, f"meta.pass_rate is too large for a float64, got {show_value(rate)}")
            )


_SHARD = re.compile(r"-(\d{5})-of-(\d{5})$")  # Hub shards: release_v2603-00000-of-00001.parquet


# one walk of the folder: every way a split file can be unreadable is reported beside the rest
def split_files(
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
    return _files_by_stem(folder, entries, "split", problems, warnings)


def _files_by_stem(
    folder: Path,
    entries: Iterable[Path],
    what: str,
    problems: list[Problem],
    warnings: list[Problem],
    keep: Callable[[str], bool] | None = None,
) -> dict[str, Path | tuple[Path, ...]]:
    """``{stem: file(s)}`` of the .jsonl/.parquet files among ``entries`` (Hub shards
    ``<stem>-00000-of-00002.parquet`` grouped under their stem, every shard present). ``what``
    names the stem (split | config) in messages; ``keep`` selects stems (others are skipped:
    the caller reports them)."""
    found: dict[str, list[Path]] = defaultdict(list)
    shards: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for path in entries:
        if path.suffix not in (".jsonl", ".parquet"):
            if not path.name.startswith("."):  # .gitattributes, .DS_Store: not data
                warnings.append(Problem(str(path), "not a .jsonl or .parquet file; ignored"))
            continue
        shard = _SHARD.search(path.stem)
        split = path.stem[: shard.start()] if shard else path.stem
        if keep is not None and not keep(split):
            continue
        try:
            mode = path.stat().st_mode
        except OSError as err:
            problems.append(
                Problem(str(path), f"cannot read ({err.strerror}; a dangling symlink?)")
            )
            continue
        if stat.S_ISDIR(mode):
            problems.append(Problem(str(path), f"a {what} must be a file, this is a folder"))
            continue
        if not stat.S_ISREG(mode):
            problems.append(Problem(str(path), f"a {what} must be a regular file"))
            continue
        if shard:
            shards[split][int(shard.group(2))].add(int(shard.group(1)))
        found[split].append(path)
    for split, by_total in shards.items():
        if len(by_total) > 1:
            problems.append(
                Problem(
                    str(folder),
                    f"{what} {split!r} has shards of {len(by_total)} different counts "
                    f"(-of-{', -of-'.join(f'{n:05d}' for n in sorted(by_total))}): keep one set",
                )
            )
        for total, have in sorted(by_total.items()):
            missing = sorted(set(range(total)) - have)
            if missing:
                problems.append(
                    Problem(
                        str(folder),
                        f"{what} {split!r} has shards {', '.join(map(str, sorted(have)))} of "
                        f"{total}; missing: {', '.join(map(str, missing))}",
                    )
                )
    return {split: paths[0] if len(paths) == 1 else tuple(paths) for split, paths in found.items()}


RELEASE_FOLDER_LAYOUT = "release folders"
HUB_LAYOUT = "hub"


def release_layout(root: Path, configs: Sequence[str]) -> tuple[str, list[Path]]:
    """Which layout ``root`` holds, and its release folders.

    * ``hub``: ``<config>/<split>[-NNNNN-of-NNNNN].jsonl|parquet`` (the Hub's layout), or
    * ``release folders``: one folder per release holding ``<config>.jsonl|.parquet`` (the
      official runner's and most exports' layout; ``root`` itself when it is one release).
    """

    def has_config_files(folder: Path) -> bool:
        try:
            return any(
                p.suffix in (".jsonl", ".parquet")
                and (_SHARD.sub("", p.stem) if _SHARD.search(p.stem) else p.stem) in configs
                for p in folder.iterdir()
            )
        except OSError:
            return False

    if any(os.path.lexists(root / c) for c in configs):
        return HUB_LAYOUT, []
    if has_config_files(root):
        return RELEASE_FOLDER_LAYOUT, [root]
    try:
        subfolders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return HUB_LAYOUT, []
    found = [p for p in subfolders if has_config_files(p)]
    return (RELEASE_FOLDER_LAYOUT, found) if found else (HUB_LAYOUT, [])


def release_folder_files(
    folder: Path, configs: Sequence[str], problems: list[Problem], warnings: list[Problem]
) -> dict[str, Path | tuple[Path, ...]]:
    """``{config: file(s)}`` of one release folder (``<config>.jsonl|.parquet`` or shards);
    data files that name no official config are reported and ignored."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as err:
        problems.append(Problem(str(folder), f"cannot read the release folder: {err.strerror}"))
        return {}
    for path in entries:
        stem = _SHARD.sub("", path.stem) if _SHARD.search(path.stem) else path.stem
        if path.suffix in (".jsonl", ".parquet") and stem not in configs:
            warnings.append(Problem(str(path), "not an official config; ignored"))
    return _files_by_stem(folder, entries, "config", problems, warnings, keep=configs.__contains__)


def read_rows(paths: Path | tuple[Path, ...], problems: list[Problem]) -> Iterator[tuple[str, Any]]:
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


def query_text(rec: Record) -> str | None:
    """The text of a query record: ``query``, or ``code`` for ``c2t_match`` instances."""
    return rec.fields.get("query") or rec.fields.get("code")


def problem_of(rec: Record) -> str | None:
    """The problem a record belongs to: ``meta.source_problem_id``, or None where it has none.

    A noise description names its own variant in ``source_problem_id`` (``lcb_3674_noise1``)
    and the problem it was written from in ``meta.original_problem_id`` (``lcb_3674``): it is
    that problem's, for everything that groups by problem (derived qrels, disjointness,
    decontamination, validation splits).
    """
    if is_noise_text(rec):
        original = rec.meta.get("original_problem_id")
        if isinstance(original, str) and original:
            return original
    value = rec.meta.get("source_problem_id")
    return value if isinstance(value, str) and value else None


NOISE_TEXT_STYLES = frozenset({"noise", "llm_generated_noise"})
"""``text_style`` values of noise descriptions (ours; the published releases')."""


def is_noise_text(rec: Record) -> bool:
    """Whether a text-corpus record is a noise description: ``meta.is_noise_sample`` is true,
    or its ``text_style`` is one of :data:`NOISE_TEXT_STYLES`."""
    return rec.meta.get("is_noise_sample") is True or (
        rec.fields.get("text_style") in NOISE_TEXT_STYLES
    )


def json_text(value: Mapping[str, Any]) -> str:
    """``value`` as compact JSON, keys sorted: the stored form of ``meta`` and ``extra``."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
