"""Speed of the CoREB retrieval metrics against raw pytrec_eval and the other scorers around.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_metrics.py                     # 5,000 x 1,000, 5 repeats
    .venv/bin/python benchmarks/bench_metrics.py --queries 200 --docs 100 --repeats 1  # smoke
    .venv/bin/python benchmarks/bench_metrics.py --profile evaluate_module  # cProfile one call

Timings are reported as ratios to a baseline measured in the same run (raw pytrec_eval: one
``RelevanceEvaluator`` + ``evaluate``), because absolute seconds on a shared machine mean little.
The contenders are interleaved (the order rotates every repeat) and each is reported by the
median of the repeats. Inputs are built once, outside every timed region; each contender is timed
end to end from the plain dict inputs, and the shared inputs are checked after every call
(outside the timing) to prove that no contender mutated them.

Contenders:

1. ``pytrec_eval`` (baseline): the raw evaluator on the unzeroed qrels, no exclusions, no
   aggregation. Its graded nDCG would be wrong (hard negatives earn gain); it is a speed floor.
2. ``eval_metrics``: ``evaluate_retrieval(qrels, run, exclude=...).summary()``, the full suite
   (exclusions, zeroed qrels, MRR@10, hard-negative intrusion, aggregation).
3. ``evaluate module``: ``evaluate.load("eval_metrics/coreb_metric").compute(...)`` on one row
   per query: a one-shot call, which the module checks and scores straight from the rows.
3b. ``evaluate add_batch``: the same rows through ``add_batch`` (10 batches) then ``compute()``:
   evaluate's own path, an Arrow table written and read back (what distributed and incremental
   evaluation use).
4. ``ranx``: ``Qrels`` + ``Run`` construction + ``ranx.evaluate`` (numba; one untimed warm-up
   call compiles it first; numba may use every core).
5. ``CoREB runner``: the official ``EvaluateRetrieval.evaluate`` + ``mrr`` (it has no exclusions;
   called with ``ignore_identical_ids=False`` because ``True`` mutates the run).

Memory: after the timing, each contender runs once more in a fresh subprocess that builds the
same inputs, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``) and reports how far
the peak rose above the resident size before the call: the memory the contender itself needs
(``--no-memory`` skips it).

Results go to stdout, ``benchmarks/results/bench_metrics.json`` and a bar chart of the ratios,
``benchmarks/results/bench_metrics.png``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import logging
import os
import platform
import pstats
import resource
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run from anywhere without an editable install
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
METRIC_PATH = REPO_ROOT / "eval_metrics" / "coreb_metric"
TARGET_RATIO = 1.5
BASELINE = "pytrec_eval"

TREC_MEASURES = {
    "ndcg_cut.1,3,5,10",
    "map_cut.10,100",
    "recall.1,3,5,10,100",
    "P.1,3,5,10",
    "recip_rank",
}
RANX_METRICS = [
    "ndcg@1",
    "ndcg@3",
    "ndcg@5",
    "ndcg@10",
    "map@10",
    "map@100",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "recall@100",
    "mrr@10",
    "precision@1",
    "precision@3",
    "precision@5",
    "precision@10",
]
OFFICIAL_K = [1, 3, 5, 10, 100]

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


# --------------------------------------------------------------------------- inputs


@dataclass
class Inputs:
    qrels: Qrels
    run: Run
    exclude: dict[str, list[str]]
    predictions: list[dict[str, object]]  # evaluate-module rows, built outside the timing
    references: list[dict[str, object]]
    stats: dict[str, object] = field(default_factory=dict)


def make_inputs(n_queries: int, n_docs: int, corpus_size: int, seed: int) -> Inputs:
    """CoREB-like qrels, run and c2c exclusions, deterministic for a seed.

    * doc ids ``code_v202603_00001`` ... from a corpus of ``corpus_size`` ids;
    * every query ranks ``n_docs`` distinct docs with float scores; about a quarter of the
      scores are rounded to 3 decimals, which makes exact ties (trec_eval breaks them by doc id);
    * graded qrels: 1-3 docs of relevance 2 and 2-5 hard negatives of relevance 1, about 70 %
      of them inside the ranked list (positives mostly in the top 10, hard negatives a little
      lower), the rest outside it (qrels key order mixes grades);
    * about 5 % of the queries have only relevance-1 docs (no positive);
    * about 20 % of the queries exclude a c2c anchor: an unjudged doc of their ranked list,
      usually ranked first (the query's own code scores highest).
    """
    if corpus_size < n_docs + 16:
        raise ValueError(f"--corpus ({corpus_size}) must exceed --docs ({n_docs}) by at least 16")
    rng = np.random.default_rng(seed)
    corpus = [f"code_v202603_{i:05d}" for i in range(1, corpus_size + 1)]
    qrels: Qrels = {}
    run: Run = {}
    exclude: dict[str, list[str]] = {}
    n_ties = n_no_positive = n_judged_in = n_judged_out = 0

    for qi in range(1, n_queries + 1):
        qid = f"q_v202603_{qi:05d}"
        picked = rng.choice(corpus_size, size=n_docs, replace=False)  # rank order
        scores = np.sort(rng.normal(0.55, 0.12, size=n_docs))[::-1]
        rounded = rng.random(n_docs) < 0.25
        scores[rounded] = np.round(scores[rounded], 3)
        # Rounding can break the descending order locally; the run is a dict, so order is moot,
        # but keep the rank positions below meaningful by re-sorting.
        scores = np.sort(scores)[::-1]
        n_ties += n_docs - len(np.unique(scores))
        ranked_ids = [corpus[i] for i in picked]
        run[qid] = dict(zip(ranked_ids, scores.tolist(), strict=True))

        n_pos = 0 if rng.random() < 0.05 else int(rng.integers(1, 4))
        n_hard = int(rng.integers(2, 6))
        n_no_positive += n_pos == 0
        grades = [2] * n_pos + [1] * n_hard
        inside = rng.random(len(grades)) < 0.7
        # Distinct ranks inside the list, skewed towards the top: positives mostly in the top 10
        # (a decent retriever), hard negatives a little lower (they look alike).
        judged: list[str] = []
        taken: set[int] = set()
        in_list = set(picked.tolist())
        for grade, is_inside in zip(grades, inside, strict=True):
            if is_inside:
                scale = max(1.0, n_docs * (0.008 if grade == 2 else 0.03))
                while True:
                    r = min(int(rng.exponential(scale)), n_docs - 1)
                    if r not in taken:
                        taken.add(r)
                        judged.append(ranked_ids[r])
                        break
            else:
                while True:
                    c = int(rng.integers(corpus_size))
                    if c not in in_list and corpus[c] not in judged:
                        judged.append(corpus[c])
                        break
        mixed = rng.permutation(len(judged))
        qrels[qid] = {judged[i]: grades[i] for i in mixed}
        n_judged_in += len(taken)
        n_judged_out += len(judged) - len(taken)

        if rng.random() < 0.20:
            unjudged = [r for r in range(n_docs) if ranked_ids[r] not in qrels[qid]]
            r = unjudged[0] if rng.random() < 0.7 else unjudged[int(rng.integers(len(unjudged)))]
            exclude[qid] = [ranked_ids[r]]

    predictions = [
        {"query_id": q, "doc_ids": list(docs), "scores": list(docs.values())}
        for q, docs in run.items()
    ]
    references = [
        {"query_id": q, "doc_ids": list(docs), "relevance": list(docs.values())}
        for q, docs in qrels.items()
    ]
    stats = {
        "queries": n_queries,
        "docs_per_query": n_docs,
        "corpus_size": corpus_size,
        "seed": seed,
        "run_entries": n_queries * n_docs,
        "qrels_entries": n_judged_in + n_judged_out,
        "judged_in_run": n_judged_in,
        "judged_outside_run": n_judged_out,
        "queries_without_positive": n_no_positive,
        "queries_with_exclusion": len(exclude),
        "tied_scores": n_ties,
    }
    return Inputs(qrels, run, exclude, predictions, references, stats)


def snapshot(inputs: Inputs) -> tuple[object, ...]:
    """A copy of the shared inputs deep enough to detect any mutation (leaves are immutable)."""
    return (
        {q: dict(d) for q, d in inputs.qrels.items()},
        {q: dict(d) for q, d in inputs.run.items()},
        {q: list(d) for q, d in inputs.exclude.items()},
        [
            {k: (list(v) if isinstance(v, list) else v) for k, v in r.items()}
            for r in inputs.predictions
        ],
        [
            {k: (list(v) if isinstance(v, list) else v) for k, v in r.items()}
            for r in inputs.references
        ],
    )


def unchanged(inputs: Inputs, snap: tuple[object, ...]) -> bool:
    return snap == (inputs.qrels, inputs.run, inputs.exclude, inputs.predictions, inputs.references)


# --------------------------------------------------------------------------- contenders


@dataclass
class Contender:
    name: str
    description: str
    call: Callable[[], object]
    note: str = ""
    times: list[float] = field(default_factory=list)
    result: object = None


def build_contenders(inputs: Inputs, names: list[str]) -> dict[str, Contender]:
    """The contenders, each a zero-argument callable closed over the shared inputs."""
    qrels, run, exclude = inputs.qrels, inputs.run, inputs.exclude
    out: dict[str, Contender] = {}

    import pytrec_eval

    def raw_pytrec_eval():
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=2)
        return evaluator.evaluate(run)

    out[BASELINE] = Contender(
        BASELINE,
        "raw RelevanceEvaluator + evaluate (no exclusions, zeroing or aggregation)",
        raw_pytrec_eval,
        "baseline; speed floor only (its graded nDCG counts hard negatives)",
    )

    if "eval_metrics" in names:
        from eval_metrics import evaluate_retrieval

        def library():
            return evaluate_retrieval(qrels, run, exclude=exclude).summary()

        out["eval_metrics"] = Contender(
            "eval_metrics",
            "evaluate_retrieval(..., exclude=...).summary() (full suite)",
            library,
            "full suite: exclusions, zeroed qrels, MRR@10, intrusion, means",
        )

    if "evaluate_module" in names:
        import evaluate

        logging.getLogger("evaluate").setLevel(logging.ERROR)
        metric = evaluate.load(str(METRIC_PATH))  # outside the timing
        predictions, references = inputs.predictions, inputs.references

        def evaluate_module():
            return metric.compute(predictions=predictions, references=references, exclude=exclude)

        out["evaluate_module"] = Contender(
            "evaluate_module",
            "evaluate.load(coreb_metric).compute(rows, exclude=...)",
            evaluate_module,
            "rows built outside the timing; one-shot call, no Arrow round trip",
        )

    if "evaluate_add_batch" in names:
        import evaluate

        logging.getLogger("evaluate").setLevel(logging.ERROR)
        stored = evaluate.load(str(METRIC_PATH))
        predictions, references = inputs.predictions, inputs.references
        step = max(1, -(-len(predictions) // 10))

        def evaluate_add_batch():
            for i in range(0, len(predictions), step):
                stored.add_batch(
                    predictions=predictions[i : i + step], references=references[i : i + step]
                )
            return stored.compute(exclude=exclude)

        out["evaluate_add_batch"] = Contender(
            "evaluate_add_batch",
            "coreb_metric add_batch x 10, then compute(exclude=...)",
            evaluate_add_batch,
            "evaluate's Arrow path (cache file written and read back)",
        )

    if "pytrec_eval_rows" in names:
        predictions, references = inputs.predictions, inputs.references

        def pytrec_eval_rows():
            # the least any row-taking scorer does: pytrec_eval's dicts built from the rows
            run_ = {r["query_id"]: dict(zip(r["doc_ids"], r["scores"], strict=False))
                    for r in predictions}  # fmt: skip
            qrels_ = {r["query_id"]: dict(zip(r["doc_ids"], r["relevance"], strict=False))
                      for r in references}  # fmt: skip
            evaluator = pytrec_eval.RelevanceEvaluator(qrels_, TREC_MEASURES, relevance_level=2)
            return evaluator.evaluate(run_)

        out["pytrec_eval_rows"] = Contender(
            "pytrec_eval_rows",
            "the evaluate module's rows -> {query: {doc: value}} dicts, then raw pytrec_eval",
            pytrec_eval_rows,
            "the floor of a scorer taking rows: no checks, exclusions, zeroing or aggregation",
        )

    if "ranx" in names:
        import ranx

        def ranx_eval():
            return ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)

        out["ranx"] = Contender(
            "ranx",
            "Qrels + Run construction + ranx.evaluate (16 metrics)",
            ranx_eval,
            "one untimed warm-up call first (numba JIT); no exclusions",
        )

    if "coreb_runner" in names:
        logging.getLogger("coreb_runner").setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from coreb_runner.benchmark.evaluation import EvaluateRetrieval, mrr

        def official():
            # ignore_identical_ids=True would pop from the caller's run (mutation); the ids of
            # this run never equal a query id anyway.
            scores = EvaluateRetrieval.evaluate(qrels, run, OFFICIAL_K, ignore_identical_ids=False)
            return (*scores, mrr(qrels, run, [10]))

        out["coreb_runner"] = Contender(
            "coreb_runner",
            "official EvaluateRetrieval.evaluate(k=1,3,5,10,100) + mrr(k=10)",
            official,
            "no exclusions (the runner has none)",
        )
    return out


ALL_CONTENDERS = [
    "pytrec_eval_rows",
    "eval_metrics",
    "evaluate_module",
    "evaluate_add_batch",
    "ranx",
    "coreb_runner",
]
# The contenders each target applies to (the "done when": the evaluate module).
TARGETED = ("eval_metrics", "evaluate_module")


# --------------------------------------------------------------------------- reporting


def pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, object]:
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        affinity = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "load_average": load_average(),
        "numpy": np.__version__,
        "pytrec_eval": pkg_version("pytrec-eval-terrier"),
        "ranx": pkg_version("ranx"),
        "numba": pkg_version("numba"),
        "evaluate": pkg_version("evaluate"),
        "datasets": pkg_version("datasets"),
        "pyarrow": pkg_version("pyarrow"),
        "coreb": pkg_version("coreb"),
        "coreb-toolkit": pkg_version("coreb-toolkit"),
    }


def shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: a busy machine explains noisy timings."""
    if not hasattr(os, "getloadavg"):
        return None
    return [round(x, 2) for x in os.getloadavg()]


def peak_rss_mib() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def write_chart(rows: list[dict[str, object]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in rows][::-1]
    ratios = [r["ratio"] for r in rows][::-1]
    colours = []
    for r in rows[::-1]:
        if r["name"] == BASELINE:
            colours.append("#888888")
        elif r["name"] in TARGETED:
            colours.append("#2a9d8f" if r["ratio"] <= TARGET_RATIO else "#e76f51")
        else:
            colours.append("#457b9d")
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(rows) + 1.6))
    bars = ax.barh(names, ratios, color=colours)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.axvline(TARGET_RATIO, color="#e76f51", linestyle="--", linewidth=0.8)
    ax.text(TARGET_RATIO, len(rows) - 0.45, f" target {TARGET_RATIO}x", color="#e76f51", va="top")
    if max(ratios) / max(min(ratios), 1e-9) > 30:
        ax.set_xscale("log")
    for bar, ratio in zip(bars, ratios, strict=True):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {ratio:.2f}x", va="center")
    ax.set_xlabel(f"median time / {BASELINE} median (lower is faster)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(right=max(ratios) * (3 if ax.get_xscale() == "log" else 1.2))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def headline(name: str, result: object) -> dict[str, object]:
    """A few values of a contender's output, for a sanity look (not a correctness check)."""
    try:
        if name in ("eval_metrics", "evaluate_module", "evaluate_add_batch"):
            return {k: result[k] for k in ("ndcg_at_10", "recall_at_100", "mrr_at_10", "n_queries")}
        if name == "ranx":
            return {k: float(result[k]) for k in ("ndcg@10", "recall@100", "mrr@10")}
        if name == "coreb_runner":
            ndcg, _map, recall, _p, mrr_ = result
            return {
                "NDCG@10": ndcg["NDCG@10"],
                "Recall@100": recall["Recall@100"],
                "MRR@10": mrr_["MRR@10"],
            }
        if name in (BASELINE, "pytrec_eval_rows"):
            n = len(result)
            return {
                "ndcg_cut_10 (raw grades)": sum(v["ndcg_cut_10"] for v in result.values()) / n,
                "n_queries": n,
            }
    except (KeyError, TypeError, ValueError) as exc:  # a sanity print must never kill the run
        return {"error": repr(exc)}
    return {}


# --------------------------------------------------------------------------- memory


def _status_kib(field: str) -> int | None:
    """A ``Vm*`` line of /proc/self/status in KiB (``None`` off Linux)."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def measure_child(args: argparse.Namespace, name: str) -> dict[str, object]:
    """In a fresh process: the peak RSS one call of ``name`` adds above the resident size
    before it (inputs built, module loaded, ranx warmed up), in MiB."""
    inputs = make_inputs(args.queries, args.docs, args.corpus, args.seed)
    contender = build_contenders(inputs, [BASELINE, name])[name]
    if name == "ranx":
        contender.call()  # the JIT's memory is not the call's
    gc.collect()
    before = _status_kib("VmRSS")
    try:
        # "5" resets the peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0)
        Path("/proc/self/clear_refs").write_text("5")
        method = "VmHWM after clear_refs"
    except OSError:
        method = "ru_maxrss (not reset: a lower bound)"
    contender.call()
    peak = _status_kib("VmHWM") if method.startswith("VmHWM") else None
    if peak is None or before is None:
        peak_mib, before_mib = peak_rss_mib(), (before or 0) / 1024
    else:
        peak_mib, before_mib = peak / 1024, before / 1024
    return {
        "name": name,
        "rss_before_call_mib": round(before_mib, 1),
        "peak_rss_mib": round(peak_mib, 1),
        "call_peak_above_before_mib": round(max(0.0, peak_mib - before_mib), 1),
        "method": method,
    }


def measure_memory(args: argparse.Namespace, names: list[str]) -> dict[str, dict[str, object]]:
    """Run :func:`measure_child` for each contender in its own subprocess (sequentially)."""
    import subprocess

    out: dict[str, dict[str, object]] = {}
    for name in names:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", name]
        cmd += ["--queries", str(args.queries), "--docs", str(args.docs)]
        cmd += ["--corpus", str(args.corpus), "--seed", str(args.seed)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"memory child for {name!r} failed:\n{proc.stderr[-2000:]}")
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        row = out[name]
        print(
            f"  memory {name}: +{row['call_peak_above_before_mib']:.0f} MiB above "
            f"{row['rss_before_call_mib']:.0f} MiB before the call",
            flush=True,
        )
    return out


# --------------------------------------------------------------------------- main


def profile_one(contender: Contender, top: int, out_dir: Path) -> None:
    gc.collect()
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    contender.call()
    profiler.disable()
    elapsed = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    prof_path = out_dir / f"profile_{contender.name}.prof"
    profiler.dump_stats(prof_path)
    print(f"\n=== cProfile: {contender.name} ({elapsed:.2f} s under the profiler) ===")
    for sort in ("cumulative", "tottime"):
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).strip_dirs().sort_stats(sort).print_stats(top)
        text = buf.getvalue()
        body = text[text.find("   ncalls") :] if "   ncalls" in text else text
        print(f"--- top {top} by {sort} ---")
        print(body.rstrip())
    print(f"(full profile: {shown(prof_path)})")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=5000, help="number of queries (5000)")
    p.add_argument("--docs", type=int, default=1000, help="ranked docs per query (1000)")
    p.add_argument("--corpus", type=int, default=20000, help="corpus size (20000)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats per contender (5)")
    p.add_argument("--seed", type=int, default=20260301)
    p.add_argument(
        "--only",
        nargs="+",
        choices=ALL_CONTENDERS,
        default=ALL_CONTENDERS,
        help="contenders besides the baseline (default: all)",
    )
    p.add_argument(
        "--profile",
        nargs="+",
        choices=[BASELINE, *ALL_CONTENDERS],
        help="cProfile one call of each named contender instead of timing",
    )
    p.add_argument("--top", type=int, default=20, help="rows of each profile listing (20)")
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    p.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the per-contender peak-memory runs (one fresh subprocess each)",
    )
    p.add_argument("--memory-child", choices=[BASELINE, *ALL_CONTENDERS], help=argparse.SUPPRESS)
    p.add_argument(
        "--no-mutation-check",
        action="store_true",
        help="skip the (untimed) check that no contender mutated the shared inputs",
    )
    args = p.parse_args(argv)
    if min(args.queries, args.docs, args.repeats) < 1:
        p.error("--queries, --docs and --repeats must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        logging.disable(logging.WARNING)
        print(json.dumps(measure_child(args, args.memory_child)))
        return 0
    t_script = time.perf_counter()
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))

    t0 = time.perf_counter()
    inputs = make_inputs(args.queries, args.docs, args.corpus, args.seed)
    t_inputs = time.perf_counter() - t0
    print("inputs:  " + ", ".join(f"{k}={v}" for k, v in inputs.stats.items()))
    print(f"         built in {t_inputs:.1f} s (untimed)")

    names = [BASELINE, *(args.profile or args.only)]
    contenders = build_contenders(inputs, names)
    snap = None if args.no_mutation_check else snapshot(inputs)

    if "ranx" in contenders:
        t0 = time.perf_counter()
        contenders["ranx"].call()
        print(f"ranx:    untimed warm-up call (numba JIT) took {time.perf_counter() - t0:.1f} s")
        if snap is not None and not unchanged(inputs, snap):
            raise RuntimeError("ranx mutated the shared inputs")

    if args.profile:
        for name in args.profile:
            profile_one(contenders[name], args.top, args.out_dir)
        return 0

    order = list(contenders)
    print(
        f"timing:  {len(order)} contenders x {args.repeats} repeats, interleaved (rotating order)"
    )
    for rep in range(args.repeats):
        shift = rep % len(order)
        for name in order[shift:] + order[:shift]:
            c = contenders[name]
            gc.collect()
            t0 = time.perf_counter()
            c.result = c.call()
            elapsed = time.perf_counter() - t0
            c.times.append(elapsed)
            if snap is not None and not unchanged(inputs, snap):
                raise RuntimeError(f"contender {name!r} mutated the shared inputs")
        line = "  ".join(f"{n}={contenders[n].times[-1]:.2f}s" for n in order)
        print(f"  repeat {rep + 1}/{args.repeats}: {line}", flush=True)

    memory = {} if args.no_memory else None
    if memory is None:
        print("memory:  one fresh subprocess per contender (inputs rebuilt there)")
        memory = measure_memory(args, order)

    base = statistics.median(contenders[BASELINE].times)
    rows = []
    for name in order:
        c = contenders[name]
        med = statistics.median(c.times)
        rows.append(
            {
                "name": name,
                "description": c.description,
                "note": c.note,
                "median_s": med,
                "min_s": min(c.times),
                "ratio": med / base,
                "ratio_of_min": min(c.times) / min(contenders[BASELINE].times),
                "times_s": c.times,
                "headline": headline(name, c.result),
                "memory": memory.get(name),
            }
        )

    width = max(len(r["name"]) for r in rows)
    print()
    print(
        f"Scoring {args.queries} queries x {args.docs} docs, median of {args.repeats} "
        f"repeat(s); ratio = median / {BASELINE} median"
    )
    print(
        f"{'contender':<{width}}  {'median s':>9}  {'min s':>8}  {'ratio':>7}  "
        f"{'+peak MiB':>9}  note"
    )
    print(f"{'-' * width}  {'-' * 9}  {'-' * 8}  {'-' * 7}  {'-' * 9}  {'-' * 4}")
    for r in rows:
        mem = r["memory"]["call_peak_above_before_mib"] if r["memory"] else float("nan")
        print(
            f"{r['name']:<{width}}  {r['median_s']:>9.3f}  {r['min_s']:>8.3f}  "
            f"{r['ratio']:>6.2f}x  {mem:>9.0f}  {r['note']}"
        )
    if memory:
        print(
            "+peak MiB: peak RSS of one call above the RSS before it, in a fresh process "
            "(inputs built, module loaded)"
        )
    targets = {}
    for r in rows:
        if r["name"] in TARGETED:
            targets[r["name"]] = r["ratio"] <= TARGET_RATIO
            verdict = "PASS" if targets[r["name"]] else "FAIL"
            print(
                f"target: {r['name']} <= {TARGET_RATIO}x raw pytrec_eval: "
                f"{verdict} (ratio {r['ratio']:.2f})"
            )
    target = all(targets.values()) if targets else None
    if "eval_metrics" in contenders:
        for other in ("evaluate_module", "evaluate_add_batch"):
            if other in contenders:
                same = contenders["eval_metrics"].result == contenders[other].result
                print(f"consistency: {other} summary == eval_metrics summary: {same}")
    print("headline values (sanity only; protocols differ):")
    for r in rows:
        vals = ", ".join(
            f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in r["headline"].items()
        )
        print(f"  {r['name']:<{width}}  {vals}")
    if snap is not None:
        print("mutation check: shared inputs unchanged after every call")

    rss = peak_rss_mib()
    total = time.perf_counter() - t_script
    load = load_average()
    print(f"peak RSS: {rss:.0f} MiB (whole process)   script wall time: {total:.1f} s")
    if load is not None:
        print(f"load average at the start / end (1/5/15 min): {info['load_average']} / {load}")

    args.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": "bench_metrics",
        "created_unix": time.time(),
        "machine": info,
        "inputs": inputs.stats,
        "repeats": args.repeats,
        "baseline": BASELINE,
        "target_ratio": TARGET_RATIO,
        "target_pass": target,
        "targets": targets,
        "ranx_warmup": "ranx" in contenders,
        "mutation_checked": snap is not None,
        "contenders": rows,
        "peak_rss_mib": rss,
        "load_average_start": info.get("load_average"),
        "load_average_end": load,
        "script_wall_s": total,
    }
    json_path = args.out_dir / "bench_metrics.json"
    json_path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    png_path = args.out_dir / "bench_metrics.png"
    write_chart(
        rows,
        png_path,
        f"{args.queries} queries x {args.docs} docs, median of {args.repeats}; "
        f"ratio to raw pytrec_eval",
    )
    for path in (json_path, png_path):
        print(f"wrote {shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
