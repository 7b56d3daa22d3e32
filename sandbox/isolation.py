"""Running one command in isolation, with the kernel's accounting of the whole process tree.

Isolation (bubblewrap: a fresh sandbox per run with :func:`run_command`, or one sandbox whose
init starts every run of a candidate as a fresh process with :class:`SandboxSession`):

* the sandbox is started by an unprivileged host user (``nobody``, uid 65534, no capabilities,
  no supplementary groups) even when the caller is root: a user namespace created by root maps
  the sandbox user to host root, whose identity alone opens ``/proc/sys`` and root-owned files
  for writing (found by the adversarial suite: a sandboxed program could rewrite
  ``kernel.core_pattern``);
* every namespace unshared: no network (loopback only, no DNS), own PID namespace (nothing can
  see or signal the host's processes, and everything dies with the sandbox's init), own IPC,
  UTS and user namespace, and no nested ones; ``/proc/sys`` is mounted read-only, and so are
  the root and ``/dev`` once set up;
* a seccomp filter (:mod:`sandbox.seccomp`) refusing sockets other than Unix ones, whose
  kernel buffers would escape the memory cap, and system calls of other ABIs;
* a minimal read-only view of the system (``/usr`` and the few ``/etc`` files runtimes need; no
  ``/etc/shadow``, no home, no repository), the candidate's build directory read-only at ``/app``
  and a fresh size-capped tmpfs at ``/work``, ``/tmp`` and ``/dev/shm``;
* a cleared environment with a minimal one passed in (no secrets such as ``HF_TOKEN``).

Limits and accounting (cgroup v1, one fresh group per run, or per session, in the ``memory``,
``pids`` and ``cpuacct`` hierarchies): the memory cap counts the real memory of the whole tree,
tmpfs files included, and works for every runtime (an address-space cap breaks Go and Java);
``pids.max`` stops fork bombs and thread bombs; CPU time is the tree's ``cpuacct.usage``, polled
against the CPU limit; peak memory is ``memory.max_usage_in_bytes``. Per-process rlimits add a
file-size cap (output limit), no core dumps and a descriptor cap. A wall-clock limit kills the
whole group. When the run ends, every process left in its cgroup is killed and the group removed
(in a session: every process of the run is killed and reaped by the sandbox's init before the
run's result comes back): nothing outlives a run.
"""

from __future__ import annotations

import atexit
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
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sandbox import seccomp

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuacct")
CPU_POLL_S = 0.05  # how often a running tree's CPU time is checked
_CHUNK = 65536
_GROUP_PREFIX = "coreb-sandbox"

# The only /etc entries a runtime needs (dynamic loader, Java's config, the alternatives links).
_ETC_BINDS = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/java-17-openjdk",
    "/etc/localtime",
)
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_UID = 65534  # nobody: the host user every sandboxed (and opted-out) command runs as


class IsolationUnavailable(RuntimeError):
    """bubblewrap is missing and the caller did not opt out of isolation."""


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


def bubblewrap_path() -> str | None:
    return shutil.which("bwrap")


def cgroups_available() -> bool:
    """Whether fresh cgroups can be created here (cgroup v1 memory, pids, cpuacct)."""
    try:
        for controller in CONTROLLERS:
            probe = CGROUP_ROOT / controller / f"{_GROUP_PREFIX}-probe-{os.getpid()}"
            probe.mkdir()
            probe.rmdir()
        return True
    except OSError:
        return False


class _CGroup:
    """One fresh cgroup per controller for one run."""

    def __init__(self, limits: Limits, memory_bytes: int) -> None:
        name = f"{_GROUP_PREFIX}-{uuid.uuid4().hex[:12]}"
        self.paths = {c: CGROUP_ROOT / c / name for c in CONTROLLERS}
        for path in self.paths.values():
            path.mkdir()
        self._write("memory", "memory.limit_in_bytes", memory_bytes)
        swap = self.paths["memory"] / "memory.memsw.limit_in_bytes"
        if swap.exists():  # no swapping out of the cap
            swap.write_text(str(memory_bytes))
        self._write("pids", "pids.max", limits.max_processes)

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

    def reset_peak(self) -> None:
        """Restart the peak-memory record from the group's current usage."""
        self._write("memory", "memory.max_usage_in_bytes", 0)

    def kill_all(self) -> None:
        """SIGKILL every process left in the group until it is empty."""
        for _ in range(200):
            pids = [int(p) for p in self._read("pids", "cgroup.procs").split()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
        logger.error("processes survive in %s after repeated SIGKILL", self.paths["pids"])

    def remove(self) -> None:
        for path in self.paths.values():
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still emptying
                    time.sleep(0.005)


def bubblewrap_argv(
    bwrap: str,
    app_dir: Path,
    app_writable: bool,
    limits: Limits,
    env: Mapping[str, str],
    binds: Sequence[tuple[Path, str, bool]] = (),
    seccomp_fd: int | None = None,
    as_pid_1: bool = False,
) -> list[str]:
    """The bubblewrap command line that confines one run (``as_pid_1``: the command is the
    namespace's init, with no bubblewrap reaper above it)."""
    tmpfs_bytes = str(limits.tmpfs_mb * 1024 * 1024)
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",  # no nested namespaces: less kernel surface for the program
        "--die-with-parent",
        "--new-session",
        "--uid", "65534",
        "--gid", "65534",
        "--hostname", "sandbox",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/sbin", "/sbin",
    ]  # fmt: skip
    for path in _ETC_BINDS:
        argv += ["--ro-bind-try", path, path]
    argv += [
        "--proc", "/proc",
        "--ro-bind", "/proc/sys", "/proc/sys",
        "--dev", "/dev",
        "--size", tmpfs_bytes, "--tmpfs", "/dev/shm",
        "--size", tmpfs_bytes, "--tmpfs", "/tmp",
        "--bind" if app_writable else "--ro-bind", str(app_dir), "/app",
        "--size", tmpfs_bytes, "--tmpfs", "/work",
        *[a for src, dest, rw in binds for a in ("--bind" if rw else "--ro-bind", str(src), dest)],
        # The root and /dev are bubblewrap's own tmpfs mounts: read-only once set up, so the
        # only writable places are the size-capped /work, /tmp and /dev/shm (and /app, builds).
        "--remount-ro", "/dev",
        "--remount-ro", "/",
        "--chdir", "/app" if app_writable else "/work",
        "--clearenv",
        "--setenv", "PATH", SANDBOX_PATH,
        "--setenv", "HOME", "/work",
        "--setenv", "TMPDIR", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
    ]  # fmt: skip
    for key, value in env.items():
        argv += ["--setenv", key, value]
    if as_pid_1:
        argv.append("--as-pid-1")
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return [*argv, "--"]


def give_to_sandbox(path: Path) -> None:
    """Make ``path`` (recursively) owned by the sandbox user, so builds can write there."""
    if os.geteuid() != 0:
        return
    os.chown(path, SANDBOX_UID, SANDBOX_UID)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


def _drop_privileges() -> list[str]:
    """argv prefix that runs the rest as the unprivileged sandbox user (when we are root)."""
    if os.geteuid() != 0:
        return []
    return [
        "/usr/bin/setpriv",
        f"--reuid={SANDBOX_UID}",
        f"--regid={SANDBOX_UID}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def _unsandboxed_env(env: Mapping[str, str]) -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", **env}


def _seccomp_fd() -> int:
    """A pipe's read end holding the seccomp program, for bubblewrap's ``--seccomp FD``."""
    read, write = os.pipe()
    os.write(write, seccomp.filter_program())
    os.close(write)
    return read


def _enter(full: Sequence[str], group: _CGroup | None, limits: Limits,
           data_cap: int | None = None) -> list[str]:  # fmt: skip
    """argv that enters ``group``, drops privileges, sets per-process limits, then execs ``full``.

    A small shell enters the cgroups and execs the rest: no Python code runs between fork and
    exec (preexec_fn is unsafe with threads).
    """
    prelude = ""
    if group is not None:
        prelude = "".join(f'echo $$ > "{p}" && ' for p in group.procs_files)
    rlimits = [
        # Files a run can write live on its capped tmpfs mounts or, for builds, in /app on the
        # host disk: no file may outgrow the tmpfs size (stdout/stderr are pipes, capped apart).
        f"--fsize={limits.tmpfs_mb * 1024 * 1024}",
        "--core=0",
        "--nofile=256",
        f"--cpu={int(limits.cpu_time_s) + 1}",
    ]
    if data_cap is not None:
        rlimits.append(f"--data={data_cap}")
    return [
        "/bin/sh", "-c", prelude + 'exec "$@"', "sandbox-enter",
        *_drop_privileges(),
        "/usr/bin/prlimit", *rlimits, "--", *full,
    ]  # fmt: skip


def run_command(
    argv: Sequence[str],
    *,
    app_dir: Path,
    limits: Limits,
    stdin_path: Path | None,
    stdout_path: Path,
    stderr_path: Path,
    env: Mapping[str, str] | None = None,
    app_writable: bool = False,
    isolate: bool = True,
    memory_overhead_mb: int = 0,
    use_cgroups: bool = True,
    binds: Sequence[tuple[Path, str, bool]] = (),
) -> RunOutcome:
    """Run ``argv`` confined, feeding ``stdin_path`` and capturing stdout/stderr to files.

    ``app_dir`` is mounted at ``/app`` (writable only for the build step), ``binds`` are extra
    ``(host path, sandbox path, writable)`` mounts (build caches); with
    ``isolate=False`` (the caller's explicit opt-out) the command runs directly in ``app_dir``
    with the same limits but without the namespaces and mounts.
    """
    env = dict(env or {})
    pass_fds: tuple[int, ...] = ()
    memory_bytes = (limits.memory_mb + memory_overhead_mb) * 1024 * 1024
    bwrap = bubblewrap_path() if isolate else None
    if isolate and bwrap is None:
        raise IsolationUnavailable(
            "bubblewrap (bwrap) is not installed: refusing to run untrusted code without "
            "isolation. Install the Debian package bubblewrap, or opt out explicitly "
            "(isolation='none' / --no-isolation) on a machine you can afford to lose."
        )
    group = _CGroup(limits, memory_bytes) if use_cgroups else None
    if bwrap is not None:  # isolated (checked above)
        if seccomp.supported():
            pass_fds = (_seccomp_fd(),)
        argv_box = bubblewrap_argv(
            bwrap, app_dir, app_writable, limits, env, binds, pass_fds[0] if pass_fds else None
        )
        full = [*argv_box, *argv]
        cwd = None
        popen_env: dict[str, str] = {}
    else:
        # The same paths as in the sandbox, on the host: /app is the build directory.
        full = [str(app_dir) + a[4:] if a == "/app" or a.startswith("/app/") else a for a in argv]
        cwd = str(app_dir)
        popen_env = _unsandboxed_env(env)
        # No mounts without isolation: point variables and arguments at the host paths.
        for src, dest, _ in binds:
            popen_env = {k: (str(src) if v == dest else v) for k, v in popen_env.items()}
            full = [a.replace(dest + "/", f"{src}/") for a in full]

    wrapper = _enter(full, group, limits, data_cap=memory_bytes if group is None and not isolate
                     else None)  # fmt: skip

    # stdout/stderr are pipes that we drain into the files, capped: the program never holds a
    # descriptor of a host file it could grow (fallocate ignores RLIMIT_FSIZE).
    stdin = open(stdin_path, "rb") if stdin_path is not None else subprocess.DEVNULL  # noqa: SIM115
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    child_fds = [out_w, err_w, *pass_fds]
    try:
        with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    wrapper,
                    stdin=stdin,
                    stdout=out_w,
                    stderr=err_w,
                    cwd=cwd,
                    env=popen_env,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=pass_fds,
                )
            finally:
                for fd in child_fds:  # the child has its copies
                    os.close(fd)
                child_fds = []

            def stop() -> None:
                _kill_session(proc.pid)
                if group is not None:
                    group.kill_all()

            def on_exit() -> None:
                proc.wait()
                stop()  # anything left in the tree dies with the main process

            # a pidfd wakes us as soon as the process exits
            pidfd = os.pidfd_open(proc.pid)
            try:
                _, timed_out, output_exceeded = _supervise(
                    pidfd, on_exit, stop, group, limits, start, {out_r: out, err_r: err}
                )
            finally:
                os.close(pidfd)
                _kill_session(proc.pid)
            wall = time.monotonic() - start
        if group is not None:
            group.kill_all()
        cpu = group.cpu_time_s() if group is not None else None
        peak = group.peak_memory() if group is not None else None
        oom = group.oom_killed() if group is not None else False
    finally:
        for fd in (out_r, err_r, *child_fds):
            os.close(fd)
        if stdin is not subprocess.DEVNULL:
            stdin.close()
        if group is not None:  # on every path, errors included: no group or process outlives
            group.kill_all()
            group.remove()
    code = proc.returncode
    exit_code = code if code >= 0 else 128 - code  # killed before exec: as a shell shows it
    if cpu is not None and cpu > limits.cpu_time_s:
        timed_out = True
    if group is None and exit_code == 128 + signal.SIGXCPU:
        timed_out = True  # without cgroups, only the per-process CPU rlimit can tell
    return RunOutcome(
        exit_code=exit_code,
        wall_time_s=wall,
        cpu_time_s=cpu,
        peak_memory_bytes=peak,
        timed_out=timed_out,
        memory_exceeded=oom,
        output_exceeded=output_exceeded,
    )


def _supervise(
    exit_fd: int,
    on_exit: Callable[[], None],
    stop: Callable[[], None],
    group: _CGroup | None,
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
            chunk = os.read(fd, _CHUNK)
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


def _kill_session(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# -- one sandbox for all the runs of a candidate -------------------------------------------------
ZYGOTE_SOURCE = Path(__file__).with_name("zygote.c")
ZYGOTE_PATH = "/.sandbox/zygote"  # where the resident runner is mounted inside the sandbox
_zygote_lock = threading.Lock()
_zygote: dict[str, Path | None] = {}


def zygote_binary() -> Path | None:
    """The resident runner (``sandbox/zygote.c``) compiled once per process, or ``None`` (with a
    warning) where it cannot be built or the sandbox user could not reach it: callers then fall
    back to one fresh sandbox per run."""
    with _zygote_lock:
        if "path" in _zygote:
            return _zygote["path"]
        _zygote["path"] = None
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            logger.warning("no C compiler (cc/gcc): one fresh sandbox per test run (slower)")
            return None
        root = Path(tempfile.mkdtemp(prefix="coreb-zygote-"))
        atexit.register(shutil.rmtree, root, True)
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
        root.chmod(0o711)
        binary.chmod(0o755)
        closed = [p for p in root.resolve().parents if not p.stat().st_mode & 0o001]
        if os.geteuid() == 0 and closed:
            logger.warning("%s is not traversable by the sandbox user: one fresh sandbox per "
                           "test run", closed[0])  # fmt: skip
            return None
        _zygote["path"] = binary
        return binary


class SessionError(RuntimeError):
    """The resident sandbox could not be started."""


class SandboxSession:
    """One sandbox (bubblewrap namespaces, mounts, cgroups) for many runs of one command.

    The executor runs every test of a candidate in one session: the sandbox and its cgroups are
    set up once, and each run is a fresh process started by the sandbox's init, the resident
    runner ``sandbox/zygote.c``. Before each run's result is returned every process of it has
    been killed and reaped and ``/work``, ``/tmp`` and ``/dev/shm`` emptied, so a run sees what a
    fresh sandbox would show it. The isolation is :func:`run_command`'s (the same bubblewrap
    command line, seccomp filter, unprivileged user and rlimits); the accounting is per run from
    the session's cgroups: CPU time is the difference of ``cpuacct.usage``, peak memory the
    group's peak since the run started (it includes the runner's own few hundred KiB, as a fresh
    sandbox's includes bubblewrap's), an OOM kill the difference of the ``oom_kill`` counter. A
    run that kills the runner's sandbox (it cannot: it is PID 1) or a runner that stops
    answering ends the session; the next run starts a fresh one.

    Use as a context manager; :meth:`close` kills whatever is left and removes the cgroups.
    """

    START_TIMEOUT_S = 30.0

    def __init__(
        self,
        argv: Sequence[str],
        *,
        zygote: Path,
        app_dir: Path,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        memory_overhead_mb: int = 0,
        use_cgroups: bool = True,
    ) -> None:
        self.bwrap = bubblewrap_path()
        if self.bwrap is None:
            raise IsolationUnavailable("bubblewrap (bwrap) is not installed")
        self.argv = list(argv)
        self.zygote = zygote
        self.app_dir = app_dir
        self.limits = limits
        self.env = dict(env or {})
        self.memory_bytes = (limits.memory_mb + memory_overhead_mb) * 1024 * 1024
        self.use_cgroups = use_cgroups
        self.group: _CGroup | None = None
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
        self.starts += 1
        self.group = _CGroup(self.limits, self.memory_bytes) if self.use_cgroups else None
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        fds = [child.fileno()]
        try:
            if seccomp.supported():
                fds.append(_seccomp_fd())
            box = bubblewrap_argv(
                self.bwrap,
                self.app_dir,
                False,
                self.limits,
                self.env,
                [(self.zygote, ZYGOTE_PATH, False)],
                fds[1] if len(fds) > 1 else None,
                as_pid_1=True,
            )
            full = [*box, ZYGOTE_PATH, str(child.fileno()), "--", *self.argv]
            self.proc = subprocess.Popen(
                _enter(full, self.group, self.limits),
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
        self.sock = host
        ready = select.select([host], [], [], self.START_TIMEOUT_S)[0]
        hello = host.recv(64) if ready else b""
        if hello != b"I":
            detail = self._stderr_tail()
            self.close()
            raise SessionError(f"the sandbox did not start: {detail or 'no answer'}")

    def _stderr_tail(self) -> str:
        if self.proc is None or self.proc.stderr is None:
            return ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=1.0)
        if self.proc.returncode is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace").strip()[-2000:]

    def _teardown(self) -> None:
        if self.proc is not None:
            _kill_session(self.proc.pid)
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
        if self.sock is not None and self.proc is not None and self.proc.poll() is not None:
            self.close()  # the sandbox ended after the last run (its runner was OOM-killed)
        if self.sock is None:
            self._start()
        assert self.sock is not None
        group, limits = self.group, self.limits
        cpu0 = oom0 = 0
        if group is not None:
            group.reset_peak()
            cpu0 = group.cpu_time_s()
            oom0 = group.oom_kills()
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
                    socket.send_fds(self.sock, [b"R"], [stdin, out_w, err_w])
                finally:
                    for fd in (stdin, out_w, err_w):
                        os.close(fd)
                replies: list[bytes] = []
                sent_kill = []

                def stop() -> None:  # the runner kills the run and answers as usual
                    if not sent_kill:
                        sent_kill.append(True)
                        with contextlib.suppress(OSError):
                            self.sock.send(b"K")

                def on_exit() -> None:  # the answer, or end of stream if the runner is gone
                    replies.append(self.sock.recv(64))

                _, timed_out, output_exceeded = _supervise(
                    self.sock.fileno(), on_exit, stop, group, limits, start,
                    {out_r: out, err_r: err}, cpu0, stop_grace_s=2.0,
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
        )
