"""``coreb build --mteb``: one release in the layout of MTEB's own CoREB datasets.

MTEB hosts CoREB as three retrieval tasks, ``CorebT2CRetrieval``, ``CorebC2TRetrieval`` and
``CorebC2CRetrieval`` (datasets ``mteb/coreb-{t2c,c2t,c2c}-retrieval``): each pools the queries of
one main task, in the configs ``corpus`` (``id, title, text``), ``queries`` (``id, text``) and
``default`` (the qrels: ``query-id, corpus-id, score``), subset ``default``, split ``test``. The
export writes that layout, one folder per main task, so the stock task classes evaluate it with
only the dataset path and revision overridden (:func:`load_mteb_task`). Beside the pooled configs
each folder keeps ``{subtask}-corpus``, ``{subtask}-queries`` and ``{subtask}-qrels``, the subset
layout of MTEB's multilingual retrieval tasks, for a per-subtask evaluation.

What the qrels hold was decided from mteb's own descriptive statistics of the stock datasets
(``mteb/descriptive_stats/Retrieval/Coreb*.json`` in mteb 2.26.24): their non-zero qrels number
2,814 (T2C), 1,010 (C2T) and 623 (C2C) -- exactly the relevance-2 counts of v202603 -- with 1.0
relevant document per C2T query, where crediting the four noise descriptions would give 5.0.
MTEB's evaluator credits every qrel with a score above 0 (pytrec_eval's default relevance level
1), so the stock datasets carry the positives only, and so does this export (score 1); a hard
negative is then non-relevant, which is what CoREB's zeroed gain makes it for nDCG, and every
query has at least one positive (queries without one are left out, and counted in the report).

MTEB's other three CoREB tasks, ``CorebT2CReranking``, ``CorebC2TReranking`` and
``CorebC2CReranking`` (datasets ``mteb/coreb-{t2c,c2t,c2c}-reranking``, main score MAP@10), rank a
fixed list of 17 candidates per query: configs ``corpus`` (the documents the lists hold),
``queries`` (one row per (query, positive), as mteb's statistics count them), ``default`` (the
qrels: every listed document, score 1 for a positive and 0 otherwise, which is how mteb's
statistics count every listed document as judged) and ``top_ranked`` (``query-id``,
``corpus-ids``). The lists are :mod:`coreb_toolkit.builders.coreb.reranking`'s, whose rules and
the one difference from mteb's statistics are documented there.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from coreb_toolkit.builders.coreb.build import release_inputs
from coreb_toolkit.builders.coreb.records import Release, ReleaseData
from coreb_toolkit.builders.coreb.reranking import (
    LIST_SIZE,
    RERANKING_CORPUS,
    RerankingList,
    release_lists,
)
from coreb_toolkit.builders.coreb.rows import corpus_rows, subtask_rows
from coreb_toolkit.builders.hub_folder import (
    check_destination,
    check_not_an_input,
    replace_folder,
    write_hub_folder,
)
from coreb_toolkit.builders.scratch import reclaim_leftovers, scratch_folder
from coreb_toolkit.vocabulary import (
    CORPUS_CODE,
    CORPUS_TEXT,
    CORPUS_TEXT_ABBREVIATED,
    MTEB_RERANKING_TASKS,
    MTEB_RETRIEVAL_TASKS,
)

if TYPE_CHECKING:
    from mteb.abstasks import AbsTask

logger = logging.getLogger(__name__)

MTEB_SPLIT = "test"
"""The one split of MTEB's CoREB tasks."""

MTEB_RETRIEVAL: dict[str, tuple[str, str]] = {
    # main task: (folder = the name of MTEB's dataset, MTEB's task)
    family: (f"coreb-{family}-retrieval", task)
    for family, task in MTEB_RETRIEVAL_TASKS.items()
}
"""Which folder of the export, and which MTEB task, each main task becomes."""

MTEB_RERANKING: dict[str, tuple[str, str]] = {
    family: (f"coreb-{family}-reranking", task) for family, task in MTEB_RERANKING_TASKS.items()
}
"""The folder and MTEB task of each main task's 17-candidate reranking lists."""

POOLED_CORPUS: dict[str, str] = {"t2c": CORPUS_CODE, "c2t": CORPUS_TEXT, "c2c": CORPUS_CODE}
"""The corpus each pooled task ranks. C2T ranks the full descriptions for every subtask, as
``mteb/coreb-c2t-retrieval`` (875 texts, shortest 550 characters) and the official runner do."""

_ABBREVIATED_FILE = "corpus_abbreviated"  # the folder of the abbreviated view, where needed
_S = datasets.Value("string")
CORPUS_FEATURES = datasets.Features({"id": _S, "title": _S, "text": _S})
QUERIES_FEATURES = datasets.Features({"id": _S, "text": _S})
QRELS_FEATURES = datasets.Features(
    {"query-id": _S, "corpus-id": _S, "score": datasets.Value("int64")}
)
TOP_RANKED_FEATURES = datasets.Features({"query-id": _S, "corpus-ids": datasets.Sequence(_S)})
_MTEB_EXTRA = "pip install coreb-toolkit[mteb]"


@dataclass
class MtebExport:
    """What :func:`export_mteb` wrote.

    Attributes:
        out_dir: the export folder.
        release: the release exported (the split of the CoREB build it came from).
        folders: ``{folder: {config: rows}}`` per main-task folder (``coreb-t2c-retrieval``...);
            a ``{subtask}-corpus`` config shares the file of its corpus and is not counted.
        tasks: ``{folder: MTEB task name}``.
        left_out: ``{folder: [query id, ...]}``: the queries without a positive, which an MTEB
            task cannot hold (CoREB's default scores them 0).
    """

    out_dir: Path
    release: str
    folders: dict[str, dict[str, int]]
    tasks: dict[str, str]
    left_out: dict[str, list[str]] = field(default_factory=dict)


def latest_release(release: Release) -> str:
    """The release an export takes by default: the last name in sorted order
    (``release_v2603`` after ``release_v2602``)."""
    if not release.releases:
        raise ValueError(f"{release.path} holds no release to export")
    return sorted(release.releases)[-1]


def _pick_release(release: Release, name: str | None) -> ReleaseData:
    if name is None:
        name = latest_release(release)
    if name not in release.releases:
        raise ValueError(
            f"release {name!r} is not in {release.path}; it holds "
            f"{', '.join(sorted(release.releases))} (choose one with --mteb-release)"
        )
    return release.releases[name]


def check_mteb_destination(
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike[str]] = (),
    label: str = "the MTEB export folder",
) -> Path:
    """Raise unless :func:`export_mteb` may write ``out_dir``; returns the folder to write.

    The export is a folder of Hub folders (one per main task), so an existing one may hold only
    a README.md and folders named like MTEB's CoREB datasets, each of which must pass
    :func:`~coreb_toolkit.builders.hub_folder.check_destination`; anything else is a user's
    data that ``overwrite`` must not delete. The other refusals are those of
    ``check_destination``: an output that is, contains or lies inside an input, one that is no
    folder, a place where no folder can be created.

    Raises:
        ValueError: the export would touch an input or user data, or cannot be written.
        FileExistsError: it exists and ``overwrite`` is false.
    """
    out = Path(out_dir)
    if out.name in ("", ".", ".."):
        out = Path(os.path.abspath(out))
    inputs = tuple(inputs)
    check_not_an_input(out, inputs, label)
    if out.is_symlink():
        out = out.resolve()
    reclaim_leftovers(out)
    if not os.path.lexists(out) or not out.is_dir():
        # a new folder (probed), or a file in the way: check_destination says which
        return check_destination(out, overwrite=overwrite, inputs=inputs, label=label)
    if not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
    ours = {folder for folder, _ in (*MTEB_RETRIEVAL.values(), *MTEB_RERANKING.values())}
    foreign = []
    for entry in sorted(out.iterdir()):
        if entry.name == "README.md" and entry.is_file() and not entry.is_symlink():
            continue
        if entry.name in ours and entry.is_dir() and not entry.is_symlink():
            try:
                check_destination(entry, overwrite=True, inputs=inputs, label=label)
            except ValueError as err:
                raise ValueError(f"{label} {out} cannot be replaced: {err}") from None
            continue
        foreign.append(entry.name)
    if foreign:
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise ValueError(
            f"{label} {out} holds files an MTEB export does not write "
            f"({', '.join(foreign[:5])}{more}); replacing it would delete them: remove them "
            "yourself or choose another folder"
        )
    if not os.access(out, os.W_OK | os.X_OK):
        raise ValueError(f"{label} {out} cannot be replaced: it is not writable")
    return out


def _documents(data: ReleaseData, corpus: str) -> Iterator[dict[str, Any]]:
    for d in corpus_rows(data, corpus):
        yield {"id": d["doc_id"], "title": "", "text": d["text"]}


def _judged(data: ReleaseData, subtasks: list[str]) -> tuple[list[dict], list[str]]:
    """The rows of ``subtasks`` that have a positive, and the ids of those that have none."""
    # Pooling keeps the query ids as they are: read_release rejects a query id that occurs twice
    # in one release, whatever the subtasks, so the pooled ids are unique by construction.
    kept, left_out = [], []
    for subtask in subtasks:
        for row in subtask_rows(data, subtask):
            (kept if row["positive_ids"] else left_out).append(row)
    return kept, [r["query_id"] for r in left_out]


def _queries(rows: list[dict]) -> Callable[[], Iterator[dict[str, Any]]]:
    return lambda: ({"id": r["query_id"], "text": r["query"]} for r in rows)


def _qrels(rows: list[dict]) -> Callable[[], Iterator[dict[str, Any]]]:
    # positives only, score 1: MTEB credits any score > 0 (see the module docstring)
    return lambda: (
        {"query-id": r["query_id"], "corpus-id": doc, "score": 1}
        for r in rows
        for doc in r["positive_ids"]
    )


def export_mteb(
    release: Release,
    out_dir: str | os.PathLike[str],
    *,
    release_name: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> MtebExport:
    """Write one release as MTEB's CoREB retrieval datasets: a folder per main task.

    ``out_dir/coreb-{t2c,c2t,c2c}-retrieval/`` each hold the pooled task (configs ``corpus``,
    ``queries``, ``default``; split ``test``) that MTEB's stock ``Coreb*Retrieval`` class reads
    (:func:`load_mteb_task`), and the per-subtask configs ``{subtask}-corpus``,
    ``{subtask}-queries``, ``{subtask}-qrels``. Qrels are the positives (relevance 2) with
    score 1; hard negatives are left out, as in MTEB's datasets, since MTEB would credit them.
    Each card says where MTEB's protocol differs from CoREB's. A main task without a query
    that has a positive gets no folder. Written atomically: the whole export appears in one
    rename.

    Args:
        release: a release read with :func:`~coreb_toolkit.builders.coreb.release.read_release`.
        release_name: which of its releases to export (one per export: MTEB has one split);
            default the latest (:func:`latest_release`).

    Raises:
        ValueError: an unknown ``release_name``, an output that would touch the release or
            user data (:func:`check_mteb_destination`), or a release with no judged query.
    """
    data = _pick_release(release, release_name)
    inputs = release_inputs(release)
    out = check_mteb_destination(out_dir, overwrite=overwrite, inputs=inputs)
    by_family: dict[str, list[str]] = {}
    for name, spec in release.subtasks.items():
        if spec.family in MTEB_RETRIEVAL and any(s.name == name for s, _ in data.queries.values()):
            by_family.setdefault(spec.family, []).append(name)
    plans = []
    left_out: dict[str, list[str]] = {}
    for family, subtasks in by_family.items():
        folder, task = MTEB_RETRIEVAL[family]
        kept, dropped = _judged(data, subtasks)
        if dropped:
            left_out[folder] = dropped
            logger.warning(
                "%s: %d quer%s without a positive left out (an MTEB task cannot hold them; "
                "CoREB scores them 0): %s",
                folder,
                len(dropped),
                "y" if len(dropped) == 1 else "ies",
                ", ".join(dropped[:5]) + (" ..." if len(dropped) > 5 else ""),
            )
        if kept:
            plans.append((family, folder, task, subtasks, kept))
    reranking = []
    for family in by_family:
        lists = [item for item in release_lists(data, family) if item.scored]
        if lists:
            reranking.append((family, *MTEB_RERANKING[family], lists))
    if not plans:
        raise ValueError(
            f"release {data.name} of {release.path} has no query with a positive (relevance-2) "
            "document: an MTEB task would be empty"
        )
    tmp = scratch_folder(out)
    folders: dict[str, dict[str, int]] = {}
    try:
        for family, folder, task, subtasks, kept in plans:
            folders[folder] = _write_task(
                tmp / folder, data, family, task, subtasks, kept, left_out.get(folder, []),
                progress=progress, inputs=inputs,
            )  # fmt: skip
        for family, folder, task, lists in reranking:
            folders[folder] = _write_reranking_task(
                tmp / folder, data, family, task, lists, progress=progress, inputs=inputs
            )
        tasks = {f: t for _, f, t, _, _ in plans} | {f: t for _, f, t, _ in reranking}
        (tmp / "README.md").write_text(_index_card(data.name, tasks, folders), encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return MtebExport(
        out_dir=out,
        release=data.name,
        folders=folders,
        tasks=tasks,
        left_out=left_out,
    )


def _write_task(
    out: Path,
    data: ReleaseData,
    family: str,
    task: str,
    subtasks: list[str],
    kept: list[dict],
    left_out: list[str],
    *,
    progress: bool,
    inputs: tuple[str, ...],
) -> dict[str, int]:
    """Write one main task's folder; returns ``{config: rows}``."""
    pooled = POOLED_CORPUS[family]
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {
        "corpus": {MTEB_SPLIT: (lambda: _documents(data, pooled), CORPUS_FEATURES)},
        "queries": {MTEB_SPLIT: (_queries(kept), QUERIES_FEATURES)},
        "default": {MTEB_SPLIT: (_qrels(kept), QRELS_FEATURES)},
    }
    corpus_file: dict[str, str] = {}  # subtask -> the corpus file its {subtask}-corpus reads
    for subtask in subtasks:
        rows = [r for r in kept if r["subtask"] == subtask]
        if not rows:
            continue
        own = rows[0]["corpus"]
        if own == CORPUS_TEXT_ABBREVIATED:
            # CoREB's view of canonical_retro (the abbreviated descriptions), kept per subtask
            files.setdefault(
                _ABBREVIATED_FILE,
                {MTEB_SPLIT: (lambda: _documents(data, CORPUS_TEXT_ABBREVIATED), CORPUS_FEATURES)},
            )
            corpus_file[subtask] = _ABBREVIATED_FILE
        else:
            corpus_file[subtask] = "corpus"
        files[f"{subtask}-queries"] = {MTEB_SPLIT: (_queries(rows), QUERIES_FEATURES)}
        files[f"{subtask}-qrels"] = {MTEB_SPLIT: (_qrels(rows), QRELS_FEATURES)}

    def card(rows: dict[str, dict[str, int]]) -> str:
        counts = {name: parts.get(MTEB_SPLIT, 0) for name, parts in rows.items()}
        return _task_card(data.name, family, task, subtasks, corpus_file, counts, left_out)

    written = write_hub_folder(
        out, files, card, overwrite=False, progress=progress, desc=f"mteb {task}", inputs=inputs
    )
    return {name: parts.get(MTEB_SPLIT, 0) for name, parts in written.items()}


def _write_reranking_task(
    out: Path,
    data: ReleaseData,
    family: str,
    task: str,
    lists: list[RerankingList],
    *,
    progress: bool,
    inputs: tuple[str, ...],
) -> dict[str, int]:
    """Write one main task's reranking folder (MTEB's ``coreb-*-reranking`` layout); returns
    ``{config: rows}``."""
    listed = {d for item in lists for d in item.candidates}

    def documents() -> Iterator[dict[str, Any]]:
        return (d for d in _documents(data, RERANKING_CORPUS[family]) if d["id"] in listed)

    def queries() -> Iterator[dict[str, Any]]:
        # one row per (query, positive): the rows mteb's statistics count (ids repeat)
        return ({"id": item.query_id, "text": item.query} for item in lists for _ in item.positives)

    def qrels() -> Iterator[dict[str, Any]]:
        for item in lists:
            for doc, score in item.qrels().items():
                yield {"query-id": item.query_id, "corpus-id": doc, "score": score}

    def top_ranked() -> Iterator[dict[str, Any]]:
        return ({"query-id": item.query_id, "corpus-ids": item.candidates} for item in lists)

    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {
        "corpus": {MTEB_SPLIT: (documents, CORPUS_FEATURES)},
        "queries": {MTEB_SPLIT: (queries, QUERIES_FEATURES)},
        "default": {MTEB_SPLIT: (qrels, QRELS_FEATURES)},
        "top_ranked": {MTEB_SPLIT: (top_ranked, TOP_RANKED_FEATURES)},
    }

    def card(rows: dict[str, dict[str, int]]) -> str:
        counts = {name: parts.get(MTEB_SPLIT, 0) for name, parts in rows.items()}
        return _reranking_card(data.name, family, task, lists, counts)

    written = write_hub_folder(
        out, files, card, overwrite=False, progress=progress, desc=f"mteb {task}", inputs=inputs
    )
    return {name: parts.get(MTEB_SPLIT, 0) for name, parts in written.items()}


def _reranking_card(
    release: str, family: str, task: str, lists: list[RerankingList], counts: Mapping[str, int]
) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    names = ("corpus", "queries", "default", "top_ranked")
    data = DatasetCardData(
        license="apache-2.0",
        task_categories=["text-ranking"],
        tags=["mteb", "code", "code-search", "coreb", "reranking"],
        configs=[_config(n, f"{n}/{MTEB_SPLIT}.parquet") for n in names],
        pretty_name=f"CoREB {family.upper()} reranking ({release}) in MTEB's layout",
        coreb_release=release,  # read back by load_mteb_task as the dataset revision
        mteb_task=task,
    )
    sizes = sorted({len(item.candidates) for item in lists})
    body = f"""# CoREB {family.upper()} reranking, release `{release}`, in MTEB's layout

Written by `coreb build --mteb` from CoREB release `{release}`: the layout of
`mteb/{MTEB_RERANKING[family][0]}`, which MTEB's task `{task}` (main score MAP@10) reads --
configs `corpus` ({counts.get("corpus", 0)} documents: those the lists hold), `queries`
({counts.get("queries", 0)} rows, one per (query, positive), over {len(lists)} query ids),
`default` (qrels: every listed document, score 1 for a positive, 0 otherwise;
{counts.get("default", 0)} rows) and `top_ranked` ({len(lists)} lists of
{", ".join(map(str, sizes))} candidates), subset `default`, split `{MTEB_SPLIT}`.

## How the lists were built

Every query with a positive (relevance 2) and a hard negative (relevance 1) has a list: its
positives, its hard negatives, and easy negatives -- documents of other problems, taken least
used first across the lists, ties in a seeded order -- up to {LIST_SIZE}. mteb's statistics fix
the queries, the positives, the list sizes and the documents the lists hold; they do not say
which easy negatives fill each list. These are this toolkit's (`coreb_toolkit.builders.coreb.
reranking`), so MAP@10 computed here is comparable with MTEB's `{task}` only as far as the
easy negatives are alike.
"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def _config(name: str, path: str) -> dict[str, Any]:
    return {"config_name": name, "data_files": [{"split": MTEB_SPLIT, "path": path}]}


_DIFFERENCES = {
    "all": (
        "- **Pooled, not per subtask.** MTEB scores one task per main task: the mean over all "
        "its queries, which is CoREB's query-count-weighted main-task average, not a "
        "per-subtask table. The `{subtask}-*` configs beside the pooled ones hold each "
        "subtask alone.\n"
        "- **Relevance.** MTEB credits every qrel with a score above 0 (pytrec_eval at "
        "relevance level 1; its MRR takes `score > 0`). These qrels, like those of "
        "`mteb/coreb-*`, hold only the relevance-2 documents (score 1): a hard negative "
        "(relevance 1) is not credited, and counts as non-relevant as any unjudged document "
        "does -- which is CoREB's zeroed-gain nDCG and its relevance-level-2 MAP, Recall and "
        "MRR. Had the hard negatives been written with a score of 1, MTEB would count them as "
        "relevant.\n"
        "- **Queries without a positive** cannot be an MTEB query and are left out; CoREB's "
        "default (`no_positive_policy=zero`) counts them with a score of 0, so where there are "
        "any MTEB's mean is higher.\n"
    ),
    "c2c": (
        "- **The anchor is not dropped.** CoREB removes each query's anchor code from its "
        "ranking before scoring; MTEB has no per-query exclusion, so the anchor stays in the "
        "corpus, unjudged. Being the query itself it tends to rank first, as a non-relevant "
        "document: MTEB's C2C figures are lower than CoREB's, and removing the anchor from "
        "MTEB's ranking afterwards does not give CoREB's either (MTEB keeps the top 1000 and "
        "its MAP and Recall denominators do not change).\n"
    ),
    "c2t": (
        "- **One corpus view.** The pooled task ranks the full descriptions for every subtask, "
        "as `mteb/coreb-c2t-retrieval` and the official runner do; CoREB's default ranks the "
        "abbreviated descriptions for `c2t_canonical_retro_*`. The per-subtask "
        "`c2t_canonical_retro_*-corpus` configs keep CoREB's (abbreviated) view.\n"
    ),
}


def _task_card(
    release: str,
    family: str,
    task: str,
    subtasks: list[str],
    corpus_file: Mapping[str, str],
    counts: Mapping[str, int],
    left_out: list[str],
) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    configs = [_config(n, f"{n}/{MTEB_SPLIT}.parquet") for n in ("corpus", "queries", "default")]
    for subtask in subtasks:
        if subtask not in corpus_file:
            continue
        configs.append(_config(f"{subtask}-corpus", f"{corpus_file[subtask]}/{MTEB_SPLIT}.parquet"))
        for part in ("queries", "qrels"):
            name = f"{subtask}-{part}"
            configs.append(_config(name, f"{name}/{MTEB_SPLIT}.parquet"))
    data = DatasetCardData(
        license="apache-2.0",
        task_categories=["text-retrieval"],
        tags=["mteb", "code", "code-search", "coreb"],
        configs=configs,
        pretty_name=f"CoREB {family.upper()} retrieval ({release}) in MTEB's layout",
        coreb_release=release,  # read back by load_mteb_task as the dataset revision
        mteb_task=task,
    )
    per_subtask = "\n".join(
        f"| `{s}` | {counts.get(f'{s}-queries', 0)} | {counts.get(f'{s}-qrels', 0)} |"
        for s in subtasks
        if s in corpus_file
    )
    dropped = (
        f"\n{len(left_out)} quer{'y' if len(left_out) == 1 else 'ies'} without a positive "
        f"left out: {', '.join(f'`{q}`' for q in left_out[:20])}"
        f"{' ...' if len(left_out) > 20 else ''}.\n"
        if left_out
        else ""
    )
    body = f"""# CoREB {family.upper()} retrieval, release `{release}`, in MTEB's layout

Written by `coreb build --mteb` from CoREB release `{release}`: the layout of
`mteb/{MTEB_RETRIEVAL[family][0]}`, which MTEB's task `{task}` reads -- configs `corpus`
({counts.get("corpus", 0)} documents), `queries` ({counts.get("queries", 0)} queries) and `default`
(qrels `query-id`, `corpus-id`, `score`; {counts.get("default", 0)} rows), subset `default`,
split `{MTEB_SPLIT}`.

```python
import mteb
task = mteb.get_task("{task}")
task.metadata.dataset = {{"path": "path/to/this/folder", "revision": "{release}"}}
mteb.evaluate(model, task)
```

(`coreb_toolkit.builders.coreb.mteb.load_mteb_task(folder)` does the same.)

## Subtasks

| subtask | queries | qrels |
|---|---|---|
{per_subtask}
{dropped}
## Where MTEB's protocol differs from CoREB's

{_DIFFERENCES["all"]}{_DIFFERENCES.get(family, "")}
Scores computed on this folder are MTEB-protocol figures; do not report them as CoREB's.
"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))


def _index_card(release: str, tasks: Mapping[str, str], folders: Mapping[str, Mapping]) -> str:
    lines = "\n".join(
        f"| [`{folder}`]({folder}/README.md) | `{task}` | {folders[folder].get('queries', 0)} |"
        for folder, task in tasks.items()
    )
    return f"""# CoREB release `{release}` in MTEB's layout

Written by `coreb build --mteb`. One folder per MTEB task, each a dataset of its own in the
layout of `mteb/coreb-*-retrieval` or `mteb/coreb-*-reranking` (its card says where MTEB's
protocol differs from CoREB's, or how the reranking lists were built):

| folder | MTEB task | queries |
|---|---|---|
{lines}
"""


def load_mteb_task(
    folder: str | os.PathLike[str],
    *,
    task: str | None = None,
    revision: str | None = None,
    subtasks: Sequence[str] | None = None,
) -> AbsTask:
    """MTEB's own ``Coreb*Retrieval`` task, reading an exported folder instead of the Hub.

    Only the dataset path and revision of the stock task's metadata are replaced; every other
    field (splits, subsets, main score, prompt) is MTEB's. With ``subtasks``, the task is a
    subclass of the stock one whose subsets are those subtasks (MTEB's multilingual layout:
    ``{subset}-corpus``, ``-queries``, ``-qrels``), scored one by one.

    Args:
        folder: one main-task folder of an export (``.../coreb-t2c-retrieval``).
        task: the MTEB task name; default the one the folder's name says.
        revision: recorded as the dataset revision (a local folder has no Git revision);
            default the release named in the folder's card (else ``"local"``) and a digest of
            the folder's data files, ``release_v2603-<12 hex>``. ``datasets`` caches a local
            folder under its last two path parts, its file names and this revision: two exports
            in folders of the same names (``a/mteb/coreb-t2c-reranking`` and
            ``b/mteb/coreb-t2c-reranking``) would otherwise read each other's cached rows.
        subtasks: evaluate these subtask configs of the folder instead of the pooled task.

    Raises:
        ImportError: mteb is not installed.
        ValueError: no task given and the folder's name is none of MTEB's CoREB datasets, or a
            subtask the folder does not hold.
    """
    try:
        import mteb
    except ImportError as err:
        raise ImportError(f"load_mteb_task needs mteb: {_MTEB_EXTRA}") from err
    path = Path(folder)
    if task is None:
        by_folder = dict((*MTEB_RETRIEVAL.values(), *MTEB_RERANKING.values()))
        if path.name not in by_folder:
            raise ValueError(
                f"{path} is not named like one of MTEB's CoREB datasets "
                f"({', '.join(by_folder)}): pass task= (e.g. task='CorebT2CRetrieval')"
            )
        task = by_folder[path.name]
    digest = _content_digest(path)
    if revision is None:
        revision = f"{_card_value(path, 'coreb_release') or 'local'}-{digest}"
    loaded = mteb.get_task(task)
    dataset = {**loaded.metadata.dataset, "path": str(path), "revision": revision}
    if subtasks is None:
        # a copy: the stock class's metadata is shared by every instance of the task
        metadata = loaded.metadata.model_copy(update={"dataset": dataset})
        return _own_cache(type(loaded), metadata, digest)()
    held = _card_value(path, "configs") or []
    names = {c.get("config_name") for c in held if isinstance(c, dict)}
    missing = [s for s in subtasks if f"{s}-qrels" not in names]
    if missing or not subtasks:
        have = sorted(n[: -len("-qrels")] for n in names if n and n.endswith("-qrels"))
        raise ValueError(
            f"{path} holds no subtask config {', '.join(missing) or '(none given)'}; it holds "
            f"{', '.join(have) or 'none'} (a subtask without a positive has none)"
        )
    langs = list(loaded.metadata.eval_langs)
    metadata = loaded.metadata.model_copy(
        update={"dataset": dataset, "eval_langs": {s: langs for s in subtasks}}
    )
    return _own_cache(type(loaded), metadata, digest)()


def _own_cache(base: type, metadata: Any, digest: str) -> type:
    """A subclass of the task class ``base`` with ``metadata``, whose ``load_data`` caches what
    ``datasets`` prepares under a folder of its own (``<HF_DATASETS_CACHE>/coreb-mteb/<digest>``).

    ``datasets`` keys a local folder's cache on the folder's *name*, its config and its file
    names, not on the files' content or path: two exports (v2602's and v2603's, or one rebuilt)
    would read whichever was loaded first. Measured with datasets 4: two folders
    ``.../coreb-t2c-reranking`` of 9 and 3,993 rows both load as the first.
    """

    def load_data(self: Any, *args: Any, **kwargs: Any) -> Any:
        import datasets

        old = datasets.config.HF_DATASETS_CACHE
        datasets.config.HF_DATASETS_CACHE = Path(old) / "coreb-mteb" / digest
        try:
            return base.load_data(self, *args, **kwargs)
        finally:
            datasets.config.HF_DATASETS_CACHE = old

    return type(base.__name__, (base,), {"metadata": metadata, "load_data": load_data})


def _content_digest(path: Path) -> str:
    """12 hex digits of a digest of every Parquet file under ``path`` (names and bytes)."""
    import hashlib

    digest = hashlib.sha256()
    for file in sorted(path.rglob("*.parquet")):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:12]


def _card_value(path: Path, key: str) -> Any:
    readme = path / "README.md"
    if not readme.is_file():
        return None
    from huggingface_hub import DatasetCard

    return DatasetCard.load(readme).data.to_dict().get(key)


def mteb_statistics(task: AbsTask) -> dict[str, dict[str, Any]]:
    """mteb's descriptive statistics of ``task``'s data, computed on it (split -> statistics).

    mteb's public ``calculate_descriptive_statistics()`` returns the statistics it *ships* for
    the task's name whatever data the task reads (and recomputing through it overwrites the
    shipped file inside the installed package), so an export is checked with the method it
    calls per split, on the loaded data, writing nothing.
    """
    if not task.data_loaded:
        task.load_data()
    return {
        split: dict(task._calculate_descriptive_statistics_from_split(split))
        for split in task.metadata.eval_splits
    }
