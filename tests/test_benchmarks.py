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
