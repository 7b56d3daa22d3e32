"""Running one command in isolation, with the kernel's accounting of the whole process tree.

Isolation (bubblewrap, one fresh sandbox per run):

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

Limits and accounting (cgroup v1, one fresh group per run in the ``memory``, ``pids`` and
``cpuacct`` hierarchies): the memory cap counts the real memory of the whole tree, tmpfs files
included, and works for every runtime (an address-space cap breaks Go and Java); ``pids.max``
stops fork bombs and thread bombs; CPU time is the tree's ``cpuacct.usage``, polled against the
CPU limit; peak memory is ``memory.max_usage_in_bytes``. Per-process rlimits add a file-size cap
(output limit), no core dumps and a descriptor cap. A wall-clock limit kills the whole group.
When the run ends, every process left in its cgroup is killed and the group removed: nothing
outlives a run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
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

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer killed a process of the group (its limit was hit).

        Only the ``oom_kill`` counter says so: ``failcnt`` also counts page-cache reclaim at the
        limit, which a passing program may cause.
        """
        for line in self._read("memory", "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value) > 0
        return False

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
) -> list[str]:
    """The bubblewrap command line that confines one run."""
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
            seccomp_r, seccomp_w = os.pipe()
            os.write(seccomp_w, seccomp.filter_program())
            os.close(seccomp_w)
            pass_fds = (seccomp_r,)
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

    # A small shell enters the cgroups and sets per-process limits, then execs the command:
    # no Python code runs between fork and exec (preexec_fn is unsafe with threads).
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
    if group is None and not isolate:
        rlimits.append(f"--data={memory_bytes}")
    wrapper = [
        "/bin/sh", "-c", prelude + 'exec "$@"', "sandbox-enter",
        *_drop_privileges(),
        "/usr/bin/prlimit", *rlimits, "--", *full,
    ]  # fmt: skip

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
            try:
                timed_out, output_exceeded = _supervise(
                    proc, group, limits, start, {out_r: out, err_r: err}
                )
            finally:
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
    proc: subprocess.Popen,
    group: _CGroup | None,
    limits: Limits,
    start: float,
    streams: dict[int, BinaryIO],
) -> tuple[bool, bool]:
    """Drain the output pipes into their files and enforce the limits until ``proc`` ends.

    Returns ``(timed_out, output_exceeded)``. The tree is killed the moment a stream passes
    ``limits.output_bytes``, the wall clock passes its limit, or the tree's CPU time (checked
    every ``CPU_POLL_S``) passes its limit. A pidfd wakes us as soon as the process exits.
    """
    deadline = start + limits.wall_time_s
    written = dict.fromkeys(streams, 0)
    open_fds = set(streams)
    pidfd = os.pidfd_open(proc.pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    for fd in streams:
        poller.register(fd, select.POLLIN)

    def drain(fd: int) -> bool:
        """Copy what is readable; False at end of stream. Past the cap, stop copying."""
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            poller.unregister(fd)
            open_fds.discard(fd)
            return False
        room = limits.output_bytes - written[fd]
        if room > 0:
            streams[fd].write(chunk[:room])
        written[fd] += len(chunk)
        return True

    def stop() -> None:
        _kill_session(proc.pid)
        if group is not None:
            group.kill_all()

    timed_out = exceeded = exited = False
    try:
        while not exited or open_fds:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and not timed_out and not exited:
                timed_out = True
                stop()
            wait_s = max(0.0, min(remaining, CPU_POLL_S)) if not exited else CPU_POLL_S
            for fd, _ in poller.poll(1000 * wait_s):
                if fd == pidfd:
                    poller.unregister(pidfd)
                    proc.wait()
                    exited = True
                    stop()  # anything left in the tree dies with the main process
                else:
                    drain(fd)
                    if written[fd] > limits.output_bytes and not exceeded:
                        exceeded = True
                        stop()
            if (
                not exited
                and not timed_out
                and group is not None
                and group.cpu_time_s() > limits.cpu_time_s
            ):
                timed_out = True
                stop()
            if exited and time.monotonic() > deadline + 1.0:
                break  # a stream held open by nothing we can kill: give up on its tail
    finally:
        os.close(pidfd)
    return timed_out, exceeded


def _kill_session(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
