"""Normalised discounted cumulative gain at k, graded (CoREB protocol §2).

.. math::

    \\mathrm{DCG@k} = \\sum_{i=1}^{k} \\frac{g_i}{\\log_2(i + 1)}, \\qquad
    \\mathrm{nDCG@k} = \\frac{\\mathrm{DCG@k}}{\\mathrm{IDCG@k}}

with linear gains ``g_i`` = the qrel relevance of the document at rank ``i`` (trec_eval's
``ndcg_cut``). Under CoREB's graded scheme documents below the relevance level (hard negatives,
relevance 1) get gain 0 but keep their rank; IDCG is computed from the gains after that zeroing.

References:
    Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", TOIS 2002.
    CoREB paper §4.1 and Appendix A.6.
"""

from __future__ import annotations

from eval_metrics.measures.base import Measure

NDCG = Measure(name="ndcg", trec_family="ndcg_cut", default_k=(1, 3, 5, 10))
