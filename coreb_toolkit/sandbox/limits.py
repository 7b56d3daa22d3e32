"""What one sandboxed run is: its limits, its outcome, the errors of our own, and the stopper
that interrupts every run in flight. Standard library only."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass

SETUP_TIMEOUT_S = 30.0  # how long a sandbox may take to start before that is an error
STOP_GRACE_S = 2.0  # after a kill, how long the sandbox may take to end before a harder one


class IsolationUnavailable(RuntimeError):
    """bubblewrap is missing and the caller did not opt out of isolation."""


class SandboxError(RuntimeError):
    """Our own sandbox could not be set up or started (bubblewrap, the cgroups, the init, the
    build folder): an error of the run, raised with the reason, never a candidate's verdict."""


class SessionError(SandboxError):
    """The resident sandbox could not be started."""


class RunAborted(RuntimeError):
    """The executor was interrupted (:meth:`Stopper.stop`): no run starts any more."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run.

    Attributes:
        wall_time_s: wall-clock limit; the whole tree is killed past it.
        cpu_time_s: CPU-time limit of the whole tree (all processes and threads).
        memory_mb: memory cap of the whole tree (RSS + page cache + tmpfs).
        max_processes: processes and threads in the tree (fork/thread bombs).
        output_bytes: cap on stdout (and on any single file the program writes).
        tmpfs_mb: size of each of the writable tmpfs mounts.
    """

    wall_time_s: float = 10.0
    cpu_time_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 64
    output_bytes: int = 16 * 1024 * 1024
    tmpfs_mb: int = 64

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class RunOutcome:
    """What the kernel says about one run."""

    # The command's exit status as a shell reports it: a program killed by signal N shows as
    # 128 + N (bubblewrap's convention), so it is indistinguishable from exit(128 + N); the
    # limits below are therefore decided from our own measurements, never from exit codes.
    exit_code: int
    wall_time_s: float
    cpu_time_s: float | None
    peak_memory_bytes: int | None
    timed_out: bool  # wall-clock or CPU limit (measured by us, not guessed from exit codes)
    memory_exceeded: bool
    output_exceeded: bool
    # the kernel refused a fork or a thread at the process cap (pids.events; cgroups only)
    process_limit: bool = False


class Stopper:
    """Ends every run in flight at once, and refuses new ones (an interrupted executor)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kills: dict[int, Callable[[], None]] = {}
        self.stopped = False

    def check(self) -> None:
        if self.stopped:
            raise RunAborted("the executor was interrupted: no new run starts")

    @contextlib.contextmanager
    def watching(self, kill: Callable[[], None]):
        """While the block runs, :meth:`stop` calls ``kill``."""
        with self._lock:
            self.check()
            key = id(kill)
            self._kills[key] = kill
        try:
            yield
        finally:
            with self._lock:
                self._kills.pop(key, None)

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            kills = list(self._kills.values())
        for kill in kills:
            with contextlib.suppress(Exception):
                kill()
