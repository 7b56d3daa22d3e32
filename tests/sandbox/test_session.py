"""One sandbox per candidate (``SandboxSession``): each test is a fresh run all the same.

Every test here runs several tests of one candidate in one session and checks that nothing of a
test reaches the next (files, processes, CPU time, peak memory, an OOM kill, a timeout), that a
test cannot end the session from inside, and that verdicts match one fresh sandbox per run.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from coreb_toolkit.sandbox import ExecutionConfig, Limits, execute
from coreb_toolkit.sandbox.isolation import SandboxSession, give_to_sandbox, zygote_binary

pytestmark = pytest.mark.needs_toolchain("bwrap", "cc")

LIMITS = Limits(wall_time_s=5, cpu_time_s=2, memory_mb=128, max_processes=32, tmpfs_mb=16)


@pytest.fixture
def box():
    """An app folder with ``/app/p.py`` (set by the test) and a helper to open a session."""
    if zygote_binary() is None:
        pytest.fail("the resident runner did not build (see the log)")
    root = Path(tempfile.mkdtemp(prefix="coreb-session-test-"))
    root.chmod(0o711)
    app = root / "app"
    app.mkdir()

    class Box:
        def __init__(self) -> None:
            self.root, self.app = root, app

        def session(self, code: str, limits: Limits = LIMITS) -> SandboxSession:
            (app / "p.py").write_text(textwrap.dedent(code))
            give_to_sandbox(app)
            return SandboxSession(
                ["python3", "/app/p.py"], zygote=zygote_binary(), app_dir=app, limits=limits
            )

        def run(self, session: SandboxSession, stdin: str = ""):
            (root / "in").write_text(stdin)
            outcome = session.run(root / "in", root / "out", root / "err")
            return outcome, (root / "out").read_text(), (root / "err").read_text()

    yield Box()
    shutil.rmtree(root, ignore_errors=True)


PLANT_AND_CHECK = """
    import os, subprocess, sys, time
    phase = sys.stdin.read().strip()
    if phase == "plant":
        for d in ("/work", "/tmp", "/dev/shm"):
            os.makedirs(d + "/left/deep", exist_ok=True)
            open(d + "/left/deep/file", "w").write("x")
            os.chmod(d + "/left/deep", 0)  # an unreadable folder must go too
            os.chmod(d, 0)  # and the place itself must come back usable
        # a daemon that outlives its parent and would write a marker later
        subprocess.Popen([sys.executable, "-c",
                          "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\n"
                          "time.sleep(0.5)\\nopen('/work/marker', 'w').write('daemon')"])
        time.sleep(0.1)
        print("planted")
    else:
        time.sleep(0.8)  # past the daemon's wake-up, had it survived
        left = [d for d in ("/work", "/tmp", "/dev/shm") if os.listdir(d)]
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        print("left:", left, "others:", others)
"""


def test_nothing_of_a_test_reaches_the_next(box):
    with box.session(PLANT_AND_CHECK) as session:
        outcome, out, err = box.run(session, "plant")
        assert (outcome.exit_code, out) == (0, "planted\n"), err
        outcome, out, err = box.run(session, "check")
        assert (outcome.exit_code, out) == (0, "left: [] others: []\n"), err
        assert session.starts == 1


def test_a_test_cannot_kill_or_trace_the_runner(box):
    code = """
        import os, signal, sys
        if sys.stdin.read() == "attack":
            for pid in (os.getppid(), 1, -1):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError as err:
                    print(pid, type(err).__name__)
            try:
                open("/proc/1/mem", "rb").read(1)
            except OSError as err:
                print("mem", type(err).__name__)
        print("alive", os.getppid())
    """
    with box.session(code) as session:
        outcome, out, err = box.run(session, "attack")
        assert out.splitlines()[-2:] == ["mem PermissionError", "alive 1"], err
        outcome, out, err = box.run(session, "again")
        assert (outcome.exit_code, out) == (0, "alive 1\n"), err
        assert session.starts == 1


def test_measurements_are_per_test(box):
    code = """
        import sys
        if sys.stdin.read() == "heavy":
            block = bytearray(80 * 1024 * 1024)
            x = 0
            for i in range(4_000_000):
                x += i
        print("done")
    """
    with box.session(code) as session:
        heavy, _, err = box.run(session, "heavy")
        light, _, _ = box.run(session, "light")
    assert heavy.peak_memory_bytes > 80 * 1024 * 1024, err
    assert light.peak_memory_bytes < 40 * 1024 * 1024
    assert heavy.cpu_time_s > 0.1
    assert light.cpu_time_s < heavy.cpu_time_s / 3


def test_limits_end_a_test_not_the_session(box):
    code = """
        import sys, time
        what = sys.stdin.read()
        if what == "oom":
            blocks = [bytearray(16 * 1024 * 1024) for _ in range(64)]
        elif what == "spin":
            while True:
                pass
        elif what == "sleep":
            time.sleep(60)
        elif what == "flood":
            while True:
                sys.stdout.write("y" * 65536)
        print("ok")
    """
    limits = Limits(wall_time_s=1.5, cpu_time_s=0.5, memory_mb=64, max_processes=16,
                    output_bytes=100_000, tmpfs_mb=16)  # fmt: skip
    with box.session(code, limits) as session:
        oom, _, _ = box.run(session, "oom")
        assert oom.memory_exceeded
        spin, _, _ = box.run(session, "spin")
        assert spin.timed_out and spin.cpu_time_s < 1.0
        sleep, _, _ = box.run(session, "sleep")
        assert sleep.timed_out and sleep.wall_time_s < 2.5
        flood, out, _ = box.run(session, "flood")
        assert flood.output_exceeded and len(out) == 100_000
        fine, out, err = box.run(session, "fine")
        assert (fine.exit_code, out) == (0, "ok\n"), err
        assert not (fine.timed_out or fine.memory_exceeded or fine.output_exceeded)
        assert session.starts == 1


def test_closing_leaves_no_process_or_cgroup(box):
    code = """
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print("spawned")
    """
    session = box.session(code)
    box.run(session, "")
    pid, paths = session.proc.pid, list(session.group.paths.values())
    session.close()
    assert not Path(f"/proc/{pid}").exists()
    assert [p for p in paths if p.exists()] == []


@pytest.mark.parametrize("scope", ["candidate", "run"])
def test_both_scopes_give_the_same_verdicts(scope):
    code = "import sys\nn = int(input())\nif n == 3: sys.exit(1)\nprint(n * 2)\n"
    tests = [{"input": f"{n}\n", "output": f"{n * 2}\n"} for n in range(1, 5)]
    tests[1]["output"] = "5\n"
    [r] = execute([{"id": "s", "language": "python", "code": code, "tests": tests}],
                  ExecutionConfig(limits=LIMITS, sandbox_scope=scope))  # fmt: skip
    assert r["sandbox_scope"] == scope
    assert r["verdicts"] == ["pass", "wrong_answer", "runtime_error", "pass"]


def test_a_bad_scope_is_refused():
    with pytest.raises(ValueError, match="sandbox_scope must be 'candidate' or 'run'"):
        ExecutionConfig(sandbox_scope="test")


def test_a_session_whose_sandbox_died_starts_afresh(box):
    code = """
        import sys, time
        if sys.stdin.read() == "slow":
            time.sleep(3)
        print("ok")
    """
    with box.session(code) as session:
        os.killpg(session.proc.pid, signal.SIGKILL)  # the whole sandbox dies between runs
        session.proc.wait()
        outcome, out, err = box.run(session, "")
        assert (outcome.exit_code, out, session.starts) == (0, "ok\n", 2), err
        # ... and during a run: that run is lost (killed), the next one gets a new sandbox
        threading.Timer(0.5, os.killpg, (session.proc.pid, signal.SIGKILL)).start()
        outcome, _, _ = box.run(session, "slow")
        assert outcome.exit_code == 128 + signal.SIGKILL and outcome.wall_time_s < 2.5
        outcome, out, err = box.run(session, "")
        assert (outcome.exit_code, out, session.starts) == (0, "ok\n", 3), err
