"""``coreb evaluate``: run retrievers (and a reranker) over every subtask of a CoREB dataset."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import coreb_dataset
from coreb_toolkit.benchmark.rerank import DEFAULT_RERANK_TOP_K
from coreb_toolkit.benchmark.runner import C2T_CANONICAL_CORPORA
from coreb_toolkit.cli.commands._common import ModelArguments, out_needed, qrels_spellings
from coreb_toolkit.cli.parsing import Command
from eval_metrics.retrieval import NO_POSITIVE_POLICIES

DESCRIPTION = f"""\
Run one or more retrievers over a CoREB dataset: a folder written by `coreb build` (or its Hub
id), or a release as published -- hq-bench/coreb on the Hub, or a local folder holding one
folder per release with <config>.jsonl, or <config>/<split>.jsonl|parquet -- which is built
once into --cache-dir/datasets (keyed by the source's fingerprint) and reused. Every subtask
of every release (--releases release_v2603 picks one) is retrieved and scored under the CoREB
protocol, each corpus indexed once per release. Runs, per-query scores, results.json,
summary.md and plots go to OUT/<model>/<release>/; with several --model, a side-by-side
comparison follows in OUT/comparison/<release>/.

With --reranker NAME a second stage follows the first (CoREB §4.3): each query's first-stage
top --rerank-top-k ({DEFAULT_RERANK_TOP_K}, after dropping the c2c anchor) is rescored by the
reranker with the subtask's CoREB instruction, both stages are scored, and the reranked result
goes to OUT/<model>+<reranker>/<release>/ with the delta per task. Documents beyond the top k
are dropped, so Recall@k for k >= top k equals the first stage's.

Each run file is written as it was scored (the c2c anchor removed), every row reports the share
of queries whose best positive ties with a non-relevant document (there the doc ids, not the
model, decide the order), and c2t_canonical_retro_* rank the abbreviated descriptions as the
paper defines them, or with --c2t-canonical-corpus full the full texts as the official runner
and MTEB do. A release folder without qrels gets them derived with the qrels options below
(--qrels-scheme ...), as `coreb build` does.

Score a TREC run file with `coreb score`, QualCode with `coreb qualcode evaluate`.

On a release the paper reports, the recomputed rows are printed beside the paper's published
ones (CoREB Tables 3 and 14; --no-compare-published to leave them out).

--query-sample N evaluates a seeded sample (--query-seed) of N queries of every subtask, against
the full corpora, for quick checks (a generative reranker on a CPU): results.json and summary.md
say so, the figures are not the benchmark's, are not set beside the paper's, and cannot be
published (coreb card model, coreb leaderboard submit, coreb submit mteb refuse them).

examples:
  coreb evaluate --dataset hq-bench/coreb --releases release_v2603 --model bm25 minilm \\
      --out results --cache-dir cache
  coreb evaluate --dataset coreb --model bm25 --out results
  coreb evaluate --dataset coreb --model bm25 minilm --out results   # side by side
  coreb evaluate --dataset coreb --model BAAI/bge-small-en-v1.5 --out results --cache-dir cache
  coreb evaluate --dataset coreb --model bm25 --reranker minilm --rerank-top-k 128 --out results
  coreb evaluate --dataset coreb --model bm25 --c2t-canonical-corpus full --out results-runner
  coreb evaluate --dataset coreb --model bm25 --reranker smollm2 --out results-quick \\
      --query-sample 4 --query-seed 0   # 4 queries a subtask: a quick check, not the benchmark
  coreb evaluate --config evaluate.yaml --out results-2   # YAML values, a flag overriding one"""

EPILOG = """\
rerankers (--reranker):
  minilm                      all-MiniLM-L6-v2 with an untrained 1-label head (offline plumbing)
  smollm2                     SmolLM2-135M-Instruct as a yes/no reranker (offline, untuned)
  Qwen/Qwen3-Reranker-0.6B    generative yes/no reranker of the paper's family (Hub; GPU advised)
  BAAI/bge-reranker-v2-m3     cross-encoder (Hub)
  any local folder or Hub id: *ForSequenceClassification -> cross-encoder, *ForCausalLM ->
  generative yes/no; scores are cached under --cache-dir/rerank when --cache-dir is given."""

EXAMPLE = "coreb evaluate --dataset demo/coreb --model bm25 --out demo/results"


@dataclass
class EvaluateArguments(ModelArguments):
    """``coreb evaluate --dataset DIR``: the first stage, an optional second, where to write."""

    dataset: str | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "a `coreb build` folder, a release folder (official layout) or a Hub id",
        },
    )
    releases: list[str] | None = field(
        default=None, metadata={"help": "only these releases (default: all)"}
    )
    subtasks: list[str] | None = field(
        default=None, metadata={"metavar": "SUBTASK", "help": "only these subtasks (default: all)"}
    )
    c2t_canonical_corpus: Literal[C2T_CANONICAL_CORPORA] = field(
        default="abbreviated",
        metadata={
            "help": "what the c2t_canonical_retro_* subtasks rank: 'abbreviated' descriptions "
            "(the paper's definition, A.3) or the 'full' texts (what the official CoREB runner "
            "and MTEB's C2T task rank, to reproduce their figures); stated in results.json and "
            "summary.md"
        },
    )
    top_k: int = field(default=1000, metadata={"help": "first-stage documents kept per query"})
    rerank_top_k: int | None = field(
        default=None,
        metadata={
            "metavar": "K",
            "help": f"with --reranker: first-stage documents reranked per query (default "
            f"{DEFAULT_RERANK_TOP_K}, as the paper); the rest are dropped",
        },
    )
    compare_published: bool = field(
        default=True,
        metadata={
            "help": "on a release the paper reports (release_v2602, release_v2603), print and "
            "write (OUT/comparison/<release>/published.md) the recomputed models beside the "
            "paper's published first-stage rows (CoREB Tables 3 and 14), which are marked as "
            "reported, not recomputed; --no-compare-published leaves them out"
        },
    )
    query_sample: int | None = field(
        default=None,
        metadata={
            "metavar": "N",
            "help": "evaluate a seeded sample of N queries of every subtask (all of a subtask's "
            "where it has fewer) against the full corpora, for quick checks: the figures are "
            "then not the benchmark's (results.json and summary.md say so; they are not "
            "compared with the paper's and cannot be published)",
        },
    )
    query_seed: int | None = field(
        default=None,
        metadata={
            "metavar": "S",
            "help": "with --query-sample: the seed of the sample (default 0); the same seed "
            "draws the same queries",
        },
    )
    no_positive_policy: Literal[NO_POSITIVE_POLICIES] = field(
        default="zero",
        metadata={
            "help": "queries without a relevant document (c2t_match negatives): 'zero' scores "
            "them 0 and counts them (official runner, published numbers), 'exclude' drops them"
        },
    )

    def rerank_flags(self) -> dict[str, int | None]:
        return {"--rerank-top-k": self.rerank_top_k, **super().rerank_flags()}

    def __post_init__(self) -> None:
        if self.dataset is None:
            raise ValueError(
                "nothing to evaluate: give a run file and --qrels FILE, or --dataset DIR (here "
                f"`coreb score RUN --qrels FILE`, or {EXAMPLE})"
            )
        if self.out is None:
            raise ValueError(out_needed("--dataset", EXAMPLE))
        super().__post_init__()
        if self.model is None:
            self.model = ["bm25"]
        if self.top_k < 1:
            raise ValueError(f"--top-k must be at least 1, got {self.top_k}")
        if self.query_sample is not None and self.query_sample < 1:
            raise ValueError(
                f"--query-sample must be at least 1 (queries kept per subtask), got "
                f"{self.query_sample}"
            )
        if self.query_seed is not None and self.query_sample is None:
            raise ValueError("--query-seed only applies with --query-sample N")
        if self.rerank_top_k is not None and self.rerank_top_k > self.top_k:
            raise ValueError(
                f"--rerank-top-k {self.rerank_top_k} exceeds --top-k {self.top_k}: the first "
                f"stage keeps only its top {self.top_k} per query; raise --top-k or lower "
                "--rerank-top-k"
            )


def run(args: EvaluateArguments, options: coreb_dataset.QrelsOptions) -> int:
    from coreb_toolkit.benchmark.runner import evaluate_model

    started = time.perf_counter()
    release_source = coreb_dataset.is_release_source(args.dataset)
    args.check_retriever_options(also=("cache_dir",) if release_source else ())
    reranker = args.load_reranker()
    dataset, recorded = args.dataset, None
    if release_source:
        fingerprint = coreb_dataset.source_fingerprint(args.dataset)
        recorded = {"source": args.dataset, "revision": fingerprint}
        cache = None if args.cache_dir is None else args.cache_dir / "datasets"
        dataset = coreb_dataset.prepare_dataset(
            args.dataset, cache, options=options, fingerprint=fingerprint
        )
        if cache is not None:
            print(f"{args.dataset}: built dataset {dataset} (reused while the source is unchanged)")
            options = coreb_dataset.QrelsOptions()  # applied by the build
    everything = []
    for model in args.model:
        results = evaluate_model(
            dataset,
            model,
            args.out,
            subtasks=args.subtasks,
            releases=args.releases,
            top_k=args.top_k,
            no_positive_policy=args.no_positive_policy,
            reranker=reranker,
            rerank_top_k=args.rerank_top_k or DEFAULT_RERANK_TOP_K,
            c2t_canonical_corpus=args.c2t_canonical_corpus,
            options=options,
            dataset_source=recorded,
            query_sample=args.query_sample,
            query_seed=args.query_seed or 0,
            **args.retriever_options(model),
        )
        for res in results:
            print(f"\n== {_label(res)} on {res['release']} ==")
            print(_summary([res]))
        everything += results
    if len(args.model) > 1:
        _compare(everything, args)
    if args.compare_published and args.query_sample is not None:
        print(
            f"\nnot compared with the paper's published rows: figures on a sample of at most "
            f"{args.query_sample} {'query' if args.query_sample == 1 else 'queries'} per "
            "subtask are not comparable with them"
        )
    elif args.compare_published:
        _beside_published(everything, args)
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2) + "\n", encoding="utf-8")
    print(f"\nruns, per-query scores, results.json, summary.md and plots in {args.out}")
    print(f"total time {time.perf_counter() - started:.1f} s")
    return 0


def _label(res: Mapping[str, Any]) -> str:
    return str(res["model"].get("name"))  # a reranked result's name is "BM25 + minilm"


def _summary(results: Sequence[Mapping[str, Any]]) -> str:
    from coreb_toolkit.benchmark.runner import summary_table

    return summary_table(results)


def _compare(everything: list[dict[str, Any]], args: EvaluateArguments) -> None:
    """Per release: the comparison folder (summary.md of every model, plots) and, printed, one
    table with a column per model (the per-subtask tables were printed model by model)."""
    from coreb_toolkit.benchmark.plots import plot_all
    from coreb_toolkit.benchmark.report import mteb_v1_table

    for release in dict.fromkeys(r["release"] for r in everything):
        group = [r for r in everything if r["release"] == release]
        target = args.out / "comparison" / release
        target.mkdir(parents=True, exist_ok=True)
        (target / "summary.md").write_text(_summary(group), encoding="utf-8")
        plot_all(group, target / "plots")
        print(f"\n== comparison on {release} ==\n{side_by_side(group)}")
        mteb = mteb_v1_table(group)
        if mteb:  # MTEB's six and their mean, each model beside the others and mteb's rows
            print("\n".join(mteb[1:]))
        print(f"(every model's tables and plots: {target})")


def _beside_published(everything: list[dict[str, Any]], args: EvaluateArguments) -> None:
    """Per published release: the first-stage results beside the paper's rows, printed and
    written to OUT/comparison/<release>/published.md."""
    from coreb_toolkit.benchmark.published import beside_published, is_published_release

    for release in dict.fromkeys(r["release"] for r in everything):
        if not is_published_release(release):
            continue
        group = [r for r in everything if r["release"] == release and not r.get("reranker")]
        table = beside_published(group, release)
        target = args.out / "comparison" / release
        target.mkdir(parents=True, exist_ok=True)
        (target / "published.md").write_text(table, encoding="utf-8")
        print(f"\n== beside the paper on {release} ==\n{table}")


def side_by_side(results: Sequence[Mapping[str, Any]], metric: str = "ndcg_at_10") -> str:
    """A Markdown table of ``metric``: a row per subtask, main task and Overall, a column per
    model (first stage and reranked alike), for the results of one release."""
    labels = [_label(res) for res in results]
    by_model = [{(r["level"], r["name"]): r for r in res["rows"]} for res in results]
    keys = list(dict.fromkeys(key for rows in by_model for key in rows))
    lines = [f"{metric}, release {results[0]['release']}:", "",
             "| | queries | " + " | ".join(labels) + " |",
             "|---|---|" + "---|" * len(labels)]  # fmt: skip
    for key in keys:
        first = next(rows[key] for rows in by_model if key in rows)
        name = key[1] if key[0] == "subtask" else f"**{key[1]}**"
        cells = [f"{rows[key][metric]:.4f}" if key in rows else "-" for rows in by_model]
        lines.append(f"| {name} | {first['n_queries']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_EXCLUDE = (
    "--exclude comes from the dataset itself with --dataset (the c2c anchors); it applies to "
    "run files: `coreb score RUN --qrels FILE --exclude FILE`"
)

COMMANDS = (
    Command(
        name="evaluate",
        help="run retrievers (and a reranker) over every subtask of a CoREB dataset",
        description=DESCRIPTION,
        epilog=EPILOG,
        arguments=(EvaluateArguments, coreb_dataset.QrelsOptions),
        run=run,
        mode="--dataset DIR (`coreb evaluate --dataset DIR`)",
        refused={"--exclude": _EXCLUDE},
        extra_arguments=qrels_spellings,
    ),
)
