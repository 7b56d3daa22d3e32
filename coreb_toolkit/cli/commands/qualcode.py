"""``coreb qualcode build``: the QualCode / MC-QualCode Hub folder from CodeNet-style data."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAME = "qualcode"
HELP = "build QualCode and MC-QualCode (quality-aware reranking) from judged CodeNet submissions"
DESCRIPTION = """\
QualCode asks whether a reranker prefers fast, memory-efficient and maintainable code among
correct solutions (SynH-Rank §3). `coreb qualcode build` reads CodeNet-style problems and
accepted submissions with judge CPU time and memory, counts code smells with a static analyser,
and writes a Hub folder (Parquet + dataset card) with the configs qualcode_speed,
qualcode_memory, qualcode_maintainability (pairs + the 1+99 retrieval task), mc_1cond,
mc_2cond, mc_3cond (MC-QualCode triplets) and qualcode_corpus, plus build_report.json: every
submission or problem not used, with the reason.

A --source is any of: a Project CodeNet root (metadata/pNNNNN.csv, data/pNNNNN/Python/...,
problem_descriptions/), a PIE-style jsonl of submission pairs, a NoFunEval folder or jsonl
(public tests for measured mode), a folder of problem descriptions (HTML) or its tar.gz.

Evaluate a reranker on the result with `coreb evaluate --qualcode DIR --reranker NAME`.

examples:
  coreb qualcode build --source ../shared/data/codenet --out qualcode
  coreb qualcode build --source ../shared/data/codenet --source ../shared/data/nofuneval \\
      --labels measured --repeats 5 --out qualcode_measured --force
  coreb qualcode build --source /data/Project_CodeNet --analyser pylint --seed 1 --out qc"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="<action>")
    sub.required = True
    p = sub.add_parser(
        "build",
        help="write the QualCode Hub folder",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--source",
        action="append",
        required=True,
        metavar="PATH",
        help="CodeNet-style input (repeat for several; see above)",
    )
    p.add_argument("--out", type=Path, default=Path("qualcode"), help="output folder (./qualcode)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (0)")
    p.add_argument(
        "--margin",
        type=float,
        default=2.0,
        help="speed/memory pairs need margin x best < worst (2.0, the paper's)",
    )
    p.add_argument(
        "--analyser",
        default="ruff",
        help="code-smell analyser for maintainability: ruff (default) or pylint",
    )
    p.add_argument(
        "--labels",
        choices=("judge", "measured"),
        default="judge",
        help="speed/memory figures: the judge's reading (paper) or medians of sandboxed "
        "re-runs on public tests (needs bubblewrap and a source with tests)",
    )
    p.add_argument("--repeats", type=int, default=5, help="measured mode: runs per submission")
    p.add_argument(
        "--retrieval-negatives",
        type=int,
        default=99,
        help="distractors per query of the retrieval task, other problems' submissions (99)",
    )
    p.add_argument("--mc-per-k", type=int, default=3000, help="MC triplets per k (3000)")
    p.add_argument(
        "--mc-balance",
        choices=("strict", "quota"),
        default="strict",
        help="strict: the same count from every combination of k conditions (default)",
    )
    p.add_argument(
        "--no-control",
        action="store_true",
        help="MC: do not require equal labels on the conditions not asked for",
    )
    p.add_argument(
        "--template",
        default="Retrieve code that is {conditions}",
        help="instruction template; {conditions} becomes e.g. 'fast and maintainable'",
    )
    p.add_argument("--language", default="Python", help="CodeNet language to read (Python)")
    p.add_argument(
        "--license", default="cdla-permissive-2.0", help="license in the card (CodeNet's)"
    )
    p.add_argument("--json", type=Path, help="also write the build report's summary here")


def run(args: argparse.Namespace) -> int:
    import qualcode_dataset as q

    if args.out.exists() and not args.force:
        raise ValueError(f"{args.out} exists; add --force to replace it")
    for source in args.source:
        if not Path(source).exists():
            raise ValueError(f"--source {source}: no such file or folder")
    options = q.QualcodeOptions(
        seed=args.seed,
        margin=args.margin,
        retrieval_negatives=args.retrieval_negatives,
        mc_per_k=args.mc_per_k,
        mc_balance=args.mc_balance,
        control_unrequested=not args.no_control,
        analyser=args.analyser,
        labels=args.labels,
        repeats=args.repeats,
        template=args.template,
        language=args.language,
    )
    result = q.build(
        args.source, args.out, options=options, overwrite=args.force, license=args.license
    )
    r = result.report
    print(
        f"wrote {args.out}: {r['problems']:,} problems, {r['submissions']:,} submissions; "
        + ", ".join(f"{d} {n:,} pairs" for d, n in r["pairs"].items())
        + "; "
        + ", ".join(f"mc {k} {n:,}" for k, n in r["triplets"].items())
    )
    for k in (1, 2, 3):
        why = r["mc"][f"k={k}"]["why_short"]
        if why:
            print(f"  mc k={k}: {r['mc'][f'k={k}']['reached']:,} of {args.mc_per_k:,}: {why}")
    dropped = sum(n for reasons in r["dropped"].values() for n in reasons.values())
    print(f"  {dropped:,} drops, each with its reason, in {args.out / 'build_report.json'}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    return 0
