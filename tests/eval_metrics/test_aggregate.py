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


def test_main_tasks_are_the_vocabulary_s_labels_in_paper_order():
    from coreb_toolkit import vocabulary
    from eval_metrics.aggregate import MAIN_TASKS, TABLE_COLUMNS

    assert MAIN_TASKS == {"t2c": "T2C", "c2t": "C2T", "c2c": "C2C", "qualcode": "QualCode"}
    assert list(MAIN_TASKS) == [*vocabulary.MAIN_TASKS, vocabulary.QUALCODE_TASK]
    assert TABLE_COLUMNS == ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")
    assert TABLE_COLUMNS[0] == vocabulary.MAIN_SCORE
    assert main_task_of("t2c") == "T2C"  # a bare prefix is its own main task


@pytest.mark.parametrize("subtask", ["T2C_search_any", "_t2c_search", "qualcodespeed", ""])
def test_main_task_of_reads_the_exact_lower_case_prefix(subtask):
    with pytest.raises(ValueError, match="its name should start with one of t2c_, c2t_, c2c_"):
        main_task_of(subtask)


def test_every_registry_subtask_has_a_main_task():
    from coreb_toolkit.vocabulary import MAIN_TASKS, QUALCODE_PAIR_CONFIGS, SUBTASKS

    for name, meta in SUBTASKS.items():
        assert main_task_of(name) == MAIN_TASKS[meta.family].label
    for config in QUALCODE_PAIR_CONFIGS.values():
        assert main_task_of(config) == "QualCode"


def test_eval_metrics_imports_nothing_of_the_toolkit_but_the_vocabulary_and_untrusted():
    # untrusted: layer 0, how every reader bounds what strangers hand it (trec_io's lines)
    import subprocess
    import sys

    code = (
        "import sys, pkgutil, importlib, eval_metrics, eval_metrics.measures\n"
        "for pkg in (eval_metrics, eval_metrics.measures):\n"
        "    for m in pkgutil.iter_modules(pkg.__path__):\n"
        "        if m.name != 'coreb_metric':\n"
        "            importlib.import_module(f'{pkg.__name__}.{m.name}')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "    ('coreb_toolkit', 'reranker', 'trainers', 'model_cards', 'torch')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "['coreb_toolkit', 'coreb_toolkit.untrusted', 'coreb_toolkit.vocabulary']"
    )
