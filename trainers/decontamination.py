"""Problem-level disjointness between training examples and every evaluation release, and
SynH-Rank's n-gram decontamination [CoREB §4.3 ("problem-level disjointness"); SynH-Rank §4].

Two checks, in order:

1. **Shared problems.** A ``source_problem_id`` (of a training query or document) that an
   evaluation source also holds (in a query or a corpus) is refused with a
   :class:`ContaminationError`, unless ``allow_shared_problems=True`` (then reported).
2. **Near-duplicate statements.** CoREB's releases are cut from overlapping problem pools, so one
   problem can come back under another id; SynH-Rank removes any training seed that shares a
   10-gram with the test set. Each training problem's statements are cut into word n-grams
   (lowercased ``\\w+`` tokens); a statement's overlap is the share of its own distinct n-grams
   found among the n-grams of all evaluation statements (a statement shorter than n words: 1.0
   on an exact match of its normalised text, else 0). A problem whose statement overlaps more
   than ``max_overlap`` (default 0: any shared n-gram) is a near duplicate: an error, reported,
   or its examples dropped (``near_duplicate_action``).

The evaluation n-grams are hashed once into one sorted array (8 bytes an n-gram): each training
statement is looked up in it, never compared pairwise. Only for the near duplicates found is a
second pass made, to name the evaluation problem sharing the most n-grams with each.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainers.examples import problem_ids, problem_statements, split_release

logger = logging.getLogger(__name__)

NEAR_DUPLICATE_ACTIONS: tuple[str, ...] = ("error", "report", "drop")
_TOKEN = re.compile(r"\w+")
_SHOWN = 10


class ContaminationError(ValueError):
    """Training data shares problems (or near-duplicate statements) with an evaluation source.

    ``report`` is the :class:`DisjointnessReport` so far."""

    def __init__(self, message: str, report: DisjointnessReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class EvalSource:
    """An evaluation dataset: ``path[@release]`` (a built CoREB folder, its Hub id or a release
    folder in the official layout; every release in it unless one is named)."""

    spec: str
    path: str
    release: str | None = None

    @classmethod
    def parse(cls, spec: str | os.PathLike[str] | EvalSource) -> EvalSource:
        """An :class:`EvalSource` from its spec (or itself)."""
        if isinstance(spec, EvalSource):
            return spec
        text = str(spec)
        if not text.strip():
            raise ValueError("an eval source is PATH[@RELEASE]; got an empty string")
        path, release = split_release(text)
        return cls(text, path, release)

    def problem_ids(self) -> set[str]:
        """Every ``source_problem_id`` of its queries and corpora."""
        return problem_ids(self.path, self.release)

    def statements(self) -> dict[str, list[str]]:
        """Its problem statements by problem (:func:`trainers.examples.problem_statements`)."""
        return problem_statements(self.path, self.release)


@dataclass
class DisjointnessReport:
    """What :func:`check_disjointness` found; saved with a checkpoint as
    ``disjointness_report.json`` (:meth:`to_dict`)."""

    eval_sources: list[str]
    train_problems: int
    eval_problems: int
    shared_problems: list[str] = field(default_factory=list)
    near_duplicates: list[dict[str, Any]] = field(default_factory=list)
    ngram: int = 10
    max_overlap: float = 0.0
    action: str = "error"
    allow_shared_problems: bool = False
    dropped_examples: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, in a stable order (problems sorted)."""
        return {
            "eval_sources": list(self.eval_sources),
            "train_problems": self.train_problems,
            "eval_problems": self.eval_problems,
            "shared_problems": sorted(self.shared_problems),
            "near_duplicates": [
                {k: d[k] for k in ("train_problem", "eval_problem", "eval_source", "overlap")}
                for d in sorted(self.near_duplicates, key=lambda d: d["train_problem"])
            ],
            "ngram": self.ngram,
            "max_overlap": self.max_overlap,
            "action": self.action,
            "allow_shared_problems": self.allow_shared_problems,
            "dropped_examples": self.dropped_examples,
        }


def statement_ngrams(text: str, n: int) -> set[int]:
    """The hashed word n-grams of ``text`` (lowercased ``\\w+`` tokens); a text shorter than
    ``n`` words is one key, its normalised text, so that only an exact match counts."""
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < n:
        return {hash(("short", " ".join(tokens)))} if tokens else set()
    return {hash(tuple(tokens[i : i + n])) for i in range(len(tokens) - n + 1)}


def _hash_array(values: Iterable[int]) -> np.ndarray:
    return np.unique(np.fromiter(values, dtype=np.int64))


def _found(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which ``keys`` are in the sorted ``table``."""
    if not len(table) or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[at] == keys


def _check_arguments(ngram: int, max_overlap: float, action: str) -> None:
    if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 1:
        raise ValueError(f"ngram={ngram!r}: must be a positive integer (SynH-Rank: 10)")
    if isinstance(max_overlap, bool) or not isinstance(max_overlap, (int, float)):
        raise ValueError(f"max_overlap={max_overlap!r}: must be a number in [0, 1]")
    if not 0.0 <= max_overlap <= 1.0:
        raise ValueError(f"max_overlap={max_overlap!r}: must be in [0, 1] (0 = any shared n-gram)")
    if action not in NEAR_DUPLICATE_ACTIONS:
        raise ValueError(
            f"near_duplicate_action={action!r}: must be one of {list(NEAR_DUPLICATE_ACTIONS)}"
        )


def _overlaps(
    train_statements: Mapping[str, Sequence[str]], skip: set[str], table: np.ndarray, n: int
) -> dict[str, tuple[float, list[set[int]]]]:
    """Per training problem: its largest statement overlap and the n-grams of its statements
    that overlap at all (for naming the eval problem)."""
    out: dict[str, tuple[float, list[set[int]]]] = {}
    for pid, texts in train_statements.items():
        if pid in skip:
            continue
        best, hit = 0.0, []
        for text in texts:
            grams = statement_ngrams(text, n)
            if not grams:
                continue
            keys = _hash_array(grams)
            shared = int(_found(table, keys).sum())
            if shared:
                best = max(best, shared / len(keys))
                hit.append(grams)
        out[pid] = (best, hit)
    return out


def _best_matches(
    flagged: Mapping[str, list[set[int]]],
    eval_statements: Sequence[tuple[str, Mapping[str, Sequence[str]]]],
    n: int,
) -> dict[str, tuple[str, str]]:
    """For each flagged training problem, the (eval source, eval problem) sharing the most
    distinct n-grams with its overlapping statements; one pass over the eval statements."""
    owners: dict[int, list[str]] = {}
    for pid, sets in flagged.items():
        for gram in set().union(*sets):
            owners.setdefault(gram, []).append(pid)
    best: dict[str, tuple[int, str, str]] = {}
    for spec, statements in eval_statements:
        for eval_pid, texts in statements.items():
            grams = set().union(*(statement_ngrams(t, n) for t in texts)) & owners.keys()
            counts: dict[str, int] = {}
            for gram in grams:
                for pid in owners[gram]:
                    counts[pid] = counts.get(pid, 0) + 1
            for pid, count in counts.items():
                if pid not in best or count > best[pid][0]:
                    best[pid] = (count, spec, eval_pid)
    return {pid: (spec, eval_pid) for pid, (_, spec, eval_pid) in best.items()}


def _shown(items: Sequence[str]) -> str:
    more = f" ... and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


# the two checks in order, each with its own error; the n-gram work lives in the helpers above
def check_disjointness(
    examples: Sequence[Mapping[str, str]],
    train_statements: Mapping[str, Sequence[str]],
    eval_sources: Sequence[str | EvalSource],
    *,
    allow_shared_problems: bool = False,
    ngram: int = 10,
    max_overlap: float = 0.0,
    near_duplicate_action: str = "error",
) -> tuple[list[dict[str, str]], DisjointnessReport]:
    """Refuse (or report) training data that shares problems or statements with evaluation data.

    Args:
        examples: training examples (columns of :data:`trainers.examples.EXAMPLE_FEATURES`);
            their problems are every non-empty ``source_problem_id`` and ``doc_problem_id``.
        train_statements: the training problems' statements (``problem_statements`` of the
            train release, plus ``example_statements`` for sources without a corpus).
        eval_sources: ``path[@release]`` of every evaluation dataset (:class:`EvalSource`).
        allow_shared_problems: keep examples of shared problems (they are reported); a shared
            problem is then left out of the near-duplicate check (it is the same problem).
        ngram: n of the word n-grams (SynH-Rank: 10).
        max_overlap: a statement with a larger overlap is a near duplicate (0: any shared n-gram).
        near_duplicate_action: ``"error"``, ``"report"`` (keep) or ``"drop"`` (remove the
            examples whose query or document belongs to a near-duplicate problem).

    Returns:
        The examples kept and the :class:`DisjointnessReport`.

    Raises:
        ContaminationError: a shared problem (unless allowed) or, with ``"error"``, a near
            duplicate.
    """
    _check_arguments(ngram, max_overlap, near_duplicate_action)
    if isinstance(eval_sources, (str, os.PathLike)):
        raise ValueError(f"eval_sources must be a list of PATH[@RELEASE], got {eval_sources!r}")
    sources = [EvalSource.parse(s) for s in eval_sources]
    if not sources:
        logger.warning("no eval source given: disjointness is not checked against anything")
    train = {e[c] for e in examples for c in ("source_problem_id", "doc_problem_id") if e[c]}
    eval_ids: set[str] = set()
    for src in sources:
        eval_ids |= src.problem_ids()
    report = DisjointnessReport(
        eval_sources=[s.spec for s in sources], train_problems=len(train),
        eval_problems=len(eval_ids), shared_problems=sorted(train & eval_ids), ngram=ngram,
        max_overlap=float(max_overlap), action=near_duplicate_action,
        allow_shared_problems=allow_shared_problems,
    )  # fmt: skip
    shared = report.shared_problems
    if shared and not allow_shared_problems:
        raise ContaminationError(
            f"the training data shares {len(shared)} problem(s) with the evaluation sources "
            f"{report.eval_sources}: {_shown(shared)}. Train on a release disjoint from them by "
            "problem, or pass allow_shared_problems=True (--allow_shared_problems) to train "
            "anyway (the shared problems are then reported)",
            report,
        )
    if shared:
        logger.warning("%d problems shared with the eval sources (allowed)", len(shared))
    eval_statements = [(s.spec, s.statements()) for s in sources]
    table = _hash_array(
        gram
        for _, statements in eval_statements
        for texts in statements.values()
        for text in texts
        for gram in statement_ngrams(text, ngram)
    )
    overlaps = _overlaps(train_statements, set(shared), table, ngram)
    flagged = {pid: hit for pid, (best, hit) in overlaps.items() if hit and best > max_overlap}
    matches = _best_matches(flagged, eval_statements, ngram) if flagged else {}
    report.near_duplicates = [
        {"train_problem": pid, "eval_problem": matches[pid][1], "eval_source": matches[pid][0],
         "overlap": overlaps[pid][0]}
        for pid in sorted(flagged)
    ]  # fmt: skip
    kept = [dict(e) for e in examples]
    if flagged and near_duplicate_action == "error":
        lines = [
            f"{d['train_problem']} ~ {d['eval_problem']} of {d['eval_source']} "
            f"(overlap {d['overlap']:.3f})"
            for d in report.near_duplicates[:_SHOWN]
        ]
        more = len(flagged) - len(lines)
        raise ContaminationError(
            f"{len(flagged)} training problem(s) have a statement sharing {ngram}-grams with an "
            f"evaluation statement beyond max_overlap={max_overlap}: {'; '.join(lines)}"
            + (f" ... and {more} more" if more > 0 else "")
            + ". Remove them, or set near_duplicate_action='drop' (remove their examples) or "
            "'report' (keep them), or raise max_overlap",
            report,
        )
    if flagged and near_duplicate_action == "drop":
        kept = [
            e for e in kept if e["source_problem_id"] not in flagged
            and e["doc_problem_id"] not in flagged
        ]  # fmt: skip
        report.dropped_examples = len(examples) - len(kept)
    if flagged:
        logger.warning(
            "%d near-duplicate training problem(s) (%s): %d examples dropped",
            len(flagged), near_duplicate_action, report.dropped_examples,
        )  # fmt: skip
    return kept, report


__all__ = [
    "NEAR_DUPLICATE_ACTIONS",
    "ContaminationError",
    "DisjointnessReport",
    "EvalSource",
    "check_disjointness",
    "statement_ngrams",
]
