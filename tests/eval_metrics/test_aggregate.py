"""Aggregation: per subtask, per main task, Overall query-count-weighted."""

from __future__ import annotations

import pytest

from eval_metrics import aggregate, evaluate_retrieval, main_task_of, render_table


def evaluation(n_hits: int, n_misses: int, **kwargs):
    """An evaluation with n_hits perfect queries and n_misses queries scoring 0."""
    qrels = {f"q{i}": {"pos": 2} for i in range(n_hits + n_misses)}
    run = {q: {"pos": 1.0 if i < n_hits else 0.0, "neg": 0.5} for i, q in enumerate(qrels)}
    return evaluate_retrieval(qrels, run, k_values={"mrr": [1]}, **kwargs)


def test_overall_is_query_weighted_not_mean_of_means():
    rows = aggregate(
        {
            "t2c_full_retro_any": evaluation(1, 0),  # mean 1.0 over 1 query
            "t2c_search_any": evaluation(0, 3),  # mean 0.0 over 3 queries
            "c2t_match": evaluation(2, 2),  # mean 0.5 over 4 queries
        }
    )
    by_name = {row.name: row for row in rows}
    assert [r.level for r in rows] == ["subtask"] * 3 + ["task"] * 2 + ["overall"]
    assert by_name["T2C"].n_queries == 4
    assert by_name["T2C"].metrics["mrr_at_1"] == 0.25  # not (1.0 + 0.0) / 2
    assert by_name["C2T"].metrics["mrr_at_1"] == 0.5
    assert by_name["Overall"].n_queries == 8
    assert by_name["Overall"].metrics["mrr_at_1"] == 3 / 8


def test_main_task_of():
    assert main_task_of("t2c_canonical_retro_go") == "T2C"
    assert main_task_of("c2c_cross_lang") == "C2C"
    assert main_task_of("qualcode_speed") == "QualCode"
    with pytest.raises(ValueError, match="cannot tell the main task of subtask 'foo_bar'"):
        main_task_of("foo_bar")


def test_mixed_policies_cannot_be_pooled():
    with pytest.raises(ValueError, match="no_positive_policy"):
        aggregate(
            {
                "t2c_search_any": evaluation(1, 0),
                "c2t_match": evaluation(1, 0, no_positive_policy="exclude"),
            }
        )


def test_render_table_shows_counts_and_groups():
    rows = aggregate({"c2c_cross_lang": evaluation(1, 1)})
    text = render_table(rows, ["mrr_at_1"])
    assert "c2c_cross_lang" in text and "[C2C]" in text and "[Overall]" in text
    assert " 0.5000" in text
    with pytest.raises(ValueError, match=r"ndcg_at_10.*not computed"):
        render_table(rows, ["ndcg_at_10"])
