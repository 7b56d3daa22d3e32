"""``coreb score``: score TREC run files against graded qrels and print the results table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.commands._common import ALL, ScoringArguments, load_judgments, score_run
from coreb_toolkit.cli.parsing import Command
from eval_metrics import aggregate, render_table
from eval_metrics.aggregate import TABLE_COLUMNS

DESCRIPTION = """\
Score a TREC run file against TREC qrels under the CoREB protocol: relevance level 2 for binary
measures, hard negatives (relevance 1) zero-gain for nDCG, trec_eval tie order, per-query
exclusions (the c2c anchor), and an explicit policy for queries without a relevant document.
Prints one row per subtask, per main task (T2C, C2T, C2C) and Overall (query-weighted).

To run a retriever over a CoREB dataset instead, use `coreb evaluate --dataset DIR`.

examples:
  coreb score examples/run.trec --qrels examples/qrels.trec \\
      --exclude examples/c2c_anchors.json
  coreb score examples/run.trec --qrels examples/qrels.trec --k 5 10 --columns ndcg_at_5"""


@dataclass
class ScoreArguments:
    """``coreb score RUN --qrels FILE``."""

    run: Path = field(
        metadata={"positional": True, "help": "TREC run file: 'query_id Q0 doc_id rank score tag'"}
    )
    columns: list[str] = field(
        default_factory=lambda: list(TABLE_COLUMNS),
        metadata={"metavar": "METRIC", "help": "metrics shown in the table"},
    )
    json: Path | None = field(
        default=None, metadata={"help": "also write every figure of every row as JSON"}
    )
    per_query: Path | None = field(
        default=None, metadata={"help": "also write per-query values as JSON lines"}
    )


def run(args: ScoreArguments, scoring: ScoringArguments) -> int:
    evaluations = score_run(args.run, scoring, load_judgments(scoring))
    rows = aggregate(evaluations, group_by_task=ALL not in evaluations)
    first = next(iter(evaluations.values()))
    print(render_table(rows, args.columns))
    print(
        f"\nno_positive_policy={first.no_positive_policy} "
        f"(queries without a relevance-{first.relevance_level} document: "
        f"{sum(len(e.queries_without_positive) for e in evaluations.values())}); "
        f"judged queries missing from the run (scored 0): "
        f"{sum(len(e.queries_missing_from_run) for e in evaluations.values())}"
    )
    if args.json:
        payload = {
            "run": str(args.run),
            "qrels": str(scoring.qrels),
            "no_positive_policy": first.no_positive_policy,
            "relevance_level": first.relevance_level,
            "rows": [row.to_dict() for row in rows],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.per_query:
        with open(args.per_query, "w", encoding="utf-8") as out:
            for subtask, ev in evaluations.items():
                for query_id, values in ev.per_query.items():
                    record = {"query_id": query_id, "subtask": subtask, **values}
                    record["hard_negative_intrusion"] = ev.intrusion.get(query_id)
                    out.write(json.dumps(record) + "\n")
    return 0


_RERANKER = (
    "--reranker reranks the first stage of a dataset run: give `coreb evaluate --dataset DIR "
    "--model bm25 --reranker NAME --out DIR`, or score QualCode with `coreb qualcode evaluate "
    "DIR --reranker NAME --out DIR` (a TREC run file is scored as it is)"
)

COMMANDS = (
    Command(
        name="score",
        help="score TREC run files against TREC qrels under the CoREB protocol",
        description=DESCRIPTION,
        arguments=(ScoreArguments, ScoringArguments),
        run=run,
        mode="a run file (`coreb score RUN --qrels FILE`)",
        refused={"--reranker": _RERANKER},
    ),
)
