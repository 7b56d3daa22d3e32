"""Variants verified per second by ``filter_variants`` and training lists made per second by
``make_lists``, each against the straightforward sequential loop, in one run.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_synh_data.py                 # 40 variants
    .venv/bin/python benchmarks/bench_synh_data.py --n 200 --out benchmarks/results/synh_data.json

Both sides verify the same ``--n`` real variants in one run: accepted CodeNet Python submissions
(PIE) on the problems that have NoFunEval public tests (``../shared/data/codenet`` and
``../shared/data/nofuneval``; ``COREB_SHARED_DATA`` overrides ``../shared/data``). Problems are
taken in id order, ``--per-problem`` submissions each (the fastest and slowest by the judge's
CPU time first), and labelled from the judge's figures so that the claim stage has work: per
problem, the fastest is a "fast" claim and the slowest a slow one, the next two a
"memory-efficient" and a memory-hungry claim (by judge memory), the rest no claim.

* ``filter_variants``: :func:`trainers.quality_data.verify.filter_variants` with the ``tests``
  and ``claim`` stages, ``repeats`` sandbox runs (3): one ``measure`` call for all variants
  (the sandbox's parallel workers, one per core), the claim rules, one analyser call over all.
* the sequential loop: for each variant, one ``measure([that one], repeats=3)`` call and one
  ``analyse({that one})`` call, one after another (same sandbox settings; the analyser object is
  built once, inside the timed part, as ``filter_variants`` builds its own).

Reported: variants per second of each, the ratio, both sides' pass verdicts (they must agree
but for flaky programs), and the filter's drop counts. The machine's load average is recorded:
the figures are wall-clock times.

Lists: every real submission of every problem, labelled by QualCode's rules (judge figures; the
analyser run once, before timing), made into lists by
:func:`trainers.quality_data.lists.make_lists` (variants indexed once by task and dimension)
and by the straightforward loop (for each task and dimension, a scan of all variants for its
highs and lows and of the other tasks' for the irrelevant draw, then ``Dataset.from_list``);
best of ``--lists-repeats`` runs each, and both sides' list counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from coreb_toolkit.quality.measure import default_config, measure  # noqa: E402
from coreb_toolkit.quality.smells import get_analyser  # noqa: E402
from coreb_toolkit.sources import codenet  # noqa: E402
from trainers.quality_data.records import SeedTask, Variant  # noqa: E402
from trainers.quality_data.verify import VerifyOptions, filter_variants  # noqa: E402

SHARED = Path(os.environ.get("COREB_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"
MEMORY_CLAIMS = (("memory", "high"), ("memory", "low"))


def real_variants(n: int, per_problem: int) -> tuple[list[SeedTask], list[Variant]]:
    """``n`` real variants on problems with public tests, labelled from the judge's figures."""
    data = codenet.load([SHARED / "codenet", SHARED / "nofuneval"], progress=False)
    tasks, variants = [], []
    for pid, problem in sorted(data.problems.items()):
        subs = [s for s in data.submissions.get(pid, []) if s.cpu_time_ms is not None]
        if not problem.tests or len(subs) < 2:
            continue
        subs.sort(key=lambda s: (s.cpu_time_ms, s.submission_id))
        chosen = [subs[0], subs[-1], *subs[1:-1]][:per_problem]
        claims: list[tuple[str | None, str | None]] = [("speed", "high"), ("speed", "low")]
        rest = sorted(chosen[2:4], key=lambda s: (s.memory_kb or 0.0, s.submission_id))
        memory = {id(s): c for s, c in zip(rest, MEMORY_CLAIMS, strict=False)}
        tasks.append(SeedTask(pid, problem.statement or "", problem.tests, source="codenet"))
        for k, s in enumerate(chosen):
            dim, level = claims[k] if k < 2 else memory.get(id(s), (None, None))
            variants.append(Variant(
                pid, s.code, "real", dim, level, source_id=s.submission_id,
                judge_cpu_time_ms=s.cpu_time_ms, judge_memory_kb=s.memory_kb,
            ))  # fmt: skip
        if len(variants) >= n:
            break
    variants = variants[:n]
    used = {v.task_id for v in variants}
    return [t for t in tasks if t.task_id in used], variants


def sequential(
    tasks: list[SeedTask], variants: list[Variant], repeats: int, analyser: str
) -> dict[str, Any]:
    """The straightforward loop: one measure call and one analyser call per variant."""
    by_id = {t.task_id: t for t in tasks}
    passed = {}
    t0 = time.perf_counter()
    smells = get_analyser(analyser)
    for i, v in enumerate(variants):
        key = f"v{i}"
        m = measure([(key, v.code, by_id[v.task_id].tests)], repeats=repeats, progress=False)
        smells.analyse({key: v.code})
        passed[key] = m[key].passed
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "per_second": len(variants) / seconds, "passed": passed}


def batched(
    tasks: list[SeedTask], variants: list[Variant], repeats: int, analyser: str
) -> dict[str, Any]:
    """``filter_variants`` with the tests and claim stages."""
    options = VerifyOptions(stages=("tests", "claim"), repeats=repeats, analyser=analyser)
    t0 = time.perf_counter()
    result = filter_variants(tasks, variants, options, progress=False)
    seconds = time.perf_counter() - t0
    failed = {d.item for d in result.drops if d.reason == "fails its tests"}
    return {
        "seconds": seconds,
        "per_second": len(variants) / seconds,
        "passed": {f"v{i}": v.variant_id not in failed for i, v in enumerate(variants)},
        "report": result.report,
    }


def lists_rates(repeats: int) -> dict[str, Any]:
    """Lists per second: ``make_lists`` against the straightforward per-list scan."""
    import datasets

    from coreb_toolkit.builders.qualcode.options import instruction
    from reranker.cross_encoder import join_instruction
    from trainers.quality_data.lists import ListOptions, make_lists
    from trainers.quality_data.real_data import label_real, real_tasks
    from trainers.quality_data.real_data import real_variants as all_real

    data = codenet.load([SHARED / "codenet", SHARED / "nofuneval"], progress=False)
    tasks = real_tasks(data, drops=[])
    labelled, _ = label_real(all_real(data, [t.task_id for t in tasks], drops=[]), margin=2.0)
    options = ListOptions()

    def ours() -> int:
        return len(make_lists(tasks, labelled, options, progress=False).dataset)

    def loop() -> int:
        import random

        rows = []
        for task in tasks:
            for dim in ("speed", "memory", "maintainability"):
                mine = [v for v in labelled if v.task_id == task.task_id and v.dimension == dim]
                highs = [v for v in mine if v.level == "high"][: options.n_high]
                lows = [v for v in mine if v.level == "low"][: options.n_low]
                if not highs or len(lows) < options.min_low:
                    continue
                rng = random.Random(f"{options.seed}:{dim}:{task.task_id}")
                others = [v for v in labelled if v.task_id != task.task_id]
                irrelevant = rng.sample(others, options.n_irrelevant)
                docs = [*highs, *lows, *irrelevant]
                labels = [2] * len(highs) + [1] * len(lows) + [0] * len(irrelevant)
                text = instruction([dim], options.template)
                rows.append({
                    "query_id": f"{dim}/{task.task_id}", "task_id": task.task_id,
                    "dimension": dim, "instruction": text, "statement": task.statement,
                    "query": join_instruction(text, task.statement),
                    "docs": [v.code for v in docs], "labels": labels,
                    "doc_ids": [v.variant_id for v in docs], "origins": [v.origin for v in docs],
                })  # fmt: skip
        return len(datasets.Dataset.from_list(rows))

    out: dict[str, Any] = {"variants": len(labelled), "tasks": len(tasks)}
    for name, fn in (("sequential", loop), ("make_lists", ours)):
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            n = fn()
            best = min(best, time.perf_counter() - t0)
        out[name] = {"lists": n, "seconds": best, "per_second": n / best}
    out["ratio"] = out["make_lists"]["per_second"] / out["sequential"]["per_second"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="variants verified by each side")
    parser.add_argument("--per-problem", type=int, default=4, help="submissions per problem")
    parser.add_argument("--repeats", type=int, default=3, help="sandbox runs per variant")
    parser.add_argument("--analyser", default="ruff", help="the smell analyser")
    parser.add_argument("--lists-repeats", type=int, default=3, help="timed runs of each (best)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_synh_data.json")
    args = parser.parse_args()
    if not (SHARED / "codenet").is_dir() or not (SHARED / "nofuneval").is_dir():
        parser.error(f"needs the real data at {SHARED}/codenet and /nofuneval (COREB_SHARED_DATA)")
    if args.n < 1 or args.per_problem < 2 or args.repeats < 1:
        parser.error("--n and --repeats must be >= 1, --per-problem >= 2")

    tasks, variants = real_variants(args.n, args.per_problem)
    print(f"{len(variants)} variants on {len(tasks)} problems", file=sys.stderr)
    seq = sequential(tasks, variants, args.repeats, args.analyser)
    print(f"sequential loop: {seq['per_second']:.2f} variants/s", file=sys.stderr)
    ours = batched(tasks, variants, args.repeats, args.analyser)
    agree = sum(seq["passed"][k] == ours["passed"][k] for k in seq["passed"])
    results = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "cpus": os.cpu_count(),
        "sandbox_workers": default_config().workers,
        "python": sys.version.split()[0],
        "load_average_end": os.getloadavg(),
        "variants": len(variants),
        "problems": len(tasks),
        "repeats": args.repeats,
        "sequential": {k: seq[k] for k in ("seconds", "per_second")},
        "filter_variants": {k: ours[k] for k in ("seconds", "per_second")},
        "ratio": ours["per_second"] / seq["per_second"],
        "passed": {"sequential": sum(seq["passed"].values()),
                   "filter_variants": sum(ours["passed"].values()), "agree": agree},
        "filter_report": ours["report"],
        "lists": lists_rates(args.lists_repeats),
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")

    print(f"{'':>18} {'seconds':>8} {'variants/s':>10}")
    for name, side in (("sequential loop", seq), ("filter_variants", ours)):
        print(f"{name:>18} {side['seconds']:>8.2f} {side['per_second']:>10.2f}")
    print(f"ratio (filter_variants / sequential): {results['ratio']:.2f}x on {os.cpu_count()} CPUs")
    print(f"pass verdicts agree on {agree}/{len(variants)}; filter drops: "
          f"{json.dumps(ours['report']['drops'])}")  # fmt: skip
    lists = results["lists"]
    for name in ("sequential", "make_lists"):
        side = lists[name]
        print(f"{name:>18} {side['seconds']:>8.3f} {side['per_second']:>10.1f} lists/s "
              f"({side['lists']} lists)")  # fmt: skip
    print(f"ratio (make_lists / sequential): {lists['ratio']:.2f}x over {lists['variants']} "
          f"labelled variants of {lists['tasks']} tasks")  # fmt: skip
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
