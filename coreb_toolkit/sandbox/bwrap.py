"""The bubblewrap command line that confines one run, and what goes with it: the copy of the
build into the sandbox's root, the seccomp program's descriptor, the unprivileged user and the
per-process rlimits of the shell that enters the cgroups."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from coreb_toolkit.sandbox import seccomp
from coreb_toolkit.sandbox.cgroups import CGroup
from coreb_toolkit.sandbox.limits import Limits

# The only /etc entries a runtime needs (dynamic loader, Java's config, the alternatives links).
ETC_BINDS = (
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
RUN_SHELL = ("/bin/sh", "-c", 'exec "$@"', "sandbox-run")
# /app is copied into the sandbox (not mounted from the host) up to these sizes; a bigger build
# is mounted read-only, whose host path /proc/self/mountinfo then shows.
MAX_COPIED_FILES = 128
MAX_COPIED_BYTES = 32 * 1024 * 1024


def bubblewrap_path() -> str | None:
    """The ``bwrap`` executable on PATH, or None."""
    return shutil.which("bwrap")


class AppCopy:
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

    ``app_args`` replace the mount of ``app_dir`` at ``/app`` (:class:`AppCopy`'s copy);
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
    for path in ETC_BINDS:
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


def drop_privileges() -> list[str]:
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


def unsandboxed_env(env: Mapping[str, str]) -> dict[str, str]:
    return {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8", **env}


def seccomp_fd_of_filter() -> int:
    """A pipe's read end holding the seccomp program, for bubblewrap's ``--seccomp FD``."""
    read, write = os.pipe()
    os.write(write, seccomp.filter_program())
    os.close(write)
    return read


def enter_argv(full: Sequence[str], group: CGroup | None, limits: Limits,
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
        *drop_privileges(),
        "/usr/bin/prlimit", *rlimits, "--", *full,
    ]  # fmt: skip
