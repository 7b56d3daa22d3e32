"""Hard-negative intrusion rate, hand-built cases (CoREB §4.2 Analysis V)."""

from __future__ import annotations

import pytest

from eval_metrics import evaluate_retrieval


def ranking(*doc_ids: str) -> dict[str, float]:
    """A run where the given docs rank in the given order (distinct scores)."""
    return {d: float(len(doc_ids) - i) for i, d in enumerate(doc_ids)}


FILLER = [f"f{i:02d}" for i in range(20)]
QRELS = {"q": {"pos": 2, "hn": 1}}


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (["hn", "pos", *FILLER], True),  # hard negative above the positive, both in top 10
        (["pos", "hn", *FILLER], False),  # positive first: eligible, no intrusion
        (["pos", *FILLER[:8], "hn", *FILLER[8:]], False),  # hn at rank 10: still eligible
        (["pos", *FILLER[:9], "hn", *FILLER[9:]], None),  # hn at rank 11: not eligible
        (["hn", *FILLER[:9], "pos", *FILLER[9:]], None),  # positive at rank 11: not eligible
        (["hn", *FILLER[:8], "pos", *FILLER[8:]], True),  # positive at rank 10, hn above
        (["pos", *FILLER], None),  # hard negative not retrieved
    ],
)
def test_intrusion_verdicts(order, expected):
    res = evaluate_retrieval(QRELS, {"q": ranking(*order)})
    assert res.intrusion.get("q") is expected
    assert res.summary()["n_intrusion_eligible"] == (0 if expected is None else 1)


def test_best_positive_and_best_hard_negative_decide():
    qrels = {"q": {"p1": 2, "p2": 2, "h1": 1, "h2": 1}}
    # p2 first; hard negatives below it, the other positive below them: no intrusion.
    res = evaluate_retrieval(qrels, {"q": ranking("p2", "h2", "h1", "p1")})
    assert res.intrusion == {"q": False}
    res = evaluate_retrieval(qrels, {"q": ranking("x", "h2", "p1", "h1", "p2")})
    assert res.intrusion == {"q": True}


def test_tie_at_the_cutoff_is_resolved_by_doc_id():
    # 9 docs above, then hn and "zz" tied at score 1.0: zz (larger id) takes rank 10, hn rank 11.
    run = {f"a{i}": 10.0 - i for i in range(8)} | {"pos": 1.5, "hn": 1.0, "zz": 1.0}
    res = evaluate_retrieval(QRELS, {"q": run})
    assert "q" not in res.intrusion
    run = {f"a{i}": 10.0 - i for i in range(8)} | {"pos": 1.5, "hn": 1.0, "aa": 1.0}
    res = evaluate_retrieval(QRELS, {"q": run})
    assert res.intrusion == {"q": False}


def test_rate_is_over_eligible_queries_only():
    qrels = {"q1": {"pos": 2, "hn": 1}, "q2": {"pos": 2, "hn": 1}, "q3": {"pos": 2, "hn": 1}}
    run = {
        "q1": ranking("hn", "pos"),  # intrusion
        "q2": ranking("pos", "hn"),  # none
        "q3": ranking("pos", *FILLER, "hn"),  # not eligible
    }
    summary = evaluate_retrieval(qrels, run).summary()
    assert summary["hard_negative_intrusion_rate"] == 0.5
    assert summary["n_intrusion_eligible"] == 2


def test_no_eligible_query_gives_none():
    summary = evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 1.0}}).summary()
    assert summary["hard_negative_intrusion_rate"] is None
    assert summary["n_intrusion_eligible"] == 0


def test_exclusion_applies_to_intrusion():
    run = {"q": ranking("hn", "pos")}
    assert evaluate_retrieval(QRELS, run, exclude={"q": ["hn"]}).intrusion == {}


def test_relevance_level_decides_what_is_a_hard_negative():
    qrels = {"q": {"a": 3, "b": 2}}
    run = {"q": ranking("b", "a")}
    # at level 2 both are positives: no hard negative, not eligible
    assert evaluate_retrieval(qrels, run).intrusion == {}
    # at level 3 b (0 < 2 < 3) is a hard negative and ranks above the only positive a
    assert evaluate_retrieval(qrels, run, relevance_level=3).intrusion == {"q": True}


def test_scores_are_compared_in_single_precision_then_by_doc_id():
    from eval_metrics.intrusion import hard_negative_intrusion

    # 0.1 + 1e-9 and 0.1 are one float32: a tie, which the larger id h wins over a
    verdict = hard_negative_intrusion(
        {"a": 0.1 + 1e-9, "h": 0.1}, positives=["a"], hard_negatives=["h"], positive_in_top=True
    )
    assert verdict is True
    # the same tie with the positive named z: z ranks first
    verdict = hard_negative_intrusion(
        {"z": 0.1 + 1e-9, "h": 0.1}, positives=["z"], hard_negatives=["h"], positive_in_top=True
    )
    assert verdict is False


def test_within_depth_matches_a_full_trec_eval_sort():
    """_in_top against the ranking written out: every document sorted by (float32 score, id),
    descending, as trec_eval orders them; scores drawn from few values so ties are common."""
    import random

    import numpy as np

    from eval_metrics.intrusion import _in_top

    rng = random.Random(7)
    for case in range(400):
        n = rng.randint(1, 40)
        pool = [rng.random() for _ in range(rng.randint(1, 6))]
        # values within one float32 of each other (single-precision ties), and plain ones
        ranking = {f"d{i:02d}": rng.choice(pool) + rng.choice([0.0, 1e-9, -1e-9, 1e-3])
                   for i in range(n)}  # fmt: skip
        depth = rng.randint(1, 12)
        f32 = {d: float(np.float32(s)) for d, s in ranking.items()}
        order = sorted(ranking, key=lambda d: (f32[d], d), reverse=True)
        for doc in ranking:
            expected = order.index(doc) < depth
            assert _in_top((f32[doc], doc), ranking, depth) is expected, (case, doc, depth)
