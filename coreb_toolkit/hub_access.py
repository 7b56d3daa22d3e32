"""The Hub as every room asks about it: is this a repo id, is the Hub switched off, which errors
mean it cannot be reached. One answer each, from ``huggingface_hub``'s own rules, used by the
builders, the first stage, the rerankers and the pushes alike (no pyarrow, no model library:
any layer may import it).
"""

from __future__ import annotations

import os

__all__ = ["hub_id_problem", "hub_offline", "hub_unreachable_errors", "is_hub_id"]


def hub_id_problem(source: str | os.PathLike[str]) -> str | None:
    """Why ``source`` is no Hub repo id, in ``huggingface_hub``'s words, or ``None`` for one
    that its ``validate_repo_id`` accepts (``name`` or ``namespace/name``: letters, digits,
    ``-``, ``_``, ``.``, neither ``--`` nor ``..``, not starting or ending with ``-`` or ``.``,
    no ``.git`` ending, at most 96 characters). The toolkit's one test of a repo id: a push's
    ``--repo``, a model or reranker name, :func:`is_hub_id`."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(str(source))
    except HFValidationError as err:
        return str(err)
    return None


def is_hub_id(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` is a Hub repo id that names its owner (``owner/name``, accepted by
    :func:`hub_id_problem`); a bare ``name``, which the Hub resolves against the caller's
    namespace, is not taken for one here (a local folder's name looks the same)."""
    return "/" in str(source) and hub_id_problem(source) is None


def hub_offline() -> bool:
    """Whether the Hub is switched off: ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` set in
    the environment now, or ``huggingface_hub``'s own flag (``constants.is_offline_mode()``,
    which reads the same two once, at import; then every request it sends fails with
    ``OfflineModeIsEnabled``). The toolkit's one test of offline mode."""
    flags = (os.environ.get(v, "") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if any(f.strip().upper() in ("1", "ON", "YES", "TRUE") for f in flags):
        return True
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def hub_unreachable_errors() -> tuple[type[BaseException], ...]:
    """The errors of a Hub that cannot be reached, as ``huggingface_hub`` 2.x raises them:
    ``ConnectionError`` (its ``OfflineModeIsEnabled`` is one, and the OS's refused or reset
    connections) and ``httpx2.TransportError`` (refused, timed out, dropped: ``httpx2`` is
    ``huggingface_hub``'s HTTP client, a dependency of it, not ours). The toolkit's one list of
    them: the reranker's Hub loader falls back to the cache on these, a push retries them."""
    try:
        import httpx2
    except ImportError:
        return (ConnectionError,)
    return (ConnectionError, httpx2.TransportError)
