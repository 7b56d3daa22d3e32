"""trec_eval's ranking order, written once: score descending, ties broken by document id
descending (protocol §2).

trec_eval holds a score as a C ``float``, so two scores that round to the same float32 tie and
their ids decide. Every CoREB measure sees that order (pytrec_eval computes them); the first
stage's top-k handed to a reranker (``coreb_toolkit.benchmark.rerank.first_stage_top_k``) and
the hard-negative intrusion rate (:mod:`eval_metrics.intrusion`) follow it through this module.
A run file (:func:`eval_metrics.trec_io.write_run`) lists a query's documents in the same order
on the scores as given (``single_precision=False``), so its scores never rise down the file;
trec_eval reading it back ranks it alike, but for two scores apart only beyond float32 (a tie,
which their ids decide).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

import numpy as np


def trec_score(score: float) -> float:
    """``score`` as trec_eval holds it (C ``float``): rounded to single precision."""
    return float(np.float32(score))


def trec_order(
    ranking: Mapping[str, float], top_k: int | None = None, *, single_precision: bool = True
) -> list[str]:
    """The document ids of ``ranking`` (``{doc_id: score}``) best first, as trec_eval orders
    them: score descending, ties by document id descending.

    Args:
        ranking: one query's scores.
        top_k: only the first ``top_k`` ids (all of them when ``None``).
        single_precision: compare the scores as trec_eval holds them, rounded to float32 (two
            that round alike tie); ``False`` compares them as given (how a run file is written,
            so that its scores never rise down the file).

    Example:
        >>> trec_order({"a": 0.5, "b": 0.5, "c": 0.9})
        ['c', 'b', 'a']
        >>> near = {"b": 1.0, "a": 1.0 + 1e-12}  # one float32, two doubles
        >>> trec_order(near), trec_order(near, single_precision=False)
        (['b', 'a'], ['a', 'b'])
    """
    ids = list(ranking)
    if single_precision:
        # one vectorised cast instead of a numpy scalar per document
        scores = np.asarray([ranking[d] for d in ids], dtype=np.float32).tolist()
    else:
        scores = [ranking[d] for d in ids]
    keyed = zip(scores, ids, strict=True)
    if top_k is None:
        return [d for _, d in sorted(keyed, reverse=True)]
    return [d for _, d in heapq.nlargest(top_k, keyed)]


__all__ = ["trec_order", "trec_score"]
