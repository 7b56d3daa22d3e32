"""What QualCode is built from: candidates (usable submissions with their figures, smells
and labels), what was dropped and why, and the prepared data a build writes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from coreb_toolkit.builders.qualcode.options import QualcodeOptions

FIGURE_FIELDS: dict[str, str] = {"speed": "cpu_time_ms", "memory": "memory_kb"}
"""The judge's / measured figure behind a speed or memory label."""


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
        key = FIGURE_FIELDS[dimension]
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


def seeded_rng(options: QualcodeOptions, *parts: object) -> random.Random:
    # a str seed goes through sha512: the same on every machine and under any PYTHONHASHSEED
    return random.Random(":".join(str(p) for p in (options.seed, *parts)))


def figure_columns(prefix: str, c: Candidate) -> dict[str, Any]:
    return {
        f"{prefix}_cpu_time_ms": c.judge_cpu_time_ms,
        f"{prefix}_memory_kb": c.judge_memory_kb,
        f"{prefix}_measured_cpu_time_ms": c.measured_cpu_time_ms,
        f"{prefix}_measured_memory_kb": c.measured_memory_kb,
        f"{prefix}_smell_count": c.smell_count,
        f"{prefix}_smell_kinds": list(c.smell_kinds),
    }


def usable_candidates(
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
                reason = f"judge {FIGURE_FIELDS[dim]} missing"
            dropped.append(Drop(stage, reason, c.submission_id, problem_id))
            continue
        out.append(c)
    return out
