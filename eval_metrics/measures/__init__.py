"""Registry of retrieval measures.

One measure per file; adding a measure is one file plus one line in ``MEASURES``. Each measure
knows which pytrec_eval measures it needs for a set of cutoffs and how to read its value for one
query out of pytrec_eval's per-query dictionary, so that every measure is computed from one and
the same trec_eval ranking (score descending, ties broken by document id descending).
"""

from __future__ import annotations

from eval_metrics.measures.average_precision import MAP
from eval_metrics.measures.base import Measure
from eval_metrics.measures.mrr import MRR
from eval_metrics.measures.ndcg import NDCG
from eval_metrics.measures.precision import PRECISION
from eval_metrics.measures.recall import RECALL

MEASURES: dict[str, Measure] = {m.name: m for m in (NDCG, MAP, RECALL, MRR, PRECISION)}

DEFAULT_K_VALUES: dict[str, tuple[int, ...]] = {m.name: m.default_k for m in MEASURES.values()}

__all__ = ["DEFAULT_K_VALUES", "MEASURES", "Measure"]
