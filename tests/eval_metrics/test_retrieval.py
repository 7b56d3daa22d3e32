"""Hand-computed values for the CoREB retrieval protocol (expected values derived here)."""

from __future__ import annotations

import copy
import math

import pytest

from eval_metrics import evaluate_retrieval
from eval_metrics.retrieval import resolve_k_values


def log2(x: float) -> float:
    return math.log2(x)


def test_graded_ndcg_hard_negative_above_positive():
    # Ranking: h1 (hard negative), p1, x (unjudged), p2. Gains after zeroing grade 1: 0, 2, 0, 2.
    qrels = {"q": {"p1": 2, "p2": 2, "h1": 1}}
    run = {"q": {"h1": 0.9, "p1": 0.8, "x": 0.7, "p2": 0.6}}
    res = evaluate_retrieval(qrels, run).per_query["q"]
    idcg = 2 / log2(2) + 2 / log2(3)
    assert res["ndcg_at_1"] == 0.0
    assert res["ndcg_at_3"] == pytest.approx((2 / log2(3)) / idcg, abs=1e-12)
    assert res["ndcg_at_10"] == pytest.approx((2 / log2(3) + 2 / log2(5)) / idcg, abs=1e-12)
    # Had the hard negative kept gain 1 (pytrec_eval's raw behaviour), nDCG@10 would be higher.
    raw_ideal = 2 + 2 / log2(3) + 1 / log2(4)
    raw = (1 / log2(2) + 2 / log2(3) + 2 / log2(5)) / raw_ideal
    assert res["ndcg_at_10"] != pytest.approx(raw)
    assert res["recall_at_1"] == 0.0
    assert res["recall_at_3"] == 0.5
    assert res["recall_at_5"] == 1.0
    assert res["precision_at_1"] == 0.0
    assert res["precision_at_3"] == pytest.approx(1 / 3)
    assert res["precision_at_5"] == pytest.approx(2 / 5)
    assert res["precision_at_10"] == pytest.approx(2 / 10)
    assert res["mrr_at_10"] == 0.5
    assert res["map_at_10"] == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_ties_follow_trec_eval_order_for_every_metric():
    # Equal scores: trec_eval ranks by doc id descending, so c, b, a.
    qrels = {"q": {"a": 2}}
    run = {"q": {"a": 0.5, "b": 0.5, "c": 0.5}}
    res = evaluate_retrieval(qrels, run, k_values=[1, 3, 10]).per_query["q"]
    assert res["mrr_at_10"] == pytest.approx(1 / 3)
    assert res["mrr_at_1"] == 0.0
    assert res["ndcg_at_1"] == 0.0
    assert res["ndcg_at_3"] == pytest.approx((2 / log2(4)) / 2)
    assert res["recall_at_1"] == 0.0
    assert res["recall_at_3"] == 1.0
    assert res["precision_at_1"] == 0.0
    # The same scores with the positive named last alphabetically put it first.
    res = evaluate_retrieval({"q": {"z": 2}}, {"q": {"z": 0.5, "b": 0.5}}).per_query["q"]
    assert res["mrr_at_10"] == 1.0
    assert res["ndcg_at_1"] == 1.0


def test_anchor_exclusion_removes_doc_before_any_metric_and_keeps_run():
    qrels = {"q": {"t1": 2}}
    run = {"q": {"anchor": 0.99, "t1": 0.9, "x": 0.5}}
    before = copy.deepcopy(run)
    plain = evaluate_retrieval(qrels, run).per_query["q"]
    assert plain["mrr_at_10"] == 0.5
    assert plain["precision_at_1"] == 0.0
    excluded = evaluate_retrieval(qrels, run, exclude={"q": ["anchor"]}).per_query["q"]
    assert excluded["mrr_at_10"] == 1.0
    assert excluded["ndcg_at_1"] == 1.0
    assert excluded["precision_at_1"] == 1.0
    assert excluded["precision_at_3"] == pytest.approx(1 / 3)  # 2 docs left, still / 3
    assert run == before


def test_exclusion_of_a_positive_lowers_recall():
    # Excluding a judged positive keeps it in the qrels (the denominator): the caller decides.
    qrels = {"q": {"a": 2, "b": 2}}
    run = {"q": {"a": 0.9, "b": 0.8}}
    res = evaluate_retrieval(qrels, run, exclude={"q": ["a"]}).per_query["q"]
    assert res["recall_at_10"] == 0.5


@pytest.fixture
def no_positive_case():
    qrels = {"q1": {"a": 2}, "q2": {"h": 1}}  # q2 is a c2t_match negative pair
    run = {"q1": {"a": 0.9, "x": 0.1}, "q2": {"h": 0.9, "x": 0.1}}
    return qrels, run


def test_no_positive_policy_zero_counts_query_as_zero(no_positive_case):
    res = evaluate_retrieval(*no_positive_case, no_positive_policy="zero")
    assert res.n_queries == 2
    assert res.per_query["q2"]["ndcg_at_10"] == 0.0
    assert res.mean()["ndcg_at_1"] == 0.5
    assert res.mean()["recall_at_10"] == 0.5
    assert res.queries_without_positive == ("q2",)
    summary = res.summary()
    assert summary["no_positive_policy"] == "zero"
    assert summary["n_queries_without_positive"] == 1
    assert "q2" not in res.intrusion


def test_no_positive_policy_exclude_drops_query(no_positive_case):
    res = evaluate_retrieval(*no_positive_case, no_positive_policy="exclude")
    assert res.n_queries == 1
    assert "q2" not in res.per_query
    assert res.mean()["ndcg_at_1"] == 1.0
    assert res.summary()["no_positive_policy"] == "exclude"


def test_empty_positive_query_does_not_disturb_the_others():
    # pytrec_eval corrupts later queries when it sees empty qrels: such queries never reach it.
    qrels = {"a": {"d1": 2}, "b": {}, "c": {"d2": 2}}
    run = {"a": {"d1": 1.0}, "b": {"d1": 1.0}, "c": {"d2": 1.0, "d1": 0.5}}
    res = evaluate_retrieval(qrels, run)
    assert res.per_query["a"]["ndcg_at_10"] == 1.0
    assert res.per_query["c"]["ndcg_at_10"] == 1.0
    assert res.per_query["b"]["ndcg_at_10"] == 0.0


def test_judged_query_missing_from_run_scores_zero():
    qrels = {"q1": {"a": 2}, "q2": {"b": 2}}
    res = evaluate_retrieval(qrels, {"q1": {"a": 1.0}})
    assert res.n_queries == 2
    assert res.per_query["q2"]["recall_at_100"] == 0.0
    assert res.queries_missing_from_run == ("q2",)
    assert res.mean()["ndcg_at_10"] == 0.5


def test_relevance_level_one_treats_hard_negatives_as_relevant():
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 0.9, "b": 0.1}}
    res = evaluate_retrieval(qrels, run, relevance_level=1).per_query["q"]
    assert res["recall_at_1"] == 0.5
    assert res["mrr_at_10"] == 1.0
    assert res["ndcg_at_10"] == pytest.approx((1 + 2 / log2(3)) / (2 + 1 / log2(3)))


def test_k_values_forms():
    assert resolve_k_values([5, 1, 5]) == {m: (1, 5) for m in resolve_k_values(None)}
    assert resolve_k_values({"ndcg": [20]}) == {"ndcg": (20,)}
    res = evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 1.0}}, k_values={"ndcg": [20]})
    assert res.metric_keys == ("ndcg_at_20",)
    default = evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 1.0}})
    assert default.metric_keys == (
        "ndcg_at_1", "ndcg_at_3", "ndcg_at_5", "ndcg_at_10",
        "map_at_10", "map_at_100",
        "recall_at_1", "recall_at_3", "recall_at_5", "recall_at_10", "recall_at_100",
        "mrr_at_10",
        "precision_at_1", "precision_at_3", "precision_at_5", "precision_at_10",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("k_values", "message"),
    [
        ({"bleu": [1]}, "unknown measures 'bleu'"),
        ([0], "positive integers"),
        ({"ndcg": []}, "non-empty"),
        ([1.5], "positive integers"),
    ],
)
def test_bad_k_values(k_values, message):
    with pytest.raises(ValueError, match=message):
        evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 1.0}}, k_values=k_values)


@pytest.mark.parametrize(
    ("qrels", "run", "error", "message"),
    [
        ({"q": {"a": 2.5}}, {"q": {"a": 1.0}}, ValueError, r"qrels\['q'\]\['a'\].*2.5"),
        ({"q": {"a": "2"}}, {"q": {"a": 1.0}}, ValueError, r"qrels\['q'\]\['a'\].*integer"),
        ({"q": {"a": True}}, {"q": {"a": 1.0}}, ValueError, r"qrels\['q'\]\['a'\]"),
        ({"q": {"a": -1}}, {"q": {"a": 1.0}}, ValueError, r"qrels\['q'\]\['a'\].*-1"),
        ({"q": {"a": 2}}, {"q": {"a": float("nan")}}, ValueError, r"run\['q'\]\['a'\] is nan"),
        ({"q": {"a": 2}}, {"q": {"b": float("-inf")}}, ValueError, r"run\['q'\]\['b'\] is -inf"),
        ({"q": {"a": 2}}, {"q": {"a": "high"}}, TypeError, r"run\['q'\]\['a'\].*finite real"),
        ({"q": {"a": 2}}, {"q": {"a": 1.0}, "x": {"a": 1.0}}, ValueError, "absent from the qrels"),
        ({}, {"q": {"a": 1.0}}, ValueError, "qrels are empty"),
        ({"q": {"a": 2}}, {}, ValueError, "run is empty"),
        ({"q": {"a": 2}}, {"q": [("a", 1.0)]}, TypeError, r"run\['q'\] must be a mapping"),
        ({"q": {"a": 2}}, {"q": {7: 1.0}}, TypeError, r"run\['q'\] has a non-str doc id 7"),
    ],
)
def test_bad_input_names_what_and_where(qrels, run, error, message):
    with pytest.raises(error, match=message):
        evaluate_retrieval(qrels, run)


def test_scores_beyond_single_precision_are_refused():
    # trec_eval holds scores as C floats: 1.7e308 and 1.6e308 would both become inf and tie.
    with pytest.raises(ValueError, match=r"run\['q'\]\['a'\].*single precision"):
        evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 1.7e308, "b": 1.6e308}})
    # Large scores within float32 range whose sum overflows nothing are fine.
    res = evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 3e38, "b": -3e38}})
    assert res.per_query["q"]["mrr_at_10"] == 1.0


def test_scores_equal_in_single_precision_tie_like_trec_eval():
    # 0.1 + 1e-9 and 0.1 are the same float32: a tie, broken by doc id descending (b first).
    qrels = {"q": {"a": 2, "b": 1}}
    res = evaluate_retrieval(qrels, {"q": {"a": 0.1 + 1e-9, "b": 0.1}})
    assert res.per_query["q"]["mrr_at_10"] == 0.5
    assert res.intrusion == {"q": True}  # the intrusion rate sees the same ranking
    res = evaluate_retrieval(qrels, {"q": {"a": 0.1 + 1e-7, "b": 0.1}})
    assert res.per_query["q"]["mrr_at_10"] == 1.0
    assert res.intrusion == {"q": False}


def test_bad_policy_and_exclusions():
    qrels, run = {"q": {"a": 2}}, {"q": {"a": 1.0}}
    with pytest.raises(ValueError, match="no_positive_policy must be one of"):
        evaluate_retrieval(qrels, run, no_positive_policy="skip")
    with pytest.raises(TypeError, match=r"exclude\['q'\] must be a list.*\['a'\]"):
        evaluate_retrieval(qrels, run, exclude={"q": "a"})
    with pytest.raises(ValueError, match="exclude names 1 queries absent from the qrels: 'z'"):
        evaluate_retrieval(qrels, run, exclude={"z": ["a"]})
    with pytest.raises(ValueError, match="relevance_level must be >= 1"):
        evaluate_retrieval(qrels, run, relevance_level=0)


# ── Grades pytrec_eval cannot hold ───────────────────────────────────────────────────────────


def test_grades_beyond_the_supported_range_are_refused():
    # pytrec_eval holds grades as C ints: 2**32 + 1 wraps to 1, below the relevance level, and
    # the query scored nDCG 0.0 instead of 1.0
    with pytest.raises(ValueError, match=r"qrels\['q1'\]\['a'\] is 4294967297.*at most 65535"):
        evaluate_retrieval({"q1": {"a": 2**32 + 1}}, {"q1": {"a": 1.0}})
    with pytest.raises(ValueError, match=r"qrels\['q1'\]\['a'\] is 65536.*at most 65535"):
        evaluate_retrieval({"q1": {"a": 65536}}, {"q1": {"a": 1.0}})
    # the largest accepted grade is a grade like any other
    res = evaluate_retrieval({"q1": {"a": 65535, "b": 2}}, {"q1": {"b": 1.0, "a": 0.5}})
    ideal = 65535 + 2 / log2(3)
    assert res.per_query["q1"]["ndcg_at_10"] == pytest.approx((2 + 65535 / log2(3)) / ideal)


def test_grades_of_two_to_the_31_and_32_raise_instead_of_crashing():
    # In one process these two crashed pytrec_eval (a segfault): run them in a child so that a
    # crash fails this test instead of killing pytest.
    import subprocess
    import sys

    code = (
        "from eval_metrics import evaluate_retrieval\n"
        "for grade in (2**31, 2**32):\n"
        "    try:\n"
        "        evaluate_retrieval({'q1': {'a': grade}}, {'q1': {'a': 1.0}})\n"
        "    except ValueError as err:\n"
        "        print('refused', grade, 'at most 65535' in str(err))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == [f"refused {2**31} True", f"refused {2**32} True"]


def test_relevance_level_and_cutoffs_must_fit_a_c_int():
    qrels, run = {"q": {"a": 2}}, {"q": {"a": 1.0}}
    # pytrec_eval answered these with "Expected object_relevance_per_qid dictionary"
    with pytest.raises(ValueError, match=r"relevance_level must be at most 65535, got 2147483648"):
        evaluate_retrieval(qrels, run, relevance_level=2**31)
    # beyond 2**63 - 1 trec_eval clamps the cutoff and the result keys no longer match
    with pytest.raises(ValueError, match=r"k_values for 'ndcg'.*at most 2147483647"):
        evaluate_retrieval(qrels, run, k_values={"ndcg": [2**64]})


def test_boolean_scores_are_refused_and_numpy_scores_are_read():
    # True was read as a score of 1.0; numpy scalars made pytrec_eval fail with "Unable to
    # extract query/object scores"
    import numpy as np

    with pytest.raises(TypeError, match=r"run\['q'\]\['a'\] must be a finite real.*True"):
        evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": True, "b": 0.7}})
    with pytest.raises(TypeError, match=r"run\['q'\]\['a'\] must be a finite real.*True"):
        evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": np.bool_(True), "b": 0.7}})
    with pytest.raises(ValueError, match=r"run\['q'\]\['a'\] is an integer too large"):
        evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 10**400}})
    run = {"q": {"a": np.float32(0.5), "b": np.float64(0.7), "c": np.int64(0)}}
    res = evaluate_retrieval({"q": {"a": 2}}, run, k_values={"mrr": [10]})
    assert res.per_query["q"]["mrr_at_10"] == 0.5  # b (0.7) first, then a (0.5)
    assert type(run["q"]["a"]) is np.float32  # the caller's run is not converted in place


def test_checked_inputs_skip_the_value_passes_but_not_the_query_match():
    from eval_metrics import evaluate_retrieval

    qrels = {"q1": {"a": 2, "b": 1}, "q2": {"c": 2}}
    run = {"q1": {"a": 0.2, "b": 0.9}, "q2": {"c": 0.5, "a": 0.1}}
    plain = evaluate_retrieval(qrels, run)
    assert evaluate_retrieval(qrels, run, checked=True).per_query == plain.per_query
    with pytest.raises(ValueError, match="absent from the qrels"):
        evaluate_retrieval(qrels, {**run, "q9": {"a": 1.0}}, checked=True)
    # what checked=True vouches for is not checked again: a NaN is the caller's promise broken
    with pytest.raises(ValueError, match="finite"):
        evaluate_retrieval(qrels, {"q1": {"a": float("nan")}})
    evaluate_retrieval(qrels, {"q1": {"a": float("nan")}}, checked=True)
