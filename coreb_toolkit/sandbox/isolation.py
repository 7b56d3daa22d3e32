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
* a seccomp filter (:mod:`coreb_toolkit.sandbox.seccomp`) refusing sockets other than Unix ones,
  whose
  kernel buffers would escape the memory cap, and system calls of other ABIs;
* a minimal read-only view of the system (``/usr`` and the few ``/etc`` files runtimes need; no
  ``/etc/shadow``, no home, no repository), the candidate's build read-only at ``/app`` (a copy
  inside the sandbox's own read-only root when its program runs, so no mount shows a host path
  in ``/proc/self/mountinfo``; the build folder itself, writable, while it is built) and a
  fresh size-capped tmpfs at ``/work``, ``/tmp`` and ``/dev/shm``;
* a cleared environment with a minimal one passed in (no secrets such as ``HF_TOKEN``).

Limits and accounting (cgroup v1, one fresh group per run, or per session, in the ``memory``,
``pids`` and ``cpuacct`` hierarchies): the memory cap counts the real memory of the whole tree,
tmpfs files included, and works for every runtime (an address-space cap breaks Go and Java);
``pids.max`` stops fork bombs and thread bombs (``pids.events`` says when a fork was refused);
CPU time is the tree's ``cpuacct.usage``, polled against the CPU limit; peak memory is
``memory.max_usage_in_bytes``. Per-process rlimits add a file-size cap (output limit), no core
dumps and a descriptor cap. A wall-clock limit kills the whole group. When the run ends, every
process left in its cgroup is killed and the group removed (in a session: every process of the
run is killed and reaped by the sandbox's init before the run's result comes back): nothing
outlives a run.

Our own failures are never a candidate's: a sandbox that does not start (bubblewrap's setup, the
cgroups, the init) raises :class:`SandboxError`. Bubblewrap reports a run's exit status
(``--json-status-fd``) only once its setup is done and it has started the run's first program,
our shell; the resident runner says so with a hello. What a candidate prints cannot fake either.

Everything this module leaves on the host while it works (cgroups, temporary folders) is named
``coreb-<kind>-<pid>.<start time>.<pid namespace>-...`` after the process that owns it, so a
later run can reclaim what a killed one left (:func:`reclaim_leftovers`) and never touches a live
run's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from coreb_toolkit.sandbox import seccomp

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuacct")
CPU_POLL_S = 0.05  # how often a running tree's CPU time is checked
_CHUNK = 65536
_GROUP_PREFIX = "coreb-sandbox"
SETUP_TIMEOUT_S = 30.0  # how long a sandbox may take to start before that is an error
STOP_GRACE_S = 2.0  # after a kill, how long the sandbox may take to end before a harder one

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
# The first program of a fresh run: bubblewrap reports an exit status only once it has started
# this shell, which then execs the run's command (a command that cannot be executed is then the
# run's failure, exit 126/127, and not one of our setup).
_RUN_SHELL = ("/bin/sh", "-c", 'exec "$@"', "sandbox-run")
# /app is copied into the sandbox (not mounted from the host) up to these sizes; a bigger build
# is mounted read-only, whose host path /proc/self/mountinfo then shows.
MAX_COPIED_FILES = 128
MAX_COPIED_BYTES = 32 * 1024 * 1024


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


def bubblewrap_path() -> str | None:
    return shutil.which("bwrap")


# -- who owns what we leave on the host -----------------------------------------------------------
_OWNED_NAME = re.compile(r"^coreb-(?:[a-z0-9]+-)+?(\d+)\.(\d+)\.(\d+)-")
_own_tags: dict[int, str] = {}


def _start_time(pid: int) -> int | None:
    """A process's start time (clock ticks since boot, ``/proc/PID/stat`` field 22), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from the last ")"
    return int(text[text.rindex(")") + 2 :].split()[19])


def _pid_namespace() -> int:
    """This process's PID namespace (an inode number): pids mean something only within it."""
    return os.stat("/proc/self/ns/pid").st_ino


def owner_tag(pid: int | None = None) -> str:
    """``"<pid>.<start time>.<pid namespace>"`` of a live process (default: this one). With the
    start time a later process that reuses the pid is not taken for the owner; with the
    namespace a run in another container that shares the cgroups or the folder is never judged
    by pids that are not its own."""
    pid = os.getpid() if pid is None else pid
    if pid in _own_tags:
        return _own_tags[pid]
    start = _start_time(pid)
    if start is None:
        raise ProcessLookupError(f"no process {pid}")
    tag = f"{pid}.{start}.{_pid_namespace()}"
    if pid == os.getpid():
        _own_tags[pid] = tag
    return tag


def owner_alive(tag: str) -> bool:
    """Whether the process named by an :func:`owner_tag` may still run: False only when it is
    of this PID namespace and no process with its pid and start time runs."""
    pid, start, namespace = tag.split(".")
    if int(namespace) != _pid_namespace():
        return True  # not ours to judge
    return _start_time(int(pid)) == int(start)


def owned_prefix(kind: str) -> str:
    """The name prefix of something of ours of ``kind``: ``coreb-<kind>-<owner tag>-``."""
    return f"coreb-{kind}-{owner_tag()}-"


def owner_of(name: str) -> str | None:
    """The owner tag in one of our names, or None for a name that is not ours to judge."""
    match = _OWNED_NAME.match(name)
    return f"{match[1]}.{match[2]}.{match[3]}" if match else None


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
            for entry in (CGROUP_ROOT / controller).iterdir():
                tag = owner_of(entry.name)
                if tag is not None and entry.is_dir() and not owner_alive(tag):
                    _kill_cgroup_members(entry)
                    if _remove_cgroup(entry):
                        removed["cgroups"] += 1
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in Path(folder).iterdir():
                tag = owner_of(entry.name)
                if tag is not None and entry.is_dir() and not owner_alive(tag):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed["folders"] += not entry.exists()
    if any(removed.values()):
        logger.warning("reclaimed %d cgroups and %d folders left by killed runs",
                       removed["cgroups"], removed["folders"])  # fmt: skip
    return removed


def _kill_cgroup_members(path: Path, spare: int | None = None) -> bool:
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


def _remove_cgroup(path: Path) -> bool:
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


class _CGroup:
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
        _kill_cgroup_members(self.paths["pids"], spare)

    def remove(self) -> None:
        for path in self.paths.values():
            _remove_cgroup(path)


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


class _AppCopy:
    """The build folder's files, opened for bubblewrap to copy into the sandbox's root at
    ``/app`` (``--file``; the root is remounted read-only): the program sees its build, and no
    mount of a host path. A build of more than ``MAX_COPIED_FILES`` files or
    ``MAX_COPIED_BYTES`` bytes is mounted read-only instead (``args`` is then None)."""

    def __init__(self, app_dir: Path) -> None:
        self.args: list[str] | None = ["--perms", "0555", "--dir", "/app"]
        self.fds: list[int] = []
        self.bytes = 0
        try:
            self._add(app_dir, "/app")
        except _TooBig:
            self.close()
            self.args, self.bytes = None, 0

    def _add(self, folder: Path, dest: str) -> None:
        args = self.args if self.args is not None else []
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                target = f"{dest}/{entry.name}"
                if entry.is_symlink():  # the build's own link, never followed on the host
                    args += ["--symlink", os.readlink(entry.path), target]
                elif entry.is_dir(follow_symlinks=False):
                    args += ["--perms", "0555", "--dir", target]
                    self._add(Path(entry.path), target)
                else:
                    # O_NONBLOCK: a FIFO the build made must not block us; only files count
                    fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    info = os.fstat(fd)
                    if not stat.S_ISREG(info.st_mode):
                        os.close(fd)
                        continue
                    self.fds.append(fd)
                    self.bytes += info.st_size
                    if len(self.fds) > MAX_COPIED_FILES or self.bytes > MAX_COPIED_BYTES:
                        raise _TooBig
                    perms = "0555" if info.st_mode & 0o111 else "0444"
                    args += ["--perms", perms, "--file", str(fd), target]

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []


class _TooBig(Exception):
    pass


def bubblewrap_argv(
    bwrap: str,
    app_dir: Path,
    app_writable: bool,
    limits: Limits,
    env: Mapping[str, str],
    binds: Sequence[tuple[Path, str, bool]] = (),
    seccomp_fd: int | None = None,
    as_pid_1: bool = False,
    *,
    app_args: Sequence[str] | None = None,
    files: Sequence[tuple[int, str]] = (),
    status_fd: int | None = None,
) -> list[str]:
    """The bubblewrap command line that confines one run (``as_pid_1``: the command is the
    namespace's init, with no bubblewrap reaper above it).

    ``app_args`` replace the mount of ``app_dir`` at ``/app`` (:class:`_AppCopy`'s copy);
    ``files`` are ``(descriptor, path)`` copied read-only and executable into the sandbox's root
    (the resident runner); ``status_fd`` gets bubblewrap's JSON status (``--json-status-fd``).
    """
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
        # POSIX message queues listed where the resident runner can remove them between runs
        "--mqueue", "/dev/mqueue",
        "--size", tmpfs_bytes, "--tmpfs", "/dev/shm",
        "--size", tmpfs_bytes, "--tmpfs", "/tmp",
        *(app_args if app_args is not None else
          ("--bind" if app_writable else "--ro-bind", str(app_dir), "/app")),
        "--size", tmpfs_bytes, "--tmpfs", "/work",
        *[a for fd, dest in files for a in ("--perms", "0555", "--file", str(fd), dest)],
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
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
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
    stopper: Stopper | None = None,
) -> RunOutcome:
    """Run ``argv`` confined, feeding ``stdin_path`` and capturing stdout/stderr to files.

    ``app_dir`` is mounted at ``/app`` (writable: the build step) or copied there (read-only:
    a run of the built program), ``binds`` are extra ``(host path, sandbox path, writable)``
    mounts (build caches); with ``isolate=False`` (the caller's explicit opt-out) the command
    runs directly in ``app_dir`` with the same limits but without the namespaces and mounts.
    ``stopper`` ends the run when the caller is interrupted.

    Raises :class:`SandboxError` when the sandbox does not start (nothing of ``argv`` ran).
    """
    env = dict(env or {})
    memory_bytes = (limits.memory_mb + memory_overhead_mb) * 1024 * 1024
    bwrap = bubblewrap_path() if isolate else None
    if isolate and bwrap is None:
        raise IsolationUnavailable(
            "bubblewrap (bwrap) is not installed: refusing to run untrusted code without "
            "isolation. Install the Debian package bubblewrap, or opt out explicitly "
            "(isolation='none' / --no-isolation) on a machine you can afford to lose."
        )
    if stopper is not None:
        stopper.check()
    # Descriptors the child inherits (closed here once it has them) and ours to close at the end.
    child_fds: list[int] = []
    own_fds: list[int] = []
    copy: _AppCopy | None = None
    group: _CGroup | None = None
    status_r: int | None = None
    try:
        if bwrap is not None:  # isolated (checked above)
            if not app_writable:
                copy = _AppCopy(app_dir)
                memory_bytes += copy.bytes  # the copy is charged to the run, not to its program
                child_fds += copy.fds
            status_r, status_w = os.pipe()
            os.set_blocking(status_r, False)
            own_fds.append(status_r)
            child_fds.append(status_w)
            seccomp_fd = _seccomp_fd() if seccomp.supported() else None
            if seccomp_fd is not None:
                child_fds.append(seccomp_fd)
            argv_box = bubblewrap_argv(
                bwrap, app_dir, app_writable, limits, env, binds, seccomp_fd,
                app_args=copy.args if copy is not None else None, status_fd=status_w,
            )  # fmt: skip
            full = [*argv_box, *_RUN_SHELL, *argv]
            cwd = None
            popen_env: dict[str, str] = {}
        else:
            # The same paths as in the sandbox, on the host: /app is the build directory.
            full = [str(app_dir) + a[4:] if a == "/app" or a.startswith("/app/") else a
                    for a in argv]  # fmt: skip
            cwd = str(app_dir)
            popen_env = _unsandboxed_env(env)
            # No mounts without isolation: point variables and arguments at the host paths.
            for src, dest, _ in binds:
                popen_env = {k: (str(src) if v == dest else v) for k, v in popen_env.items()}
                full = [a.replace(dest + "/", f"{src}/") for a in full]
        group = _CGroup(limits, memory_bytes) if use_cgroups else None
        wrapper = _enter(full, group, limits, data_cap=memory_bytes if group is None and not isolate
                         else None)  # fmt: skip
        outcome, started, stopped = _run_supervised(
            wrapper, cwd, popen_env, child_fds, group, limits, stdin_path, stdout_path,
            stderr_path, status_fd=status_r, stopper=stopper,
        )  # fmt: skip
    finally:
        for fd in (*child_fds, *own_fds):
            with contextlib.suppress(OSError):
                os.close(fd)
        if copy is not None:
            copy.close()
        if group is not None:  # on every path, errors included: no group or process outlives
            group.kill_all()
            group.remove()
    if not started:
        detail = _tail_text(stderr_path) or f"exit status {outcome.exit_code}"
        when = f" within {limits.wall_time_s:g} s" if stopped else ""
        raise SandboxError(f"the sandbox did not start{when}: {detail}")
    return outcome


def _run_supervised(
    wrapper: Sequence[str],
    cwd: str | None,
    popen_env: dict[str, str],
    child_fds: list[int],
    group: _CGroup | None,
    limits: Limits,
    stdin_path: Path | None,
    stdout_path: Path,
    stderr_path: Path,
    *,
    status_fd: int | None,
    stopper: Stopper | None,
) -> tuple[RunOutcome, bool, bool]:
    """Start ``wrapper`` and supervise it to its end: ``(outcome, started, stopped)``, where
    ``started`` says bubblewrap's setup finished (read from its JSON status on ``status_fd``;
    True without one: no sandbox) and ``stopped`` that we killed the run (a limit, the
    stopper)."""
    isolated = status_fd is not None
    # stdout/stderr are pipes that we drain into the files, capped: the program never holds a
    # descriptor of a host file it could grow (fallocate ignores RLIMIT_FSIZE).
    stdin = open(stdin_path, "rb") if stdin_path is not None else subprocess.DEVNULL  # noqa: SIM115
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    stopped: list[bool] = []
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
                    pass_fds=tuple(child_fds),
                )
            finally:
                for fd in (out_w, err_w, *child_fds):  # the child has its copies
                    os.close(fd)
                child_fds.clear()

            def stop() -> None:
                stopped.append(True)
                if isolated and group is not None:
                    # Everything but bubblewrap's monitor (the process we started: the shell
                    # execs it): the sandbox dies and the monitor reports whether it had started.
                    group.kill_all(spare=proc.pid)
                else:
                    _kill_session(proc.pid)
                    if group is not None:
                        group.kill_all()

            def on_exit() -> None:
                proc.wait()
                _kill_session(proc.pid)  # anything left in the tree dies with the main process
                if group is not None:
                    group.kill_all()

            # a pidfd wakes us as soon as the process exits
            pidfd = os.pidfd_open(proc.pid)
            watching = stopper.watching(stop) if stopper is not None else contextlib.nullcontext()
            try:
                with watching:
                    _, timed_out, output_exceeded = _supervise(
                        pidfd, on_exit, stop, group, limits, start, {out_r: out, err_r: err},
                        stop_grace_s=STOP_GRACE_S if isolated and group is not None else None,
                    )  # fmt: skip
            finally:
                os.close(pidfd)
                _kill_session(proc.pid)
                if proc.returncode is None:
                    proc.wait()
            wall = time.monotonic() - start
        if group is not None:
            group.kill_all()
        cpu = group.cpu_time_s() if group is not None else None
        peak = group.peak_memory() if group is not None else None
        oom = group.oom_killed() if group is not None else False
        forks_refused = group.process_limit_hits() > 0 if group is not None else False
    finally:
        os.close(out_r)
        os.close(err_r)
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    started = True
    if status_fd is not None:
        # An exit status is reported only when the setup finished and our shell started.
        started = b'"exit-code"' in _read_available(status_fd)
        if not started and stopped and group is None:
            started = True  # without cgroups a kill takes bubblewrap's monitor too: cannot tell
    code = proc.returncode
    exit_code = code if code >= 0 else 128 - code  # killed before exec: as a shell shows it
    if cpu is not None and cpu > limits.cpu_time_s:
        timed_out = True
    if group is None and exit_code == 128 + signal.SIGXCPU:
        timed_out = True  # without cgroups, only the per-process CPU rlimit can tell
    outcome = RunOutcome(
        exit_code=exit_code,
        wall_time_s=wall,
        cpu_time_s=cpu,
        peak_memory_bytes=peak,
        timed_out=timed_out,
        memory_exceeded=oom,
        output_exceeded=output_exceeded,
        process_limit=forks_refused,
    )
    return outcome, started, bool(stopped)


def _read_available(fd: int) -> bytes:
    """What a non-blocking pipe holds now."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _tail_text(path: Path, size: int = 2000) -> str:
    with contextlib.suppress(OSError), open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - size))
        return handle.read().decode("utf-8", errors="replace").strip()
    return ""


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
        self.bwrap = bubblewrap_path()
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
        if self.stopper is not None:
            self.stopper.check()
        self.starts += 1
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        copy = _AppCopy(self.app_dir)
        fds = [child.fileno(), *copy.fds]
        try:
            fds.append(_zygote_fd(self.zygote))
            zygote_fd = fds[-1]
            seccomp_fd = None
            if seccomp.supported():
                seccomp_fd = _seccomp_fd()
                fds.append(seccomp_fd)
            # the copy of the build is charged to the session, not to its programs
            memory_bytes = self.memory_bytes + copy.bytes
            self.group = _CGroup(self.limits, memory_bytes) if self.use_cgroups else None
            box = bubblewrap_argv(
                self.bwrap, self.app_dir, False, self.limits, self.env, (), seccomp_fd,
                as_pid_1=True, app_args=copy.args, files=[(zygote_fd, ZYGOTE_PATH)],
            )  # fmt: skip
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
            _kill_session(proc.pid)

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

                _, timed_out, output_exceeded = _supervise(
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
