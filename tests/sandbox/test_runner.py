"""Executing candidates in the five languages: verdicts, measurements, streaming and resume."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

import coreb_toolkit.sandbox.isolation
import coreb_toolkit.sandbox.languages
import coreb_toolkit.sandbox.runner
from coreb_toolkit.sandbox import ExecutionConfig, Limits, ToolchainMissing, execute, execute_file
from coreb_toolkit.sandbox.isolation import IsolationUnavailable

pytestmark = pytest.mark.needs_toolchain("bwrap", "g++", "javac", "go", "ruby")

LIMITS = Limits(wall_time_s=10, cpu_time_s=5, memory_mb=256, max_processes=64)
CONFIG = ExecutionConfig(limits=LIMITS)

ADD = {  # reads two integers, prints their sum
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "cpp": '#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<"\\n";}\n',
    "java": "import java.util.*;\npublic class Main { public static void main(String[] x) {\n"
    "Scanner s = new Scanner(System.in); System.out.println(s.nextLong() + s.nextLong()); } }\n",
    "go": 'package main\nimport "fmt"\nfunc main() { var a, b int; fmt.Scan(&a, &b); '
    "fmt.Println(a + b) }\n",
    "ruby": "a, b = gets.split.map(&:to_i)\nputs a + b\n",
}
SUB = {  # a plausible bug: subtracts
    "python": ADD["python"].replace("a + b", "a - b"),
    "cpp": ADD["cpp"].replace("a+b", "a-b"),
    "java": ADD["java"].replace("s.nextLong() + s.nextLong()", "s.nextLong() - s.nextLong()"),
    "go": ADD["go"].replace("a + b", "a - b"),
    "ruby": ADD["ruby"].replace("a + b", "a - b"),
}
CRASH = {
    "python": "raise SystemExit(3)\n",
    "cpp": "#include <cstdlib>\nint main(){ std::abort(); }\n",
    "java": "public class Main { public static void main(String[] x) { int[] a = new int[1]; "
    "a[2] = 1; } }\n",
    "go": 'package main\nfunc main() { panic("boom") }\n',
    "ruby": "raise 'boom'\n",
}
SYNTAX_ERROR = {
    "python": "def f(:\n",
    "cpp": "int main( { return 0 }\n",
    "java": "public class Main { void }\n",
    "go": "package main\nfunc main() {\n",
    "ruby": "def f(\n",
}
TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "40 2", "output": "42"}]
LANGS = tuple(ADD)


@pytest.fixture(scope="module")
def results():
    cands = []
    for lang in LANGS:
        for kind, code in (("add", ADD), ("sub", SUB), ("crash", CRASH), ("syntax", SYNTAX_ERROR)):
            cands.append({"id": f"{lang}-{kind}", "language": lang, "code": code[lang],
                          "tests": TESTS})  # fmt: skip
    return {r["id"]: r for r in execute(cands, CONFIG)}


@pytest.mark.parametrize("lang", LANGS)
def test_correct_program_passes(results, lang):
    r = results[f"{lang}-add"]
    assert r["verdicts"] == ["pass", "pass"]
    assert (r["passed"], r["pass_rate"], r["test_passed"], r["test_total"]) == (True, 1.0, 2, 2)
    assert r["isolation"] == "bubblewrap"
    for test in r["tests"]:
        assert test["wall_time_s"] > 0
        assert test["cpu_time_s"] > 0
        assert test["peak_memory_bytes"] > 0


@pytest.mark.parametrize("lang", LANGS)
def test_wrong_answer(results, lang):
    r = results[f"{lang}-sub"]
    assert r["verdicts"] == ["wrong_answer", "wrong_answer"]
    assert not r["passed"] and r["pass_rate"] == 0.0


@pytest.mark.parametrize("lang", LANGS)
def test_runtime_error(results, lang):
    assert results[f"{lang}-crash"]["verdicts"] == ["runtime_error", "runtime_error"]


@pytest.mark.parametrize("lang", LANGS)
def test_compile_error_is_reported_once_for_every_test(results, lang):
    r = results[f"{lang}-syntax"]
    assert r["verdicts"] == ["compile_error", "compile_error"]
    assert r["compile"]["ok"] is False
    assert r["compile"]["stderr"]


def test_partial_pass_rate():
    code = "n = int(input())\nprint(n if n < 10 else -1)\n"
    tests = [{"input": str(n), "output": str(n)} for n in (1, 5, 20, 30)]
    [r] = execute([{"id": "p", "language": "python", "code": code, "tests": tests}], CONFIG)
    assert r["verdicts"] == ["pass", "pass", "wrong_answer", "wrong_answer"]
    assert r["pass_rate"] == 0.5 and r["test_passed"] == 2 and not r["passed"]


def test_functional_style_leetcode():
    code = (
        "from typing import List\n"
        "class Solution:\n"
        "    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n"
        "        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n"
        "                return [seen[target - x], i]\n"
        "            seen[x] = i\n"
    )
    tests = [
        {"input": "[2, 7, 11, 15]\n9", "output": "[0, 1]"},
        {"input": "[3, 2, 4]\n6", "output": "[1, 2]"},
        {"input": "[3, 3]\n6", "output": "[0, 2]"},  # deliberately wrong expectation
    ]
    cand = {"id": "f", "language": "python", "code": code, "fn_name": "twoSum", "tests": tests}
    [r] = execute([cand], CONFIG)
    assert r["test_style"] == "functional"
    assert r["verdicts"] == ["pass", "pass", "wrong_answer"]


@pytest.mark.parametrize(
    ("lang", "code", "test_program", "verdict"),
    [
        ("python", "def f(x):\n    return x + 1\n", "assert f(1) == 2\n", "pass"),
        ("python", "def f(x):\n    return x\n", "assert f(1) == 2\n", "wrong_answer"),
        ("python", "def f(x):\n    return 1 / 0\n", "assert f(1) == 2\n", "runtime_error"),
        ("cpp", "int f(int x){return x;}\n",
         "#include <cassert>\nint main(){assert(f(1)==2);}\n", "wrong_answer"),
        ("ruby", "def f(x)\n  x\nend\n",
         'raise StandardError, "Error at test case 1" if f(1) != 2\n', "wrong_answer"),
        ("go", 'package main\n\nimport "strings"\n\nfunc F(s string) string '
         "{ return strings.ToUpper(s) }\n",
         'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n\n'
         'func TestF(t *testing.T) { assert.Equal(t, "AB", F("ab")) }\n', "pass"),
        ("go", 'package main\n\nfunc F(s string) string { return s }\n',
         'package main\n\nimport (\n    "testing"\n    "github.com/stretchr/testify/assert"\n)\n\n'
         'func TestF(t *testing.T) { assert.Equal(t, "AB", F("ab")) }\n', "wrong_answer"),
    ],
)  # fmt: skip
def test_unittest_style(lang, code, test_program, verdict):
    cand = {"id": "u", "language": lang, "code": code, "test_program": test_program}
    [r] = execute([cand], CONFIG)
    assert r["test_style"] == "unittest"
    assert r["test_total"] == 1
    assert r["verdicts"] == [verdict], r["tests"][0].get("stderr_tail")


def test_kernel_accounting_sees_the_whole_tree():
    # The parent allocates little; a child process allocates ~150 MB and burns CPU. Only the
    # kernel's per-tree accounting (cgroup), not the parent's own rusage, sees both.
    code = (
        "import subprocess, sys\n"
        "child = 'b = bytearray(150 * 1024 * 1024)\\nx = 0\\nfor i in range(3_000_000): x += i'\n"
        "subprocess.run([sys.executable, '-c', child], check=True)\n"
        "print('ok')\n"
    )
    cand = {"id": "tree", "language": "python", "code": code,
            "tests": [{"input": "", "output": "ok"}]}  # fmt: skip
    [r] = execute([cand], CONFIG)
    test = r["tests"][0]
    assert test["verdict"] == "pass"
    assert test["peak_memory_bytes"] > 150 * 1024 * 1024
    assert test["cpu_time_s"] > 0.05


def test_repeats_report_median_and_spread():
    cand = {"id": "r", "language": "python", "code": ADD["python"], "tests": TESTS[:1]}
    [r] = execute([cand], ExecutionConfig(limits=LIMITS, repeats=3))
    test = r["tests"][0]
    for key in ("wall_time_s", "cpu_time_s", "peak_memory_bytes"):
        assert test[f"{key}_min"] <= test[key] <= test[f"{key}_max"]
    assert r["repeats"] == 3


def test_per_candidate_time_limit():
    code = "import time\ntime.sleep(1.5)\nprint(1)\n"
    tests = [{"input": "", "output": "1"}]
    cands = [
        {"id": "tight", "language": "python", "code": code, "tests": tests, "time_limit_s": 0.5},
        {"id": "loose", "language": "python", "code": code, "tests": tests},
    ]
    tight, loose = execute(cands, CONFIG)
    assert tight["verdicts"] == ["time_limit"]
    assert tight["limits"]["cpu_time_s"] == 0.5
    assert loose["verdicts"] == ["pass"]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_execute_file_streams_and_resumes(tmp_path):
    cands = [
        {"id": f"c{i}", "language": "python", "code": ADD["python"], "tests": TESTS}
        for i in range(4)
    ]
    src, out = tmp_path / "cands.jsonl", tmp_path / "results.jsonl"
    _write_jsonl(src, cands)
    _write_jsonl(out, [{"id": "c1", "passed": True, "marker": "kept"}])
    with open(out, "a") as handle:  # a torn line from an interrupted write
        handle.write('{"id": "c2", "pas')
    counts = execute_file(src, out, CONFIG, progress=False)
    assert counts == {"skipped": 1, "executed": 3, "total": 4}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == ["c0", "c1", "c2", "c3"]
    assert next(r for r in lines if r["id"] == "c1")["marker"] == "kept"  # not recomputed
    assert execute_file(src, out, CONFIG, progress=False)["executed"] == 0


def test_execute_file_refuses_a_foreign_results_file(tmp_path):
    src, out = tmp_path / "c.jsonl", tmp_path / "r.jsonl"
    _write_jsonl(src, [{"id": "a", "language": "python", "code": "", "tests": TESTS}])
    _write_jsonl(out, [{"id": "zzz"}])
    with pytest.raises(ValueError, match="1 ids that are not in"):
        execute_file(src, out, CONFIG)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"c.jsonl:1: not valid JSON"),
        ('{"id": "a", "language": "cobol", "code": "", "tests": []}', "unknown language 'cobol'"),
        ('{"id": "a", "language": "python", "code": ""}', "'tests' must be a non-empty list"),
        ('{"id": "a", "language": "python", "code": "", "tests": [{"input": 1, "output": ""}]}',
         r"tests\[0\] must be"),
        ('{"id": "a", "language": "cpp", "code": "", "fn_name": "f", "tests": '
         '[{"input": "", "output": ""}]}', "functional tests are supported for Python only"),
        ('{"language": "python", "code": "", "tests": []}', "field 'id' must be"),
    ],
)  # fmt: skip
def test_bad_candidate_lines_name_the_line(tmp_path, line, message):
    src = tmp_path / "c.jsonl"
    src.write_text(line + "\n")
    with pytest.raises(ValueError, match=message):
        execute_file(src, tmp_path / "out.jsonl", CONFIG)


def test_duplicate_ids_are_refused(tmp_path):
    src = tmp_path / "c.jsonl"
    cand = {"id": "a", "language": "python", "code": "", "tests": TESTS}
    _write_jsonl(src, [cand, cand])
    with pytest.raises(ValueError, match=r"c.jsonl:2: duplicate candidate id 'a'"):
        execute_file(src, tmp_path / "out.jsonl", CONFIG)


def test_missing_toolchain_is_an_environment_error(monkeypatch):
    real_which = coreb_toolkit.sandbox.languages.shutil.which
    monkeypatch.setattr(
        coreb_toolkit.sandbox.languages.shutil,
        "which",
        lambda b: None if b.endswith("go") else real_which(b),
    )
    cand = {"id": "g", "language": "go", "code": ADD["go"], "tests": TESTS}
    with pytest.raises(ToolchainMissing, match="install the Debian package golang-go"):
        execute([cand], CONFIG)


def test_missing_bubblewrap_refuses_unless_opted_out(monkeypatch):
    monkeypatch.setattr(coreb_toolkit.sandbox.runner, "bubblewrap_path", lambda: None)
    monkeypatch.setattr(coreb_toolkit.sandbox.isolation, "bubblewrap_path", lambda: None)
    cand = {"id": "p", "language": "python", "code": ADD["python"], "tests": TESTS}
    with pytest.raises(IsolationUnavailable, match="refusing to run untrusted code"):
        execute([cand], CONFIG)
    [r] = execute([cand], ExecutionConfig(limits=LIMITS, isolation="none"))
    assert r["isolation"] == "none"
    assert r["verdicts"] == ["pass", "pass"]


@pytest.mark.parametrize("lang", ["cpp", "java", "go"])
def test_unsandboxed_opt_out_runs_compiled_languages(lang):
    cand = {"id": lang, "language": lang, "code": ADD[lang], "tests": TESTS}
    [r] = execute([cand], ExecutionConfig(limits=LIMITS, isolation="none"))
    assert r["verdicts"] == ["pass", "pass"], r


def test_private_work_root_is_refused_with_the_fix():
    private = Path(tempfile.mkdtemp(prefix="coreb-test-root-"))  # mode 0700
    cand = {"id": "p", "language": "python", "code": ADD["python"], "tests": TESTS}
    if os.geteuid() == 0:
        with pytest.raises(ValueError, match=r"not traversable by the sandbox user.*chmod o\+x"):
            execute([cand], ExecutionConfig(limits=LIMITS, work_root=str(private)))
    private.chmod(0o711)
    [r] = execute([cand], ExecutionConfig(limits=LIMITS, work_root=str(private)))
    assert r["passed"]
    assert list(private.iterdir()) == []  # build directories are removed
    private.rmdir()


def test_output_cap_holds_against_fallocate():
    # fallocate(FALLOC_FL_KEEP_SIZE) ignores RLIMIT_FSIZE on a file; stdout is a pipe instead.
    code = (
        "#include <fcntl.h>\n#include <cstdio>\n"
        "int main(){ int r = fallocate(1, FALLOC_FL_KEEP_SIZE, 0, 1LL << 30);"
        ' printf("%s\\n", r == 0 ? "RESERVED" : "DENIED"); }\n'
    )
    cand = {
        "id": "f",
        "language": "cpp",
        "code": code,
        "tests": [{"input": "", "output": "DENIED"}],
    }
    [r] = execute([cand], CONFIG)
    assert r["verdicts"] == ["pass"]


def test_stdout_flood_is_output_limit_and_stops_early():
    code = "while True:\n    print('x' * 1000)\n"
    cand = {"id": "o", "language": "python", "code": code, "tests": [{"input": "", "output": ""}]}
    [r] = execute([cand], ExecutionConfig(limits=Limits(wall_time_s=10, cpu_time_s=5,
                                                         output_bytes=100_000)))  # fmt: skip
    assert r["verdicts"] == ["output_limit"]
    assert r["tests"][0]["wall_time_s"] < 5
