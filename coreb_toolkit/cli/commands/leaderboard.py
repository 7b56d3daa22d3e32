"""``coreb leaderboard submit | validate | build | serve``: the CoREB leaderboard."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command

DESCRIPTION = """\
The CoREB leaderboard over every subtask of one dataset revision: `submit` turns a `coreb
evaluate` folder into a submission, `validate` recomputes every number of submissions from
their runs (coreb_metric), `build` writes the validated table, the parameter-efficiency plots
and a Space folder, `serve` runs the page locally.

examples:
  coreb leaderboard submit demo/results/BM25/release_vhumaneval --out demo/board/bm25
  coreb leaderboard validate demo/board/bm25 --dataset demo/coreb
  coreb leaderboard build demo/board --dataset demo/coreb --out demo/leaderboard
  coreb leaderboard serve demo/board --dataset demo/coreb --port 7860"""

SUBMIT_DESCRIPTION = """\
Copy an evaluation folder (OUT/<model>/<release>/ of `coreb evaluate`) into a submission:
results.json, runs/, per_query.jsonl (and a reranked result's first-stage runs) plus
model_meta.json, written from the results' model metadata and the flags below.

examples:
  coreb leaderboard submit demo/results/BM25/release_vhumaneval --out demo/board/bm25
  coreb leaderboard submit demo/results/all-MiniLM-L6-v2/release_vhumaneval \\
      --out demo/board/minilm --url https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"""

VALIDATE_DESCRIPTION = """\
Check submissions against the dataset folder: schema, dataset revision, every subtask present,
and every metric of every row recomputed from the runs with coreb_metric (tolerance 1e-9
relative). Prints one line per submission; exits 1 naming the first mismatch of a rejected one.

examples:
  coreb leaderboard validate demo/board/bm25 demo/board/minilm --dataset demo/coreb"""

BUILD_DESCRIPTION = """\
Validate every submission under SUBMISSIONS (folders holding model_meta.json) and write the
board to --out: leaderboard.json and .csv, the plots of the CoREB paper's Figures 9-10, and
space/ (app.py, requirements.txt, README.md: what `coreb push space` uploads). --out appears in
one rename (a failed build leaves nothing half-written); an existing one is replaced with
--force only. The board publishes the dataset's --dataset-name (default: the folder's name) and
revision, never its local path. The first rejected submission stops the build, named.

examples:
  coreb leaderboard build demo/board --dataset demo/coreb --out demo/leaderboard"""

SERVE_DESCRIPTION = """\
Validate the submissions and serve the page on --host:--port until interrupted.

examples:
  coreb leaderboard serve demo/board --dataset demo/coreb --port 7860"""


DATASET_NAME_HELP = (
    "the dataset's name or Hub id the page shows (default: the dataset folder's name; the local "
    "path is never published)"
)


@dataclass
class SubmitArguments:
    """``coreb leaderboard submit EVALUATION --out DIR``."""

    evaluation: Path = field(
        metadata={"positional": True, "help": "a `coreb evaluate` folder OUT/<model>/<release>"}
    )
    out: Path = field(metadata={"help": "the submission folder to write"})
    type: str | None = field(
        default=None,
        metadata={"help": "lexical | embedder | reranked (default: told by the results file)"},
    )
    parameters: int | None = field(
        default=None, metadata={"help": "parameter count, where the results file states none"}
    )
    code_specialized: bool = field(default=False, metadata={"help": "a code-specialized model"})
    url: str | None = field(default=None, metadata={"help": "the model's page"})
    license: str | None = field(default=None, metadata={"help": "the model's license id"})
    force: bool = field(default=False, metadata={"help": "replace --out if it is a submission"})


@dataclass
class ValidateArguments:
    """``coreb leaderboard validate SUBMISSION... --dataset DIR``."""

    submission: list[Path] = field(
        metadata={"positional": True, "help": "submission folders (with model_meta.json)"}
    )
    dataset: Path = field(metadata={"help": "the built CoREB dataset folder of the board"})


@dataclass
class BuildArguments:
    """``coreb leaderboard build SUBMISSIONS --dataset DIR --out DIR``."""

    submissions: Path = field(metadata={"positional": True, "help": "folder of submissions"})
    dataset: Path = field(metadata={"help": "the built CoREB dataset folder of the board"})
    out: Path = field(metadata={"help": "output folder (table, plots, space/)"})
    title: str = field(default="CoREB leaderboard", metadata={"help": "the page's title"})
    dataset_name: str | None = field(default=None, metadata={"help": DATASET_NAME_HELP})
    force: bool = field(
        default=False, metadata={"help": "replace --out when it is a board folder built before"}
    )


@dataclass
class ServeArguments:
    """``coreb leaderboard serve SUBMISSIONS --dataset DIR``."""

    submissions: Path = field(metadata={"positional": True, "help": "folder of submissions"})
    dataset: Path = field(metadata={"help": "the built CoREB dataset folder of the board"})
    host: str = field(default="127.0.0.1", metadata={"help": "address to listen on"})
    port: int = field(default=7860, metadata={"help": "port to listen on"})
    dataset_name: str | None = field(default=None, metadata={"help": DATASET_NAME_HELP})


def run_submit(args: SubmitArguments) -> int:
    from model_cards.leaderboard.submission import make_submission

    sub = make_submission(
        args.evaluation, args.out, force=args.force, model_type=args.type,
        parameters=args.parameters, code_specialized=args.code_specialized, url=args.url,
        license=args.license,
    )  # fmt: skip
    print(f"submission {sub.meta.name} ({sub.meta.type}) written to {sub.folder}")
    print(f"check it: coreb leaderboard validate {sub.folder} --dataset DATASET_DIR")
    return 0


def run_validate(args: ValidateArguments) -> int:
    from model_cards.leaderboard.validate import (
        BoardDataset,
        SubmissionRejected,
        validate_submission,
    )

    dataset = BoardDataset.open(args.dataset)
    status = 0
    for folder in args.submission:
        try:
            checked = validate_submission(folder, dataset)
        except SubmissionRejected as err:
            print(f"REJECTED {folder}: {err}")
            status = 1
            continue
        overall = checked.figures.rows[-1]
        print(
            f"accepted {folder}: {checked.name}, {len(checked.figures.rows)} rows recomputed, "
            f"Overall nDCG@10 {overall['ndcg_at_10']:.4f} over {overall['n_queries']} queries"
        )
    return status


def run_build(args: BuildArguments) -> int:
    from model_cards.leaderboard.app import load_board, write_build

    board = load_board(args.submissions, args.dataset, dataset_name=args.dataset_name)
    written = write_build(board, args.out, title=args.title, force=args.force,
                          inputs=[args.submissions, args.dataset])  # fmt: skip
    print(board.overall.to_string(index=False))
    space = written.pop("space")
    for path in written.values():
        print(f"wrote {path}")
    print(f"wrote the Space folder {space}; upload it with "
          f"`coreb push space {space} --repo ORG/NAME`")  # fmt: skip
    return 0


def run_serve(args: ServeArguments) -> int:
    from model_cards.leaderboard.app import serve

    print(f"serving the leaderboard on http://{args.host}:{args.port} (Ctrl-C stops it)")
    serve(args.submissions, args.dataset, args.host, args.port, dataset_name=args.dataset_name)
    return 0


COMMANDS = (
    Command(
        name="submit",
        help="turn a `coreb evaluate` folder into a leaderboard submission",
        description=SUBMIT_DESCRIPTION,
        arguments=(SubmitArguments,),
        run=run_submit,
        mode="`coreb leaderboard submit`",
    ),
    Command(
        name="validate",
        help="recompute every number of submissions from their runs",
        description=VALIDATE_DESCRIPTION,
        arguments=(ValidateArguments,),
        run=run_validate,
        mode="`coreb leaderboard validate`",
    ),
    Command(
        name="build",
        help="the validated table, plots and Space folder",
        description=BUILD_DESCRIPTION,
        arguments=(BuildArguments,),
        run=run_build,
        mode="`coreb leaderboard build`",
    ),
    Command(
        name="serve",
        help="run the leaderboard page locally",
        description=SERVE_DESCRIPTION,
        arguments=(ServeArguments,),
        run=run_serve,
        mode="`coreb leaderboard serve`",
    ),
)
