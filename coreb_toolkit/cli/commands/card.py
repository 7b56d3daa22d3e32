"""``coreb card model``: a model card (README.md + ``.eval_results/*.yaml``) from results files
and, for a trained checkpoint, its run records (:mod:`model_cards.model_card`). A group, so
that ``coreb card dataset`` can join it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command

DESCRIPTION = """\
Model cards for the Hub: YAML metadata (base_model, library_name, license, datasets, tags,
pipeline_tag), the evaluation results as `model-index` and as `.eval_results/*.yaml` (both built
with huggingface_hub), the training recipe of a checkpoint, intended use, limitations and
citations. Every number is copied from the results files.

examples:
  coreb card model results/BM25/release_v2603 --dataset-id my-org/coreb --out cards/bm25
  coreb card model out/ce/release_v2603 results/ce/qualcode --checkpoint ce \\
      --dataset-id my-org/coreb --qualcode-dataset-id my-org/qualcode --out ce"""

MODEL_DESCRIPTION = """\
Render the model card of one model from its results files (results.json, or the folders
`coreb evaluate` / `coreb qualcode evaluate` wrote them into: <out>/<model>/<release>/,
<out>/<model>/qualcode/) and write README.md plus .eval_results/<benchmark>.yaml into --out.

- All results must be of one model (its name and revision), at most one per dataset and
  release. A reranked result's model is the reranker.
- --checkpoint adds the training recipe from the folder `coreb train reranker` / `coreb train
  synh-rank` wrote (training_config.json, data_report.json, disjointness_report.json,
  validation_metrics.json, run_info.json, training_curves.png); --out is then usually that
  folder, so the card is uploaded with the weights.
- A card never points at a local path: results evaluated on a local dataset folder need the
  Hub id it is published as (--dataset-id for CoREB, --qualcode-dataset-id for QualCode). The
  folder's fingerprint is shown in the card; --dataset-revision gives the Hub commit.
- .eval_results holds one value per task of the benchmark's eval.yaml: nDCG@10 per CoREB subtask
  and release (task id <config>-<release>), QPA per QualCode dimension, MCA per k.
- The model's kind comes from the results: an embedder (a dense first stage or QualCode scorer)
  gets pipeline_tag sentence-similarity and library sentence-transformers; a reranker (a
  reranked result, a QualCode reranker, a --checkpoint) text-ranking (a LoRA checkpoint:
  library peft); BM25 neither (it has no weights to load).
- An existing README.md that `coreb card` did not write is replaced only with --force. Nothing
  outside --out is written or deleted: a symlink below --out (README.md, .eval_results) is
  refused, and of the files an earlier card listed only its own (.eval_results/NAME.yaml) are
  removed. Figures that are not finite or out of range (an nDCG of 1.7) are refused.

examples:
  coreb card model results/all-MiniLM-L6-v2/release_v2603 results/all-MiniLM-L6-v2/qualcode \\
      --dataset-id my-org/coreb --qualcode-dataset-id my-org/qualcode --out cards/minilm
  coreb card model results/BM25+ckpt/release_v2603 --checkpoint ckpt --dataset-id my-org/coreb \\
      --model-id my-org/coreb-reranker-smollm2 --out ckpt
  coreb card model results/BM25/release_v2603/results.json --dataset-id my-org/coreb \\
      --dataset-revision 3f2a... --date 2026-12-02 --out cards/bm25 --force"""


@dataclass
class CardModelArguments:
    """``coreb card model RESULTS... --out DIR``."""

    results: list[str] = field(
        metadata={
            "positional": True,
            "help": "results.json files or the folders holding them (one model)",
        }
    )
    out: Path | None = field(
        default=None, metadata={"help": "folder for README.md and .eval_results/ (required)"}
    )
    checkpoint: Path | None = field(
        default=None, metadata={"help": "the trained checkpoint folder (training recipe)"}
    )
    dataset_id: str | None = field(
        default=None, metadata={"help": "Hub id of the CoREB dataset the results were scored on"}
    )
    qualcode_dataset_id: str | None = field(
        default=None, metadata={"help": "Hub id of the QualCode dataset"}
    )
    dataset_revision: str | None = field(
        default=None, metadata={"help": "Hub commit of the CoREB dataset"}
    )
    model_id: str | None = field(
        default=None,
        metadata={"help": "the Hub repo the card is for (default: the model's name)"},
    )
    base_model: str | None = field(
        default=None, metadata={"help": "Hub id of the base model (default: from the run)"}
    )
    license: str | None = field(
        default=None, metadata={"help": "license (default: the model's, else apache-2.0)"}
    )
    date: str | None = field(
        default=None, metadata={"help": "ISO-8601 date of the evaluation, for .eval_results"}
    )
    source_url: str | None = field(
        default=None, metadata={"help": "link to the evaluation's logs, for .eval_results"}
    )
    source_name: str | None = field(default=None, metadata={"help": "display name of --source-url"})
    force: bool = field(
        default=False, metadata={"help": "replace a README.md that coreb card did not write"}
    )

    def __post_init__(self) -> None:
        self.results = [str(r) for r in self.results or []]
        if not self.results:
            raise ValueError(
                "name at least one results file: coreb card model RESULTS... --out DIR "
                "(RESULTS: results.json or the folder holding it)"
            )
        if self.out is None:
            raise ValueError("--out DIR is required: the folder the card is written into")
        self.out = Path(self.out)
        for path in self.results:
            if not Path(path).exists():
                raise ValueError(f"results {path}: no such file or folder")
        if self.source_name and not self.source_url:
            raise ValueError("--source-name needs --source-url (the link it names)")


def model(args: CardModelArguments) -> int:
    from model_cards.model_card import model_card_info, write_model_card

    info = model_card_info(
        args.results,
        checkpoint=args.checkpoint,
        dataset_id=args.dataset_id,
        qualcode_dataset_id=args.qualcode_dataset_id,
        dataset_revision=args.dataset_revision,
        model_id=args.model_id,
        base_model=args.base_model,
        license=args.license,
        eval_date=args.date,
        source_url=args.source_url,
        source_name=args.source_name,
    )
    out = Path(str(args.out))  # set: __post_init__ refuses a missing --out
    paths = write_model_card(out, info, overwrite=args.force)
    figures = sum(len(e.results.get("rows", [])) for e in info.evaluations)
    print(
        f"wrote the card of {info.model_id} ({info.kind}) to {out}: "
        + ", ".join(str(p.relative_to(out)) for p in paths)
    )
    print(
        f"  {len(info.evaluations)} results file(s) on {', '.join(info.datasets)}"
        + (f"; {figures} CoREB rows" if figures else "")
        + ("; training recipe from " + str(args.checkpoint) if args.checkpoint else "")
    )
    if info.untrained_head:
        print("  warning: the model's scoring head is untrained (the card says so)")
    return 0


COMMANDS = (
    Command(
        name="card model",
        help="a model card (README.md + .eval_results/*.yaml) from results files",
        description=MODEL_DESCRIPTION,
        arguments=(CardModelArguments,),
        run=model,
        mode="`coreb card model`",
    ),
)
