"""``coreb synh-rank data`` and ``coreb synh-rank diversity``: SynH-Rank's training lists
(synthesised or real variants, verified in the sandbox) and the diversity of their candidates.
Training on the lists is ``coreb train synh-rank``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command
from trainers.quality_data.pipeline import SynhDataConfig

DESCRIPTION = """\
SynH-Rank's training data (SynH-Rank §4): `coreb synh-rank data` builds verified quality lists
from real submissions (no LLM) or from a generator; `coreb synh-rank diversity` compares the
candidates of several such folders. Train on a folder with `coreb train synh-rank`."""

DATA_DESCRIPTION = """\
Build SynH-Rank training lists (SynH-Rank §4, §5.4): per task, quality dimension and
high-quality variant, a list of that variant (label 2), 4 low-quality relevant (label 1) and 1
irrelevant (label 0) code; a list the data cannot fill is built short and counted.

The tasks are the training side of a seeded problem split of --sources (CodeNet-style
problems with statements, public tests and accepted submissions); the other side is for
evaluation: build QualCode on it with
  coreb qualcode build --source ... --exclude-problems-from OUTPUT_DIR/problem_split.json
and seed tasks sharing a word 10-gram with any evaluation statement are dropped.

--variants real needs no LLM: the tasks' real submissions, run on their tests in the sandbox and
labelled by QualCode's rules, plus low-quality versions of each high-quality one made by
semantics-preserving program transformations (cryptic names, deep nesting, bare except,
globals, dead code; redundant recomputation; buffered duplicates), each verified by the tests
and by measurement. --variants guideline asks --generator for variants with Table 2's guideline
groups (the paper); --variants plain without them (the ablation). Every response is cached
(re-running resumes). --filter all verifies every variant (tests, the quality claim measured:
a "fast" variant not 2x faster than its slow sibling is dropped; smells), paper keeps the
paper's filter only, none is the "w/o filter" ablation. Every drop is counted with its reason
in OUTPUT_DIR/report.json; variants.jsonl holds every candidate and its fate.

examples:
  coreb synh-rank data --sources ../shared/data/codenet ../shared/data/nofuneval \\
      --output-dir lists --figures judge
  coreb synh-rank data --sources ../shared/data/codenet ../shared/data/nofuneval \\
      --variants guideline --output-dir lists_guideline --diversity \\
      --generator openai:http://localhost:8000/v1#Qwen/Qwen3-Coder-30B-A3B-Instruct
  coreb train synh-rank --train_lists lists --model_name_or_path minilm --output_dir ce"""

DIVERSITY_DESCRIPTION = """\
Mean pairwise syntactic (1 - CodeBLEU) and semantic (1 - embedding cosine) distance between the
unfiltered candidates of each task, for several `coreb synh-rank data` folders, with the paired
test of each against the last one (SynH-Rank Fig. 3: guideline-driven vs plain sampling).
Writes OUT/diversity.json and OUT/diversity.png.

example:
  coreb synh-rank diversity lists_guideline lists_plain --out diversity"""


def data(config: SynhDataConfig) -> int:
    from trainers.quality_data.lists import summary
    from trainers.quality_data.pipeline import build_synh_data

    result = build_synh_data(config)
    r = result.report
    per_dim = ", ".join(f"{d} {n}" for d, n in r["lists_per_dimension"].items())
    print(f"wrote {result.lists} lists ({per_dim}) on {r['tasks_with_a_list']} tasks to "
          f"{result.output_dir} in {r['seconds']:.0f} s")  # fmt: skip
    print(f"  {summary(r)}")
    print(f"  docs per label: {json.dumps(r['docs_per_label'])}; every drop and its reason in "
          f"{result.output_dir / 'report.json'}")  # fmt: skip
    split = result.output_dir / "problem_split.json"
    print(f"  evaluate on the held-out problems: coreb qualcode build --source ... "
          f"--exclude-problems-from {split} --out qualcode_heldout")  # fmt: skip
    return 0


@dataclass
class SynhDiversityArguments:
    """``coreb synh-rank diversity RUN [RUN ...] --out DIR``."""

    runs: list[str] = field(
        default_factory=list,
        metadata={
            "positional": True,
            "nargs": "+",
            "metavar": "RUN",
            "help": "`coreb synh-rank data` folders; the last is the baseline",
        },
    )
    out: Path = field(default=Path("diversity"), metadata={"help": "output folder"})

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("give at least one `coreb synh-rank data` folder")
        for run in self.runs:
            if not (Path(run) / "variants.jsonl").is_file():
                raise ValueError(f"{run}: no variants.jsonl (not a `coreb synh-rank data` folder)")
        self.out = Path(self.out)


def diversity(args: SynhDiversityArguments) -> int:
    from trainers.quality_data.pipeline import compare_runs

    result = compare_runs(args.runs, args.out)
    for name, report in result["groups"].items():
        print(f"{name}: syntactic {report['syntactic']:.4f}, semantic {report['semantic']:.4f} "
              f"({len(report['per_query'])} tasks)")  # fmt: skip
    for name, c in result["comparisons"].items():
        if "syntactic" in c:
            print(f"{name}: syntactic p={c['syntactic']['p_value']:.4g}, semantic "
                  f"p={c['semantic']['p_value']:.4g} over {c['n_queries']} tasks")  # fmt: skip
    print(f"diversity.json and diversity.png in {args.out}")
    return 0


COMMANDS = (
    Command(
        name="synh-rank data",
        help="build SynH-Rank training lists (real or synthesised variants, verified)",
        description=DATA_DESCRIPTION,
        arguments=(SynhDataConfig,),
        run=data,
        mode="`coreb synh-rank data`",
    ),
    Command(
        name="synh-rank diversity",
        help="syntactic and semantic diversity of the candidates of lists folders (Fig. 3)",
        description=DIVERSITY_DESCRIPTION,
        arguments=(SynhDiversityArguments,),
        run=diversity,
        mode="`coreb synh-rank diversity`",
    ),
)
