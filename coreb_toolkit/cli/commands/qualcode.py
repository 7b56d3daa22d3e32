"""``coreb qualcode build`` and ``coreb qualcode evaluate``: QualCode / MC-QualCode, the
quality-aware reranking sets, from CodeNet-style data, and scorers evaluated on them."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

import qualcode_dataset
from coreb_toolkit.cli.commands._common import ModelArguments
from coreb_toolkit.cli.parsing import Command

DESCRIPTION = """\
QualCode asks whether a reranker prefers fast, memory-efficient and maintainable code among
correct solutions (SynH-Rank §3): `coreb qualcode build` writes the sets, `coreb qualcode
evaluate` scores retrievers and rerankers on them.

examples:
  coreb qualcode build --source ../shared/data/codenet --out qualcode
  coreb qualcode evaluate qualcode --model bm25 minilm --reranker minilm --out results"""

BUILD_DESCRIPTION = """\
Read CodeNet-style problems and accepted submissions with judge CPU time and memory, count code
smells with a static analyser, and write a Hub folder (Parquet + dataset card) with the configs
qualcode_speed, qualcode_memory, qualcode_maintainability (pairs + the 1+99 retrieval task),
mc_1cond, mc_2cond, mc_3cond (MC-QualCode triplets) and qualcode_corpus, plus
build_report.json: every submission or problem not used, with the reason. The options after
--json are those of qualcode_dataset.QualcodeOptions (the paper's values as defaults).

A --source is any of: a Project CodeNet root (metadata/pNNNNN.csv, data/pNNNNN/Python/...,
problem_descriptions/), a PIE-style jsonl of submission pairs, a NoFunEval folder or jsonl
(public tests for measured mode), a folder of problem descriptions (HTML) or its tar.gz.

Evaluate a reranker on the result with `coreb qualcode evaluate DIR --reranker NAME`.

examples:
  coreb qualcode build --source ../shared/data/codenet --out qualcode
  coreb qualcode build --source ../shared/data/codenet --source ../shared/data/nofuneval \\
      --labels measured --repeats 5 --out qualcode_measured --force
  coreb qualcode build --source /data/Project_CodeNet --analyser pylint --seed 1 --out qc
  coreb qualcode build --source ../shared/data/codenet --source ../shared/data/nofuneval \\
      --exclude-problems-from lists/problem_split.json --out qualcode_heldout"""

EVALUATE_DESCRIPTION = """\
Score a QualCode folder written by `coreb qualcode build`: each --model (bm25, an embedder) and
the --reranker score every pair, retrieval candidate and MC triplet; QPA per dimension,
MRR@10/nDCG@10 of the 1+99 retrieval task, MCA per condition count (SynH-Rank §3). Ties count
as losses. Results go to OUT/<scorer>/qualcode/ (results.json, scores.jsonl, summary.md, the
plot), with several scorers a comparison to OUT/comparison/qualcode/.

examples:
  coreb qualcode evaluate qualcode --model bm25 minilm --out results
  coreb qualcode evaluate qualcode --reranker minilm --qualcode-tasks pairs mc --out results"""

TASKS = ("pairs", "retrieval", "mc")
EVALUATE_EXAMPLE = "coreb qualcode evaluate demo/qualcode --model bm25 --out demo/results"


def _flatten(values: list) -> list[str]:
    # --source a --source b (append) gives [[a], [b]], --source a b gives [[a, b]], YAML [a, b]
    return [str(v) for item in values for v in (item if isinstance(item, list) else [item])]


@dataclass
class QualcodeBuildArguments:
    """``coreb qualcode build``: inputs and outputs; the construction's rules are the
    :class:`qualcode_dataset.QualcodeOptions` that come with it."""

    source: list[str] = field(
        metadata={
            "action": "append",
            "metavar": "PATH",
            "help": "CodeNet-style input (repeat for several; see above)",
        }
    )
    out: Path = field(default=Path("qualcode"), metadata={"help": "output folder"})
    force: bool = field(default=False, metadata={"help": "replace --out if it exists"})
    license: str = field(default="cdla-permissive-2.0", metadata={"help": "license in the card"})
    json: Path | None = field(
        default=None, metadata={"help": "also write the build report's summary here"}
    )

    def __post_init__(self) -> None:
        self.source = _flatten(self.source)
        self.out = Path(self.out)
        for source in self.source:
            if not Path(source).exists():
                raise ValueError(f"--source {source}: no such file or folder")
        if self.out.exists() and not self.force:
            raise ValueError(f"{self.out} exists; add --force to replace it")


def no_control(parser: argparse.ArgumentParser) -> None:
    """``--no-control``: today's spelling of ``--no-control-unrequested``."""
    parser.add_argument(
        "--no-control",
        dest="control_unrequested",
        action="store_false",
        default=argparse.SUPPRESS,
        help="MC: do not require equal labels on the conditions not asked for "
        "(= --no-control-unrequested)",
    )


def build(args: QualcodeBuildArguments, options: qualcode_dataset.QualcodeOptions) -> int:
    result = qualcode_dataset.build(
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
            print(f"  mc k={k}: {r['mc'][f'k={k}']['reached']:,} of {options.mc_per_k:,}: {why}")
    ex = r.get("exclusion")
    if ex:
        print(
            f"  {ex['problems_excluded']:,} training problems left out "
            f"({ex['submissions_excluded']:,} submissions; problem split seed {ex['seed']}, "
            f"{ex['file']})"
        )
    dropped = sum(n for reasons in r["dropped"].values() for n in reasons.values())
    print(f"  {dropped:,} drops, each with its reason, in {args.out / 'build_report.json'}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n", encoding="utf-8")
    return 0


@dataclass
class QualcodeEvaluateArguments(ModelArguments):
    """``coreb qualcode evaluate DIR``: the scorers (--model, --reranker) and where to write."""

    qualcode: str | None = field(
        default=None,
        metadata={"positional": True, "metavar": "DIR", "help": "a `coreb qualcode build` folder"},
    )
    qualcode_tasks: list[str] | None = field(
        default=None,
        metadata={
            "choices": TASKS,
            "metavar": "TASK",
            "help": "which tasks to score, of pairs (QPA), retrieval (1+99: a hundred scores per "
            "pair, the slow one for a reranker on CPU) and mc (MCA); default all",
        },
    )

    def __post_init__(self) -> None:
        if self.qualcode is None:
            raise ValueError(f"give the QualCode folder to score: {EVALUATE_EXAMPLE}")
        if self.out is None:
            raise ValueError(
                "a QualCode evaluation needs --out DIR for results.json, scores.jsonl, "
                f"summary.md and the plot, e.g.: {EVALUATE_EXAMPLE}"
            )
        super().__post_init__()
        if self.model is None:  # bm25, unless only a reranker is asked for
            self.model = [] if self.reranker is not None else ["bm25"]


def evaluate(args: QualcodeEvaluateArguments) -> int:
    """Every --model and the --reranker as scorers of QualCode pairs, the 1+99 retrieval task
    and MC-QualCode triplets."""
    from coreb_toolkit.benchmark.qualcode_eval import (
        RerankerScorer,
        evaluate_qualcode,
        load_qualcode,
        make_scorer,
        plot_qualcode,
        summary_table,
    )

    tasks = set(args.qualcode_tasks or TASKS)
    args.check_retriever_options()
    data = load_qualcode(args.qualcode)
    reranker = args.load_reranker()
    scored = {"tasks": tasks, "out_dir": args.out}
    everything = []
    for model in args.model:
        scorer = make_scorer(model, data, **args.retriever_options(model))
        everything.append(evaluate_qualcode(data, scorer, **scored))
    if reranker is not None:
        everything.append(evaluate_qualcode(data, RerankerScorer(reranker), **scored))
    table = summary_table(everything)
    print(f"\n== QualCode ({args.qualcode}) ==\n{table}")
    if len(everything) > 1:
        target = args.out / "comparison" / "qualcode"
        target.mkdir(parents=True, exist_ok=True)
        (target / "summary.md").write_text(table, encoding="utf-8")
        plot_qualcode(everything, target / "qualcode.png")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2) + "\n", encoding="utf-8")
    print(f"results.json, scores.jsonl, summary.md and the QPA/MCA plot in {args.out}")
    return 0


COMMANDS = (
    Command(
        name="qualcode build",
        help="write the QualCode Hub folder from judged CodeNet submissions",
        description=BUILD_DESCRIPTION,
        arguments=(QualcodeBuildArguments, qualcode_dataset.QualcodeOptions),
        run=build,
        mode="`coreb qualcode build`",
        extra_arguments=no_control,
    ),
    Command(
        name="qualcode evaluate",
        help="score retrievers and rerankers on a QualCode folder (QPA, MCA, 1+99 retrieval)",
        description=EVALUATE_DESCRIPTION,
        arguments=(QualcodeEvaluateArguments,),
        run=evaluate,
        mode="--qualcode DIR (`coreb qualcode evaluate DIR`)",
        refused={
            "--rerank-top-k": "--rerank-top-k has no meaning with --qualcode: every pair is scored"
        },
    ),
)
