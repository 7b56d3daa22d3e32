"""`coreb execute`: results file, summary, resume, clear errors."""

from __future__ import annotations

import json

import pytest

from coreb_cli.main import main

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
