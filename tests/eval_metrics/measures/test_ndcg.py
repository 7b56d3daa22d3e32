"""nDCG@k (eval_metrics/measures/ndcg.py): expected values worked out by hand from the formula

    DCG@k = sum_{i<=k} g_i / log2(i + 1),    nDCG@k = DCG@k / IDCG@k,

with linear gains g_i = the qrel grade, grades below the relevance level zeroed (hard negatives,
grade 1, earn nothing but keep their rank) and IDCG@k from the zeroed grades sorted descending.
"""

from __future__ import annotations

from math import log2

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.measures import MEASURES
from eval_metrics.measures.ndcg import NDCG

# a: grade 3, b: grade 2 (both relevant at level 2), h: hard negative (grade 1), x: unjudged.
QRELS = {"q": {"a": 3, "b": 2, "h": 1}}
RUN = {"q": {"b": 0.9, "h": 0.8, "a": 0.7, "x": 0.6}}  # ranks: b, h, a, x


def ndcg(qrels, run, ks, **kwargs) -> dict[str, dict[str, float]]:
    """Per-query nDCG at ``ks``, computed by the library with this measure only."""
    return evaluate_retrieval(qrels, run, k_values={"ndcg": ks}, **kwargs).per_query


def test_the_measure_and_its_registry_line():
    assert MEASURES["ndcg"] is NDCG
    assert (NDCG.name, NDCG.trec_family, NDCG.default_k) == ("ndcg", "ndcg_cut", (1, 3, 5, 10))
    assert NDCG.key(10) == "ndcg_at_10"


def test_graded_gains_with_the_hard_negative_zeroed_but_ranked():
    got = ndcg(QRELS, RUN, [1, 2, 3, 10])["q"]
    # gains in rank order after zeroing grade 1: b=2, h=0, a=3, x=0; ideal order: 3, 2, 0
    assert got["ndcg_at_1"] == pytest.approx((2 / log2(2)) / (3 / log2(2)), abs=1e-12)
    assert got["ndcg_at_2"] == pytest.approx(
        (2 / log2(2) + 0 / log2(3)) / (3 / log2(2) + 2 / log2(3)), abs=1e-12
    )
    expected = (2 / log2(2) + 0 / log2(3) + 3 / log2(4)) / (3 / log2(2) + 2 / log2(3))
    assert got["ndcg_at_3"] == pytest.approx(expected, abs=1e-12)
    assert got["ndcg_at_10"] == pytest.approx(expected, abs=1e-12)  # x adds gain 0
    # with h kept at gain 1 (pytrec_eval on the raw grades) both DCG and IDCG would grow
    raw = (2 / log2(2) + 1 / log2(3) + 3 / log2(4)) / (3 / log2(2) + 2 / log2(3) + 1 / log2(4))
    assert got["ndcg_at_10"] != pytest.approx(raw, abs=1e-6)


def test_relevance_level_three_zeroes_grade_two_as_well():
    got = ndcg(QRELS, RUN, [1, 3], relevance_level=3)["q"]
    # gains: b=0, h=0, a=3; ideal: 3
    assert got["ndcg_at_1"] == 0.0
    assert got["ndcg_at_3"] == pytest.approx((3 / log2(4)) / (3 / log2(2)), abs=1e-12)


def test_relevance_level_one_gives_hard_negatives_their_grade():
    got = ndcg(QRELS, RUN, [3], relevance_level=1)["q"]
    expected = (2 / log2(2) + 1 / log2(3) + 3 / log2(4)) / (3 / log2(2) + 2 / log2(3) + 1 / log2(4))
    assert got["ndcg_at_3"] == pytest.approx(expected, abs=1e-12)


def test_ties_rank_by_score_then_doc_id_descending():
    # "a" leads on score despite the smallest id; p and h tie at 0.5 and p > h, so: a, p, h
    got = ndcg({"q": {"p": 2, "h": 1}}, {"q": {"h": 0.5, "p": 0.5, "a": 0.9}}, [1, 2])["q"]
    assert got["ndcg_at_1"] == 0.0
    assert got["ndcg_at_2"] == pytest.approx((0 / log2(2) + 2 / log2(3)) / (2 / log2(2)), abs=1e-12)
    # rename the positive below "h": the tie now puts the hard negative first (a, h, b)
    got = ndcg({"q": {"b": 2, "h": 1}}, {"q": {"h": 0.5, "b": 0.5, "a": 0.9}}, [2, 3])["q"]
    assert got["ndcg_at_2"] == 0.0
    assert got["ndcg_at_3"] == pytest.approx((2 / log2(4)) / (2 / log2(2)), abs=1e-12)


def test_cutoffs_beyond_the_ranking_keep_the_ideal_at_k():
    # three positives, only a retrieved (rank 1) above x: IDCG@k grows with k, DCG does not
    got = ndcg({"q": {"a": 2, "b": 2, "c": 2}}, {"q": {"a": 0.9, "x": 0.8}}, [1, 2, 10])["q"]
    assert got["ndcg_at_1"] == 1.0
    assert got["ndcg_at_2"] == pytest.approx((2 / log2(2)) / (2 / log2(2) + 2 / log2(3)))
    expected = (2 / log2(2)) / (2 / log2(2) + 2 / log2(3) + 2 / log2(4))
    assert got["ndcg_at_10"] == pytest.approx(expected, abs=1e-12)


def test_an_empty_ranking_scores_zero_and_counts():
    res = evaluate_retrieval(
        {"q1": {"a": 2}, "q2": {"a": 2}}, {"q1": {"a": 1.0}, "q2": {}}, k_values={"ndcg": [5]}
    )
    assert res.per_query == {"q1": {"ndcg_at_5": 1.0}, "q2": {"ndcg_at_5": 0.0}}
    assert res.mean() == {"ndcg_at_5": (1.0 + 0.0) / 2}


def test_a_query_without_positive_scores_zero_or_is_left_out():
    qrels = {"q1": {"a": 2}, "q2": {"h": 1}}  # q2: only a hard negative
    run = {"q1": {"x": 0.9, "a": 0.8}, "q2": {"h": 0.9}}
    q1 = (0 / log2(2) + 2 / log2(3)) / (2 / log2(2))
    zero = evaluate_retrieval(qrels, run, k_values={"ndcg": [10]})
    assert zero.mean()["ndcg_at_10"] == pytest.approx((q1 + 0.0) / 2, abs=1e-12)
    left_out = evaluate_retrieval(qrels, run, k_values={"ndcg": [10]}, no_positive_policy="exclude")
    assert left_out.mean()["ndcg_at_10"] == pytest.approx(q1 / 1, abs=1e-12)
    assert list(left_out.per_query) == ["q1"]
