"""``coreb submit mteb``: CoREB results as an MTEB submission, validated by mteb itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command

DESCRIPTION = """\
Leaderboard submissions from `coreb evaluate --dataset` results folders.

  coreb submit mteb RESULTS_DIR... --out DIR --model-name ORG/NAME --revision REV

examples:
  coreb evaluate --dataset coreb --model minilm --c2t-canonical-corpus full --out results
  coreb submit mteb results/all-MiniLM-L6-v2/release_v2603 --out mteb_submission \\
      --model-name sentence-transformers/all-MiniLM-L6-v2 --revision main"""

MTEB_DESCRIPTION = """\
Write DIR/results/<org>__<model>/<revision>/<Task>.json (MTEB's TaskResult) and model_meta.json
(MTEB's ModelMeta) with mteb's own classes, for MTEB's CoREB tasks (split test, subset default),
then load them back with mteb's ResultCache, offline and validated; the command fails unless
every file loads with the scores written.

All six tasks come from one `coreb evaluate` folder. The scores are MTEB's protocol,
recomputed from the results' run files: the retrieval tasks from runs/<subtask>.trec pooled per
main task (the qrels are the positives only, as in mteb/coreb-*; queries without a positive are
left out; nothing is excluded), with mteb/excluded/ (the c2c anchor MTEB ranks) and
mteb/full_text/ (the full texts MTEB's C2T ranks) put in; the reranking tasks (MAP@10) from
mteb/reranking/<task>.trec, the first stage's scores of the 17-candidate lists that
`coreb build --mteb` exports. A task whose MTEB figure cannot be derived is not written, and the
output says why: results without those files (older schema versions, --query-sample,
mteb_runs=False), a main task whose subtasks were evaluated in part, and the retrieval tasks
of a reranked result (a pipeline, not one model; its reranking tasks are the reranker's scores
of the lists, which `coreb evaluate --reranker` computes).
DIR/NOTES.md lists what was written and what was not, and why.

The results must record the dataset revision they were scored on (the build's fingerprint, as
`coreb evaluate` writes it) and --dataset must be that build; each run file is checked against
its subtask (no foreign query or document, no query deeper than top_k) before it is scored.
The submission is written into a temporary folder beside DIR and renamed into place: a failure
leaves DIR as it was.

Model metadata comes from the results (parameters, embedding size, max tokens, license,
similarity) and the flags; what neither knows (languages, release date, training data, memory)
is written as null, MTEB's "unknown"."""


@dataclass
class SubmitMtebArguments:
    """``coreb submit mteb RESULTS_DIR... --out DIR``."""

    results: list[Path] = field(
        metadata={
            "positional": True,
            "help": "coreb evaluate folders (<out>/<model>/<release>/) of one model on one "
            "dataset revision",
        }
    )
    out: Path = field(metadata={"help": "the submission folder (results/ is written inside)"})
    model_name: str = field(metadata={"metavar": "ORG/NAME", "help": "the model as MTEB lists it"})
    revision: str = field(
        metadata={
            "help": "the model revision: a commit hash, or a branch / tag name without '/' "
            "(one folder of MTEB's layout; for refs/pr/1 give its commit hash)"
        }
    )
    dataset: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "the coreb build the results were computed on (default: the results' "
            "dataset.source)",
        },
    )
    license: str | None = field(
        default=None, metadata={"help": "the model's license (default: the results' model dict)"}
    )
    open_weights: bool | None = field(
        default=None, metadata={"help": "whether the weights are public (default: unknown)"}
    )
    reference: str | None = field(default=None, metadata={"help": "a URL describing the model"})
    release_date: str | None = field(
        default=None, metadata={"metavar": "YYYY-MM-DD", "help": "the model's release date"}
    )
    force: bool = field(
        default=False, metadata={"help": "replace --out if it holds a previous submission"}
    )

    def __post_init__(self) -> None:
        self.results = [Path(p) for p in self.results]
        self.out = Path(self.out)
        if self.dataset is not None:
            self.dataset = Path(self.dataset)


def mteb(args: SubmitMtebArguments) -> int:
    from model_cards.mteb_results import write_mteb_submission

    sub = write_mteb_submission(
        args.results,
        args.out,
        model_name=args.model_name,
        revision=args.revision,
        dataset=args.dataset,
        overwrite=args.force,
        license=args.license,
        open_weights=args.open_weights,
        reference=args.reference,
        release_date=args.release_date,
    )
    print(f"wrote {sub.model_dir} (validated by mteb's ResultCache, offline):")
    for task, values in sub.scores.items():
        print(f"  {task}: main score {values['main_score']:.6f} over {sub.n_queries[task]} queries")
    if sub.skipped:
        print("not written (no MTEB figure derivable from these runs):")
    for task, why in sub.skipped.items():
        print(f"  {task}: {why}")
    for note in sub.notes:
        print(f"note: {note}")
    return 0


COMMANDS = (
    Command(
        name="submit mteb",
        help="write MTEB's results layout (TaskResult, ModelMeta) from CoREB results, validated",
        description=MTEB_DESCRIPTION,
        arguments=(SubmitMtebArguments,),
        run=mteb,
        mode="`coreb submit mteb`",
    ),
)
