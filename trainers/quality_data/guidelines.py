"""SynH-Rank's guideline groups and the synthesis prompt [SynH-Rank §4.1, Table 2, Fig. 2].

For each quality dimension ``d`` the paper prompts an LLM with a dimension-specific system prompt
and one of ``K = 4`` guideline groups, asking for a high-quality (``+``) or a low-quality
(``-``) variant of a task's solution: ``c ~ LLM(prompt(d, level, g, t))`` (equation 3). Cycling
the ``K`` groups gives up to ``2K`` variants per dimension per task.

The groups are data, not code: ``guidelines.json`` next to this module holds, per dimension, the
system prompt, the objective of each level, and the ``K`` groups (a category with its high- and
low-quality guideline, Table 2's phrases verbatim). A new dimension or guideline is a new entry
in that file (or in a file of your own, :func:`load_guidelines` ``path``); a new dimension must
also be a QualCode dimension (:data:`coreb_toolkit.vocabulary.QUALCODE_CONDITIONS`).

The paper shows its prompts only as an image (Figure 2, "Synthesis prompts for the speed
dimension"), which our text copy lacks: the system prompts, objectives and the user message's
wording here are ours, written from §4.1's description (dimension-specific system prompt, target
level, one guideline group, the task), with an output contract added so that a reply is one
runnable program.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from coreb_toolkit.vocabulary import QUALCODE_CONDITIONS
from trainers.quality_data.records import LEVELS, SeedTask

GUIDELINES_FILE = "guidelines.json"
"""The packaged guideline file (package data of ``trainers.quality_data``)."""

OUTPUT_CONTRACT = (
    "Reply with one complete Python 3 program that reads the input from standard input and "
    "writes the answer to standard output. Put the whole program in a single ```python fenced "
    "code block and write nothing else: no explanation, no examples, no second version."
)
"""The last part of every synthesis prompt: what a reply must be for :func:`extract_code` and
the sandbox (our addition to the paper's prompt)."""

_TOP_KEYS = {"k": True, "dimensions": True, "description": False, "reference": False}
_DIMENSION_KEYS = ("system", "objective", "groups")
_GROUP_KEYS = ("category", *LEVELS)


@dataclass(frozen=True)
class GuidelineGroup:
    """One row of Table 2: a category and its high- and low-quality guideline."""

    category: str
    high: str
    low: str

    def text(self, level: str) -> str:
        """The guideline of ``level`` (``"high"`` or ``"low"``)."""
        _check_level(level)
        return self.high if level == "high" else self.low


@dataclass(frozen=True)
class DimensionGuidelines:
    """A dimension's system prompt, its two objectives and its ``K`` guideline groups."""

    name: str
    system: str
    high: str
    low: str
    groups: tuple[GuidelineGroup, ...]

    def objective(self, level: str) -> str:
        """What a variant of ``level`` must be (``"Write a fast solution: ..."``)."""
        _check_level(level)
        return self.high if level == "high" else self.low


@dataclass(frozen=True)
class Guidelines:
    """The validated contents of a guideline file (:func:`load_guidelines`).

    Attributes:
        k: groups per dimension (the paper's ``K = 4``).
        entries: one :class:`DimensionGuidelines` per dimension, in the file's order.
        path: the file read, for messages and reports.
    """

    k: int
    entries: tuple[DimensionGuidelines, ...]
    path: str

    @property
    def dimensions(self) -> tuple[str, ...]:
        """The dimensions the file defines, in its order."""
        return tuple(e.name for e in self.entries)

    def dimension(self, name: str) -> DimensionGuidelines:
        """The entry of dimension ``name``; a ValueError naming the known ones otherwise."""
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise ValueError(
            f"dimension {name!r} is not in the guideline file {self.path} (it has "
            f"{', '.join(self.dimensions)}); add an entry there to synthesise for it"
        )

    def groups(self, dimension: str) -> tuple[GuidelineGroup, ...]:
        """The ``K`` guideline groups of ``dimension``."""
        return self.dimension(dimension).groups

    def system(self, dimension: str) -> str:
        """The system prompt of ``dimension``."""
        return self.dimension(dimension).system

    def objective(self, dimension: str, level: str) -> str:
        """The objective of ``level`` on ``dimension``."""
        return self.dimension(dimension).objective(level)

    def prompt(
        self,
        dimension: str,
        level: str,
        guideline: str | GuidelineGroup | None,
        task: SeedTask,
    ) -> list[dict]:
        """The chat messages of ``prompt(d, level, g, t)`` [SynH-Rank §4.1, equation 3].

        A system message (the dimension's system prompt), then a user message with the
        objective of ``level``, the task statement, the guideline, and :data:`OUTPUT_CONTRACT`.

        Args:
            dimension: one of :attr:`dimensions`.
            level: ``"high"`` or ``"low"``.
            guideline: a guideline text, a :class:`GuidelineGroup` (its ``level`` text, with its
                category named), or ``None``: the same prompt without a guideline (the paper's
                "w/o guideline" ablation, plain nucleus sampling).
            task: the :class:`SeedTask` whose statement the variant must solve; its language
                must be ``python`` (Table 2's guidelines and the output contract are Python's).

        Raises:
            TypeError: ``task`` is not a SeedTask, ``guideline`` of another type.
            ValueError: unknown dimension or level, empty guideline or statement, a non-Python
                task.
        """
        entry = self.dimension(dimension)
        objective = entry.objective(level)
        if not isinstance(task, SeedTask):
            raise TypeError(f"task must be a SeedTask, got {type(task).__name__}: {task!r}")
        if not task.statement.strip():
            raise ValueError(f"task {task.task_id!r} has an empty statement: nothing to prompt")
        if task.language != "python":
            raise ValueError(
                f"task {task.task_id!r} has language {task.language!r}; the synthesis prompts ask "
                "for Python 3 (Table 2's guidelines are Python's): give python tasks"
            )
        parts = [objective, f"## Task\n{task.statement.strip()}"]
        if isinstance(guideline, GuidelineGroup):
            parts.append(
                f"## Guideline ({guideline.category})\n"
                f"Reach the objective with this strategy: {guideline.text(level)}."
            )
        elif isinstance(guideline, str):
            if not guideline.strip():
                raise ValueError(
                    "guideline must be a non-empty text, a GuidelineGroup, or None for the "
                    "prompt without guideline; got an empty text"
                )
            parts.append(f"## Guideline\nReach the objective with this strategy: {guideline}.")
        elif guideline is not None:
            raise TypeError(
                f"guideline must be a str, a GuidelineGroup or None, got {type(guideline).__name__}"
            )
        parts.append(f"## Output\n{OUTPUT_CONTRACT}")
        return [
            {"role": "system", "content": entry.system},
            {"role": "user", "content": "\n\n".join(parts)},
        ]


def prompt(
    dimension: str,
    level: str,
    guideline: str | GuidelineGroup | None,
    task: SeedTask,
    *,
    guidelines: Guidelines | None = None,
) -> list[dict]:
    """``prompt(d, level, g, t)`` of SynH-Rank §4.1 with the packaged guidelines (or
    ``guidelines``); see :meth:`Guidelines.prompt`.

    Example:
        >>> from trainers.quality_data.records import SeedTask
        >>> task = SeedTask("p1", "Print the sum of the integers read from stdin.")
        >>> messages = prompt("speed", "low", "Brute-force, exhaustive search", task)
        >>> [m["role"] for m in messages]
        ['system', 'user']
    """
    chosen = guidelines if guidelines is not None else _packaged()
    return chosen.prompt(dimension, level, guideline, task)


def load_guidelines(path: str | os.PathLike[str] | None = None) -> Guidelines:
    """Read and validate a guideline file (``None``: the packaged Table 2 file).

    The file is JSON::

        {"k": 4,
         "dimensions": {
           "speed": {"system": "...",
                     "objective": {"high": "...", "low": "..."},
                     "groups": [{"category": "Algorithm", "high": "...", "low": "..."}, ...]},
           ...}}

    with optional ``description`` and ``reference`` strings. Every field must be present and a
    non-empty string, every dimension must have exactly ``k`` groups with distinct categories,
    the levels are exactly ``high`` and ``low``, and every dimension must be a QualCode dimension.

    Raises:
        ValueError: naming the file, the dimension, the group index and the field that is wrong.
    """
    if path is None:
        source = resources.files("trainers.quality_data") / GUIDELINES_FILE
        where = str(source)
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(
                f"the packaged guideline file {where} is missing ({err}); reinstall the package "
                "(it is package data of trainers.quality_data)"
            ) from err
    else:
        where = str(Path(path))
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise ValueError(f"cannot read the guideline file {where}: {err}") from err
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"{where} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from err
    except _DuplicateKeyError as err:
        raise ValueError(
            f"{where}: duplicate key {err.args[0]!r} (one would silently win)"
        ) from err
    return _parse(data, where)


@functools.lru_cache(maxsize=1)
def _packaged() -> Guidelines:
    return load_guidelines()


class _DuplicateKeyError(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _parse(data: Any, where: str) -> Guidelines:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object at the top, got {type(data).__name__}")
    _check_keys(data, [k for k, required in _TOP_KEYS.items() if required], list(_TOP_KEYS), where)
    for key in ("description", "reference"):
        if key in data:
            _text(data, key, where)
    k = data["k"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"{where}: 'k' (groups per dimension) must be a positive int, got {k!r}")
    dimensions = data["dimensions"]
    if not isinstance(dimensions, dict) or not dimensions:
        raise ValueError(
            f"{where}: 'dimensions' must be a non-empty object of dimension -> entry, got "
            f"{'an empty one' if isinstance(dimensions, dict) else type(dimensions).__name__}"
        )
    entries = tuple(_dimension(name, value, k, where) for name, value in dimensions.items())
    return Guidelines(k=k, entries=entries, path=where)


def _dimension(name: str, value: Any, k: int, where: str) -> DimensionGuidelines:
    at = f"{where}: dimensions.{name}"
    if name not in QUALCODE_CONDITIONS:
        raise ValueError(
            f"{at}: dimension {name!r} is not a QualCode dimension; a dimension must also exist in "
            f"coreb_toolkit.vocabulary.QUALCODE_CONDITIONS (now {', '.join(QUALCODE_CONDITIONS)}):"
            " add it there, with its instruction adjective, first"
        )
    if not isinstance(value, dict):
        raise ValueError(f"{at}: expected an object, got {type(value).__name__}")
    _check_keys(value, _DIMENSION_KEYS, _DIMENSION_KEYS, at)
    system = _text(value, "system", at)
    objective = value["objective"]
    if not isinstance(objective, dict):
        raise ValueError(f"{at}.objective: expected an object with 'high' and 'low'")
    _check_keys(objective, LEVELS, LEVELS, f"{at}.objective")
    high, low = (_text(objective, level, f"{at}.objective") for level in LEVELS)
    groups = value["groups"]
    if not isinstance(groups, list):
        raise ValueError(f"{at}.groups: expected a list of groups, got {type(groups).__name__}")
    if len(groups) != k:
        raise ValueError(
            f"{at}.groups: {len(groups)} groups, but the file's k = {k}: every dimension needs "
            "exactly k groups (change 'k' or the groups)"
        )
    parsed: list[GuidelineGroup] = []
    for i, group in enumerate(groups):
        g_at = f"{at}.groups[{i}]"
        if not isinstance(group, dict):
            raise ValueError(f"{g_at}: expected an object, got {type(group).__name__}")
        _check_keys(group, _GROUP_KEYS, _GROUP_KEYS, g_at)
        item = GuidelineGroup(*(_text(group, key, g_at) for key in _GROUP_KEYS))
        for j, earlier in enumerate(parsed):
            if earlier.category == item.category:
                raise ValueError(
                    f"{g_at}: category {item.category!r} is already the category of groups[{j}]; "
                    "categories name the groups of a dimension and must be distinct"
                )
        parsed.append(item)
    return DimensionGuidelines(name, system, high, low, tuple(parsed))


def _check_keys(obj: Mapping[str, Any], required: Any, allowed: Any, at: str) -> None:
    missing = [key for key in required if key not in obj]
    if missing:
        raise ValueError(
            f"{at}: missing field {missing[0]!r} (needs {', '.join(repr(k) for k in required)})"
        )
    unknown = [key for key in obj if key not in allowed]
    if unknown:
        raise ValueError(
            f"{at}: unknown field {unknown[0]!r} (allowed: {', '.join(repr(k) for k in allowed)})"
        )


def _text(obj: Mapping[str, Any], key: str, at: str) -> str:
    value = obj[key]
    if not isinstance(value, str):
        raise ValueError(f"{at}: field {key!r} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{at}: field {key!r} is empty")
    return value


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS} ('high' = +, 'low' = -), got {level!r}")


__all__ = [
    "GUIDELINES_FILE",
    "OUTPUT_CONTRACT",
    "DimensionGuidelines",
    "GuidelineGroup",
    "Guidelines",
    "load_guidelines",
    "prompt",
]
