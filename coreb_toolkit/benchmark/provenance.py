"""What a results file records about where its numbers came from: libraries and dataset."""

from __future__ import annotations

import hashlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

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


def folder_fingerprint(folder: str | Path) -> str:
    """``"sha256:<hex>"`` over the sorted relative paths and the bytes of every file.

    Content, not sizes and mtimes: a copy, a checkout or a ``touch`` of the same data gives
    the same fingerprint on any machine, and an edit that keeps a file's size does not go
    unseen. Reading the bytes costs one pass over the folder, which the benchmark reads in full
    anyway. Hidden files and folders (``.git``, ``.cache``) are left out.
    """
    root = Path(folder)
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for p in files:
        digest.update(p.relative_to(root).as_posix().encode() + b"\0")
        digest.update(str(p.stat().st_size).encode() + b"\0")
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()


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
