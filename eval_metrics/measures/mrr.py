"""Mean reciprocal rank at k.

.. math::

    \\mathrm{RR@k} = \\begin{cases} 1 / r & r \\le k \\\\ 0 & \\text{otherwise} \\end{cases}

where ``r`` is the rank of the first document with relevance >= the relevance level.

trec_eval has no cutoff version of ``recip_rank``. Rather than re-sorting the run in Python
(which is how the official CoREB runner does it, with Python's stable sort, so its MRR can see
another order of tied documents than its own nDCG), RR@k is read off trec_eval's ``success@i``
for i = 1..k: ``r`` is the smallest ``i`` with ``success@i = 1``. Every measure thereby sees the
same trec_eval ranking, ties included.

References:
    Voorhees, "The TREC-8 question answering track report", TREC 1999.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from eval_metrics.measures.base import Measure


class _ReciprocalRank(Measure):
    def trec_cutoffs(self, k_values: Iterable[int]) -> set[int]:
        return set(range(1, max(k_values) + 1))

    def value(self, trec_scores: Mapping[str, float], k: int) -> float:
        for i in range(1, k + 1):
            if trec_scores[f"success_{i}"] > 0.0:
                return 1.0 / i
        return 0.0


MRR = _ReciprocalRank(name="mrr", trec_family="success", default_k=(10,))
