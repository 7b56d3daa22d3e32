"""The benchmark scripts still run (a tiny size; timings are not asserted: never timed tests)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_metrics_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_metrics.py"),
         "--queries", "60", "--docs", "40", "--repeats", "1", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_metrics.json").read_text())
    assert results


@pytest.mark.slow
def test_bench_dataset_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_dataset.py"),
         "--scales", "0.05", "0.1", "--repeats", "1", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_dataset.json").read_text())
    assert [r["scale"] for r in results] == [0.05, 0.1]
    assert all(r["queries"] > 0 and r["qrels"] > 0 for r in results)
