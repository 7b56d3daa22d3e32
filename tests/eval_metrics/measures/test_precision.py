"""P@k (eval_metrics/measures/precision.py): expected values worked out by hand from

    P@k = |{relevant documents in the top k}| / k,

with relevant = grade >= the relevance level; the denominator is k even when fewer than k
documents were retrieved (trec_eval's ``P``).
"""

from __future__ import annotations

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.measures import MEASURES
from eval_metrics.measures.precision import PRECISION

# a (grade 3), b, c (grade 2) are relevant at level 2; h is a hard negative (grade 1).
QRELS = {"q": {"a": 3, "b": 2, "c": 2, "h": 1}}
RUN = {"q": {"h": 0.9, "a": 0.8, "x": 0.7, "b": 0.6}}  # ranks: h, a, x, b


def precision(qrels, run, ks, **kwargs) -> dict[str, dict[str, float]]:
    """Per-query precision at ``ks``, computed by the library with this measure only."""
    return evaluate_retrieval(qrels, run, k_values={"precision": ks}, **kwargs).per_query


def test_the_measure_and_its_registry_line():
    assert MEASURES["precision"] is PRECISION
    assert (PRECISION.name, PRECISION.trec_family) == ("precision", "P")
    assert PRECISION.default_k == (1, 3, 5, 10)
    assert PRECISION.key(3) == "precision_at_3"


def test_binary_relevance_at_level_two_with_the_hard_negative_ranked():
    got = precision(QRELS, RUN, [1, 2, 3, 4, 10])["q"]
    assert got["precision_at_1"] == 0 / 1  # h
    assert got["precision_at_2"] == 1 / 2  # h, a
    assert got["precision_at_3"] == pytest.approx(1 / 3, abs=1e-12)  # h, a, x
    assert got["precision_at_4"] == 2 / 4  # h, a, x, b
    assert got["precision_at_10"] == 2 / 10  # 4 retrieved, still / 10


def test_relevance_level_sets_what_counts():
    level_one = precision(QRELS, RUN, [1, 4], relevance_level=1)["q"]  # h counts
    assert level_one["precision_at_1"] == 1 / 1
    assert level_one["precision_at_4"] == 3 / 4
    level_three = precision(QRELS, RUN, [4], relevance_level=3)["q"]  # only a counts
    assert level_three["precision_at_4"] == 1 / 4


def test_ties_rank_by_score_then_doc_id_descending():
    # "z" leads on score; b, c, d tie: trec_eval ranks z, d, c, b; b relevant
    got = precision({"q": {"b": 2}}, {"q": {"b": 0.5, "c": 0.5, "d": 0.5, "z": 0.9}},
                    [1, 3, 4])["q"]  # fmt: skip
    assert got["precision_at_1"] == 0 / 1
    assert got["precision_at_3"] == 0 / 3
    assert got["precision_at_4"] == 1 / 4


def test_an_empty_ranking_scores_zero_and_counts():
    res = evaluate_retrieval(
        {"q1": {"a": 2}, "q2": {"a": 2}}, {"q1": {"a": 1.0}, "q2": {}}, k_values={"precision": [5]}
    )
    assert res.per_query == {"q1": {"precision_at_5": 1 / 5}, "q2": {"precision_at_5": 0.0}}
    assert res.mean() == {"precision_at_5": pytest.approx((1 / 5 + 0.0) / 2, abs=1e-12)}


def test_a_query_without_positive_scores_zero_or_is_left_out():
    qrels = {"q1": {"a": 2, "b": 2}, "q2": {"h": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}, "q2": {"h": 0.9}}
    zero = evaluate_retrieval(qrels, run, k_values={"precision": [3]})
    assert zero.mean()["precision_at_3"] == pytest.approx((2 / 3 + 0.0) / 2, abs=1e-12)
    left_out = evaluate_retrieval(
        qrels, run, k_values={"precision": [3]}, no_positive_policy="exclude"
    )
    assert left_out.mean()["precision_at_3"] == pytest.approx(2 / 3, abs=1e-12)
