"""Helpers shared by commands: loading runs, qrels and subtask maps, splitting by subtask."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from eval_metrics import (
    RetrievalEvaluation,
    evaluate_retrieval,
    read_exclusions,
    read_qrels,
    read_run,
)
from eval_metrics.aggregate import MAIN_TASKS
from eval_metrics.retrieval import NO_POSITIVE_POLICIES

# CoREB query ids carry their subtask: q_t2c_full_retro_python_0001 -> t2c_full_retro_python.
_COREB_QUERY_ID = re.compile(r"^q_((?:{})_[a-z0-9_]+?)_\d+$".format("|".join(MAIN_TASKS)))
ALL = "all"


def add_scoring_arguments(parser: argparse.ArgumentParser, qrels_required: bool = True) -> None:
    parser.add_argument(
        "--qrels",
        required=qrels_required,
        type=Path,
        help="TREC qrels file: 'query_id 0 doc_id relevance'",
    )
    parser.add_argument(
        "--exclude",
        type=Path,
        help="documents to drop from a query's ranking before scoring (the code-to-code anchor): "
        "JSON {query_id: doc_id | [doc_id]} or TSV 'query_id doc_id' lines",
    )
    parser.add_argument(
        "--subtasks",
        nargs="+",
        metavar="SUBTASK",
        help="with a run file: one JSON file {query_id: subtask} grouping queries into subtasks "
        "(default: read from CoREB query ids q_<subtask>_<number>, else one group); with "
        "--dataset: the subtasks to run (default: all)",
    )
    parser.add_argument(
        "--k",
        type=int,
        nargs="+",
        metavar="K",
        help="cutoffs for every measure (default: nDCG@1,3,5,10 MAP@10,100 "
        "Recall@1,3,5,10,100 MRR@10 P@1,3,5,10)",
    )
    parser.add_argument(
        "--no-positive-policy",
        choices=NO_POSITIVE_POLICIES,
        default="zero",
        help="queries without a relevance-2 document (c2t_match negatives): 'zero' scores them "
        "0 and counts them (official runner, published numbers; default), 'exclude' drops them",
    )
    parser.add_argument(
        "--relevance-level",
        type=int,
        default=2,
        help="grade from which a document is relevant (default: 2, CoREB's graded scheme)",
    )


def load_subtasks(path: Path | None, qrels: Mapping[str, object]) -> dict[str, str]:
    """``{query_id: subtask}`` for every judged query."""
    if path is not None:
        mapping = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(mapping, dict):
            raise ValueError(f"{path}: expected a JSON object {{query_id: subtask}}")
        missing = [q for q in qrels if q not in mapping]
        if missing:
            raise ValueError(
                f"{path}: {len(missing)} judged queries have no subtask, e.g. {missing[0]!r}"
            )
        return {q: str(mapping[q]) for q in qrels}
    found = {q: _COREB_QUERY_ID.match(q) for q in qrels}
    if all(found.values()):
        return {q: m.group(1) for q, m in found.items()}
    return dict.fromkeys(qrels, ALL)


def split(mapping: Mapping[str, dict], subtask_of: Mapping[str, str]) -> dict[str, dict]:
    """Split a ``{query_id: ...}`` mapping by subtask (unknown queries go to no subtask)."""
    parts: dict[str, dict] = {}
    for query_id, value in mapping.items():
        parts.setdefault(subtask_of.get(query_id, "<unjudged>"), {})[query_id] = value
    return parts


@dataclass(frozen=True)
class Judgments:
    """What every run of one command is scored against, read once."""

    qrels: dict[str, dict[str, int]]
    exclude: dict[str, list[str]]
    subtask_of: dict[str, str]


def load_judgments(args: argparse.Namespace) -> Judgments:
    """Read ``--qrels``, ``--exclude`` and ``--subtasks`` and check they agree."""
    qrels = read_qrels(args.qrels)
    exclude = read_exclusions(args.exclude) if args.exclude else {}
    unknown = [q for q in exclude if q not in qrels]
    if unknown:
        raise ValueError(f"{args.exclude}: query {unknown[0]!r} is not in {args.qrels}")
    if args.subtasks is not None and len(args.subtasks) != 1:
        raise ValueError("with a run file, --subtasks takes one JSON file {query_id: subtask}")
    mapping = Path(args.subtasks[0]) if args.subtasks else None
    return Judgments(qrels, exclude, load_subtasks(mapping, qrels))


def score_run(
    run_path: Path, args: argparse.Namespace, judgments: Judgments, progress: bool = True
) -> dict[str, RetrievalEvaluation]:
    """Evaluate one run file subtask by subtask."""
    from tqdm.auto import tqdm

    run = read_run(run_path)
    unknown = [q for q in run if q not in judgments.qrels]
    if unknown:
        raise ValueError(
            f"{run_path}: {len(unknown)} ranked queries are not in {args.qrels}, "
            f"e.g. {unknown[0]!r}: is this the qrels file of the same subtask and release?"
        )
    qrels_parts = split(judgments.qrels, judgments.subtask_of)
    run_parts = split(run, judgments.subtask_of)
    exclude_parts = split(judgments.exclude, judgments.subtask_of)
    evaluations = {}
    for subtask in tqdm(
        sorted(qrels_parts), desc="subtasks", unit="subtask", disable=None if progress else True
    ):
        run_part = run_parts.get(subtask)
        if not run_part:
            raise ValueError(f"{run_path} ranks no query of subtask {subtask!r}")
        evaluations[subtask] = evaluate_retrieval(
            qrels_parts[subtask],
            run_part,
            k_values=args.k,
            exclude=exclude_parts.get(subtask),
            no_positive_policy=args.no_positive_policy,
            relevance_level=args.relevance_level,
        )
    return evaluations
