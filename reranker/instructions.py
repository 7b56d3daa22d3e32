"""Task instructions for instruction-following rerankers [SPEC §3, §4].

* CoREB: one instruction per main task (T2C, C2C, C2T) [CoREB B.3]; a subtask's instruction
  is its main task's, read from the subtask name's prefix (``t2c_full_retro_any`` -> T2C).
* QualCode: ``Retrieve code that is {fast | memory-efficient | maintainable}``, several
  conditions joined with "and" [SynH-Rank §3].
"""

from __future__ import annotations

from collections.abc import Iterable

COREB_INSTRUCTIONS: dict[str, str] = {
    "t2c": (
        "Given a natural language programming task, retrieve code that correctly solves or "
        "implements the task."
    ),
    "c2c": (
        "Given a code snippet, retrieve code that is semantically equivalent or solves the "
        "same task."
    ),
    "c2t": (
        "Given a code snippet, retrieve the natural language description or problem "
        "statement that best matches the code."
    ),
}

#: QualCode dimension -> the adjective of its instruction.
QUALCODE_CONDITIONS: dict[str, str] = {
    "speed": "fast",
    "memory": "memory-efficient",
    "maintainability": "maintainable",
}


def qualcode_instruction(conditions: str | Iterable[str]) -> str:
    """``Retrieve code that is A and B ...`` for QualCode dimensions or their adjectives.

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
    return "Retrieve code that is " + " and ".join(words)


def instruction_for(subtask: str) -> str:
    """The instruction of a CoREB subtask (by prefix) or a single-condition QualCode config.

    >>> instruction_for("c2c_cross_lang").startswith("Given a code snippet")
    True
    """
    prefix, _, rest = subtask.lower().partition("_")
    if prefix in COREB_INSTRUCTIONS:
        return COREB_INSTRUCTIONS[prefix]
    if prefix == "qualcode" and rest in QUALCODE_CONDITIONS:
        return qualcode_instruction(rest)
    raise ValueError(
        f"no instruction for subtask {subtask!r}: expected a name starting with "
        f"{'/'.join(f'{k}_' for k in COREB_INSTRUCTIONS)} or one of "
        f"{[f'qualcode_{k}' for k in QUALCODE_CONDITIONS]} (MC-QualCode triplets carry their "
        f"own conditions: use qualcode_instruction)"
    )
