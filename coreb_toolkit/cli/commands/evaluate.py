"""``coreb evaluate``: score a run against graded qrels and print the results table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coreb_toolkit.benchmark.runner import C2T_CANONICAL_CORPORA
from coreb_toolkit.cli.commands._common import ALL, add_scoring_arguments, load_judgments, score_run
from eval_metrics import aggregate, render_table

NAME = "evaluate"
HELP = "score a TREC run, or run a retriever over a CoREB dataset, under the CoREB protocol"
DESCRIPTION = """\
Three ways in:

* a TREC run file and TREC qrels (RUN --qrels FILE), or
* a CoREB dataset folder written by `coreb build` (or a release folder) and a retriever
  (--dataset DIR --model bm25): every subtask of every release is retrieved and scored, each
  corpus indexed once per release, or
* a QualCode folder written by `coreb qualcode build` (--qualcode DIR): each --model (bm25,
  an embedder) and the --reranker score every pair, retrieval candidate and MC triplet; QPA
  per dimension, MRR@10/nDCG@10 of the 1+99 retrieval task, MCA per condition count
  (SynH-Rank §3). Ties count as losses.

With --reranker NAME a second stage follows the first (CoREB §4.3): each query's first-stage
top --rerank-top-k (128, after dropping the c2c anchor) is rescored by the reranker with the
subtask's CoREB instruction, both stages are scored, and the reranked result goes to
OUT/<model>+<reranker>/<release>/ beside the first stage's folder, with the delta per task.
Documents beyond the top k are dropped, so Recall@k for k >= top k equals the first stage's.

Scoring follows the CoREB protocol: relevance level 2 for binary measures, hard negatives
(relevance 1) zero-gain for nDCG, trec_eval tie order, per-query exclusions (the c2c anchor),
and an explicit policy for queries without a relevant document. Prints one row per subtask,
per main task (T2C, C2T, C2C) and Overall (query-weighted).

With --dataset, each run file is written as it was scored (the c2c anchor removed), every row
reports the share of queries whose best positive ties with a non-relevant document (there the
doc ids, not the model, decide the order), and c2t_canonical_retro_* rank the abbreviated
descriptions as the paper defines them, or with --c2t-canonical-corpus full the full texts as
the official runner and MTEB do.

examples:
  coreb evaluate examples/run.trec --qrels examples/qrels.trec \\
      --exclude examples/c2c_anchors.json
  coreb evaluate --dataset coreb --model bm25 --out results
  coreb evaluate --dataset coreb --model bm25 minilm --out results   # side by side
  coreb evaluate --dataset coreb --model BAAI/bge-small-en-v1.5 --out results --cache-dir cache
  coreb evaluate --dataset coreb --model bm25 --reranker minilm --rerank-top-k 128 --out results
  coreb evaluate --dataset coreb --model bm25 --c2t-canonical-corpus full --out results-runner
  coreb evaluate --qualcode qualcode --model bm25 minilm --reranker minilm --out results"""

EPILOG = """\
rerankers (--reranker):
  minilm                      all-MiniLM-L6-v2 with an untrained 1-label head (offline plumbing)
  smollm2                     SmolLM2-135M-Instruct as a yes/no reranker (offline, untuned)
  Qwen/Qwen3-Reranker-0.6B    generative yes/no reranker of the paper's family (Hub; GPU advised)
  BAAI/bge-reranker-v2-m3     cross-encoder (Hub)
  any local folder or Hub id: *ForSequenceClassification -> cross-encoder, *ForCausalLM ->
  generative yes/no; scores are cached under --cache-dir/rerank when --cache-dir is given."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run", type=Path, nargs="?", help="TREC run file: 'query_id Q0 doc_id rank score tag'"
    )
    parser.add_argument("--dataset", help="a `coreb build` folder (or release folder) to run on")
    parser.add_argument(
        "--model",
        nargs="+",
        help="retriever(s) for --dataset or scorers for --qualcode: bm25 (code-aware tokens, "
        "the default), minilm (all-MiniLM-L6-v2, bundled), or any sentence-transformers model "
        "name or folder; several models are also compared side by side",
    )
    parser.add_argument(
        "--qualcode",
        metavar="DIR",
        help="a `coreb qualcode build` folder: QPA per dimension, MRR@10/nDCG@10 of the 1+99 "
        "retrieval task, MCA per condition count, for each --model and the --reranker",
    )
    parser.add_argument(
        "--qualcode-tasks",
        nargs="+",
        choices=("pairs", "retrieval", "mc"),
        metavar="TASK",
        help="with --qualcode: which tasks to score, of pairs (QPA), retrieval (1+99: a hundred "
        "scores per pair, the slow one for a reranker on CPU) and mc (MCA); default all",
    )
    parser.add_argument("--releases", nargs="+", help="with --dataset: only these releases")
    parser.add_argument(
        "--c2t-canonical-corpus",
        choices=C2T_CANONICAL_CORPORA,
        help="with --dataset: what the c2t_canonical_retro_* subtasks rank: 'abbreviated' "
        "descriptions (the default, the paper's definition, A.3) or the 'full' texts (what the "
        "official CoREB runner and MTEB's C2T task rank, to reproduce their figures); stated "
        "in results.json and summary.md",
    )
    parser.add_argument("--out", type=Path, help="with --dataset: the results folder")
    parser.add_argument("--top-k", type=int, default=1000, help="documents kept per query (1000)")
    parser.add_argument("--batch-size", type=int, help="dense models: encoding batch size")
    parser.add_argument("--max-length", type=int, help="dense models: max tokens per text")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help="dense models: corpus embeddings cached here; with --reranker, its scores are "
        "cached in DIR/rerank",
    )
    parser.add_argument(
        "--reranker",
        metavar="NAME",
        help="with --dataset: rerank each model's first stage with this reranker (an alias: "
        "minilm, smollm2; a model folder; or a Hub id such as Qwen/Qwen3-Reranker-0.6B)",
    )
    parser.add_argument(
        "--rerank-top-k",
        type=int,
        metavar="K",
        help="with --reranker: first-stage documents reranked per query (default 128, as the "
        "paper); the rest are dropped",
    )
    parser.add_argument(
        "--rerank-batch-size",
        type=int,
        metavar="N",
        help="with --reranker: at most N pairs of the maximum length per forward pass (pairs "
        "are length-sorted and batched by a budget of N x max-length tokens, so short ones pack "
        "more)",
    )
    parser.add_argument(
        "--rerank-max-length",
        type=int,
        metavar="N",
        help="with --reranker: most tokens per (query, document) pair; the document is "
        "truncated (default: the backend's, 512 cross-encoder / 8192 generative)",
    )
    parser.epilog = EPILOG
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
    if args.c2t_canonical_corpus is not None and args.dataset is None:
        raise ValueError(
            "--c2t-canonical-corpus only applies with --dataset DIR: a run file is scored "
            "against the qrels it is given"
        )
    if args.qualcode_tasks and args.qualcode is None:
        raise ValueError("--qualcode-tasks only applies with --qualcode DIR")
    if args.qualcode is not None:
        if args.dataset is not None or args.run is not None or args.qrels is not None:
            raise ValueError("give one of --qualcode DIR, --dataset DIR, or RUN --qrels FILE")
        return _run_qualcode(args)
    given = [flag for flag, value in _rerank_options(args).items() if value is not None]
    if given and args.reranker is None:
        raise ValueError(f"{', '.join(given)} only apply with --reranker NAME (e.g. minilm)")
    if args.reranker is not None and args.dataset is None:
        raise ValueError(
            "--reranker reranks the first stage of a dataset run: give --dataset DIR --model "
            "bm25 --reranker NAME --out DIR, or scores QualCode with --qualcode DIR (a TREC run "
            "file is scored as it is)"
        )
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
    from coreb_toolkit.benchmark.runner import evaluate_model, summary_table

    second, rerank_top_k = _reranker(args), 128
    if args.rerank_top_k is not None:
        rerank_top_k = args.rerank_top_k
    everything = []
    models = args.model or ["bm25"]
    for model in models:
        options = {}
        if model != "bm25":
            given = {
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "cache_dir": args.cache_dir,
            }
            options = {k: v for k, v in given.items() if v is not None}
        results = evaluate_model(
            args.dataset,
            model,
            args.out,
            subtasks=args.subtasks,
            releases=args.releases,
            top_k=args.top_k,
            no_positive_policy=args.no_positive_policy,
            reranker=second,
            rerank_top_k=rerank_top_k,
            c2t_canonical_corpus=args.c2t_canonical_corpus or "abbreviated",
            **options,
        )
        for res in results:
            print(f"\n== {res['model'].get('name')} on {res['release']} ==")
            print(summary_table([res]))
        everything += results
    if len(models) > 1:
        from coreb_toolkit.benchmark.plots import plot_all

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


def _run_qualcode(args: argparse.Namespace) -> int:
    """Every --model (default bm25 unless only a reranker is given) and the --reranker as
    scorers of QualCode pairs, the 1+99 retrieval task and MC-QualCode triplets."""
    if args.out is None:
        raise ValueError("--qualcode needs --out DIR for results.json, summary.md and the plot")
    if args.rerank_top_k is not None:
        raise ValueError("--rerank-top-k has no meaning with --qualcode: every pair is scored")
    from coreb_toolkit.benchmark.qualcode_eval import (
        RerankerScorer,
        evaluate_qualcode,
        load_qualcode,
        make_scorer,
        plot_qualcode,
        summary_table,
    )

    tasks = set(args.qualcode_tasks or ("pairs", "retrieval", "mc"))
    data = load_qualcode(args.qualcode)
    reranker = _reranker(args)
    scored = {"tasks": tasks, "out_dir": args.out}
    models = args.model or ([] if reranker is not None else ["bm25"])
    everything = []
    for model in models:
        options = {}
        if model != "bm25":
            given = {
                "batch_size": args.batch_size,
                "max_length": args.max_length,
                "cache_dir": args.cache_dir,
            }
            options = {k: v for k, v in given.items() if v is not None}
        scorer = make_scorer(model, data, **options)
        everything.append(evaluate_qualcode(data, scorer, **scored))
    if reranker is not None:
        everything.append(evaluate_qualcode(data, RerankerScorer(reranker), **scored))
    table = summary_table(everything)
    print(f"\n== QualCode ({args.qualcode}) ==\n{table}")
    if len(everything) > 1:
        target = args.out / "comparison" / "qualcode"
        target.mkdir(parents=True, exist_ok=True)
        (target / "summary.md").write_text(table, encoding="utf-8")
        plot_qualcode(everything, target / "qualcode.png")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2) + "\n", encoding="utf-8")
    print(f"results.json, scores.jsonl, summary.md and the QPA/MCA plot in {args.out}")
    return 0


def _rerank_options(args: argparse.Namespace) -> dict[str, int | None]:
    return {
        "--rerank-top-k": args.rerank_top_k,
        "--rerank-batch-size": args.rerank_batch_size,
        "--rerank-max-length": args.rerank_max_length,
    }


def _reranker(args: argparse.Namespace):
    """The second-stage reranker, loaded once and shared by every --model; checked first so
    that a bad option fails before any retrieval runs."""
    if args.reranker is None:
        return None
    for flag, value in _rerank_options(args).items():
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    if args.rerank_top_k is not None and args.rerank_top_k > args.top_k:
        raise ValueError(
            f"--rerank-top-k {args.rerank_top_k} exceeds --top-k {args.top_k}: the first stage "
            f"keeps only its top {args.top_k} per query; raise --top-k or lower --rerank-top-k"
        )
    from coreb_toolkit.benchmark.rerank import resolve_reranker

    options: dict = {}
    if args.rerank_max_length is not None:
        options["max_length"] = args.rerank_max_length
    if args.cache_dir is not None:
        options["cache_dir"] = args.cache_dir / "rerank"
    reranker = resolve_reranker(args.reranker, options)
    if args.rerank_batch_size is not None:
        # the backends batch by a padded-token budget; N pairs of the longest allowed length
        reranker.max_tokens_per_batch = args.rerank_batch_size * reranker.max_length
    return reranker


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
