"""The reference rows of mteb's CoREB PR and the CoREB(v1) mean."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from coreb_toolkit.benchmark.published import mteb_reference
from coreb_toolkit.benchmark.report import mteb_v1_table
from coreb_toolkit.vocabulary import COREB_V1_TASKS, coreb_v1_mean


def test_the_mean_of_the_six_is_the_prs_avg_column():
    source, rows = mteb_reference()
    assert source == "https://github.com/embeddings-benchmark/mteb/pull/4665"
    printed = {
        r["model"]: r["printed_mean"]
        for r in json.loads(
            resources.files("coreb_toolkit.benchmark").joinpath("mteb_reference.json").read_text()
        )["rows"]
    }
    checked = 0
    for row in rows:
        if printed[row.model] is not None:  # the PR's own 'Avg', rounded to 0.01 percent
            assert 100 * row.mean == pytest.approx(printed[row.model], abs=0.006), row.model
            checked += 1
    assert checked == 7
    # Qwen3-Embedding-0.6B by hand: (89.27 + 37.68 + 41.64 + 88.95 + 39.36 + 27.94) / 6
    assert rows[0].mean == pytest.approx(324.84 / 600)


def test_the_mean_needs_all_six():
    six = dict.fromkeys(COREB_V1_TASKS, 0.5)
    assert coreb_v1_mean(six) == pytest.approx(0.5)
    del six["CorebC2CReranking"]
    assert coreb_v1_mean(six) is None


def test_the_summary_section_shows_a_run_beside_the_reference_rows():
    scores = dict(zip(COREB_V1_TASKS, (0.2, 0.4, 0.6, 0.3, 0.5, 0.7), strict=True))
    result = {
        "model": {"name": "m<script>"},
        "mteb_tasks": {
            t: {"main_score": v, "n_queries": 1, "scores": {}} for t, v in scores.items()
        },
    }
    lines = mteb_v1_table([result])
    ours = next(line for line in lines if "(this run)" in line)
    assert ours.endswith("| 20.00 | 40.00 | 60.00 | 30.00 | 50.00 | 70.00 | 45.00 |")
    assert "<script>" not in "\n".join(lines)  # a submitted name is escaped
    assert sum("Qwen/Qwen3-Embedding" in line for line in lines) == 3
    assert mteb_v1_table([{"model": {"name": "x"}}]) == []
