"""The `evaluate` module: loading (path, bare name, installed path), contract, errors."""

from __future__ import annotations

import evaluate
import pytest

import eval_metrics
from eval_metrics import evaluate_retrieval, read_qrels, read_run

PREDICTIONS = [
    {"query_id": "q1", "doc_ids": ["h", "p", "x"], "scores": [0.9, 0.8, 0.1]},
    {"query_id": "q2", "doc_ids": ["anchor", "t"], "scores": [0.99, 0.5]},
    {"query_id": "q3", "doc_ids": [], "scores": []},  # retrieved nothing: an empty row
]
REFERENCES = [
    {"query_id": "q1", "doc_ids": ["p", "h"], "relevance": [2, 1]},
    {"query_id": "q2", "doc_ids": ["t"], "relevance": [2]},
    {"query_id": "q3", "doc_ids": ["n"], "relevance": [1]},  # no positive, not ranked
]


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(eval_metrics.COREB_METRIC_PATH)


def test_bare_name_loads_from_repository_root(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    metric = evaluate.load("coreb_metric")
    out = metric.compute(predictions=PREDICTIONS[:1], references=REFERENCES[:1], k_values=[1])
    assert metric.name == "coreb_metric"
    assert out["ndcg_at_1"] == 0.0


def test_contract_keys_and_values(metric):
    out = metric.compute(predictions=PREDICTIONS, references=REFERENCES, exclude={"q2": ["anchor"]})
    for key in ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100", "precision_at_5"):
        assert key in out
    # q1: positive at rank 2 -> RR 1/2; q2: anchor excluded -> RR 1; q3: no positive -> 0.
    assert out["mrr_at_10"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert out["n_queries"] == 3
    assert out["hard_negative_intrusion_rate"] == 1.0
    assert out["no_positive_policy"] == "zero"
    out = metric.compute(
        predictions=PREDICTIONS,
        references=REFERENCES,
        exclude={"q2": ["anchor"]},
        no_positive_policy="exclude",
    )
    assert out["mrr_at_10"] == pytest.approx(0.75)
    assert out["n_queries"] == 2


def test_same_numbers_as_the_library_on_the_example(metric, examples):
    qrels = read_qrels(examples / "qrels.trec")
    run = read_run(examples / "run.trec")
    predictions = [
        {"query_id": q, "doc_ids": list(d), "scores": list(d.values())} for q, d in run.items()
    ]
    references = [
        {"query_id": q, "doc_ids": list(d), "relevance": list(d.values())} for q, d in qrels.items()
    ]
    got = metric.compute(predictions=predictions, references=references)
    assert got == evaluate_retrieval(qrels, run).summary()


def test_scores_keep_double_precision(metric):
    # float32 features would merge these scores into a tie; float64 keeps them apart.
    out = metric.compute(
        predictions=[{"query_id": "q", "doc_ids": ["a", "b"], "scores": [0.1 + 1e-7, 0.1]}],
        references=[{"query_id": "q", "doc_ids": ["a"], "relevance": [2]}],
        k_values=[1],
    )
    assert out["mrr_at_1"] == 1.0


@pytest.mark.parametrize(
    ("predictions", "message"),
    [
        (
            [{"query_id": "q1", "doc_ids": ["a", "a"], "scores": [0.1, 0.2]}],
            r"predictions\[0\] \(query 'q1'\) lists doc 'a' twice",
        ),
        (
            [{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [0.1]}],
            r"predictions\[0\] \(query 'q1'\): 2 doc_ids but 1 scores",
        ),
        (
            [
                {"query_id": "q1", "doc_ids": ["a"], "scores": [0.1]},
                {"query_id": "q1", "doc_ids": ["b"], "scores": [0.1]},
            ],
            r"predictions\[1\]: query 'q1' appears in more than one row",
        ),
        (
            [{"query_id": "zz", "doc_ids": ["a"], "scores": [0.1]}],
            "absent from the qrels: 'zz'",
        ),
        (
            [{"query_id": "q1", "doc_ids": ["a"], "scores": [float("nan")]}],
            r"run\['q1'\]\['a'\] is nan",
        ),
    ],
)
def test_bad_rows(metric, predictions, message):
    # evaluate pairs rows up: as many prediction rows as reference rows (matched by query_id).
    references = [
        {"query_id": f"q{i + 1}", "doc_ids": ["a"], "relevance": [2]}
        for i in range(len(predictions))
    ]
    with pytest.raises(ValueError, match=message):
        metric.compute(predictions=predictions, references=references)


def test_row_counts_must_match(metric):
    with pytest.raises(ValueError, match=r"number of predictions \(1\) and references \(3\)"):
        metric.compute(predictions=PREDICTIONS[:1], references=REFERENCES)


def test_qpa_config():
    qpa = evaluate.load(eval_metrics.COREB_METRIC_PATH, "qpa")
    out = qpa.compute(chosen_score=[0.9, 0.5, 0.1], rejected_score=[0.1, 0.5, 0.2])
    assert out == {"qpa": 1 / 3, "n_triplets": 3}


def test_mca_config():
    mca = evaluate.load(eval_metrics.COREB_METRIC_PATH, "mca")
    out = mca.compute(
        chosen_score=[0.9, 0.5, 0.1, 0.7],
        rejected_score=[0.1, 0.5, 0.2, 0.6],
        num_conditions=[1, 1, 3, 3],
    )
    assert out["mca"] == 0.5
    assert out["mca_1cond"] == 0.5
    assert out["mca_3cond"] == 0.5


def test_unknown_config_is_named():
    with pytest.raises(KeyError, match="no config 'ndcg'"):
        evaluate.load(eval_metrics.COREB_METRIC_PATH, "ndcg")
