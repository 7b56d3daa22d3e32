"""Hard-negative intrusion (CoREB §4.2, Analysis V).

Among queries that have both a relevant document (relevance >= the relevance level) and a hard
negative (0 < relevance < level) in their top ``depth``, the intrusion rate is the fraction where
some hard negative ranks above the best-ranked relevant document. It says how often a retriever
is fooled by a near miss (same problem, failing or wrong-language code; a noise description)
rather than by an unrelated document.

Ranks follow trec_eval's order exactly: score descending, ties by document id descending, with
scores compared in single precision as trec_eval stores them (two scores that round to the same
float32 are a tie; :mod:`eval_metrics.trec_order`), so this rate sees the same ranking as every
other measure.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping

from eval_metrics.trec_order import trec_score


def _best(docs: Collection[str], ranking: Mapping[str, float]) -> tuple[float, str] | None:
    """The (score, doc_id) key of the best-ranked of ``docs`` present in ``ranking``."""
    keys = [(trec_score(ranking[d]), d) for d in docs if d in ranking]
    return max(keys) if keys else None


def _in_top(key: tuple[float, str], ranking: Mapping[str, float], depth: int) -> bool:
    """Whether the document with ``key`` ranks within the top ``depth`` of ``ranking``."""
    if len(ranking) <= depth:
        return True
    score, doc_id = key
    # Rounding to float32 is monotone, so the depth-th largest rounds to the depth-th largest.
    cutoff = trec_score(heapq.nlargest(depth, ranking.values())[-1])
    if score != cutoff:
        return score > cutoff
    above = 0
    for d, s in ranking.items():
        s = trec_score(s)
        above += s > score or (s == score and d > doc_id)
    return above < depth


def hard_negative_intrusion(
    ranking: Mapping[str, float],
    positives: Collection[str],
    hard_negatives: Collection[str],
    positive_in_top: bool,
    depth: int = 10,
) -> bool | None:
    """Whether a hard negative outranks the best positive of one query.

    Args:
        ranking: the query's ``{doc_id: score}`` after exclusions.
        positives: doc ids with relevance >= the relevance level.
        hard_negatives: doc ids with 0 < relevance < the relevance level.
        positive_in_top: whether a positive ranks within ``depth`` (trec_eval's ``success@depth``,
            already computed by the caller).
        depth: the top of the list considered (10 in the paper).

    Returns:
        ``True``/``False`` for an eligible query (a positive and a hard negative in the top
        ``depth``), ``None`` when the query is not eligible and does not count.
    """
    if not positive_in_top or not hard_negatives:
        return None
    negative = _best(hard_negatives, ranking)
    if negative is None:
        return None
    positive = _best(positives, ranking)
    # positive_in_top guarantees a positive is in the ranking.
    if negative > positive:  # ranks above a positive that is itself in the top: intrusion
        return True
    return False if _in_top(negative, ranking, depth) else None
