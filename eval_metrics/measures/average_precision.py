"""Mean average precision cut at k (trec_eval ``map_cut``).

.. math::

    \\mathrm{AP@k} = \\frac{1}{R} \\sum_{i=1}^{k} \\mathrm{P@i} \\cdot \\mathrm{rel}_i

where ``rel_i`` is 1 when the document at rank ``i`` has relevance >= the relevance level and
``R`` is the number of such documents in the qrels (not ``min(R, k)``: trec_eval's convention).

References:
    Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR 2000; trec_eval.
"""

from __future__ import annotations

from eval_metrics.measures.base import Measure

MAP = Measure(name="map", trec_family="map_cut", default_k=(10, 100))
