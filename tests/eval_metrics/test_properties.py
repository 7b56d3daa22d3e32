"""Property tests: ``evaluate_retrieval`` against independent implementations.

Two oracles:

* ``tests/eval_metrics/reference.py``, a plain-Python implementation of the CoREB protocol
  written from the formulas (no pytrec_eval). It checks every metric of every query (nDCG, MAP,
  Recall, MRR, P at any cutoff), both no-positive policies, the trec_eval tie order (score
  descending, doc id descending), exclusions, queries missing from the run, relevance levels
  other than 2, and the hard-negative intrusion verdicts and rate.
* ranx, where its conventions match the protocol. Checked empirically with ranx 0.3.21:
  ``ndcg`` uses linear gains (Järvelin & Kekäläinen, as trec_eval's ``ndcg_cut``; ``ndcg_burges``
  is the exponential 2^rel - 1 variant) and an ideal ranking of the sorted qrels grades;
  ``map@k`` divides by R, the number of relevant documents (not min(R, k)); ``precision@k``
  divides by k even when fewer than k documents are ranked; ``recall@k`` divides by R; ``mrr@k``
  is 1/rank of the first relevant document within k. So ranx cross-checks nDCG, MAP, Recall,
  P and MRR at every cutoff, on queries that have a relevant document, with distinct scores
  only (ranx orders tied scores differently from trec_eval) and with the exclusions applied to
  its input by the test. ranx has no notion of the no-positive policy, of hard-negative
  intrusion or of tie order: those are checked against the reference only.

ranx is fed binarised qrels (grade >= 2 -> 1) for the binary measures and, for nDCG, the qrels
with every grade below 2 dropped (a zero gain is the same as an unjudged document).
"""

from __future__ import annotations

import copy
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_metrics import evaluate_retrieval
from tests.eval_metrics.reference import (
    metric_keys,
    query_metrics,
    ranked_list,
    reference_evaluate,
    reference_means,
)

try:
    import ranx
except ImportError:  # pragma: no cover - ranx is a dev dependency
    ranx = None

TOL = 1e-9

# Small alphabets so run documents hit judged documents often; ids whose string order differs
# from their numeric or case-insensitive order ("10" < "9", "B" < "a", "a" < "aa").
DOC_IDS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "B", "aa", "ab", "10", "9")
QUERY_IDS = ("q0", "q1", "q2", "q3", "q4", "q5")
# Few values: ties are the rule, not the exception. 0.1 and 0.1 + 1e-9 differ as doubles but
# are the same C float, so trec_eval (and the protocol) ranks them as a tie.
TIED_SCORES = (-1.0, 0.0, 0.1, 0.1 + 1e-9, 0.25, 0.5, 1.0)
GRADES = (0, 1, 1, 2, 2, 3)  # hard negatives (1) and positives (2, 3) are frequent

PROPERTY_SETTINGS = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ks_lists = st.lists(st.integers(1, 20), min_size=1, max_size=4)
k_values_strategy = st.one_of(
    st.none(),
    ks_lists,
    st.just([1, 2, 3, 5, 10, 11, 100]),
    st.dictionaries(
        st.sampled_from(("ndcg", "map", "recall", "mrr", "precision")),
        ks_lists,
        min_size=1,
    ),
)


def draw_scores(draw, n: int, distinct: bool) -> list[float]:
    """``n`` scores: all distinct (exact binary fractions), or from ``TIED_SCORES``."""
    if distinct:
        values = draw(st.lists(st.integers(-(10**6), 10**6), min_size=n, max_size=n, unique=True))
        return [v / 1024 for v in values]
    return draw(st.lists(st.sampled_from(TIED_SCORES), min_size=n, max_size=n))


@st.composite
def cases(draw, distinct_scores: bool = False, min_judged: int = 0, min_ranked: int = 0):
    """``(qrels, run, exclude)``: graded qrels, a run over some of their queries, exclusions.

    ``min_ranked`` forces every ranked list to hold at least that many documents (before
    exclusions), to exercise the top-10 boundary of P@10, nDCG@10 and the intrusion depth.
    """
    qids = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, max_size=6, unique=True))
    qrels = {
        q: draw(
            st.dictionaries(
                st.sampled_from(DOC_IDS), st.sampled_from(GRADES), min_size=min_judged, max_size=8
            )
        )
        for q in qids
    }
    run_qids = draw(st.lists(st.sampled_from(qids), min_size=1, unique=True))
    run = {}
    for q in run_qids:
        docs = draw(
            st.lists(
                st.sampled_from(DOC_IDS), min_size=min_ranked, max_size=len(DOC_IDS), unique=True
            )
        )
        run[q] = dict(zip(docs, draw_scores(draw, len(docs), distinct_scores), strict=True))
    exclude = {
        q: draw(st.lists(st.sampled_from(DOC_IDS), max_size=4))
        for q in draw(st.lists(st.sampled_from(qids), unique=True))
    }
    return qrels, run, exclude


def assert_close(actual: float, expected: float, what: str) -> None:
    assert math.isclose(actual, expected, rel_tol=0.0, abs_tol=TOL), (
        f"{what}: got {actual!r}, expected {expected!r}"
    )


def assert_matches_reference(result, ref_per_query, ref_intrusion, keys) -> None:
    assert set(result.per_query) == set(ref_per_query)
    assert tuple(result.metric_keys) == tuple(keys)
    for qid, expected in ref_per_query.items():
        got = result.per_query[qid]
        assert set(got) == set(expected), qid
        for key, value in expected.items():
            assert_close(got[key], value, f"{qid} {key}")
    assert result.intrusion == ref_intrusion
    means = result.mean()
    for key, value in reference_means(ref_per_query, keys).items():
        assert_close(means[key], value, f"mean {key}")
    summary = result.summary()
    assert summary["n_queries"] == result.n_queries == len(ref_per_query)
    assert summary["n_intrusion_eligible"] == len(ref_intrusion)
    rate = summary["hard_negative_intrusion_rate"]
    if ref_intrusion:
        assert_close(rate, sum(ref_intrusion.values()) / len(ref_intrusion), "intrusion rate")
    else:
        assert rate is None


# ── Reference oracle ───────────────────────────────────────────────────────────────────────


@PROPERTY_SETTINGS
@given(
    case=cases(),
    k_values=k_values_strategy,
    relevance_level=st.sampled_from((2, 2, 2, 1, 3)),
)
def test_every_metric_matches_reference(case, k_values, relevance_level):
    qrels, run, exclude = case
    keys = metric_keys(k_values)
    for policy in ("zero", "exclude"):
        result = evaluate_retrieval(
            qrels,
            run,
            k_values=k_values,
            exclude=exclude,
            no_positive_policy=policy,
            relevance_level=relevance_level,
        )
        ref_per_query, ref_intrusion = reference_evaluate(
            qrels,
            run,
            k_values=k_values,
            exclude=exclude,
            no_positive_policy=policy,
            relevance_level=relevance_level,
        )
        assert_matches_reference(result, ref_per_query, ref_intrusion, keys)

        with_positive = {
            q for q, g in qrels.items() if any(r >= relevance_level for r in g.values())
        }
        assert set(result.queries_without_positive) == set(qrels) - with_positive
        assert set(result.queries_missing_from_run) == with_positive - set(run)


@PROPERTY_SETTINGS
@given(case=cases(min_judged=1, min_ranked=9), relevance_level=st.sampled_from((2, 2, 3)))
def test_long_rankings_match_reference(case, relevance_level):
    """Lists of 9 to 16 documents: the top-10 cut of P@10, nDCG@10, MAP@10 and intrusion."""
    qrels, run, exclude = case
    k_values = [1, 9, 10, 11, 100]
    keys = metric_keys(k_values)
    for policy in ("zero", "exclude"):
        kwargs = {
            "k_values": k_values,
            "exclude": exclude,
            "no_positive_policy": policy,
            "relevance_level": relevance_level,
        }
        result = evaluate_retrieval(qrels, run, **kwargs)
        assert_matches_reference(result, *reference_evaluate(qrels, run, **kwargs), keys)


# ── ranx oracle ────────────────────────────────────────────────────────────────────────────

RANX_KS = (1, 2, 3, 5, 10, 11, 100)
RANX_MEASURES = ("ndcg", "map", "recall", "precision", "mrr")


@pytest.mark.skipif(ranx is None, reason="ranx is not installed (pip install -e .[dev])")
@PROPERTY_SETTINGS
@given(case=cases(distinct_scores=True))
def test_metrics_match_ranx_on_distinct_scores(case):
    qrels, run, exclude = case
    result = evaluate_retrieval(qrels, run, k_values=list(RANX_KS), exclude=exclude)
    ranked = {
        q: {d: s for d, s in run.get(q, {}).items() if d not in set(exclude.get(q, ()))}
        for q, g in qrels.items()
        if any(r >= 2 for r in g.values())
    }
    # A query that ranks nothing scores 0 everywhere. ranx cannot take an empty ranked list from
    # a plain dict (and ranx.Run fails when every list is empty), so such queries stay out.
    for q in [q for q, docs in ranked.items() if not docs]:
        assert set(result.per_query[q].values()) == {0.0}
        del ranked[q]
    positive = list(ranked)
    if not positive:
        return

    binary = {q: {d: 1 for d, r in qrels[q].items() if r >= 2} for q in positive}
    graded = {q: {d: r for d, r in qrels[q].items() if r >= 2} for q in positive}
    binary_metrics = [f"{m}@{k}" for m in RANX_MEASURES if m != "ndcg" for k in RANX_KS]
    ndcg_metrics = [f"ndcg@{k}" for k in RANX_KS]

    expected: dict[str, dict[str, float]] = {q: {} for q in positive}
    with warnings.catch_warnings():
        # ranx's numba kernels warn about a uint64 -> int64 cast of hashed doc ids.
        warnings.simplefilter("ignore")
        for ranx_qrels, metrics in ((binary, binary_metrics), (graded, ndcg_metrics)):
            # Plain dicts (not ranx.Qrels/Run: fewer numba kernels to compile on a cold cache).
            # ranx pairs qrels and run queries by position and returns per-query arrays in
            # that order, so both dicts are built in the order of ``positive``.
            scores = ranx.evaluate(
                {q: ranx_qrels[q] for q in positive},
                {q: dict(ranked[q]) for q in positive},
                metrics,
                return_mean=False,
            )
            for metric, values in scores.items():
                name, k = metric.split("@")
                for qid, value in zip(positive, values, strict=True):
                    expected[qid][f"{name}_at_{k}"] = float(value)

    for qid in positive:
        assert len(expected[qid]) == len(RANX_MEASURES) * len(RANX_KS)
        for key, value in expected[qid].items():
            assert_close(result.per_query[qid][key], value, f"ranx {qid} {key}")


# ── Targeted properties ────────────────────────────────────────────────────────────────────


@PROPERTY_SETTINGS
@given(case=cases())
def test_inputs_are_not_mutated(case):
    qrels, run, exclude = case
    before = copy.deepcopy((qrels, run, exclude))
    for policy in ("zero", "exclude"):
        evaluate_retrieval(qrels, run, exclude=exclude, no_positive_policy=policy)
        assert (qrels, run, exclude) == before
    # Not even the order of the caller's dictionaries changes.
    assert [list(d) for d in run.values()] == [list(d) for d in before[1].values()]


def _shuffled(mapping, rnd):
    items = list(mapping.items())
    rnd.shuffle(items)
    return {k: (_shuffled(v, rnd) if isinstance(v, dict) else v) for k, v in items}


@PROPERTY_SETTINGS
@given(case=cases(), k_values=k_values_strategy, rnd=st.randoms(use_true_random=False))
def test_insertion_order_does_not_matter(case, k_values, rnd):
    qrels, run, exclude = case
    exclude_shuffled = {}
    for q, docs in _shuffled(exclude, rnd).items():
        docs = list(docs)
        rnd.shuffle(docs)
        exclude_shuffled[q] = docs
    for policy in ("zero", "exclude"):
        a = evaluate_retrieval(
            qrels, run, k_values=k_values, exclude=exclude, no_positive_policy=policy
        )
        b = evaluate_retrieval(
            _shuffled(qrels, rnd),
            _shuffled(run, rnd),
            k_values=k_values,
            exclude=exclude_shuffled,
            no_positive_policy=policy,
        )
        assert a.per_query == b.per_query  # exact: every value, not only approximately
        assert a.intrusion == b.intrusion
        assert a.mean() == b.mean()
        assert a.summary() == b.summary()


# ── Worked examples pinning the reference itself ───────────────────────────────────────────


def test_reference_tie_order_is_doc_id_descending():
    scores = {"a": 1.0, "b": 1.0, "10": 1.0, "9": 1.0, "B": 1.0, "z": 0.5, "y": 2.0}
    assert ranked_list(scores) == ["y", "b", "a", "B", "9", "10", "z"]
    assert ranked_list(scores, excluded=["b", "y"]) == ["a", "B", "9", "10", "z"]


def test_reference_worked_example():
    # Ranking c > b > a > d; c is a hard negative, b and d are positives (grades 2 and 3).
    grades = {"a": 0, "b": 2, "c": 1, "d": 3, "e": 2}
    ranking = ["c", "b", "a", "d"]
    m = query_metrics(ranking, grades, k_values=[1, 2, 4, 10])
    idcg4 = 3 + 2 / math.log2(3) + 2 / math.log2(4)
    assert m["ndcg_at_1"] == 0.0  # the hard negative earns nothing
    assert_close(m["ndcg_at_4"], (2 / math.log2(3) + 3 / math.log2(5)) / idcg4, "ndcg@4")
    assert_close(m["map_at_2"], (1 / 2) / 3, "map@2")  # divided by R = 3, not min(R, k) = 2
    assert_close(m["map_at_4"], (1 / 2 + 2 / 4) / 3, "map@4")
    assert_close(m["recall_at_4"], 2 / 3, "recall@4")
    assert_close(m["precision_at_10"], 2 / 10, "P@10")  # denominator k, not the list length
    assert m["mrr_at_1"] == 0.0
    assert m["mrr_at_2"] == 0.5


def test_library_on_worked_example():
    qrels = {
        "q1": {"a": 0, "b": 2, "c": 1, "d": 3, "e": 2},
        "q2": {"x": 1},  # no positive
        "q3": {"p": 2},  # missing from the run
    }
    run = {"q1": {"c": 0.9, "b": 0.5, "a": 0.5, "d": 0.1, "anchor": 5.0}, "q2": {"x": 1.0}}
    exclude = {"q1": ["anchor"]}
    result = evaluate_retrieval(qrels, run, exclude=exclude)
    # Tie b/a at 0.5: "b" > "a", so b ranks second.
    assert result.per_query["q1"]["mrr_at_10"] == 0.5
    assert result.per_query["q2"] == dict.fromkeys(result.metric_keys, 0.0)
    assert result.per_query["q3"] == dict.fromkeys(result.metric_keys, 0.0)
    assert result.intrusion == {"q1": True}
    assert result.summary()["hard_negative_intrusion_rate"] == 1.0
    assert result.n_queries == 3
    excluded = evaluate_retrieval(qrels, run, exclude=exclude, no_positive_policy="exclude")
    assert set(excluded.per_query) == {"q1", "q3"}
