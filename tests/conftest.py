"""Shared fixtures and the skip-with-reason markers.

* ``needs_shared_data``: the real public source data at ``../shared/data`` (override with
  ``COREB_SHARED_DATA``); skipped with a reason when absent (e.g. on a user's machine).
* ``needs_toolchain("g++")``: a language toolchain on PATH; skipped with a reason when absent.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# `datasets` caches what load_dataset(folder) prepared under a key of the folder's path and
# files; pytest reuses tmp paths across runs, so a shared cache could serve an earlier run's
# build of the same path. Each session gets its own cache (set before datasets is imported).
_DATASETS_CACHE = tempfile.mkdtemp(prefix="coreb-tests-datasets-")
os.environ["HF_DATASETS_CACHE"] = _DATASETS_CACHE
atexit.register(shutil.rmtree, _DATASETS_CACHE, ignore_errors=True)

import pytest  # noqa: E402

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("COREB_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
EXAMPLES = REPO_ROOT / "examples"


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_shared_data") and not SHARED_DATA.is_dir():
        pytest.skip(f"needs the real source data at {SHARED_DATA} (set COREB_SHARED_DATA)")
    for marker in item.iter_markers("needs_toolchain"):
        for tool in marker.args:
            if shutil.which(tool) is None:
                pytest.skip(f"needs the {tool!r} toolchain on PATH (see `make system-deps`)")


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def examples() -> Path:
    return EXAMPLES
