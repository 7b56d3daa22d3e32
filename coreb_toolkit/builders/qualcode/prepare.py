"""Preparation: read the sources, analyse and (optionally) measure every submission,
and build every pair, label and triplet."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.qualcode.data import Candidate, Drop, QualcodeData
from coreb_toolkit.builders.qualcode.mc import label_candidates, make_triplets
from coreb_toolkit.builders.qualcode.options import QualcodeOptions
from coreb_toolkit.builders.qualcode.pairs import attach_retrieval_negatives, make_pairs
from coreb_toolkit.builders.qualcode.report import build_report
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS

EXCLUDED_REASON = "training problem (problem split)"
"""The drop reason of the submissions of a problem the problem split gives to training."""

SPLIT_FORMAT = "coreb-problem-split"
"""The ``format`` of a problem split file (:mod:`trainers.quality_data.split` writes them)."""


@dataclass(frozen=True)
class Exclusion:
    """The training side of a problem split file, which a QualCode build leaves out.

    Attributes:
        path: the file, as given.
        train: the training problems' ids.
        eval: the evaluation problems' ids.
        seed: the split's seed.
        sha256: the SHA-256 of the file's bytes (the report records which split was used).
    """

    path: str
    train: frozenset[str]
    eval: frozenset[str]
    seed: int
    sha256: str

    def report(self, submissions: Mapping[str, Sequence[Any]], excluded: set[str]) -> dict:
        """The build report's ``exclusion`` record for a build of ``submissions``."""
        return {
            "file": self.path,
            "sha256": self.sha256,
            "seed": self.seed,
            "train_problems_in_file": len(self.train),
            "problems_excluded": len(excluded),
            "submissions_excluded": sum(len(submissions[p]) for p in excluded),
            # problems the split does not know: neither trained on nor held out by it
            "problems_not_in_split": sum(
                1 for p in submissions if p not in self.train and p not in self.eval
            ),
        }


def read_exclusion(path: str | os.PathLike[str]) -> Exclusion:
    """Read a problem split file (``problem_split.json``) for ``exclude_problems_from``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a problem split file, or its ``train``, ``eval`` or ``seed`` field is
            missing or of the wrong type; the message names the file and the field.
    """
    where = f"exclude_problems_from (--exclude-problems-from) {os.fspath(path)}"
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(
            f"{where}: no such file; give the problem_split.json written with the training lists"
        )
    raw = file.read_bytes()
    try:
        record = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{where}: not a JSON problem split ({e})") from e
    if not isinstance(record, dict) or record.get("format") != SPLIT_FORMAT:
        got = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise ValueError(
            f"{where}: field 'format' must be {SPLIT_FORMAT!r}, got {got!r} (write the file "
            "with trainers.quality_data.split.write_split)"
        )
    sides = {}
    for name in ("train", "eval"):
        ids = record.get(name)
        if not isinstance(ids, list) or not all(isinstance(p, str) and p for p in ids):
            raise ValueError(f"{where}: field {name!r} must be a list of problem id strings")
        sides[name] = frozenset(ids)
    seed = record.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"{where}: field 'seed' must be an int, got {seed!r}")
    if sides["train"] & sides["eval"]:
        raise ValueError(f"{where}: some problems are on both sides of the split")
    return Exclusion(
        os.fspath(path), sides["train"], sides["eval"], seed, hashlib.sha256(raw).hexdigest()
    )


# the construction's one sequence of steps (read, select, analyse, measure, pairs, labels, MC)
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
    exclusion = (
        None
        if options.exclude_problems_from is None
        else read_exclusion(options.exclude_problems_from)
    )
    excluded: set[str] = set()
    statements: dict[str, str] = {}
    candidates: dict[str, list[Candidate]] = {}
    for problem_id in sorted(data.submissions):
        subs = data.submissions[problem_id]
        if exclusion is not None and problem_id in exclusion.train:
            excluded.add(problem_id)
            for s in subs:
                dropped.append(Drop("select", EXCLUDED_REASON, s.submission_id, problem_id))
            continue
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

    pairs = {
        d: make_pairs(d, statements, candidates, options, dropped) for d in QUALCODE_DIMENSIONS
    }
    attach_retrieval_negatives(pairs, candidates, options)
    for d in QUALCODE_DIMENSIONS:
        label_candidates(d, candidates, options, dropped)
    triplets, mc_report = make_triplets(statements, candidates, options)
    report = build_report(
        data,
        options,
        analyser,
        candidates,
        pairs,
        triplets,
        mc_report,
        dropped,
        exclusion=None if exclusion is None else exclusion.report(data.submissions, excluded),
    )
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
