"""Hardening of the sandbox (issue 13, items 1-6): what a hostile candidate, a broken setup or a
second run must not get through.

* every test of a candidate sees what a fresh sandbox shows it: no IPC object of an earlier test
  (SysV shared memory, message queues, semaphores, POSIX message queues), nothing left at any
  depth of ``/work``;
* a failure of our own setup (bubblewrap, cgroups, the init) is an error of the run, never a
  verdict, and the sandbox works with a private ``TMPDIR``;
* an oversized candidate is refused before the host parses it; a big Python source is parsed by
  a resource-limited child process;
* leftovers of a dead run (cgroups, folders) are reclaimed, never those of a live one;
* ``--out`` is locked; duplicate ids found on resume are refused with their lines;
* the process cap is named when it is what a program hit; ``/proc/self/mountinfo`` shows no host
  path of the build or of the init.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import coreb_toolkit.sandbox.bwrap as bwrap
import coreb_toolkit.sandbox.cgroups as cgroups
import coreb_toolkit.sandbox.isolation as isolation
from coreb_toolkit.sandbox import ExecutionConfig, Executor, Limits, execute, execute_file
from coreb_toolkit.sandbox.isolation import (
    CONTROLLERS,
    SandboxError,
    SandboxSession,
    cgroups_available,
    owner_tag,
    reclaim_leftovers,
    zygote_binary,
)
from coreb_toolkit.sandbox.languages import python_syntax_error

pytestmark = pytest.mark.needs_toolchain("bwrap", "cc", "g++")
needs_cgroups = pytest.mark.skipif(
    not cgroups_available(), reason="needs writable cgroup v1 memory, pids and cpuacct (root)"
)

LIMITS = Limits(wall_time_s=10, cpu_time_s=5, memory_mb=256, max_processes=32, tmpfs_mb=64)
SCOPES = ("candidate", "run")


def _config(scope: str, **kwargs) -> ExecutionConfig:
    return ExecutionConfig(limits=kwargs.pop("limits", LIMITS), sandbox_scope=scope, **kwargs)


def _two_phase(code: str, first: str, second: str) -> dict:
    """A candidate whose first test plants something (``first``: its expected output) and whose
    second test looks for it (``second``)."""
    return {
        "id": "two-phase",
        "language": "python",
        "code": textwrap.dedent(code),
        "tests": [{"input": "plant\n", "output": first}, {"input": "check\n", "output": second}],
    }


def _why(result: dict) -> str:
    return json.dumps(result["tests"], indent=1)[-3000:]


# -- 1. state does not cross between the tests of a candidate -------------------------------------
IPC = """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    KEY, IPC_CREAT = 0x5EC2E7, 0o1000
    if sys.stdin.read().strip() == "plant":
        shm = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
        ctypes.memmove(libc.shmat(shm, None, 0), b"SHMSECRET", 9)
        msg = libc.msgget(KEY, IPC_CREAT | 0o600)
        sem = libc.semget(KEY, 1, IPC_CREAT | 0o600)
        mq = libc.mq_open(b"/coreb-secret", os.O_CREAT | os.O_RDWR, 0o600, None)
        print(min(shm, msg, sem, mq) >= 0)
    else:
        found = [libc.shmget(KEY, 0, 0), libc.msgget(KEY, 0, 0), libc.semget(KEY, 0, 0),
                 libc.mq_open(b"/coreb-secret", os.O_RDWR)]
        listed = sum(len(open(f"/proc/sysvipc/{k}").readlines()) - 1 for k in ("shm", "msg", "sem"))
        print(found, listed)
"""


@pytest.mark.parametrize("scope", SCOPES)
def test_ipc_objects_of_a_test_are_gone_for_the_next(scope):
    [r] = execute([_two_phase(IPC, "True", "[-1, -1, -1, -1] 0")], _config(scope))
    assert r["verdicts"] == ["pass", "pass"], _why(r)


SHM_PIN = """
    import ctypes, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    if sys.stdin.read().strip() == "plant":
        size = 180 << 20
        shm = libc.shmget(0x5EC2E8, size, 0o1000 | 0o600)
        ctypes.memset(libc.shmat(shm, None, 0), 1, size)  # touch every page: 180 MB charged
        print("pinned")
    else:
        block = b"x" * (120 << 20)
        print("allocated", len(block) >> 20)
"""


@needs_cgroups
@pytest.mark.parametrize("scope", SCOPES)
def test_shared_memory_pinned_by_a_test_is_freed_for_the_next(scope):
    [r] = execute([_two_phase(SHM_PIN, "pinned", "allocated 120")], _config(scope))
    assert r["verdicts"] == ["pass", "pass"], _why(r)
    assert r["tests"][1]["peak_memory_bytes"] < 200 << 20


DEEP_TREE = """
    import os, sys
    if sys.stdin.read().strip() == "plant":
        os.chdir("/work")
        for _ in range(300):
            os.mkdir("d")
            os.chdir("d")
        os.mkdir("locked")
        os.chmod("locked", 0)
        with open("big", "wb") as f:
            f.write(b"x" * (60 << 20))
        print("planted")
    else:
        left = os.listdir("/work")
        with open("/work/big", "wb") as f:
            f.write(b"y" * (60 << 20))
        print("left", left)
"""


@pytest.mark.parametrize("scope", SCOPES)
def test_a_deep_tree_is_removed_before_the_next_test(scope):
    [r] = execute([_two_phase(DEEP_TREE, "planted", "left []")], _config(scope))
    assert r["verdicts"] == ["pass", "pass"], _why(r)


def test_a_wide_tree_is_removed_in_linear_time():
    code = """
        import os, sys
        if sys.stdin.read().strip() == "plant":
            for i in range(3000):
                os.makedirs(f"/work/w{i}/a/b")
                open(f"/work/w{i}/a/b/f", "w").close()
            print("planted")
        else:
            print("left", os.listdir("/work"))
    """
    start = time.monotonic()
    [r] = execute([_two_phase(code, "planted", "left []")], _config("candidate"))
    assert r["verdicts"] == ["pass", "pass"], _why(r)
    assert time.monotonic() - start < 20


# -- 2. our setup failing is an error of the run, and any TMPDIR works ----------------------------
ADD = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "cpp": "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<'\\n';}\n",
}
TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "40 2\n", "output": "42\n"}]


@pytest.mark.parametrize("scope", SCOPES)
def test_a_private_tmpdir_works(scope, tmp_path, monkeypatch):
    private = tmp_path / "private-tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    cands = [{"id": lang, "language": lang, "code": code, "tests": TESTS}
             for lang, code in ADD.items()]  # fmt: skip
    results = execute(cands, _config(scope))
    for r in results:
        assert r["verdicts"] == ["pass", "pass"], _why(r)
    assert list(private.iterdir()) == []  # nothing of ours is left in it either


def _broken_bubblewrap(monkeypatch) -> None:
    real = bwrap.bubblewrap_argv

    def broken(*args, **kwargs):
        argv = real(*args, **kwargs)
        return [argv[0], "--ro-bind", "/nonexistent-coreb-probe", "/probe", *argv[1:]]

    monkeypatch.setattr(bwrap, "bubblewrap_argv", broken)


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("lang", ["python", "cpp"])
def test_a_sandbox_that_cannot_start_is_an_error_not_a_verdict(scope, lang, monkeypatch):
    executor = Executor(_config(scope))  # the build cache, if any, is warmed while it works
    _broken_bubblewrap(monkeypatch)
    cand = {"id": lang, "language": lang, "code": ADD[lang], "tests": TESTS}
    with pytest.raises(SandboxError, match="Can't find source path /nonexistent-coreb-probe"):
        list(executor.run_many([cand]))


def test_a_candidate_cannot_forge_a_setup_failure():
    code = (
        "import sys\n"
        'print("bwrap: Can\'t find source path /app: Permission denied", file=sys.stderr)\n'
        "sys.exit(1)\n"
    )
    for scope in SCOPES:
        [r] = execute([{"id": "f", "language": "python", "code": code, "tests": TESTS[:1]}],
                      _config(scope))  # fmt: skip
        assert r["verdicts"] == ["runtime_error"], scope


@needs_cgroups
def test_a_cgroup_that_cannot_be_made_is_an_error(tmp_path, monkeypatch):
    executor = Executor(_config("candidate"))
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path / "file")
    cand = {"id": "p", "language": "python", "code": ADD["python"], "tests": TESTS}
    with pytest.raises(SandboxError, match="cgroup"):
        list(executor.run_many([cand]))


def test_a_missing_init_is_an_error(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    missing = tmp_path / "no-such-zygote"
    with pytest.raises(SandboxError, match="no-such-zygote"):
        SandboxSession(["true"], zygote=missing, app_dir=app, limits=LIMITS)


# -- 3. no unbounded parse of untrusted code on the host -------------------------------------------
def test_an_oversized_candidate_is_refused_before_parsing():
    code = "x = 1\n" * 2000  # 12 kB
    config = _config("candidate", max_code_bytes=10_000)
    start = time.monotonic()
    [r] = execute([{"id": "big", "language": "python", "code": code, "tests": TESTS}], config)
    assert r["verdicts"] == ["compile_error", "compile_error"]
    assert "max_code_bytes" in r["compile"]["stderr"] and "12,000" in r["compile"]["stderr"]
    assert time.monotonic() - start < 5
    [r] = execute([{"id": "ok", "language": "python", "code": "print(3)\n" + "#\n" * 100,
                    "tests": TESTS[:1]}], config)  # fmt: skip
    assert r["verdicts"] == ["pass"]


def test_the_default_size_cap_refuses_the_issues_candidate():
    code = "x=1\n" * 1_500_000  # 6 MB: took 32 s and 3.7 GB of host memory to parse
    assert len(code) > ExecutionConfig().max_code_bytes
    start = time.monotonic()
    [r] = execute([{"id": "huge", "language": "python", "code": code, "tests": TESTS[:1]}],
                  _config("candidate"))  # fmt: skip
    assert r["verdicts"] == ["compile_error"]
    assert time.monotonic() - start < 5


def test_a_big_python_source_is_parsed_in_a_limited_child():
    source = "x = 1\n" * 100_000  # 600 kB: above the in-process bound
    assert python_syntax_error(source) is None
    assert python_syntax_error(source + "def f(:\n").startswith("main.py:100001:")
    message = python_syntax_error(source, memory_mb=32)  # far too little to parse it
    assert message is not None and "memory" in message, message


def test_ruby_candidates_are_capped_too():
    config = _config("candidate", max_code_bytes=100)
    cand = {"id": "rb", "language": "ruby", "code": "puts 1\n" * 50, "tests": TESTS[:1]}
    [r] = execute([cand], config)
    assert r["verdicts"] == ["compile_error"] and "max_code_bytes" in r["compile"]["stderr"]


def test_a_bad_size_cap_is_refused():
    with pytest.raises(ValueError, match="max_code_bytes must be a positive int"):
        ExecutionConfig(max_code_bytes=0)


# -- 4. leftovers of dead runs are reclaimed, those of live runs never ----------------------------
@needs_cgroups
def test_reclaim_removes_what_dead_runs_left_and_nothing_else(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_tag = owner_tag(dead.pid)  # read while it lives: pid and start time
    dead.wait()
    live = owner_tag()
    namespace = live.split(".")[2]
    reused = f"{os.getpid()}.1.{namespace}"  # this pid, another start time: its pid was reused
    foreign = f"{dead.pid}.1.{int(namespace) + 1}"  # another PID namespace: not ours to judge
    base = tmp_path / "tmp"
    base.mkdir()
    names = {tag: f"coreb-sandbox-{tag}-abc123" for tag in (dead_tag, reused, live, foreign)}
    for tag, name in names.items():
        (base / name / "app").mkdir(parents=True)
        (base / f"coreb-zygote-{tag}-x").mkdir()
        for controller in CONTROLLERS:
            (isolation.CGROUP_ROOT / controller / name).mkdir()
    (base / "coreb-sandbox-foreign").mkdir()  # not ours to judge: no owner in the name
    try:
        reclaim_leftovers([base])
        for controller in CONTROLLERS:
            root = isolation.CGROUP_ROOT / controller
            assert not (root / names[dead_tag]).exists()
            assert not (root / names[reused]).exists()
            assert (root / names[live]).exists()
            assert (root / names[foreign]).exists()
        assert sorted(p.name for p in base.iterdir()) == sorted(
            [names[live], f"coreb-zygote-{live}-x", names[foreign], f"coreb-zygote-{foreign}-x",
             "coreb-sandbox-foreign"]
        )  # fmt: skip
    finally:
        for controller in CONTROLLERS:
            for name in names.values():
                path = isolation.CGROUP_ROOT / controller / name
                if path.exists():
                    path.rmdir()


def test_owner_tags_tell_a_reused_pid_apart():
    tag = owner_tag()
    pid, start, namespace = tag.split(".")
    assert int(pid) == os.getpid() and int(start) > 0
    assert isolation.owner_alive(tag)
    assert not isolation.owner_alive(f"{pid}.{int(start) + 1}.{namespace}")
    assert isolation.owner_alive(f"{pid}.{int(start) + 1}.{int(namespace) + 1}")  # not ours


def test_a_lone_surrogate_is_bad_input_not_a_crash(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"id": "u", "language": "python", "code": "print('\ud800')",
                               "tests": TESTS}) + "\n")  # fmt: skip
    with pytest.raises(ValueError, match=r"c.jsonl:1 \(u\): code holds a lone surrogate"):
        execute_file(src, tmp_path / "r.jsonl", _config("candidate"), progress=False)


# -- 5. one writer per --out; duplicates on resume are refused ------------------------------------
def _jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_second_writer_of_the_same_out_file_is_refused(tmp_path):
    src, out = tmp_path / "c.jsonl", tmp_path / "r.jsonl"
    _jsonl(src, [{"id": "a", "language": "python", "code": ADD["python"], "tests": TESTS}])
    out.write_text("")
    with open(out, "a") as holder:  # another run holding the lock (here: this process)
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ValueError, match=rf"{out.name} is being written by another run "
                                             rf"\(pid {os.getpid()}\)"):  # fmt: skip
            execute_file(src, out, _config("candidate"), progress=False)
    counts = execute_file(src, out, _config("candidate"), progress=False)  # lock released
    assert counts["executed"] == 1


def test_a_resume_that_finds_duplicate_ids_says_which_and_where(tmp_path):
    src, out = tmp_path / "c.jsonl", tmp_path / "r.jsonl"
    cands = [{"id": i, "language": "python", "code": ADD["python"], "tests": TESTS} for i in "abc"]
    _jsonl(src, cands)
    _jsonl(out, [{"id": "a"}, {"id": "b"}, {"id": "a"}, {"id": "b"}, {"id": "b"}])
    with pytest.raises(ValueError, match=r"r.jsonl: 2 ids have more than one result: "
                                         r"'a' \(lines 1, 3\), 'b' \(lines 2, 4, 5\)"):  # fmt: skip
        execute_file(src, out, _config("candidate"), progress=False)


# -- 6. the process cap is named; mountinfo shows no host path -------------------------------------
@needs_cgroups
@pytest.mark.needs_toolchain("javac")
@pytest.mark.parametrize("scope", SCOPES)
def test_java_threads_past_the_process_cap_are_a_process_limit(scope):
    code = textwrap.dedent("""
        public class Main {
            public static void main(String[] a) {
                for (int i = 0; i < 200; i++) {
                    Thread t = new Thread(() -> {
                        try { Thread.sleep(100000); } catch (InterruptedException e) { }
                    });
                    t.setDaemon(true);
                    t.start();
                }
                System.out.println("started");
            }
        }
    """)
    limits = Limits(wall_time_s=20, cpu_time_s=10, memory_mb=256, max_processes=64)
    [r] = execute([{"id": "j", "language": "java", "code": code, "tests": TESTS[:1]}],
                  _config(scope, limits=limits))  # fmt: skip
    assert r["verdicts"] == ["process_limit"], _why(r)
    assert "unable to create native thread" in r["tests"][0]["stderr_tail"]


@needs_cgroups
@pytest.mark.parametrize("scope", SCOPES)
def test_forks_past_the_process_cap_are_a_process_limit_unless_handled(scope):
    code = textwrap.dedent("""
        import os, sys, time
        kids = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                kids += 1
        except OSError as err:
            if sys.stdin.read().strip() == "handle":
                print(3)
                sys.exit(0)
            raise
    """)
    tests = [{"input": "crash\n", "output": "3\n"}, {"input": "handle\n", "output": "3\n"}]
    [r] = execute([{"id": "f", "language": "python", "code": code, "tests": tests}],
                  _config(scope))  # fmt: skip
    assert r["verdicts"] == ["process_limit", "pass"], _why(r)


@pytest.mark.parametrize("scope", SCOPES)
def test_mountinfo_shows_no_host_path_of_the_build_or_the_init(scope, tmp_path):
    work_root = Path(tempfile.mkdtemp(prefix="coreb-mountinfo-", dir="/tmp"))
    work_root.chmod(0o711)
    code = textwrap.dedent("""
        import sys
        for line in open("/proc/self/mountinfo"):
            fields = line.split()
            print(fields[3], fields[4], file=sys.stderr)
        sys.exit(1)
    """)
    try:
        [r] = execute([{"id": "m", "language": "python", "code": code, "tests": TESTS[:1]}],
                      _config(scope, work_root=str(work_root)))  # fmt: skip
    finally:
        os.rmdir(work_root)
    mounts = dict(line.split()[::-1] for line in r["tests"][0]["stderr_tail"].splitlines())
    assert "/work" in mounts, mounts  # the listing is complete
    zygote = zygote_binary()
    for mount_point, root in mounts.items():
        assert str(work_root) not in root and "coreb" not in root, (mount_point, root)
        assert not root.startswith(tempfile.gettempdir()), (mount_point, root)
        if isinstance(zygote, Path):
            assert str(zygote.parent) not in root
