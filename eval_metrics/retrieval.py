"""Graded retrieval evaluation exactly as CoREB defines it, with pytrec_eval as the engine.

The protocol (CoREB §4.1, Appendix A.6; protocol §2):

* binary measures (Recall, MAP, P, MRR) count only documents with relevance >= ``relevance_level``
  (2) as relevant;
* nDCG uses the raw grades as linear gains after zeroing every grade below the relevance level,
  so hard negatives (relevance 1) earn nothing but still occupy ranks (pytrec_eval's
  ``relevance_level`` does not affect nDCG, hence the zeroed copy of the qrels);
* per-query exclusions (the code-to-code anchor) are removed from that query's ranked list before
  any measure; the caller's run is never mutated;
* queries without any relevant document (c2t_match negative pairs) follow an explicit policy:
  ``"zero"`` (default: score 0 and count in the mean, as the official runner does and as the
  published numbers were computed) or ``"exclude"`` (leave them out of every mean);
* ties are ordered as trec_eval orders them (score descending, then document id descending) for
  every measure, MRR included.

One pytrec_eval call computes every measure: with the sub-level grades zeroed, the binary
measures at ``relevance_level`` see the same relevant set as on the raw qrels, so the graded and
binary measures can share one evaluator.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pytrec_eval

from eval_metrics.checks import (
    MAX_CUTOFF,
    Qrels,
    Run,
    check_doc_ids,
    check_qrels,
    check_relevance_level,
    check_run,
    listed,
)
from eval_metrics.intrusion import hard_negative_intrusion
from eval_metrics.measures import DEFAULT_K_VALUES, MEASURES

logger = logging.getLogger(__name__)

NoPositivePolicy = Literal["zero", "exclude"]
NO_POSITIVE_POLICIES: tuple[str, ...] = ("zero", "exclude")
INTRUSION_DEPTH = 10
INTRUSION_KEY = "hard_negative_intrusion_rate"


@dataclass
class RetrievalEvaluation:
    """The outcome of :func:`evaluate_retrieval`.

    Attributes:
        per_query: ``{query_id: {metric_key: value}}`` for every query that counts in the means
            (``ndcg_at_10``, ``recall_at_100``, ...).
        intrusion: ``{query_id: bool}`` for the queries eligible for the hard-negative intrusion
            rate (a positive and a hard negative in the top 10).
        metric_keys: the metric keys, in report order.
        no_positive_policy: how queries without a relevant document were treated.
        relevance_level: the grade from which a document counts as relevant.
        queries_without_positive: queries whose qrels hold no document at the relevance level.
        queries_missing_from_run: judged queries the run does not rank; they score 0.
    """

    per_query: dict[str, dict[str, float]]
    intrusion: dict[str, bool]
    metric_keys: tuple[str, ...]
    no_positive_policy: str
    relevance_level: int
    queries_without_positive: tuple[str, ...] = field(default_factory=tuple)
    queries_missing_from_run: tuple[str, ...] = field(default_factory=tuple)

    @property
    def n_queries(self) -> int:
        """The number of queries behind every mean."""
        return len(self.per_query)

    def mean(self) -> dict[str, float]:
        """Each metric averaged over the counted queries (0.0 when none counts)."""
        n = self.n_queries
        values = list(self.per_query.values())
        return {k: (math.fsum(v[k] for v in values) / n if n else 0.0) for k in self.metric_keys}

    @property
    def intrusion_rate(self) -> float | None:
        """Hard-negative intrusion rate, ``None`` when no query is eligible."""
        if not self.intrusion:
            return None
        return sum(self.intrusion.values()) / len(self.intrusion)

    def summary(self) -> dict[str, object]:
        """A flat report: the means, the intrusion rate, the counts and the policy."""
        out: dict[str, object] = dict(self.mean())
        out[INTRUSION_KEY] = self.intrusion_rate
        out["n_intrusion_eligible"] = len(self.intrusion)
        out["n_queries"] = self.n_queries
        out["n_queries_without_positive"] = len(self.queries_without_positive)
        out["n_queries_missing_from_run"] = len(self.queries_missing_from_run)
        out["no_positive_policy"] = self.no_positive_policy
        out["relevance_level"] = self.relevance_level
        return out


def resolve_k_values(
    k_values: Mapping[str, Iterable[int]] | Iterable[int] | None,
) -> dict[str, tuple[int, ...]]:
    """Normalise the ``k_values`` argument to ``{measure_name: sorted cutoffs}``.

    ``None`` gives the paper's defaults; a sequence applies the same cutoffs to every measure; a
    mapping names the measures to compute and their cutoffs.
    """
    if k_values is None:
        return dict(DEFAULT_K_VALUES)
    if isinstance(k_values, Mapping):
        unknown = [name for name in k_values if name not in MEASURES]
        if unknown:
            raise ValueError(
                f"k_values names unknown measures {listed(unknown)}; "
                f"known measures are {', '.join(MEASURES)}"
            )
        requested = {name: k_values[name] for name in MEASURES if name in k_values}
    else:
        ks = list(k_values)
        requested = {name: ks for name in MEASURES}
    resolved = {}
    for name, ks in requested.items():
        ks = list(ks) if not isinstance(ks, (int, str)) else [ks]
        bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, int) or k < 1]
        if bad or not ks:
            raise ValueError(
                f"k_values for {name!r} must be a non-empty list of positive integers, got {ks!r}"
            )
        if max(ks) > MAX_CUTOFF:
            raise ValueError(
                f"k_values for {name!r} must be at most {MAX_CUTOFF} (trec_eval holds cutoffs "
                f"as C ints), got {max(ks)}"
            )
        resolved[name] = tuple(sorted(set(ks)))
    if not resolved:
        raise ValueError("k_values selects no measure")
    return resolved


def apply_exclusions(run: Run, exclude: Mapping[str, Iterable[str]] | None, qrels: Qrels) -> Run:
    """A view of ``run`` with each query's excluded documents removed: the run as it is scored.

    Only the queries that lose a document are copied; the caller's run is not modified.
    """
    if not exclude:
        return run
    if not isinstance(exclude, Mapping):
        raise TypeError(
            f"exclude must be a mapping {{query_id: [doc_id, ...]}}, got {type(exclude).__name__}"
        )
    unknown = [q for q in exclude if q not in qrels]
    if unknown:
        raise ValueError(
            f"exclude names {len(unknown)} queries absent from the qrels: {listed(unknown)}"
        )
    filtered = dict(run)
    for query_id, docs in exclude.items():
        if isinstance(docs, str) or not isinstance(docs, Iterable):
            raise TypeError(
                f"exclude[{query_id!r}] must be a list of doc ids, got {docs!r} "
                f"(wrap a single id in a list: [{docs!r}])"
            )
        drop = [d for d in docs if query_id in run and d in run[query_id]]
        if drop:
            kept = dict(run[query_id])  # a C-level copy, then pop: cheaper than filtering
            for doc_id in drop:
                kept.pop(doc_id, None)
            filtered[query_id] = kept
    return filtered


def _zero_below_level(
    qrels: Qrels, relevance_level: int
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """The qrels nDCG sees (grades below the level zeroed, documents kept) restricted to the
    queries that have a positive, and the queries that have none.

    pytrec_eval must never see a query with empty qrels (it corrupts the scores of later
    queries), hence the restriction.
    """
    graded: dict[str, dict[str, int]] = {}
    without_positive: list[str] = []
    for query_id, docs in qrels.items():
        if any(rel >= relevance_level for rel in docs.values()):
            graded[query_id] = {d: (r if r >= relevance_level else 0) for d, r in docs.items()}
        else:
            without_positive.append(query_id)
    return graded, without_positive


def _trec_eval(
    graded: Mapping[str, Mapping[str, int]],
    ranked: Run,
    ks: Mapping[str, Sequence[int]],
    relevance_level: int,
) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query output for every measure in ``ks`` and the intrusion depth's
    ``success``, on the ranked queries of ``graded``, in one call."""
    cutoffs: dict[str, set[int]] = {}
    for name, measure_ks in ks.items():
        measure = MEASURES[name]
        cutoffs.setdefault(measure.trec_family, set()).update(measure.trec_cutoffs(measure_ks))
    cutoffs.setdefault("success", set()).add(INTRUSION_DEPTH)
    trec_measures = {f"{fam}." + ",".join(map(str, sorted(c))) for fam, c in cutoffs.items()}

    scored_run = {q: ranked[q] for q in graded if q in ranked}
    if not scored_run:
        return {}
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: graded[q] for q in scored_run}, trec_measures, relevance_level=relevance_level
    )
    try:
        return evaluator.evaluate(scored_run)
    except TypeError:
        check_doc_ids(scored_run)
        raise


def _intrusion(
    ranking: Mapping[str, float],
    docs: Mapping[str, int],
    trec_scores: Mapping[str, float],
    relevance_level: int,
) -> bool | None:
    """The hard-negative intrusion verdict of one scored query (``None``: not eligible)."""
    hard = [d for d, r in docs.items() if 0 < r < relevance_level]
    if not hard:
        return None
    return hard_negative_intrusion(
        ranking,
        positives=[d for d, r in docs.items() if r >= relevance_level],
        hard_negatives=hard,
        positive_in_top=trec_scores[f"success_{INTRUSION_DEPTH}"] > 0.0,
        depth=INTRUSION_DEPTH,
    )


# over 80 lines only through its docstring, which documents every argument
def evaluate_retrieval(
    qrels: Qrels,
    run: Run,
    *,
    k_values: Mapping[str, Sequence[int]] | Sequence[int] | None = None,
    exclude: Mapping[str, Iterable[str]] | None = None,
    no_positive_policy: NoPositivePolicy = "zero",
    relevance_level: int = 2,
    checked: bool = False,
) -> RetrievalEvaluation:
    """Score a run against graded qrels under the CoREB protocol.

    Args:
        qrels: ``{query_id: {doc_id: relevance}}``, integer grades in 0..65535; unjudged
            documents are easy negatives (grade 0).
        run: ``{query_id: {doc_id: score}}``, finite scores, higher is better. Every run query
            must be judged in ``qrels``; judged queries the run does not rank score 0.
        k_values: cutoffs, either one list for every measure or ``{measure: [k, ...]}`` naming
            the measures to compute (``ndcg``, ``map``, ``recall``, ``mrr``, ``precision``).
            Default: nDCG@{1,3,5,10}, MAP@{10,100}, Recall@{1,3,5,10,100}, MRR@10, P@{1,3,5,10}.
        exclude: ``{query_id: [doc_id, ...]}`` removed from that query's ranking before scoring
            (the code-to-code anchor). The caller's run is not modified.
        no_positive_policy: ``"zero"`` scores queries without a document at the relevance level
            0 on every measure and counts them (official runner, published numbers); ``"exclude"``
            leaves them out of the means.
        relevance_level: the grade from which a document is relevant (2 in CoREB).
        checked: the caller built ``qrels`` and ``run`` itself from inputs it had already
            checked by the same rules (every grade by ``check_relevance``, every query's
            scores by ``check_query_scores``, numpy scores converted: the ``coreb_metric``
            module's row checks), so those passes are not repeated; the run's queries are
            still matched to the qrels. Leave it ``False`` for inputs you did not check.

    Returns:
        A :class:`RetrievalEvaluation` with per-query values, means and counts.

    Raises:
        ValueError: grades that are not integers in 0..65535 (pytrec_eval holds them as C ints
            and its memory grows with the largest), scores that are NaN, infinite or beyond
            single precision, empty inputs, run queries absent from the qrels, unknown measures
            or policies, a relevance level outside 1..65535.
        TypeError: inputs of the wrong shape, scores that are not real numbers (a ``str``, a
            ``bool``). numpy scores are accepted and converted (in a copy).
    """
    if no_positive_policy not in NO_POSITIVE_POLICIES:
        raise ValueError(
            f"no_positive_policy must be one of {NO_POSITIVE_POLICIES}, got {no_positive_policy!r}"
        )
    relevance_level = check_relevance_level(relevance_level)
    ks = resolve_k_values(k_values)
    if not checked:
        check_qrels(qrels)
    to_convert = check_run(run, qrels, scores_checked=checked)
    ranked = apply_exclusions(run, exclude, qrels)
    if to_convert:
        # numpy scores are refused by pytrec_eval: convert those queries, in a copy
        ranked = dict(ranked)
        for query_id in to_convert:
            ranked[query_id] = {d: float(s) for d, s in ranked[query_id].items()}

    graded, without_positive = _zero_below_level(qrels, relevance_level)
    missing = [q for q in graded if q not in ranked]
    trec = _trec_eval(graded, ranked, ks, relevance_level)

    columns = [(MEASURES[name], k) for name, measure_ks in ks.items() for k in measure_ks]
    metric_keys = tuple(m.key(k) for m, k in columns)
    per_query: dict[str, dict[str, float]] = {}
    intrusion: dict[str, bool] = {}
    zeros = dict.fromkeys(metric_keys, 0.0)
    for query_id in qrels:
        if query_id in trec:
            scores = trec[query_id]
            per_query[query_id] = {m.key(k): m.value(scores, k) for m, k in columns}
            verdict = _intrusion(ranked[query_id], qrels[query_id], scores, relevance_level)
            if verdict is not None:
                intrusion[query_id] = verdict
        elif query_id in graded or no_positive_policy == "zero":
            per_query[query_id] = dict(zeros)

    if missing:
        logger.warning(
            "%d judged queries are not in the run and score 0: %s", len(missing), listed(missing)
        )
    return RetrievalEvaluation(
        per_query=per_query,
        intrusion=intrusion,
        metric_keys=metric_keys,
        no_positive_policy=no_positive_policy,
        relevance_level=relevance_level,
        queries_without_positive=tuple(without_positive),
        queries_missing_from_run=tuple(missing),
    )
