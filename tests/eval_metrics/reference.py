"""A deliberately naive, plain-Python reference for the CoREB retrieval protocol.

Written from the protocol's formulas only (no pytrec_eval, no code from ``eval_metrics``), for
the property tests to compare ``eval_metrics.retrieval.evaluate_retrieval`` against:

* ranking: score descending, ties broken by document id descending (trec_eval's order), scores
  compared in single precision as trec_eval stores them, after removing the query's excluded
  documents;
* relevant: grade >= ``relevance_level``; hard negative: 0 < grade < ``relevance_level``;
* nDCG@k: linear gains = grade, zeroed below the relevance level, discount 1/log2(rank + 1),
  IDCG from the zeroed grades of every judged document, 0 when IDCG is 0;
* MAP@k: sum of P@rank over relevant documents in the top k, divided by R (all relevant);
* Recall@k: relevant in the top k / R; P@k: relevant in the top k / k; MRR@k: 1 / rank of the
  first relevant document when it is within k, else 0;
* queries without a relevant document: every metric 0 (policy ``"zero"``) or left out
  (``"exclude"``); judged queries missing from the run rank nothing and score 0;
* hard-negative intrusion: eligible when a relevant document and a hard negative both rank in
  the top 10; intrusion when some hard negative ranks above the best-ranked relevant document.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping

DEFAULT_KS: dict[str, tuple[int, ...]] = {
    "ndcg": (1, 3, 5, 10),
    "map": (10, 100),
    "recall": (1, 3, 5, 10, 100),
    "mrr": (10,),
    "precision": (1, 3, 5, 10),
}
MEASURE_ORDER = ("ndcg", "map", "recall", "mrr", "precision")
INTRUSION_DEPTH = 10


def normalise_ks(k_values) -> dict[str, list[int]]:
    """``None`` -> the defaults; a list -> the same cutoffs for every measure; a dict as is."""
    if k_values is None:
        return {m: sorted(set(ks)) for m, ks in DEFAULT_KS.items()}
    if isinstance(k_values, Mapping):
        return {m: sorted(set(k_values[m])) for m in MEASURE_ORDER if m in k_values}
    return {m: sorted(set(k_values)) for m in MEASURE_ORDER}


def metric_keys(k_values) -> list[str]:
    return [f"{m}_at_{k}" for m, ks in normalise_ks(k_values).items() for k in ks]


def _as_c_float(score: float) -> float:
    """The score as a C ``float`` (IEEE single precision), the way trec_eval holds it."""
    return struct.unpack("f", struct.pack("f", score))[0]


def ranked_list(scores: Mapping[str, float], excluded: Iterable[str] = ()) -> list[str]:
    """Doc ids by score descending, ties by doc id descending, excluded docs removed."""
    drop = set(excluded)
    items = [(_as_c_float(s), d) for d, s in scores.items() if d not in drop]
    items.sort(reverse=True)  # (score, doc id) both descending
    return [d for _, d in items]


def _ndcg(ranking: list[str], gains: Mapping[str, int], k: int) -> float:
    dcg = 0.0
    for i, d in enumerate(ranking[:k]):
        dcg += gains.get(d, 0) / math.log2(i + 2)
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = 0.0
    for i, g in enumerate(ideal):
        idcg += g / math.log2(i + 2)
    return dcg / idcg if idcg > 0 else 0.0


def _average_precision(ranking: list[str], relevant: set[str], k: int) -> float:
    hits = 0
    total = 0.0
    for i, d in enumerate(ranking[:k]):
        if d in relevant:
            hits += 1
            total += hits / (i + 1)
    return total / len(relevant)


def _recall(ranking: list[str], relevant: set[str], k: int) -> float:
    return sum(1 for d in ranking[:k] if d in relevant) / len(relevant)


def _precision(ranking: list[str], relevant: set[str], k: int) -> float:
    return sum(1 for d in ranking[:k] if d in relevant) / k


def _reciprocal_rank(ranking: list[str], relevant: set[str], k: int) -> float:
    for i, d in enumerate(ranking[:k]):
        if d in relevant:
            return 1.0 / (i + 1)
    return 0.0


_FUNCS = {
    "map": _average_precision,
    "recall": _recall,
    "precision": _precision,
    "mrr": _reciprocal_rank,
}


def query_metrics(
    ranking: list[str], grades: Mapping[str, int], k_values=None, relevance_level: int = 2
) -> dict[str, float]:
    """Every metric for one query with at least one relevant document."""
    relevant = {d for d, g in grades.items() if g >= relevance_level}
    assert relevant, "query_metrics needs a relevant document"
    gains = {d: (g if g >= relevance_level else 0) for d, g in grades.items()}
    out: dict[str, float] = {}
    for measure, ks in normalise_ks(k_values).items():
        for k in ks:
            if measure == "ndcg":
                out[f"ndcg_at_{k}"] = _ndcg(ranking, gains, k)
            else:
                out[f"{measure}_at_{k}"] = _FUNCS[measure](ranking, relevant, k)
    return out


def intrusion_verdict(
    ranking: list[str], grades: Mapping[str, int], relevance_level: int = 2
) -> bool | None:
    """True/False for an eligible query, None when not eligible."""
    top = ranking[:INTRUSION_DEPTH]
    pos = [i for i, d in enumerate(top) if grades.get(d, 0) >= relevance_level]
    neg = [i for i, d in enumerate(top) if 0 < grades.get(d, 0) < relevance_level]
    if not pos or not neg:
        return None
    return min(neg) < min(pos)


def reference_evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    *,
    k_values=None,
    exclude: Mapping[str, Iterable[str]] | None = None,
    no_positive_policy: str = "zero",
    relevance_level: int = 2,
) -> tuple[dict[str, dict[str, float]], dict[str, bool]]:
    """``(per_query, intrusion)`` exactly as the protocol defines them."""
    exclude = exclude or {}
    keys = metric_keys(k_values)
    per_query: dict[str, dict[str, float]] = {}
    intrusion: dict[str, bool] = {}
    for qid, grades in qrels.items():
        has_positive = any(g >= relevance_level for g in grades.values())
        if not has_positive:
            if no_positive_policy == "zero":
                per_query[qid] = dict.fromkeys(keys, 0.0)
            continue
        ranking = ranked_list(run.get(qid, {}), exclude.get(qid, ()))
        per_query[qid] = query_metrics(ranking, grades, k_values, relevance_level)
        verdict = intrusion_verdict(ranking, grades, relevance_level)
        if verdict is not None:
            intrusion[qid] = verdict
    return per_query, intrusion


def reference_means(per_query: Mapping[str, Mapping[str, float]], keys: list[str]):
    n = len(per_query)
    return {k: (sum(v[k] for v in per_query.values()) / n if n else 0.0) for k in keys}
