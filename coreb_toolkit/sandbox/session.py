"""One sandbox for all the runs of a candidate: the resident runner (``zygote.c``) as the
sandbox's init starts every run as a fresh process, with per-run accounting from the
session's cgroups."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from coreb_toolkit.owners import owned_prefix
from coreb_toolkit.sandbox import bwrap, seccomp
from coreb_toolkit.sandbox.bwrap import AppCopy, enter_argv, seccomp_fd_of_filter
from coreb_toolkit.sandbox.cgroups import CGroup
from coreb_toolkit.sandbox.limits import (
    SETUP_TIMEOUT_S,
    STOP_GRACE_S,
    IsolationUnavailable,
    Limits,
    RunOutcome,
    SessionError,
    Stopper,
)
from coreb_toolkit.sandbox.supervise import kill_session, supervise

logger = logging.getLogger(__name__)

ZYGOTE_SOURCE = Path(__file__).with_name("zygote.c")
ZYGOTE_PATH = "/.sandbox/zygote"  # where the resident runner is copied inside the sandbox
_zygote_lock = threading.Lock()
_zygote: dict[str, bytes | None] = {}


def zygote_binary() -> bytes | None:
    """The resident runner (``coreb_toolkit/sandbox/zygote.c``) compiled once per process (its
    executable's bytes: it is copied into each sandbox, and nothing of it stays on disk), or
    ``None`` (with a warning) where it cannot be built: callers then fall back to one fresh
    sandbox per run."""
    with _zygote_lock:
        if "binary" in _zygote:
            return _zygote["binary"]
        _zygote["binary"] = None
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            logger.warning("no C compiler (cc/gcc): one fresh sandbox per test run (slower)")
            return None
        root = Path(tempfile.mkdtemp(prefix=owned_prefix("zygote")))
        try:
            binary = root / "zygote"
            build = subprocess.run(
                [compiler, "-O2", "-o", str(binary), str(ZYGOTE_SOURCE)],
                capture_output=True,
                text=True,
                check=False,
            )
            if build.returncode != 0:
                logger.warning("building %s failed (%s): one fresh sandbox per test run",
                               ZYGOTE_SOURCE, build.stderr.strip()[-500:])  # fmt: skip
                return None
            _zygote["binary"] = binary.read_bytes()
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return _zygote["binary"]


def _zygote_fd(zygote: bytes) -> int:
    """A memory file holding the resident runner, for bubblewrap's ``--file``."""
    fd = os.memfd_create("coreb-zygote", os.MFD_CLOEXEC)
    try:
        os.write(fd, zygote)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


class SandboxSession:
    """One sandbox (bubblewrap namespaces, mounts, cgroups) for many runs of one command.

    The executor runs every test of a candidate in one session: the sandbox and its cgroups are
    set up once, and each run is a fresh process started by the sandbox's init, the resident
    runner ``coreb_toolkit/sandbox/zygote.c``. Before each run's result is returned every process
    of it has
    been killed and reaped, ``/work``, ``/tmp`` and ``/dev/shm`` emptied at any depth and every
    IPC object (SysV shared memory, message queues and semaphores, POSIX message queues)
    removed, so a run sees what a fresh sandbox would show it. The isolation is
    :func:`run_command`'s (the same bubblewrap command line, seccomp filter, unprivileged user
    and rlimits; the build and the runner are copies inside the sandbox); the accounting is per
    run from the session's cgroups: CPU time is the difference of ``cpuacct.usage``, peak memory
    the group's peak since the run started (it includes the runner's own few hundred KiB and the
    copy of the build, as a fresh sandbox's includes bubblewrap's), an OOM kill or a refused
    fork the difference of the ``oom_kill`` and ``pids.events`` counters. A run that kills the
    runner's sandbox (it cannot: it is PID 1) or a runner that stops answering ends the
    session; the next run starts a fresh one.

    ``zygote`` is the runner's executable (:func:`zygote_binary`) or a path to it. A sandbox
    that does not start raises :class:`SessionError`. Use as a context manager; :meth:`close`
    kills whatever is left and removes the cgroups.
    """

    START_TIMEOUT_S = SETUP_TIMEOUT_S

    def __init__(
        self,
        argv: Sequence[str],
        *,
        zygote: bytes | Path,
        app_dir: Path,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        memory_overhead_mb: int = 0,
        use_cgroups: bool = True,
        stopper: Stopper | None = None,
    ) -> None:
        self.bwrap = bwrap.bubblewrap_path()
        if self.bwrap is None:
            raise IsolationUnavailable("bubblewrap (bwrap) is not installed")
        if not isinstance(zygote, bytes):
            try:
                zygote = Path(zygote).read_bytes()
            except OSError as err:
                raise SessionError(f"the sandbox's init {zygote} cannot be read: {err}") from err
        self.argv = list(argv)
        self.zygote = zygote
        self.app_dir = app_dir
        self.limits = limits
        self.env = dict(env or {})
        self.memory_bytes = (limits.memory_mb + memory_overhead_mb) * 1024 * 1024
        self.use_cgroups = use_cgroups
        self.stopper = stopper
        self.group: CGroup | None = None
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.starts = 0
        self._start()

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- life cycle ----------------------------------------------------------------------
    def _start(self) -> None:
        if self.stopper is not None:
            self.stopper.check()
        self.starts += 1
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        copy = AppCopy(self.app_dir)
        fds = [child.fileno(), *copy.fds]
        try:
            fds.append(_zygote_fd(self.zygote))
            zygote_fd = fds[-1]
            seccomp_fd = None
            if seccomp.supported():
                seccomp_fd = seccomp_fd_of_filter()
                fds.append(seccomp_fd)
            # the copy of the build is charged to the session, not to its programs
            memory_bytes = self.memory_bytes + copy.bytes
            self.group = CGroup(self.limits, memory_bytes) if self.use_cgroups else None
            box = bwrap.bubblewrap_argv(
                self.bwrap, self.app_dir, False, self.limits, self.env, (), seccomp_fd,
                as_pid_1=True, app_args=copy.args, files=[(zygote_fd, ZYGOTE_PATH)],
            )  # fmt: skip
            full = [*box, ZYGOTE_PATH, str(child.fileno()), "--", *self.argv]
            self.proc = subprocess.Popen(
                enter_argv(full, self.group, self.limits),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                pass_fds=tuple(fds),
            )
        except BaseException:
            host.close()
            self._teardown()
            raise
        finally:
            child.close()
            for fd in fds[1:]:
                os.close(fd)
            copy.fds = []
        self.sock = host
        ready = select.select([host], [], [], self.START_TIMEOUT_S)[0]
        hello = host.recv(64) if ready else b""
        if hello != b"I":
            detail = self._stderr_tail()
            self.close()
            raise SessionError(
                f"the sandbox did not start: {detail or f'no answer in {self.START_TIMEOUT_S} s'}"
            )

    def _stderr_tail(self) -> str:
        if self.proc is None or self.proc.stderr is None:
            return ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1.0)
        if self.proc.returncode is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace").strip()[-2000:]

    def _kill(self) -> None:
        """Kill the whole sandbox now (from any thread): the run in flight ends, so does the
        session."""
        proc = self.proc
        if proc is not None:
            kill_session(proc.pid)

    def _teardown(self) -> None:
        if self.proc is not None:
            kill_session(self.proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)
            if self.proc.stderr is not None:
                self.proc.stderr.close()
            self.proc = None
        if self.group is not None:
            self.group.kill_all()
            self.group.remove()
            self.group = None

    def close(self) -> None:
        """End the session: the runner exits, everything left is killed, the cgroups go."""
        if self.sock is not None:
            self.sock.close()  # end of stream: the runner kills what is left and exits
            self.sock = None
            if self.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=1.0)
        self._teardown()

    # -- one run -------------------------------------------------------------------------
    def run(self, stdin_path: Path | None, stdout_path: Path, stderr_path: Path) -> RunOutcome:
        """Run the command once, as :func:`run_command` would, in this session's sandbox."""
        if self.stopper is None:
            return self._run(stdin_path, stdout_path, stderr_path)
        with self.stopper.watching(self._kill):
            return self._run(stdin_path, stdout_path, stderr_path)

    def _run(self, stdin_path: Path | None, stdout_path: Path, stderr_path: Path) -> RunOutcome:
        if self.sock is not None and self.proc is not None and self.proc.poll() is not None:
            self.close()  # the sandbox ended after the last run (its runner was OOM-killed)
        if self.sock is None:
            self._start()
        sock = self.sock
        if sock is None:  # _start() returns with a socket or raises
            raise SessionError("the sandbox session has no connection to its runner")
        group, limits = self.group, self.limits
        cpu0 = oom0 = forks0 = 0
        if group is not None:
            group.reset_peak()
            cpu0 = group.cpu_time_s()
            oom0 = group.oom_kills()
            forks0 = group.process_limit_hits()
        stdin = os.open(stdin_path, os.O_RDONLY) if stdin_path is not None else (
            os.open(os.devnull, os.O_RDONLY))  # fmt: skip
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        status: int | None = None
        elapsed_ns = 0
        try:
            with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
                start = time.monotonic()
                try:
                    socket.send_fds(sock, [b"R"], [stdin, out_w, err_w])
                finally:
                    for fd in (stdin, out_w, err_w):
                        os.close(fd)
                replies: list[bytes] = []
                sent_kill = []

                def stop() -> None:  # the runner kills the run and answers as usual
                    if not sent_kill:
                        sent_kill.append(True)
                        with contextlib.suppress(OSError):
                            sock.send(b"K")

                def on_exit() -> None:  # the answer, or end of stream if the runner is gone
                    replies.append(sock.recv(64))

                _, timed_out, output_exceeded = supervise(
                    sock.fileno(), on_exit, stop, group, limits, start,
                    {out_r: out, err_r: err}, cpu0, stop_grace_s=STOP_GRACE_S,
                )  # fmt: skip
                reply = replies[0] if replies and replies[0].startswith(b"X ") else None
                wall = time.monotonic() - start
        finally:
            os.close(out_r)
            os.close(err_r)
        if reply is not None:
            _, code, ns = reply.split()
            status, elapsed_ns = int(code), int(ns)
        cpu = group.cpu_time_s() - cpu0 if group is not None else None
        peak = group.peak_memory() if group is not None else None
        oom = group.oom_kills() > oom0 if group is not None else False
        forks_refused = group.process_limit_hits() > forks0 if group is not None else False
        if status is None:  # the runner is gone or stuck: this session is over
            self.close()
            exit_code = 128 + signal.SIGKILL
        elif os.WIFEXITED(status):
            exit_code = os.WEXITSTATUS(status)
        else:
            exit_code = 128 + os.WTERMSIG(status)
        if cpu is not None and cpu > limits.cpu_time_s:
            timed_out = True
        return RunOutcome(
            exit_code=exit_code,
            wall_time_s=elapsed_ns / 1e9 if elapsed_ns else wall,
            cpu_time_s=cpu,
            peak_memory_bytes=peak,
            timed_out=timed_out,
            memory_exceeded=oom,
            output_exceeded=output_exceeded,
            process_limit=forks_refused,
        )
