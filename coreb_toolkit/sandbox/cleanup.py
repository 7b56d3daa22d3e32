"""Where our temporary folders go, and reclaiming what killed runs left on the host (cgroups
and folders named after a dead owner, :mod:`coreb_toolkit.owners`)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from coreb_toolkit.owners import left_by_dead_owner, owned_prefix
from coreb_toolkit.sandbox import cgroups
from coreb_toolkit.sandbox.bwrap import SANDBOX_UID
from coreb_toolkit.sandbox.cgroups import CONTROLLERS, kill_cgroup_members, remove_cgroup
from coreb_toolkit.sandbox.limits import SandboxError

logger = logging.getLogger(__name__)


def untraversable(path: Path) -> Path | None:
    """The first of ``path`` and its parents that the sandbox user cannot traverse (bubblewrap
    runs as that user and must reach what it mounts), or None."""
    if os.geteuid() != 0:
        return None  # the sandbox runs as the caller, who reaches it
    for folder in (path, *path.resolve().parents):
        if not folder.stat().st_mode & 0o001:
            return folder
    return None


def temp_root(work_root: str | os.PathLike | None = None) -> Path:
    """Where our temporary folders go: ``work_root`` when given, else ``TMPDIR`` when the sandbox
    user can traverse it, else the first of ``/tmp``, ``/var/tmp``, ``/dev/shm`` it can (a
    private ``TMPDIR``, mode 0700 as ``mktemp -d`` makes it, is never opened up)."""
    if work_root is not None:
        root = Path(work_root)
        if not root.is_dir():
            raise ValueError(f"work_root {root} is not a directory")
        closed = untraversable(root)
        if closed is not None:
            raise ValueError(
                f"work_root {root} is not traversable by the sandbox user (uid {SANDBOX_UID}): "
                f"chmod o+x {closed} (build directories inside stay private, mode 0711)"
            )
        return root
    tmpdir = Path(tempfile.gettempdir())
    for candidate in (tmpdir, Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")):
        with contextlib.suppress(OSError):
            if candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK) and (
                    untraversable(candidate) is None):  # fmt: skip
                if candidate != tmpdir:
                    logger.info("%s is private to its owner: sandbox folders go to %s",
                                tmpdir, candidate)  # fmt: skip
                return candidate
    raise SandboxError(
        f"no temporary folder the sandbox user (uid {SANDBOX_UID}) can traverse: TMPDIR "
        f"({tmpdir}), /tmp, /var/tmp and /dev/shm are private or missing; pass work_root "
        "(coreb execute --work-root DIR) with a folder whose parents are all o+x"
    )


def make_temp_dir(kind: str, root: Path | None = None) -> Path:
    """A fresh private folder of ours (named after its owner process) in ``root``."""
    return Path(tempfile.mkdtemp(prefix=owned_prefix(kind), dir=root or temp_root()))


def reclaim_leftovers(folders: Iterable[Path] = ()) -> dict[str, int]:
    """Remove the cgroups (all controllers) and the folders in ``folders`` that runs killed
    without a chance to clean up (SIGKILL, a crash) left: only what is named after a process
    that no longer runs, never a live run's, nor anything without an owner in its name.
    Returns how many cgroups and folders were removed."""
    removed = {"cgroups": 0, "folders": 0}
    for controller in CONTROLLERS:
        with contextlib.suppress(OSError):
            for entry in (cgroups.CGROUP_ROOT / controller).iterdir():
                if entry.is_dir() and left_by_dead_owner(entry.name):
                    kill_cgroup_members(entry)
                    if remove_cgroup(entry):
                        removed["cgroups"] += 1
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in Path(folder).iterdir():
                if entry.is_dir() and left_by_dead_owner(entry.name):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed["folders"] += not entry.exists()
    if any(removed.values()):
        logger.warning("reclaimed %d cgroups and %d folders left by killed runs",
                       removed["cgroups"], removed["folders"])  # fmt: skip
    return removed
