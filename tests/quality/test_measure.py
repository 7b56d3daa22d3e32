"""Measured speed/memory: sandboxed medians, the 2x margin rule, agreement with the judge."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from coreb_toolkit.quality.measure import (
    Measurement,
    MeasurementUnavailable,
    agreement,
    margin_label,
    measure,
)
from coreb_toolkit.sandbox import ExecutionConfig
from tests.conftest import SHARED_DATA

TESTS = [("3\n", "6\n"), ("10\n", "20\n")]
FAST = "print(int(input()) * 2)\n"
# A busy loop of 3 million steps: about 0.1-0.3 s of CPU per test, against ~0.02 s for FAST.
SLOW = "n = int(input())\ns = 0\nfor i in range(3_000_000):\n    s += i\nprint(n * 2)\n"
WRONG = "print(int(input()) * 3)\n"
CRASHES_ON_10 = "n = int(input())\nassert n < 10\nprint(n * 2)\n"
REPEATS = 3


def _measure_or_skip(*args, **kwargs):
    try:
        return measure(*args, **kwargs)
    except MeasurementUnavailable as err:
        pytest.skip(f"the sandbox cannot measure here: {err}")


@pytest.fixture(scope="module")
def measured():
    return _measure_or_skip(
        [
            ("fast", FAST, TESTS),
            ("slow", SLOW, TESTS),
            ("wrong", WRONG, TESTS),
            ("crashes", CRASHES_ON_10, TESTS),
            {
                "id": "fast-as-candidate",
                "code": FAST,
                "tests": [{"input": i, "output": o} for i, o in TESTS],
            },
            ("fast-test-objects", FAST, [SimpleNamespace(input=i, output=o) for i, o in TESTS]),
        ],
        repeats=REPEATS,
        progress=False,
    )


sandboxed = pytest.mark.needs_toolchain("bwrap", "python3")


@sandboxed
def test_passing_programs_have_finite_medians(measured):
    ids = ["fast", "slow", "wrong", "crashes", "fast-as-candidate", "fast-test-objects"]
    assert list(measured) == ids
    for sid in ("fast", "slow", "fast-as-candidate", "fast-test-objects"):
        m = measured[sid]
        assert isinstance(m, Measurement)
        assert (m.submission_id, m.passed, m.runs) == (sid, True, REPEATS)
        assert m.verdicts == ("pass", "pass")
        assert math.isfinite(m.cpu_time_ms) and m.cpu_time_ms > 0
        assert math.isfinite(m.memory_kb) and m.memory_kb > 0


@sandboxed
def test_slow_program_is_measured_slower(measured):
    fast, slow = measured["fast"].cpu_time_ms, measured["slow"].cpu_time_ms
    assert slow > fast
    assert margin_label(fast, slow) == 1, (fast, slow)


@sandboxed
def test_failing_programs_are_not_measured_nor_rerun(measured):
    wrong = measured["wrong"]
    assert (wrong.passed, wrong.runs, wrong.cpu_time_ms, wrong.memory_kb) == (False, 1, None, None)
    assert wrong.verdicts == ("wrong_answer", "wrong_answer")
    crashes = measured["crashes"]
    assert (crashes.passed, crashes.cpu_time_ms) == (False, None)
    assert crashes.verdicts == ("pass", "runtime_error")


def test_bad_input_is_refused_before_running():
    with pytest.raises(ValueError, match="repeats must be a positive int"):
        measure([("a", FAST, TESTS)], repeats=0)
    with pytest.raises(ValueError, match=r"config\.repeats must be 1"):
        measure([("a", FAST, TESTS)], config=ExecutionConfig(repeats=3))
    with pytest.raises(ValueError, match="duplicate submission id 'a'"):
        measure([("a", FAST, TESTS), ("a", SLOW, TESTS)])
    with pytest.raises(ValueError, match="non-empty sequence of tests"):
        measure([("a", FAST, [])])
    with pytest.raises(ValueError, match=r"tests\[0\] must be|a test must be"):
        measure([("a", FAST, [("1\n", 2)])])
    with pytest.raises(ValueError, match="unknown language"):
        measure([("a", FAST, TESTS)], language="cobol")
    with pytest.raises(TypeError, match="sequence of"):
        measure({"a": FAST})
    assert measure([]) == {}


# -- the 2x rule -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "margin", "expected"),
    [
        (10, 25, 2.0, 1),  # 2 * 10 = 20 < 25: a clearly cheaper
        (25, 10, 2.0, -1),  # 2 * 10 = 20 < 25: b clearly cheaper
        (10, 20, 2.0, None),  # exactly 2x is not a preference (strict inequality)
        (20, 10, 2.0, None),
        (10, 20.001, 2.0, 1),
        (10, 19, 2.0, None),
        (10, 25, 3.0, None),  # 3 * 10 = 30 >= 25
        (10, 31, 3.0, 1),
        (7, 7, 1.0, None),  # margin 1: any strict difference
        (7, 8, 1.0, 1),
        (0, 0, 2.0, None),
        (0, 1, 2.0, 1),
    ],
)
def test_margin_label_by_hand(a, b, margin, expected):
    assert margin_label(a, b, margin) == expected


def test_margin_label_refuses_bad_figures():
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number >= 0"):
            margin_label(bad, 1)
    with pytest.raises(TypeError, match="must be a number"):
        margin_label(True, 1)
    with pytest.raises(TypeError, match="must be a number"):
        margin_label("10", 1)
    with pytest.raises(ValueError, match="margin must be >= 1"):
        margin_label(1, 2, margin=0.5)


# -- agreement -------------------------------------------------------------------------------


def test_agreement_counts_by_hand():
    judge = {"a": 1, "b": 1, "c": -1, "d": None, "e": 1, "f": None, "g": -1}
    measured = {"a": 1, "b": -1, "c": -1, "d": 1, "e": None, "f": None, "g": -1}
    out = agreement(judge, measured)
    # compared: a, b, c, g (both label); agree: a, c, g; disagree: b
    assert {k: v for k, v in out.items() if k != "confusion"} == {
        "n_pairs": 7,
        "n_compared": 4,
        "n_agree": 3,
        "n_disagree": 1,
        "rate": 0.75,
        "n_judge_only": 1,  # e
        "n_measured_only": 1,  # d
        "n_neither": 1,  # f
    }
    assert out["confusion"] == {
        1: {1: 1, -1: 1, None: 1},
        -1: {1: 0, -1: 2, None: 0},
        None: {1: 1, -1: 0, None: 1},
    }
    json.dumps(out)  # a build report can store it


def test_agreement_edge_cases():
    assert agreement({}, {})["rate"] is None
    assert agreement({"a": None}, {"a": 1})["rate"] is None
    with pytest.raises(ValueError, match="same pairs: 1 only in judge"):
        agreement({"a": 1, "b": 1}, {"a": 1})
    with pytest.raises(ValueError, match="1, -1 or None"):
        agreement({"a": 2}, {"a": 1})
    with pytest.raises(ValueError, match="1, -1 or None"):
        agreement({"a": 1}, {"a": True})


# -- real submissions ------------------------------------------------------------------------

# NoFunEval runtime-efficiency pairs (slow source_code -> fast target_code) whose code needs
# only the standard library (the sandbox's python3 has no numpy/scipy).
REAL_PAIRS = ("p03674_s545310428", "p03037_s092044899", "p02863_s340691380")


def _output_of(input_path):
    return input_path.with_name(input_path.name.replace("input", "output"))


@sandboxed
@pytest.mark.needs_shared_data
def test_real_nofuneval_pairs_pass_their_public_tests():
    root = SHARED_DATA / "nofuneval"
    rows = {}
    with open(root / "runtime_efficiency.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows[f"{row['problem_id']}_{row['submission_id_v0']}"] = row
    jobs = []
    for key in REAL_PAIRS:
        row = rows[key]
        cases = root / "codenet_public_test_cases" / row["problem_id"]
        tests = [
            (path.read_text(encoding="utf-8"), _output_of(path).read_text(encoding="utf-8"))
            for path in sorted(cases.glob("input.*.txt"))
        ]
        assert tests, cases
        jobs += [(f"{key}_v0", row["source_code"], tests), (f"{key}_v1", row["target_code"], tests)]
    results = _measure_or_skip(jobs, repeats=3, progress=False)
    for sid, m in results.items():
        assert m.passed, (sid, m.verdicts)
        assert m.runs == 3
        assert set(m.verdicts) == {"pass"}
        assert m.cpu_time_ms > 0 and m.memory_kb > 0
