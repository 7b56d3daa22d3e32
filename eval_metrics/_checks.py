"""Input checks shared by the scoring functions.

Every check raises ``ValueError`` (wrong value) or ``TypeError`` (wrong type) with a message that
names the query and document, what was expected and what came. Checks are written to be cheap on
the valid path (a run of 5,000 x 1,000 scores is checked in well under a tenth of a second) and
precise on the invalid one.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]

_MAX_LISTED = 5
# trec_eval holds scores as C floats: beyond this magnitude they all become +-inf and tie.
FLOAT32_MAX = 3.4028234663852886e38


def listed(ids: Iterable[object]) -> str:
    """A short, deterministic rendering of a set of ids for error messages."""
    ids = sorted(map(str, ids))
    shown = ", ".join(repr(i) for i in ids[:_MAX_LISTED])
    more = f" and {len(ids) - _MAX_LISTED} more" if len(ids) > _MAX_LISTED else ""
    return shown + more


def check_relevance(value: object, query_id: object, doc_id: object) -> int:
    """Return ``value`` as an int if it is a non-negative integer relevance grade."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"qrels[{query_id!r}][{doc_id!r}] must be a non-negative integer relevance grade "
            f"(CoREB uses 2 = relevant, 1 = hard negative), got {value!r} "
            f"of type {type(value).__name__}"
        )
    if value < 0:
        raise ValueError(
            f"qrels[{query_id!r}][{doc_id!r}] must be a non-negative integer relevance grade, "
            f"got {value}"
        )
    return int(value)


def check_qrels(qrels: Qrels) -> None:
    """Check the shape and grades of ``{query_id: {doc_id: int}}``."""
    if not isinstance(qrels, Mapping):
        raise TypeError(
            f"qrels must be a mapping {{query_id: {{doc_id: relevance}}}}, "
            f"got {type(qrels).__name__}"
        )
    if not qrels:
        raise ValueError("qrels are empty: there is nothing to evaluate against")
    for query_id, docs in qrels.items():
        if not isinstance(query_id, str):
            raise TypeError(f"qrels query ids must be str, got {query_id!r}")
        if not isinstance(docs, Mapping):
            raise TypeError(
                f"qrels[{query_id!r}] must be a mapping {{doc_id: relevance}}, "
                f"got {type(docs).__name__}"
            )
        for doc_id, rel in docs.items():
            if not isinstance(doc_id, str):
                raise TypeError(f"qrels[{query_id!r}] has a non-str doc id {doc_id!r}")
            check_relevance(rel, query_id, doc_id)


def check_score(value: object, query_id: object, doc_id: object, what: str = "run") -> float:
    """Return ``value`` as a float if it is a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{what}[{query_id!r}][{doc_id!r}] must be a finite real score, "
            f"got {value!r} of type {type(value).__name__}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(
            f"{what}[{query_id!r}][{doc_id!r}] is {value}: scores must be finite "
            "(replace NaN/inf before evaluating, e.g. by the lowest score of the query)"
        )
    return value


def check_ranking_score(value: object, query_id: object, doc_id: object) -> float:
    """A finite score that trec_eval can hold in single precision without overflowing."""
    value = check_score(value, query_id, doc_id)
    if abs(value) > FLOAT32_MAX:
        raise ValueError(
            f"run[{query_id!r}][{doc_id!r}] is {value}: trec_eval ranks scores in single "
            f"precision, where |score| > {FLOAT32_MAX:.4g} overflows to inf and ties; "
            "rescale the scores of this run"
        )
    return value


def check_run(run: Run, qrels: Qrels) -> None:
    """Check the shape and scores of ``{query_id: {doc_id: float}}`` against ``qrels``."""
    if not isinstance(run, Mapping):
        raise TypeError(
            f"run must be a mapping {{query_id: {{doc_id: score}}}}, got {type(run).__name__}"
        )
    if not run:
        raise ValueError("run is empty: it scores no query")
    unknown = [q for q in run if q not in qrels]
    if unknown:
        raise ValueError(
            f"{len(unknown)} run queries are absent from the qrels: {listed(unknown)}. "
            "Every ranked query needs judgments; evaluate the run against the qrels of the "
            "same subtask and release, or drop those queries from the run yourself"
        )
    for query_id, docs in run.items():
        if not isinstance(docs, Mapping):
            raise TypeError(
                f"run[{query_id!r}] must be a mapping {{doc_id: score}}, got {type(docs).__name__}"
            )
        if not docs:
            continue
        # Fast path: a NaN or inf anywhere makes the sum non-finite, a non-number raises, and
        # the extremes bound the magnitude; the slow path names the culprit.
        try:
            ok = (
                math.isfinite(sum(docs.values(), 0.0))
                and max(docs.values()) <= FLOAT32_MAX
                and min(docs.values()) >= -FLOAT32_MAX
            )
        except TypeError:
            ok = False
        if not ok:
            for doc_id, score in docs.items():
                check_ranking_score(score, query_id, doc_id)


def check_doc_ids(run: Run) -> None:
    """Find the non-str doc id that made pytrec_eval refuse a run, and name it."""
    for query_id, docs in run.items():
        for doc_id in docs:
            if not isinstance(doc_id, str):
                raise TypeError(f"run[{query_id!r}] has a non-str doc id {doc_id!r}")
