"""MRR@k (eval_metrics/measures/mrr.py): expected values worked out by hand from

    RR@k = 1 / r if r <= k else 0,

where r is the rank of the first document with a grade >= the relevance level, in trec_eval's
order (read off ``success@i`` for i = 1..k, so ties fall as for every other measure).
"""

from __future__ import annotations

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.measures import MEASURES
from eval_metrics.measures.mrr import MRR

# a (grade 3), b (grade 2) relevant at level 2; h is a hard negative (grade 1).
QRELS = {"q": {"a": 3, "b": 2, "h": 1}}
RUN = {"q": {"h": 0.9, "x": 0.8, "b": 0.7, "a": 0.6}}  # ranks: h, x, b, a


def rr(qrels, run, ks, **kwargs) -> dict[str, dict[str, float]]:
    """Per-query reciprocal rank at ``ks``, computed by the library with this measure only."""
    return evaluate_retrieval(qrels, run, k_values={"mrr": ks}, **kwargs).per_query


def test_the_measure_and_its_registry_line():
    assert MEASURES["mrr"] is MRR
    assert (MRR.name, MRR.trec_family, MRR.default_k) == ("mrr", "success", (10,))
    assert MRR.key(10) == "mrr_at_10"


def test_reads_the_first_success_off_trec_eval_s_success_at_i():
    # success@i for i = 1..k is what pytrec_eval must compute for a cut at k
    assert MRR.trec_cutoffs([3, 1]) == {1, 2, 3}
    success = {"success_1": 0.0, "success_2": 0.0, "success_3": 1.0, "success_4": 1.0}
    assert MRR.value(success, 4) == 1 / 3
    assert MRR.value(success, 2) == 0.0  # first positive at rank 3 > k


def test_the_hard_negative_occupies_a_rank_and_is_no_hit():
    got = rr(QRELS, RUN, [1, 2, 3, 10])["q"]
    assert got["mrr_at_1"] == 0.0  # h
    assert got["mrr_at_2"] == 0.0  # h, x
    assert got["mrr_at_3"] == 1 / 3  # h, x, b: first positive at r = 3
    assert got["mrr_at_10"] == 1 / 3


def test_relevance_level_sets_the_first_hit():
    assert rr(QRELS, RUN, [10], relevance_level=1)["q"]["mrr_at_10"] == 1 / 1  # h counts
    assert rr(QRELS, RUN, [10], relevance_level=3)["q"]["mrr_at_10"] == 1 / 4  # only a


def test_ties_rank_by_score_then_doc_id_descending():
    # m, z and b tie: trec_eval ranks z, m, b (Python's stable sort would keep m first)
    got = rr({"q": {"m": 2}}, {"q": {"m": 0.5, "z": 0.5, "b": 0.5}}, [1, 10])["q"]
    assert got["mrr_at_1"] == 0.0
    assert got["mrr_at_10"] == 1 / 2
    # a higher score beats a larger id: c (0.6) ranks above the tied z, m
    got = rr({"q": {"m": 2}}, {"q": {"m": 0.5, "z": 0.5, "c": 0.6}}, [10])["q"]
    assert got["mrr_at_10"] == 1 / 3


def test_a_cutoff_beyond_the_ranking():
    got = rr({"q": {"a": 2}}, {"q": {"x": 0.9, "a": 0.1}}, [1, 100])["q"]
    assert got["mrr_at_1"] == 0.0
    assert got["mrr_at_100"] == 1 / 2


def test_an_empty_ranking_scores_zero_and_counts():
    res = evaluate_retrieval(
        {"q1": {"a": 2}, "q2": {"a": 2}}, {"q1": {"x": 0.9, "a": 0.5}, "q2": {}},
        k_values={"mrr": [10]},
    )  # fmt: skip
    assert res.per_query == {"q1": {"mrr_at_10": 1 / 2}, "q2": {"mrr_at_10": 0.0}}
    assert res.mean() == {"mrr_at_10": (1 / 2 + 0.0) / 2}


def test_a_query_without_positive_scores_zero_or_is_left_out():
    qrels = {"q1": {"a": 2}, "q2": {"h": 1}, "q3": {"a": 2}}
    run = {"q1": {"a": 0.9}, "q2": {"h": 0.9}, "q3": {"x": 0.9, "y": 0.8, "a": 0.7}}
    zero = evaluate_retrieval(qrels, run, k_values={"mrr": [10]})
    assert zero.mean()["mrr_at_10"] == pytest.approx((1 / 1 + 0.0 + 1 / 3) / 3, abs=1e-12)
    left_out = evaluate_retrieval(qrels, run, k_values={"mrr": [10]}, no_positive_policy="exclude")
    assert left_out.mean()["mrr_at_10"] == pytest.approx((1 / 1 + 1 / 3) / 2, abs=1e-12)
