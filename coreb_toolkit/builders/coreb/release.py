"""Reading a release in the official layout: validate everything, derive the missing qrels.

:func:`read_release` reads every release (split) in a folder, checks every record and the
references between them, derives qrels where a family ships none (:mod:`.qrels`), and raises one
:class:`~coreb_toolkit.builders.coreb.records.ReleaseError` listing every problem found.
:func:`cached_release` keeps the last release read, keyed on the files' sizes and times.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.coreb.layout import (
    CONFIG_NAME_PATTERN,
    FAMILIES,
    OFFICIAL_CONFIGS,
    RESERVED_CONFIG_NAMES,
)
from coreb_toolkit.builders.coreb.qrels import QrelsOptions, derive_qrels
from coreb_toolkit.builders.coreb.records import (
    BAD_ID_CHAR,
    HUB_LAYOUT,
    ID_RULE,
    Problem,
    Record,
    Release,
    ReleaseData,
    ReleaseError,
    normalise_record,
    query_text,
    read_rows,
    release_folder_files,
    release_layout,
    show_value,
    split_files,
)
from coreb_toolkit.hub_access import is_hub_id
from coreb_toolkit.vocabulary import SUBTASKS, SubtaskMetadata, classify_subtask

logger = logging.getLogger(__name__)


def resolve_release_path(source: str | os.PathLike[str]) -> Path:
    """A local folder in the official layout; a Hub dataset id is downloaded first."""
    path = Path(source)
    if path.is_dir():
        return path
    if is_hub_id(source) and not path.exists():
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
    files = discover_files(root, problems, warnings)
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
                for where, raw in read_rows(paths, problems):
                    n_read += 1
                    record = normalise_record(raw, config, where, problems)
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
            derive_qrels(data, files, options, problems, warnings)
    if problems:
        raise ReleaseError(problems)
    for warning in warnings:
        logger.warning("%s", warning)
    return Release(str(root), releases, options, warnings, inputs=_input_paths(root, files))


def discover_files(
    root: Path, problems: list[Problem], warnings: list[Problem]
) -> dict[str, dict[str, Path | tuple[Path, ...]]]:
    """``{config: {split: file(s)}}`` of the release(s) in ``root``, in either layout
    (:func:`~coreb_toolkit.builders.coreb.records.release_layout`): the Hub's
    ``<config>/<split>.jsonl|parquet`` (shards included), or one folder per release holding
    ``<config>.jsonl|parquet``, named as the release (split), ``root`` itself when it is one."""
    layout, folders = release_layout(root, OFFICIAL_CONFIGS)
    if layout == HUB_LAYOUT:
        files = {c: split_files(root, c, problems, warnings) for c in OFFICIAL_CONFIGS}
        for config in ("code_corpus", "text_corpus"):
            if not files[config]:
                problems.append(Problem(str(root / config), "missing: a release needs its corpora"))
        for name in sorted(os.listdir(root)):
            if (root / name).is_dir() and name not in OFFICIAL_CONFIGS and not name.startswith("."):
                warnings.append(Problem(str(root / name), "not an official config; ignored"))
        return files
    files = {c: {} for c in OFFICIAL_CONFIGS}
    for folder in folders:
        for config, paths in release_folder_files(
            folder, OFFICIAL_CONFIGS, problems, warnings
        ).items():
            files[config][folder.name] = paths
        for config in ("code_corpus", "text_corpus"):
            if folder.name not in files[config]:
                problems.append(
                    Problem(str(folder / f"{config}.jsonl"), "missing: a release needs its corpora")
                )
    if folders != [root]:
        for path in sorted(root.iterdir()):
            if path.is_dir() and path not in folders and not path.name.startswith("."):
                warnings.append(Problem(str(path), "holds no official config file; ignored"))
    return files


def local_inputs(source: str | os.PathLike[str]) -> tuple[str, ...]:
    """The real paths a build of the local release ``source`` reads, found without reading it
    (none for a Hub id): what :func:`check_destination` must keep out of an output."""
    root = Path(source)
    if not root.is_dir():
        return ()
    scratch: list[Problem] = []  # read_release reports these problems, with the rest
    return _input_paths(root, discover_files(root, scratch, scratch))


def _input_paths(root: Path, files: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    """The real paths a build reads: the release folder, each config folder, each split file
    (any of them may be a symlink to somewhere else)."""
    found = {root.resolve()}
    for by_split in files.values():
        for paths in by_split.values():
            for path in paths if isinstance(paths, tuple) else (paths,):
                found.add(path.parent.resolve())  # the config or release folder
                found.add(path.resolve())
    return tuple(sorted(str(p) for p in found))


# one pass over the records of every config keeps each check beside the others of its record
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
            if not CONFIG_NAME_PATTERN.fullmatch(name):
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
                if BAD_ID_CHAR.search(anchor):
                    problems.append(
                        Problem(
                            rec.where, f"meta.anchor_code_id {ID_RULE}, got {show_value(anchor)}"
                        )
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
            if query_text(rec) is None:
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
    """A subtask name is one config of the built folder: one main task, and one spelling (a
    case-insensitive disk would give ``Foo`` and ``foo`` one folder). Ids are not compared:
    they are unique only within a release (both published releases have
    ``code_v202601_00001``, naming different solutions), and a release is one split of every
    config, never merged with another."""
    first: dict[str, tuple[SubtaskMetadata, Record]] = {}
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


_RELEASE_CACHE: dict[tuple, Release] = {}


def cached_release(path: str | os.PathLike[str], options: QrelsOptions) -> Release:
    """:func:`read_release` of ``path`` with ``options``, read again only when a file of the
    folder changed (size or modification time) or the options differ; one release is kept."""
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


def clear_release_cache() -> None:
    """Forget the release :func:`cached_release` keeps (e.g. after rewriting it in place
    within the file system's time resolution)."""
    _RELEASE_CACHE.clear()
