"""Task instructions for instruction-following rerankers [protocol §3, §4].

* CoREB: one instruction per main task (T2C, C2C, C2T) [CoREB B.3]; a subtask's instruction
  is its main task's, read from the subtask name's prefix (``t2c_full_retro_any`` -> T2C).
* QualCode: ``Retrieve code that is {fast | memory-efficient | maintainable}``, several
  conditions joined with "and" [SynH-Rank §3]. A QualCode folder built with another template
  records each row's instruction, and its evaluation reads that, not this default.

The strings live in :mod:`coreb_toolkit.vocabulary` (``MAIN_TASKS[key].instruction``,
``QUALCODE_CONDITIONS``, ``QUALCODE_INSTRUCTION_TEMPLATE``, formatted by
``qualcode_instruction_text``, as the QualCode builder formats them); this module only chooses
them.
"""

from __future__ import annotations

from collections.abc import Iterable

from coreb_toolkit.vocabulary import (
    MAIN_TASKS,
    QUALCODE_CONDITIONS,
    QUALCODE_INSTRUCTION_TEMPLATE,
    QUALCODE_TASK,
    qualcode_instruction_text,
)

#: CoREB main task key -> its instruction [CoREB B.3] (``vocabulary.MAIN_TASKS``).
COREB_INSTRUCTIONS: dict[str, str] = {key: task.instruction for key, task in MAIN_TASKS.items()}

__all__ = [
    "COREB_INSTRUCTIONS",
    "QUALCODE_CONDITIONS",
    "by_instruction",
    "instruction_for",
    "qualcode_instruction",
]


def qualcode_instruction(
    conditions: str | Iterable[str], template: str = QUALCODE_INSTRUCTION_TEMPLATE
) -> str:
    """``Retrieve code that is A and B ...`` for QualCode dimensions or their adjectives, by
    ``template`` (default: the QualCode builder's default template).

    >>> qualcode_instruction(["speed", "memory"])
    'Retrieve code that is fast and memory-efficient'
    """
    items = [conditions] if isinstance(conditions, str) else list(conditions)
    adjectives = set(QUALCODE_CONDITIONS.values())
    words = []
    for item in items:
        if item in QUALCODE_CONDITIONS:
            words.append(QUALCODE_CONDITIONS[item])
        elif item in adjectives:
            words.append(item)
        else:
            raise ValueError(
                f"unknown QualCode condition {item!r}; expected one of "
                f"{sorted(QUALCODE_CONDITIONS)} or {sorted(adjectives)}"
            )
    if not words:
        raise ValueError("qualcode_instruction needs at least one condition")
    return qualcode_instruction_text(words, template)


def instruction_for(subtask: str) -> str:
    """The instruction of a CoREB subtask (by prefix) or a single-condition QualCode config.

    >>> instruction_for("c2c_cross_lang").startswith("Given a code snippet")
    True
    """
    prefix, _, rest = subtask.lower().partition("_")
    if prefix in COREB_INSTRUCTIONS:
        return COREB_INSTRUCTIONS[prefix]
    if prefix == QUALCODE_TASK and rest in QUALCODE_CONDITIONS:
        return qualcode_instruction(rest)
    raise ValueError(
        f"no instruction for subtask {subtask!r}: expected a name starting with "
        f"{'/'.join(f'{k}_' for k in COREB_INSTRUCTIONS)} or one of "
        f"{[f'{QUALCODE_TASK}_{k}' for k in QUALCODE_CONDITIONS]} (MC-QualCode triplets carry "
        f"their own conditions: use qualcode_instruction)"
    )


def by_instruction(instructions: Iterable[str]) -> dict[str, list[int]]:
    """Item indices by instruction, in first-seen order: what one ``reranker.score(pairs,
    instruction=...)`` call takes (the pairs scored together share their instruction). The
    QualCode scorer and both trainers' validation group their pairs by it."""
    groups: dict[str, list[int]] = {}
    for i, instruction in enumerate(instructions):
        groups.setdefault(instruction, []).append(i)
    return groups
