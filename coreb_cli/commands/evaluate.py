"""``coreb evaluate``: score a run against graded qrels and print the results table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coreb_cli.commands._common import ALL, add_scoring_arguments, load_judgments, score_run
from eval_metrics import aggregate, render_table

NAME = "evaluate"
HELP = "score a TREC run, or run a retriever over a CoREB dataset, under the CoREB protocol"
DESCRIPTION = """\
Two ways in:

* a TREC run file and TREC qrels (RUN --qrels FILE), or
* a CoREB dataset folder written by `coreb build` (or a release folder) and a retriever
  (--dataset DIR --model bm25): every subtask of every release is retrieved and scored, each
  corpus indexed once per release.

Scoring follows the CoREB protocol: relevance level 2 for binary measures, hard negatives
(relevance 1) zero-gain for nDCG, trec_eval tie order, per-query exclusions (the c2c anchor),
and an explicit policy for queries without a relevant document. Prints one row per subtask,
per main task (T2C, C2T, C2C) and Overall (query-weighted).

examples:
  coreb evaluate examples/run.trec --qrels examples/qrels.trec \\
      --exclude examples/c2c_anchors.json
  coreb evaluate --dataset coreb --model bm25 --out results
  coreb evaluate --dataset coreb --model bm25 minilm --out results   # side by side
  coreb evaluate --dataset coreb --model BAAI/bge-small-en-v1.5 --out results --cache-dir cache"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run", type=Path, nargs="?", help="TREC run file: 'query_id Q0 doc_id rank score tag'"
    )
    parser.add_argument("--dataset", help="a `coreb build` folder (or release folder) to run on")
    parser.add_argument(
        "--model",
        nargs="+",
        default=["bm25"],
        help="retriever(s) for --dataset: bm25 (code-aware tokens), minilm (all-MiniLM-L6-v2, "
        "bundled), or any sentence-transformers model name or folder; several models are "
        "also compared side by side",
    )
    parser.add_argument("--releases", nargs="+", help="with --dataset: only these releases")
    parser.add_argument("--out", type=Path, help="with --dataset: the results folder")
    parser.add_argument("--top-k", type=int, default=1000, help="documents kept per query (1000)")
    parser.add_argument("--batch-size", type=int, help="dense models: encoding batch size")
    parser.add_argument("--max-length", type=int, help="dense models: max tokens per text")
    parser.add_argument(
        "--cache-dir", type=Path, help="dense models: corpus embeddings cached here"
    )
    add_scoring_arguments(parser, qrels_required=False)
    parser.add_argument(
        "--columns",
        nargs="+",
        default=["ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100"],
        help="metrics shown in the table (default: ndcg_at_10 recall_at_10 mrr_at_10 map_at_100)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure of every row as JSON")
    parser.add_argument("--per-query", type=Path, help="also write per-query values as JSON lines")


def run(args: argparse.Namespace) -> int:
    if args.dataset is not None:
        if args.run is not None or args.qrels is not None:
            raise ValueError("give either RUN --qrels FILE or --dataset DIR, not both")
        return _run_dataset(args)
    if args.run is None or args.qrels is None:
        raise ValueError("give a run file and --qrels FILE, or --dataset DIR --model bm25")
    evaluations = score_run(args.run, args, load_judgments(args))
    _report(evaluations, args, {"run": str(args.run), "qrels": str(args.qrels)})
    return 0


def _run_dataset(args: argparse.Namespace) -> int:
    if args.exclude is not None:
        raise ValueError("--exclude comes from the dataset itself with --dataset")
    if args.out is None:
        raise ValueError("--dataset needs --out DIR for the runs, results, summary and plots")
    from retrieval.runner import evaluate_model, summary_table

    everything = []
    for model in args.model:
        options = {}
        if model != "bm25":
            given = {"batch_size": args.batch_size, "max_length": args.max_length,
                     "cache_dir": args.cache_dir}  # fmt: skip
            options = {k: v for k, v in given.items() if v is not None}
        results = evaluate_model(
            args.dataset, model, args.out, subtasks=args.subtasks, releases=args.releases,
            top_k=args.top_k, no_positive_policy=args.no_positive_policy, **options,
        )  # fmt: skip
        for res in results:
            print(f"\n== {res['model'].get('name')} on {res['release']} ==")
            print(summary_table([res]))
        everything += results
    if len(args.model) > 1:
        from retrieval.plots import plot_all

        for release in dict.fromkeys(r["release"] for r in everything):
            group = [r for r in everything if r["release"] == release]
            target = args.out / "comparison" / release
            target.mkdir(parents=True, exist_ok=True)
            table = summary_table(group)
            (target / "summary.md").write_text(table, encoding="utf-8")
            plot_all(group, target / "plots")
            print(f"\n== comparison on {release} ==\n{table}")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2) + "\n", encoding="utf-8")
    print(f"runs, per-query scores, results.json, summary.md and plots in {args.out}")
    return 0


def _report(
    evaluations: dict, args: argparse.Namespace, header: dict | None, release: str | None = None
) -> dict:
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
    payload = {
        **(header or {}),
        "no_positive_policy": first.no_positive_policy,
        "relevance_level": first.relevance_level,
        "rows": [row.to_dict() for row in rows],
    }
    if args.json and header is not None:
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if args.per_query:
        with open(args.per_query, "a" if release else "w", encoding="utf-8") as out:
            for subtask, ev in evaluations.items():
                for query_id, values in ev.per_query.items():
                    record = {"query_id": query_id, "subtask": subtask, **values}
                    if release:
                        record["release"] = release
                    record["hard_negative_intrusion"] = ev.intrusion.get(query_id)
                    out.write(json.dumps(record) + "\n")
    return payload
