"""Instructions are protocol §4's strings, chosen by subtask prefix; QualCode joins with "and"."""

from __future__ import annotations

import pytest

from reranker.instructions import COREB_INSTRUCTIONS, instruction_for, qualcode_instruction

T2C = (
    "Given a natural language programming task, retrieve code that correctly solves or "
    "implements the task."
)
C2C = "Given a code snippet, retrieve code that is semantically equivalent or solves the same task."
C2T = (
    "Given a code snippet, retrieve the natural language description or problem statement "
    "that best matches the code."
)


@pytest.mark.parametrize(
    ("subtask", "expected"),
    [
        ("t2c_full_retro_any", T2C),
        ("t2c_search_python", T2C),
        ("c2c_cross_lang", C2C),
        ("c2t_canonical_retro_cpp", C2T),
        ("c2t_match", C2T),
        ("qualcode_speed", "Retrieve code that is fast"),
        ("qualcode_maintainability", "Retrieve code that is maintainable"),
    ],
)
def test_instruction_for(subtask, expected):
    assert instruction_for(subtask) == expected


def test_the_three_main_tasks():
    assert COREB_INSTRUCTIONS == {"t2c": T2C, "c2c": C2C, "c2t": C2T}


@pytest.mark.parametrize("subtask", ["mc_2cond", "x2c_foo", "qualcode_size", "t2c"])
def test_unknown_subtask(subtask):
    if subtask == "t2c":  # a bare main task name is its prefix: accepted
        assert instruction_for(subtask) == T2C
        return
    with pytest.raises(ValueError, match="no instruction"):
        instruction_for(subtask)


def test_qualcode_joins_with_and():
    assert qualcode_instruction(["speed", "memory", "maintainability"]) == (
        "Retrieve code that is fast and memory-efficient and maintainable"
    )
    assert qualcode_instruction(["memory-efficient"]) == "Retrieve code that is memory-efficient"
    # a QualCode folder built with another template: the same words in its template
    custom = "Find a solution that is {conditions}."
    assert qualcode_instruction(["speed", "maintainable"], custom) == (
        "Find a solution that is fast and maintainable."
    )
    with pytest.raises(ValueError, match="unknown QualCode condition"):
        qualcode_instruction(["cheap"])
    with pytest.raises(ValueError, match="at least one"):
        qualcode_instruction([])
