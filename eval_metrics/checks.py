"""Input checks shared by the scoring functions and the ``evaluate`` module (public: the
module is loaded from a copy outside this package and checks each batch with them).

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
# The largest relevance grade accepted. pytrec_eval holds grades as C ints, so from 2**31 on
# they wrap (2**32 + 1 became 1 and a relevant document scored nDCG 0.0) or crash the process;
# and trec_eval allocates and clears one 8-byte counter per grade level up to each query's
# largest grade (form_res_rels.c), so a grade of 2**31 - 1 cost 16 GiB and a minute per query.
# 65535 bounds that at 512 KiB and leaves graded schemes far beyond CoREB's 0/1/2 room.
MAX_RELEVANCE = 65_535
# Cutoffs are C ints in trec_eval's measure parameters; beyond 2**63 - 1 it clamps them and the
# result keys no longer name the cutoff asked for.
MAX_CUTOFF = 2**31 - 1


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
    if value > MAX_RELEVANCE:
        raise ValueError(relevance_out_of_range(query_id, doc_id, _short_int(value)))
    return int(value)


def relevance_out_of_range(query_id: object, doc_id: object, shown: str) -> str:
    """The message for a grade above :data:`MAX_RELEVANCE` (``shown`` renders the grade)."""
    return (
        f"qrels[{query_id!r}][{doc_id!r}] is {shown}: relevance grades must be at most "
        f"{MAX_RELEVANCE} (pytrec_eval holds grades as C ints and its memory grows with the "
        "largest grade); map the grades to a small scale such as 0, 1, 2"
    )


def _short_int(value: int) -> str:
    """An integer for a message: in full when short, else its number of digits (printing a
    5,000-digit integer would hit Python's digit limit and flood the message)."""
    digits = len(str(abs(value))) if value.bit_length() < 10_000 else None
    if digits is not None and digits <= 30:
        return str(value)
    return f"a {digits}-digit integer" if digits else f"an integer of {value.bit_length()} bits"


def check_relevance_level(value: object) -> int:
    """The grade from which a document is relevant: an int in ``[1, MAX_RELEVANCE]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"relevance_level must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"relevance_level must be >= 1, got {value}")
    if value > MAX_RELEVANCE:
        raise ValueError(
            f"relevance_level must be at most {MAX_RELEVANCE}, got {_short_int(value)}: no grade "
            "can reach a higher level"
        )
    return int(value)


def check_num_conditions(value: object, index: int) -> int:
    """The number of quality conditions of an MC-QualCode triplet: a positive int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(
            f"num_conditions[{index}] must be a positive int, got {value!r} of type "
            f"{type(value).__name__}: it counts the quality conditions the instruction asks for"
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
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(
            f"{what}[{query_id!r}][{doc_id!r}] is an integer too large for a float "
            f"({value.bit_length()} bits); rescale the scores"
        ) from None
    if not math.isfinite(value):
        raise ValueError(
            f"{what}[{query_id!r}][{doc_id!r}] is {value}: scores must be finite "
            "(replace NaN/inf before evaluating, e.g. by the lowest score of the query)"
        )
    return value


def check_ranking_score(
    value: object, query_id: object, doc_id: object, what: str = "run"
) -> float:
    """A finite score that trec_eval can hold in single precision without overflowing."""
    value = check_score(value, query_id, doc_id, what)
    if abs(value) > FLOAT32_MAX:
        raise ValueError(
            f"{what}[{query_id!r}][{doc_id!r}] is {value}: trec_eval ranks scores in single "
            f"precision, where |score| > {FLOAT32_MAX:.4g} overflows to inf and ties; "
            "rescale the scores of this run"
        )
    return value


# Score types pytrec_eval reads as they are; compared by exact type, so a bool is not an int.
_PLAIN_SCORES = frozenset((float, int))


def check_query_scores(query_id: object, docs: Mapping[str, object], what: str = "run") -> bool:
    """Check one query's ``{doc_id: score}``: finite reals within trec_eval's single precision.

    Returns ``True`` when every score is a Python ``float`` or ``int`` (what pytrec_eval reads),
    ``False`` when some are other real numbers (numpy scalars) that must be converted first.
    Booleans and strings are refused: ``True`` is not a score of 1.0.
    """
    if not docs:
        return True
    values = docs.values()
    plain = set(map(type, values)) <= _PLAIN_SCORES
    if plain:
        # Fast path, one C-level pass: the Euclidean norm is NaN or inf when a score is, and
        # bounds every |score| from above (hypot scales, so it cannot overflow before that);
        # 8x cheaper than sum + max + min over a 1,000-score query. The slow path below names
        # the culprit (and settles the rare norm above the bound with every score below it).
        try:
            if math.hypot(*values) <= FLOAT32_MAX:
                return True
        except OverflowError:  # an int too large for a float
            pass
    for doc_id, score in docs.items():
        check_ranking_score(score, query_id, doc_id, what)
    return plain


def check_run(run: Run, qrels: Qrels, *, scores_checked: bool = False) -> list[str]:
    """Check the shape and scores of ``{query_id: {doc_id: float}}`` against ``qrels``.

    Returns the queries whose scores are real numbers of another type than ``float``/``int``
    (numpy scalars): pytrec_eval refuses those, so the caller converts them.

    ``scores_checked``: the caller built the run itself and already passed every query's
    scores through :func:`check_query_scores`, converting any that were not plain (the
    ``coreb_metric`` module's row checks); only the shape and the queries are checked then.
    """
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
    to_convert: list[str] = []
    if scores_checked:
        return to_convert
    for query_id, docs in run.items():
        if not isinstance(docs, Mapping):
            raise TypeError(
                f"run[{query_id!r}] must be a mapping {{doc_id: score}}, got {type(docs).__name__}"
            )
        if not check_query_scores(query_id, docs):
            to_convert.append(query_id)
    return to_convert


def check_doc_ids(run: Run) -> None:
    """Find the non-str doc id that made pytrec_eval refuse a run, and name it."""
    for query_id, docs in run.items():
        for doc_id in docs:
            if not isinstance(doc_id, str):
                raise TypeError(f"run[{query_id!r}] has a non-str doc id {doc_id!r}")
