"""`coreb execute`: results file, summary, resume, clear errors, interruptions, the lock."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import coreb_toolkit.sandbox.bwrap as bwrap
from coreb_toolkit.cli.main import main
from coreb_toolkit.sandbox.isolation import CGROUP_ROOT, CONTROLLERS, cgroups_available

REPO_ROOT = Path(__file__).resolve().parents[2]
needs_cgroups = pytest.mark.skipif(
    not cgroups_available(), reason="needs writable cgroup v1 memory, pids and cpuacct (root)"
)

pytestmark = pytest.mark.needs_toolchain("bwrap", "g++")

CANDIDATES = [
    {"id": "ok", "language": "python", "code": "print(int(input()) * 2)",
     "tests": [{"input": "21", "output": "42"}, {"input": "5", "output": "10"}]},
    {"id": "bad", "language": "cpp", "code": "#include <cstdio>\nint main(){puts(\"0\");}",
     "tests": [{"input": "21", "output": "42"}]},
]  # fmt: skip


def test_execute_writes_results_and_resumes(tmp_path, capsys):
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in CANDIDATES))
    assert main(["execute", str(src), "--out", str(out), "--time-limit", "2"]) == 0
    text = capsys.readouterr().out
    assert "2 executed, 0 already in" in text
    assert "python" in text and "verdicts: " in text
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["ok"]["verdicts"] == ["pass", "pass"]
    assert results["bad"]["verdicts"] == ["wrong_answer"]
    assert {r["sandbox_scope"] for r in results.values()} == {"candidate"}
    assert main(["execute", str(src), "--out", str(out)]) == 0
    assert "0 executed, 2 already in" in capsys.readouterr().out


def test_execute_fresh_sandbox_per_run(tmp_path):
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text(json.dumps(CANDIDATES[0]) + "\n")
    assert main(["execute", str(src), "--out", str(out), "--fresh-sandbox-per-run"]) == 0
    [result] = map(json.loads, out.read_text().splitlines())
    assert (result["sandbox_scope"], result["verdicts"]) == ("run", ["pass", "pass"])


def test_execute_bad_input_is_a_clear_error(tmp_path, capsys):
    src = tmp_path / "cands.jsonl"
    src.write_text('{"id": "x", "language": "fortran", "code": "", "tests": []}\n')
    with pytest.raises(SystemExit) as exc:
        main(["execute", str(src), "--out", str(tmp_path / "o.jsonl")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "coreb execute: error:" in err and "cands.jsonl:1" in err and "fortran" in err


# -- interrupted runs: SIGINT/SIGTERM clean up, SIGKILL's leftovers are reclaimed -----------------
SLEEPER = {"id": "s0", "language": "python", "code": "import time\ntime.sleep(60)\n",
           "tests": [{"input": "", "output": ""}] * 3}  # fmt: skip


def _sandbox_cgroups_of(pid: int) -> list[Path]:
    """The cgroups (any controller) named after the process ``pid``."""
    return [p for c in CONTROLLERS for p in (CGROUP_ROOT / c).glob(f"coreb-*-{pid}.*")]


def _running_sandboxes_of(pid: int) -> bool:
    """Whether a sandbox that ``pid`` started is running: a child of ``pid`` (bubblewrap) in one
    of the sandbox cgroups, whatever they are named."""
    for group in (CGROUP_ROOT / "pids").glob("coreb-sandbox-*"):
        with contextlib.suppress(OSError, ValueError):
            for member in (group / "cgroup.procs").read_text().split():
                stat = Path(f"/proc/{member}/stat").read_text()
                if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                    return True
    return False


def _start_execute(tmp_path: Path, n: int = 4) -> tuple[subprocess.Popen, Path, Path]:
    """A `coreb execute` of ``n`` sleeping candidates, waited for until its sandboxes run."""
    tmpdir = Path(tempfile.mkdtemp(prefix="coreb-cli-tmpdir-", dir="/tmp"))
    tmpdir.chmod(0o711)
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps({**SLEEPER, "id": f"s{i}"}) + "\n" for i in range(n)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "coreb_toolkit.cli", "execute", str(src), "--out", str(out),
         "--time-limit", "60", "--workers", "2"],
        cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not _running_sandboxes_of(proc.pid):  # a condition, polled: nothing to be notified by
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            shutil.rmtree(tmpdir, ignore_errors=True)
            pytest.fail(f"the run did not start its sandboxes: {proc.communicate()}")
        time.sleep(0.02)
    return proc, tmpdir, out


@needs_cgroups
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_terminated_run_cleans_up_like_an_interrupted_one(tmp_path, signum):
    proc, tmpdir, out = _start_execute(tmp_path)
    try:
        sent = time.monotonic()
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
        stopped_after = time.monotonic() - sent
        assert proc.returncode == 128 + signum, stderr
        assert "Traceback" not in stderr, stderr
        assert f"interrupted by {signal.Signals(signum).name}" in stderr
        assert stopped_after < 15  # the runs in flight are killed, not waited for (60 s)
        assert out.read_text() == ""  # no verdict for a run we killed
        assert _sandbox_cgroups_of(proc.pid) == []
        assert list(tmpdir.iterdir()) == []  # build folders (with the source) are gone
    finally:
        proc.kill()
        shutil.rmtree(tmpdir, ignore_errors=True)


@needs_cgroups
def test_the_next_run_reclaims_what_a_killed_run_left(tmp_path):
    proc, tmpdir, out = _start_execute(tmp_path)
    try:
        proc.kill()  # SIGKILL: nothing of it can clean up
        proc.wait()
        left = _sandbox_cgroups_of(proc.pid)
        assert left, "a SIGKILLed run leaves its cgroups (named after it)"
        assert [p for p in tmpdir.iterdir() if f"-{proc.pid}." in p.name]
        # The next run on the same --out (the dead run's lock went with it) reclaims them.
        src = tmp_path / "cands.jsonl"
        src.write_text(json.dumps(CANDIDATES[0]) + "\n")
        out.write_text("")
        again = subprocess.run(
            [sys.executable, "-m", "coreb_toolkit.cli", "execute", str(src), "--out", str(out)],
            cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(tmpdir)},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert [p for p in left if p.exists()] == []
        assert list(tmpdir.iterdir()) == []
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def test_a_second_run_on_the_same_out_is_refused(tmp_path, capsys):
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text(json.dumps(CANDIDATES[0]) + "\n")
    with open(out, "a") as holder:  # a run writing this file (here: this process)
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SystemExit) as exc:
            main(["execute", str(src), "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{out} is being written by another run (pid {os.getpid()})" in err
    assert out.read_text() == ""


def test_a_run_in_a_private_tmpdir_passes(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)  # as `mktemp -d` makes it
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in CANDIDATES))
    done = subprocess.run(
        [sys.executable, "-m", "coreb_toolkit.cli", "execute", str(src), "--out", str(out)],
        cwd=REPO_ROOT, env={**os.environ, "TMPDIR": str(private)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = {r["id"]: r["verdicts"] for r in map(json.loads, out.read_text().splitlines())}
    assert results == {"ok": ["pass", "pass"], "bad": ["wrong_answer"]}
    assert list(private.iterdir()) == []


def test_a_sandbox_that_cannot_start_is_a_clear_error(tmp_path, capsys, monkeypatch):
    real = bwrap.bubblewrap_argv
    monkeypatch.setattr(
        bwrap,
        "bubblewrap_argv",
        lambda *a, **k: [
            real(*a, **k)[0],
            "--ro-bind",
            "/nonexistent-coreb-probe",
            "/x",
            *real(*a, **k)[1:],
        ],
    )
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    src.write_text(json.dumps(CANDIDATES[0]) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["execute", str(src), "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "coreb execute: error: the sandbox did not start" in err
    assert "/nonexistent-coreb-probe" in err and "Traceback" not in err
    assert out.read_text() == ""  # no verdict
