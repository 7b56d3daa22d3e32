"""Precision at k (trec_eval ``P``).

.. math::

    \\mathrm{P@k} = \\frac{|\\{\\text{relevant documents in the top } k\\}|}{k}

The denominator is ``k`` even when fewer than ``k`` documents were retrieved (trec_eval).

References:
    trec_eval.
"""

from __future__ import annotations

from eval_metrics.measures.base import Measure

PRECISION = Measure(name="precision", trec_family="P", default_k=(1, 3, 5, 10))
