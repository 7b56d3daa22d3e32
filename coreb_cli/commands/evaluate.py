"""``coreb evaluate``: score a run against graded qrels and print the results table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coreb_cli.commands._common import ALL, add_scoring_arguments, load_judgments, score_run
from eval_metrics import aggregate, render_table

NAME = "evaluate"
HELP = "score a TREC run against graded qrels (nDCG, Recall, MRR, MAP, P, HN-intrusion)"
DESCRIPTION = """\
Score a TREC run file against TREC qrels under the CoREB protocol: relevance level 2 for
binary measures, hard negatives (relevance 1) zero-gain for nDCG, trec_eval tie order,
per-query exclusions, and an explicit policy for queries without a relevant document.
Prints one row per subtask, per main task (T2C, C2T, C2C) and Overall (query-weighted).

example:
  coreb evaluate examples/run.trec --qrels examples/qrels.trec \\
      --exclude examples/c2c_anchors.json"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="TREC run file: 'query_id Q0 doc_id rank score tag'")
    add_scoring_arguments(parser)
    parser.add_argument(
        "--columns",
        nargs="+",
        default=["ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100"],
        help="metrics shown in the table (default: ndcg_at_10 recall_at_10 mrr_at_10 map_at_100)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure of every row as JSON")
    parser.add_argument("--per-query", type=Path, help="also write per-query values as JSON lines")


def run(args: argparse.Namespace) -> int:
    evaluations = score_run(args.run, args, load_judgments(args))
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
            "qrels": str(args.qrels),
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
