"""A built dataset for any source a user has: built folders as they are, releases built once.

``coreb evaluate --dataset`` takes a folder written by ``coreb build`` (or its Hub id), a release
in the official layout (a local folder in either layout, or ``hq-bench/coreb`` on the Hub, which
serves the 8 official configs). A release is built into ``<cache_dir>/<key>/``, ``key`` a hash of
the source's fingerprint (the Hub revision, or the bytes of every local file), the qrels options
and the toolkit's version, and reused by every later run with the same key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.coreb.layout import OFFICIAL_CONFIGS
from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.hub_folder import folder_fingerprint, is_hub_folder
from coreb_toolkit.hub_access import is_hub_id

logger = logging.getLogger(__name__)

#: Bumped when a build of the same release with the same options would write other rows.
BUILD_FORMAT = 2


def hub_release_files(repo_id: str) -> tuple[str, list[str]] | None:
    """``(revision, files)`` of a Hub dataset in the official layout (its files name the
    official configs, e.g. ``code_corpus/release_v2603-00000-of-00001.parquet``), or None for
    a Hub dataset that is a built one (it has subtask configs)."""
    from huggingface_hub import HfApi

    info = HfApi().dataset_info(repo_id, files_metadata=False)
    files = [s.rfilename for s in info.siblings or ()]
    tops = {f.split("/", 1)[0] for f in files}
    if "corpus_code" in tops or not tops & set(OFFICIAL_CONFIGS):
        return None
    return str(info.sha), files


def is_release_source(source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` is a release in the official layout (local or on the Hub) rather
    than a built dataset."""
    if Path(source).exists():
        return not is_hub_folder(source)
    if not is_hub_id(source):
        return False
    try:
        return hub_release_files(str(source)) is not None
    except Exception as err:  # offline, private, missing: loading it reports why, in its terms
        logger.debug("cannot list the files of %s on the Hub: %s", source, err)
        return False


def source_fingerprint(source: str | os.PathLike[str]) -> str:
    """The Hub revision of a Hub release (``hub:<id>@<sha>``), or the content hash of a local
    release folder (:func:`~coreb_toolkit.builders.hub_folder.folder_fingerprint`)."""
    if Path(source).exists():
        return folder_fingerprint(source)
    found = hub_release_files(str(source))
    if found is None:
        raise ValueError(f"{source} is a built dataset on the Hub, not a release")
    return f"hub:{source}@{found[0]}"


def build_key(fingerprint: str, options: QrelsOptions) -> str:
    """The cache key of a build of the source with ``fingerprint`` (:func:`source_fingerprint`)
    with ``options``."""
    try:
        toolkit = version("coreb-toolkit")
    except PackageNotFoundError:  # a source checkout run without installing
        toolkit = "unknown"
    blob = json.dumps(
        {
            "source": fingerprint,
            "options": asdict(options),
            "format": BUILD_FORMAT,
            "toolkit": toolkit,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def prepared_dataset(
    source: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None,
    build: Callable[..., Any] | None = None,
    *,
    options: QrelsOptions | None = None,
    progress: bool = True,
    fingerprint: str | None = None,
) -> str:
    """A built dataset for ``source``: ``source`` itself when it is one (a built folder or its
    Hub id); otherwise, with ``cache_dir``, the build of the release cached under
    ``cache_dir/<key>`` (built now when absent); without one, the release itself (a Hub
    release downloaded to the Hub's cache), which the runner reads in memory.

    ``build`` is ``coreb_dataset.build`` (which brings the dataset card), needed with a
    ``cache_dir`` only; ``fingerprint``, the
    source's :func:`source_fingerprint` when the caller has it already (one read of the files).
    """
    options = options or QrelsOptions()
    if not is_release_source(source):
        return str(source)
    fingerprint = fingerprint or source_fingerprint(source)
    local = source if Path(source).exists() else None
    if local is None:
        from huggingface_hub import snapshot_download

        revision = fingerprint.rsplit("@", 1)[1]
        local = snapshot_download(str(source), repo_type="dataset", revision=revision)
    if cache_dir is None:
        return str(local)
    if build is None:
        raise TypeError("prepared_dataset(cache_dir=...) needs build= (coreb_dataset.build)")
    key = build_key(fingerprint, options)
    target = Path(cache_dir) / key
    if (target / "README.md").is_file():
        logger.info("%s: using the build cached in %s", source, target)
        return str(target)
    logger.info("%s: building it once into %s", source, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    build(local, target, options=options, progress=progress)
    (target.parent / f"{key}.source.json").write_text(
        json.dumps({"source": str(source), "fingerprint": fingerprint}) + "\n",
        encoding="utf-8",
    )
    return str(target)
