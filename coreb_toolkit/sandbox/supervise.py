"""Supervising a run to its end: draining its output pipes into capped files and enforcing
the wall-clock, CPU-time and output limits (shared by one-shot runs and sessions)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from coreb_toolkit.sandbox.cgroups import CGroup
from coreb_toolkit.sandbox.limits import Limits

CPU_POLL_S = 0.05  # how often a running tree's CPU time is checked
CHUNK = 65536


def read_available(fd: int) -> bytes:
    """What a non-blocking pipe holds now."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def tail_text(path: Path, size: int = 2000) -> str:
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read().decode("utf-8", errors="replace").strip()
    return ""


def supervise(
    exit_fd: int,
    on_exit: Callable[[], None],
    stop: Callable[[], None],
    group: CGroup | None,
    limits: Limits,
    start: float,
    streams: dict[int, BinaryIO],
    cpu0: float = 0.0,
    stop_grace_s: float | None = None,
) -> tuple[bool, bool, bool]:
    """Drain the output pipes into their files and enforce the limits until the run ends.

    The run's end is ``exit_fd`` turning readable (a pidfd, or the sandbox runner's answer),
    handled by ``on_exit``. ``stop`` kills the run: the moment a stream passes
    ``limits.output_bytes``, the wall clock passes its limit, or the tree's CPU time since
    ``cpu0`` (checked every ``CPU_POLL_S``) passes its limit. Returns ``(ended, timed_out,
    output_exceeded)``; ``ended`` is False only when the end did not come within
    ``stop_grace_s`` of a stop.
    """
    deadline = start + limits.wall_time_s
    written = dict.fromkeys(streams, 0)
    open_fds = set(streams)
    poller = select.poll()
    poller.register(exit_fd, select.POLLIN)
    for fd in streams:
        poller.register(fd, select.POLLIN)
    ended = timed_out = exceeded = False
    stopped_at: float | None = None

    def kill() -> None:
        nonlocal stopped_at
        stopped_at = stopped_at or time.monotonic()
        stop()

    while not ended or open_fds:
        now = time.monotonic()
        if not ended and not timed_out and now >= deadline:
            timed_out = True
            kill()
        if not ended and stopped_at is not None and stop_grace_s is not None and (
                now - stopped_at > stop_grace_s):  # fmt: skip
            break
        if ended and now > deadline + 1.0:
            break  # a stream held open by nothing we can kill: give up on its tail
        wait_s = CPU_POLL_S if ended or timed_out else max(0.0, min(deadline - now, CPU_POLL_S))
        for fd, _ in poller.poll(1000 * wait_s):
            if fd == exit_fd:
                poller.unregister(exit_fd)
                ended = True
                on_exit()
                continue
            chunk = os.read(fd, CHUNK)
            if not chunk:  # end of stream
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            room = limits.output_bytes - written[fd]
            if room > 0:  # past the cap, stop copying
                streams[fd].write(chunk[:room])
            written[fd] += len(chunk)
            if written[fd] > limits.output_bytes and not exceeded:
                exceeded = True
                kill()
        if (
            not ended
            and not timed_out
            and group is not None
            and group.cpu_time_s() - cpu0 > limits.cpu_time_s
        ):
            timed_out = True
            kill()
    return ended, timed_out, exceeded


def kill_session(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
