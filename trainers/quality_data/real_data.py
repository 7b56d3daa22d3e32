"""LLM-free SynH-Rank data: tasks and quality-labelled variants from real, judged submissions.

Without a generator strong enough for the paper's guideline-driven synthesis [SynH-Rank §4.1],
the hierarchical lists [SynH-Rank §4.2] can be made from CodeNet/PIE accepted submissions
(issue 16): every submission solves its problem (the judge accepted it), and its quality on a
dimension is read from the judge's figures (or sandbox medians) and the smell analyser, with
the rules of QualCode's pairs [SynH-Rank §3] (:mod:`coreb_toolkit.builders.qualcode.pairs`):

* **speed / memory**: high = the lowest CPU time (memory); lows = the submissions worse than
  the high by the margin (strictly: ``margin * high < low``,
  :func:`coreb_toolkit.quality.measure.margin_label`), most different first, up to ``n_low``.
* **maintainability**: high = a seeded random submission without smells (the same draw as
  QualCode's for the same seed); lows = those with smells, most smells first (then most
  distinct rules), up to ``n_low``.

One submission may carry claims in several dimensions; it then appears once per claim (a
:class:`~trainers.quality_data.records.Variant` per dimension and level). Build the data on
the training side of a :func:`~trainers.quality_data.split.problem_split` only, and exclude
those problems from the QualCode evaluation build.

Example::

    from coreb_toolkit.sources import codenet
    data = codenet.load(["../shared/data/codenet", "../shared/data/nofuneval"])
    drops = []
    tasks = real_tasks(data, split.train, drops=drops)
    variants = real_variants(data, [t.task_id for t in tasks], drops=drops)
    labelled, label_drops = label_real(variants, seed=0)
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from coreb_toolkit.builders.qualcode.data import Candidate, seeded_rng, usable_candidates
from coreb_toolkit.builders.qualcode.options import LABEL_SOURCES, QualcodeOptions
from coreb_toolkit.quality.measure import margin_label
from trainers.quality_data.records import Drop, SeedTask, Variant

logger = logging.getLogger(__name__)

FIGURE_DIMENSIONS: tuple[str, ...] = ("speed", "memory")


def _problem_ids(data: Any, problem_ids: Iterable[str] | None) -> list[str]:
    if problem_ids is None:
        return sorted(data.submissions)
    if isinstance(problem_ids, (str, bytes)):
        raise TypeError(
            f"problem_ids must be an iterable of ids, got the single string {problem_ids!r}: "
            f"pass [{problem_ids!r}]"
        )
    return sorted(set(problem_ids))


def _record(drops: list[Drop] | None, new: list[Drop], what: str) -> None:
    if drops is not None:
        drops.extend(new)
    elif new:
        logger.warning(
            "%s left out %d item(s): %s (pass drops=[] to keep them)",
            what,
            len(new),
            dict(Counter(d.reason for d in new)),
        )


def real_tasks(
    data: Any,
    problem_ids: Iterable[str] | None = None,
    *,
    drops: list[Drop] | None = None,
    english_only: bool = True,
) -> list[SeedTask]:
    """The seed tasks of CodeNet problems: statement, public tests and a reference.

    The reference is the fastest accepted submission by the judge's CPU time (ties: the lower
    submission id); ``None`` when no submission has a CPU time. As QualCode does, a problem
    whose statement is missing, or (``english_only``) exists only in Japanese, is left out.

    Args:
        data: a :class:`coreb_toolkit.sources.codenet.CodenetData` (``codenet.load(...)``).
        problem_ids: the problems to take (the training side of a problem split); ``None``
            takes every problem with submissions.
        drops: a list the problems left out are appended to, as ``Drop("select", reason,
            problem_id)``; without it they are only logged.
        english_only: leave out problems whose statement is only in Japanese.

    Returns:
        The tasks, sorted by problem id.
    """
    tasks, new = [], []
    for pid in _problem_ids(data, problem_ids):
        problem = data.problems.get(pid)
        subs = data.submissions.get(pid, [])
        statement = None if problem is None else problem.statement
        if problem is None and not subs:
            new.append(Drop("select", "problem not in the sources", pid))
            continue
        if statement is None or not statement.strip():
            new.append(Drop("select", "problem has no statement", pid))
            continue
        if english_only and problem.statement_language == "ja":
            new.append(Drop("select", "statement only in Japanese", pid))
            continue
        timed = [s for s in subs if s.cpu_time_ms is not None and s.code.strip()]
        best = min(timed, key=lambda s: (s.cpu_time_ms, s.submission_id)) if timed else None
        tasks.append(
            SeedTask(
                task_id=pid,
                statement=statement,
                tests=tuple(problem.tests),
                language=subs[0].language.lower() if subs else "python",
                reference=None if best is None else best.code,
                source="codenet",
            )
        )
    _record(drops, new, "real_tasks")
    return tasks


def real_variants(
    data: Any, problem_ids: Iterable[str] | None = None, *, drops: list[Drop] | None = None
) -> list[Variant]:
    """Every accepted submission of ``problem_ids`` as an unlabelled real variant.

    ``origin="real"``, ``source_id`` = the submission id, the judge's CPU time and memory;
    ``passed`` stays ``None`` (accepted by the judge, not re-run here). Empty code is left out
    as ``Drop("select", "empty code", submission_id, problem_id)``, a problem without
    submissions as ``"no accepted submission"``.

    Returns:
        The variants, by problem id, then submission id.
    """
    variants, new = [], []
    for pid in _problem_ids(data, problem_ids):
        subs = data.submissions.get(pid, [])
        if not subs:
            new.append(Drop("select", "no accepted submission", pid))
        for s in sorted(subs, key=lambda s: s.submission_id):
            if not s.code.strip():
                new.append(Drop("select", "empty code", s.submission_id, pid))
                continue
            variants.append(
                Variant(
                    task_id=pid,
                    code=s.code,
                    origin="real",
                    source_id=s.submission_id,
                    judge_cpu_time_ms=s.cpu_time_ms,
                    judge_memory_kb=s.memory_kb,
                )
            )
    _record(drops, new, "real_variants")
    return variants


def label_real(
    variants: Iterable[Variant],
    *,
    margin: float = 2.0,
    figures: str = "judge",
    smells: Mapping[str, Any] | None = None,
    seed: int = 0,
    n_low: int = 4,
) -> tuple[list[Variant], list[Drop]]:
    """Quality claims for real submissions, per task and dimension, by QualCode's rules.

    Args:
        variants: unlabelled variants (:func:`real_variants`; ``dimension`` is ``None``).
        margin: a low must be worse than the high by this factor (strictly), as QualCode's
            2.0.
        figures: ``"judge"`` (the judge's CPU time and memory, as the paper) or
            ``"measured"`` (the sandbox medians ``cpu_time_ms`` / ``memory_kb`` of variants
            that passed their tests).
        smells: ``{variant_id: smell count}`` (an int, a
            :class:`~coreb_toolkit.quality.smells.SmellReport` or an ``AnalysisError``) for
            every variant; ``None`` runs the ``ruff`` analyser once over all of them.
        seed: seeds the draw of the maintainability high (per task, order-independent).
        n_low: the most lows per task and dimension.

    Returns:
        ``(labelled, drops)``: the labelled variants (one per claim, by task, dimension, the
        high first, then the lows most different first) and what was left out, with reasons
        (stage ``label:<dimension>``).

    Raises:
        ValueError: a variant already carries a claim, two variants share an id, an option
            is out of range, or ``smells`` lacks a variant.
    """
    variants = list(variants)
    options = _options(margin, figures, seed, n_low)
    by_id: dict[str, Variant] = {}
    for v in variants:
        if not isinstance(v, Variant):
            raise TypeError(f"label_real() takes Variants, got {type(v).__name__}")
        if v.dimension is not None:
            raise ValueError(
                f"variant {v.variant_id} already claims {v.dimension}/{v.level}: label_real "
                "labels unlabelled real submissions (real_variants)"
            )
        key = v.source_id or v.variant_id
        if key in by_id:
            raise ValueError(f"two variants share the id {key!r}: give each submission once")
        by_id[key] = v
    reports = _smells(by_id, smells)
    tasks: dict[str, list[Candidate]] = defaultdict(list)
    for key, v in sorted(by_id.items()):
        tasks[v.task_id].append(_candidate(key, v, reports[key], figures))
    labelled: list[Variant] = []
    drops: list[Drop] = []
    for task_id in sorted(tasks):
        for dim in (*FIGURE_DIMENSIONS, "maintainability"):
            cands = tasks[task_id]
            if dim == "maintainability":
                claims = _maintainability_claims(task_id, cands, options, n_low, drops)
            else:
                claims = _figure_claims(dim, task_id, cands, options, n_low, drops)
            for level, c in claims:
                v = by_id[c.submission_id]
                labelled.append(
                    replace(
                        v,
                        dimension=dim,
                        level=level,
                        smell_count=c.smell_count,
                        smell_kinds=c.smell_kinds,
                    )
                )
    return labelled, drops


def _options(margin: float, figures: str, seed: int, n_low: int) -> QualcodeOptions:
    if figures not in LABEL_SOURCES:
        raise ValueError(f"figures must be one of {LABEL_SOURCES}, got {figures!r}")
    if isinstance(n_low, bool) or not isinstance(n_low, int) or n_low < 1:
        raise ValueError(f"n_low must be a positive int, got {n_low!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    # QualCode's options carry the margin, the figure source and the seed of its helpers
    return QualcodeOptions(margin=margin, labels=figures, seed=seed)


def _smells(by_id: Mapping[str, Variant], smells: Mapping[str, Any] | None) -> dict[str, Any]:
    """Submission key -> its smell result (count, SmellReport or AnalysisError)."""
    if smells is None:
        from coreb_toolkit.quality.smells import get_analyser

        reports = get_analyser("ruff").analyse({k: v.code for k, v in by_id.items()})
        return {k: reports[k] for k in by_id}
    if not isinstance(smells, Mapping):
        raise TypeError(f"smells must be {{variant_id: count}} or None, got {type(smells)}")
    out, missing = {}, []
    for key, v in by_id.items():
        if v.variant_id not in smells:
            missing.append(v.variant_id)
        else:
            out[key] = smells[v.variant_id]
    if missing:
        raise ValueError(
            f"smells has no entry for {len(missing)} variant(s), e.g. {missing[:3]}: give a "
            "count for every variant_id, or smells=None to run the ruff analyser"
        )
    return out


def _candidate(key: str, v: Variant, smell: Any, figures: str) -> Candidate:
    from coreb_toolkit.quality.smells import AnalysisError, SmellReport

    c = Candidate(
        problem_id=v.task_id,
        submission_id=key,
        code=v.code,
        language="python",
        user_id=None,
        origin=v.origin,
        judge_cpu_time_ms=v.judge_cpu_time_ms,
        judge_memory_kb=v.judge_memory_kb,
        # a measured figure counts only for a variant that passed every test
        measured_cpu_time_ms=v.cpu_time_ms if v.passed else None,
        measured_memory_kb=v.memory_kb if v.passed else None,
        measured_passed=v.passed,
    )
    if isinstance(smell, AnalysisError):
        c.smell_error = str(smell)
    elif isinstance(smell, SmellReport):
        c.smell_count, c.smell_kinds = smell.count, tuple(smell.kinds)
    elif isinstance(smell, int) and not isinstance(smell, bool) and smell >= 0:
        c.smell_count = smell
    else:
        raise TypeError(
            f"smells[{v.variant_id!r}] must be a count >= 0, a SmellReport or an "
            f"AnalysisError, got {smell!r}"
        )
    return c


def _figure_claims(
    dim: str,
    task_id: str,
    cands: list[Candidate],
    options: QualcodeOptions,
    n_low: int,
    drops: list[Drop],
) -> list[tuple[str, Candidate]]:
    stage = f"label:{dim}"
    usable = usable_candidates(dim, task_id, cands, options, drops, stage)
    if len(usable) < 2:
        drops.append(Drop(stage, "fewer than 2 submissions", task_id))
        return []
    fig = lambda c: c.figure(dim, options.labels)  # noqa: E731
    best = min(usable, key=lambda c: (fig(c), c.submission_id))
    worse = sorted(
        (c for c in usable if margin_label(fig(best), fig(c), options.margin) == 1),
        key=lambda c: (-fig(c), c.submission_id),
    )
    if not worse:
        worst = max(fig(c) for c in usable)
        drops.append(
            Drop(
                stage,
                f"below the {options.margin:g}x margin",
                task_id,
                f"{fig(best):g} vs {worst:g}",
            )
        )
        return []
    low_ids = {c.submission_id for c in worse}
    for c in usable:
        if c is not best and c.submission_id not in low_ids:
            drops.append(Drop(stage, f"within {options.margin:g}x of the best", c.submission_id))
    for c in worse[n_low:]:
        drops.append(Drop(stage, f"more than {n_low} low-quality submissions", c.submission_id))
    return [("high", best)] + [("low", c) for c in worse[:n_low]]


def _maintainability_claims(
    task_id: str,
    cands: list[Candidate],
    options: QualcodeOptions,
    n_low: int,
    drops: list[Drop],
) -> list[tuple[str, Candidate]]:
    stage = "label:maintainability"
    usable = usable_candidates("maintainability", task_id, cands, options, drops, stage)
    clean = sorted((c for c in usable if c.smell_count == 0), key=lambda c: c.submission_id)
    smelly = sorted(
        (c for c in usable if c.smell_count),
        key=lambda c: (c.smell_count, len(c.smell_kinds), c.submission_id),
        reverse=True,
    )
    if not clean:
        drops.append(Drop(stage, "no submission without smells", task_id))
        return []
    if not smelly:
        drops.append(Drop(stage, "no submission with smells", task_id))
        return []
    # the draw of QualCode's maintainability pair: same seed, same task -> same submission
    best = seeded_rng(options, "maintainability", task_id).choice(clean)
    for c in clean:
        if c is not best:
            drops.append(Drop(stage, "another clean submission was drawn", c.submission_id))
    for c in smelly[n_low:]:
        drops.append(Drop(stage, f"more than {n_low} low-quality submissions", c.submission_id))
    return [("high", best)] + [("low", c) for c in smelly[:n_low]]


__all__ = ["FIGURE_DIMENSIONS", "label_real", "real_tasks", "real_variants"]
