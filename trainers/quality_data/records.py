"""The records the SynH-Rank data steps pass to each other.

A :class:`SeedTask` is a programming task with its stdin/stdout tests; a :class:`Variant` is one
candidate solution of a task with the quality claim it was made for (``dimension`` and
``level``: a "fast" variant is ``("speed", "high")``) and, once verified, what was measured.
Whatever a step leaves out is a :class:`~coreb_toolkit.builders.qualcode.data.Drop` (``stage``,
``reason``, ``item``, ``where``), counted in the step's report; a training list built with
fewer docs of a label than asked is a :class:`Shortfall`, counted the same way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from coreb_toolkit.builders.qualcode.data import Drop
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS

LEVELS: tuple[str, ...] = ("high", "low")
"""A variant's target quality on its dimension (the paper's ``+`` and ``-``)."""

ORIGINS: tuple[str, ...] = ("guideline", "plain", "real", "transform")
"""How a variant came to be: guideline-driven synthesis, plain nucleus sampling (the "w/o
guideline" ablation), a real submission, or a program transformation of another variant."""

LABEL_HIGH, LABEL_LOW, LABEL_IRRELEVANT = 2, 1, 0
"""The hierarchical labels [SynH-Rank §4.2]: high-quality relevant, low-quality relevant,
irrelevant."""


@dataclass(frozen=True)
class SeedTask:
    """A task variants are made for.

    Attributes:
        task_id: unique id (a CodeNet problem id, a TACO id, ...).
        statement: the natural-language task (the query of its lists).
        tests: ``(stdin, expected stdout)`` pairs the variants must pass.
        language: the sandbox language of its variants (``python``).
        reference: a known-correct solution, where there is one (program transformations
            start from it).
        source: where the task was read, for reports.
    """

    task_id: str
    statement: str
    tests: tuple[tuple[str, str], ...] = ()
    language: str = "python"
    reference: str | None = None
    source: str = ""


@dataclass
class Variant:
    """One candidate solution of a task.

    Attributes:
        task_id: the :class:`SeedTask` it solves (or claims to).
        code: the source code.
        origin: one of :data:`ORIGINS`.
        dimension: the quality dimension of its claim (``speed``, ``memory``,
            ``maintainability``), ``None`` for no claim (a real submission before labelling).
            Plain sampling keeps the claim it was asked for; only its guideline is missing.
        level: ``"high"`` or ``"low"`` on ``dimension``, ``None`` for no claim.
        category: the guideline category (Table 2: ``"Algorithm"``, ``"Readability"``...), or
            the transformation's name; ``None`` when neither applies.
        guideline: the guideline text the generator was given, if any.
        parent: the ``variant_id`` this variant was derived from (a transformation's input).
        source_id: the real submission's id (``origin == "real"``).
        judge_cpu_time_ms, judge_memory_kb: the judge's figures of a real submission.
        passed: every test passed in every sandbox run (``None``: not run yet).
        cpu_time_ms, memory_kb: medians of the sandbox runs (``None`` unless ``passed``).
        smell_count, smell_kinds: the smell analyser's findings (``None``: not analysed).
    """

    task_id: str
    code: str
    origin: str
    dimension: str | None = None
    level: str | None = None
    category: str | None = None
    guideline: str | None = None
    parent: str | None = None
    source_id: str | None = None
    judge_cpu_time_ms: float | None = None
    judge_memory_kb: float | None = None
    passed: bool | None = None
    cpu_time_ms: float | None = None
    memory_kb: float | None = None
    smell_count: int | None = None
    smell_kinds: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"Variant.origin must be one of {ORIGINS}, got {self.origin!r}")
        if self.dimension is not None and self.dimension not in QUALCODE_DIMENSIONS:
            raise ValueError(
                f"Variant.dimension must be one of {QUALCODE_DIMENSIONS} or None, got "
                f"{self.dimension!r}"
            )
        if self.level is not None and self.level not in LEVELS:
            raise ValueError(f"Variant.level must be one of {LEVELS} or None, got {self.level!r}")
        if (self.dimension is None) != (self.level is None):
            raise ValueError(
                "Variant.dimension and Variant.level go together (a claim is both), got "
                f"dimension={self.dimension!r}, level={self.level!r}"
            )

    @property
    def variant_id(self) -> str:
        """A stable id: a hash of the task, the claim, the origin, its category and the code."""
        key = "\x1f".join(
            str(x)
            for x in (self.task_id, self.origin, self.dimension, self.level, self.category,
                      self.source_id, self.code)
        )  # fmt: skip
        return f"{self.task_id}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:12]}"


@dataclass(frozen=True)
class Shortfall:
    """A training list built with fewer docs of a label than its options ask for (a task with
    2 low-quality variants gives 1 + 2 + 1 lists where the paper's are 1 + 4 + 1).

    Attributes:
        stage: the step that built the list (``"lists"``).
        reason: what was short, as the report counts it
            (``"fewer than 4 low-quality variants"``).
        item: the list's ``query_id``.
        label: the label that is short of docs.
        have, want: the docs of that label in the list, and the number asked for.
    """

    stage: str
    reason: str
    item: str
    label: int
    have: int
    want: int


LIST_COLUMNS: dict[str, str] = {
    "query_id": "string: unique per list: dimension/task/k, the task's k-th list on the "
    "dimension (one per high-quality variant)",
    "task_id": "string: the seed task (problem) the list is about",
    "dimension": "string: the quality dimension the instruction asks for",
    "instruction": "string: 'Retrieve code that is fast' (QualCode's template)",
    "statement": "string: the task's natural-language description",
    "query": "string: instruction + '\\n' + statement (the cross-encoder's query side)",
    "docs": "list of strings: the candidate codes",
    "labels": "list of ints: 2 high-quality relevant, 1 low-quality relevant, 0 irrelevant",
    "doc_ids": "list of strings: each doc's variant_id",
    "origins": "list of strings: each doc's origin (ORIGINS)",
}
"""The columns of a lists dataset (one row per query), in order. ``query``, ``docs`` and
``labels`` are the shape sentence-transformers' listwise losses take; the rest say where each
list came from. :func:`trainers.quality_data.lists.list_features` gives the ``datasets``
features."""

LISTS_FILE = "lists.parquet"
"""A lists folder holds the lists as this file, its report as ``report.json`` and the problem
split (when there is one) as ``problem_split.json``."""

__all__ = [
    "LABEL_HIGH",
    "LABEL_IRRELEVANT",
    "LABEL_LOW",
    "LEVELS",
    "LISTS_FILE",
    "LIST_COLUMNS",
    "ORIGINS",
    "Drop",
    "SeedTask",
    "Shortfall",
    "Variant",
]
