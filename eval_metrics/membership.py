"""Whether a run read from a file belongs to the subtask it claims: its queries are the
subtask's, its documents the subtask's corpus's, and no query ranks more than the depth the
results file says each kept.

Scoring alone cannot catch a foreign id: ``trec_eval`` ignores a query absent from the qrels
and counts a document absent from the corpus as a non-relevant hit, so a run made on another
build (or edited) scores without complaint. The leaderboard's validator and ``coreb submit
mteb`` both check the runs they are handed with :func:`check_run_membership`.
"""

from __future__ import annotations

from collections.abc import Container, Mapping


def check_run_membership(
    where: str,
    run: Mapping[str, Mapping[str, float]],
    queries: Container[str],
    corpus: Container[str],
    corpus_name: str,
    top_k: int | None = None,
) -> None:
    """``ValueError`` naming ``where`` (the run file) and the first query of ``run`` that is
    not in ``queries``, ranks more than ``top_k`` documents, or ranks a document not in
    ``corpus`` (named ``corpus_name``)."""
    for qid, docs in run.items():
        if qid not in queries:
            raise ValueError(f"{where}: query {qid!r} is not a query of this subtask")
        if top_k is not None and len(docs) > top_k:
            raise ValueError(
                f"{where}: query {qid!r} ranks {len(docs)} documents, more than the {top_k} the "
                "results file says each query kept (top_k, or rerank_top_k for a reranked run)"
            )
        stray = next((d for d in docs if d not in corpus), None)
        if stray is not None:
            raise ValueError(
                f"{where}: query {qid!r} ranks {stray!r}, which is not in {corpus_name}, the "
                "corpus this subtask ranks"
            )


__all__ = ["check_run_membership"]
