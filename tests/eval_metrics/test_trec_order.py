"""``eval_metrics.trec_order``: the order trec_eval itself ranks a run in (pytrec_eval asked)."""

from __future__ import annotations

import pytest
import pytrec_eval

from eval_metrics.trec_order import trec_order, trec_score

#: exact ties, ties only in single precision (1 + 1e-9 rounds to 1.0f), plain scores
RANKING = {
    "d03": 0.5, "d10": 0.5, "d07": 0.9, "d01": 1.0, "d02": 1.0 + 1e-9, "d11": 1.0,
    "d05": -2.0, "d04": 0.25, "d12": 0.25, "d00": 1.0 + 1e-9,
}  # fmt: skip


def _trec_eval_rank(ranking: dict[str, float], doc: str) -> int:
    """The rank pytrec_eval gives ``doc``: it alone relevant, the rank is 1 / its recip_rank."""
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"})
    return round(1 / evaluator.evaluate({"q": ranking})["q"]["recip_rank"])


def test_the_order_is_trec_evals():
    order = trec_order(RANKING)
    assert order == ["d11", "d02", "d01", "d00", "d07", "d10", "d03", "d12", "d04", "d05"]
    assert [_trec_eval_rank(RANKING, d) for d in order] == list(range(1, len(order) + 1))


def test_top_k_and_the_scores_as_given():
    assert trec_order(RANKING, 3) == ["d11", "d02", "d01"]
    assert trec_order(RANKING, 100) == trec_order(RANKING)
    # as given, the two scores above 1.0 come first; a file in this order never rises
    given = trec_order(RANKING, single_precision=False)
    assert given[:5] == ["d02", "d00", "d11", "d01", "d07"]
    assert [RANKING[d] for d in given] == sorted(RANKING.values(), reverse=True)
    assert trec_score(1.0 + 1e-9) == 1.0 and trec_score(0.1) == pytest.approx(0.1, abs=1e-8)
