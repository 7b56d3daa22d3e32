"""The contract every retrieval measure implements."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Measure:
    """A rank-based retrieval measure computed through pytrec_eval.

    Attributes:
        name: key stem in results, e.g. ``"ndcg"`` gives ``ndcg_at_10``.
        trec_family: the trec_eval measure family whose cutoff values are the measure's values
            (``"ndcg_cut"`` gives ``ndcg_cut_10``).
        default_k: cutoffs reported when the caller does not ask for others (protocol §2).
    """

    name: str
    trec_family: str
    default_k: tuple[int, ...]

    def key(self, k: int) -> str:
        return f"{self.name}_at_{k}"

    def trec_cutoffs(self, k_values: Iterable[int]) -> set[int]:
        """Cutoffs of ``trec_family`` that pytrec_eval must compute for ``k_values``."""
        return set(k_values)

    def value(self, trec_scores: Mapping[str, float], k: int) -> float:
        """This measure at cutoff ``k`` for one query, read from pytrec_eval's output."""
        return trec_scores[f"{self.trec_family}_{k}"]
