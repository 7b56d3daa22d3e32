"""Measured mode: speed/memory pairs from sandboxed re-runs on the public tests."""

from __future__ import annotations

import csv

import pytest

import qualcode_dataset as q
from tests.qualcode_dataset.fixture import HEADER, MarkerAnalyser

FAST = "a, b = map(int, input().split())\nprint(a + b)\n"
# burns about 0.3 s of CPU and holds ~80 MB: slower and heavier than FAST by far more than 2x
SLOW = (
    "a, b = map(int, input().split())\nx = [0] * 10_000_000\ns = 0\n"
    "for i in range(3_000_000):\n    s += i\nprint(a + b)\n"
)
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


def write(root):
    # p00100: tests; the judge says FAST is the slow one (a judge reading is one noisy sample)
    subs = {
        "p00100": [("s1", FAST, 900, 90000), ("s2", SLOW, 100, 9000), ("s3", WRONG, 50, 5000)],
        "p00200": [("s4", FAST, 10, 100)],  # no tests: in the corpus, never measured
    }
    (root / "metadata").mkdir(parents=True)
    (root / "problem_descriptions").mkdir()
    for pid, rows in subs.items():
        with open(root / "metadata" / f"{pid}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(HEADER)
            for sid, code, cpu, mem in rows:
                folder = root / "data" / pid / "Python"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f"{sid}.py").write_text(code)
                w.writerow(
                    [
                        sid,
                        pid,
                        "u",
                        "0",
                        "Python",
                        "Python3",
                        "py",
                        "Accepted",
                        cpu,
                        mem,
                        len(code),
                        "1/1",
                    ]
                )
        (root / "problem_descriptions" / f"{pid}.html").write_text(
            f"<p>Add two numbers ({pid}).</p>"
        )
    tests = root / "derived" / "input_output" / "data" / "p00100"
    tests.mkdir(parents=True)
    (tests / "input.txt").write_text("1 2\n")
    (tests / "output.txt").write_text("3\n")
    return root


@pytest.mark.needs_toolchain("bwrap", "python3")
def test_measured_labels_from_sandbox_medians(tmp_path):
    from coreb_toolkit.quality.measure import MeasurementUnavailable

    root = write(tmp_path / "codenet")
    options = q.QualcodeOptions(labels="measured", repeats=3, retrieval_negatives=1)
    try:
        data = q.prepare([root], options, analyser=MarkerAnalyser(), progress=False)
    except MeasurementUnavailable as err:
        pytest.skip(f"the sandbox cannot measure here: {err}")
    speed = {r["problem_id"]: r for r in data.pairs["speed"]}
    # measured: s1 (FAST) beats s2 (SLOW), against the judge's single reading
    assert (speed["p00100"]["chosen_id"], speed["p00100"]["rejected_id"]) == ("s1", "s2")
    assert speed["p00100"]["label_source"] == "measured"
    assert speed["p00100"]["chosen_cpu_time_ms"] == 900  # the judge's figure is still carried
    assert (
        speed["p00100"]["rejected_measured_cpu_time_ms"]
        > 2 * speed["p00100"]["chosen_measured_cpu_time_ms"]
    )
    memory = {r["problem_id"]: r for r in data.pairs["memory"]}
    assert (memory["p00100"]["chosen_id"], memory["p00100"]["rejected_id"]) == ("s1", "s2")
    reasons = {(d.stage, d.reason, d.item) for d in data.dropped}
    assert ("pairs:speed", "fails its public tests when re-run", "s3") in reasons
    assert ("pairs:speed", "no public tests to measure", "s4") in reasons
    m = data.report["measured"]
    assert m["submissions_measured"] == 3 and m["submissions_failing_tests"] == 1
    # the one judge-vs-measured pair with both figures (s1, s2) disagrees
    assert m["speed"]["n_compared"] == 1 and m["speed"]["n_agree"] == 0
