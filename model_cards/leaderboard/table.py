"""The leaderboard table from validated submissions, its views and the significance column.

Every figure comes from the validator's recomputation (:class:`~model_cards.leaderboard.
validate.StageFigures`), never from a file's claim (the two are equal once validated):

* **Overall**: rank, model, type, parameters and size bucket, code-specialized, nDCG@10 per main
  task (T2C, C2T, C2C) and Overall, query-weighted as :func:`eval_metrics.aggregate` pools them
  (CoREB §4.1), the gap to the leader and its paired significance
  (:func:`eval_metrics.paired_test` on the per-query nDCG@10 of the same queries: ``≈`` when
  the gap could be noise, ``*`` when p < alpha);
* **per subtask**: nDCG@10 of every subtask;
* **per language**: nDCG@10 pooled over the subtasks of each language suffix (``any``,
  ``python``, ...; :data:`coreb_toolkit.vocabulary.SUBTASKS`): the target code's language for
  T2C, the query code's for C2T; subtasks without a language (c2c, c2t_match) are not in it;
* **first stage vs reranked**: each reranked entry beside its recomputed first stage, the delta
  per task and Overall (CoREB §4.3, Figure 8) and its paired significance.

All entries of one board share one dataset revision, release and protocol (policy, relevance
level, c2t canonical corpus view): results that ranked different corpora or counted queries
differently are never put in one table. Nor do two entries whose names read alike
(:func:`~model_cards.leaderboard.submission.name_key`: ``BM25``, ``bm25``, Cyrillic ``ВМ25``)
or whose runs rank alike (:func:`~model_cards.leaderboard.validate.runs_digest`: one system
under two names).

The board's ``notes`` are Markdown: every submitted string in them is escaped
(:func:`coreb_toolkit.untrusted.markdown_text`) where the note is composed. The tables hold
plain values (the page shows cells as text).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from coreb_toolkit.benchmark.published import (
    canonical_release,
    is_published_release,
    mteb_reference,
    published_results,
    published_source,
)
from coreb_toolkit.untrusted import markdown_text
from coreb_toolkit.vocabulary import (
    LANGUAGE_LABELS,
    LANGUAGE_SUFFIXES,
    MAIN_SCORE,
    MAIN_TASKS,
    SUBTASKS,
    classify_subtask,
    coreb_v1_mean,
    main_task_key,
)
from eval_metrics import paired_test
from eval_metrics.aggregate import OVERALL
from model_cards.leaderboard.submission import name_key
from model_cards.leaderboard.validate import StageFigures, ValidatedSubmission

ALPHA = 0.05
N_RESAMPLES = 10_000
SEED = 0
SIMILAR, SIGNIFICANT, LEADER = "≈", "*", "leader"
TASK_LABELS: tuple[str, ...] = tuple(t.label for t in MAIN_TASKS.values())
#: (label, upper bound in parameters): a model falls in the first bucket whose bound exceeds it
SIZE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("<100M", 1e8),
    ("100M-1B", 1e9),
    ("1B-10B", 1e10),
    (">=10B", math.inf),
)
UNKNOWN_SIZE = "unknown"
#: the protocol every entry of one board must share
PROTOCOL_FIELDS = ("release", "no_positive_policy", "relevance_level", "c2t_canonical_corpus")
DIGITS = 4


def size_bucket(parameters: int | None) -> str:
    """The :data:`SIZE_BUCKETS` label of a parameter count (``unknown`` for ``None``)."""
    if parameters is None:
        return UNKNOWN_SIZE
    return next(label for label, bound in SIZE_BUCKETS if parameters < bound)


def marker(p_value: float, alpha: float = ALPHA) -> str:
    """``"* p=0.0012"`` when the gap is significant at ``alpha``, else ``"≈ p=0.43"``."""
    return f"{SIGNIFICANT if p_value < alpha else SIMILAR} p={p_value:.2g}"


def _row(figures: StageFigures, level: str, name: str) -> dict[str, Any]:
    return next(r for r in figures.rows if r["level"] == level and r["name"] == name)


def language_of(subtask: str) -> str | None:
    """A subtask's language suffix (``any``, ``python``, ...) or ``None`` (c2c, c2t_match)."""
    meta = SUBTASKS.get(subtask)
    if meta is None:
        family = main_task_key(subtask)
        meta = classify_subtask(subtask, family) if family in MAIN_TASKS else None
    return meta.language if meta is not None else None


def _pooled(figures: StageFigures, subtasks: Sequence[str], metric: str) -> float | None:
    values = [
        q[metric] for s in subtasks for q in figures.evaluations[s].per_query.values()
    ]  # query-weighted, as aggregate pools main tasks
    return math.fsum(values) / len(values) if values else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


@dataclass
class Leaderboard:
    """The board: validated entries and the tables built from them (pandas DataFrames)."""

    entries: list[ValidatedSubmission]
    overall: Any  # pandas.DataFrame
    subtasks: Any
    languages: Any
    stages: Any
    dataset: dict[str, Any]
    protocol: dict[str, Any]
    alpha: float = ALPHA
    notes: list[str] = field(default_factory=list)

    @property
    def leader(self) -> ValidatedSubmission:
        return self.entries[0]


def _check_compatible(entries: Sequence[ValidatedSubmission]) -> dict[str, Any]:
    if not entries:
        raise ValueError("a leaderboard needs at least one validated submission")
    for e in entries:
        if not isinstance(e, ValidatedSubmission):
            raise TypeError(
                f"leaderboard entries must be ValidatedSubmission (validate_submission), got "
                f"{type(e).__name__}"
            )
    first = entries[0]
    names = [e.name for e in entries]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"two submissions name the same model: {', '.join(dupes)}")
    seen: dict[str, ValidatedSubmission] = {}
    for e in entries:
        other = seen.setdefault(name_key(e.name), e)
        if other is not e:
            raise ValueError(
                f"{e.submission.folder} names its model {e.name!r}, which reads like "
                f"{other.name!r} of {other.submission.folder} (same letters up to case, width "
                "or lookalike scripts): one board cannot tell them apart; rename one"
            )
    runs: dict[str, ValidatedSubmission] = {}
    for e in entries:
        other = runs.setdefault(e.runs_digest, e) if e.runs_digest else e
        if other is not e:
            raise ValueError(
                f"{e.submission.folder} ({e.name!r}) and {other.submission.folder} "
                f"({other.name!r}) submit runs that rank every query alike: one system under "
                "two names; submit it once"
            )
    for e in entries[1:]:
        if e.dataset.revision != first.dataset.revision:
            raise ValueError(
                f"{e.name} was validated against dataset revision {e.dataset.revision}, "
                f"{first.name} against {first.dataset.revision}: one board, one dataset"
            )
        for name in PROTOCOL_FIELDS:
            a, b = getattr(first.results, name), getattr(e.results, name)
            if a != b:
                raise ValueError(
                    f"{e.name} has {name}={b!r}, {first.name} {name}={a!r}: figures of "
                    "different protocols are never put in one table; evaluate both alike"
                )
    return {name: getattr(first.results, name) for name in PROTOCOL_FIELDS}


def _overall_frame(entries: list[ValidatedSubmission], alpha: float, n_resamples: int, seed: int):
    import pandas as pd

    leader = entries[0]
    lead_q = leader.figures.per_query(MAIN_SCORE)
    records = []
    for rank, e in enumerate(entries, start=1):
        meta = e.submission.meta
        overall = _row(e.figures, "overall", OVERALL)[MAIN_SCORE]
        tasks = {r["name"]: r[MAIN_SCORE] for r in e.figures.rows if r["level"] == "task"}
        if e is leader:
            gap, sig = 0.0, LEADER
        else:
            test = paired_test(lead_q, e.figures.per_query(MAIN_SCORE),
                               n_resamples=n_resamples, seed=seed)  # fmt: skip
            gap, sig = test.delta, marker(test.p_value, alpha)
        records.append({
            "Rank": rank,
            "Model": meta.name,
            "Overall": _round(overall),
            "vs leader": sig,
            "Gap to leader": _round(gap),
            **{t: _round(tasks.get(t)) for t in TASK_LABELS},
            COREB_V1: _round(coreb_v1_mean(e.mteb_scores)),
            "Type": meta.type,
            "Parameters (M)": None if meta.parameters is None else round(meta.parameters / 1e6, 1),
            "Size": size_bucket(meta.parameters),
            "Code-specialized": meta.code_specialized,
            "Queries": _row(e.figures, "overall", OVERALL)["n_queries"],
            "Source": RECOMPUTED,
        })  # fmt: skip
    records += _published_records(leader.results.release)
    records.sort(key=lambda r: -r["Overall"])
    return pd.DataFrame.from_records(records)


RECOMPUTED = "recomputed from the submitted runs"
COREB_V1 = "CoREB(v1) MTEB mean"
"""The column of MTEB's six-task mean (:func:`coreb_toolkit.vocabulary.coreb_v1_mean`)."""
SELF_REPORTED = (
    "Parameters, Size, Code-specialized and the untrained-reranker flag are self-reported by "
    "each submitter, as is Type where the results file does not tell it (a BM25 or lexical "
    "entry is checked to state no parameters); only the scores are recomputed."
)
NOT_TESTED = "not tested (reported)"


def _published_records(release: str) -> list[dict[str, Any]]:
    """The CoREB paper's own rows for ``release`` (none for a release it does not report):
    its printed figures, marked as reported, never recomputed, ranked or tested."""
    if not is_published_release(release):
        return []
    table = published_source()["tables"][canonical_release(release)]
    records = []
    for row in published_results(release):
        billions = row.parameters_billion
        parameters = None if billions is None else int(billions * 1e9)
        records.append({
            "Rank": None,
            "Model": row.model,
            "Overall": row.overall_ndcg_at_10,
            "vs leader": NOT_TESTED,
            "Gap to leader": None,
            **{t: row.score(t.lower()) for t in TASK_LABELS},
            COREB_V1: None,
            "Type": "reported by the paper",
            "Parameters (M)": None if parameters is None else round(parameters / 1e6, 1),
            "Size": size_bucket(parameters),
            "Code-specialized": None,
            "Queries": None,
            "Source": f"reported by the CoREB paper ({table}), not recomputed",
        })  # fmt: skip
    return records


def _subtask_frame(entries: list[ValidatedSubmission]):
    import pandas as pd

    names = list(entries[0].figures.evaluations)
    records = [
        {"Model": e.name, **{s: _round(_row(e.figures, "subtask", s)[MAIN_SCORE]) for s in names}}
        for e in entries
    ]
    return pd.DataFrame.from_records(records, columns=["Model", *names])


def _language_frame(entries: list[ValidatedSubmission]):
    import pandas as pd

    names = list(entries[0].figures.evaluations)
    by_lang = {lang: [s for s in names if language_of(s) == lang] for lang in LANGUAGE_SUFFIXES}
    by_lang = {k: v for k, v in by_lang.items() if v}
    columns = ["Model", *(LANGUAGE_LABELS[k] for k in by_lang)]
    records = [
        {
            "Model": e.name,
            **{
                LANGUAGE_LABELS[k]: _round(_pooled(e.figures, v, MAIN_SCORE))
                for k, v in by_lang.items()
            },
        }
        for e in entries
    ]
    return pd.DataFrame.from_records(records, columns=columns)


STAGE_COLUMNS = ("Model", "First stage", "Reranker", "First-stage Overall", "Reranked Overall",
                 "Δ Overall", *(f"Δ {t}" for t in TASK_LABELS), "Δ significance")  # fmt: skip


def _stage_frame(entries: list[ValidatedSubmission], alpha: float, n_resamples: int, seed: int):
    import pandas as pd

    records = []
    for e in entries:
        if e.first_stage is None:
            continue
        before = {(r["level"], r["name"]): r[MAIN_SCORE] for r in e.first_stage.rows}
        after = {(r["level"], r["name"]): r[MAIN_SCORE] for r in e.figures.rows}
        test = paired_test(e.first_stage.per_query(MAIN_SCORE), e.figures.per_query(MAIN_SCORE),
                           n_resamples=n_resamples, seed=seed)  # fmt: skip
        deltas = {
            f"Δ {t}": _round(after[("task", t)] - before[("task", t)])
            if ("task", t) in after else None
            for t in TASK_LABELS
        }  # fmt: skip
        records.append({
            "Model": e.name,
            "First stage": e.submission.meta.first_stage,
            "Reranker": e.submission.meta.reranker,
            "First-stage Overall": _round(before[("overall", OVERALL)]),
            "Reranked Overall": _round(after[("overall", OVERALL)]),
            "Δ Overall": _round(after[("overall", OVERALL)] - before[("overall", OVERALL)]),
            **deltas,
            "Δ significance": marker(test.p_value, alpha),
        })  # fmt: skip
    return pd.DataFrame.from_records(records, columns=list(STAGE_COLUMNS))


def build_leaderboard(
    entries: Sequence[ValidatedSubmission],
    *,
    alpha: float = ALPHA,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
) -> Leaderboard:
    """The board of validated submissions, ranked by Overall nDCG@10 (ties: by name).

    Args:
        entries: submissions accepted by :func:`~model_cards.leaderboard.validate.
            validate_submission`, all on one dataset revision, release and protocol.
        alpha: the significance level of the ``vs leader`` marker.
        n_resamples, seed: of :func:`eval_metrics.paired_test` (randomization test).
    """
    try:
        import pandas  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "the leaderboard table needs pandas: pip install 'coreb-toolkit[leaderboard]'"
        ) from err
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    protocol = _check_compatible(list(entries))
    ranked = sorted(
        entries,
        key=lambda e: (-_row(e.figures, "overall", OVERALL)[MAIN_SCORE], e.name),
    )
    first = ranked[0]
    notes = [
        f"Scores are nDCG@10 recomputed from the submitted runs; main tasks and Overall are "
        f"query-weighted. vs leader: paired randomization test on the per-query nDCG@10 of "
        f"the same {len(first.figures.per_query(MAIN_SCORE))} queries ({n_resamples} "
        f"resamples, seed {seed}); {SIGNIFICANT} p < {alpha}, {SIMILAR} otherwise.",
    ]
    notes.append(SELF_REPORTED)
    source, reference = mteb_reference()
    best = max(reference, key=lambda row: row.mean)
    notes.append(
        f"{COREB_V1}: the plain mean of MTEB's six CoREB(v1) main scores (three retrieval tasks, "
        "nDCG@10; three reranking tasks, MAP@10 over 17-candidate lists), as MTEB's "
        "leaderboard ranks them, recomputed from the submitted runs and mteb/ files; empty "
        "where a submission carries none. The reranking lists are this toolkit's (their easy "
        "negatives are not published by MTEB). For reference, mteb's PR reports "
        f"{len(reference)} models from {min(r.mean for r in reference):.4f} to "
        f"{best.mean:.4f} ({markdown_text(best.model)}) on its own lists: {source}."
    )
    if is_published_release(first.results.release):
        notes.append(
            "Rows of type 'reported by the paper' are the CoREB paper's printed figures for "
            f"{markdown_text(first.results.release)} (3 decimals), shown for orientation: they "
            "were not recomputed from runs, have no rank and take no part in the significance "
            "tests."
        )
    return Leaderboard(
        entries=ranked,
        overall=_overall_frame(ranked, alpha, n_resamples, seed),
        subtasks=_subtask_frame(ranked),
        languages=_language_frame(ranked),
        stages=_stage_frame(ranked, alpha, n_resamples, seed),
        dataset={"name": first.dataset.name, "revision": first.dataset.revision},
        protocol=protocol,
        alpha=alpha,
        notes=notes,
    )


__all__ = [
    "ALPHA",
    "LEADER",
    "SIGNIFICANT",
    "SIMILAR",
    "SIZE_BUCKETS",
    "STAGE_COLUMNS",
    "TASK_LABELS",
    "Leaderboard",
    "build_leaderboard",
    "language_of",
    "marker",
    "size_bucket",
]
