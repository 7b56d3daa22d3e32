"""QualCode and MC-QualCode: does a reranker prefer fast, lean, maintainable code? [SynH-Rank §3]

Built from CodeNet-style judged submissions (``coreb_toolkit.sources.codenet``): problem statements
and
accepted submissions with the judge's CPU time and memory. Configs (one split, ``test``):

``qualcode_speed``, ``qualcode_memory``, ``qualcode_maintainability``
    One row per problem that yields a pair (SPEC §3):

    * speed: ``chosen`` = the submission with the least CPU time, ``rejected`` = the one with
      the most, kept only if ``margin * cpu(chosen) < cpu(rejected)`` (margin 2);
    * memory: the same with memory;
    * maintainability: ``chosen`` = a seeded random submission with zero code smells,
      ``rejected`` = the one with the most smells, ties broken by the most diverse smells
      (distinct rules), then by submission id.

    Each row serves both tasks of the paper: the pairwise preference task (QPA over
    ``instruction``/``query``/``chosen``/``rejected``, TRL's preference vocabulary) and the
    1+99 retrieval task (``chosen`` against the ``retrieval_negative_ids`` -- 99 seeded samples
    of other problems' submissions, texts in ``qualcode_corpus``; MRR@10, nDCG@10; the paper's
    query is the instruction followed by the problem).

``mc_1cond``, ``mc_2cond``, ``mc_3cond``
    MC-QualCode triplets. Per problem and dimension a binary label: speed/memory best third
    = 1, worst third = 0, middle third discarded; maintainability 1 = no smells, 0 = some.
    A k-condition triplet asks for k dimensions C; ``chosen`` satisfies all of C, ``rejected``
    all but one (``failed_condition``); with ``control_unrequested`` (default) the two also
    carry the same labels on the dimensions not asked for, so the one failed condition is the
    only labelled difference (controlled variable). Up to ``mc_per_k`` (3,000) per k,
    balanced over the C(3, k) combinations and, inside a combination, over the failed
    condition; problems are drawn round-robin so that no problem dominates.

``qualcode_corpus``
    Every submission that survived reading: code, judge figures, measured figures (when
    measured), smell count/diversity/rules and the three MC labels.

Everything is seeded and deterministic, and every submission or candidate pair that is not
used is counted in the build report with the reason (``build_report.json`` and the card).

Maintainability uses a real static analyser (``coreb_toolkit.quality.smells``, ruff by default) in
place of
the paper's SonarQube server; the rule set and its mapping to "smell count" / "smell
diversity" are in :mod:`coreb_toolkit.quality.smells` and in the card. Measured mode (beyond the
paper,
which trusts one judge reading) re-runs submissions that have public tests in the sandbox and
labels speed/memory from median figures (:mod:`coreb_toolkit.quality.measure`).

Data only, no model imports.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from coreb_dataset import configs_yaml, markdown_table, size_category, write_hub_folder

logger = logging.getLogger(__name__)

DIMENSIONS = ("speed", "memory", "maintainability")
#: dimension -> the adjective of its instruction (SynH-Rank §3)
CONDITIONS: dict[str, str] = {
    "speed": "fast",
    "memory": "memory-efficient",
    "maintainability": "maintainable",
}
DEFAULT_TEMPLATE = "Retrieve code that is {conditions}"
PAIR_CONFIGS = {f"qualcode_{d}": d for d in DIMENSIONS}
MC_CONFIGS = {f"mc_{k}cond": k for k in (1, 2, 3)}
CORPUS_CONFIG = "qualcode_corpus"
SPLIT = "test"
DEFAULT_OUT = "qualcode"
_FIGURE = {"speed": "cpu_time_ms", "memory": "memory_kb"}

_CITATION = """\
@article{synhrank2026,
  title   = {SynH-Rank: Quality-Aware Code Reranking with Synthesised Hierarchical Data},
  author  = {The SynH-Rank authors},
  year    = {2026},
  note    = {see the SynH-Rank paper for the full author list}
}"""


def instruction(conditions: str | Iterable[str], template: str = DEFAULT_TEMPLATE) -> str:
    """``Retrieve code that is fast and memory-efficient`` for dimensions (in the given order).

    >>> instruction(["speed", "maintainability"])
    'Retrieve code that is fast and maintainable'
    """
    items = [conditions] if isinstance(conditions, str) else list(conditions)
    unknown = [c for c in items if c not in CONDITIONS]
    if unknown or not items:
        raise ValueError(
            f"conditions must be a non-empty list of {list(CONDITIONS)}, got {items!r}"
        )
    return template.format(conditions=" and ".join(CONDITIONS[c] for c in items))


@dataclass(frozen=True)
class QualcodeOptions:
    """Every rule the construction leaves open, with the paper's values as defaults.

    Args:
        seed: seeds every random choice (maintainability positives, retrieval negatives,
            triplet sampling); string-seeded per problem, so results do not depend on order.
        margin: speed/memory pairs need ``margin * figure(chosen) < figure(rejected)`` (2.0).
        retrieval_negatives: distractors per retrieval query, other problems' submissions (99).
        mc_per_k: MC-QualCode triplets per condition count k (3,000).
        mc_balance: ``"strict"`` takes the same number from every combination of k dimensions
            (the smallest available, capped at ``mc_per_k // C(3, k)``); ``"quota"`` takes up
            to the cap from each, so a scarce combination is under-represented.
        control_unrequested: chosen and rejected must carry equal labels on the dimensions
            the instruction does not ask for.
        analyser: the smell analyser (:func:`coreb_toolkit.quality.smells.get_analyser`).
        labels: ``"judge"`` (the paper: the judge's single CPU/memory reading) or
            ``"measured"`` (medians of sandboxed re-runs on the public tests; problems
            without tests get no speed/memory pairs).
        repeats: re-runs per submission in measured mode.
        template: the instruction template; ``{conditions}`` becomes "fast and maintainable".
        language: the CodeNet language of the submissions.
        require_statement: drop problems whose statement is missing (a query needs one).
        english_only: drop problems whose statement exists only in Japanese (the paper's
            queries are English descriptions; about a third of CodeNet's are Japanese-only).
    """

    seed: int = 0
    margin: float = 2.0
    retrieval_negatives: int = 99
    mc_per_k: int = 3000
    mc_balance: str = "strict"
    control_unrequested: bool = True
    analyser: str = "ruff"
    labels: str = "judge"
    repeats: int = 5
    template: str = DEFAULT_TEMPLATE
    language: str = "Python"
    require_statement: bool = True
    english_only: bool = True

    def __post_init__(self) -> None:
        if not (isinstance(self.margin, (int, float)) and self.margin >= 1):
            raise ValueError(f"margin must be a number >= 1, got {self.margin!r}")
        for name in ("retrieval_negatives", "mc_per_k", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.mc_balance not in ("strict", "quota"):
            raise ValueError(f"mc_balance must be 'strict' or 'quota', got {self.mc_balance!r}")
        if self.labels not in ("judge", "measured"):
            raise ValueError(f"labels must be 'judge' or 'measured', got {self.labels!r}")
        if "{conditions}" not in self.template:
            raise ValueError(f"template must contain '{{conditions}}', got {self.template!r}")


# --------------------------------------------------------------------------------------------
# Preparation: candidates with figures, smells and labels
# --------------------------------------------------------------------------------------------


@dataclass
class Candidate:
    """One usable submission with everything a label is made from."""

    problem_id: str
    submission_id: str
    code: str
    language: str
    user_id: str | None
    origin: str
    judge_cpu_time_ms: float | None
    judge_memory_kb: float | None
    measured_cpu_time_ms: float | None = None
    measured_memory_kb: float | None = None
    measured_passed: bool | None = None
    smell_count: int | None = None
    smell_kinds: tuple[str, ...] = ()
    smell_error: str | None = None
    labels: dict[str, int | None] = field(default_factory=dict)

    def figure(self, dimension: str, source: str) -> float | None:
        key = _FIGURE[dimension]
        return getattr(self, f"{'judge' if source == 'judge' else 'measured'}_{key}")


@dataclass
class Drop:
    """Something not used, and why."""

    stage: str
    reason: str
    item: str
    where: str = ""


@dataclass
class QualcodeData:
    """Everything :func:`build` writes, in memory."""

    options: QualcodeOptions
    statements: dict[str, str]
    candidates: dict[str, list[Candidate]]  # problem -> candidates, sorted by submission id
    pairs: dict[str, list[dict[str, Any]]]  # dimension -> pair rows
    triplets: dict[int, list[dict[str, Any]]]  # k -> MC rows
    dropped: list[Drop]
    report: dict[str, Any]

    def corpus(self) -> Iterator[Candidate]:
        for problem in sorted(self.candidates):
            yield from self.candidates[problem]


def _rng(options: QualcodeOptions, *parts: object) -> random.Random:
    # a str seed goes through sha512: the same on every machine and under any PYTHONHASHSEED
    return random.Random(":".join(str(p) for p in (options.seed, *parts)))


def prepare(
    sources: Sequence[str | os.PathLike[str]] | Any,
    options: QualcodeOptions | None = None,
    *,
    analyser: Any = None,
    progress: bool = True,
) -> QualcodeData:
    """Read the sources, analyse and (optionally) measure every submission, build all rows.

    ``sources`` are paths for :func:`coreb_toolkit.sources.codenet.load` or an already loaded
    ``CodenetData``; ``analyser`` overrides ``options.analyser`` with an object of the
    :class:`coreb_toolkit.quality.smells.SmellAnalyser` protocol.
    """
    from coreb_toolkit.quality.smells import AnalysisError, get_analyser
    from coreb_toolkit.sources import codenet

    options = options or QualcodeOptions()
    if isinstance(sources, codenet.CodenetData):
        data = sources
    else:
        if isinstance(sources, (str, os.PathLike)):
            sources = [sources]
        if not sources:
            raise ValueError("no sources: give at least one CodeNet-style path")
        data = codenet.load(list(sources), language=options.language, progress=progress)
    dropped = [Drop(d.stage, d.reason, d.item, d.where) for d in data.dropped]
    statements: dict[str, str] = {}
    candidates: dict[str, list[Candidate]] = {}
    for problem_id in sorted(data.submissions):
        subs = data.submissions[problem_id]
        problem = data.problems.get(problem_id)
        statement = problem.statement if problem is not None else None
        reason = None
        if statement is None or not statement.strip():
            if options.require_statement:
                reason = "problem has no statement"
            statement = ""
        elif options.english_only and getattr(problem, "statement_language", "en") == "ja":
            reason = "statement only in Japanese"
        if reason is not None:
            for s in subs:
                dropped.append(Drop("select", reason, s.submission_id, problem_id))
            continue
        kept = []
        for s in subs:
            if not s.code.strip():
                dropped.append(Drop("select", "empty code", s.submission_id, s.origin))
                continue
            kept.append(
                Candidate(
                    problem_id,
                    s.submission_id,
                    s.code,
                    s.language,
                    s.user_id,
                    s.origin,
                    s.cpu_time_ms,
                    s.memory_kb,
                )
            )
        if kept:
            statements[problem_id] = statement
            candidates[problem_id] = sorted(kept, key=lambda c: c.submission_id)
    if not candidates:
        raise ValueError(
            f"no usable submissions in {', '.join(data.sources) or 'the sources'}: "
            f"dropped {dict(Counter(d.reason for d in dropped))}"
        )
    everything = [c for cs in candidates.values() for c in cs]

    analyser = analyser if analyser is not None else get_analyser(options.analyser)
    reports = analyser.analyse({c.submission_id: c.code for c in everything})
    for c in everything:
        result = reports.get(c.submission_id)
        if result is None:
            raise RuntimeError(f"analyser {analyser.name!r} returned nothing for {c.submission_id}")
        if isinstance(result, AnalysisError):
            c.smell_error = str(result)
        else:
            c.smell_count, c.smell_kinds = result.count, tuple(result.kinds)

    measured_report: dict[str, Any] | None = None
    if options.labels == "measured":
        measured_report = _measure(data, candidates, options, progress)

    pairs = {d: _pairs(d, statements, candidates, options, dropped) for d in DIMENSIONS}
    _retrieval_negatives(pairs, candidates, options)
    for d in DIMENSIONS:
        _label(d, candidates, options, dropped)
    triplets, mc_report = _triplets(statements, candidates, options)
    report = _report(data, options, analyser, candidates, pairs, triplets, mc_report, dropped)
    if measured_report is not None:
        report["measured"] = measured_report
    return QualcodeData(options, statements, candidates, pairs, triplets, dropped, report)


def _measure(
    data: Any, candidates: dict[str, list[Candidate]], options: QualcodeOptions, progress: bool
) -> dict[str, Any]:
    """Re-run every candidate of a problem with public tests; medians into the candidates."""
    from coreb_toolkit.quality.measure import agreement, margin_label, measure

    jobs = []
    for problem_id, cands in candidates.items():
        problem = data.problems.get(problem_id)
        tests = list(problem.tests) if problem is not None else []
        if tests:
            jobs += [(c.submission_id, c.code, tests) for c in cands]
    results = (
        measure(jobs, language=options.language.lower(), repeats=options.repeats, progress=progress)
        if jobs
        else {}
    )
    for cands in candidates.values():
        for c in cands:
            m = results.get(c.submission_id)
            if m is not None:
                c.measured_passed = m.passed
                c.measured_cpu_time_ms = m.cpu_time_ms if m.passed else None
                c.measured_memory_kb = m.memory_kb if m.passed else None
    # agreement: the judge's and the measured preference between every min/max judge pair
    out: dict[str, Any] = {"submissions_measured": len(jobs), "repeats": options.repeats}
    out["submissions_failing_tests"] = sum(1 for m in results.values() if not m.passed)
    for dim in ("speed", "memory"):
        judge: dict[str, int | None] = {}
        measured: dict[str, int | None] = {}
        for cands in candidates.values():
            both = [
                c
                for c in cands
                if c.figure(dim, "judge") is not None and c.figure(dim, "measured") is not None
            ]
            for a, b in itertools.combinations(both, 2):
                key = f"{a.submission_id}|{b.submission_id}"
                judge[key] = margin_label(
                    a.figure(dim, "judge"), b.figure(dim, "judge"), options.margin
                )
                measured[key] = margin_label(
                    a.figure(dim, "measured"), b.figure(dim, "measured"), options.margin
                )
        out[dim] = agreement(judge, measured)
    return out


def _pairs(
    dim: str,
    statements: Mapping[str, str],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> list[dict[str, Any]]:
    rows = []
    for problem_id, cands in candidates.items():
        if dim == "maintainability":
            pair = _maintainability_pair(problem_id, cands, options, dropped)
            margin = None
        else:
            pair, margin = _figure_pair(dim, problem_id, cands, options, dropped)
        if pair is None:
            continue
        chosen, rejected = pair
        rows.append(
            {
                "pair_id": f"{dim}/{problem_id}",
                "dimension": dim,
                "instruction": instruction(dim, options.template),
                "query": statements[problem_id],
                "chosen": chosen.code,
                "rejected": rejected.code,
                "problem_id": problem_id,
                "chosen_id": chosen.submission_id,
                "rejected_id": rejected.submission_id,
                "margin": margin,
                "label_source": "smells" if dim == "maintainability" else options.labels,
                **_figures("chosen", chosen),
                **_figures("rejected", rejected),
            }
        )
    return rows


def _figures(prefix: str, c: Candidate) -> dict[str, Any]:
    return {
        f"{prefix}_cpu_time_ms": c.judge_cpu_time_ms,
        f"{prefix}_memory_kb": c.judge_memory_kb,
        f"{prefix}_measured_cpu_time_ms": c.measured_cpu_time_ms,
        f"{prefix}_measured_memory_kb": c.measured_memory_kb,
        f"{prefix}_smell_count": c.smell_count,
        f"{prefix}_smell_kinds": list(c.smell_kinds),
    }


def _usable(
    dim: str,
    problem_id: str,
    cands: list[Candidate],
    options: QualcodeOptions,
    dropped: list[Drop],
    stage: str,
) -> list[Candidate]:
    """The candidates that have the figure / smell report ``dim`` needs; the rest counted."""
    out = []
    for c in cands:
        if dim == "maintainability":
            if c.smell_error is not None:
                dropped.append(
                    Drop(stage, "analyser cannot read the code", c.submission_id, c.smell_error)
                )
                continue
        elif c.figure(dim, options.labels) is None:
            if options.labels == "measured":
                reason = (
                    "fails its public tests when re-run"
                    if c.measured_passed is False
                    else "no public tests to measure"
                )
            else:
                reason = f"judge {_FIGURE[dim]} missing"
            dropped.append(Drop(stage, reason, c.submission_id, problem_id))
            continue
        out.append(c)
    return out


def _figure_pair(
    dim: str,
    problem_id: str,
    cands: list[Candidate],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> tuple[tuple[Candidate, Candidate] | None, float | None]:
    stage = f"pairs:{dim}"
    usable = _usable(dim, problem_id, cands, options, dropped, stage)
    if len(usable) < 2:
        dropped.append(Drop(stage, "fewer than 2 submissions", problem_id))
        return None, None
    key = lambda c: (c.figure(dim, options.labels), c.submission_id)  # noqa: E731
    best, worst = min(usable, key=key), max(usable, key=key)
    fb, fw = best.figure(dim, options.labels), worst.figure(dim, options.labels)
    if not options.margin * fb < fw:
        dropped.append(
            Drop(stage, f"below the {options.margin:g}x margin", problem_id, f"{fb:g} vs {fw:g}")
        )
        return None, None
    return (best, worst), (fw / fb if fb > 0 else None)


def _maintainability_pair(
    problem_id: str, cands: list[Candidate], options: QualcodeOptions, dropped: list[Drop]
) -> tuple[Candidate, Candidate] | None:
    stage = "pairs:maintainability"
    usable = _usable("maintainability", problem_id, cands, options, dropped, stage)
    clean = [c for c in usable if c.smell_count == 0]
    if not clean:
        dropped.append(Drop(stage, "no submission without smells", problem_id))
        return None
    worst = max(usable, key=lambda c: (c.smell_count, len(c.smell_kinds), c.submission_id))
    if worst.smell_count == 0:
        dropped.append(Drop(stage, "no submission with smells", problem_id))
        return None
    chosen = _rng(options, "maintainability", problem_id).choice(clean)
    return chosen, worst


def _retrieval_negatives(
    pairs: Mapping[str, list[dict[str, Any]]],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
) -> None:
    """Attach 99 seeded distractors (submissions of other problems) to every pair row."""
    pool = sorted((c.submission_id, c.problem_id) for cs in candidates.values() for c in cs)
    sizes = Counter(pid for _, pid in pool)
    k = options.retrieval_negatives
    for dim, rows in pairs.items():
        for row in rows:
            own = sizes[row["problem_id"]]
            if len(pool) - own < k:
                raise ValueError(
                    f"the 1+{k} retrieval task needs {k} submissions of other problems, but "
                    f"only {len(pool) - own} exist besides {row['problem_id']}: add sources or "
                    "lower retrieval_negatives (--retrieval-negatives)"
                )
            # k + own draws without replacement always hold k of other problems
            rng = _rng(options, "retrieval", dim, row["problem_id"])
            drawn = rng.sample(range(len(pool)), min(len(pool), k + own))
            others = [pool[i][0] for i in drawn if pool[i][1] != row["problem_id"]]
            row["retrieval_negative_ids"] = others[:k]


# --------------------------------------------------------------------------------------------
# MC-QualCode
# --------------------------------------------------------------------------------------------


def _label(
    dim: str,
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> None:
    """Binary labels: speed/memory best third 1, worst third 0, middle None; maintainability
    1 without smells, 0 with. A third ends where values tie across its boundary: tied
    submissions at the edge get None rather than an arbitrary side."""
    stage = f"labels:{dim}"
    for problem_id, cands in candidates.items():
        for c in cands:
            c.labels[dim] = None
        usable = _usable(dim, problem_id, cands, options, [], stage)
        if dim == "maintainability":
            for c in usable:
                c.labels[dim] = int(c.smell_count == 0)
            continue
        if len(usable) < 3:
            dropped.append(Drop(stage, "fewer than 3 submissions: no thirds", problem_id))
            continue
        ordered = sorted(usable, key=lambda c: (c.figure(dim, options.labels), c.submission_id))
        values = [c.figure(dim, options.labels) for c in ordered]
        n, third = len(ordered), len(ordered) // 3
        for i in range(third):
            if values[i] < values[third]:
                ordered[i].labels[dim] = 1
            if values[n - 1 - i] > values[n - 1 - third]:
                ordered[n - 1 - i].labels[dim] = 0


class _TripletSource:
    """The candidate triplets of one problem for one (conditions, failed condition): counted
    exactly in O(n), enumerated lazily in a seeded order (every chosen gets its first
    rejected, then its second, ...), so a problem with thousands of submissions costs only
    the triplets actually taken."""

    def __init__(
        self,
        combo: tuple[str, ...],
        failed: str,
        cands: list[Candidate],
        options: QualcodeOptions,
        rng: random.Random,
    ) -> None:
        rest = [d for d in DIMENSIONS if d not in combo]

        def signature(c: Candidate) -> tuple[int | None, ...] | None:
            if not options.control_unrequested:
                return ()
            sig = tuple(c.labels.get(d) for d in rest)
            return None if None in sig else sig

        good = [c for c in cands if all(c.labels.get(d) == 1 for d in combo)]
        bad = [
            c
            for c in cands
            if c.labels.get(failed) == 0 and all(c.labels.get(d) == 1 for d in combo if d != failed)
        ]
        rng.shuffle(good)
        rng.shuffle(bad)
        self.bad_by_sig: dict[tuple, list[Candidate]] = defaultdict(list)
        for n in bad:
            sig = signature(n)
            if sig is not None:
                self.bad_by_sig[sig].append(n)
        self.good = [(p, self.bad_by_sig.get(signature(p), [])) for p in good]
        self.good = [(p, ns) for p, ns in self.good if ns]
        self.count = sum(len(ns) for _, ns in self.good)

    def __iter__(self) -> Iterator[tuple[Candidate, Candidate]]:
        rounds = max((len(ns) for _, ns in self.good), default=0)
        for r in range(rounds):
            for p, ns in self.good:
                if r < len(ns):
                    yield p, ns[r]


def _round_robin(iterables: Sequence[Iterable[Any]], limit: int) -> list[Any]:
    """One item from each iterable in turn until ``limit`` items or all are exhausted."""
    out: list[Any] = []
    active = [iter(x) for x in iterables]
    while active and len(out) < limit:
        still = []
        for it in active:
            item = next(it, _END)
            if item is _END:
                continue
            out.append(item)
            still.append(it)
            if len(out) >= limit:
                break
        active = still
    return out


_END = object()


def _triplets(
    statements: Mapping[str, str],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    triplets: dict[int, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {}
    for k in (1, 2, 3):
        combos = list(itertools.combinations(DIMENSIONS, k))
        cap = options.mc_per_k // len(combos)
        sources: dict[tuple[str, ...], list[list[_TripletSource]]] = {}
        for combo in combos:
            sources[combo] = []
            for failed in combo:
                problems = sorted(candidates)
                _rng(options, "mc-problems", k, *combo, failed).shuffle(problems)
                sources[combo].append(
                    [
                        _TripletSource(
                            combo,
                            failed,
                            candidates[pid],
                            options,
                            _rng(options, "mc", k, *combo, failed, pid),
                        )
                        for pid in problems
                    ]
                )
        available = {
            combo: sum(src.count for per_failed in lists for src in per_failed)
            for combo, lists in sources.items()
        }
        take = {
            combo: min(cap, min(available.values()) if options.mc_balance == "strict" else n)
            for combo, n in available.items()
        }
        rows = []
        taken: dict[tuple[str, ...], Counter] = {}
        for combo in combos:
            # problems round-robin inside a failed condition, failed conditions round-robin
            by_failed = [
                [(failed, p, n) for p, n in _round_robin(per_failed, take[combo])]
                for failed, per_failed in zip(combo, sources[combo], strict=True)
            ]
            chosen = _round_robin(by_failed, take[combo])
            taken[combo] = Counter(f for f, _, _ in chosen)
            rows += [_triplet_row(k, combo, f, p, n, statements, options) for f, p, n in chosen]
        triplets[k] = rows
        report[f"k={k}"] = {
            "target": options.mc_per_k,
            "cap_per_combination": cap,
            "combinations": {
                "+".join(combo): {
                    "available": available[combo],
                    "taken": take[combo],
                    "by_failed_condition": dict(sorted(taken[combo].items())),
                }
                for combo in combos
            },
            "reached": len(rows),
            "why_short": _why_short(options, cap, available, len(rows)),
        }
    return triplets, report


def _why_short(
    options: QualcodeOptions, cap: int, available: Mapping[tuple[str, ...], int], reached: int
) -> str | None:
    if reached >= options.mc_per_k or reached == cap * len(available):
        return None
    scarce = min(available, key=lambda c: available[c])
    text = (
        f"the data holds only {available[scarce]} distinct candidate triplets for "
        f"{'+'.join(scarce)} (cap {cap} per combination)"
    )
    if options.mc_balance == "strict":
        text += "; strict balance takes that many from every combination"
    return text


def _triplet_row(
    k: int,
    combo: tuple[str, ...],
    failed: str,
    p: Candidate,
    n: Candidate,
    statements: Mapping[str, str],
    options: QualcodeOptions,
) -> dict[str, Any]:
    row = {
        "triplet_id": f"mc{k}/{'+'.join(combo)}/{failed}/{p.submission_id}/{n.submission_id}",
        "num_conditions": k,
        "conditions": list(combo),
        "failed_condition": failed,
        "instruction": instruction(combo, options.template),
        "query": statements[p.problem_id],
        "chosen": p.code,
        "rejected": n.code,
        "problem_id": p.problem_id,
        "chosen_id": p.submission_id,
        "rejected_id": n.submission_id,
    }
    for prefix, c in (("chosen", p), ("rejected", n)):
        for d in DIMENSIONS:
            row[f"{prefix}_{d}_label"] = c.labels.get(d)
        row.update(_figures(prefix, c))
    return row


# --------------------------------------------------------------------------------------------
# The build report
# --------------------------------------------------------------------------------------------


def _report(
    data: Any,
    options: QualcodeOptions,
    analyser: Any,
    candidates: Mapping[str, list[Candidate]],
    pairs: Mapping[str, list[dict[str, Any]]],
    triplets: Mapping[int, list[dict[str, Any]]],
    mc_report: dict[str, Any],
    dropped: list[Drop],
) -> dict[str, Any]:
    corpus = [c for cs in candidates.values() for c in cs]
    by_stage: dict[str, Counter] = defaultdict(Counter)
    for d in dropped:
        by_stage[d.stage][d.reason] += 1
    # what the reader's selection left out (rejected verdicts, other languages) is counted
    # there, not itemised: on all of CodeNet that is millions of records
    for reason, n in getattr(data, "filtered", {}).items():
        by_stage["read"][reason] += n
    margins = {
        dim: sorted(r["margin"] for r in rows if r["margin"] is not None)
        for dim, rows in pairs.items()
        if dim != "maintainability"
    }
    smells = [c.smell_count for c in corpus if c.smell_count is not None]
    labels = {
        d: dict(Counter("unlabelled" if c.labels.get(d) is None else c.labels[d] for c in corpus))
        for d in DIMENSIONS
    }
    return {
        "sources": list(data.sources),
        "options": asdict(options),
        "analyser": {
            "name": analyser.name,
            "version": analyser.version(),
            "rules": analyser.rules(),
        },
        "problems": len(candidates),
        "submissions": len(corpus),
        "pairs": {d: len(rows) for d, rows in pairs.items()},
        "margin_distribution": {d: _distribution(v) for d, v in margins.items()},
        "smell_count_distribution": _distribution(smells),
        "submissions_without_smells": sum(1 for s in smells if s == 0),
        "mc_labels": {
            d: {str(k): v for k, v in sorted(c.items(), key=str)} for d, c in labels.items()
        },
        "triplets": {f"k={k}": len(rows) for k, rows in triplets.items()},
        "mc": mc_report,
        "dropped": {stage: dict(sorted(c.items())) for stage, c in sorted(by_stage.items())},
    }


def _distribution(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    values = sorted(values)
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {
        "n": len(values),
        "min": values[0],
        "q1": q[0],
        "median": q[1],
        "q3": q[2],
        "max": values[-1],
        "mean": statistics.fmean(values),
    }


# --------------------------------------------------------------------------------------------
# Features, rows, the builder
# --------------------------------------------------------------------------------------------

_S = datasets.Value("string")
_F = datasets.Value("float64")
_I = datasets.Value("int64")


def _figure_features(prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}_cpu_time_ms": _F,
        f"{prefix}_memory_kb": _F,
        f"{prefix}_measured_cpu_time_ms": _F,
        f"{prefix}_measured_memory_kb": _F,
        f"{prefix}_smell_count": _I,
        f"{prefix}_smell_kinds": datasets.Sequence(_S),
    }


PAIR_FEATURES = datasets.Features(
    {
        "pair_id": _S,
        "dimension": _S,
        "instruction": _S,
        "query": _S,
        "chosen": _S,
        "rejected": _S,
        "problem_id": _S,
        "chosen_id": _S,
        "rejected_id": _S,
        "margin": _F,
        "label_source": _S,
        **_figure_features("chosen"),
        **_figure_features("rejected"),
        "retrieval_negative_ids": datasets.Sequence(_S),
    }
)
MC_FEATURES = datasets.Features(
    {
        "triplet_id": _S,
        "num_conditions": _I,
        "conditions": datasets.Sequence(_S),
        "failed_condition": _S,
        "instruction": _S,
        "query": _S,
        "chosen": _S,
        "rejected": _S,
        "problem_id": _S,
        "chosen_id": _S,
        "rejected_id": _S,
        **{f"{p}_{d}_label": _I for p in ("chosen", "rejected") for d in DIMENSIONS},
        **_figure_features("chosen"),
        **_figure_features("rejected"),
    }
)
CORPUS_FEATURES = datasets.Features(
    {
        "doc_id": _S,
        "text": _S,
        "problem_id": _S,
        "language": _S,
        "user_id": _S,
        "origin": _S,
        "cpu_time_ms": _F,
        "memory_kb": _F,
        "measured_cpu_time_ms": _F,
        "measured_memory_kb": _F,
        "smell_count": _I,
        "smell_diversity": _I,
        "smell_kinds": datasets.Sequence(_S),
        "smell_error": _S,
        **{f"{d}_label": _I for d in DIMENSIONS},
    }
)


def corpus_rows(data: QualcodeData) -> Iterator[dict[str, Any]]:
    for c in data.corpus():
        yield {
            "doc_id": c.submission_id,
            "text": c.code,
            "problem_id": c.problem_id,
            "language": c.language,
            "user_id": c.user_id,
            "origin": c.origin,
            "cpu_time_ms": c.judge_cpu_time_ms,
            "memory_kb": c.judge_memory_kb,
            "measured_cpu_time_ms": c.measured_cpu_time_ms,
            "measured_memory_kb": c.measured_memory_kb,
            "smell_count": c.smell_count,
            "smell_diversity": None if c.smell_count is None else len(c.smell_kinds),
            "smell_kinds": list(c.smell_kinds),
            "smell_error": c.smell_error,
            **{f"{d}_label": c.labels.get(d) for d in DIMENSIONS},
        }


def config_rows(data: QualcodeData, name: str) -> Iterator[dict[str, Any]]:
    """The rows of config ``name``."""
    if name in PAIR_CONFIGS:
        return iter(data.pairs[PAIR_CONFIGS[name]])
    if name in MC_CONFIGS:
        return iter(data.triplets[MC_CONFIGS[name]])
    if name == CORPUS_CONFIG:
        return corpus_rows(data)
    raise ValueError(f"unknown QualCode config {name!r}; expected one of {list(FEATURES)}")


FEATURES: dict[str, datasets.Features] = {
    **dict.fromkeys(PAIR_CONFIGS, PAIR_FEATURES),
    **dict.fromkeys(MC_CONFIGS, MC_FEATURES),
    CORPUS_CONFIG: CORPUS_FEATURES,
}


@dataclass
class QualcodeConfig(datasets.BuilderConfig):
    """A QualCode config; the construction options are config parameters (defaults = paper).

    ``data_dir`` is one source path; ``sources`` (a list) gives several.
    """

    sources: tuple[str, ...] = ()
    seed: int = 0
    margin: float = 2.0
    retrieval_negatives: int = 99
    mc_per_k: int = 3000
    mc_balance: str = "strict"
    control_unrequested: bool = True
    analyser: str = "ruff"
    labels: str = "judge"
    repeats: int = 5
    template: str = DEFAULT_TEMPLATE
    language: str = "Python"
    require_statement: bool = True
    english_only: bool = True

    def options(self) -> QualcodeOptions:
        return QualcodeOptions(
            seed=self.seed,
            margin=self.margin,
            retrieval_negatives=self.retrieval_negatives,
            mc_per_k=self.mc_per_k,
            mc_balance=self.mc_balance,
            control_unrequested=self.control_unrequested,
            analyser=self.analyser,
            labels=self.labels,
            repeats=self.repeats,
            template=self.template,
            language=self.language,
            require_statement=self.require_statement,
            english_only=self.english_only,
        )


_CACHE: dict[tuple, QualcodeData] = {}


def _cached(sources: tuple[str, ...], options: QualcodeOptions) -> QualcodeData:
    stamp = []
    for s in sources:
        p = Path(s)
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        stamp += [(str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file()]
    key = (sources, options, tuple(stamp))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = prepare(list(sources), options, progress=False)
    return _CACHE[key]


class Qualcode(datasets.GeneratorBasedBuilder):
    """QualCode (speed, memory, maintainability pairs + 1+99 retrieval), MC-QualCode (k = 1,
    2, 3 condition triplets) and the submission corpus, from CodeNet-style sources."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = QualcodeConfig
    BUILDER_CONFIGS = [  # noqa: RUF012 (datasets reads this class attribute)
        *(
            QualcodeConfig(name=n, description=f"QualCode {d} pairs")
            for n, d in PAIR_CONFIGS.items()
        ),
        *(
            QualcodeConfig(name=n, description=f"MC-QualCode, {k} condition(s)")
            for n, k in MC_CONFIGS.items()
        ),
        QualcodeConfig(name=CORPUS_CONFIG, description="every submission with its figures"),
    ]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=__doc__.split("\n")[0],
            features=FEATURES[self.config.name],
            citation=_CITATION,
        )

    def _sources(self) -> tuple[str, ...]:
        sources = tuple(self.config.sources) or (
            (self.config.data_dir,) if self.config.data_dir else ()
        )
        if not sources:
            raise ValueError(
                "Qualcode needs data_dir (a CodeNet-style source: a CodeNet root, a PIE jsonl, "
                "the shared codenet/nofuneval folders) or sources=[...] for several"
            )
        return tuple(str(s) for s in sources)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=SPLIT, gen_kwargs={})]

    def _generate_examples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        data = _cached(self._sources(), self.config.options())
        for i, row in enumerate(config_rows(data, self.config.name)):
            yield str(i), row


def load_config(
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    config: str,
    *,
    options: QualcodeOptions | None = None,
    cache_dir: str | None = None,
) -> datasets.Dataset:
    """One config straight from the sources, through :class:`Qualcode` (datasets 4+ path)."""
    if config not in FEATURES:
        raise ValueError(f"unknown QualCode config {config!r}; expected one of {list(FEATURES)}")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    o = asdict(options or QualcodeOptions())
    builder = Qualcode(
        config_name=config, cache_dir=cache_dir, sources=tuple(str(s) for s in sources), **o
    )
    builder.download_and_prepare()
    return builder.as_dataset(split=SPLIT)


# --------------------------------------------------------------------------------------------
# The Hub folder
# --------------------------------------------------------------------------------------------


@dataclass
class QualcodeBuildReport:
    """What :func:`build` wrote: rows per config and the build report (also on disk)."""

    out_dir: Path
    rows: dict[str, dict[str, int]]
    report: dict[str, Any]


def build(
    sources: Sequence[str | os.PathLike[str]] | QualcodeData,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    options: QualcodeOptions | None = None,
    overwrite: bool = False,
    pretty_name: str = "QualCode",
    license: str = "cdla-permissive-2.0",
    progress: bool = True,
) -> QualcodeBuildReport:
    """Write the Hub folder: ``<config>/test.parquet`` for the 7 configs, the card with the
    statistics, and ``build_report.json`` (every drop with its reason). Atomic, reproducible
    (the same sources and options give byte-identical files)."""
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
    data = (
        sources
        if isinstance(sources, QualcodeData)
        else prepare(sources, options, progress=progress)
    )
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {
        name: {SPLIT: (lambda name=name: config_rows(data, name), features)}
        for name, features in FEATURES.items()
    }
    report = {**data.report, "drops": [asdict(d) for d in data.dropped]}
    rows = write_hub_folder(
        out,
        files,
        lambda rows: render_card(data, rows, pretty_name=pretty_name, license=license),
        overwrite=overwrite,
        progress=progress,
        desc="coreb qualcode build",
        extra={"build_report.json": json.dumps(report, indent=1, sort_keys=True) + "\n"},
    )
    return QualcodeBuildReport(out, rows, data.report)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def render_card(
    data: QualcodeData,
    rows: Mapping[str, Mapping[str, int]],
    *,
    pretty_name: str = "QualCode",
    license: str = "cdla-permissive-2.0",
) -> str:
    """README.md: YAML with ``configs:``, the construction, and statistics from the data."""
    r = data.report
    o = data.options
    total = sum(n for parts in rows.values() for n in parts.values())
    yaml = [
        "---",
        f"pretty_name: {pretty_name}",
        f"license: {license}",
        "language:",
        "- en",
        "- code",
        "task_categories:",
        "- text-ranking",
        "- text-retrieval",
        "size_categories:",
        f"- {size_category(total)}",
        "tags:",
        "- code",
        "- code-search",
        "- reranking",
        "- code-quality",
        "- preference",
        *configs_yaml({name: [SPLIT] for name in FEATURES}, rows),
        "---",
    ]
    pairs_table = markdown_table(
        ["config", "pairs", "problems without a pair (why)"],
        [
            (
                f"`qualcode_{d}`",
                rows.get(f"qualcode_{d}", {}).get(SPLIT, 0),
                "; ".join(
                    f"{why}: {n}"
                    for why, n in r["dropped"].get(f"pairs:{d}", {}).items()
                    if why.startswith(("fewer", "below", "no submission"))
                )
                or "-",
            )
            for d in DIMENSIONS
        ],
    )
    mc_rows = []
    for k in (1, 2, 3):
        info = r["mc"][f"k={k}"]
        for combo, c in info["combinations"].items():
            failed = ", ".join(f"{f}: {n}" for f, n in sorted(c["by_failed_condition"].items()))
            mc_rows.append((f"`mc_{k}cond`", combo, c["available"], c["taken"], failed or "-"))
    mc_table = markdown_table(
        ["config", "conditions", "candidate triplets", "taken", "by failed condition"], mc_rows
    )
    reached = "\n".join(
        f"- k={k}: {r['mc'][f'k={k}']['reached']:,} of {o.mc_per_k:,}"
        + (f" -- {r['mc'][f'k={k}']['why_short']}" if r["mc"][f"k={k}"]["why_short"] else "")
        for k in (1, 2, 3)
    )
    margin_table = markdown_table(
        ["dimension", "pairs", "min", "q1", "median", "q3", "max"],
        [
            (d, m["n"], *(_fmt(m.get(x, "-")) for x in ("min", "q1", "median", "q3", "max")))
            for d, m in r["margin_distribution"].items()
        ],
    )
    smell = r["smell_count_distribution"]
    rules_table = markdown_table(["rule", "what it flags"], sorted(r["analyser"]["rules"].items()))
    drops = [
        (stage, reason, n)
        for stage, reasons in r["dropped"].items()
        for reason, n in reasons.items()
    ]
    drop_table = markdown_table(["stage", "reason", "count"], drops) if drops else "(none)"
    labels_table = markdown_table(
        ["dimension", "label 1", "label 0", "unlabelled"],
        [
            (
                d,
                r["mc_labels"][d].get("1", 0),
                r["mc_labels"][d].get("0", 0),
                r["mc_labels"][d].get("unlabelled", 0),
            )
            for d in DIMENSIONS
        ],
    )
    measured = ""
    if "measured" in r:
        m = r["measured"]
        measured = (
            "\n### Measured labels\n\nLabels come from medians of "
            f"{m['repeats']} sandboxed re-runs on the public tests "
            f"({m['submissions_measured']:,} submissions measured, "
            f"{m['submissions_failing_tests']:,} failing their tests). Agreement of the "
            f"measured {o.margin:g}x preference with the judge's, over all submission pairs of "
            "a problem:\n\n"
            + markdown_table(
                ["dimension", "pairs compared", "agree", "rate"],
                [
                    (d, m[d].get("n_compared", 0), m[d].get("n_agree", 0), _fmt(m[d].get("rate")))
                    for d in ("speed", "memory")
                ],
            )
            + "\n"
        )
    figures_from = (
        "the judge's readings (as the paper)"
        if o.labels == "judge"
        else "medians of sandboxed re-runs"
    )
    controlled = ", and both agree on the conditions not asked for" if o.control_unrequested else ""
    balance = (
        "the same number from every combination"
        if o.mc_balance == "strict"
        else "up to a per-combination cap"
    )
    empty = [n for n in FEATURES if not rows.get(n, {}).get(SPLIT, 0)]
    empty_note = (
        f"Empty on this data, so absent from the folder (`datasets` has no empty split): "
        f"{', '.join(f'`{n}`' for n in empty)}; the statistics below say why."
        if empty
        else ""
    )
    body = f"""
# {pretty_name}

QualCode asks whether a code reranker prefers **fast**, **memory-efficient** and
**maintainable** code among solutions that are all correct (SynH-Rank, §3). Every document is
an accepted submission to a CodeNet problem; the query is the problem statement, the instruction
names the quality wanted ("{instruction(["speed", "memory"], o.template)}").

Written by `coreb qualcode build` (coreb-toolkit) from {", ".join(f"`{s}`" for s in r["sources"])}.

```python
from datasets import load_dataset
pairs = load_dataset("qualcode", "qualcode_speed", split="test")
corpus = load_dataset("qualcode", "qualcode_corpus", split="test")
```

## Configs

- **`qualcode_speed`, `qualcode_memory`, `qualcode_maintainability`**: one row per problem
  with a pair. Pairwise task: `instruction`, `query`, `chosen` (the better code), `rejected`,
  scored by QPA = mean of 1[s(chosen) > s(rejected)] (a tie is a loss). Retrieval task: query =
  `instruction` + problem, `chosen` against the 99 `retrieval_negative_ids` (other problems'
  submissions, texts in `qualcode_corpus`); MRR@10 and nDCG@10. The figures behind the label:
  `*_cpu_time_ms`, `*_memory_kb` (judge), `*_measured_*` (sandbox medians, measured mode),
  `*_smell_count`, `*_smell_kinds`, and `margin` = rejected / chosen figure.
- **`mc_1cond`, `mc_2cond`, `mc_3cond`**: MC-QualCode triplets; `conditions`, the one
  `failed_condition` of `rejected`, and both sides' binary labels
  `*_{{speed,memory,maintainability}}_label`.
  MCA = QPA on these, per k.
- **`qualcode_corpus`**: every submission used, with its figures, smells and labels.

| config | rows |
|---|---|
{chr(10).join(f"| `{n}` | {rows.get(n, {}).get(SPLIT, 0):,} |" for n in FEATURES)}

{empty_note}
## Construction

- **speed / memory**: per problem, `chosen` = least CPU time (memory), `rejected` = most; kept
  only if {o.margin:g} x chosen < rejected. Figures: {figures_from}.
- **maintainability**: `chosen` = a seeded random submission with zero smells, `rejected` = the
  most smells, then the most distinct rules, then the highest submission id.
- **MC labels**: speed/memory best third 1, worst third 0 (a third ends where values tie across
  its boundary; tied edge submissions stay unlabelled), middle third discarded; maintainability
  1 = no smells. A k-condition triplet: `chosen` has label 1 on all k conditions, `rejected` on
  all but `failed_condition`{controlled}.
  Up to {o.mc_per_k:,} per k, {balance}, failed conditions
  and problems taken round-robin.
- Seed {o.seed}; the instruction template is `{o.template}`.

### Code smells

The paper counted SonarQube code smells. This build uses **{r["analyser"]["name"]}
{r["analyser"]["version"]}** (`coreb_toolkit.quality.smells`): smell count = number of findings,
smell
diversity = number of distinct rules. Formatting rules are not smells. Rule set:

{rules_table}

## Statistics

Computed at build time: {r["problems"]:,} problems, {r["submissions"]:,} submissions
({r["submissions_without_smells"]:,} without smells; smells per submission: median
{_fmt(smell.get("median", "-"))}, max {_fmt(smell.get("max", "-"))}).

{pairs_table}

Margin (rejected / chosen figure) of the kept pairs:

{margin_table}

MC labels per dimension (submissions):

{labels_table}

MC-QualCode triplets per k and combination:

{mc_table}

Reached per k:

{reached}
{measured}
### Everything not used

Counted per stage and reason (each one is listed in `build_report.json`):

{drop_table}

## Citation

```bibtex
{_CITATION}
```

CodeNet (IBM) submissions and statements; check the licence of the sources you publish with.
"""
    return "\n".join(yaml) + "\n" + body.lstrip("\n")
