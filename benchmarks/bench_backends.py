"""CPU inference backends for the embedder and the cross-encoder: torch fp32 against ONNX
Runtime and OpenVINO.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_backends.py                  # the demo release
    .venv/bin/python benchmarks/bench_backends.py --dataset DIR --repeats 5
    .venv/bin/python benchmarks/bench_backends.py --skip-reranker
    # the real v2603, long documents: each backend's full evaluation timed once
    .venv/bin/python benchmarks/bench_backends.py --dataset demo/coreb --releases release_v2603 \
        --timing evaluate --skip-reranker

Contenders, on the same texts (every code and text document of the release's corpora), the
bundled MiniLM (all-MiniLM-L6-v2), batch size 64, length-sorted batches as the runner encodes:
torch fp32 (the baseline, 1.00x), onnx fp32, onnx int8, openvino fp32, openvino int8
(:mod:`coreb_toolkit.retrieval.backends`). Repeats are interleaved (every backend once per
round), the median is reported, exports are made before timing.

Quality: the real runner (:func:`coreb_toolkit.benchmark.runner.evaluate_model`) evaluates each
backend on the release into a scratch folder; the Overall nDCG@10 difference against torch is
reported (fp32 must agree to 1e-4). ``--timing evaluate`` times that evaluation instead of the
encoding repeats (one run per backend, sequential; its wall seconds and the runner's retrieval
seconds), for a real release where the repeats would take an hour. The truncation is reported
too: the documents' token counts against the model's max length (MiniLM: 256), and the share of
their tokens the model sees.

Reranker: the bundled ``minilm`` cross-encoder (MiniLM with its seeded, *untrained* one-label
head: the scores are plumbing, so the nDCG@10 difference measures agreement with torch, not
quality) on each backend. pairs/s on ``--rerank-pairs`` (query, code) pairs of mixed length
(``bench_rerank.build_pairs``: HumanEval-X when the shared data is there), repeats interleaved,
scored past the score cache; the largest score difference against torch; and the Overall
nDCG@10 of BM25 reranked (top ``--rerank-top-k``) on ``--rerank-subtasks`` of the release,
against torch's. Results go
to ``benchmarks/results/bench_backends.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CONTENDERS = (("torch", None), ("onnx", None), ("onnx", "int8"), ("openvino", None),
              ("openvino", "int8"))  # fmt: skip


def corpus_texts(dataset: Path, releases: list[str] | None = None) -> list[str]:
    """Every document text of the releases' code and text corpora (parquet files, one per
    release; every release when ``releases`` is None)."""
    import pyarrow.parquet as pq

    texts: list[str] = []
    for name in ("corpus_code", "corpus_text"):
        for path in sorted((dataset / name).glob("*.parquet")):
            if releases is not None and path.stem not in releases:
                continue
            texts += pq.read_table(path, columns=["text"]).column("text").to_pylist()
    if not texts:
        raise ValueError(f"{dataset}: no corpus_code/corpus_text parquet files")
    return texts


def truncation(texts: list[str], retriever) -> dict:
    """How much of the documents the model sees: tokens per document against its max length."""
    model = retriever.model
    limit = retriever.max_length or model.max_seq_length
    lengths = sorted(len(ids) for ids in model.tokenizer(texts, verbose=False)["input_ids"])
    return {
        "max_length": limit,
        "mean_tokens": sum(lengths) / len(lengths),
        "median_tokens": lengths[len(lengths) // 2],
        "truncated_documents": sum(n > limit for n in lengths),
        "tokens_seen_share": sum(min(n, limit) for n in lengths) / sum(lengths),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset",
        type=Path,
        default=REPO_ROOT / "demo" / "coreb",
        help="a CoREB build (default: the one `make demo` writes)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rerank-pairs", type=int, default=1000)
    parser.add_argument("--rerank-top-k", type=int, default=32)
    parser.add_argument(
        "--rerank-subtasks",
        default="t2c_full_retro_any,c2t_full_retro_any",
        help="the subtasks whose reranked nDCG@10 is compared (comma-separated; every pair of "
        "every subtask on 5 backends runs for an hour on 2 cores)",
    )
    parser.add_argument("--releases", nargs="+", default=None,
                        help="the releases of --dataset to evaluate (default: all)")  # fmt: skip
    parser.add_argument("--timing", choices=("encode", "evaluate"), default="encode",
                        help="encode: interleaved repeats of encoding every corpus document, past "
                        "the cache; evaluate: the quality run itself timed, one per backend "
                        "(wall and the runner's retrieval seconds: for a real release, where "
                        "repeats would take an hour) (default: %(default)s)")  # fmt: skip
    parser.add_argument("--skip-reranker", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_backends.json")
    args = parser.parse_args(argv)

    from coreb_toolkit.benchmark.results import read_results
    from coreb_toolkit.benchmark.runner import evaluate_model
    from coreb_toolkit.retrieval.backends import quantization_config
    from coreb_toolkit.retrieval.dense import DenseRetriever
    from coreb_toolkit.retrieval.registry import resolve_model

    texts = corpus_texts(args.dataset, args.releases)
    path, _ = resolve_model("minilm")
    scratch = Path(tempfile.mkdtemp(prefix="bench-backends-"))
    retrievers = {
        (b, q): DenseRetriever(
            path, backend=b, quantize=q, cache_dir=scratch / "cache", progress=False, batch_size=64
        )
        for b, q in CONTENDERS
    }
    for r in retrievers.values():
        _ = r.exported  # export (or load) before any timing
        r._encode(texts[:8], "", "warm-up")
    seconds: dict[tuple[str, str | None], list[float]] = {c: [] for c in CONTENDERS}
    for _ in range(args.repeats if args.timing == "encode" else 0):
        for c, r in retrievers.items():
            start = time.perf_counter()
            # _encode: the encoder itself, past the embedding cache that would answer a repeat
            r._encode(texts, "", "corpus")
            seconds[c].append(time.perf_counter() - start)

    ndcg: dict[tuple[str, str | None], float] = {}
    retrieval_s: dict[tuple[str, str | None], float] = {}
    for b, q in CONTENDERS:
        out = scratch / f"runs-{b}-{q or 'fp32'}"
        start = time.perf_counter()
        evaluate_model(str(args.dataset), "minilm", out, backend=b, quantize=q,
                       cache_dir=scratch / "cache", progress=False,
                       releases=args.releases, plots=False)  # fmt: skip
        if args.timing == "evaluate":
            seconds[(b, q)].append(time.perf_counter() - start)
        per_release = [read_results(f) for f in sorted(out.glob("*/*/results.json"))]
        overall = [next(r["ndcg_at_10"] for r in res.rows if r["level"] == "overall")
                   for res in per_release]  # fmt: skip
        ndcg[(b, q)] = sum(overall) / len(overall)  # the mean over the releases evaluated
        retrieval_s[(b, q)] = sum(res.retrieval_seconds for res in per_release)

    reranker = None if args.skip_reranker else bench_reranker(args, scratch)
    base = statistics.median(seconds[("torch", None)])
    report = []
    for b, q in CONTENDERS:
        median = statistics.median(seconds[(b, q)])
        report.append({
            "backend": b,
            "quantize": q,
            "quantization": quantization_config(b, q),
            "median_seconds": round(median, 4),
            "docs_per_second": round(len(texts) / median, 1) if args.timing == "encode" else None,
            "speedup_vs_torch": round(base / median, 3),
            "retrieval_seconds": retrieval_s[(b, q)],
            "overall_ndcg_at_10": ndcg[(b, q)],
            "ndcg_at_10_diff_vs_torch": ndcg[(b, q)] - ndcg[("torch", None)],
        })  # fmt: skip
    import torch

    body = {
        "benchmark": "bench_backends",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "dataset": str(args.dataset),
        "releases": args.releases or "all",
        "documents": len(texts),
        "timing": args.timing,
        "repeats": args.repeats if args.timing == "encode" else 1,
        "truncation": truncation(texts, retrievers[("torch", None)]),
        "torch_threads": torch.get_num_threads(),
        "model": "sentence-transformers/all-MiniLM-L6-v2 (bundled minilm)",
        "results": report,
        "reranker": reranker,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2) + "\n")
    cut = body["truncation"]
    print(f"{len(texts):,} documents, {cut['mean_tokens']:.0f} tokens on average (median "
          f"{cut['median_tokens']}); at max length {cut['max_length']}, "
          f"{cut['truncated_documents']:,} are truncated and the model sees "
          f"{cut['tokens_seen_share']:.0%} of their tokens")  # fmt: skip
    what = "docs/s" if args.timing == "encode" else "evaluate s"
    print(f"| backend | quantize | {what} | vs torch | retrieval s | Overall nDCG@10 | diff |")
    print("|---|---|---|---|---|---|---|")
    for r in report:
        speed = r["docs_per_second"] if args.timing == "encode" else f"{r['median_seconds']:.1f}"
        print(f"| {r['backend']} | {r['quantize'] or 'fp32'} | {speed} | "
              f"{r['speedup_vs_torch']:.2f}x | {r['retrieval_seconds']:.1f} | "
              f"{r['overall_ndcg_at_10']:.4f} | "
              f"{r['ndcg_at_10_diff_vs_torch']:+.5f} |")  # fmt: skip
    if reranker is not None:
        print(f"\nreranker: {reranker['model']}, {reranker['pairs']} pairs")
        print(
            "| backend | quantize | pairs/s | vs torch | max score diff | reranked Overall "
            "nDCG@10 | diff vs torch |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in reranker["results"]:
            cells = [
                r["backend"],
                r["quantize"] or "fp32",
                r["pairs_per_second"],
                f"{r['speedup_vs_torch']:.2f}x",
                f"{r['max_score_diff_vs_torch']:.2e}",
                f"{r['overall_ndcg_at_10']:.4f}",
                f"{r['ndcg_at_10_diff_vs_torch']:+.5f}",
            ]
            print("| " + " | ".join(map(str, cells)) + " |")
    print(f"written to {args.out}")
    return 0


def bench_reranker(args: argparse.Namespace, scratch: Path) -> dict:
    """pairs/s, score and nDCG@10 agreement of the cross-encoder on every backend."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_rerank import build_pairs

    from coreb_toolkit.benchmark.results import read_results
    from coreb_toolkit.benchmark.runner import evaluate_model
    from coreb_toolkit.retrieval.backends import quantization_config
    from reranker.cross_encoder import CrossEncoderReranker
    from reranker.registry import load_reranker

    pairs = build_pairs(args.rerank_pairs)
    bundled = load_reranker("minilm", device="cpu")  # the seeded untrained head, once
    rerankers = {}
    for b, q in CONTENDERS:
        rr = CrossEncoderReranker(bundled.model, name="minilm", inference_backend=b, quantize=q,
                                  cache_dir=scratch / f"rerank-{b}-{q or 'fp32'}")  # fmt: skip
        rr.untrained_head = True
        rr._score_batch(pairs[:8], None)  # export (or load) and warm up before any timing
        rerankers[(b, q)] = rr
    seconds: dict[tuple[str, str | None], list[float]] = {c: [] for c in CONTENDERS}
    scores: dict[tuple[str, str | None], list[float]] = {}
    for _ in range(args.repeats):
        for c, rr in rerankers.items():
            start = time.perf_counter()
            # _score_batch: the model itself, past the score cache that would answer a repeat
            scores[c] = rr._score_batch(pairs, None)
            seconds[c].append(time.perf_counter() - start)
    ndcg = {}
    for (b, q), rr in rerankers.items():
        out = scratch / f"rerank-runs-{b}-{q or 'fp32'}"
        evaluate_model(str(args.dataset), "bm25", out, reranker=rr, rerank_top_k=args.rerank_top_k,
                       top_k=100, plots=False, progress=False,
                       subtasks=args.rerank_subtasks.split(","))  # fmt: skip
        (results_json,) = out.glob("*+*/*/results.json")
        rows = read_results(results_json).rows
        ndcg[(b, q)] = next(r["ndcg_at_10"] for r in rows if r["level"] == "overall")
    base, torch_scores = statistics.median(seconds[("torch", None)]), scores[("torch", None)]
    results = []
    for c in CONTENDERS:
        median = statistics.median(seconds[c])
        diff = max(abs(a - b) for a, b in zip(scores[c], torch_scores, strict=True))
        results.append({
            "backend": c[0], "quantize": c[1], "quantization": quantization_config(*c),
            "median_seconds": round(median, 4), "pairs_per_second": round(len(pairs) / median, 1),
            "speedup_vs_torch": round(base / median, 3), "max_score_diff_vs_torch": diff,
            "overall_ndcg_at_10": ndcg[c],
            "ndcg_at_10_diff_vs_torch": ndcg[c] - ndcg[("torch", None)],
        })  # fmt: skip
    return {
        "model": "bundled minilm cross-encoder (all-MiniLM-L6-v2 + seeded untrained head)",
        "pairs": len(pairs), "first_stage": "bm25", "rerank_top_k": args.rerank_top_k,
        "rerank_subtasks": args.rerank_subtasks.split(","),
        "max_length": rerankers[("torch", None)].max_length, "results": results,
    }  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
