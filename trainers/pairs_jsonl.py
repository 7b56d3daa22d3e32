"""The ``pairs_jsonl`` example generator: a user's code-search pairs, one JSON object a line,
made into yes/no examples as a CoREB record is (:mod:`trainers.examples`, where the registry
``EXAMPLE_GENERATORS`` names it ``pairs_jsonl:FILE``)."""

from __future__ import annotations

import json
import logging
import os
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coreb_toolkit.vocabulary import CORPUS_CODE, MAIN_TASKS
from eval_metrics.trec_order import trec_order
from trainers.examples import ExampleOptions, _example, _Miner, _sample

logger = logging.getLogger(__name__)

_PAIR_FIELDS = ("query", "positive", "positives", "negatives", "instruction",
                "source_problem_id", "id", "main_task")  # fmt: skip


def _text_list(where: str, field_name: str, value: Any, *, allow_empty: bool) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{where}: {field_name!r} must be a non-empty string or list of them")
    if not value and not allow_empty:
        raise ValueError(f"{where}: {field_name!r} is empty; give at least one document")
    return value


def _pair_row(where: str, row: Any) -> dict[str, Any]:
    """One checked pairs_jsonl row: query, positives, negatives, instruction, problem, id."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    unknown = sorted(set(row) - set(_PAIR_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; allowed: {list(_PAIR_FIELDS)}")
    query = row.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"{where}: 'query' must be a non-empty string")
    if ("positive" in row) == ("positives" in row):
        raise ValueError(f"{where}: give exactly one of 'positive' (a string) or 'positives'")
    key = "positive" if "positive" in row else "positives"
    positives = _text_list(where, key, row[key], allow_empty=False)
    negatives = _text_list(where, "negatives", row.get("negatives", []), allow_empty=True)
    main_task = row.get("main_task", "t2c")
    if main_task not in MAIN_TASKS:
        raise ValueError(
            f"{where}: 'main_task' must be one of {', '.join(MAIN_TASKS)} when given, got "
            f"{main_task!r}"
        )
    instruction = row.get("instruction", MAIN_TASKS[main_task].instruction)
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError(f"{where}: 'instruction' must be a non-empty string when given")
    pid = row.get("source_problem_id")
    if not isinstance(pid, str) or not pid.strip():
        raise ValueError(
            f"{where}: 'source_problem_id' is required (a non-empty string): it keeps training "
            "problems apart from evaluation ones and from the validation split"
        )
    qid = row.get("id")
    if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int))):
        raise ValueError(f"{where}: 'id' must be a string or an integer when given")
    return {"query": query, "positives": positives, "negatives": negatives,
            "instruction": instruction, "pid": pid, "id": qid, "main_task": main_task}  # fmt: skip


def _pairs_mined(
    file: Path,
    rows: Sequence[tuple[str, Mapping[str, Any]]],
    pool: Sequence[tuple[str, str, str]],
    options: ExampleOptions,
) -> dict[str, list[tuple[str, str, str]]]:
    """Mined hard negatives of the rows with fewer given negatives than ``hard_negatives``: the
    best-ranked positives of other problems by ``options.miner`` (the CoREB generator's top-up),
    ``{row id: [(doc id, text, problem)]}``."""
    need = {qid: options.hard_negatives - min(len(row["negatives"]), options.hard_negatives)
            for qid, row in rows}  # fmt: skip
    short = [qid for qid, n in need.items() if n > 0]
    if not short or len({p[2] for p in pool}) < 2:
        return {}
    from types import SimpleNamespace

    by_id = {p[0]: p for p in pool}
    queries = {qid: row["query"] for qid, row in rows}
    data = SimpleNamespace(queries=queries, corpus={p[0]: p[1] for p in pool},
                           corpus_name=CORPUS_CODE)  # fmt: skip
    run = _Miner(options, None).run(f"pairs_jsonl:{file.name}", data, short)
    problem = {qid: row["pid"] for qid, row in rows}
    ranked = {qid: trec_order(run.get(qid, {}), single_precision=False) for qid in short}
    return {
        qid: [by_id[d] for d in ranked[qid] if by_id[d][2] != problem[qid]][: need[qid]]
        for qid in short
    }


def pairs_jsonl_examples(
    path: str | os.PathLike[str], options: ExampleOptions | None = None
) -> list[dict[str, str]]:
    """Examples from a user's code-search pairs, one JSON object a line (blank lines skipped)::

        {"query": "...", "positive": "..." | "positives": ["...", ...],
         "negatives": ["...", ...],          # optional: hard negatives to draw from, "no"
         "instruction": "...",               # optional: default the T2C instruction
         "source_problem_id": "...",         # required: disjointness and the split use it
         "main_task": "t2c" | "c2t" | "c2c", # optional: default t2c (and its instruction)
         "id": "..."}                        # optional: default <file stem>:<line>

    As a CoREB record: each positive appears ``positive_copies`` times (``"yes"``);
    ``hard_negatives`` of the given negatives are drawn (seeded), and a row with fewer is topped
    up with mined negatives (the positives of other problems that ``miner`` ranks first for its
    query); ``easy_negatives`` random positives of rows of other problems are easy negatives.
    Rows are their ``main_task`` (default ``t2c``), ``subtask`` ``pairs_jsonl``, ``release`` the
    file's stem; easy negatives are drawn from rows of the same main task. ``coreb build
    --reranking-records`` writes CoREB's records in this format.

    Raises:
        ValueError: a bad row, naming ``file:line`` and the field.
    """
    options = options or ExampleOptions()
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"pairs_jsonl: {file} is not a file")
    rows: list[tuple[str, dict[str, Any]]] = []
    seen: dict[str, str] = {}
    with open(file, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{where}: not a JSON object ({err.msg})") from None
            row = _pair_row(where, raw)
            qid = str(row["id"]) if row["id"] is not None else f"{file.stem}:{number}"
            if qid in seen:
                raise ValueError(f"{where}: id {qid!r} repeats the row at {seen[qid]}")
            seen[qid] = where
            rows.append((qid, row))
    if not rows:
        raise ValueError(f"pairs_jsonl: {file} holds no row")
    # the easy-negative pool: every row's positives, with their problem
    pool = [(f"{qid}#pos{j}", text, row["pid"])
            for qid, row in rows for j, text in enumerate(row["positives"])]  # fmt: skip
    task_of = {f"{qid}#pos{j}": row["main_task"]
               for qid, row in rows for j in range(len(row["positives"]))}  # fmt: skip
    mined: dict[str, list[tuple[str, str, str]]] = {}
    for task in dict.fromkeys(row["main_task"] for _, row in rows):  # each main task its own
        mined.update(_pairs_mined(file, [(q, r) for q, r in rows if r["main_task"] == task],
                                  [p for p in pool if task_of[p[0]] == task], options))  # fmt: skip
    examples: list[dict[str, str]] = []
    for qid, row in rows:
        docs = [("positive", f"{qid}#pos{j}", text, row["pid"])
                for j, text in enumerate(row["positives"])
                for _ in range(options.positive_copies)]  # fmt: skip
        rng = random.Random(f"{options.seed}:{file.name}:{qid}")
        # as a CoREB record: `hard_negatives` of the given negatives, topped up with mined ones
        negatives = [(f"{qid}#neg{j}", text) for j, text in enumerate(row["negatives"])]
        docs += [("hard_negative", d, text, "")
                 for d, text in _sample(rng, negatives, options.hard_negatives)]  # fmt: skip
        docs += [("mined_negative", *p) for p in mined.get(qid, [])]
        taken = {d for _, d, _, _ in docs}
        others = [p for p in pool if p[2] != row["pid"] and p[0] not in taken
                  and task_of[p[0]] == row["main_task"]]  # fmt: skip
        docs += [("easy_negative", *p) for p in _sample(rng, others, options.easy_negatives)]
        for kind, doc_id, text, doc_pid in docs:
            examples.append(
                _example(
                    instruction=row["instruction"],
                    query=row["query"],
                    document=text,
                    kind=kind,
                    main_task=row["main_task"],
                    subtask="pairs_jsonl",
                    release=file.stem,
                    query_id=qid,
                    doc_id=doc_id,
                    source_problem_id=row["pid"],
                    doc_problem_id=doc_pid,
                    source="pairs_jsonl",
                )
            )
    if options.easy_negatives and len({row["pid"] for _, row in rows}) < 2:
        logger.warning("%s has one problem only: no easy negatives drawn from it", file)
    random.Random(options.seed).shuffle(examples)
    return examples


__all__ = ["pairs_jsonl_examples"]
