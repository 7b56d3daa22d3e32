"""The seeded problem split between SynH-Rank training data and the QualCode evaluation build.

Training lists built from real submissions (:mod:`trainers.quality_data.real_data`) must come
from problems QualCode does not evaluate on (issue 16; [SynH-Rank §4.2] trains on tasks
disjoint from its benchmark). :func:`problem_split` puts each problem on a side by a SHA-256
hash of ``(seed, problem_id)``: the same on every machine and under any ``PYTHONHASHSEED``,
independent of the order the ids come in, and a problem keeps its side when others are added.
The split is written as ``problem_split.json`` beside the lists (:func:`write_split`), and the
evaluation build leaves its ``train`` problems out
(``coreb qualcode build ... --exclude-problems-from problem_split.json``; the option
:attr:`coreb_toolkit.builders.qualcode.options.QualcodeOptions.exclude_problems_from`).

Example::

    split = problem_split(data.submissions, eval_fraction=0.5, seed=0)
    write_split("lists/problem_split.json", split)
    assert read_split("lists/problem_split.json") == split
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the QualCode build reads these files too, and the builders cannot import the trainers
from coreb_toolkit.builders.qualcode.prepare import SPLIT_FORMAT

SPLIT_FILE = "problem_split.json"
"""The split's file name in a lists folder."""


HASH_RULE = "eval if int(sha256(f'{seed}:{problem_id}')[:16], 16) / 16**16 < eval_fraction"
"""How a problem's side is decided, written into every split file so that it can be checked."""


@dataclass(frozen=True)
class ProblemSplit:
    """Which problems train and which evaluate.

    Attributes:
        train: the training problems' ids, sorted (their submissions may become lists; the
            QualCode build of the evaluation problems leaves them out).
        eval: the evaluation problems' ids, sorted.
        seed: the seed of the hash.
        eval_fraction: the target share of evaluation problems (each problem falls on the
            evaluation side with this probability, so the realised share varies around it).
        source: what the problem ids were read from, for the record.
    """

    train: tuple[str, ...]
    eval: tuple[str, ...]
    seed: int
    eval_fraction: float
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("train", "eval"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(p, str) and p for p in value):
                raise TypeError(
                    f"ProblemSplit.{name} must be a tuple of non-empty problem id strings, got "
                    f"{value!r}"
                )
            if list(value) != sorted(set(value)):
                raise ValueError(
                    f"ProblemSplit.{name} must be sorted and without repeats (problem_split "
                    "makes it so); sort it with tuple(sorted(set(ids)))"
                )
        both = sorted(set(self.train) & set(self.eval))
        if both:
            raise ValueError(
                f"ProblemSplit: {len(both)} problem(s) on both sides, e.g. {both[:5]}; a "
                "problem trains or evaluates, never both"
            )
        _check_seed(self.seed, "ProblemSplit.seed")
        _check_fraction(self.eval_fraction, "ProblemSplit.eval_fraction")

    def side(self, problem_id: str) -> str | None:
        """``"train"``, ``"eval"``, or ``None`` for a problem the split does not list."""
        for name in ("train", "eval"):
            ids = getattr(self, name)
            i = bisect.bisect_left(ids, problem_id)
            if i < len(ids) and ids[i] == problem_id:
                return name
        return None


def eval_side(problem_id: str, seed: int, eval_fraction: float) -> bool:
    """Whether ``problem_id`` falls on the evaluation side (:data:`HASH_RULE`)."""
    digest = hashlib.sha256(f"{seed}:{problem_id}".encode()).hexdigest()
    return int(digest[:16], 16) / 16**16 < eval_fraction


def problem_split(
    problem_ids: Iterable[str], *, eval_fraction: float = 0.5, seed: int = 0, source: str = ""
) -> ProblemSplit:
    """Split problems into training and evaluation sides by a seeded hash of each id.

    Args:
        problem_ids: the problems (repeats are counted once; a mapping gives its keys, so
            ``problem_split(data.submissions)`` works).
        eval_fraction: each problem's probability of the evaluation side, in (0, 1).
        seed: the hash seed (any int; another seed gives an independent split).
        source: what the ids were read from, kept in the split file.

    Returns:
        A :class:`ProblemSplit`.

    Raises:
        ValueError: no problem ids, an empty or non-string id, or a fraction outside (0, 1).
    """
    _check_seed(seed, "seed")
    _check_fraction(eval_fraction, "eval_fraction")
    if isinstance(problem_ids, (str, bytes)):
        raise TypeError(
            f"problem_ids must be an iterable of ids, got the single string {problem_ids!r}: "
            f"pass [{problem_ids!r}]"
        )
    ids = set()
    for p in problem_ids:
        if not isinstance(p, str) or not p:
            raise ValueError(f"problem ids must be non-empty strings, got {p!r}")
        ids.add(p)
    if not ids:
        raise ValueError("problem_split() got no problem ids: give the problems to split")
    evals = {p for p in ids if eval_side(p, seed, eval_fraction)}
    return ProblemSplit(
        train=tuple(sorted(ids - evals)),
        eval=tuple(sorted(evals)),
        seed=seed,
        eval_fraction=float(eval_fraction),
        source=source,
    )


def write_split(path: str | os.PathLike[str], split: ProblemSplit) -> Path:
    """Write ``split`` as JSON (by convention ``problem_split.json``); returns the path.

    The file holds ``format``, ``seed``, ``eval_fraction``, ``hash`` (:data:`HASH_RULE`),
    ``source``, the counts, ``train`` and ``eval``; the same split always gives the same bytes.
    """
    if not isinstance(split, ProblemSplit):
        raise TypeError(f"write_split() takes a ProblemSplit, got {type(split).__name__}")
    path = Path(path)
    record = {
        "format": SPLIT_FORMAT,
        "seed": split.seed,
        "eval_fraction": split.eval_fraction,
        "hash": HASH_RULE,
        "source": split.source,
        "n_train": len(split.train),
        "n_eval": len(split.eval),
        "train": list(split.train),
        "eval": list(split.eval),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_split(path: str | os.PathLike[str]) -> ProblemSplit:
    """Read a split written by :func:`write_split` (a folder: its ``problem_split.json``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not JSON, not a split file, or a field missing or of the wrong type; the
            message names the file and the field.
    """
    path = Path(path)
    if path.is_dir():
        path = path / SPLIT_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no problem split at {path} (write one with write_split)")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a JSON problem split ({e})") from e
    if not isinstance(record, dict):
        raise ValueError(f"{path}: a problem split is a JSON object, got {type(record).__name__}")
    if record.get("format") != SPLIT_FORMAT:
        raise ValueError(
            f"{path}: field 'format' must be {SPLIT_FORMAT!r}, got {record.get('format')!r} "
            "(is this a file written by write_split?)"
        )
    sides = {}
    for name in ("train", "eval"):
        value = record.get(name)
        if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
            raise ValueError(
                f"{path}: field {name!r} must be a list of problem id strings, got {_short(value)}"
            )
        sides[name] = tuple(sorted(set(value)))
    for name, check in (("seed", _check_seed), ("eval_fraction", _check_fraction)):
        try:
            check(record.get(name), name)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{path}: field {e}") from e
    source = record.get("source", "")
    if not isinstance(source, str):
        raise ValueError(f"{path}: field 'source' must be a string, got {_short(source)}")
    try:
        return ProblemSplit(
            sides["train"], sides["eval"], record["seed"], float(record["eval_fraction"]), source
        )
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from e


def _check_seed(seed: Any, name: str) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"{name!r} must be an int, got {_short(seed)}")


def _check_fraction(value: Any, name: str) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not 0 < value < 1:
        raise ValueError(
            f"{name!r} must be a number strictly between 0 and 1 (the share of evaluation "
            f"problems), got {_short(value)}"
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


__all__ = [
    "HASH_RULE",
    "SPLIT_FILE",
    "SPLIT_FORMAT",
    "ProblemSplit",
    "eval_side",
    "problem_split",
    "read_split",
    "write_split",
]
