"""Reranking throughput (pairs/s) of the bundled rerankers against the straightforward loop.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_rerank.py              # minilm 2,000 pairs, smollm2 200
    .venv/bin/python benchmarks/bench_rerank.py --models smollm2 --smollm2-pairs 400
    .venv/bin/python benchmarks/bench_rerank.py --smollm2-order list by-query
    .venv/bin/python benchmarks/bench_rerank.py --models smollm2 --smollm2-order coreb

Pairs: (HumanEval-X Python prompt, code of a random language) with half the documents the
problem's own solution and half another problem's, plus some test harnesses as long
documents, so lengths are mixed (synthetic code when ``../shared/data/humaneval_x`` is absent).
SmolLM2 is ~10x slower per pair than MiniLM on a CPU, so it scores the first
``--smollm2-pairs`` pairs of the same list (``list``: ~1 pair per query), and with
``by-query`` as many pairs taken query by query (~12 per query, the shape ``rank`` scores);
``coreb`` takes them from the real release instead (``../shared/data/coreb/release_v2603``:
T2C queries in order, each with the code of every document its qrels judge, ~5 per query,
code of 446 MiniLM tokens on average).
Contenders, on the same model object, in the same run:

* **minilm** (cross-encoder): :class:`reranker.cross_encoder.CrossEncoderReranker` against
  ``CrossEncoder.predict`` with default settings.
* **smollm2** (generative): :class:`reranker.generative.GenerativeReranker` (length-sorted,
  token-budget batches, last-position logits only, shared prompt heads run once) against the
  Qwen3-Reranker model-card loop (https://huggingface.co/Qwen/Qwen3-Reranker-0.6B): fixed
  batches of ``--baseline-batch`` pairs in input order, left-padded to the longest, full logits,
  ``torch.no_grad``.

Each side runs ``--repeats`` times, interleaved (baseline first on even repeats, the reranker
first on odd ones) so that a load change on a shared machine hits both; the speedup is the
median of the per-repeat ratios, the pairs/s come from the median times. Reported too: the
largest absolute score difference (for minilm also over the pairs within ``max_length``, where
``predict``'s longest-first truncation and the reranker's document-only truncation agree), the
same ratio in CPU time of this process (less sensitive to other jobs on a shared machine) and
the 1-minute load average before and after. The rows of the models measured replace theirs in
``results/bench_rerank.json``; the other rows are kept.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import logging
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
HUMANEVAL_X = REPO_ROOT.parent / "shared" / "data" / "humaneval_x"
COREB_V2603 = REPO_ROOT.parent / "shared" / "data" / "coreb" / "release_v2603"
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


def coreb_pairs(n: int, release: Path = COREB_V2603) -> list[tuple[str, str]]:
    """``n`` (query, code) pairs of the real CoREB v2603, as a reranker meets them: T2C queries
    in the release's order, each with the code of every document its qrels judge (positives and
    hard negatives, in qrels order), query by query."""

    def rows(name: str) -> list[dict]:
        with (release / f"{name}.jsonl").open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    code = {r["code_id"]: r["code"] for r in rows("code_corpus")}
    judged: dict[str, list[str]] = {}
    for r in rows("text2code_qrels"):
        judged.setdefault(r["query_id"], []).append(r["doc_id"])
    pairs: list[tuple[str, str]] = []
    for q in rows("text2code_queries"):
        pairs += [(q["query"], code[d]) for d in judged.get(q["query_id"], ()) if d in code]
        if len(pairs) >= n:
            break
    return pairs[:n]


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


def by_query(pairs: list[tuple[str, str]], n: int) -> list[tuple[str, str]]:
    """The first ``n`` pairs when ``pairs`` are taken query by query (in first-seen order)."""
    first: dict[str, int] = {}
    for i, (query, _) in enumerate(pairs):
        first.setdefault(query, i)
    return sorted(pairs, key=lambda p: first[p[0]])[:n]  # stable: list order within a query


def interleaved(baseline, reranker, repeats: int) -> dict:
    """Time both sides ``repeats`` times, alternating which goes first."""
    times: dict[str, list[float]] = {"baseline": [], "reranker": []}
    cpu: dict[str, list[float]] = {"baseline": [], "reranker": []}
    outputs = {}
    for r in range(repeats):
        sides = [("baseline", baseline), ("reranker", reranker)]
        for side, fn in sides if r % 2 == 0 else reversed(sides):
            t0, c0 = time.perf_counter(), time.process_time()
            outputs[side] = fn()
            times[side].append(time.perf_counter() - t0)
            cpu[side].append(time.process_time() - c0)
            logger.info("  repeat %d %s: %.1f s (%.1f s CPU, load %.2f)", r, side,
                        times[side][-1], cpu[side][-1], os.getloadavg()[0])  # fmt: skip
    return {"times": times, "cpu": cpu, "outputs": outputs}


def bench_smollm2(pairs, baseline_batch: int, repeats: int, label: str) -> dict:
    from reranker.instructions import instruction_for
    from reranker.registry import load_reranker

    rr = load_reranker("smollm2", device="cpu")
    instruction = instruction_for("t2c")
    card_loop(rr, pairs[:2], instruction, 2)  # warm-up
    rr.score(pairs[:2], instruction=instruction)
    load = os.getloadavg()[0]
    run = interleaved(
        lambda: card_loop(rr, pairs, instruction, baseline_batch),
        lambda: rr.score(pairs, instruction=instruction),
        repeats,
    )
    return summary(label, pairs, run, load,
                   baseline=f"Qwen3-Reranker card loop, batch {baseline_batch}")  # fmt: skip


def bench_minilm(pairs, repeats: int) -> dict:
    from reranker.registry import load_reranker

    rr = load_reranker("minilm", device="cpu")
    rr.model.predict(pairs[:2], show_progress_bar=False)  # warm-up
    rr.score(pairs[:2])
    load = os.getloadavg()[0]
    run = interleaved(
        lambda: rr.model.predict(pairs, show_progress_bar=False).tolist(),
        lambda: rr.score(pairs),
        repeats,
    )
    row = summary("minilm", pairs, run, load, baseline="CrossEncoder.predict defaults")
    # predict truncates longest-first, the reranker the document only: compare where neither cuts
    base, ours = run["outputs"]["baseline"], run["outputs"]["reranker"]
    n_tok = [len(ids) for ids in rr.tokenizer(pairs, verbose=False)["input_ids"]]
    fit = [i for i, n in enumerate(n_tok) if n <= rr.max_length]
    row["pairs_within_max_length"] = len(fit)
    row["max_abs_score_diff_within_max_length"] = max(abs(base[i] - ours[i]) for i in fit)
    row["identical_scores"] = row["max_abs_score_diff_within_max_length"] <= 1e-5
    logger.info("within max_length: %d pairs, max abs diff %.2e", len(fit),
                row["max_abs_score_diff_within_max_length"])  # fmt: skip
    return row


def summary(model: str, pairs, run: dict, load_before: float, baseline: str) -> dict:
    import torch

    n = len(pairs)
    t_base, t_ours = run["times"]["baseline"], run["times"]["reranker"]
    base, ours = run["outputs"]["baseline"], run["outputs"]["reranker"]
    diff = max(abs(a - b) for a, b in zip(base, ours, strict=True))
    row = {
        "model": model,
        "pairs": n,
        "distinct_queries": len({q for q, _ in pairs}),
        "baseline": baseline,
        "repeats": len(t_base),
        "baseline_pairs_per_s": n / statistics.median(t_base),
        "reranker_pairs_per_s": n / statistics.median(t_ours),
        "speedup": statistics.median(b / o for b, o in zip(t_base, t_ours, strict=True)),
        "speedups_per_repeat": [b / o for b, o in zip(t_base, t_ours, strict=True)],
        "baseline_seconds": t_base,
        "reranker_seconds": t_ours,
        # CPU time of this process: less sensitive than wall time to other jobs on the machine
        "speedup_cpu_time": statistics.median(
            b / o for b, o in zip(run["cpu"]["baseline"], run["cpu"]["reranker"], strict=True)
        ),
        "baseline_cpu_seconds": run["cpu"]["baseline"],
        "reranker_cpu_seconds": run["cpu"]["reranker"],
        "max_abs_score_diff": diff,
        "identical_scores": diff <= 1e-5,
        "load_avg_1min_before": load_before,
        "load_avg_1min_after": os.getloadavg()[0],
        "torch_threads": torch.get_num_threads(),
    }
    logger.info("%s", json.dumps(row))
    return row


def save(rows: list[dict], out_dir: Path) -> None:
    """Write ``rows`` to ``bench_rerank.json``: they replace the rows of the same models there,
    the others are kept."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / "bench_rerank.json"
    kept = json.loads(out.read_text()) if out.exists() else []
    measured = {row["model"] for row in rows}
    out.write_text(
        json.dumps([r for r in kept if r["model"] not in measured] + rows, indent=2) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="pairs for minilm")
    parser.add_argument("--smollm2-pairs", type=int, default=200, help="pairs for smollm2")
    parser.add_argument("--smollm2-order", nargs="+", default=["list"],
                        choices=["list", "by-query", "coreb"],
                        help="which smollm2 pair sets (coreb: the real v2603's T2C queries with "
                        "their judged code, query by query)")  # fmt: skip
    parser.add_argument("--models", nargs="+", default=["minilm", "smollm2"])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--baseline-batch", type=int, default=16)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # by-query subsets draw from at least the 2,000-pair list (a prefix of any longer one)
    pairs = build_pairs(max(args.pairs, args.smollm2_pairs, 2000))
    rows = []
    if "minilm" in args.models:
        rows.append(bench_minilm(pairs[: args.pairs], args.repeats))
        save(rows, args.out_dir)
    if "smollm2" in args.models:
        for order in args.smollm2_order:
            if order == "coreb" and not COREB_V2603.is_dir():
                raise SystemExit(f"--smollm2-order coreb needs the published release at "
                                 f"{COREB_V2603}")  # fmt: skip
            subset = {
                "list": lambda: pairs[: args.smollm2_pairs],
                "by-query": lambda: by_query(pairs, args.smollm2_pairs),
                "coreb": lambda: coreb_pairs(args.smollm2_pairs),
            }[order]()
            label = {"list": "smollm2", "by-query": "smollm2 (pairs by query)",
                     "coreb": "smollm2 (CoREB v2603 t2c, judged code by query)"}[order]  # fmt: skip
            rows.append(bench_smollm2(subset, args.baseline_batch, args.repeats, label))
            save(rows, args.out_dir)  # after each row: a long run stopped keeps what it measured
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
