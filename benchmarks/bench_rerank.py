"""Reranking throughput (pairs/s) of the bundled rerankers against the straightforward loop.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_rerank.py                  # 2,000 pairs, both models
    .venv/bin/python benchmarks/bench_rerank.py --pairs 200 --models smollm2

Pairs: (HumanEval-X Python prompt, code of a random language) with half the documents the
problem's own solution and half another problem's, plus some test harnesses as long
documents, so lengths are mixed (synthetic code when ``../shared/data/humaneval_x`` is absent).
Contenders, on the same model object, in the same run:

* **smollm2** (generative): :class:`reranker.generative.GenerativeReranker` (length-sorted,
  token-budget batches, last-position logits only) against the Qwen3-Reranker model-card loop
  (https://huggingface.co/Qwen/Qwen3-Reranker-0.6B): fixed batches of ``--baseline-batch``
  pairs in input order, left-padded to the longest, full logits, ``torch.no_grad``.
* **minilm** (cross-encoder): :class:`reranker.cross_encoder.CrossEncoderReranker` against
  ``CrossEncoder.predict`` with default settings.

Reported: pairs/s of each, their ratio, and the largest absolute score difference.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import logging
import random
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
HUMANEVAL_X = REPO_ROOT.parent / "shared" / "data" / "humaneval_x"
LANGUAGES = ("python", "cpp", "java", "go", "js", "rust")
logger = logging.getLogger("bench_rerank")


def build_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` (query, code) pairs of mixed length from HumanEval-X (synthetic if absent)."""
    rng = random.Random(seed)
    if HUMANEVAL_X.is_dir():
        rows = {}
        for lang in LANGUAGES:
            with gzip.open(HUMANEVAL_X / f"humaneval_{lang}.jsonl.gz", "rt") as f:
                rows[lang] = [json.loads(line) for line in f]
        queries = [r["prompt"] for r in rows["python"]]
        n_problems = len(queries)

        def document(i: int) -> str:
            lang = rng.choice(LANGUAGES)
            row = rows[lang][i]
            if rng.random() < 0.15:  # a long document: solution plus its test harness
                return row["prompt"] + row["canonical_solution"] + row["test"]
            return row.get("declaration", "") + row["canonical_solution"]
    else:
        logger.warning("%s absent: synthetic pairs", HUMANEVAL_X)
        n_problems = 164
        queries = [f"Write a function number {i} that " + "does a thing " * (i % 17) for i in
                   range(n_problems)]  # fmt: skip

        def document(i: int) -> str:
            return f"def f{i}(x):\n" + "    x = x + 1\n" * rng.randint(1, 120) + "    return x\n"

    pairs = []
    for _ in range(n):
        i = rng.randrange(n_problems)
        j = i if rng.random() < 0.5 else rng.randrange(n_problems)
        pairs.append((queries[i], document(j)))
    return pairs


def card_loop(rr, pairs, instruction: str, batch: int) -> list[float]:
    """The Qwen3-Reranker model card's loop: fixed batches in input order, pad to longest."""
    import torch

    from reranker.generative import USER_TEMPLATE

    tok = copy.deepcopy(rr.tokenizer)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    room = rr.max_length - len(rr.prefix_ids) - len(rr.suffix_ids)
    scores: list[float] = []
    for start in range(0, len(pairs), batch):
        texts = [
            USER_TEMPLATE.format(instruction=instruction, query=q, document=d)
            for q, d in pairs[start : start + batch]
        ]
        enc = tok(texts, padding=False, truncation="longest_first",
                  return_attention_mask=False, max_length=room)  # fmt: skip
        enc["input_ids"] = [rr.prefix_ids + ids + rr.suffix_ids for ids in enc["input_ids"]]
        inputs = tok.pad(enc, padding=True, return_tensors="pt", max_length=rr.max_length)
        with torch.no_grad():
            logits = rr.model(**inputs).logits[:, -1, :]
            two = torch.stack([logits[:, rr.no_id], logits[:, rr.yes_id]], dim=1)
            scores += torch.nn.functional.log_softmax(two, dim=1)[:, 1].exp().tolist()
    return scores


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_smollm2(pairs, baseline_batch: int) -> dict:
    from reranker.instructions import instruction_for
    from reranker.registry import load_reranker

    rr = load_reranker("smollm2", device="cpu")
    instruction = instruction_for("t2c")
    card_loop(rr, pairs[:2], instruction, 2)  # warm-up
    base, t_base = timed(lambda: card_loop(rr, pairs, instruction, baseline_batch))
    ours, t_ours = timed(lambda: rr.score(pairs, instruction=instruction))
    return summary("smollm2", len(pairs), t_base, t_ours, base, ours,
                   baseline=f"Qwen3-Reranker card loop, batch {baseline_batch}")  # fmt: skip


def bench_minilm(pairs) -> dict:
    from reranker.registry import load_reranker

    rr = load_reranker("minilm", device="cpu")
    rr.model.predict(pairs[:2], show_progress_bar=False)  # warm-up
    base, t_base = timed(lambda: rr.model.predict(pairs, show_progress_bar=False).tolist())
    ours, t_ours = timed(lambda: rr.score(pairs))
    row = summary("minilm", len(pairs), t_base, t_ours, base, ours,
                  baseline="CrossEncoder.predict defaults")  # fmt: skip
    # predict truncates longest-first, the reranker the document only: compare where neither cuts
    n_tok = [len(ids) for ids in rr.tokenizer(pairs, verbose=False)["input_ids"]]
    fit = [i for i, n in enumerate(n_tok) if n <= rr.max_length]
    row["pairs_within_max_length"] = len(fit)
    row["max_abs_score_diff_within_max_length"] = max(abs(base[i] - ours[i]) for i in fit)
    logger.info("within max_length: %d pairs, max abs diff %.2e", len(fit),
                row["max_abs_score_diff_within_max_length"])  # fmt: skip
    return row


def summary(model, n, t_base, t_ours, base, ours, baseline) -> dict:
    diff = max(abs(a - b) for a, b in zip(base, ours, strict=True))
    row = {
        "model": model,
        "pairs": n,
        "baseline": baseline,
        "baseline_pairs_per_s": n / t_base,
        "reranker_pairs_per_s": n / t_ours,
        "speedup": t_base / t_ours,
        "max_abs_score_diff": diff,
    }
    logger.info("%s", json.dumps(row))
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2"])
    parser.add_argument("--baseline-batch", type=int, default=16)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    pairs = build_pairs(args.pairs)
    rows = []
    if "minilm" in args.models:
        rows.append(bench_minilm(pairs))
    if "smollm2" in args.models:
        rows.append(bench_smollm2(pairs, args.baseline_batch))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "bench_rerank.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
