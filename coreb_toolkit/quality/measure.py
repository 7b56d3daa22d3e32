"""Measured speed and memory labels: sandboxed re-runs, medians, the 2x rule, judge agreement.

The paper labels speed and memory from one judge reading per submission [SynH-Rank §3.1]. A
single reading is noisy, so this module re-runs submissions that have public tests in the
project's sandbox (:mod:`sandbox`: bubblewrap isolation, per-run cgroup accounting of CPU time
and peak memory) ``repeats`` times and keeps medians:

    >>> from coreb_toolkit.quality.measure import measure, margin_label
    >>> tests = [("1 2\\n", "3\\n")]
    >>> m = measure([("add", "a, b = map(int, input().split())\\nprint(a + b)\\n", tests)],
    ...             repeats=3, progress=False)["add"]
    >>> m.passed, m.runs, m.cpu_time_ms > 0, m.memory_kb > 0
    (True, 3, True, True)
    >>> margin_label(10.0, 25.0), margin_label(10.0, 20.0)  # the 2x rule; exactly 2x is a tie
    (1, None)

Units are the judge's: CPU time in milliseconds, memory in KB (1 KB = 1024 bytes). Peak memory
is the whole process tree's (interpreter included), as a judge counts it.

:func:`agreement` then says how often labels from measured figures agree with labels from the
judge's figures for the same pairs.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coreb_toolkit.sandbox import (
    ExecutionConfig,
    Executor,
    IsolationUnavailable,
    Limits,
    ToolchainMissing,
)
from coreb_toolkit.sandbox.languages import get_language

logger = logging.getLogger(__name__)

LABELS = (1, -1, None)


class MeasurementUnavailable(RuntimeError):
    """This machine cannot measure: no sandbox (bubblewrap), no toolchain or no cgroups."""


@dataclass(frozen=True)
class Measurement:
    """Measured figures of one submission.

    Attributes:
        submission_id: the submission.
        passed: every test passed in every run.
        runs: how many times the submission was run on its tests (a submission failing the
            first run is not run again).
        cpu_time_ms: median over runs of the run's total CPU time over all tests
            (milliseconds); ``None`` unless ``passed``.
        memory_kb: median over runs of the run's maximum peak memory over tests (KB);
            ``None`` unless ``passed``.
        verdicts: per test, ``"pass"`` if it passed in every run, else its first other
            verdict (``sandbox.VERDICTS``).
    """

    submission_id: str
    passed: bool
    runs: int
    cpu_time_ms: float | None
    memory_kb: float | None
    verdicts: tuple[str, ...]


def default_config() -> ExecutionConfig:
    """CodeNet-like limits (10 s CPU, 1 GiB) and one worker per core.

    One run per core rather than the executor's two: CPU time comes from per-run cgroups either
    way, but fewer runs competing for caches and memory bandwidth keep the figures steadier.
    """
    return ExecutionConfig(
        limits=Limits(wall_time_s=30, cpu_time_s=10, memory_mb=1024),
        workers=os.cpu_count() or 1,
    )


def _test_pair(test: Any, where: str) -> dict[str, str]:
    if isinstance(test, Mapping):
        pair = (test.get("input"), test.get("output"))
    elif isinstance(test, Sequence) and not isinstance(test, str) and len(test) == 2:
        pair = (test[0], test[1])
    else:
        pair = (getattr(test, "input", None), getattr(test, "output", None))
    if not all(isinstance(x, str) for x in pair):
        raise ValueError(
            f"{where}: a test must be an (input, output) pair of strings, a mapping with "
            f"'input'/'output' strings or an object with such attributes, got {test!r}"
        )
    return {"input": pair[0], "output": pair[1]}


def _candidates(submissions: object, language: str) -> list[dict[str, Any]]:
    if isinstance(submissions, (str, bytes, Mapping)) or not isinstance(submissions, Sequence):
        raise TypeError(
            "submissions must be a sequence of (submission_id, code, tests) triples or of "
            f"sandbox candidate mappings, got {type(submissions).__name__}"
        )
    out, seen = [], set()
    for i, sub in enumerate(submissions):
        where = f"submissions[{i}]"
        extra: dict[str, Any] = {}
        if isinstance(sub, Mapping):
            sid, code, tests = sub.get("id"), sub.get("code"), sub.get("tests")
            lang = sub.get("language", language)
            extra = {k: sub[k] for k in ("time_limit_s", "memory_mb") if k in sub}
        elif isinstance(sub, Sequence) and not isinstance(sub, str) and len(sub) == 3:
            sid, code, tests = sub
            lang = language
        else:
            raise TypeError(f"{where}: expected (submission_id, code, tests), got {sub!r:.200}")
        if not isinstance(sid, str) or not sid:
            raise ValueError(f"{where}: the submission id must be a non-empty str, got {sid!r}")
        if sid in seen:
            raise ValueError(f"{where}: duplicate submission id {sid!r}")
        seen.add(sid)
        if not isinstance(code, str):
            raise TypeError(f"{where} ({sid}): code must be a str, got {type(code).__name__}")
        if isinstance(tests, (str, Mapping)) or not isinstance(tests, Sequence) or not tests:
            raise ValueError(f"{where} ({sid}): tests must be a non-empty sequence of tests")
        pairs = [_test_pair(t, f"{where} ({sid}) tests[{j}]") for j, t in enumerate(tests)]
        get_language(lang)  # unknown language: ValueError naming the known ones
        out.append({"id": sid, "language": lang, "code": code, "tests": pairs, **extra})
    return out


def _executor(config: ExecutionConfig, languages: set[str]) -> Executor:
    try:
        executor = Executor(config)
        for lang in sorted(languages):
            get_language(lang).check_toolchain()
    except (IsolationUnavailable, ToolchainMissing) as err:
        raise MeasurementUnavailable(f"cannot measure here: {err}") from err
    if not executor.use_cgroups:
        raise MeasurementUnavailable(
            "cannot measure here: cgroup v1 memory/cpuacct controllers are not writable, so "
            "the sandbox records no CPU time or peak memory (run as root on a host with "
            "cgroup v1, see coreb_toolkit.sandbox.isolation)"
        )
    return executor


def _run_round(
    executor: Executor, jobs: list[tuple[int, int, dict[str, Any]]], progress: bool
) -> dict[tuple[int, int], dict[str, Any]]:
    """Run (submission index, run number, candidate) jobs; results by (index, run)."""
    cands = [{**cand, "id": f"{i}/{r}"} for i, r, cand in jobs]
    out = {}
    try:
        for result in executor.run_many(cands, progress=progress):
            i, r = result["id"].split("/")
            out[int(i), int(r)] = result
    except (IsolationUnavailable, ToolchainMissing) as err:
        raise MeasurementUnavailable(f"cannot measure here: {err}") from err
    return out


def _figures(result: Mapping[str, Any], sid: str) -> tuple[float, float]:
    """(total CPU ms over tests, max peak KB over tests) of one passing run."""
    cpu = [t.get("cpu_time_s") for t in result["tests"]]
    mem = [t.get("peak_memory_bytes") for t in result["tests"]]
    if any(v is None for v in cpu + mem):
        raise MeasurementUnavailable(
            f"{sid}: the sandbox returned no CPU time or peak memory for a passing run "
            f"(accounting {result.get('accounting')!r})"
        )
    return 1000.0 * sum(cpu), max(mem) / 1024.0


def measure(
    submissions: Sequence[tuple[str, str, Sequence[Any]]] | Sequence[Mapping[str, Any]],
    *,
    language: str = "python",
    repeats: int = 5,
    config: ExecutionConfig | None = None,
    progress: bool = True,
) -> dict[str, Measurement]:
    """Run every submission ``repeats`` times on its tests in the sandbox; medians per run.

    Args:
        submissions: ``(submission_id, code, tests)`` triples, a test being an
            ``(input, output)`` pair of strings (or a mapping / object with ``input`` and
            ``output``); or sandbox candidate mappings (``id``, ``code``, ``tests``, optional
            ``language``, ``time_limit_s``, ``memory_mb``). Output is compared token-wise
            (:mod:`coreb_toolkit.sandbox.compare`: whitespace and line endings never matter, floats
            within
            1e-6).
        language: the sandbox language of triples (``python``, ``cpp``, ``java``, ``go``,
            ``ruby``).
        repeats: runs per submission (5). The first run of every submission comes first;
            a submission that fails it is not run again; the other runs are interleaved
            round-robin over submissions so that a transient load on the machine does not
            land on one submission's runs only.
        config: sandbox settings (default :func:`default_config`); its own ``repeats`` must
            stay 1, since repeats are counted here.
        progress: show progress bars.

    Returns:
        ``{submission_id: Measurement}`` in input order (see :class:`Measurement`).

    Raises:
        MeasurementUnavailable: no bubblewrap, toolchain or cgroup accounting here.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    config = config or default_config()
    if not isinstance(config, ExecutionConfig):
        raise TypeError(f"config must be a sandbox.ExecutionConfig, got {type(config).__name__}")
    if config.repeats != 1:
        raise ValueError(
            f"config.repeats must be 1 (measure() repeats whole runs itself), got "
            f"{config.repeats}; pass repeats={config.repeats} to measure() instead"
        )
    cands = _candidates(submissions, language)
    if not cands:
        return {}
    executor = _executor(config, {c["language"] for c in cands})
    logger.info("measuring %d submissions, up to %d runs each", len(cands), repeats)

    results = _run_round(executor, [(i, 0, c) for i, c in enumerate(cands)], progress)
    again = [i for i in range(len(cands)) if results[i, 0]["passed"]]
    later = [(i, r, cands[i]) for r in range(1, repeats) for i in again]
    if later:
        results.update(_run_round(executor, later, progress))

    out = {}
    for i, cand in enumerate(cands):
        runs = [results[i, r] for r in range(repeats) if (i, r) in results]
        per_test = zip(*(run["verdicts"] for run in runs), strict=True)
        verdicts = tuple(next((v for v in vs if v != "pass"), "pass") for vs in per_test)
        passed = all(run["passed"] for run in runs)
        cpu = memory = None
        if passed:
            figures = [_figures(run, cand["id"]) for run in runs]
            cpu = float(statistics.median(f[0] for f in figures))
            memory = float(statistics.median(f[1] for f in figures))
        out[cand["id"]] = Measurement(cand["id"], passed, len(runs), cpu, memory, verdicts)
    return out


def _check_figure(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def margin_label(a: float, b: float, margin: float = 2.0) -> int | None:
    """The paper's margin rule between two costs (CPU time, memory: lower is better).

    ``1`` if ``margin * a < b`` (a is clearly better), ``-1`` if ``margin * b < a`` (b is
    clearly better), else ``None`` (no clear preference). With the default ``margin=2``, a
    cost exactly half the other is *not* a preference: the inequality is strict, as in
    ``2 * cpu_time(positive) < cpu_time(negative)`` [SynH-Rank §3.1].
    """
    a = _check_figure("a", a)
    b = _check_figure("b", b)
    margin = _check_figure("margin", margin)
    if margin < 1:
        raise ValueError(f"margin must be >= 1 (a factor between costs), got {margin!r}")
    if margin * a < b:
        return 1
    if margin * b < a:
        return -1
    return None


def agreement(
    judge: Mapping[Any, int | None], measured: Mapping[Any, int | None]
) -> dict[str, Any]:
    """How often labels from measured figures agree with labels from the judge's figures.

    Both mappings hold the same pair ids, each with a :func:`margin_label` result (``1``,
    ``-1`` or ``None``). Returns:

    * ``n_pairs``: pairs in total;
    * ``n_compared``: pairs both sides label (neither is ``None``);
    * ``n_agree`` / ``n_disagree``: of those, the same label / the opposite one;
    * ``rate``: ``n_agree / n_compared`` (``None`` when nothing is compared);
    * ``n_judge_only``: the judge labels, the measurement sees no clear preference;
    * ``n_measured_only``: the measurement labels, the judge sees none;
    * ``n_neither``: both ``None``;
    * ``confusion``: ``{judge label: {measured label: count}}`` over all nine combinations.
    """
    for name, labels in (("judge", judge), ("measured", measured)):
        if not isinstance(labels, Mapping):
            raise TypeError(f"{name} must be a mapping pair id -> label, got {type(labels)}")
        bad = {k: v for k, v in labels.items() if v not in LABELS or isinstance(v, bool)}
        if bad:
            key, value = next(iter(bad.items()))
            raise ValueError(
                f"{name} labels must be 1, -1 or None (see margin_label), got {value!r} for "
                f"{key!r} ({len(bad)} bad)"
            )
    if judge.keys() != measured.keys():
        only_j = [k for k in judge if k not in measured]
        only_m = [k for k in measured if k not in judge]
        raise ValueError(
            f"judge and measured must label the same pairs: {len(only_j)} only in judge "
            f"(e.g. {only_j[:3]}), {len(only_m)} only in measured (e.g. {only_m[:3]}); "
            "restrict both to the common pairs first"
        )
    confusion: dict[int | None, dict[int | None, int]] = {
        j: dict.fromkeys(LABELS, 0) for j in LABELS
    }
    for key, j in judge.items():
        confusion[j][measured[key]] += 1
    n_agree = confusion[1][1] + confusion[-1][-1]
    n_disagree = confusion[1][-1] + confusion[-1][1]
    n_compared = n_agree + n_disagree
    return {
        "n_pairs": len(judge),
        "n_compared": n_compared,
        "n_agree": n_agree,
        "n_disagree": n_disagree,
        "rate": n_agree / n_compared if n_compared else None,
        "n_judge_only": confusion[1][None] + confusion[-1][None],
        "n_measured_only": confusion[None][1] + confusion[None][-1],
        "n_neither": confusion[None][None],
        "confusion": confusion,
    }
