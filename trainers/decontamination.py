"""Problem-level disjointness between training examples and every evaluation release, and
SynH-Rank's n-gram decontamination with a template filter [CoREB §4.3 ("problem-level
disjointness"); SynH-Rank §4].

Two checks, in order:

1. **Shared problems.** A ``source_problem_id`` (of a training query or document) that an
   evaluation source also holds (in a query or a corpus) is refused with a
   :class:`ContaminationError`, unless ``allow_shared_problems=True`` (then reported).
2. **Near-duplicate statements.** CoREB's releases are cut from overlapping problem pools, so one
   problem can come back under another id; SynH-Rank removes any training seed that shares a
   10-gram with the test set. Each statement is cut into word n-grams (lowercased ``\\w+``
   tokens); **template n-grams are ignored** (below); a training statement's overlap is the share
   of its remaining distinct n-grams found among those of all evaluation statements (a statement
   shorter than n words: 1.0 on an exact match of its normalised text, else 0). A problem whose
   statement overlaps more than ``max_overlap`` is a near duplicate: an error, reported, or its
   examples dropped (``near_duplicate_action``).

**The template filter** (``template_filter=True``), decided from the published releases: 102 of
v202602's 167 problems share a 10-gram with a v202603 statement and 0 of them share a problem
id; the shared n-grams are the judges' boilerplate ("the input is given from standard input in
the following format", "all input values are integers") and sample data ("1 2 3 4 5 ..."). Two
kinds of n-gram are therefore not compared:

* **data**: half or more of its tokens hold a digit or are one character long (sample input and
  output blocks, constraints such as ``1 <= n <= 2 10 5``, input formats such as ``n m a_1 b_1``);
* **frequent**: it occurs in the statements of at least :data:`TEMPLATE_MIN_PROBLEMS` problems
  and of more than ``template_share`` (default 1%) of the problems of either side (training or
  evaluation). A statement copied from one evaluation problem puts its text in one problem of
  each side, so it stays.

What remains on the real v202602 -> v202603 pair is short boilerplate shared by one problem of
each side ("the sum of n over all test cases does not exceed", "can be derived from another
sequence by deleting zero or more elements"): at most 4.9% of any v202602 statement's compared
n-grams (7.4% with nothing ignored; 125 of 167 problems share at least one), where a statement
copied from v202603 shares all of its own. A share of 0 (SynH-Rank's "any shared 10-gram") would
refuse boilerplate; the CoREB-Reranker's ``max_ngram_overlap`` is 0.2
(:class:`trainers.coreb_reranker_config.CorebRerankerConfig` and the paper config).
The report counts what was ignored and why, shows the most frequent template n-grams, and lists
the training problems closest to the threshold, flagged or not.

The evaluation n-grams are hashed once into one sorted array (8 bytes an n-gram): each training
statement is looked up in it, never compared pairwise. Only for the near duplicates found is a
second pass made, to name the evaluation problem sharing the most n-grams with each.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainers.examples import problem_ids, problem_statements, split_release

logger = logging.getLogger(__name__)

NEAR_DUPLICATE_ACTIONS: tuple[str, ...] = ("error", "report", "drop")
#: A frequent n-gram is in at least this many problems of one side (and > template_share).
TEMPLATE_MIN_PROBLEMS = 3
_TOKEN = re.compile(r"\w+")
_SHOWN = 10
_CLOSEST = 5


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
    template: dict[str, Any] = field(default_factory=dict)
    closest: list[dict[str, Any]] = field(default_factory=list)

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
            "template": dict(self.template),
            "closest": [dict(c) for c in self.closest],
        }


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def is_data(tokens: Sequence[str]) -> bool:
    """Whether an n-gram is sample or format data: half or more of its tokens hold a digit or
    are one character long."""
    data = sum(1 for t in tokens if len(t) == 1 or any(c.isdigit() for c in t))
    return 2 * data >= len(tokens)


def statement_ngrams(text: str, n: int, *, skip_data: bool = False) -> set[int]:
    """The hashed word n-grams of ``text`` (lowercased ``\\w+`` tokens); a text shorter than
    ``n`` words is one key, its normalised text, so that only an exact match counts.
    ``skip_data``: leave out the data n-grams (:func:`is_data`)."""
    tokens = _tokens(text)
    if len(tokens) < n:
        return {hash(("short", " ".join(tokens)))} if tokens else set()
    grams = (tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return {hash(g) for g in grams if not (skip_data and is_data(g))}


def _hash_array(values: Iterable[int]) -> np.ndarray:
    return np.unique(np.fromiter(values, dtype=np.int64))


def _found(table: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which ``keys`` are in the sorted ``table``."""
    if not len(table) or not len(keys):
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[at] == keys


def _check_arguments(ngram: int, max_overlap: float, action: str, template_share: float) -> None:
    if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 1:
        raise ValueError(f"ngram={ngram!r}: must be a positive integer (SynH-Rank: 10)")
    for name, value in (("max_overlap", max_overlap), ("template_share", template_share)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name}={value!r}: must be a number in [0, 1]")
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}={value!r}: must be in [0, 1]")
    if action not in NEAR_DUPLICATE_ACTIONS:
        raise ValueError(
            f"near_duplicate_action={action!r}: must be one of {list(NEAR_DUPLICATE_ACTIONS)}"
        )


@dataclass
class _Template:
    """The template n-grams of a train/eval pair: the frequent ones (sorted hashes) and the
    counts of what was ignored."""

    enabled: bool
    share: float
    frequent: np.ndarray
    counts: dict[str, int]
    examples: list[dict[str, Any]]

    def keys(self, text: str, n: int) -> np.ndarray:
        """A statement's n-grams that are compared (sorted hashes)."""
        keys = _hash_array(statement_ngrams(text, n, skip_data=self.enabled))
        return keys[~_found(self.frequent, keys)] if self.enabled else keys

    def to_dict(self, n: int) -> dict[str, Any]:
        if not self.enabled:
            return {"enabled": False}
        return {
            "enabled": True,
            "rule": (
                f"{n}-grams not compared: data (half or more of the tokens hold a digit or are "
                "one character: sample blocks, constraints, input formats) and frequent (in "
                f"at least {TEMPLATE_MIN_PROBLEMS} problems and more than {self.share:.0%} of "
                "the problems of the training or the evaluation side: judges' boilerplate)"
            ),
            "template_share": self.share,
            "min_problems": TEMPLATE_MIN_PROBLEMS,
            **self.counts,
            "most_frequent": self.examples,
        }


def _problem_grams(statements: Mapping[str, Sequence[str]], n: int) -> dict[str, np.ndarray]:
    """Each problem's distinct non-data n-grams (sorted hashes)."""
    return {
        pid: _hash_array(g for t in texts for g in statement_ngrams(t, n, skip_data=True))
        for pid, texts in statements.items()
    }


def _frequent(grams: Mapping[str, np.ndarray], share: float) -> tuple[np.ndarray, np.ndarray]:
    """The n-grams of more than ``share`` (and at least TEMPLATE_MIN_PROBLEMS) of the problems,
    with their problem counts."""
    if not grams:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    keys, counts = np.unique(np.concatenate(list(grams.values())), return_counts=True)
    floor = max(TEMPLATE_MIN_PROBLEMS, math.floor(share * len(grams)) + 1)
    hit = counts >= floor
    return keys[hit], counts[hit]


def _data_count(statements: Iterable[Sequence[str]], n: int) -> int:
    """The distinct data n-grams (:func:`is_data`) of the statements."""
    seen: set[int] = set()
    for texts in statements:
        for text in texts:
            tokens = _tokens(text)
            for i in range(len(tokens) - n + 1):
                gram = tuple(tokens[i : i + n])
                if is_data(gram):
                    seen.add(hash(gram))
    return len(seen)


def _template(
    train_statements: Mapping[str, Sequence[str]],
    eval_statements: Sequence[tuple[str, Mapping[str, Sequence[str]]]],
    n: int,
    enabled: bool,
    share: float,
) -> _Template:
    """The template filter of a train/eval pair (:class:`_Template`)."""
    if not enabled:
        return _Template(False, share, np.zeros(0, dtype=np.int64), {}, [])
    eval_by_problem: dict[str, list[str]] = {}
    for spec, statements in eval_statements:
        for pid, texts in statements.items():
            eval_by_problem.setdefault(f"{spec}\x00{pid}", []).extend(texts)
    sides = {"train": train_statements, "eval": eval_by_problem}
    found = {side: _frequent(_problem_grams(st, n), share) for side, st in sides.items()}
    frequent = np.union1d(found["train"][0], found["eval"][0])
    counts = {
        "data_ngrams": _data_count([*train_statements.values(), *eval_by_problem.values()], n),
        "frequent_train_ngrams": len(found["train"][0]),
        "frequent_eval_ngrams": len(found["eval"][0]),
    }
    examples = _frequent_examples(sides, found, n)
    return _Template(True, share, frequent, counts, examples)


def _frequent_examples(
    sides: Mapping[str, Mapping[str, Sequence[str]]],
    found: Mapping[str, tuple[np.ndarray, np.ndarray]],
    n: int,
) -> list[dict[str, Any]]:
    """The :data:`_SHOWN` most frequent template n-grams as text, with their problem counts."""
    wanted = {(side, int(k)): int(c) for side, (keys, counts) in found.items()
              for k, c in zip(keys, counts, strict=True)}  # fmt: skip
    text: dict[tuple[str, int], str] = {}
    for side, statements in sides.items():
        for texts in statements.values():
            for t in texts:
                tokens = _tokens(t)
                for i in range(len(tokens) - n + 1):
                    gram = tuple(tokens[i : i + n])
                    if (side, hash(gram)) in wanted:
                        text.setdefault((side, hash(gram)), " ".join(gram))
    ranked = sorted(
        ((count, side, text.get((side, key), "")) for (side, key), count in wanted.items()),
        key=lambda r: (-r[0], r[1], r[2]),
    )
    return [{"ngram": t, "side": side, "problems": c} for c, side, t in ranked[:_SHOWN]]


def _overlaps(
    train_statements: Mapping[str, Sequence[str]],
    skip: set[str],
    table: np.ndarray,
    n: int,
    template: _Template,
) -> dict[str, tuple[float, list[set[int]]]]:
    """Per training problem: its largest statement overlap and the compared n-grams of its
    statements that overlap at all (for naming the eval problem)."""
    out: dict[str, tuple[float, list[set[int]]]] = {}
    for pid, texts in train_statements.items():
        if pid in skip:
            continue
        best, hit = 0.0, []
        for text in texts:
            keys = template.keys(text, n)
            if not len(keys):
                continue
            shared = int(_found(table, keys).sum())
            if shared:
                best = max(best, shared / len(keys))
                hit.append({int(k) for k in keys})
        out[pid] = (best, hit)
    return out


def _best_matches(
    flagged: Mapping[str, list[set[int]]],
    eval_keys: Sequence[tuple[str, str, np.ndarray]],
) -> dict[str, tuple[str, str]]:
    """For each flagged training problem, the (eval source, eval problem) sharing the most
    distinct compared n-grams with its overlapping statements; one pass over the eval
    problems' compared n-grams (``eval_keys``: source, problem, sorted hashes)."""
    owners: dict[int, list[str]] = {}
    for pid, sets in flagged.items():
        for gram in set().union(*sets):
            owners.setdefault(gram, []).append(pid)
    best: dict[str, tuple[int, str, str]] = {}
    for spec, eval_pid, keys in eval_keys:
        counts: dict[str, int] = {}
        for gram in {int(k) for k in keys} & owners.keys():
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
    template_filter: bool = True,
    template_share: float = 0.01,
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
        template_filter: ignore template n-grams (data and frequent ones; module docstring).
        template_share: an n-gram in more than this share of one side's problems (and at least
            :data:`TEMPLATE_MIN_PROBLEMS`) is template text.

    Returns:
        The examples kept and the :class:`DisjointnessReport`.

    Raises:
        ContaminationError: a shared problem (unless allowed) or, with ``"error"``, a near
            duplicate.
    """
    _check_arguments(ngram, max_overlap, near_duplicate_action, template_share)
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
    skip = set(shared)  # a shared problem (allowed) is the same problem, not a near duplicate
    kept_train = {p: t for p, t in train_statements.items() if p not in skip}
    template = _template(kept_train, eval_statements, ngram, template_filter, template_share)
    report.template = template.to_dict(ngram)
    # each evaluation problem's compared n-grams, computed once: the lookup table and the
    # naming of the near duplicates' evaluation problems both read them
    eval_keys = [
        (spec, pid, np.unique(np.concatenate(
            [np.zeros(0, dtype=np.int64)] + [template.keys(t, ngram) for t in texts]
        )))
        for spec, statements in eval_statements
        for pid, texts in statements.items()
    ]  # fmt: skip
    table = np.unique(np.concatenate([np.zeros(0, dtype=np.int64)] + [k for *_, k in eval_keys]))
    overlaps = _overlaps(kept_train, set(), table, ngram, template)
    flagged = {pid: hit for pid, (best, hit) in overlaps.items() if hit and best > max_overlap}
    matches = _best_matches(flagged, eval_keys) if flagged else {}
    report.near_duplicates = [
        {"train_problem": pid, "eval_problem": matches[pid][1], "eval_source": matches[pid][0],
         "overlap": overlaps[pid][0]}
        for pid in sorted(flagged)
    ]  # fmt: skip
    report.closest = [
        {"train_problem": pid, "overlap": best}
        for pid, (best, _) in sorted(overlaps.items(), key=lambda kv: (-kv[1][0], kv[0]))
        if best > 0
    ][:_CLOSEST]
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
            f"evaluation statement beyond max_overlap={max_overlap} (template n-grams "
            f"{'ignored' if template_filter else 'compared: template_filter is off'}): "
            f"{'; '.join(lines)}"
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
    "TEMPLATE_MIN_PROBLEMS",
    "ContaminationError",
    "DisjointnessReport",
    "EvalSource",
    "check_disjointness",
    "is_data",
    "statement_ngrams",
]
