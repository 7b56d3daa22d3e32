"""LiveCodeBench adapter: statement parsing, windows, candidates, and the label re-check."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from coreb_toolkit.releases.recheck import recheck
from coreb_toolkit.sources import livecodebench as lcb
from tests.conftest import SHARED_DATA

LCB_DIR = SHARED_DATA / "lcb_release_v6"

# -- parsing on hand-written statements -------------------------------------------------------

ATCODER = (
    "Print the sum of A and B.\n\nInput\n\nThe input is given from Standard Input in the "
    "following format:\nA B\n\nOutput\n\nPrint the answer.\n\nConstraints\n\n\n- 1 \\leq A\n\n"
    "Sample Input 1\n\n3 4\r\n1 2\n\nSample Output 1\n\n7\r\n3\r\n\nAdd them up (see Sample "
    "Input 2).\n\nSample Input 2\n\n5\n\nSample Output 2\n\n\r\n\nThe output may be empty.\n\n"
    "Sample Input 3\n\n\n9\r\n8\n\nSample Output 3\n\n\n17\r\n\nAn extra empty line.\n\n"
    "Sample Input 4\n\n1 1\n\nSample Output 4\n\n2"
)


def test_atcoder_samples() -> None:
    assert lcb.parse_atcoder_tests(ATCODER) == [
        {"input": "3 4\n1 2\n", "output": "7\n3\n"},
        {"input": "5\n", "output": "\n"},  # one empty line (written "\r")
        {"input": "9\n8\n", "output": "17\n"},
        {"input": "1 1\n", "output": "2\n"},
    ]


def test_atcoder_unpaired_and_empty_output_without_block() -> None:
    statement = (
        "Sample Input 1\n\n2\n\nSample Output 1\n\n\nThere may be nothing to print.\n\n"
        "Sample Input 2\n\n4\n\nExplanation without an output header."
    )
    assert lcb.parse_atcoder_tests(statement) == [{"input": "2\n", "output": ""}]


CODEFORCES = (
    "For each test case, output YES or NO.Sample Input 1:\n3\n\nabc\n\nab c\n\ncba\n\n\n\n"
    "Sample Output 1:\n\nYES\nNO\nYES\n\n\nNote\n\nIn the first test case, nothing happens."
)


def test_codeforces_samples() -> None:
    assert lcb.parse_codeforces_tests(CODEFORCES) == [
        {"input": "3\nabc\nab c\ncba\n", "output": "YES\nNO\nYES\n"}
    ]


LEETCODE = (
    "Return something.\n \nExample 1:\n\nInput: k = 2, nums = [1,2,3]\nOutput: 6\n"
    "Explanation: 1 + 2 + 3.\n\nExample 2:\n\n"
    "Input: nums = [[1,-2],[]], k = 0\nOutput: [true,false]\n\nExample 3:\n\n"
    'Input: nums = ["a, k = 1","b"], k = 10\nOutput: "x y"\n\nExample 4:\n\n'
    "Input: nums = ['a'], k = 1\nOutput: 0\n\nExample 5:\n\n"
    "Input: nums = [1], k = 1, extra = 2\nOutput: 1\n\nExample 6:\n\n"
    "Input: nums = [1], k = 3\nOutput: 1 or 2\n\nExample 7:\n\n"
    "Input: nums = [0.5], k = -1\nOutput: 2.50000\n \nConstraints:\n\n1 <= k <= 10"
)
STARTER = "class Solution:\n    def sumK(self, nums: List[int], k: int) -> int:\n        "


def test_leetcode_examples_in_starter_order() -> None:
    _, params = lcb.starter_signature(STARTER)
    tests = lcb.parse_leetcode_tests(LEETCODE, params)
    assert tests == [
        {"input": "[1, 2, 3]\n2\n", "output": "6"},
        {"input": "[[1, -2], []]\n0\n", "output": "[true, false]"},
        {"input": '["a, k = 1", "b"]\n10\n', "output": '"x y"'},
        # Example 4 (single quotes), 5 (unknown name), 6 (two outputs) are skipped.
        {"input": "[0.5]\n-1\n", "output": "2.5"},
    ]


def test_starter_signature() -> None:
    assert lcb.starter_signature(STARTER) == ("sumK", ["nums", "k"])
    starter = (
        "class Solution:\n    def maxPoints(self, grid: List[List[int]], "
        "m: Dict[int, str], queries: List[int]) -> List[int]:\n        "
    )
    assert lcb.starter_signature(starter) == ("maxPoints", ["grid", "m", "queries"])
    assert lcb.starter_signature("class Solution:\n    def f(self) -> int:\n") == ("f", [])
    assert lcb.starter_signature("") is None


def test_parse_public_tests_dispatches_on_platform() -> None:
    leet = {"platform": "leetcode", "question_content": LEETCODE, "starter_code": STARTER}
    assert len(lcb.parse_public_tests(leet)) == 4
    assert len(lcb.parse_public_tests({"platform": "atcoder", "question_content": ATCODER})) == 4
    assert lcb.parse_public_tests({"platform": "codeforces", "question_content": CODEFORCES})
    with pytest.raises(ValueError, match="unknown platform"):
        lcb.parse_public_tests({"platform": "topcoder", "question_content": ""})


def test_execution_code_keeps_future_imports_first() -> None:
    code = "from __future__ import annotations\nprint(1)\n"
    source = lcb.execution_code(code)
    assert source.startswith("from __future__ import annotations\n")
    assert source.count("from __future__") == 1
    assert lcb.LCB_IMPORT_PRELUDE in source
    ast.parse(source)


# -- load() on small hand-made files -----------------------------------------------------------


def _row(qid: str, date: str, platform: str, code: str, graded: bool, **extra) -> dict:
    row = {
        "question_id": qid,
        "question_title": f"title {qid}",
        "question_content": ATCODER if platform == "atcoder" else LEETCODE,
        "platform": platform,
        "contest_id": "c1",
        "contest_date": date,
        "starter_code": STARTER if platform == "leetcode" else "",
        "difficulty": "easy",
        "code_list": [code],
        "graded_list": [graded],
        "pass@1": float(graded),
    }
    row.update(extra)
    return row


def _write(tmp_path: Path, rows_by_model: dict[str, list[dict]]) -> Path:
    for model, rows in rows_by_model.items():
        (tmp_path / lcb.MODEL_FILES[model]).write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path


def _fake_data(tmp_path: Path) -> Path:
    rows = [
        _row("abc1_a", "2025-01-04T18:30:00", "atcoder", "print(1)", True),
        _row("3000", "2025-01-04T06:30:00", "leetcode", "class Solution: pass", False),
        _row("abc2_a", "2025-04-06T00:00:00", "atcoder", "", False),
    ]
    # the second model's file stores the lists as strings of Python list literals
    other = [
        {**r, "code_list": repr(r["code_list"]), "graded_list": repr([not r["graded_list"][0]])}
        for r in rows
    ]
    return _write(tmp_path, {"Qwen3-8B": rows, "Qwen2.5-7B-Instruct": other})


def test_load_fake_data(tmp_path: Path) -> None:
    problems, candidates = lcb.load(_fake_data(tmp_path))
    assert [p.problem_id for p in problems] == ["lcb/3000", "lcb/abc1_a", "lcb/abc2_a"]
    leet = problems[0]
    assert (leet.source, leet.platform, leet.entry_point) == ("livecodebench", "leetcode", "sumK")
    assert leet.meta == {
        "difficulty": "easy",
        "contest_id": "c1",
        "question_id": "3000",
        "public_tests": 4,
    }
    assert problems[1].entry_point is None and problems[1].meta["public_tests"] == 4
    assert [c.candidate_id for c in candidates[:2]] == [
        "lcb/3000/Qwen3-8B",
        "lcb/3000/Qwen2.5-7B-Instruct",
    ]
    qwen3, qwen25 = candidates[2], candidates[3]
    assert qwen3.code == qwen3.solution == "print(1)"
    assert (qwen3.label, qwen25.label, qwen3.label_source) == (True, False, "livecodebench")
    assert qwen3.execution["test_style"] == "stdio" and "fn_name" not in qwen3.execution
    assert qwen3.execution["code"].endswith("print(1)")
    assert candidates[0].execution["test_style"] == "functional"
    assert candidates[0].execution["fn_name"] == "sumK"


def test_window_bounds_are_inclusive(tmp_path: Path) -> None:
    data = _fake_data(tmp_path)
    problems, candidates = lcb.load(data, lcb.WINDOW_V202603)
    assert [p.problem_id for p in problems] == ["lcb/abc1_a", "lcb/abc2_a"]
    assert len(candidates) == 4
    problems, _ = lcb.load(data, ("2025-01-04T06:30:00", "2025-01-04T18:30:00"))
    assert [p.problem_id for p in problems] == ["lcb/3000", "lcb/abc1_a"]
    with pytest.raises(ValueError, match="ISO 8601"):
        lcb.load(data, ("yesterday", "today"))


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="directory"):
        lcb.load(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match=lcb.MODEL_FILES["Qwen3-8B"]):
        lcb.load(tmp_path)
    rows = [_row("abc1_a", "2025-01-05T00:00:00", "atcoder", "print(1)", True)]
    broken = [{k: v for k, v in rows[0].items() if k != "graded_list"}]
    _write(tmp_path, {"Qwen3-8B": rows, "Qwen2.5-7B-Instruct": broken})
    with pytest.raises(ValueError, match=r"qwen2\.5.*graded_list"):
        lcb.load(tmp_path)
    other = [_row("abc9_a", "2025-01-05T00:00:00", "atcoder", "print(1)", True)]
    _write(tmp_path, {"Qwen2.5-7B-Instruct": other})
    with pytest.raises(ValueError, match="same problems"):
        lcb.load(tmp_path)
    (tmp_path / lcb.MODEL_FILES["Qwen3-8B"]).write_text("[{", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        lcb.load(tmp_path)


def test_test_coverage_counts() -> None:
    problems = [
        lcb.SourceProblem(
            "lcb/a", "livecodebench", "s", platform="atcoder", meta={"public_tests": 2}
        ),
        lcb.SourceProblem(
            "lcb/b", "livecodebench", "s", platform="atcoder", meta={"public_tests": 0}
        ),
        lcb.SourceProblem(
            "lcb/c", "livecodebench", "s", platform="leetcode", meta={"public_tests": 1}
        ),
    ]
    assert lcb.test_coverage(problems) == {
        "atcoder": {"problems": 2, "with_tests": 1, "tests": 2},
        "leetcode": {"problems": 1, "with_tests": 1, "tests": 1},
        "all": {"problems": 3, "with_tests": 2, "tests": 3},
    }


@pytest.mark.needs_toolchain("bwrap")
def test_recheck_uses_the_lcb_prelude(tmp_path: Path) -> None:
    """A sample that uses ``List`` and ``Counter`` unimported runs, as under LiveCodeBench."""
    good = (
        "class Solution:\n    def sumK(self, nums: List[int], k: int) -> int:\n"
        "        if nums and isinstance(nums[0], list):\n            return [True, False]\n"
        "        if nums and isinstance(nums[0], str):\n            return 'x y'\n"
        "        if k == -1:\n            return 2.5\n"
        "        return sum(Counter(nums).elements())\n"
    )
    rows = [_row("3000", "2025-01-05T00:00:00", "leetcode", good, True)]
    wrong = [_row("3000", "2025-01-05T00:00:00", "leetcode", good.replace("2.5", "3.5"), True)]
    _write(tmp_path, {"Qwen3-8B": rows, "Qwen2.5-7B-Instruct": wrong})
    problems, candidates = lcb.load(tmp_path)
    report = recheck(problems, candidates)
    assert report["counts"] == {
        "lcb_pass_public_pass": 1,
        "lcb_pass_public_fail": 1,
        "lcb_fail_public_pass": 0,
        "lcb_fail_public_fail": 0,
    }
    assert report["agreement"] == 0.5
    assert report["lcb_pass_public_fail"] == ["lcb/3000/Qwen2.5-7B-Instruct"]
    assert report["results"]["lcb/3000/Qwen3-8B"]["verdicts"] == ["pass"] * 4


# -- the real data --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def everything() -> tuple[list, list]:
    return lcb.load(LCB_DIR)


@pytest.mark.needs_shared_data
def test_real_data_ids_and_candidates(everything) -> None:
    problems, candidates = everything
    assert len(problems) == 1055 and len(candidates) == 2 * 1055
    assert len({p.problem_id for p in problems}) == len(problems)
    assert len({c.candidate_id for c in candidates}) == len(candidates)
    executions = [c.execution["id"] for c in candidates if c.execution]
    assert len(set(executions)) == len(executions)
    assert {c.model for c in candidates} == set(lcb.MODEL_FILES)
    assert all(c.label is not None for c in candidates)
    by_id = {p.problem_id: p for p in problems}
    assert by_id["lcb/3562"].entry_point == "maximumWeight"
    assert all((p.entry_point is not None) == (p.platform == "leetcode") for p in problems)


@pytest.mark.needs_shared_data
def test_real_data_windows() -> None:
    problems, candidates = lcb.load(LCB_DIR, lcb.WINDOW_V202603)
    assert len(problems) == 175 and len(candidates) == 350
    assert problems[0].contest_date == "2025-01-04T18:30:00"
    # release_v5's 167 problems plus problem 3570 of the split contest of 2024-09-28T19:30
    problems, _ = lcb.load(LCB_DIR, lcb.WINDOW_V202602)
    assert len(problems) == 168
    assert {p.problem_id for p in problems[:2]} == {"lcb/3570", "lcb/3600"}
    assert problems[-1].contest_date == "2025-01-04T06:30:00"


@pytest.mark.needs_shared_data
def test_real_data_public_test_coverage(everything) -> None:
    coverage = lcb.test_coverage(everything[0])
    # measured: every problem has tests except the two interactive AtCoder ones (abc337_e,
    # abc355_e); every example of every statement parses (2,763 tests)
    assert coverage["leetcode"]["with_tests"] == coverage["leetcode"]["problems"] == 444
    assert coverage["codeforces"]["with_tests"] == 9
    assert coverage["atcoder"]["with_tests"] >= 600
    assert coverage["all"]["tests"] >= 2763
    no_tests = {p.problem_id for p in everything[0] if not p.meta["public_tests"]}
    assert no_tests <= {"lcb/abc337_e", "lcb/abc355_e"}


@pytest.mark.needs_shared_data
def test_real_data_hard_statements(everything) -> None:
    tests = {c.problem_id: c.execution["tests"] for c in everything[1] if c.execution}
    # an empty expected output written as no block at all
    assert tests["lcb/abc367_c"][1] == {"input": "1 2\n1\n", "output": ""}
    # two empty lines after both headers of a sample
    assert tests["lcb/abc371_e"][0] == {"input": "3\n1 2 2\n", "output": "8\n"}
    # Codeforces: empty lines between input lines dropped
    assert tests["lcb/1873_A"] == [
        {"input": "6\nabc\nacb\nbac\nbca\ncab\ncba\n", "output": "YES\nYES\nYES\nNO\nNO\nYES\n"}
    ]


@pytest.mark.needs_shared_data
@pytest.mark.needs_toolchain("bwrap")
def test_real_data_recheck_first_20_of_v202603() -> None:
    """40 candidates, ~10 s on 2 cores.

    LiveCodeBench's full test suite contains the public tests, so a sample that it passes must
    pass them too: none may fail (that would be a parsing error). The other way round is no
    contradiction (the sample fails hidden tests); measured: 8 both pass, 28 both fail, 4 pass
    only the public tests, agreement 0.90.
    """
    problems, candidates = lcb.load(LCB_DIR, lcb.WINDOW_V202603)
    problems = problems[:20]
    chosen = {p.problem_id for p in problems}
    candidates = [c for c in candidates if c.problem_id in chosen]
    report = recheck(problems, candidates)
    assert report["executed"] == 40 and report["not_executed"] == 0
    assert report["counts"]["lcb_pass_public_fail"] == 0
    assert report["counts"]["lcb_pass_public_pass"] == sum(c.label for c in candidates)
    assert report["agreement"] >= 0.85
