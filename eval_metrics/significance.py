"""Paired significance tests between two systems evaluated on the same queries.

Comparing rerankers on a few hundred queries, a difference of 0.01 nDCG@10 can be noise. Both
tests here are paired over queries, seeded (the same call gives the same answer), and come with a
paired bootstrap confidence interval of the mean difference.

* ``"randomization"`` (default): the paired approximate randomization test, sign-flipping each
  query's difference. Two-sided p-value with the add-one correction
  ``p = (1 + #{|mean(flipped)| >= |observed|}) / (1 + n_resamples)``
  (Smucker, Allan & Carterette, CIKM 2007 recommend it for IR).
* ``"bootstrap"``: the paired bootstrap test (Efron & Tibshirani 1993, §16.4): resample queries
  with replacement, shift the resampled mean differences to the null, same p-value form.

The confidence interval is the percentile interval of the bootstrap distribution of the mean
difference (B - A), at ``confidence``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

from eval_metrics.checks import check_score, listed

METHODS = ("randomization", "bootstrap")
_CHUNK = 1_000_000  # resampled values held in memory at once


@dataclass(frozen=True)
class PairedComparison:
    """The outcome of :func:`paired_test` (differences are ``b - a``)."""

    method: str
    n_queries: int
    mean_a: float
    mean_b: float
    delta: float
    p_value: float
    ci_low: float
    ci_high: float
    confidence: float
    n_resamples: int
    seed: int

    def significant(self, alpha: float = 0.05) -> bool:
        return self.p_value < alpha

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def _paired_arrays(
    a: Mapping[str, float], b: Mapping[str, float]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    for name, values in (("a", a), ("b", b)):
        if not isinstance(values, Mapping):
            raise TypeError(
                f"system {name} must be a mapping {{query_id: score}}, got {type(values).__name__}"
            )
        if not values:
            raise ValueError(f"system {name} has no per-query scores")
    only_a, only_b = a.keys() - b.keys(), b.keys() - a.keys()
    if only_a or only_b:
        raise ValueError(
            "a paired test needs both systems scored on the same queries: "
            + "; ".join(
                f"{len(ids)} only in {name} ({listed(ids)})"
                for name, ids in (("a", only_a), ("b", only_b))
                if ids
            )
        )
    queries = sorted(a)
    xa = np.array([check_score(a[q], q, "a", what="per-query scores") for q in queries])
    xb = np.array([check_score(b[q], q, "b", what="per-query scores") for q in queries])
    return queries, xa, xb


def _chunks(n_resamples: int, n: int):
    per = max(1, _CHUNK // max(n, 1))
    for start in range(0, n_resamples, per):
        yield min(per, n_resamples - start)


def paired_test(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    method: str = "randomization",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Test whether system B's mean per-query score differs from system A's.

    Args:
        a, b: ``{query_id: score}`` of the two systems on exactly the same queries (e.g. the
            ``ndcg_at_10`` column of two :class:`RetrievalEvaluation` ``per_query`` tables).
        method: ``"randomization"`` or ``"bootstrap"`` (see the module docstring).
        n_resamples: resamples for the p-value and the confidence interval.
        confidence: level of the bootstrap percentile interval of ``mean(b - a)``.
        seed: seed of the random generator; the same inputs and seed give the same result.

    Returns:
        A :class:`PairedComparison`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    _, xa, xb = _paired_arrays(a, b)
    diff = xb - xa
    n = diff.size
    observed = float(diff.mean())
    rng = np.random.default_rng(seed)
    # A tolerance keeps resamples that equal the observed statistic up to rounding counted as
    # "at least as extreme" (otherwise identical systems could get p < 1 from float noise).
    tol = 1e-12 * max(1.0, float(np.abs(diff).max()))

    boot_means = np.empty(n_resamples)
    done = 0
    for size in _chunks(n_resamples, n):
        idx = rng.integers(0, n, size=(size, n))
        boot_means[done : done + size] = diff[idx].mean(axis=1)
        done += size

    if method == "randomization":
        extreme = 0
        for size in _chunks(n_resamples, n):
            signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
            flipped = (signs * diff).mean(axis=1)
            extreme += int(np.count_nonzero(np.abs(flipped) >= abs(observed) - tol))
    else:
        extreme = int(np.count_nonzero(np.abs(boot_means - observed) >= abs(observed) - tol))
    p_value = (1 + extreme) / (1 + n_resamples)

    alpha = 1.0 - confidence
    low, high = np.quantile(boot_means, [alpha / 2, 1 - alpha / 2])
    return PairedComparison(
        method=method,
        n_queries=n,
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        delta=observed,
        p_value=min(1.0, p_value),
        ci_low=float(low),
        ci_high=float(high),
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )


__all__ = ["METHODS", "PairedComparison", "paired_test"]
