"""MAP@k (eval_metrics/measures/average_precision.py): expected values worked out by hand from

    AP@k = (1 / R) * sum_{i<=k} P@i * rel_i,

where rel_i = 1 when the document at rank i has a grade >= the relevance level and R is the number
of such documents in the qrels (not min(R, k): trec_eval's ``map_cut``).
"""

from __future__ import annotations

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.measures import MEASURES
from eval_metrics.measures.average_precision import MAP

# a (grade 3), b, c (grade 2) are relevant at level 2: R = 3; h is a hard negative (grade 1).
QRELS = {"q": {"a": 3, "b": 2, "c": 2, "h": 1}}
RUN = {"q": {"h": 0.9, "a": 0.8, "x": 0.7, "b": 0.6}}  # ranks: h, a, x, b; c not retrieved


def ap(qrels, run, ks, **kwargs) -> dict[str, dict[str, float]]:
    """Per-query AP at ``ks``, computed by the library with this measure only."""
    return evaluate_retrieval(qrels, run, k_values={"map": ks}, **kwargs).per_query


def test_the_measure_and_its_registry_line():
    assert MEASURES["map"] is MAP
    assert (MAP.name, MAP.trec_family, MAP.default_k) == ("map", "map_cut", (10, 100))
    assert MAP.key(100) == "map_at_100"


def test_binary_relevance_at_level_two_with_the_hard_negative_ranked():
    got = ap(QRELS, RUN, [1, 2, 3, 4, 10, 100])["q"]
    # rel by rank: h=0, a=1, x=0, b=1 (grade 3 counts as grade 2 does); R = 3
    assert got["map_at_1"] == 0.0
    assert got["map_at_2"] == pytest.approx((1 / 2) / 3, abs=1e-12)  # not / min(R, 2)
    assert got["map_at_3"] == pytest.approx((1 / 2) / 3, abs=1e-12)
    assert got["map_at_4"] == pytest.approx((1 / 2 + 2 / 4) / 3, abs=1e-12)
    assert got["map_at_10"] == pytest.approx((1 / 2 + 2 / 4) / 3, abs=1e-12)
    assert got["map_at_100"] == pytest.approx((1 / 2 + 2 / 4) / 3, abs=1e-12)


def test_relevance_level_one_counts_the_hard_negative():
    got = ap(QRELS, RUN, [10], relevance_level=1)["q"]
    # rel by rank: h=1, a=1, x=0, b=1; R = 4 (c included)
    assert got["map_at_10"] == pytest.approx((1 / 1 + 2 / 2 + 3 / 4) / 4, abs=1e-12)


def test_relevance_level_three_counts_only_grade_three():
    got = ap(QRELS, RUN, [10], relevance_level=3)["q"]
    assert got["map_at_10"] == pytest.approx((1 / 2) / 1, abs=1e-12)  # a at rank 2, R = 1


def test_ties_rank_by_score_then_doc_id_descending():
    # all tied: trec_eval ranks d, c, b, a; b and d relevant -> rel 1, 0, 1, 0
    got = ap({"q": {"b": 2, "d": 2}}, {"q": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5}}, [10])["q"]
    assert got["map_at_10"] == pytest.approx((1 / 1 + 2 / 3) / 2, abs=1e-12)
    # ascending ids (a, b, c, d) would have given (1/2 + 2/4) / 2
    assert got["map_at_10"] != pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-6)


def test_an_empty_ranking_scores_zero_and_counts():
    res = evaluate_retrieval(
        {"q1": {"a": 2}, "q2": {"a": 2}}, {"q1": {"a": 1.0}, "q2": {}}, k_values={"map": [10]}
    )
    assert res.per_query == {"q1": {"map_at_10": 1.0}, "q2": {"map_at_10": 0.0}}
    assert res.mean() == {"map_at_10": (1.0 + 0.0) / 2}


def test_a_query_without_positive_scores_zero_or_is_left_out():
    qrels = {"q1": {"a": 2, "b": 2}, "q2": {"h": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7}, "q2": {"h": 0.9}}
    q1 = (1 / 1 + 2 / 3) / 2
    zero = evaluate_retrieval(qrels, run, k_values={"map": [10]})
    assert zero.mean()["map_at_10"] == pytest.approx((q1 + 0.0) / 2, abs=1e-12)
    left_out = evaluate_retrieval(qrels, run, k_values={"map": [10]}, no_positive_policy="exclude")
    assert left_out.mean()["map_at_10"] == pytest.approx(q1 / 1, abs=1e-12)
