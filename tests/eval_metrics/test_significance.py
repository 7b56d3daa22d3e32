"""Paired significance tests: exact enumeration and scipy as independent references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats

from eval_metrics import paired_test


@pytest.fixture
def two_systems():
    rng = np.random.default_rng(7)
    a = rng.random(12)
    b = a + 0.08 + rng.normal(0, 0.15, size=12)
    return {f"q{i}": float(x) for i, x in enumerate(a)}, {
        f"q{i}": float(x) for i, x in enumerate(b)
    }


def exact_randomization_p(a: dict, b: dict) -> float:
    diff = np.array([b[q] - a[q] for q in sorted(a)])
    observed = abs(diff.mean())
    flips = np.array(list(itertools.product([-1, 1], repeat=diff.size)))
    return float(np.mean(np.abs((flips * diff).mean(axis=1)) >= observed - 1e-12))


def test_randomization_matches_exact_enumeration(two_systems):
    a, b = two_systems
    exact = exact_randomization_p(a, b)
    got = paired_test(a, b, n_resamples=40_000, seed=1)
    # Monte Carlo standard error at 40k resamples is below 0.0025 for any p.
    assert got.p_value == pytest.approx(exact, abs=0.01)
    assert got.delta == pytest.approx(np.mean([b[q] - a[q] for q in a]))


def test_randomization_agrees_with_scipy_permutation_test(two_systems):
    a, b = two_systems
    qs = sorted(a)
    ref = scipy.stats.permutation_test(
        (np.array([a[q] for q in qs]), np.array([b[q] for q in qs])),
        lambda x, y: np.mean(y - x),
        permutation_type="samples",
        n_resamples=np.inf,
    )
    assert paired_test(a, b, n_resamples=40_000).p_value == pytest.approx(ref.pvalue, abs=0.01)


def test_bootstrap_ci_agrees_with_scipy(two_systems):
    a, b = two_systems
    diff = np.array([b[q] - a[q] for q in sorted(a)])
    ref = scipy.stats.bootstrap(
        (diff,), np.mean, n_resamples=40_000, method="percentile", random_state=3
    ).confidence_interval
    got = paired_test(a, b, method="bootstrap", n_resamples=40_000, seed=3)
    width = ref.high - ref.low
    assert got.ci_low == pytest.approx(ref.low, abs=0.03 * width)
    assert got.ci_high == pytest.approx(ref.high, abs=0.03 * width)
    assert got.ci_low < got.delta < got.ci_high


def test_identical_systems_are_not_different():
    a = {f"q{i}": i / 10 for i in range(10)}
    for method in ("randomization", "bootstrap"):
        res = paired_test(a, dict(a), method=method)
        assert res.p_value == 1.0
        assert (res.ci_low, res.ci_high) == (0.0, 0.0)
        assert not res.significant()


def test_clear_improvement_is_significant():
    a = {f"q{i}": 0.2 + 0.01 * (i % 5) for i in range(200)}
    b = {q: v + 0.1 for q, v in a.items()}
    res = paired_test(a, b)
    assert res.significant(0.001)
    assert res.ci_low > 0


def test_seeded_and_reproducible(two_systems):
    a, b = two_systems
    assert paired_test(a, b, seed=5) == paired_test(a, b, seed=5)


def test_unpaired_queries_are_refused():
    with pytest.raises(ValueError, match=r"same queries.*1 only in b \('q9'\)"):
        paired_test({"q1": 0.5}, {"q1": 0.5, "q9": 0.1})
    with pytest.raises(ValueError, match="method must be one of"):
        paired_test({"q1": 0.5}, {"q1": 0.5}, method="t-test")
    with pytest.raises(ValueError, match=r"per-query scores\['q1'\]\['b'\] is nan"):
        paired_test({"q1": 0.5}, {"q1": float("nan")})
