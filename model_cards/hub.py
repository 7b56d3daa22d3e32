"""Publish a folder to the Hugging Face Hub: a model, a dataset or a Space, in one commit.

Everything goes through ``huggingface_hub``'s own :class:`~huggingface_hub.HfApi`:
``create_repo(exist_ok=True)``, then one ``create_commit`` of a ``CommitOperationAdd`` per
file (``huggingface_hub`` does the preupload, the LFS or Xet transfers and the NDJSON commit),
optionally as a pull request on a ``revision``. Not ``upload_folder``: it refuses a pull
request against a branch other than ``main``, may split a folder into several commits, and
follows every link. The files are chosen by :func:`plan_upload` (the rules below, matched by
``huggingface_hub``'s ``filter_repo_objects``, the filter of ``upload_folder``'s
``allow_patterns`` / ``ignore_patterns``), and the commit is built by
:func:`commit_operations`: :func:`push_folder` hands its operations to ``create_commit`` and
:func:`dry_run` writes the same operations' files, so that a dry run writes exactly the bytes a
push would send.

What is uploaded: every file under the folder, recursively, except (each left-out path is
listed in :attr:`UploadPlan.skipped` with its reason, never dropped silently; each rule is a
list of ``filter_repo_objects`` ignore patterns, matched on one part of a path at a time, a
folder's as ``name/``, so that a ``*`` never reaches across a ``/``):

* ``.git`` and ``.cache``, folders or files, anywhere: the Hub refuses any path with such a part
  (``huggingface_hub``'s ``FORBIDDEN_FOLDERS``, from which the rule is made; ``upload_folder``'s
  ``DEFAULT_IGNORE_PATTERNS`` leave out less); a worktree's or submodule's ``.git`` is a file,
  and ``.cache/huggingface/`` holds download metadata and, as ``HF_HOME``, the token;
* ``__pycache__/``, ``*.pyc``, ``.ipynb_checkpoints/``, ``.DS_Store``: rebuilt or editor state;
* secrets, by name (:data:`SECRET_PATTERNS`, matched case-insensitively on every part of a path;
  a pattern ending in ``/`` names a folder, the others a file or a folder): dotenv files
  ``.env``, ``.env.*`` (``.env.local``, ``.env.production``, also ``.env.example``) and direnv's
  ``.envrc``; the credential stores of HTTP clients, git, package registries and databases
  ``.netrc``, ``_netrc``, ``.git-credentials``, ``.npmrc``, ``.pypirc``, ``.pgpass``,
  ``.htpasswd``; cloud credentials and Streamlit's secrets ``credentials.json``,
  ``application_default_credentials.json``, ``client_secret*.json``, ``secrets.toml``; keys
  and certificates ``*.pem``, ``*.key``, ``*.p12``, ``*.pfx``, ``id_rsa*``, ``id_dsa*``,
  ``id_ecdsa*``, ``id_ed25519*``; and the credential folders of a home directory
  ``.huggingface/`` (``huggingface_hub``'s old token folder), ``.ssh/``, ``.gnupg/``,
  ``.aws/``, ``.azure/``, ``.kube/``, ``.docker/``. A Space takes its secrets in its settings,
  not in a file; rename a file these catch that holds none (``.env.example``: ``env.example``);
* the top-level :data:`DRY_RUN_MARKER` of a folder a dry run wrote;
* for a model only, top-level ``checkpoint-*/`` folders: the intermediate checkpoints of a
  ``transformers`` Trainer run, saved with optimizer, scheduler and RNG state (often several
  times the model's size); the trained model is the folder's top level. Push one checkpoint on
  its own (``coreb push model RUN/checkpoint-500 --repo ID --revision step-500``) if you mean to.

Links: no link is followed out of the folder. A link to a file inside it is uploaded as that
file, unless the file is one left out above (a link would publish it under another name); a
link leading out of the folder (at any step), a link to a folder, a dangling link, and a FIFO,
device or socket (or a link to one: reading ``/dev/zero`` never ends, a FIFO blocks) are
errors that name the path, raised before any file is read or anything is sent.

Tokens: only ``huggingface_hub``'s own resolution (``HF_TOKEN``, then the token ``hf auth
login`` stored). There is deliberately no ``token=`` parameter here and no ``--token`` flag in
the CLI: a token on a command line lands in shell history and process listings. This module
never reads the token except to refuse a folder that contains it (a training run that wrote its
``hub_token`` into a config would otherwise publish it), and never writes it anywhere.

Retries (``huggingface_hub`` 2.4.0, ``utils/_http.py``): ``http_backoff`` retries 408, 429,
500, 502, 503, 504 and network errors five times (waits 1, 2, 4, 8, 8 s) for the ``preupload``
call and LFS transfers only; ``create_repo``, ``validate-yaml`` and ``create_commit``'s
``commit`` POST are sent once (only ``upload_folder``'s Xet pipeline retries its commits).
:func:`push_folder` retries those with the same schedule (:class:`RetryPolicy`), on the
statuses ``http_backoff`` retries by default (read from its signature) and on the errors of a
Hub that cannot be reached (``hub_folder.hub_unreachable_errors``). Retrying a commit is safe:
if a lost answer hid a commit that went through, the retry's ``preupload`` reports every file
unchanged and ``huggingface_hub`` makes no second commit. A pull request has no such guard (a
retry could open a second one), so with ``create_pr`` a failed commit POST is not retried and
the error says to look at the repo's discussions first.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from coreb_toolkit.hub_access import hub_id_problem, hub_unreachable_errors
from coreb_toolkit.untrusted import inside, read_json

logger = logging.getLogger(__name__)

REPO_TYPES = ("model", "dataset", "space")

#: Names that hold credentials by convention, never uploaded (the module docstring says why
#: each). Matched with fnmatch on the lower-cased name of every part of a path; a pattern ending
#: in "/" names a folder, the others a file or a folder (a virtualenv named .env is left out too).
SECRET_PATTERNS: tuple[str, ...] = (
    ".env", ".env.*", ".envrc",
    ".netrc", "_netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass", ".htpasswd",
    "credentials.json", "application_default_credentials.json", "client_secret*.json",
    "secrets.toml",
    "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".huggingface/", ".ssh/", ".gnupg/", ".aws/", ".azure/", ".kube/", ".docker/",
)  # fmt: skip
#: the file a dry run writes beside the files, listing them: --force replaces only such a folder
DRY_RUN_MARKER = ".coreb-dry-run.json"
#: what each of huggingface_hub's FORBIDDEN_FOLDERS holds, for the reason a path is left out
_FORBIDDEN = {".git": "git metadata", ".cache": "a local cache (huggingface_hub's download "
              "metadata, maybe a token)"}  # fmt: skip
#: (filter_repo_objects ignore patterns on a path part, reason): "name/" a folder, "name" a file
_SKIP_ANYWHERE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("__pycache__/",), "Python bytecode, rebuilt on import"),
    ((".ipynb_checkpoints/",), "Jupyter autosaves"),
    (("*.pyc",), "Python bytecode, rebuilt on import"),
    ((".DS_Store",), "Finder metadata"),
)
_CHECKPOINT = (
    "an intermediate Trainer checkpoint (optimizer, scheduler and RNG state): the model is the "
    "folder's top level; push a checkpoint on its own with `coreb push model DIR/checkpoint-N`"
)
#: the file a Space runs, by sdk, when its card names no ``app_file``
_SPACE_APP = {"gradio": "app.py", "streamlit": "app.py", "static": "index.html"}
_READ_ONLY_PR = "; or open a pull request with --create-pr, which needs only read access"

T = TypeVar("T")


class HubPushError(ValueError):
    """A folder that cannot be pushed, or an error the Hub returned, said in words: which repo,
    which revision, what went wrong and what to do. Never carries the token."""


@dataclass(frozen=True)
class RetryPolicy:
    """How the calls ``huggingface_hub`` sends once are retried: ``max_retries`` more attempts
    after the first, waiting ``base_wait`` seconds, doubled each time up to ``max_wait``
    (``huggingface_hub``'s own ``http_backoff`` numbers). ``sleep`` is the function that waits
    (a test passes one that records the waits)."""

    max_retries: int = 5
    base_wait: float = 1.0
    max_wait: float = 8.0
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise ValueError(f"RetryPolicy.max_retries must be 0 or more, got {self.max_retries}")
        if self.base_wait < 0 or self.max_wait < self.base_wait:
            raise ValueError(
                f"RetryPolicy needs 0 <= base_wait <= max_wait, got {self.base_wait}, "
                f"{self.max_wait}"
            )


@dataclass(frozen=True)
class UploadPlan:
    """What a push of ``folder`` sends: ``files`` (paths relative to the folder, POSIX, sorted)
    and ``skipped`` (``{path: reason}``, a folder with a trailing ``/``)."""

    folder: Path
    repo_type: str
    files: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PushResult:
    """The outcome of :func:`push_folder`.

    Args:
        repo_url: the repo's page.
        commit_url: the commit made (with nothing changed: the revision's head commit).
        pr_url: the pull request opened, with ``create_pr``; else ``None``.
        files: the files of the folder the push sent (all of :func:`upload_files`).
        unchanged: those of ``files`` the Hub already held byte for byte (left out of the
            commit by ``huggingface_hub``).
        ignored_by_hub: those the Hub left out because a ``.gitignore`` matches them.
        skipped: the folder's paths not uploaded, with the reason (see the module docstring).
    """

    repo_url: str
    commit_url: str
    pr_url: str | None
    files: tuple[str, ...]
    unchanged: tuple[str, ...] = ()
    ignored_by_hub: tuple[str, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)


def _check_repo_type(repo_type: str) -> None:
    if repo_type not in REPO_TYPES:
        raise ValueError(f"repo_type must be one of {', '.join(REPO_TYPES)}, got {repo_type!r}")


def _file_or_folder(pattern: str) -> tuple[str, ...]:
    """A pattern that names a file or a folder, as ignore patterns: ``name`` and ``name/``."""
    return (pattern,) if pattern.endswith("/") else (pattern, pattern + "/")


@functools.cache
def _rules(repo_type: str, top_level: bool) -> tuple[tuple[tuple[str, ...], bool, str], ...]:
    """The rules of the module docstring for a part of a path (at the top when ``top_level``):
    (ignore patterns, matched case-folded, reason), the first that matches giving the reason."""
    from huggingface_hub.utils import FORBIDDEN_FOLDERS

    rules = [
        (_file_or_folder(name), False, f"{_FORBIDDEN.get(name, 'a folder the Hub forbids')}: "
         f"the Hub refuses any path with a {name} part")
        for name in FORBIDDEN_FOLDERS
    ]  # fmt: skip
    rules += [(patterns, False, reason) for patterns, reason in _SKIP_ANYWHERE]
    rules += [
        (_file_or_folder(pattern), True, f"a secret by its name ({pattern!r} in SECRET_PATTERNS)"
         ", never uploaded: a Space takes its secrets in its settings")
        for pattern in SECRET_PATTERNS
    ]  # fmt: skip
    if top_level:
        rules.append(((DRY_RUN_MARKER,), False, "the list of the files a dry run wrote"))
        if repo_type == "model":
            rules.append((("checkpoint-*/",), False, _CHECKPOINT))
    return tuple(rules)


def _left_out(entries: list[str], repo_type: str, top_level: bool) -> dict[str, str]:
    """``{entry: reason}`` for the entries of one folder (``name/`` a folder, ``name`` a file)
    that a push leaves out: each rule's patterns through ``huggingface_hub``'s
    ``filter_repo_objects``, on the lower-cased name for the secrets. (It reads a ``\\`` in a
    name as a ``/``: such a name is left out the more readily, never the less.)"""
    from huggingface_hub.utils import filter_repo_objects

    left: dict[str, str] = {}
    for patterns, fold_case, reason in _rules(repo_type, top_level):
        rest = [entry for entry in entries if entry not in left]
        key = str.lower if fold_case else None
        kept = set(filter_repo_objects(rest, ignore_patterns=list(patterns), key=key))
        left.update((entry, reason) for entry in rest if entry not in kept)
    return left


def _skipped_file(rel: Path, repo_type: str) -> str | None:
    """Why the file ``rel`` (relative to the folder) is left out, if a part of it is."""
    parts = rel.parts
    for i, name in enumerate(parts):
        entry = f"{name}/" if i < len(parts) - 1 else name
        reason = _left_out([entry], repo_type, i == 0).get(entry)
        if reason is not None:
            return reason
    return None


def _check_file(root: Path, path: Path, repo_type: str) -> None:
    """Refuse, before anything is read, a file a push must not follow or read (see the module
    docstring): a link out of ``root``, to nothing or to a left-out file; a FIFO, device or
    socket."""
    nothing = "nothing was read or sent"
    try:
        target = inside(root, path)
    except ValueError as err:  # names the link, never its target (a path can say too much)
        raise HubPushError(
            f"{err}; {nothing}: a push sends the regular files inside the folder only (copy "
            "the file in, or remove it)"
        ) from None
    if not target.exists():
        raise HubPushError(f"{path} is a link to nothing: remove it or point it at a file")
    if path.is_symlink():
        rel = target.relative_to(root)
        reason = _skipped_file(rel, repo_type)
        if reason is not None:
            raise HubPushError(
                f"{path} is a link to {rel.as_posix()}, which a push leaves out ({reason}); "
                f"{nothing}: remove the link"
            )


def plan_upload(folder: str | Path, repo_type: str) -> UploadPlan:
    """The files a push of ``folder`` as a ``repo_type`` repo sends, and those it leaves out
    (rules in the module docstring). The one place that decides: :func:`push_folder` and
    :func:`dry_run` both use it."""
    _check_repo_type(repo_type)
    root = Path(folder)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise HubPushError(f"{root} {what}: give the folder to push (a {repo_type} folder)")
    root = root.resolve()
    files: list[str] = []
    skipped: dict[str, str] = {}
    for current, dirs, names in os.walk(root):
        here = Path(current)
        rel_dir = here.relative_to(root)
        left = _left_out([*(f"{d}/" for d in dirs), *names], repo_type, here == root)
        kept = []
        for name in sorted(dirs):
            path = here / name
            rel = (rel_dir / name).as_posix()
            reason = left.get(f"{name}/")
            if reason is not None:
                skipped[rel + "/"] = reason
            elif path.is_symlink():
                raise HubPushError(
                    f"{path} is a link to a folder, which a push does not follow: copy the "
                    "folder in, or remove the link"
                )
            else:
                kept.append(name)
        dirs[:] = kept  # os.walk descends only into these, in this order
        for name in sorted(names):
            path = here / name
            rel = (rel_dir / name).as_posix()
            reason = left.get(name)
            if reason is not None:
                skipped[rel] = reason
            else:
                _check_file(root, path, repo_type)
                files.append(rel)
    if not files:
        raise HubPushError(f"{root} holds no file to upload (skipped: {sorted(skipped) or 'none'})")
    return UploadPlan(root, repo_type, tuple(sorted(files)), skipped)


def upload_files(folder: str | Path, repo_type: str) -> list[str]:
    """The paths (relative, POSIX) a push of ``folder`` uploads; see :func:`plan_upload`."""
    return list(plan_upload(folder, repo_type).files)


def commit_operations(plan: UploadPlan) -> list[Any]:
    """The commit a push of ``plan`` makes: one ``huggingface_hub.CommitOperationAdd`` per file,
    in order (``path_in_repo`` its path in the folder, ``path_or_fileobj`` the file).
    :func:`push_folder` hands exactly these to ``HfApi.create_commit``; :func:`dry_run` writes
    exactly these. New objects on each call: ``create_commit`` mutates them (no reuse)."""
    from huggingface_hub import CommitOperationAdd

    return [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(plan.folder / rel))
        for rel in plan.files
    ]


def _read_card(plan: UploadPlan, card_class: type) -> Any:
    readme = plan.folder / "README.md"
    kind = {"model": "model card", "dataset": "dataset card", "space": "Space card"}
    if "README.md" not in plan.files:
        raise HubPushError(
            f"{plan.folder} has no README.md: a {plan.repo_type} repo needs its "
            f"{kind[plan.repo_type]} (write one with `coreb card`, or `coreb build` for a dataset)"
        )
    try:
        card = card_class(readme.read_text(encoding="utf-8"), ignore_metadata_errors=False)
    except Exception as err:  # huggingface_hub raises ValueError, yaml its YAMLError
        raise HubPushError(
            f"{readme}: huggingface_hub.{card_class.__name__} cannot parse it: {err}"
        ) from err
    if not card.data.to_dict():
        raise HubPushError(
            f"{readme} has no YAML metadata block (--- ... --- at the top): the Hub shows and "
            f"searches a {plan.repo_type} by it"
        )
    return card


def check_folder(plan: UploadPlan) -> str | None:
    """Refuse a folder the Hub would take badly, before anything is sent: a model needs a
    README.md that ``huggingface_hub.ModelCard`` parses, a dataset one that ``DatasetCard``
    parses, a Space a ``SpaceCard`` with ``sdk:`` and the file it runs (``app_file``, default
    ``app.py``; ``index.html`` for static, ``Dockerfile`` for docker). Returns the Space's sdk."""
    from huggingface_hub import DatasetCard, ModelCard, SpaceCard, constants

    classes = {"model": ModelCard, "dataset": DatasetCard, "space": SpaceCard}
    card = _read_card(plan, classes[plan.repo_type])
    if plan.repo_type != "space":
        return None
    sdk = card.data.sdk
    if sdk not in constants.SPACES_SDK_TYPES:
        raise HubPushError(
            f"{plan.folder / 'README.md'}: a Space card needs `sdk:` in its metadata, one of "
            f"{', '.join(constants.SPACES_SDK_TYPES)}; got {sdk!r}"
        )
    app = "Dockerfile" if sdk == "docker" else (card.data.app_file or _SPACE_APP[sdk])
    if app not in plan.files:
        raise HubPushError(
            f"{plan.folder} has no {app}, the file a {sdk} Space runs"
            + ("" if sdk == "docker" else " (set `app_file:` in README.md if it is another)")
        )
    return sdk


def _check_no_token(plan: UploadPlan) -> None:
    """Refuse to upload a file that contains the token huggingface_hub would send (named by
    path only)."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        return
    needle = token.encode()
    for rel in plan.files:
        tail = b""
        for chunk in _chunks(plan.folder / rel):
            if needle in tail + chunk:
                raise HubPushError(
                    f"{plan.folder / rel} contains your Hugging Face token: nothing was "
                    "uploaded. Remove the token from that file (and revoke it at "
                    "https://huggingface.co/settings/tokens if it was ever shared)"
                )
            tail = chunk[-(len(needle) - 1) :] if len(needle) > 1 else b""


def _chunks(path: Path) -> Iterator[bytes]:
    """The bytes of the regular file ``path``, 1 MiB at a time, no more than its size when
    opened: one swapped for a FIFO or a device since :func:`plan_upload` checked it is refused
    (opened without blocking, then checked), never read forever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HubPushError(
                f"{path}: not a regular file (a FIFO, device or socket now); it is not read, "
                "nothing was sent"
            )
        left = info.st_size
        while left > 0 and (chunk := handle.read(min(1 << 20, left))):
            left -= len(chunk)
            yield chunk


def dry_run(
    folder: str | Path, out: str | Path, repo_type: str, *, overwrite: bool = False
) -> list[Path]:
    """Write to ``out`` exactly the files :func:`push_folder` would upload (same relative
    paths, same bytes), after the same checks, contacting nothing, and beside them
    :data:`DRY_RUN_MARKER`, the list of those files (a push of ``out`` leaves it out). ``out``
    must be new or an empty folder, and must neither lie inside ``folder`` nor hold it; with
    ``overwrite`` it may be a folder an earlier dry run wrote (its marker lists every file in
    it), whose contents are removed first. Returns the written paths, sorted."""
    plan = plan_upload(folder, repo_type)
    check_folder(plan)
    _check_no_token(plan)
    operations = commit_operations(plan)  # the push's own: the same paths, the same files
    target = Path(out)
    resolved = target.resolve()
    if resolved.is_relative_to(plan.folder) or plan.folder.is_relative_to(resolved):
        raise HubPushError(
            f"--dry-run {target} lies inside {plan.folder} or holds it: choose a folder apart"
        )
    if os.path.lexists(target) and not target.is_dir():
        raise HubPushError(
            f"--dry-run {target} exists and is not a folder; it is not replaced: remove it "
            "yourself or choose another folder"
        )
    if target.is_dir() and any(target.iterdir()):
        if not overwrite:
            raise HubPushError(
                f"--dry-run {target} exists and is not an empty folder: choose another, or "
                "add --force to replace an earlier dry run's"
            )
        _check_dry_run_folder(target)
        for entry in resolved.iterdir():  # checked: only folders and the files it listed
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    resolved.mkdir(parents=True, exist_ok=True)
    listed = [op.path_in_repo for op in operations]
    marker = {"written_by": "coreb push --dry-run", "files": listed}
    # first, so that a dry run killed half-way leaves a folder the next --force may replace
    (resolved / DRY_RUN_MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    written = []
    for op in operations:
        dest = target / op.path_in_repo
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as handle:  # a link's target's bytes, as create_commit reads them
            for chunk in _chunks(Path(op.path_or_fileobj)):
                handle.write(chunk)
        written.append(dest)
    logger.info("dry run: %d file(s) of %s written to %s", len(written), plan.folder, target)
    return written


def _check_dry_run_folder(target: Path) -> None:
    """Refuse to empty ``target`` unless a dry run wrote it: its :data:`DRY_RUN_MARKER` lists
    every file it holds (no link, nothing added since)."""
    try:
        listed = read_json(inside(target, DRY_RUN_MARKER), max_bytes=64 * 1024 * 1024)
    except ValueError:
        listed = None
    files = listed.get("files") if isinstance(listed, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise HubPushError(
            f"--dry-run {target} exists and was not written by a dry run (no readable "
            f"{DRY_RUN_MARKER} listing its files): --force replaces only an earlier dry run's "
            "folder; remove it yourself or choose another folder"
        )
    allowed = {*files, DRY_RUN_MARKER}
    foreign = []
    for current, dirs, names in os.walk(target):
        here = Path(current)
        for name in [*dirs, *names]:
            path = here / name
            rel = path.relative_to(target).as_posix()
            if path.is_symlink() or (name in names and (rel not in allowed or not path.is_file())):
                foreign.append(rel)
    if foreign:
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise HubPushError(
            f"--dry-run {target} holds files a dry run did not write ({', '.join(foreign[:5])}"
            f"{more}); --force would delete them: remove them yourself or choose another folder"
        )


def _where(repo_id: str, repo_type: str, revision: str | None) -> str:
    return f"{repo_type} repo {repo_id} (revision {revision or 'main'})"


def _failed_call(err: Exception) -> str | None:
    """Which Hub call failed: 'create', 'validate', 'preupload', 'commit', 'lfs', 'info'."""
    response = getattr(err, "response", None)
    try:
        path = response.request.url.path if response is not None else ""
    except RuntimeError:  # httpx2: a response built without its request
        path = ""
    for marker, name in (
        ("/api/repos/create", "create"),
        ("/api/validate-yaml", "validate"),
        ("/preupload/", "preupload"),
        ("/commit/", "commit"),
        ("/info/lfs/", "lfs"),
    ):
        if marker in path:
            return name
    return "info" if path else None


@functools.cache
def _retry_statuses() -> tuple[int, ...]:
    """The statuses a push retries: those ``huggingface_hub``'s ``http_backoff`` retries by
    default (its ``retry_on_status_codes``; 408, 429, 500, 502, 503, 504 in 2.4.0)."""
    from huggingface_hub.utils import http_backoff

    default = inspect.signature(http_backoff).parameters["retry_on_status_codes"].default
    return (default,) if isinstance(default, int) else tuple(default)


def _retryable(err: Exception, create_pr: bool) -> bool:
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(err, OfflineModeIsEnabled):
        return False  # HF_HUB_OFFLINE: huggingface_hub sends nothing, now or on a retry
    if isinstance(err, hub_unreachable_errors()):
        return True  # timeouts, refused or dropped connections (http_backoff's defaults too)
    if isinstance(err, json.JSONDecodeError):
        return True  # validate-yaml reads the body before the status: a gateway's HTML 502
    if not isinstance(err, HfHubHTTPError) or err.response is None:
        return False
    call = _failed_call(err)
    if call in ("preupload", "lfs"):
        return False  # http_backoff already retried these
    if call == "commit" and create_pr:
        return False  # a retry could open a second pull request
    return err.response.status_code in _retry_statuses()


def _with_retries(call: Callable[[], T], policy: RetryPolicy, create_pr: bool) -> T:
    wait = policy.base_wait
    for attempt in range(policy.max_retries + 1):
        try:
            return call()
        except Exception as err:
            if not _retryable(err, create_pr) or attempt == policy.max_retries:
                raise
            logger.warning(
                "the Hub failed (%s); retrying in %.0f s [%d/%d]",
                getattr(getattr(err, "response", None), "status_code", type(err).__name__),
                wait,
                attempt + 1,
                policy.max_retries,
            )
            policy.sleep(wait)
            wait = min(policy.max_wait, wait * 2)
    raise AssertionError("unreachable")  # the loop returns or raises


def _explain(
    err: Exception,
    repo_id: str,
    repo_type: str,
    revision: str | None,
    create_pr: bool,
    attempts: int,
) -> HubPushError:
    """The Hub's error in words: what happened to which repo and revision, and what to do."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled, RevisionNotFoundError

    where = _where(repo_id, repo_type, revision)
    login = (
        "log in with `hf auth login` (or set HF_TOKEN to a write token from "
        "https://huggingface.co/settings/tokens)"
    )
    if isinstance(err, OfflineModeIsEnabled):
        return HubPushError(f"cannot push {where}: HF_HUB_OFFLINE is set; unset it to publish")
    if isinstance(err, json.JSONDecodeError):
        return HubPushError(
            f"pushing {where}: the Hub kept answering something that is not JSON (a gateway "
            f"error page?) after {attempts} attempts; nothing was committed. Check "
            "https://status.huggingface.co and run again"
        )
    if not isinstance(err, HfHubHTTPError) or err.response is None:  # httpx2.TransportError
        return HubPushError(
            f"pushing {where}: cannot reach the Hub after {attempts} attempts "
            f"({type(err).__name__}: {err}); check the network (and HF_ENDPOINT) and run again"
        )
    status = err.response.status_code
    call = _failed_call(err) or "request"
    said = f" The Hub said: {err.server_message}" if err.server_message else ""
    namespace = repo_id.split("/")[0] if "/" in repo_id else "your user namespace"
    if status == 401:
        text = (
            f"the Hub did not accept the credentials for {where} (401 on {call}): not logged "
            f"in, or the token is invalid or expired; {login}, then run again."
        )
    elif status == 403:
        text = (
            f"no write access to {where} (403 on {call}): the token may not write to "
            f"{namespace}. Use a namespace that is yours or an organisation where you have "
            "the write role, and a token with write access (a fine-grained token needs it on "
            "that repo or namespace)" + ("" if create_pr else _READ_ONLY_PR) + "."
        )
    elif status == 404 and isinstance(err, RevisionNotFoundError):
        flag = "" if repo_type == "model" else f" --repo-type {repo_type}"
        text = (
            f"revision {revision or 'main'} does not exist in {repo_type} repo {repo_id} (404 on "
            f"{call}): create the branch first (`hf repos branch create {repo_id} {revision}"
            f"{flag}`) or leave out --revision to commit to main."
        )
    elif status == 404:
        text = (
            f"{where} was not found (404 on {call}): check the repo id and its type (`coreb push "
            "dataset` for a dataset, `space` for a Space), and that your token can see it."
        )
    elif status in (409, 412):
        text = (
            f"conflict pushing {where} ({status} on {call}): another commit or pull request "
            "changed the branch while this one was sent, or the repo exists in a state that "
            "conflicts with this push; nothing was committed. Run again"
            + ("" if create_pr else ", or open it as a pull request with --create-pr")
            + "."
        )
    elif status >= 500 or status in _retry_statuses():
        if call == "commit" and create_pr:
            text = (
                f"the Hub failed ({status}) on the commit of a pull request to {where}: it was "
                "not retried, since a retry could open a second pull request. Look at the "
                "repo's pull requests (discussions) before running again."
            )
        else:
            # preupload and LFS went through huggingface_hub's http_backoff, the rest ours
            tries = f"{attempts} attempts"
            if call in ("preupload", "lfs"):
                tries = "huggingface_hub's 5 retries"
            text = (
                f"the Hub kept failing ({status} on {call}) for {where} after {tries}; nothing "
                "was committed. Check https://status.huggingface.co and run again."
            )
    else:
        text = f"the Hub answered {status} on {call} for {where}."
    return HubPushError(text + said)


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "model",
    revision: str | None = None,
    private: bool = False,
    create_pr: bool = False,
    commit_message: str | None = None,
    endpoint: str | None = None,
    retry: RetryPolicy | None = None,
) -> PushResult:
    """Create ``repo_id`` if needed and upload the files of :func:`upload_files` in one commit.

    Args:
        folder: the folder to publish; checked first (:func:`check_folder`).
        repo_id: ``namespace/name`` (a bare name goes to the token's user).
        repo_type: ``model``, ``dataset`` or ``space``.
        revision: the branch to commit to (it must exist; default ``main``); with
            ``create_pr``, the branch the pull request targets.
        private: create the repo private. An existing repo keeps its visibility, so a push
            with ``private`` to an existing public repo is refused before anything is sent.
            Without it a new repo follows the namespace's default visibility.
        create_pr: open the commit as a pull request instead of committing to the branch.
        commit_message: the commit's summary (default ``Upload <folder name> with coreb push``).
        endpoint: the Hub's URL (default ``huggingface_hub``'s: ``HF_ENDPOINT`` or
            ``https://huggingface.co``).
        retry: how calls ``huggingface_hub`` sends once are retried (see the module docstring).

    Raises:
        HubPushError: the folder fails a check, no token is available, or the Hub refused;
            the message names the repo and revision and says what to do.
    """
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    _check_repo_type(repo_type)
    problem = hub_id_problem(repo_id)
    if problem is not None:
        raise HubPushError(f"--repo {repo_id!r} is not a Hub repo id (namespace/name): {problem}")
    if revision is not None and not revision.strip():
        raise HubPushError("revision must be a branch name; leave it out to commit to main")
    plan = plan_upload(folder, repo_type)
    sdk = check_folder(plan)
    if not get_token():
        raise HubPushError(
            f"not logged in to the Hub, so {_where(repo_id, repo_type, revision)} cannot be "
            "written: run `hf auth login` (it stores a token) or set HF_TOKEN to a write token "
            "from https://huggingface.co/settings/tokens"
        )
    _check_no_token(plan)
    policy = retry or RetryPolicy()
    api = HfApi(endpoint=endpoint, library_name="coreb-toolkit")
    message = commit_message or f"Upload {plan.folder.name} with coreb push"
    operations: list[Any] = []

    def create() -> Any:
        return api.create_repo(
            repo_id,
            repo_type=repo_type,
            private=True if private else None,  # None: the namespace's default visibility
            exist_ok=True,
            space_sdk=sdk,
        )

    def commit() -> Any:
        operations[:] = commit_operations(plan)  # new ones per attempt (create_commit's rule)
        return api.create_commit(
            repo_id,
            operations,
            commit_message=message,
            repo_type=repo_type,
            revision=revision,
            create_pr=create_pr,
        )

    attempts = policy.max_retries + 1
    try:
        repo_url = _with_retries(create, policy, create_pr)
        if private:
            info = _with_retries(lambda: api.repo_info(repo_id, repo_type=repo_type), policy, False)
            if not info.private:
                raise HubPushError(
                    f"--private was asked, but {repo_type} repo {repo_id} already exists and is "
                    "public (the Hub keeps an existing repo's visibility); nothing was uploaded. "
                    "Make it private in its settings first, or push without --private."
                )
        info = _with_retries(commit, policy, create_pr)
    except HubPushError:
        raise
    except Exception as err:
        # OfflineModeIsEnabled is a ConnectionError, one of the unreachable Hub's errors
        if isinstance(err, (HfHubHTTPError, json.JSONDecodeError, *hub_unreachable_errors())):
            raise _explain(err, repo_id, repo_type, revision, create_pr, attempts) from err
        if isinstance(err, ValueError):  # huggingface_hub: README.md metadata the Hub refused
            raise HubPushError(f"pushing {_where(repo_id, repo_type, revision)}: {err}") from err
        raise
    unchanged = tuple(
        op.path_in_repo
        for op in operations
        if op._remote_oid is not None and op._remote_oid == op._local_oid
    )
    ignored = tuple(op.path_in_repo for op in operations if op._should_ignore)
    result = PushResult(
        repo_url=str(repo_url),
        commit_url=info.commit_url,
        pr_url=info.pr_url,
        files=plan.files,
        unchanged=unchanged,
        ignored_by_hub=ignored,
        skipped=dict(plan.skipped),
    )
    logger.info("pushed %d file(s) of %s to %s", len(plan.files), plan.folder, result.commit_url)
    return result
