"""MTEB's retrieval scores, computed as MTEB computes them, over plain mappings.

MTEB's retrieval and reranking tasks (the CoREB ones among them) report ``ndcg_at_k``,
``map_at_k``, ``recall_at_k``, ``precision_at_k`` and ``mrr_at_k`` through pytrec_eval at its
default relevance level (any qrel score above 0 is relevant), averaged over every query of the
qrels. Used by ``coreb evaluate`` (MTEB's reranking lists) and ``coreb submit mteb``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

POSITIVE = 2
"""The relevance grade of a positive (a hard negative is 1); MTEB's CoREB qrels hold positives
only, with score 1."""

K_VALUES = (1, 3, 5, 10, 20, 100, 1000)
"""MTEB's retrieval cut-offs (``AbsTaskRetrieval.k_values``); a cut-off above the run's depth
(``top_k`` of the results) is not written."""


def _ranked(run: Mapping[str, float]) -> list[str]:
    # trec_eval's order (score, then doc id, both descending), as mteb's own MRR sorts
    return [d for d, _ in sorted(run.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def mteb_metrics(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    k_values: Sequence[int] = K_VALUES,
) -> dict[str, float]:
    """MTEB's retrieval scores (``ndcg_at_k``, ``map_at_k``, ``recall_at_k``,
    ``precision_at_k``, ``mrr_at_k``) of ``run`` against ``qrels``, with pytrec_eval.

    As MTEB computes them: any score above 0 is relevant (pytrec_eval's default relevance
    level), the mean is over every query of ``qrels`` (a query the run lacks scores 0), and MRR
    takes the first relevant document of the top k in trec_eval's order.
    """
    import pytrec_eval

    ks = ",".join(map(str, k_values))
    measures = {f"ndcg_cut.{ks}", f"map_cut.{ks}", f"recall.{ks}", f"P.{ks}"}
    per_query = pytrec_eval.RelevanceEvaluator(dict(qrels), measures).evaluate(dict(run))
    n = len(qrels)
    out: dict[str, float] = {}
    for ours, theirs in (("ndcg", "ndcg_cut"), ("map", "map_cut"), ("recall", "recall"),
                         ("precision", "P")):  # fmt: skip
        for k in k_values:
            total = sum(v[f"{theirs}_{k}"] for v in per_query.values())
            out[f"{ours}_at_{k}"] = total / n
    for k in k_values:
        total = 0.0
        for qid, judged in qrels.items():
            relevant = {d for d, r in judged.items() if r > 0}
            for rank, doc in enumerate(_ranked(run.get(qid, {}))[:k], 1):
                if doc in relevant:
                    total += 1.0 / rank
                    break
        out[f"mrr_at_{k}"] = total / n
    return out


def pool_positives(
    parts: Iterable[tuple[str, Mapping[str, Mapping[str, int]], Mapping[str, Mapping[str, float]]]],
    positive: int = POSITIVE,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], int]:
    """``(qrels, run, left out)`` of one MTEB task pooled from ``(subtask, graded qrels, run)``
    parts, as MTEB's CoREB datasets hold them: the qrels are each query's positives (grade
    ``positive`` and above) with score 1, a query without one is left out (and counted), and
    a query id in two parts is refused (pooling would merge two queries). The runs are taken as
    given: MTEB excludes nothing, so they must hold what MTEB ranks (the c2c anchor included).
    """
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    left_out = 0
    for subtask, graded, ranked in parts:
        for qid, judged in graded.items():
            positives = [d for d, grade in judged.items() if grade >= positive]
            if not positives:
                left_out += 1
                continue
            if qid in qrels:
                raise ValueError(
                    f"query id {qid!r} of {subtask} is in another subtask too; pooling them "
                    "would merge two queries"
                )
            qrels[qid] = dict.fromkeys(positives, 1)
            if qid in ranked:
                run[qid] = dict(ranked[qid])
    return qrels, run, left_out


__all__ = ["K_VALUES", "POSITIVE", "mteb_metrics", "pool_positives"]
