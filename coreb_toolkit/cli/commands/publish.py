"""``coreb publish CKPT --repo ORG/NAME --dataset DATASET``: from a trained reranker checkpoint
to a Hub model in one command: evaluate (first stage + rerank), write the card, push."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.benchmark.rerank import DEFAULT_RERANK_TOP_K
from coreb_toolkit.cli.parsing import Command
from coreb_toolkit.hub_access import is_hub_id

RESULTS_DIR = "evaluation"

DESCRIPTION = f"""\
Publish a reranker trained by `coreb train reranker` (its output folder or a checkpoint-N
folder: the LoRA adapter, coreb_reranker.json and the run records) to the Hugging Face Hub:

1. evaluate: `coreb evaluate` of the CoREB --dataset, the first stage (--model, default bm25)
   reranked by the checkpoint on its top --rerank-top-k ({DEFAULT_RERANK_TOP_K}), on the releases
   the run was checked against (its eval_sources; --releases to choose), every query. The
   results go into CKPT/{RESULTS_DIR}/ and travel with the model (--results uses existing
   results files instead);
2. card: README.md and .eval_results/ in CKPT, as `coreb card model RESULTS --checkpoint CKPT`
   writes them: the results beside the first stage, the training recipe, the data, yes/no and
   disjointness reports, where the gain stands against the paper's rerankers, and "How to use"
   with the exact prompt, the score formula and a snippet that loads --repo;
3. push: CKPT in one commit to --repo (as `coreb push model`: checkpoint-*/ folders, caches and
   secrets left out), or --dry-run DIR to write the files a push would send.

A results file evaluated on a query sample (--query-sample) is refused: a card publishes the
benchmark's figures. The dataset needs its Hub id in the card (--dataset-id) unless --dataset is
one. Log in with `hf auth login` or HF_TOKEN; HF_ENDPOINT points at another Hub.

examples:
  coreb publish runs/coreb-reranker --repo my-org/coreb-reranker --dataset coreb \\
      --dataset-id my-org/coreb --dry-run /tmp/upload
  coreb publish runs/coreb-reranker --repo my-org/coreb-reranker --dataset hq-bench/coreb \\
      --model bm25 --rerank-top-k 128 --private
  coreb publish runs/coreb-reranker --repo my-org/coreb-reranker --dataset coreb \\
      --dataset-id my-org/coreb --results runs/coreb-reranker/{RESULTS_DIR}"""


@dataclass
class PublishArguments:
    """``coreb publish CKPT --repo ORG/NAME --dataset DATASET``."""

    checkpoint: Path = field(
        metadata={
            "positional": True,
            "help": "the trained checkpoint folder (coreb train reranker)",
        }
    )
    repo: str | None = field(
        default=None, metadata={"metavar": "ID", "help": "the Hub repo, namespace/name (required)"}
    )
    dataset: str | None = field(
        default=None,
        metadata={"metavar": "DATASET", "help": "the CoREB dataset to evaluate on (required)"},
    )
    dataset_id: str | None = field(
        default=None,
        metadata={"help": "Hub id of the dataset for the card (default: --dataset if a Hub id)"},
    )
    dataset_revision: str | None = field(
        default=None, metadata={"help": "Hub commit of the dataset, for the card"}
    )
    model: str = field(default="bm25", metadata={"help": "the first stage the checkpoint reranks"})
    releases: list[str] | None = field(
        default=None, metadata={"help": "releases to evaluate (default: the run's eval_sources)"}
    )
    rerank_top_k: int = field(
        default=DEFAULT_RERANK_TOP_K, metadata={"metavar": "K", "help": "documents reranked"}
    )
    results: list[str] | None = field(
        default=None,
        metadata={"help": "existing results files / folders of this checkpoint (no evaluation)"},
    )
    cache_dir: Path | None = field(
        default=None, metadata={"metavar": "DIR", "help": "cache of embeddings and scores"}
    )
    license: str | None = field(default=None, metadata={"help": "license (default: apache-2.0)"})
    private: bool = field(default=False, metadata={"help": "create the repo private"})
    create_pr: bool = field(default=False, metadata={"help": "open the commit as a pull request"})
    dry_run: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "write the files a push would send to DIR; send nothing",
        },
    )
    force: bool = field(
        default=False,
        metadata={"help": "replace a README.md coreb did not write / an earlier --dry-run DIR"},
    )

    def __post_init__(self) -> None:
        self.checkpoint = Path(self.checkpoint)
        if not self.repo:
            raise ValueError("--repo NAMESPACE/NAME is required: the card's snippet loads it")
        if not self.dataset and not self.results:
            raise ValueError("--dataset DATASET is required (or --results of an evaluation)")
        if self.rerank_top_k < 1:
            raise ValueError(f"--rerank-top-k must be at least 1, got {self.rerank_top_k}")


def _eval_releases(checkpoint: Path) -> list[str]:
    """The releases the run was checked against (its ``eval_sources``, as the card reads the
    run records: :func:`model_cards.model_card_checkpoint.read_checkpoint`)."""
    from model_cards.model_card_checkpoint import read_checkpoint
    from trainers.decontamination import EvalSource

    sources = read_checkpoint(checkpoint).config.get("eval_sources") or []
    return sorted({r for r in (EvalSource.parse(s).release for s in sources) if r})


def _hub_id(name: str) -> bool:
    """An ``owner/name`` Hub id that is no local path."""
    return is_hub_id(name) and not Path(name).exists()


def _evaluate(args: PublishArguments) -> None:
    """Run the two stages into ``CKPT/evaluation``."""
    from coreb_toolkit.benchmark.runner import evaluate_model

    releases = args.releases or _eval_releases(args.checkpoint)
    if not releases:
        raise ValueError(
            f"{args.checkpoint}: its training_config.json names no eval_sources release; give "
            "--releases (the releases the model was not trained on)"
        )
    out = args.checkpoint / RESULTS_DIR
    # the results name the model by its Hub id, not the local folder it was evaluated from
    options: dict[str, str] = {"name": str(args.repo)}
    if args.cache_dir:
        options["cache_dir"] = str(args.cache_dir)
    print(f"evaluating {args.model} + {args.checkpoint} on {', '.join(releases)} -> {out}")
    evaluate_model(
        str(args.dataset), args.model, out, releases=releases, reranker=str(args.checkpoint),
        rerank_top_k=args.rerank_top_k, reranker_options=options,
    )  # fmt: skip


def _reranked_folders(out: Path) -> list[str]:
    return sorted(str(p.parent) for p in out.glob("*+*/*/results.json"))


def run(args: PublishArguments) -> int:
    from model_cards.hub import dry_run, push_folder
    from model_cards.model_card import model_card_info, write_model_card
    from reranker.registry import checkpoint_base

    if checkpoint_base(args.checkpoint) is None:
        raise ValueError(
            f"{args.checkpoint}: no adapter checkpoint there (adapter_config.json); give the "
            "output folder of `coreb train reranker` or one of its checkpoint-N folders"
        )
    if args.results:
        results = [str(r) for r in args.results]
    else:
        _evaluate(args)
        results = _reranked_folders(args.checkpoint / RESULTS_DIR)
    dataset_id = args.dataset_id or (
        args.dataset if args.dataset and _hub_id(args.dataset) else None
    )
    info = model_card_info(
        results, checkpoint=args.checkpoint, dataset_id=dataset_id,
        dataset_revision=args.dataset_revision, model_id=args.repo, license=args.license,
    )  # fmt: skip
    written = write_model_card(args.checkpoint, info, overwrite=args.force)
    print(f"wrote the card of {info.model_id} to {args.checkpoint} ({len(written)} file(s))")
    if args.dry_run is not None:
        files = dry_run(args.checkpoint, args.dry_run, "model", overwrite=args.force)
        print(f"dry run: {len(files)} file(s) a push would upload, written to {args.dry_run}")
        print(f"nothing was sent to {args.repo}")
        return 0
    message = f"Publish {args.checkpoint.name} with coreb publish"
    pushed = push_folder(args.checkpoint, args.repo, repo_type="model", private=args.private,
                         create_pr=args.create_pr, commit_message=message)  # fmt: skip
    print(f"pushed {args.checkpoint} to {pushed.repo_url}; commit {pushed.commit_url}")
    print(f"load it back: load_reranker({args.repo!r}) (the card's How to use)")
    return 0


COMMANDS = (
    Command(
        name="publish",
        help="evaluate a trained reranker checkpoint, write its card and push it to the Hub",
        description=DESCRIPTION,
        arguments=(PublishArguments,),
        run=run,
        mode="`coreb publish CKPT --repo ID --dataset DATASET`",
    ),
)
