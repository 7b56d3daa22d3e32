"""Recall at k (trec_eval ``recall``).

.. math::

    \\mathrm{Recall@k} = \\frac{|\\{\\text{relevant documents in the top } k\\}|}{R}

with relevant = relevance >= the relevance level and ``R`` their number in the qrels.

References:
    trec_eval; CoREB paper §4.1 (primary metric with nDCG@10).
"""

from __future__ import annotations

from eval_metrics.measures.base import Measure

RECALL = Measure(name="recall", trec_family="recall", default_k=(1, 3, 5, 10, 100))
