"""CoREB's reranking records and MTEB's 17-candidate lists, built from a release.

The official reranker dataset (``hq-bench/coreb-code-reranker-train-test-dataset``) holds one
record per (query, positive) with ``pos``, ``hard_neg`` and ``easy_neg``; MTEB's three
``Coreb*Reranking`` tasks rank a fixed list of 17 candidates per query. Neither ships the code
that built it. The rules here were decided from the published releases and the statistics
mteb ships (``mteb/descriptive_stats/Reranking/Coreb*Reranking.json``), and each is checked
against them (``tests/coreb_dataset/test_real_release.py``):

* **A record per (query, positive)**: every query with a relevance-2 document gives one record
  per positive. On v2602 that is 2,742 (T2C) + 1,064 (C2T) + 367 (C2C) = **4,173**, the size of
  the official train split.
* **A list per query with a positive and a hard negative** (:attr:`RerankingList.scored`): the
  test split and MTEB keep the records whose query has a relevance-1 document. On v2603 that is
  2,249 + 1,010 + 623 = **3,882**, the official test split, and exactly the queries, positives
  and query texts of mteb's statistics (T2C 1,066 ids; every C2T and C2C query with a positive).
* **A list holds every judged document** (the positives, then the hard negatives) **and easy
  negatives up to 17**: T2C judges 4-10 documents per query, C2T 4, C2C 4-7; the statistics
  fix 17 for every list.
* **Easy negatives**: documents of the family's corpus (code for T2C and C2C, the full texts
  for C2T: the corpus of mteb's lists) from *another problem* (never an unjudged solution of
  the query's own problem, nor the c2c anchor), taken least-used first across the family's
  lists in query-id order, ties broken by a seeded permutation. mteb's lists together hold
  1,744 of 1,744 code documents (T2C), 875 of 875 texts (C2T) and 1,735 (C2C): a uniform draw
  of the same easy negatives holds 1,543-1,575 for C2C (20 seeds, measured), a least-used draw
  covers the corpus. Which 9 code documents mteb's C2C lists never hold cannot be read from the
  published rows; ours hold all 1,744 (the one documented difference from mteb's statistics).

What the statistics cannot fix is which easy negatives fill a list, and MTEB's are harder than
these: MiniLM scores MAP@10 45.78 on these T2C lists where every model of mteb's PR scores
27.9-28.7 on MTEB's (``docs/publishing.md`` has the measurements, and an alternative fill).

"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.vocabulary import CORPUS_CODE, CORPUS_TEXT

LIST_SIZE = 17
"""Candidates per list in MTEB's ``Coreb*Reranking`` tasks (every list, all three tasks)."""

RERANKING_CORPUS: dict[str, str] = {"t2c": CORPUS_CODE, "c2t": CORPUS_TEXT, "c2c": CORPUS_CODE}
"""The corpus a family's lists draw from (C2T: the full descriptions, as MTEB's)."""

FAMILIES = ("t2c", "c2t", "c2c")


@dataclass
class RerankingList:
    """One query's candidates: its positives, hard negatives and easy negatives.

    Attributes:
        query_id, subtask, family, query: the query (``family`` is ``t2c``, ``c2t`` or ``c2c``).
        problem: the query's problem (``source_problem_id``).
        positives: its relevance-2 documents, sorted.
        hard_negatives: its relevance-1 documents, sorted.
        easy_negatives: the documents of other problems that fill the list, in draw order.
    """

    query_id: str
    subtask: str
    family: str
    query: str
    problem: str | None
    positives: list[str]
    hard_negatives: list[str]
    easy_negatives: list[str] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        """Whether the list is one of the test lists (MTEB's): a positive and a hard negative."""
        return bool(self.positives) and bool(self.hard_negatives)

    @property
    def candidates(self) -> list[str]:
        """Every document of the list, sorted by id (the order carries no label)."""
        return sorted({*self.positives, *self.hard_negatives, *self.easy_negatives})

    def qrels(self) -> dict[str, int]:
        """MTEB's qrels of the list: every candidate, 1 for a positive and 0 otherwise."""
        positives = set(self.positives)
        return {doc: int(doc in positives) for doc in self.candidates}

    def records(self) -> list[dict[str, Any]]:
        """The official reranker dataset's records: one per positive."""
        return [
            {
                "query_id": self.query_id,
                "subtask": self.subtask,
                "family": self.family,
                "query": self.query,
                "pos": doc,
                "hard_neg": list(self.hard_negatives),
                "easy_neg": list(self.easy_negatives),
            }
            for doc in self.positives
        ]


def _text(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def reranking_lists(
    family: str,
    queries: Iterable[Mapping[str, Any]],
    corpus: Iterable[Mapping[str, Any]],
    *,
    list_size: int = LIST_SIZE,
    seed: int = 0,
    release: str = "",
) -> list[RerankingList]:
    """The reranking list of every query of ``family`` that has a positive, by query id.

    Args:
        family: ``t2c``, ``c2t`` or ``c2c``.
        queries: the rows of the family's subtask configs (``query_id``, ``query``,
            ``subtask``, ``positive_ids``, ``hard_negative_ids``, ``source_problem_id``), as
            :func:`~coreb_toolkit.builders.coreb.rows.subtask_rows` writes them.
        corpus: the rows of :data:`RERANKING_CORPUS`'s corpus (``doc_id``,
            ``source_problem_id``).
        list_size: candidates per list; a list whose judged documents alone reach it gets no
            easy negative (and keeps all of them).
        seed: the easy negatives' tie order, with ``release`` and ``family``.

    Raises:
        ValueError: an unknown family, a list size below 1, a query id twice, a row without
            its id or text, or a judged document that is not in the corpus.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
    if isinstance(list_size, bool) or not isinstance(list_size, int) or list_size < 1:
        raise ValueError(f"list_size must be an integer of at least 1, got {list_size!r}")
    problems: dict[str, str | None] = {}
    for row in corpus:
        problems[_text(row, "doc_id", f"{family} corpus row")] = row.get("source_problem_id")
    lists: dict[str, RerankingList] = {}
    for row in queries:
        qid = _text(row, "query_id", f"{family} query row")
        if qid in lists:
            raise ValueError(f"{family}: query id {qid!r} occurs twice; ids must be unique")
        positives = sorted(row.get("positive_ids") or [])
        if not positives:
            continue
        item = RerankingList(
            query_id=qid,
            subtask=_text(row, "subtask", f"query {qid}"),
            family=family,
            query=_text(row, "query", f"query {qid}"),
            problem=row.get("source_problem_id"),
            positives=positives,
            hard_negatives=sorted(row.get("hard_negative_ids") or []),
        )
        unknown = [d for d in (*item.positives, *item.hard_negatives) if d not in problems]
        if unknown:
            raise ValueError(
                f"query {qid} ({family}) judges {', '.join(unknown[:3])}, which the "
                f"{RERANKING_CORPUS[family]} corpus does not hold"
            )
        lists[qid] = item
    order = sorted(problems)
    random.Random(f"{seed}:{release}:{family}").shuffle(order)
    for qid in sorted(lists):
        _fill(lists[qid], order, problems, list_size)
    return [lists[q] for q in sorted(lists)]


def _fill(item: RerankingList, order: list[str], problems: Mapping[str, Any], size: int) -> None:
    """Take the easy negatives of ``item`` from the front of ``order`` (least used first) and
    move them to its back, so that the lists together cover the corpus."""
    need = size - len(item.positives) - len(item.hard_negatives)
    if need <= 0:
        return
    judged = {*item.positives, *item.hard_negatives}
    taken: list[str] = []
    for doc in order:
        if doc in judged or (item.problem is not None and problems[doc] == item.problem):
            continue
        taken.append(doc)
        if len(taken) == need:
            break
    if taken:
        used = set(taken)
        order[:] = [d for d in order if d not in used] + taken
    item.easy_negatives = taken


def records(lists: Sequence[RerankingList], *, scored_only: bool = False) -> list[dict[str, Any]]:
    """The records of ``lists`` (one per positive); with ``scored_only``, only those of the
    test lists (a positive and a hard negative: :attr:`RerankingList.scored`)."""
    return [r for item in lists if item.scored or not scored_only for r in item.records()]


def release_lists(
    data: Any, family: str, *, list_size: int = LIST_SIZE, seed: int = 0
) -> list[RerankingList]:
    """:func:`reranking_lists` of one release read with ``read_release`` (a ``ReleaseData``)."""
    from coreb_toolkit.builders.coreb.rows import corpus_rows, subtask_rows

    names = sorted({s.name for s, _ in data.queries.values() if s.family == family})
    rows = (row for name in names for row in subtask_rows(data, name))
    return reranking_lists(
        family, rows, corpus_rows(data, RERANKING_CORPUS[family]), list_size=list_size,
        seed=seed, release=data.name,
    )  # fmt: skip


def folder_lists(
    source: str, release: str, subtasks: Sequence[str], family: str, *,
    list_size: int = LIST_SIZE, seed: int = 0,
) -> list[RerankingList]:  # fmt: skip
    """:func:`reranking_lists` of one release of a built folder (``coreb build``), from the rows
    of ``subtasks`` (the family's subtask configs) and of its corpus config."""
    from coreb_toolkit.builders.hub_folder import read_hub_config

    columns = ["query_id", "query", "subtask", "positive_ids", "hard_negative_ids",
               "source_problem_id"]  # fmt: skip
    rows = (r for name in subtasks for r in read_hub_config(source, name, release, columns))
    corpus = read_hub_config(
        source, RERANKING_CORPUS[family], release, ["doc_id", "source_problem_id"]
    )
    return reranking_lists(family, rows, corpus, list_size=list_size, seed=seed, release=release)


def record_rows(data: Any, *, list_size: int = LIST_SIZE, seed: int = 0) -> list[dict[str, Any]]:
    """One release's records as rows of ``pairs_jsonl`` (:mod:`trainers.pairs_jsonl`), the
    format ``coreb train reranker --train-sources pairs_jsonl:FILE`` reads: one row per (query,
    positive) -- the official reranker dataset's records -- with its texts: ``query``,
    ``positive``, ``negatives`` (the hard negatives), the main task's instruction and
    ``main_task``, ``source_problem_id`` and ``id`` (``<query id>/<positive id>``)."""
    from coreb_toolkit.builders.coreb.rows import corpus_rows
    from coreb_toolkit.vocabulary import MAIN_TASKS

    rows: list[dict[str, Any]] = []
    for family in FAMILIES:
        texts = {r["doc_id"]: r["text"] for r in corpus_rows(data, RERANKING_CORPUS[family])}
        for item in release_lists(data, family, list_size=list_size, seed=seed):
            if item.problem is None:
                raise ValueError(
                    f"{data.name}: query {item.query_id} names no source_problem_id; a training "
                    "record needs one (it keeps training problems apart from evaluation ones)"
                )
            for doc in item.positives:
                rows.append({
                    "id": f"{item.query_id}/{doc}",
                    "query": item.query,
                    "positive": texts[doc],
                    "negatives": [texts[d] for d in item.hard_negatives],
                    "instruction": MAIN_TASKS[family].instruction,
                    "main_task": family,
                    "source_problem_id": item.problem,
                })  # fmt: skip
    return rows


def write_reranking_records(
    release: Any, out_dir: str | Path, *, overwrite: bool = False
) -> dict[str, int]:
    """Write every release's records (:func:`record_rows`) to ``out_dir/<release>.jsonl`` with a
    README, in one rename; returns ``{release: records}``. On the published releases,
    ``release_v2602.jsonl`` holds the 4,173 records of the official train split.

    Raises:
        ValueError: an output that would touch the release or user data.
        FileExistsError: ``out_dir`` exists and ``overwrite`` is false.
    """
    import json
    import shutil

    from coreb_toolkit.builders.hub_folder import check_destination, replace_folder
    from coreb_toolkit.builders.scratch import scratch_folder

    names = sorted(release.releases)
    inputs = (*release.inputs, release.path)
    out = check_destination(
        out_dir, overwrite=overwrite, inputs=inputs, keep=[f"{n}.jsonl" for n in names],
        label="--reranking-records",
    )  # fmt: skip
    tmp = scratch_folder(out)
    counts: dict[str, int] = {}
    try:
        for name in names:
            rows = record_rows(release.releases[name])
            with open(tmp / f"{name}.jsonl", "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts[name] = len(rows)
        lines = "\n".join(f"| `{n}.jsonl` | {c:,} |" for n, c in counts.items())
        (tmp / "README.md").write_text(_RECORDS_README.format(lines=lines), encoding="utf-8")
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return counts


_RECORDS_README = """# CoREB reranking records

Written by `coreb build --reranking-records`: one JSON object a line per (query, positive), the
records of the official reranker dataset (`hq-bench/coreb-code-reranker-train-test-dataset`:
train = every v2602 record, 4,173; test = the v2603 records whose query has a hard negative,
3,882, the rows of MTEB's `Coreb*Reranking`), in the `pairs_jsonl` format that
`coreb train reranker --train-sources pairs_jsonl:FILE` reads (`query`, `positive`, `negatives`:
the hard negatives, `instruction`, `main_task`, `source_problem_id`, `id`).

| file | records |
|---|---|
{lines}

Train on the older release and test on the newer: `coreb train reranker` refuses a training
problem shared with its `--eval-sources` (CoREB §4.3: problem-level disjointness).
"""


__all__ = [
    "FAMILIES",
    "LIST_SIZE",
    "RERANKING_CORPUS",
    "RerankingList",
    "folder_lists",
    "record_rows",
    "records",
    "release_lists",
    "reranking_lists",
    "write_reranking_records",
]
