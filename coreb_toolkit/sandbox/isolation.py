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

The parts live in modules of their own, whose public names this module re-exports:
:mod:`~coreb_toolkit.sandbox.limits` (limits, outcomes, errors, the stopper),
:mod:`~coreb_toolkit.sandbox.cgroups` (accounting), :mod:`~coreb_toolkit.sandbox.bwrap` (the
command line), :mod:`~coreb_toolkit.sandbox.supervise` (a run to its end),
:mod:`~coreb_toolkit.sandbox.session` (the resident sandbox), :mod:`~coreb_toolkit.sandbox.cleanup`
(temporary folders and leftovers) and :mod:`coreb_toolkit.owners` (who owns what we leave).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from coreb_toolkit.owners import owned_prefix, owner_alive, owner_of, owner_tag
from coreb_toolkit.sandbox import bwrap as bwrap_module
from coreb_toolkit.sandbox import seccomp
from coreb_toolkit.sandbox.bwrap import (
    MAX_COPIED_BYTES,
    MAX_COPIED_FILES,
    RUN_SHELL,
    SANDBOX_PATH,
    SANDBOX_UID,
    AppCopy,
    bubblewrap_argv,
    bubblewrap_path,
    enter_argv,
    give_to_sandbox,
    seccomp_fd_of_filter,
    unsandboxed_env,
)
from coreb_toolkit.sandbox.cgroups import CGROUP_ROOT, CONTROLLERS, CGroup, cgroups_available
from coreb_toolkit.sandbox.cleanup import make_temp_dir, reclaim_leftovers, temp_root, untraversable
from coreb_toolkit.sandbox.limits import (
    SETUP_TIMEOUT_S,
    STOP_GRACE_S,
    IsolationUnavailable,
    Limits,
    RunAborted,
    RunOutcome,
    SandboxError,
    SessionError,
    Stopper,
)
from coreb_toolkit.sandbox.session import ZYGOTE_PATH, ZYGOTE_SOURCE, SandboxSession, zygote_binary
from coreb_toolkit.sandbox.supervise import (
    CPU_POLL_S,
    kill_session,
    read_available,
    supervise,
    tail_text,
)

__all__ = [
    "CGROUP_ROOT",
    "CONTROLLERS",
    "CPU_POLL_S",
    "MAX_COPIED_BYTES",
    "MAX_COPIED_FILES",
    "SANDBOX_PATH",
    "SANDBOX_UID",
    "SETUP_TIMEOUT_S",
    "STOP_GRACE_S",
    "ZYGOTE_PATH",
    "ZYGOTE_SOURCE",
    "AppCopy",
    "CGroup",
    "IsolationUnavailable",
    "Limits",
    "RunAborted",
    "RunOutcome",
    "SandboxError",
    "SandboxSession",
    "SessionError",
    "Stopper",
    "bubblewrap_argv",
    "bubblewrap_path",
    "cgroups_available",
    "give_to_sandbox",
    "make_temp_dir",
    "owned_prefix",
    "owner_alive",
    "owner_of",
    "owner_tag",
    "reclaim_leftovers",
    "run_command",
    "temp_root",
    "untraversable",
    "zygote_binary",
]


# Long: one try/finally must release every descriptor, the build copy and the cgroup it opens.
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
    copy: AppCopy | None = None
    group: CGroup | None = None
    status_r: int | None = None
    try:
        if bwrap is not None:  # isolated (checked above)
            if not app_writable:
                copy = AppCopy(app_dir)
                memory_bytes += copy.bytes  # the copy is charged to the run, not to its program
                # handed over: child_fds closes them once; copy.close() closing them again
                # could close a descriptor another thread has just been given the number of
                child_fds += copy.fds
                copy.fds = []
            status_r, status_w = os.pipe()
            os.set_blocking(status_r, False)
            own_fds.append(status_r)
            child_fds.append(status_w)
            seccomp_fd = seccomp_fd_of_filter() if seccomp.supported() else None
            if seccomp_fd is not None:
                child_fds.append(seccomp_fd)
            argv_box = bwrap_module.bubblewrap_argv(
                bwrap, app_dir, app_writable, limits, env, binds, seccomp_fd,
                app_args=copy.args if copy is not None else None, status_fd=status_w,
            )  # fmt: skip
            full = [*argv_box, *RUN_SHELL, *argv]
            cwd = None
            popen_env: dict[str, str] = {}
        else:
            # The same paths as in the sandbox, on the host: /app is the build directory.
            full = [str(app_dir) + a[4:] if a == "/app" or a.startswith("/app/") else a
                    for a in argv]  # fmt: skip
            cwd = str(app_dir)
            popen_env = unsandboxed_env(env)
            # No mounts without isolation: point variables and arguments at the host paths.
            for src, dest, _ in binds:
                popen_env = {k: (str(src) if v == dest else v) for k, v in popen_env.items()}
                full = [a.replace(dest + "/", f"{src}/") for a in full]
        group = CGroup(limits, memory_bytes) if use_cgroups else None
        data_cap = memory_bytes if group is None and not isolate else None
        wrapper = enter_argv(full, group, limits, data_cap=data_cap)
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
        detail = tail_text(stderr_path) or f"exit status {outcome.exit_code}"
        when = f" within {limits.wall_time_s:g} s" if stopped else ""
        raise SandboxError(f"the sandbox did not start{when}: {detail}")
    return outcome


# Long: the pipes, the pidfd and the process share one try/finally, so nothing outlives a run.
def _run_supervised(
    wrapper: Sequence[str],
    cwd: str | None,
    popen_env: dict[str, str],
    child_fds: list[int],
    group: CGroup | None,
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
                    kill_session(proc.pid)
                    if group is not None:
                        group.kill_all()

            def on_exit() -> None:
                proc.wait()
                kill_session(proc.pid)  # anything left in the tree dies with the main process
                if group is not None:
                    group.kill_all()

            # a pidfd wakes us as soon as the process exits
            pidfd = os.pidfd_open(proc.pid)
            watching = stopper.watching(stop) if stopper is not None else contextlib.nullcontext()
            try:
                with watching:
                    _, timed_out, output_exceeded = supervise(
                        pidfd, on_exit, stop, group, limits, start, {out_r: out, err_r: err},
                        stop_grace_s=STOP_GRACE_S if isolated and group is not None else None,
                    )  # fmt: skip
            finally:
                os.close(pidfd)
                kill_session(proc.pid)
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
        started = b'"exit-code"' in read_available(status_fd)
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
