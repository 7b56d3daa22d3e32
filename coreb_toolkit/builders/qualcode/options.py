"""The construction options of QualCode / MC-QualCode, and the instruction text.

:class:`QualcodeOptions` is the one place of these fields: the ``datasets`` builder config and
the CLI embed it, and each field's ``help`` is its documentation everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from coreb_toolkit.vocabulary import (
    QUALCODE_CONDITIONS,
    QUALCODE_INSTRUCTION_TEMPLATE,
    qualcode_instruction_text,
)

#: the instruction template a build uses unless told another (the vocabulary's)
DEFAULT_TEMPLATE = QUALCODE_INSTRUCTION_TEMPLATE
MC_BALANCES: tuple[str, ...] = ("strict", "quota")
LABEL_SOURCES: tuple[str, ...] = ("judge", "measured")


def instruction(conditions: str | Iterable[str], template: str = DEFAULT_TEMPLATE) -> str:
    """``Retrieve code that is fast and memory-efficient`` for dimensions (in the given order).

    >>> instruction(["speed", "maintainability"])
    'Retrieve code that is fast and maintainable'
    """
    items = [conditions] if isinstance(conditions, str) else list(conditions)
    unknown = [c for c in items if c not in QUALCODE_CONDITIONS]
    if unknown or not items:
        raise ValueError(
            f"conditions must be a non-empty list of {list(QUALCODE_CONDITIONS)}, got {items!r}"
        )
    return qualcode_instruction_text([QUALCODE_CONDITIONS[c] for c in items], template)


@dataclass(frozen=True)
class QualcodeOptions:
    """Every rule the construction leaves open, with the paper's values as defaults
    [SynH-Rank §3]; each field's ``help`` says what it does."""

    seed: int = field(
        default=0,
        metadata={
            "help": "Seeds every random choice (maintainability positives, retrieval "
            "negatives, triplet sampling); string-seeded per problem, so results do not depend "
            "on order."
        },
    )
    margin: float = field(
        default=2.0,
        metadata={
            "help": "Speed/memory pairs need margin * figure(chosen) < figure(rejected) (2.0)."
        },
    )
    retrieval_negatives: int = field(
        default=99,
        metadata={"help": "Distractors per retrieval query, other problems' submissions (99)."},
    )
    mc_per_k: int = field(
        default=3000,
        metadata={"help": "MC-QualCode triplets per condition count k (3,000)."},
    )
    mc_balance: str = field(
        default="strict",
        metadata={
            "help": "'strict' takes the same number from every combination of k dimensions "
            "(the smallest available, capped at mc_per_k // C(3, k)); 'quota' takes up to the "
            "cap from each, so a scarce combination is under-represented."
        },
    )
    control_unrequested: bool = field(
        default=True,
        metadata={
            "help": "Chosen and rejected must carry equal labels on the dimensions the "
            "instruction does not ask for."
        },
    )
    analyser: str = field(
        default="ruff",
        metadata={"help": "The smell analyser (coreb_toolkit.quality.smells.get_analyser)."},
    )
    labels: str = field(
        default="judge",
        metadata={
            "help": "'judge' (the paper: the judge's single CPU/memory reading) or 'measured' "
            "(medians of sandboxed re-runs on the public tests; problems without tests get no "
            "speed/memory pairs)."
        },
    )
    repeats: int = field(default=5, metadata={"help": "Re-runs per submission in measured mode."})
    template: str = field(
        default=DEFAULT_TEMPLATE,
        metadata={
            "help": "The instruction template; {conditions} becomes 'fast and maintainable'."
        },
    )
    language: str = field(
        default="Python", metadata={"help": "The CodeNet language of the submissions."}
    )
    require_statement: bool = field(
        default=True,
        metadata={"help": "Drop problems whose statement is missing (a query needs one)."},
    )
    english_only: bool = field(
        default=True,
        metadata={
            "help": "Drop problems whose statement exists only in Japanese (the paper's "
            "queries are English descriptions; about a third of CodeNet's are Japanese-only)."
        },
    )

    exclude_problems_from: str | None = field(
        default=None,
        metadata={
            "metavar": "FILE",
            "help": "A problem split file (problem_split.json, written with SynH-Rank training "
            "lists): its 'train' problems are left out of the build, so that no training "
            "problem is evaluated; the report and the card say how many and record the file's "
            "seed and SHA-256.",
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.exclude_problems_from, os.PathLike):
            object.__setattr__(self, "exclude_problems_from", os.fspath(self.exclude_problems_from))
        if self.exclude_problems_from is not None and (
            not isinstance(self.exclude_problems_from, str) or not self.exclude_problems_from
        ):
            raise ValueError(
                "exclude_problems_from must be the path of a problem split file "
                f"(problem_split.json) or None, got {self.exclude_problems_from!r}"
            )
        if not (isinstance(self.margin, (int, float)) and self.margin >= 1):
            raise ValueError(f"margin must be a number >= 1, got {self.margin!r}")
        for name in ("retrieval_negatives", "mc_per_k", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.mc_balance not in MC_BALANCES:
            raise ValueError(f"mc_balance must be 'strict' or 'quota', got {self.mc_balance!r}")
        if self.labels not in LABEL_SOURCES:
            raise ValueError(f"labels must be 'judge' or 'measured', got {self.labels!r}")
        if "{conditions}" not in self.template:
            raise ValueError(f"template must contain '{{conditions}}', got {self.template!r}")
