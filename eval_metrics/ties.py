"""Best-positive ties: how often a ranking is decided by document ids rather than by the model.

trec_eval (and so every CoREB measure) orders documents by score descending and breaks ties by
document id descending (:mod:`eval_metrics.trec_order`). When a query's best-ranked relevant
document has exactly the score of a non-relevant one, which of the two comes first -- and so the
query's nDCG, MRR and hard-negative intrusion -- is decided by their ids. A lexical retriever
that cannot tell a solution from its operator-flip mutant ties them on every such query; with
ids assigned in a meaningful order (a mutant right after its source) the tie always falls the
same way. This figure says how much of a subtask is in that situation.

Definition, for one query ``q`` with relevance level ``L`` (2 in CoREB):

* ``R_q`` is the query's ranking after its exclusions are removed (the code-to-code anchor does
  not count);
* ``P_q = {d in R_q : rel(d) >= L}`` are its retrieved positives, ``N_q = R_q \\ P_q`` its
  retrieved non-relevant documents (hard negatives and unjudged documents alike);
* scores are compared as trec_eval holds them, in single precision: ``s(d)`` is the score
  rounded to float32;
* ``q`` is **eligible** when ``P_q`` is non-empty, and **tied** when some ``n in N_q`` has
  ``s(n) == max_{p in P_q} s(p)``.

The positive-tie share of a set of queries is ``#tied / #eligible`` (``None`` with no eligible
query). Queries without a retrieved positive are not eligible: no tie can decide where their
first positive lands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from eval_metrics.checks import Qrels, Run, check_qrels, check_relevance_level, check_run
from eval_metrics.retrieval import apply_exclusions


@dataclass(frozen=True)
class PositiveTies:
    """The outcome of :func:`positive_ties`.

    Attributes:
        tied: ``{query_id: bool}`` for every eligible query (one with a retrieved positive):
            whether its best positive ties with a non-relevant document.
    """

    tied: dict[str, bool]

    @property
    def n_eligible(self) -> int:
        """Queries with at least one retrieved positive."""
        return len(self.tied)

    @property
    def n_tied(self) -> int:
        """Eligible queries whose best positive ties with a non-relevant document."""
        return sum(self.tied.values())

    @property
    def share(self) -> float | None:
        """``n_tied / n_eligible``, ``None`` when no query is eligible."""
        return self.n_tied / self.n_eligible if self.tied else None


def positive_ties(
    qrels: Qrels,
    run: Run,
    *,
    exclude: Mapping[str, Iterable[str]] | None = None,
    relevance_level: int = 2,
) -> PositiveTies:
    """Per query, whether its best positive is tied with a non-relevant document.

    Args:
        qrels: ``{query_id: {doc_id: relevance}}`` as for :func:`eval_metrics.evaluate_retrieval`.
        run: ``{query_id: {doc_id: score}}``; every run query must be judged.
        exclude: ``{query_id: [doc_id, ...]}`` removed from that query's ranking first (the
            code-to-code anchor); an excluded document never makes a tie.
        relevance_level: the grade from which a document is relevant (2 in CoREB).

    Returns:
        A :class:`PositiveTies`; its ``share`` is the figure reported per subtask.

    Example:
        >>> ties = positive_ties({"q": {"p": 2, "h": 1}}, {"q": {"p": 0.5, "h": 0.5}})
        >>> ties.tied, ties.share
        ({'q': True}, 1.0)
    """
    relevance_level = check_relevance_level(relevance_level)
    check_qrels(qrels)
    check_run(run, qrels)
    ranked = apply_exclusions(run, exclude, qrels)
    tied: dict[str, bool] = {}
    for query_id, ranking in ranked.items():
        judged = qrels[query_id]
        retrieved = [ranking[d] for d, r in judged.items() if r >= relevance_level and d in ranking]
        if not retrieved:
            continue
        # trec_eval compares scores in single precision; rounding to float32 is monotone, so
        # the best positive's rounded score is the rounded best score
        best = np.float32(max(retrieved))
        scores = np.asarray(list(ranking.values()), dtype=np.float32)
        ids = list(ranking)
        tied[query_id] = any(
            judged.get(ids[i], 0) < relevance_level for i in np.flatnonzero(scores == best)
        )
    return PositiveTies(tied)


__all__ = ["PositiveTies", "positive_ties"]
