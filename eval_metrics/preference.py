"""Quality preference metrics of SynH-Rank: QPA and MCA (SynH-Rank §3; protocol §3).

Both are accuracies over triplets ``(instruction + query, preferred code p, other code n)``
scored by the same model:

.. math::

    \\mathrm{QPA} = \\frac{1}{|T|} \\sum_{(q, p, n) \\in T} \\mathbb{1}[s(q, p) > s(q, n)]

A tie is not a success: a model that scores everything equally has QPA 0, not 0.5.
MCA (multi-condition accuracy, MC-QualCode) is the same quantity over triplets whose
instruction asks for ``k`` quality conditions at once, reported overall and per ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval_metrics.checks import check_num_conditions, check_score


def _check_pairs(chosen: Sequence[float], rejected: Sequence[float]) -> None:
    for name, values in (("chosen_score", chosen), ("rejected_score", rejected)):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"{name} must be a sequence of floats, got {type(values).__name__}")
    if len(chosen) != len(rejected):
        raise ValueError(
            f"chosen_score has {len(chosen)} values but rejected_score has {len(rejected)}: "
            "they must be aligned, one pair per triplet"
        )
    if not chosen:
        raise ValueError("no triplets: chosen_score and rejected_score are empty")
    for i, (c, r) in enumerate(zip(chosen, rejected, strict=True)):
        check_score(c, i, "chosen", what="triplet")
        check_score(r, i, "rejected", what="triplet")


def preference_wins(chosen: Sequence[float], rejected: Sequence[float]) -> list[bool]:
    """Per triplet, whether the preferred code scored strictly higher (ties lose)."""
    _check_pairs(chosen, rejected)
    return [c > r for c, r in zip(chosen, rejected, strict=True)]


def qpa(chosen: Sequence[float], rejected: Sequence[float]) -> float:
    """Quality preference accuracy: the fraction of triplets where ``chosen > rejected``.

    Args:
        chosen: the model's score of the preferred (higher-quality) code, one per triplet.
        rejected: the score of the other code of the same triplet.

    References:
        SynH-Rank paper §3 (QualCode).
    """
    wins = preference_wins(chosen, rejected)
    return sum(wins) / len(wins)


def mca(
    chosen: Sequence[float], rejected: Sequence[float], num_conditions: Sequence[int]
) -> dict[str, float | int]:
    """Multi-condition accuracy, overall and per number of requested conditions.

    Returns:
        ``{"mca": ..., "mca_1cond": ..., "mca_2cond": ..., "n_triplets": ...,
        "n_triplets_1cond": ...}`` with one ``mca_<k>cond`` per condition count present.

    References:
        SynH-Rank paper §3 (MC-QualCode).
    """
    wins = preference_wins(chosen, rejected)
    if isinstance(num_conditions, (str, bytes)) or len(num_conditions) != len(wins):
        raise ValueError(
            f"num_conditions must hold one int per triplet ({len(wins)}), "
            f"got {len(num_conditions) if not isinstance(num_conditions, str) else 'a str'}"
        )
    by_k: dict[int, list[bool]] = {}
    for i, (k, win) in enumerate(zip(num_conditions, wins, strict=True)):
        by_k.setdefault(check_num_conditions(k, i), []).append(win)
    out: dict[str, float | int] = {"mca": sum(wins) / len(wins), "n_triplets": len(wins)}
    for k in sorted(by_k):
        out[f"mca_{k}cond"] = sum(by_k[k]) / len(by_k[k])
        out[f"n_triplets_{k}cond"] = len(by_k[k])
    return out
