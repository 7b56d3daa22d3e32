"""Rerankers on the Hugging Face Hub: which kind of repo a Hub id is, and the local copy of an
adapter repo.

A Hub id names either a **full model** (``config.json``; a merged checkpoint or any
cross-encoder / causal LM), which ``transformers`` downloads and loads itself, or an **adapter
checkpoint** (PEFT's ``adapter_config.json``, and from ``coreb train reranker`` also
:data:`reranker.registry.CHECKPOINT_MANIFEST`), which is no model on its own: its base comes
from the manifest or ``adapter_config.json``. :func:`hub_checkpoint` asks the Hub which files
the repo holds (``HfApi.model_info``) and, for an adapter repo, downloads it whole with
``snapshot_download`` into the Hugging Face cache (``HF_HUB_CACHE``; the token is the one
``huggingface_hub`` finds: ``HF_TOKEN`` or ``hf auth login``), recording ``main``'s commit
in the cache so that the copy also serves offline; :func:`reranker.registry.load_reranker`
then loads that folder exactly as a local checkpoint folder.

Offline (``HF_HUB_OFFLINE``), or when the Hub cannot be reached, a copy in the cache is used
where there is one. Every failure names the repo and the step that failed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from coreb_toolkit.hub_access import hub_offline, hub_unreachable_errors
from reranker.base import require

logger = logging.getLogger(__name__)

#: the file that makes a folder or Hub repo a PEFT adapter checkpoint
ADAPTER_CONFIG = "adapter_config.json"


def _refused(err: BaseException, repo_id: str, step: str) -> Exception | None:
    """What to raise for the Hub's answer ``err`` to ``step``; ``None`` for a Hub that could
    not be reached (then the cache is tried)."""
    errors = require("huggingface_hub.errors")
    endpoint = require("huggingface_hub.constants").ENDPOINT
    where = f"Hub repo {repo_id!r} ({endpoint}), {step}"
    login = "log in with `hf auth login` or set HF_TOKEN"
    if isinstance(err, errors.GatedRepoError):
        return ValueError(
            f"{where}: the repo is gated and this token has no access to it; accept its "
            f"conditions on {endpoint}/{repo_id} and {login}"
        )
    if isinstance(err, errors.RepositoryNotFoundError):
        return ValueError(
            f"{where}: no such model repo (or it is private and this token cannot see it); "
            f"check the id, or {login} with a token that can read it"
        )
    if isinstance(err, errors.RevisionNotFoundError):
        return ValueError(f"{where}: the revision does not exist")
    if isinstance(err, errors.HfHubHTTPError):
        status = err.response.status_code if err.response is not None else "no status"
        return OSError(f"{where}: the Hub answered {status} ({str(err).splitlines()[0]})")
    if isinstance(err, hub_unreachable_errors()):
        return None
    return OSError(f"{where}: {type(err).__name__}: {err}")


def _cached(repo_id: str, cause: BaseException | None) -> Path | None:
    """The adapter checkpoint in the local cache, when the Hub is offline (``cause`` ``None``)
    or cannot be reached (``cause``); ``None`` where the cached copy is no adapter, or offline
    where nothing is cached (``transformers`` then loads or refuses the id itself)."""
    hub = require("huggingface_hub")
    try:
        folder = Path(hub.snapshot_download(repo_id, local_files_only=True))
    except (OSError, ValueError) as err:  # not cached, or only in part
        if cause is None:
            return None
        raise OSError(
            f"cannot reach the Hub at {require('huggingface_hub.constants').ENDPOINT} to load "
            f"reranker {repo_id!r} ({type(cause).__name__}: {cause}), and the local Hub cache "
            f"has no copy of it ({type(err).__name__}); check the network and HF_ENDPOINT, or "
            f"download it first (hf download {repo_id}) and run with HF_HUB_OFFLINE=1"
        ) from cause
    if not (folder / ADAPTER_CONFIG).is_file():
        return None
    if cause is not None:
        logger.warning("reranker %s: the Hub cannot be reached (%s); using the cached %s",
                       repo_id, type(cause).__name__, folder)  # fmt: skip
    return folder


def hub_checkpoint(repo_id: str, options: dict[str, Any] | None = None) -> Path | None:
    """The local folder of Hub repo ``repo_id`` when it is an adapter checkpoint, else ``None``
    (a full model: ``transformers`` loads it by its id).

    ``options`` are the reranker's (a ``gguf_file`` makes a repo without ``config.json`` a
    model). The repo's file list comes from the Hub (``model_info``); an adapter repo is
    downloaded with ``snapshot_download``.

    Raises:
        ValueError: the repo does not exist, is private or gated without access, names a
            revision that does not exist, or holds neither an adapter nor a model.
        OSError: the Hub answered an error, or cannot be reached and nothing is cached.
    """
    if hub_offline():
        return _cached(repo_id, None)
    hub = require("huggingface_hub")
    caught = (OSError, require("huggingface_hub.errors").HfHubHTTPError, *hub_unreachable_errors())
    try:
        info = hub.HfApi().model_info(repo_id)
    except caught as err:
        refused = _refused(err, repo_id, "listing its files")
        if refused is not None:
            raise refused from err
        return _cached(repo_id, err)
    files = sorted(s.rfilename for s in info.siblings or ())
    if ADAPTER_CONFIG not in files:
        gguf = (options or {}).get("gguf_file") or any(f.endswith(".gguf") for f in files)
        if "config.json" in files or gguf:
            return None
        shown = ", ".join(files[:8]) + (f" and {len(files) - 8} more" if len(files) > 8 else "")
        raise ValueError(
            f"Hub repo {repo_id!r} holds neither {ADAPTER_CONFIG} (a PEFT adapter checkpoint) "
            f"nor config.json (a model), so it is no reranker; its files: {shown or 'none'}"
        )
    try:
        # by branch, not by info.sha: a download by commit hash records no refs/main, and the
        # cached copy could not be found offline
        return Path(hub.snapshot_download(repo_id))
    except caught as err:
        step = "downloading the adapter checkpoint"
        unreachable = f"Hub repo {repo_id!r}, {step}: the Hub cannot be reached ({err})"
        raise _refused(err, repo_id, step) or OSError(unreachable) from err


__all__ = ["ADAPTER_CONFIG", "hub_checkpoint"]
