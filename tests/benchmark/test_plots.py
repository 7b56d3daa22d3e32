"""The CoREB figures (Figures 4, 6, 7) drawn from first-stage results dicts."""

from __future__ import annotations

import copy
import math
import sys

import numpy as np
import pytest

from coreb_toolkit.benchmark.plots import (
    intrusion_table,
    language_matrix,
    ndcg_curves,
    plot_all,
    plot_diversity,
    plot_intrusion,
    plot_language_heatmap,
    plot_ndcg_curves,
)
from eval_metrics.aggregate import AggregateRow

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METRICS = (
    "ndcg_at_1", "ndcg_at_3", "ndcg_at_5", "ndcg_at_10", "map_at_10", "map_at_100",
    "recall_at_1", "recall_at_3", "recall_at_5", "recall_at_10", "recall_at_100", "mrr_at_10",
    "precision_at_1", "precision_at_3", "precision_at_5", "precision_at_10",
)  # fmt: skip


def row(level, name, n, ndcg10, rate=None, eligible=0):
    """A row exactly as the runner writes it: AggregateRow.to_dict()."""
    metrics = dict.fromkeys(METRICS, ndcg10)
    # nDCG@k grows with k, as in Figure 4
    metrics.update(ndcg_at_1=ndcg10 / 2, ndcg_at_3=ndcg10 * 0.7, ndcg_at_5=ndcg10 * 0.9)
    return AggregateRow(level, name, n, metrics, rate, eligible).to_dict()


def result(model, rows):
    return {
        "model": {"name": model, "kind": "test"},
        "release": "release_v2603",
        "no_positive_policy": "zero",
        "relevance_level": 2,
        "rows": rows,
    }


@pytest.fixture
def results():
    # "alpha" sorts first by name but has the lower Overall nDCG@10, so it is plotted second.
    alpha = result(
        "alpha",
        [
            row("subtask", "t2c_canonical_retro_python", 10, 0.5),
            row("subtask", "t2c_full_retro_python", 30, 0.7),
            row("subtask", "t2c_search_python", 20, 0.0),
            row("subtask", "t2c_full_retro_any", 5, 0.9),
            row("subtask", "c2t_full_retro_go", 4, 0.8),
            row("subtask", "c2t_match", 6, 0.3),
            row("task", "T2C", 65, 0.5, rate=0.25, eligible=4),
            row("task", "C2T", 10, 0.5, rate=None, eligible=0),
            row("overall", "Overall", 75, 0.4),
        ],
    )
    beta = result(
        "beta",
        [
            row("subtask", "t2c_canonical_retro_python", 8, 0.25),
            row("subtask", "t2c_full_retro_java", 12, 0.6),
            row("subtask", "t2c_canonical_retro_java", 4, 0.2),
            row("subtask", "c2t_canonical_retro_go", 2, 0.4),
            row("subtask", "c2t_full_retro_go", 6, 0.6),
            row("task", "T2C", 24, 0.6, rate=0.5, eligible=6),
            row("task", "C2T", 8, 0.55, rate=0.125, eligible=8),
            row("overall", "Overall", 32, 0.6),
        ],
    )
    return [alpha, beta]


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    from PIL import Image

    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
    assert width > 200 and height > 100
    assert b"matplotlib" not in data  # no Software stamp


def test_language_matrix_pools_variants_by_query_count(results):
    models, languages, matrix = language_matrix(results, "t2c")
    assert models == ["beta", "alpha"]  # by Overall nDCG@10, best first (Figure 7's order)
    assert languages == ["any", "python", "java", "cpp", "ruby", "go"]
    nan = math.nan
    expected = [
        # beta: python from one subtask; java = (12 * 0.6 + 4 * 0.2) / 16
        [nan, 0.25, (12 * 0.6 + 4 * 0.2) / 16, nan, nan, nan],
        # alpha: python = (10 * 0.5 + 30 * 0.7) / 40, search left out as in Figure 6
        [0.9, (10 * 0.5 + 30 * 0.7) / 40, nan, nan, nan, nan],
    ]
    np.testing.assert_allclose(matrix, expected, equal_nan=True)
    assert matrix[1, 1] == pytest.approx(0.65)

    _, _, with_search = language_matrix(
        results, "t2c", variants=["canonical_retro", "full_retro", "search"]
    )
    assert with_search[1, 1] == pytest.approx((10 * 0.5 + 30 * 0.7 + 20 * 0.0) / 60)
    _, _, search_only = language_matrix(results, "t2c", variants=["search"])
    np.testing.assert_allclose(search_only[:, 1], [nan, 0.0], equal_nan=True)

    _, _, c2t = language_matrix(results, "c2t")  # c2t_match has no language: not pooled
    np.testing.assert_allclose(c2t[:, 5], [(2 * 0.4 + 6 * 0.6) / 8, 0.8])
    assert np.isnan(c2t[:, :5]).all()


def test_curves_and_intrusion_tables(results):
    models, curves = ndcg_curves(results)
    assert models == ["beta", "alpha"]
    assert list(curves) == ["T2C", "C2T"]  # no C2C row anywhere: no C2C panel
    assert curves["T2C"]["alpha"] == pytest.approx([0.25, 0.35, 0.45, 0.5])

    models, tasks, rates, eligible = intrusion_table(results)
    assert tasks == ["T2C", "C2T"]
    np.testing.assert_allclose(rates, [[0.5, 0.125], [0.25, math.nan]], equal_nan=True)
    assert eligible.tolist() == [[6, 8], [4, 0]]


def test_each_plot_writes_a_png(results, tmp_path):
    assert plot_ndcg_curves(results, tmp_path / "a" / "curves.png") == tmp_path / "a/curves.png"
    assert_png(tmp_path / "a" / "curves.png")
    assert_png(plot_language_heatmap(results, tmp_path / "t2c.png", task="t2c"))
    assert_png(plot_language_heatmap(results, tmp_path / "c2t.png", task="c2t"))
    assert_png(plot_intrusion(results, tmp_path / "intrusion.png"))
    # a single model works too
    assert_png(plot_ndcg_curves(results[:1], tmp_path / "one.png"))


def test_plot_all_writes_what_applies_and_is_byte_identical(results, tmp_path):
    first = plot_all(results, tmp_path / "run1")
    assert [p.name for p in first] == [
        "ndcg_at_k.png",
        "language_t2c.png",
        "language_c2t.png",
        "intrusion.png",
    ]
    for path in first:
        assert_png(path)
    second = plot_all(copy.deepcopy(results), tmp_path / "run2")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    # the input order of the models does not matter either
    third = plot_all(results[::-1], tmp_path / "run3")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in third]


def test_plot_all_skips_figures_without_data(results, tmp_path):
    for res in results:
        res["rows"] = [
            r for r in res["rows"] if not r["name"].startswith("c2t_") and r["name"] != "C2T"
        ]
        for r in res["rows"]:
            r["hard_negative_intrusion_rate"] = None
    written = plot_all(results, tmp_path)
    assert [p.name for p in written] == ["ndcg_at_k.png", "language_t2c.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["language_t2c.png", "ndcg_at_k.png"]
    with pytest.raises(ValueError, match="intrusion"):
        plot_intrusion(results, tmp_path / "x.png")

    only_overall = [result("m", [row("overall", "Overall", 3, 0.5)])]
    assert plot_all(only_overall, tmp_path / "empty") == []
    with pytest.raises(ValueError, match="task row"):
        plot_ndcg_curves(only_overall, tmp_path / "x.png")


def test_c2c_has_no_language_heatmap(results, tmp_path):
    results[0]["rows"].insert(0, row("subtask", "c2c_cross_lang", 7, 0.4))
    with pytest.raises(ValueError, match=r"c2c_<variant>_<language>"):
        language_matrix(results, "c2c")
    with pytest.raises(ValueError, match="task must be one of"):
        language_matrix(results, "T2C")
    with pytest.raises(ValueError, match="variants"):
        plot_language_heatmap(results, tmp_path / "x.png", variants="full_retro")


@pytest.mark.parametrize(
    ("mutate", "error", "match"),
    [
        (lambda rs: rs.clear(), ValueError, "empty"),
        (lambda rs: rs[1]["rows"][5].pop("ndcg_at_3"), ValueError, r"T2C.*ndcg_at_3"),
        (lambda rs: rs[0].pop("rows"), ValueError, r"results\[0\] lacks \['rows'\]"),
        (lambda rs: rs[0]["model"].pop("name"), ValueError, "'name'"),
        (lambda rs: rs[1].update(release="release_v2602"), ValueError, "release"),
        (lambda rs: rs[1].update(relevance_level=1), ValueError, "relevance_level"),
        (lambda rs: rs[1]["model"].update(name="alpha"), ValueError, "unique"),
        (lambda rs: rs[0]["rows"].pop(), ValueError, "overall row"),
        (lambda rs: rs[0]["rows"][0].pop("level"), ValueError, "'level'"),
        (lambda rs: rs[0]["rows"].append(rs[0]["rows"][0]), ValueError, "repeats"),
    ],
)
def test_bad_input_is_rejected(results, tmp_path, mutate, error, match):
    mutate(results)
    with pytest.raises(error, match=match):
        plot_ndcg_curves(results, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_bad_row_keys_named_by_each_plot(results, tmp_path):
    results[1]["rows"][0].pop("n_queries")
    with pytest.raises(ValueError, match=r"t2c_canonical_retro_python.*n_queries"):
        plot_language_heatmap(results, tmp_path / "x.png")
    with pytest.raises(ValueError, match="n_queries"):
        plot_all(results, tmp_path / "all")
    results[1]["rows"][0]["n_queries"] = 8
    results[0]["rows"][6].pop("n_intrusion_eligible")
    with pytest.raises(ValueError, match="n_intrusion_eligible"):
        plot_intrusion(results, tmp_path / "x.png")
    with pytest.raises(TypeError, match="list of results dicts"):
        plot_intrusion(results[0], tmp_path / "x.png")


def test_missing_matplotlib_names_the_extra(results, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install coreb-toolkit\[plot\]"):
        plot_ndcg_curves(results, tmp_path / "x.png")
    # the data helpers need no matplotlib
    assert language_matrix(results)[0] == ["beta", "alpha"]


def diversity_report(per_query):
    """The shape of trainers.quality_data.diversity.DiversityReport.to_dict()."""
    return {"per_query": {q: {"n_variants": 3, "n_pairs": 3, "syntactic": syn, "semantic": sem}
                          for q, (syn, sem) in per_query.items()}, "skipped": {}}  # fmt: skip


def test_plot_diversity_writes_a_png_the_same_every_time(tmp_path):
    reports = {
        "guideline": diversity_report({"p1": (0.7, 0.12), "p2": (0.66, 0.1), "p3": (0.71, 0.14)}),
        "plain": diversity_report({"p1": (0.6, 0.08), "p2": (0.57, 0.09)}),
    }
    first = plot_diversity(reports, tmp_path / "a" / "diversity.png")
    second = plot_diversity(reports, tmp_path / "b" / "diversity.png")
    assert first.read_bytes().startswith(PNG_SIGNATURE) and first.stat().st_size > 1000
    assert first.read_bytes() == second.read_bytes()


def test_plot_diversity_rejects_reports_without_per_query_values(tmp_path):
    with pytest.raises(ValueError, match="non-empty mapping"):
        plot_diversity({}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="group 'plain' has no per_query"):
        plot_diversity({"plain": {"per_query": {}}}, tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"per_query\['p1'\] lacks 'syntactic' or 'semantic'"):
        plot_diversity({"plain": {"per_query": {"p1": {"semantic": 0.1}}}}, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
