"""Recall@k (eval_metrics/measures/recall.py): expected values worked out by hand from

    Recall@k = |{relevant documents in the top k}| / R,

with relevant = grade >= the relevance level and R their number in the qrels.
"""

from __future__ import annotations

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.measures import MEASURES
from eval_metrics.measures.recall import RECALL

# a (grade 3), b, c (grade 2) are relevant at level 2: R = 3; h is a hard negative (grade 1).
QRELS = {"q": {"a": 3, "b": 2, "c": 2, "h": 1}}
RUN = {"q": {"h": 0.9, "a": 0.8, "x": 0.7, "b": 0.6}}  # ranks: h, a, x, b; c not retrieved


def recall(qrels, run, ks, **kwargs) -> dict[str, dict[str, float]]:
    """Per-query recall at ``ks``, computed by the library with this measure only."""
    return evaluate_retrieval(qrels, run, k_values={"recall": ks}, **kwargs).per_query


def test_the_measure_and_its_registry_line():
    assert MEASURES["recall"] is RECALL
    assert (RECALL.name, RECALL.trec_family) == ("recall", "recall")
    assert RECALL.default_k == (1, 3, 5, 10, 100)
    assert RECALL.key(5) == "recall_at_5"


def test_binary_relevance_at_level_two_with_the_hard_negative_ranked():
    got = recall(QRELS, RUN, [1, 2, 3, 4, 10])["q"]
    assert got["recall_at_1"] == 0 / 3  # h
    assert got["recall_at_2"] == pytest.approx(1 / 3, abs=1e-12)  # h, a
    assert got["recall_at_3"] == pytest.approx(1 / 3, abs=1e-12)  # h, a, x
    assert got["recall_at_4"] == pytest.approx(2 / 3, abs=1e-12)  # h, a, x, b
    assert got["recall_at_10"] == pytest.approx(2 / 3, abs=1e-12)  # c is never retrieved


def test_relevance_level_sets_what_counts_and_the_denominator():
    level_one = recall(QRELS, RUN, [1, 4], relevance_level=1)["q"]  # R = 4
    assert level_one["recall_at_1"] == 1 / 4
    assert level_one["recall_at_4"] == 3 / 4
    level_three = recall(QRELS, RUN, [1, 2], relevance_level=3)["q"]  # only a: R = 1
    assert level_three["recall_at_1"] == 0 / 1
    assert level_three["recall_at_2"] == 1 / 1


def test_ties_rank_by_score_then_doc_id_descending():
    # all tied: trec_eval ranks d, c, b, a; a and b relevant
    got = recall({"q": {"a": 2, "b": 2}}, {"q": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}},
                 [2, 3, 4])["q"]  # fmt: skip
    assert got["recall_at_2"] == 0 / 2
    assert got["recall_at_3"] == 1 / 2
    assert got["recall_at_4"] == 2 / 2


def test_an_empty_ranking_scores_zero_and_counts():
    res = evaluate_retrieval(
        {"q1": {"a": 2, "b": 2}, "q2": {"a": 2}},
        {"q1": {"a": 1.0}, "q2": {}},
        k_values={"recall": [10]},
    )
    assert res.per_query == {"q1": {"recall_at_10": 1 / 2}, "q2": {"recall_at_10": 0.0}}
    assert res.mean() == {"recall_at_10": (1 / 2 + 0.0) / 2}


def test_a_query_without_positive_scores_zero_or_is_left_out():
    qrels = {"q1": {"a": 2, "b": 2, "c": 2}, "q2": {"h": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8}, "q2": {"h": 0.9}}
    zero = evaluate_retrieval(qrels, run, k_values={"recall": [10]})
    assert zero.mean()["recall_at_10"] == pytest.approx((1 / 3 + 0.0) / 2, abs=1e-12)
    left_out = evaluate_retrieval(
        qrels, run, k_values={"recall": [10]}, no_positive_policy="exclude"
    )
    assert left_out.mean()["recall_at_10"] == pytest.approx(1 / 3, abs=1e-12)
