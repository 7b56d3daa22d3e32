"""``coreb push model|dataset|space FOLDER --repo ID``: publish a folder to the Hugging Face Hub
in one commit through ``huggingface_hub`` (:mod:`model_cards.hub`), or ``--dry-run DIR``."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command
from model_cards.hub import DRY_RUN_MARKER, SECRET_PATTERNS

_SECRETS = textwrap.fill(" ".join(SECRET_PATTERNS), 92, subsequent_indent="  ")

DESCRIPTION = f"""\
Upload a folder to the Hugging Face Hub with huggingface_hub: the repo is created if needed
(`--private` for a new private one), then every file goes up in ONE commit, on `--revision`
(an existing branch; default main) or as a pull request (`--create-pr`). Checked first: a model
or dataset folder needs a README.md card that huggingface_hub parses, a Space a README.md with
`sdk:` and its app file. `--dry-run DIR` writes exactly the files a push would send to DIR and
lists them, contacting nothing (with {DRY_RUN_MARKER}, their list: `--force` replaces only
such a folder).

Left out, and listed: .git and .cache (folders or files), __pycache__/, *.pyc,
.ipynb_checkpoints/, .DS_Store, for a model the top-level checkpoint-*/ folders of a Trainer
run (optimizer state), and secrets by name (any case; "/": a folder):
  {_SECRETS}
No link is followed out of the folder; such a link, and a FIFO, device or socket, is an error.

Log in with `hf auth login` or set HF_TOKEN; there is no --token flag (a token on a command
line lands in shell history). HF_ENDPOINT points at another Hub.

examples:
  coreb push model results/minilm --repo my-org/coreb-minilm --dry-run /tmp/minilm-upload
  coreb push model checkpoints/coreb-reranker --repo my-org/coreb-reranker --private
  coreb push dataset demo/coreb --repo my-org/coreb --revision v202603 --create-pr
  coreb push space leaderboard/space --repo my-org/coreb-leaderboard"""

_EXAMPLES = {
    "model": "coreb push model cards/minilm --repo my-org/minilm-coreb",
    "dataset": "coreb push dataset demo/coreb --repo my-org/coreb",
    "space": "coreb push space board/space --repo my-org/coreb-board",
}


@dataclass
class PushArguments:
    """``coreb push <type> FOLDER --repo ID``: what to upload, where, and how."""

    folder: Path = field(metadata={"positional": True, "help": "the folder to upload"})
    repo: str | None = field(
        default=None,
        metadata={
            "metavar": "ID",
            "help": "the Hub repo, namespace/name (a bare name goes to your user); created if "
            "missing",
        },
    )
    revision: str | None = field(
        default=None,
        metadata={
            "help": "an existing branch to commit to (with --create-pr: the branch the pull "
            "request targets); default main"
        },
    )
    private: bool = field(
        default=False,
        metadata={
            "help": "create the repo private (an existing public repo is refused, not changed); "
            "without it a new repo follows the namespace's default"
        },
    )
    create_pr: bool = field(
        default=False, metadata={"help": "open the commit as a pull request instead"}
    )
    message: str | None = field(
        default=None,
        metadata={
            "metavar": "TEXT",
            "help": "commit message (default: Upload FOLDER with coreb push)",
        },
    )
    dry_run: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "write the files that would be uploaded to DIR (new or empty) and list them; "
            "nothing is sent",
        },
    )
    force: bool = field(
        default=False,
        metadata={"help": "with --dry-run: replace DIR if an earlier dry run wrote it"},
    )

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        if self.dry_run is not None:
            self.dry_run = Path(self.dry_run)
        elif self.force:
            raise ValueError("--force replaces the --dry-run folder; it has no meaning without it")
        elif not self.repo:
            raise ValueError(
                "give --repo NAMESPACE/NAME to push to (or --dry-run DIR to only write the "
                "files a push would send)"
            )


def _print_skipped(skipped: dict[str, str]) -> None:
    if skipped:
        print(f"left out ({len(skipped)}):")
        for path, reason in skipped.items():
            print(f"  {path}: {reason}")


def _push(args: PushArguments, repo_type: str) -> int:
    from model_cards.hub import dry_run, plan_upload, push_folder

    if args.dry_run is not None:
        written = dry_run(args.folder, args.dry_run, repo_type, overwrite=args.force)
        where = f"{len(written)} file(s) a push of {args.folder} would upload"
        print(f"dry run: {where}, written to {args.dry_run}:")
        for path in written:
            print(f"  {path.relative_to(args.dry_run).as_posix()}")
        _print_skipped(plan_upload(args.folder, repo_type).skipped)
        if args.repo:
            print(f"nothing was sent to {args.repo}")
        return 0
    result = push_folder(
        args.folder,
        args.repo,
        repo_type=repo_type,
        revision=args.revision,
        private=args.private,
        create_pr=args.create_pr,
        commit_message=args.message,
    )
    sent = len(result.files) - len(result.unchanged) - len(result.ignored_by_hub)
    print(f"pushed {args.folder} to {result.repo_url}: {sent} file(s) in one commit")
    if result.unchanged:
        print(f"  {len(result.unchanged)} file(s) unchanged on the Hub, left out of the commit")
    if result.ignored_by_hub:
        print(f"  ignored by the repo's .gitignore: {', '.join(result.ignored_by_hub)}")
    print(f"commit: {result.commit_url}")
    if result.pr_url:
        print(f"pull request: {result.pr_url}")
    _print_skipped(result.skipped)
    return 0


def push_model(args: PushArguments) -> int:
    return _push(args, "model")


def push_dataset(args: PushArguments) -> int:
    return _push(args, "dataset")


def push_space(args: PushArguments) -> int:
    return _push(args, "space")


_RUN = {"model": push_model, "dataset": push_dataset, "space": push_space}
_CHECK = {
    "model": "a README.md model card (`coreb card` writes one)",
    "dataset": "a README.md dataset card (`coreb build` writes one)",
    "space": "a README.md with `sdk:` and the app file (app.py for gradio)",
}

COMMANDS = tuple(
    Command(
        name=f"push {repo_type}",
        help=f"upload a {repo_type} folder to the Hub in one commit (or --dry-run DIR)",
        description=f"Upload a {repo_type} folder to the Hub in one commit; the folder needs\n"
        f"{_CHECK[repo_type]}.\nSee `coreb push --help` for what is left out and how to log in."
        f"\n\nexamples:\n  {_EXAMPLES[repo_type]} --dry-run /tmp/upload\n"
        f"  {_EXAMPLES[repo_type]} --private\n"
        f"  {_EXAMPLES[repo_type]} --revision dev --create-pr --message 'v2 results'",
        arguments=(PushArguments,),
        run=_RUN[repo_type],
        mode=f"`coreb push {repo_type}`",
    )
    for repo_type in ("model", "dataset", "space")
)
