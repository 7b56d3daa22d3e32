"""Scratch folders of a build, and reclaiming what killed builds left beside their output.

A build writes into a hidden scratch folder beside its output and moves it in with one rename
(:func:`~coreb_toolkit.builders.hub_folder.replace_folder`); the folder it replaces is moved
aside first. Both are named ``.<out name>.coreb-<tmp|old>-<host>-<owner tag>-...``: the owner
tag of :mod:`coreb_toolkit.owners` (pid, start time, pid namespace) tells a live owner from a
dead one whose pid was reused, and the host token keeps builds running on another host (a
folder shared over NFS) from ever being judged by this host's processes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from coreb_toolkit.owners import left_by_dead_owner, owned_prefix

logger = logging.getLogger(__name__)

SCRATCH_KINDS: tuple[str, ...] = ("tmp", "old")
"""``tmp``: a build being written; ``old``: the folder a build is replacing, moved aside."""


def host_token() -> str:
    """A short token of this host's name: owner tags mean something only on their own host."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def scratch_prefix(out: Path, kind: str) -> str:
    """``.<name>.coreb-<kind>-<host>-<owner tag>-``: the names of this process's scratch folders
    of ``kind`` (``tmp`` or ``old``) for the output folder ``out``."""
    if kind not in SCRATCH_KINDS:
        raise ValueError(f"scratch kind must be one of {SCRATCH_KINDS}, got {kind!r}")
    return f".{out.name}.{owned_prefix(f'{kind}-{host_token()}')}"


def scratch_folder(out_dir: str | os.PathLike[str]) -> Path:
    """A new, empty scratch folder beside ``out_dir``, named for its owner process, in which a
    build is written before :func:`~coreb_toolkit.builders.hub_folder.replace_folder` moves it
    in; one a killed process left is removed by the next build's :func:`reclaim_leftovers`."""
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(out, "tmp"), dir=out.parent))


def reclaim_leftovers(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the scratch folders that killed builds of ``out_dir`` left beside it.

    A build writes into ``.<name>.coreb-tmp-<host>-<owner>-*`` and moves the folder it replaces
    to ``.<name>.coreb-old-<host>-<owner>-*``. A SIGKILL (or a power cut) leaves them; only those
    of this host whose owner process is gone are touched. Where the kill came between moving the
    old folder aside and moving the new one in, the old folder is put back, so a killed rebuild
    never loses the previous build. Returns the paths removed or restored.
    """
    out = Path(out_dir)
    if not out.parent.is_dir():
        return []
    pattern = re.compile(
        rf"\.{re.escape(out.name)}\.(coreb-(tmp|old)-{host_token()}-\d+\.\d+\.\d+-[a-z0-9_]+)",
        re.ASCII,
    )
    dead: dict[str, list[Path]] = {"tmp": [], "old": []}
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match and left_by_dead_owner(match.group(1)):
            dead[match.group(2)].append(Path(entry.path))
    touched: list[Path] = []
    if dead["old"] and not os.path.lexists(out):
        newest = max(dead["old"], key=lambda p: p.lstat().st_mtime_ns)
        try:
            newest.rename(out)
        except OSError as err:  # another process restored it first, or it is gone
            logger.debug("could not restore %s: %s", newest, err)
        else:
            logger.warning("restored %s from %s, left by a killed build", out, newest)
            dead["old"].remove(newest)
            touched.append(newest)
    for path in dead["tmp"] + dead["old"]:
        logger.info("removing %s, left by a killed build", path)
        shutil.rmtree(path, ignore_errors=True)
        touched.append(path)
    return touched
