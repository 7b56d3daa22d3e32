"""Re-check a source's own labels by running its candidates' public tests in the sandbox.

LiveCodeBench labels each sample with its verdict on a hidden full test suite
(:mod:`coreb_toolkit.sources.livecodebench`); the adapter re-derives the *public* tests from the
statement. :func:`recheck` runs them and says how often the two agree. It lives here, not in
``sources``, because data flows one way: sources -> execution -> release builders.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from coreb_toolkit.sandbox.runner import ExecutionConfig, execute
from coreb_toolkit.sources.base import SourceCandidate, SourceProblem


def recheck(
    problems: Sequence[SourceProblem],
    candidates: Sequence[SourceCandidate],
    config: ExecutionConfig | None = None,
) -> dict[str, Any]:
    """Run every candidate that has an execution on its public tests; compare with its label.

    ``config`` is a :class:`coreb_toolkit.sandbox.runner.ExecutionConfig` (default settings when
    None). Returns ``counts`` of the four (LiveCodeBench verdict, public-test result) combinations,
    ``agreement`` (the share of executed candidates where both agree), the same per platform in
    ``by_platform``, ``not_executed`` (candidates without parsed tests), the ids of candidates
    that LiveCodeBench passes but the public tests fail in ``lcb_pass_public_fail`` (a public
    test is part of LiveCodeBench's full suite, so these point at parsing or environment
    differences), and per-candidate ``results`` (label, public pass, verdicts).
    """
    platform_of = {p.problem_id: p.platform or "unknown" for p in problems}
    runnable = [c for c in candidates if c.execution is not None]
    unknown = sorted({c.problem_id for c in runnable} - platform_of.keys())
    if unknown:
        raise ValueError(f"candidates of problems not in `problems`, e.g. {unknown[0]!r}")
    outcomes = execute([c.execution for c in runnable], config) if runnable else []

    def key(lcb: bool, public: bool) -> str:
        return f"lcb_{'pass' if lcb else 'fail'}_public_{'pass' if public else 'fail'}"

    keys = [key(a, b) for a in (True, False) for b in (True, False)]
    counts = Counter({k: 0 for k in keys})
    by_platform: dict[str, Counter] = {}
    results: dict[str, dict[str, Any]] = {}
    for cand, outcome in zip(runnable, outcomes, strict=True):
        lcb, public = bool(cand.label), bool(outcome["passed"])
        counts[key(lcb, public)] += 1
        platform = platform_of[cand.problem_id]
        by_platform.setdefault(platform, Counter({k: 0 for k in keys}))[key(lcb, public)] += 1
        results[cand.candidate_id] = {
            "lcb_pass": lcb,
            "public_pass": public,
            "verdicts": outcome["verdicts"],
        }

    def rate(c: Counter) -> float | None:
        total = sum(c[k] for k in keys)
        agree = c[key(True, True)] + c[key(False, False)]
        return agree / total if total else None

    return {
        "executed": len(runnable),
        "not_executed": len(candidates) - len(runnable),
        "counts": {k: counts[k] for k in keys},
        "agreement": rate(counts),
        "by_platform": {
            p: {"counts": {k: c[k] for k in keys}, "agreement": rate(c)}
            for p, c in sorted(by_platform.items())
        },
        "lcb_pass_public_fail": sorted(
            cid for cid, r in results.items() if r["lcb_pass"] and not r["public_pass"]
        ),
        "results": results,
    }
