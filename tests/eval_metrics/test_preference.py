"""QPA and MCA (SynH-Rank §3): a tie is not a success."""

from __future__ import annotations

import math

import pytest

from eval_metrics import mca, preference_wins, qpa


def test_qpa_ties_are_failures():
    chosen = [1.0, 0.5, 0.2, 3.0]
    rejected = [0.5, 0.5, 0.3, -1.0]  # win, tie, loss, win
    assert preference_wins(chosen, rejected) == [True, False, False, True]
    assert qpa(chosen, rejected) == 0.5


def test_constant_scorer_gets_zero_not_half():
    assert qpa([0.7] * 10, [0.7] * 10) == 0.0


def test_mca_overall_and_per_condition_count():
    chosen = [1.0, 1.0, 0.0, 1.0, 0.0, 2.0]
    rejected = [0.0, 2.0, 0.0, 0.5, 1.0, 1.0]  # W L T W L W
    k = [1, 1, 2, 2, 3, 3]
    out = mca(chosen, rejected, k)
    assert out["mca"] == 3 / 6
    assert out["mca_1cond"] == 1 / 2
    assert out["mca_2cond"] == 1 / 2
    assert out["mca_3cond"] == 1 / 2
    assert out["n_triplets"] == 6
    assert out["n_triplets_2cond"] == 2


def test_mca_reports_only_present_condition_counts():
    out = mca([1.0, 0.0], [0.0, 1.0], [2, 2])
    assert out["mca_2cond"] == 0.5
    assert "mca_1cond" not in out


@pytest.mark.parametrize(
    ("chosen", "rejected", "message"),
    [
        ([1.0], [0.5, 0.1], "aligned"),
        ([], [], "no triplets"),
        ([math.nan], [0.1], r"triplet\[0\]\['chosen'\] is nan"),
        ([0.1, 0.2], [0.1, math.inf], r"triplet\[1\]\['rejected'\] is inf"),
    ],
)
def test_qpa_bad_input(chosen, rejected, message):
    with pytest.raises(ValueError, match=message):
        qpa(chosen, rejected)


def test_mca_bad_condition_counts():
    with pytest.raises(ValueError, match=r"num_conditions\[1\] must be a positive int, got 0"):
        mca([1.0, 1.0], [0.0, 0.0], [1, 0])
    with pytest.raises(ValueError, match="one int per triplet"):
        mca([1.0, 1.0], [0.0, 0.0], [1])
