"""Naming what a process leaves on the host after itself, so that a later one can reclaim it.

Everything the toolkit leaves on the host while it works (cgroups, temporary folders, caches
being written) is named ``coreb-<kind>-<owner tag>-...``, where the owner tag is
``<pid>.<start time>.<pid namespace>`` of the process that made it. A later process reclaims
only what a dead owner left: the start time tells a process that reuses the pid apart from the
owner, the namespace keeps a run in another container (sharing the cgroups or the folder) from
being judged by pids that are not its own. Standard library only.

Example::

    folder = tempfile.mkdtemp(prefix=owned_prefix("build"))  # coreb-build-4242.9911.40265-...
    ...
    for entry in Path(tempfile.gettempdir()).iterdir():       # in a later process
        if left_by_dead_owner(entry.name):
            shutil.rmtree(entry)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = [
    "OWNED_NAME",
    "left_by_dead_owner",
    "owned_prefix",
    "owner_alive",
    "owner_of",
    "owner_tag",
    "pid_namespace",
    "process_start_time",
]

# ``coreb-<kind>-<pid>.<start>.<namespace>-``; a kind may itself hold dashes (``coreb-a-b-...``).
OWNED_NAME = re.compile(r"^coreb-(?:[a-z0-9]+-)+?(\d+)\.(\d+)\.(\d+)-")
_own_tags: dict[int, str] = {}


_HAS_PROC = Path("/proc/self/stat").exists()


def process_start_time(pid: int) -> int | None:
    """A process's start time (clock ticks since boot, ``/proc/PID/stat`` field 22), or None
    when no process ``pid`` runs. Without ``/proc`` (macOS, where only the builders run, never
    the sandbox) every live process reads 0: the owner check falls back to the pid alone."""
    if not _HAS_PROC:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return 0
        return 0
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from the last ")"
    return int(text[text.rindex(")") + 2 :].split()[19])


def pid_namespace() -> int:
    """This process's PID namespace (an inode number): pids mean something only within it
    (0 without ``/proc``)."""
    if not _HAS_PROC:
        return 0
    return os.stat("/proc/self/ns/pid").st_ino


def owner_tag(pid: int | None = None) -> str:
    """``"<pid>.<start time>.<pid namespace>"`` of a live process (default: this one). With the
    start time a later process that reuses the pid is not taken for the owner; with the
    namespace a run in another container that shares the cgroups or the folder is never judged
    by pids that are not its own.

    Raises:
        ProcessLookupError: no process ``pid`` runs.
    """
    pid = os.getpid() if pid is None else pid
    if pid in _own_tags:
        return _own_tags[pid]
    start = process_start_time(pid)
    if start is None:
        raise ProcessLookupError(f"no process {pid}")
    tag = f"{pid}.{start}.{pid_namespace()}"
    if pid == os.getpid():
        _own_tags[pid] = tag
    return tag


def owner_alive(tag: str) -> bool:
    """Whether the process named by an :func:`owner_tag` may still run: False only when it is
    of this PID namespace and no process with its pid and start time runs."""
    pid, start, namespace = tag.split(".")
    if int(namespace) != pid_namespace():
        return True  # not ours to judge
    return process_start_time(int(pid)) == int(start)


def owned_prefix(kind: str) -> str:
    """The name prefix of something of this process of ``kind``: ``coreb-<kind>-<owner tag>-``
    (``kind``: lowercase letters, digits and dashes, e.g. ``"sandbox"``, ``"zygote"``)."""
    return f"coreb-{kind}-{owner_tag()}-"


def owner_of(name: str) -> str | None:
    """The owner tag in one of our names (made with :func:`owned_prefix`), or None for a name
    that is not ours to judge."""
    match = OWNED_NAME.match(name)
    return f"{match[1]}.{match[2]}.{match[3]}" if match else None


def left_by_dead_owner(name: str) -> bool:
    """Whether ``name`` is one of ours whose owner no longer runs, so it may be reclaimed: never
    a live process's, nor anything without an owner in its name, nor another namespace's."""
    tag = owner_of(name)
    return tag is not None and not owner_alive(tag)
