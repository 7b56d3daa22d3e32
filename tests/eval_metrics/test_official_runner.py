"""Compatibility with the official CoREB runner (``coreb==0.1.0``, module ``coreb_runner``).

``EvaluateRetrieval.evaluate`` is the runner's scorer: pytrec_eval on qrels with grades below 2
zeroed, ``relevance_level=2``, means over the queries in both run and qrels, rounded to 5
decimals. With our default ``no_positive_policy="zero"`` and a run that covers every judged
query, our nDCG / MAP / Recall / P means must equal the runner's (to 1e-5, its rounding).

Known, documented differences (tested below so a change on either side is noticed):

* the runner's module-level ``mrr`` orders tied scores by Python's stable sort (the run's
  insertion order) instead of trec_eval's doc-id-descending order, so with ties its MRR can
  disagree with ours and with its own P@1; without ties the two agree;
* ``EvaluateRetrieval.evaluate`` averages over the queries the run ranks, whereas we score a
  judged query missing from the run 0 and count it;
* ``EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)`` (its default) deletes entries
  from the caller's run. Every call here passes deep copies.
"""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_metrics import evaluate_retrieval
from tests.eval_metrics.reference import reference_evaluate, reference_means
from tests.eval_metrics.test_properties import DOC_IDS, GRADES, QUERY_IDS, draw_scores

official = pytest.importorskip(
    "coreb_runner.benchmark.evaluation",
    reason="the official CoREB runner (coreb==0.1.0, needs torch) is not installed",
)
EvaluateRetrieval = official.EvaluateRetrieval
official_mrr = official.mrr

K_VALUES = [1, 3, 5, 10, 100]
TOL = 1e-5  # the runner rounds every mean to 5 decimals
PAIRS = (("ndcg", "NDCG"), ("map", "MAP"), ("recall", "Recall"), ("precision", "P"))


OFFICIAL_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def official_means(qrels, run, k_values=K_VALUES) -> dict[str, float]:
    """The runner's means, keyed like ours (``ndcg_at_10``); inputs are deep-copied."""
    ndcg, _map, recall, precision = EvaluateRetrieval.evaluate(
        copy.deepcopy(qrels), copy.deepcopy(run), list(k_values), ignore_identical_ids=False
    )
    theirs = {"ndcg": ndcg, "map": _map, "recall": recall, "precision": precision}
    return {
        f"{ours}_at_{k}": theirs[ours][f"{label}@{k}"] for ours, label in PAIRS for k in k_values
    }


def assert_same_as_official(qrels, run) -> None:
    ours = evaluate_retrieval(qrels, run, k_values=K_VALUES).mean()
    theirs = official_means(qrels, run)
    for key, value in theirs.items():
        assert abs(ours[key] - value) <= TOL, f"{key}: ours {ours[key]!r}, runner {value!r}"


@st.composite
def covering_cases(draw, distinct_scores: bool = False):
    """Graded qrels (every query judged, some with only hard negatives) and a run ranking every
    judged query (possibly with an empty list)."""
    qids = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=6, unique=True))
    qrels = {
        q: draw(
            st.dictionaries(
                st.sampled_from(DOC_IDS), st.sampled_from(GRADES), min_size=1, max_size=8
            )
        )
        for q in qids
    }
    run = {}
    for q in qids:
        docs = draw(st.lists(st.sampled_from(DOC_IDS), max_size=len(DOC_IDS), unique=True))
        run[q] = dict(zip(docs, draw_scores(draw, len(docs), distinct_scores), strict=True))
    return qrels, run


@OFFICIAL_SETTINGS
@given(case=covering_cases())
def test_means_equal_official_runner(case):
    qrels, run = case
    before = copy.deepcopy(case)
    assert_same_as_official(qrels, run)
    assert (qrels, run) == before


def _realistic_case():
    """Eight CoREB-like queries over a 40-document corpus, scored like cosine similarities
    rounded to 3 decimals (so a few ties): text-to-code queries with one to three positives and
    several hard negatives, c2t_match negative pairs (hard negatives only), a query whose
    positive is not retrieved, a query with a grade-3 document."""
    rnd = random.Random(20240611)
    corpus = [
        f"lc{p:04d}_{lang}_{v}"
        for p in (17, 42, 311, 1024, 2048)
        for lang in ("py", "java")
        for v in range(4)
    ]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(8):
        qid = f"t2c_{i:03d}"
        docs = rnd.sample(corpus, 9)
        if i in (2, 5):  # c2t_match negative pair: only hard negatives
            qrels[qid] = {d: 1 for d in docs[:3]}
        else:
            n_pos = 1 + i % 3
            qrels[qid] = {d: 2 for d in docs[:n_pos]}
            qrels[qid].update({d: 1 for d in docs[n_pos : n_pos + 4]})
            if i == 7:
                qrels[qid][docs[0]] = 3
        ranked = rnd.sample(corpus, 30)
        if i == 4:  # the positive is never retrieved
            ranked = [d for d in ranked if qrels[qid].get(d, 0) < 2]
        run[qid] = {d: round(rnd.uniform(0.2, 0.9), 3) for d in ranked}
    return qrels, run


def test_realistic_case_equals_official_runner_and_reference():
    qrels, run = _realistic_case()
    assert any(len(set(s.values())) < len(s) for s in run.values()), "expected some ties"
    assert_same_as_official(qrels, run)
    ours = evaluate_retrieval(qrels, run, k_values=K_VALUES)
    ref_per_query, ref_intrusion = reference_evaluate(qrels, run, k_values=K_VALUES)
    expected = reference_means(ref_per_query, list(ours.metric_keys))
    for key, value in ours.mean().items():
        assert abs(value - expected[key]) <= 1e-9, key
    assert ours.intrusion == ref_intrusion
    assert ours.n_queries == 8


# ── Known differences ──────────────────────────────────────────────────────────────────────


def test_official_mrr_orders_ties_by_insertion_not_trec_eval():
    # "a" and "b" tie. trec_eval (and we) rank "b" first (doc id descending); the runner's mrr
    # keeps the run's insertion order and ranks "a" first.
    qrels = {"q": {"a": 2}}
    run = {"q": {"a": 0.5, "b": 0.5}}
    theirs = official_mrr(copy.deepcopy(qrels), copy.deepcopy(run), [1, 10])
    ours = evaluate_retrieval(qrels, run, k_values={"mrr": [1, 10], "precision": [1]})
    assert theirs == {"MRR@1": 1.0, "MRR@10": 1.0}
    assert ours.per_query["q"]["mrr_at_1"] == 0.0
    assert ours.per_query["q"]["mrr_at_10"] == 0.5
    # The runner's own pytrec_eval-based P@1 sees the trec_eval order, like us.
    assert official_means(qrels, run, [1])["precision_at_1"] == 0.0
    assert ours.per_query["q"]["precision_at_1"] == 0.0
    # Reversing the insertion order flips the runner's MRR, not ours.
    swapped = {"q": {"b": 0.5, "a": 0.5}}
    assert official_mrr(copy.deepcopy(qrels), copy.deepcopy(swapped), [10]) == {"MRR@10": 0.5}
    assert evaluate_retrieval(qrels, swapped, k_values={"mrr": [10]}).per_query == {
        "q": {"mrr_at_10": 0.5}
    }


def test_official_mrr_agrees_without_ties_fixed():
    qrels = {"q1": {"a": 2, "b": 1}, "q2": {"c": 2, "d": 2}, "q3": {"e": 1}}
    run = {
        "q1": {"b": 0.9, "x": 0.8, "a": 0.7},
        "q2": {"y": 0.9, "z": 0.8, "w": 0.7, "d": 0.6},
        "q3": {"e": 0.9},
    }
    theirs = official_mrr(copy.deepcopy(qrels), copy.deepcopy(run), [1, 3, 10])
    ours = evaluate_retrieval(qrels, run, k_values={"mrr": [1, 3, 10]}).mean()
    # q1: first positive "a" at rank 3 (the hard negative "b" is no hit); q2: "d" at rank 4.
    expected = {"MRR@1": 0.0, "MRR@3": (1 / 3) / 3, "MRR@10": (1 / 3 + 1 / 4) / 3}
    assert theirs == {key: round(value, 5) for key, value in expected.items()}
    for k in (1, 3, 10):
        assert abs(ours[f"mrr_at_{k}"] - theirs[f"MRR@{k}"]) <= TOL


@OFFICIAL_SETTINGS
@given(case=covering_cases(distinct_scores=True))
def test_official_mrr_agrees_without_ties(case):
    qrels, run = case
    ks = [1, 3, 5, 10]
    theirs = official_mrr(copy.deepcopy(qrels), copy.deepcopy(run), ks)
    ours = evaluate_retrieval(qrels, run, k_values={"mrr": ks}).mean()
    for k in ks:
        assert abs(ours[f"mrr_at_{k}"] - theirs[f"MRR@{k}"]) <= TOL


def test_official_evaluate_skips_queries_missing_from_the_run():
    # The runner averages over the queries the run ranks; we count a missing judged query as 0.
    qrels = {"q1": {"a": 2}, "q2": {"b": 2}}
    run = {"q1": {"a": 1.0}}
    assert official_means(qrels, run, [10])["ndcg_at_10"] == 1.0
    assert evaluate_retrieval(qrels, run, k_values=[10]).mean()["ndcg_at_10"] == 0.5


def test_official_evaluate_mutates_run_with_ignore_identical_ids():
    # Why every call above passes deep copies: the runner's default deletes doc == query ids.
    qrels = {"q1": {"a": 2}}
    run = {"q1": {"q1": 2.0, "a": 1.0}}
    EvaluateRetrieval.evaluate(qrels, run, [1], ignore_identical_ids=True)
    assert run == {"q1": {"a": 1.0}}
