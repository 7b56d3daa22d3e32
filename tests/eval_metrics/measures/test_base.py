"""The measure contract (eval_metrics/measures/base.py) and the registry (measures/__init__.py)."""

from __future__ import annotations

import dataclasses

import pytest

from eval_metrics import DEFAULT_K_VALUES, MEASURES, evaluate_retrieval
from eval_metrics.measures import Measure


def test_a_measure_names_its_keys_and_reads_its_trec_family():
    measure = Measure(name="gain", trec_family="fam", default_k=(1, 5))
    assert measure.key(5) == "gain_at_5"
    assert measure.trec_cutoffs([5, 1, 5]) == {1, 5}  # one trec_eval cutoff per k
    assert measure.value({"fam_5": 0.25, "fam_1": 1.0}, 5) == 0.25
    with pytest.raises(dataclasses.FrozenInstanceError):
        measure.name = "other"  # type: ignore[misc]


def test_the_registry_in_report_order_with_the_paper_s_cutoffs():
    assert list(MEASURES) == ["ndcg", "map", "recall", "mrr", "precision"]
    assert DEFAULT_K_VALUES == {
        "ndcg": (1, 3, 5, 10),
        "map": (10, 100),
        "recall": (1, 3, 5, 10, 100),
        "mrr": (10,),
        "precision": (1, 3, 5, 10),
    }
    assert all(m.name == name for name, m in MEASURES.items())


def test_every_measure_on_one_perfect_ranking():
    # one positive at rank 1 of two documents: 1 on every measure but P@k = 1 / k
    res = evaluate_retrieval({"q": {"a": 2}}, {"q": {"a": 0.9, "x": 0.1}})
    expected = {m.key(k): 1.0 for m in MEASURES.values() for k in m.default_k}
    expected |= {f"precision_at_{k}": 1 / k for k in DEFAULT_K_VALUES["precision"]}
    assert res.per_query["q"] == expected
