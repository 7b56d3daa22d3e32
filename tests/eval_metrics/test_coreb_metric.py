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


# mistakes in a row's structure, reported alike by every path
ROW_STRUCTURE_ERRORS = [
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
]


@pytest.mark.parametrize(
    ("predictions", "message"),
    [
        *ROW_STRUCTURE_ERRORS,
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


# ── The module checks raw inputs as the library does (evaluate casts them otherwise) ────────
ONE_REF = [{"query_id": "q1", "doc_ids": ["a"], "relevance": [2]}]
ONE_PRED = [{"query_id": "q1", "doc_ids": ["a"], "scores": [0.9]}]


@pytest.mark.parametrize(
    ("relevance", "error", "message"),
    [
        # int64 features would truncate these to [1, 2] and [2, 0]
        ([1.9, 2], ValueError, r"references\[0\].*qrels\['q1'\]\['a'\].*integer.*1\.9"),
        ([2.999, 0], ValueError, r"references\[0\].*qrels\['q1'\]\['a'\].*integer.*2\.999"),
        ([True, 2], ValueError, r"references\[0\].*qrels\['q1'\]\['a'\].*True"),
        (["2", 2], ValueError, r"references\[0\].*qrels\['q1'\]\['a'\].*'2'"),
        # int64 would keep it and pytrec_eval's C int would wrap it: nDCG 0.0 instead of 1.0
        ([2**32 + 1, 2], ValueError, r"references\[0\].*qrels\['q1'\]\['a'\].*at most 65535"),
    ],
)
def test_module_refuses_what_its_features_would_cast(metric, relevance, error, message):
    references = [{"query_id": "q1", "doc_ids": ["a", "b"], "relevance": relevance}]
    predictions = [{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [0.9, 0.1]}]
    with pytest.raises(error, match=message):
        metric.compute(predictions=predictions, references=references)


@pytest.mark.parametrize(
    ("scores", "error", "message"),
    [
        (["0.9"], TypeError, r"predictions\[0\].*run\['q1'\]\['a'\] must be a finite real.*'0.9'"),
        ([True], TypeError, r"predictions\[0\].*run\['q1'\]\['a'\] must be a finite real.*True"),
        ([1e39], ValueError, r"predictions\[0\].*run\['q1'\]\['a'\].*single precision"),
        ([10**400], ValueError, r"predictions\[0\].*run\['q1'\]\['a'\].*too large"),
    ],
)
def test_module_refuses_scores_of_the_wrong_kind(metric, scores, error, message):
    predictions = [{"query_id": "q1", "doc_ids": ["a"], "scores": scores}]
    with pytest.raises(error, match=message):
        metric.compute(predictions=predictions, references=ONE_REF)


def test_module_refuses_ids_that_are_not_strings(metric):
    predictions = [{"query_id": "q1", "doc_ids": ["a", 7], "scores": [0.9, 0.1]}]
    with pytest.raises(TypeError, match=r"predictions\[0\].*doc_ids\[1\] must be a str, got 7"):
        metric.compute(predictions=predictions, references=ONE_REF)
    references = [{"query_id": 1, "doc_ids": ["a"], "relevance": [2]}]
    with pytest.raises(TypeError, match=r"references\[0\].*query_id must be a str, got 1"):
        metric.compute(predictions=ONE_PRED, references=references)


def test_module_checks_every_batch(metric):
    # add_batch is the other way in: the same checks apply there
    metric.add_batch(predictions=ONE_PRED, references=ONE_REF)
    with pytest.raises(ValueError, match=r"references\[0\].*1\.5"):
        metric.add_batch(
            predictions=ONE_PRED,
            references=[{"query_id": "q2", "doc_ids": ["a"], "relevance": [1.5]}],
        )
    with pytest.raises(TypeError, match=r"predictions\[0\].*finite real.*'0.5'"):
        metric.add(
            prediction={"query_id": "q2", "doc_ids": ["a"], "scores": ["0.5"]},
            reference={"query_id": "q2", "doc_ids": ["a"], "relevance": [2]},
        )
    assert metric.compute()["n_queries"] == 1
    qpa = evaluate.load(eval_metrics.COREB_METRIC_PATH, "qpa")
    with pytest.raises(TypeError, match=r"triplet\[0\]\['chosen'\].*True"):
        qpa.add(chosen_score=True, rejected_score=0.1)
    qpa.add(chosen_score=0.9, rejected_score=0.1)
    assert qpa.compute() == {"qpa": 1.0, "n_triplets": 1}


def test_module_valid_input_still_scores(metric):
    # numpy values are what callers often pass; integral numpy grades and real scores are fine
    import numpy as np

    out = metric.compute(
        predictions=[{"query_id": "q1", "doc_ids": ["a", "b"], "scores": np.array([0.2, 0.9])}],
        references=[{"query_id": "q1", "doc_ids": ["a", "b"], "relevance": np.array([2, 1])}],
        k_values=[1, 10],
    )
    assert out["ndcg_at_1"] == 0.0 and out["mrr_at_10"] == 0.5


@pytest.mark.parametrize(
    ("config", "inputs", "error", "message"),
    [
        ("qpa", {"chosen_score": ["0.9"], "rejected_score": [0.1]}, TypeError,
         r"triplet\[0\]\['chosen'\] must be a finite real.*'0.9'"),
        ("qpa", {"chosen_score": [0.9], "rejected_score": [False]}, TypeError,
         r"triplet\[0\]\['rejected'\] must be a finite real.*False"),
        ("mca", {"chosen_score": [0.9, 0.8], "rejected_score": [0.1, 0.1],
                 "num_conditions": [2.9, 1]}, ValueError,
         r"num_conditions\[0\] must be a positive int.*2\.9"),
        ("mca", {"chosen_score": [0.9], "rejected_score": [0.1], "num_conditions": [True]},
         ValueError, r"num_conditions\[0\] must be a positive int.*True"),
        ("mca", {"chosen_score": [0.9], "rejected_score": [0.1], "num_conditions": ["2"]},
         ValueError, r"num_conditions\[0\] must be a positive int.*'2'"),
        ("mca", {"chosen_score": [True], "rejected_score": [0.1], "num_conditions": [1]},
         TypeError, r"triplet\[0\]\['chosen'\] must be a finite real.*True"),
    ],
)  # fmt: skip
def test_preference_configs_refuse_what_their_features_would_cast(config, inputs, error, message):
    module = evaluate.load(eval_metrics.COREB_METRIC_PATH, config)
    with pytest.raises(error, match=message):
        module.compute(**inputs)


# ── One-shot compute skips evaluate's Arrow round trip: same numbers, same errors ──────────
def _random_case(seed, n_queries=40, n_docs=30):
    """Graded qrels, a run with exact ties, c2c exclusions, queries without a positive and one
    judged query the run leaves out (an empty prediction row)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    corpus = [f"d{i:03d}" for i in range(120)]
    qrels, run, exclude = {}, {}, {}
    for qi in range(n_queries):
        qid = f"q{qi:02d}"
        picked = [corpus[i] for i in rng.choice(len(corpus), size=n_docs, replace=False)]
        scores = np.round(rng.normal(0.5, 0.2, size=n_docs), 2)  # rounding makes ties
        run[qid] = dict(zip(picked, scores.tolist(), strict=True))
        judged = rng.choice(len(corpus), size=int(rng.integers(1, 6)), replace=False)
        grades = rng.integers(0 if qi % 7 == 0 else 1, 3, size=len(judged))
        qrels[qid] = {corpus[j]: int(g) for j, g in zip(judged, grades, strict=True)}
        if qi % 5 == 0:
            exclude[qid] = [picked[0]]
    run["q00"] = {}
    return qrels, run, exclude


def _rows(qrels, run, as_numpy=False):
    import numpy as np

    def seq(values):
        return np.array(list(values)) if as_numpy else list(values)

    predictions = [
        {"query_id": q, "doc_ids": list(run[q]), "scores": seq(run[q].values())} for q in qrels
    ]
    references = [
        {"query_id": q, "doc_ids": list(d), "relevance": seq(d.values())} for q, d in qrels.items()
    ]
    return predictions, references


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_case_is_bit_identical_to_the_library(metric, seed):
    qrels, run, exclude = _random_case(seed)
    expected = evaluate_retrieval(qrels, run, exclude=exclude, k_values=[1, 3, 10, 20]).summary()
    for as_numpy in (False, True):
        predictions, references = _rows(qrels, run, as_numpy)
        kwargs = {"exclude": exclude, "k_values": [1, 3, 10, 20]}
        assert metric.compute(predictions=predictions, references=references, **kwargs) == expected
        # evaluate's own path: rows stored in its Arrow cache by add_batch, read back by compute
        half = len(predictions) // 2
        metric.add_batch(predictions=predictions[:half], references=references[:half])
        metric.add_batch(predictions=predictions[half:], references=references[half:])
        assert metric.compute(**kwargs) == expected


@pytest.mark.parametrize(
    ("predictions", "message"),
    [
        *ROW_STRUCTURE_ERRORS,
        (
            # two mistakes: evaluate's path checks every value before the row structure
            [
                {"query_id": "q1", "doc_ids": ["a", "a"], "scores": [0.1, 0.2]},
                {"query_id": "q2", "doc_ids": ["a"], "scores": [float("inf")]},
            ],
            r"predictions\[1\] \(query 'q2'\): run\['q2'\]\['a'\] is inf",
        ),
        (
            # a misaligned row, then a wrong grade: the grade is named first
            [
                {"query_id": "q1", "doc_ids": ["a", "b"], "scores": [0.1]},
                {"query_id": "q2", "doc_ids": ["a"], "scores": [0.3]},
            ],
            None,
        ),
    ],
)
def test_both_paths_report_the_same_error(predictions, message):
    references = [
        {"query_id": f"q{i + 1}", "doc_ids": ["a"], "relevance": [2]}
        for i in range(len(predictions))
    ]
    if message is None:
        references[1]["relevance"] = [0.5]
        message = r"references\[1\] \(query 'q2'\): qrels\['q2'\]\['a'\].*0\.5"
    direct = evaluate.load(eval_metrics.COREB_METRIC_PATH)
    with pytest.raises(ValueError, match=message):
        direct.compute(predictions=predictions, references=references)
    stored = evaluate.load(eval_metrics.COREB_METRIC_PATH)
    with pytest.raises(ValueError, match=message):
        stored.add_batch(predictions=predictions, references=references)
        stored.compute()


def test_row_count_mismatch_is_reported_after_the_values():
    metric = evaluate.load(eval_metrics.COREB_METRIC_PATH)
    bad = [{"query_id": "q1", "doc_ids": ["a"], "scores": [True]}]
    with pytest.raises(TypeError, match=r"predictions\[0\].*True"):
        metric.compute(predictions=bad, references=REFERENCES)
    dup = [{"query_id": "q1", "doc_ids": ["a", "a"], "scores": [0.1, 0.2]}]
    with pytest.raises(ValueError, match=r"number of predictions \(1\) and references \(3\)"):
        metric.compute(predictions=dup, references=REFERENCES)


def test_direct_compute_leaves_the_module_reusable(metric):
    first = metric.compute(predictions=PREDICTIONS, references=REFERENCES, k_values=[1])
    metric.add_batch(predictions=PREDICTIONS, references=REFERENCES)
    # rows added before: compute takes evaluate's path and scores them with the new ones
    assert metric.compute(k_values=[1]) == first
    assert metric.compute(predictions=PREDICTIONS, references=REFERENCES, k_values=[1]) == first


def test_str_subclass_ids_are_scored_as_plain_str(metric):
    import numpy as np

    ids = np.array(["a", "b"])  # numpy.str_ elements
    out = metric.compute(
        predictions=[{"query_id": np.str_("q"), "doc_ids": list(ids), "scores": [0.2, 0.9]}],
        references=[{"query_id": "q", "doc_ids": ["b"], "relevance": [2]}],
        k_values=[1],
    )
    assert out["ndcg_at_1"] == 1.0


def test_unknown_option_is_refused(metric):
    with pytest.raises(TypeError, match="k_value"):
        metric.compute(predictions=PREDICTIONS, references=REFERENCES, k_value=[1])


def test_scores_near_single_precision_limit(metric):
    # their norm exceeds float32's range though each score is inside it: still accepted
    out = metric.compute(
        predictions=[{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [3e38, -3e38]}],
        references=ONE_REF,
        k_values=[1],
    )
    assert out["ndcg_at_1"] == 1.0
    predictions = [{"query_id": "q1", "doc_ids": ["a", "b"], "scores": [0.5, -3.5e38]}]
    with pytest.raises(ValueError, match=r"predictions\[0\].*run\['q1'\]\['b'\].*single"):
        metric.compute(predictions=predictions, references=ONE_REF)
