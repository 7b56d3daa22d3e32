"""What a results file records about where its numbers came from: libraries and dataset."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from coreb_toolkit.builders.hub_folder import folder_fingerprint

LIBRARIES = ("coreb-toolkit", "datasets", "pytrec-eval-terrier", "bm25s", "torch",
             "sentence-transformers", "transformers", "numpy")  # fmt: skip


def library_versions() -> dict[str, str | None]:
    """The Python version and the versions of :data:`LIBRARIES` (``None``: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            out[lib] = version(lib)
        except PackageNotFoundError:
            out[lib] = None
    return out


def dataset_revision(source: str) -> str | None:
    """The Hub commit of a dataset id; for a local folder its :func:`folder_fingerprint`;
    ``None`` when the Hub cannot be asked."""
    if Path(source).exists():
        return folder_fingerprint(source) if Path(source).is_dir() else None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(source).sha
    except Exception:  # offline, private or missing: the revision is unknown, not an error
        return None


__all__ = ["LIBRARIES", "dataset_revision", "folder_fingerprint", "library_versions"]
