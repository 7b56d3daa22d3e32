"""cgroup v1 accounting of a whole process tree: one fresh group per run (or session) in the
``memory``, ``pids`` and ``cpuacct`` hierarchies, named after its owner process
(:mod:`coreb_toolkit.owners`) so that what a killed run left can be reclaimed."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path

from coreb_toolkit.owners import owned_prefix
from coreb_toolkit.sandbox.limits import Limits, SandboxError

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuacct")


def kill_cgroup_members(path: Path, spare: int | None = None) -> bool:
    """SIGKILL every process in the cgroup at ``path`` (but ``spare``) until none is left;
    whether it emptied."""
    for _ in range(200):
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            return True
        pids = [p for p in pids if p != spare]
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    logger.error("processes survive in %s after repeated SIGKILL", path)
    return False


def remove_cgroup(path: Path) -> bool:
    for _ in range(100):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return False
        except OSError:  # still emptying
            time.sleep(0.005)
    return False


def cgroups_available() -> bool:
    """Whether fresh cgroups can be created here (cgroup v1 memory, pids, cpuacct)."""
    try:
        for controller in CONTROLLERS:
            probe = CGROUP_ROOT / controller / f"{owned_prefix('probe')}{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            probe.rmdir()
        return True
    except OSError:
        return False


class CGroup:
    """One fresh cgroup per controller for one run (or session)."""

    def __init__(self, limits: Limits, memory_bytes: int) -> None:
        name = f"{owned_prefix('sandbox')}{uuid.uuid4().hex[:8]}"
        self.paths = {c: CGROUP_ROOT / c / name for c in CONTROLLERS}
        try:
            for path in self.paths.values():
                path.mkdir()
            self._write("memory", "memory.limit_in_bytes", memory_bytes)
            swap = self.paths["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():  # no swapping out of the cap
                swap.write_text(str(memory_bytes))
            self._write("pids", "pids.max", limits.max_processes)
        except OSError as err:
            self.remove()
            raise SandboxError(
                f"cannot set up the run's cgroup {name} under {CGROUP_ROOT}: {err} (the sandbox "
                "needs root and writable cgroup v1 memory, pids and cpuacct hierarchies)"
            ) from err

    def _write(self, controller: str, name: str, value: object) -> None:
        (self.paths[controller] / name).write_text(str(value))

    def _read(self, controller: str, name: str) -> str:
        return (self.paths[controller] / name).read_text()

    @property
    def procs_files(self) -> list[str]:
        return [str(p / "cgroup.procs") for p in self.paths.values()]

    def cpu_time_s(self) -> float:
        return int(self._read("cpuacct", "cpuacct.usage")) / 1e9

    def peak_memory(self) -> int:
        return int(self._read("memory", "memory.max_usage_in_bytes"))

    def oom_kills(self) -> int:
        """How many processes of the group the kernel's OOM killer killed (its limit was hit).

        Only the ``oom_kill`` counter says so: ``failcnt`` also counts page-cache reclaim at the
        limit, which a passing program may cause.
        """
        for line in self._read("memory", "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def process_limit_hits(self) -> int:
        """How many forks (processes or threads) the kernel refused at ``pids.max``."""
        try:
            text = self._read("pids", "pids.events")
        except OSError:  # kernels before 4.? have no pids.events: the cap goes unnamed
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                return int(value)
        return 0

    def reset_peak(self) -> None:
        """Restart the peak-memory record from the group's current usage."""
        self._write("memory", "memory.max_usage_in_bytes", 0)

    def kill_all(self, spare: int | None = None) -> None:
        """SIGKILL every process left in the group (but ``spare``) until none is left."""
        kill_cgroup_members(self.paths["pids"], spare)

    def remove(self) -> None:
        for path in self.paths.values():
            remove_cgroup(path)
