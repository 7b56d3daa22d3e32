"""The guideline groups of SynH-Rank's Table 2 as data, their validation, and the prompt."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from trainers.quality_data.guidelines import (
    GuidelineGroup,
    Guidelines,
    load_guidelines,
    prompt,
)
from trainers.quality_data.records import LEVELS, SeedTask

# The paper's Table 2, typed in from the paper (SynH-Rank §4.1): dimension -> (category, high,
# low) rows, in the paper's order.
TABLE_2 = {
    "speed": [
        ("Algorithm", "Precomputation, closed-form formulas", "Brute-force, exhaustive search"),
        (
            "Data Structure",
            "Optimal complexity, Python built-ins",
            "Mismatched types, inefficient idioms",
        ),
        ("Patterns", "Memoization, minimized call overhead", "Redundant objects, deep copies"),
        ("Implementation", "Batch processing, algebraic tricks", "Recursion without memoization"),
    ],
    "memory": [
        (
            "Algorithm",
            "Low space complexity, reduced state",
            "Combinatorial blow-up, deep recursion",
        ),
        (
            "Data Structure",
            "Generators, iterators, flat structures",
            "Large temp lists, deep nesting",
        ),
        ("Patterns", "Shallow copies, early emit/release", "Heavy intermediate materialization"),
        (
            "Implementation",
            "Incremental processing, lazy loading",
            "Buffering entire inputs, duplicates",
        ),
    ],
    "maintainability": [
        (
            "Structure",
            "Single-responsibility, clear interfaces",
            "Deep hierarchies, inconsistent layering",
        ),
        (
            "Readability",
            "Descriptive names, linear control flow",
            "Cryptic names, deeply nested logic",
        ),
        (
            "Robustness",
            "Specific exceptions, explicit edge cases",
            "Bare except, hidden root causes",
        ),
        (
            "Modernity",
            "Modern Python 3 style, tidy imports",
            "Deprecated patterns, global variables",
        ),
    ],
}

TASK = SeedTask(
    "p1",
    "Read n and print the sum 1 + 2 + ... + n.\nInput: 3\nOutput: 6",
    tests=(("3\n", "6\n"),),
)

PACKAGED = Path(__file__).parents[3] / "trainers" / "quality_data" / "guidelines.json"


def _table_phrases() -> list[str]:
    """Every Table 2 phrase and each of its comma-separated items (lower case)."""
    phrases = set()
    for rows in TABLE_2.values():
        for _, high, low in rows:
            for text in (high, low):
                phrases.add(text.lower())
                phrases.update(part.strip().lower() for part in text.split(","))
    return sorted(phrases)


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "guidelines.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def raw() -> dict:
    return json.loads(PACKAGED.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------
# The packaged file
# ---------------------------------------------------------------------------------------------


def test_the_packaged_file_holds_exactly_table_2():
    guidelines = load_guidelines()
    assert isinstance(guidelines, Guidelines)
    assert guidelines.k == 4
    assert guidelines.dimensions == ("speed", "memory", "maintainability")
    for dimension, rows in TABLE_2.items():
        got = [(g.category, g.high, g.low) for g in guidelines.groups(dimension)]
        assert got == rows, dimension


def test_every_dimension_has_its_own_system_prompt_and_objectives():
    guidelines = load_guidelines()
    systems = {d: guidelines.system(d) for d in guidelines.dimensions}
    assert len(set(systems.values())) == 3
    objectives = {
        (d, lv): guidelines.objective(d, lv) for d in guidelines.dimensions for lv in LEVELS
    }
    assert len(set(objectives.values())) == 6
    # neither the system prompts nor the objectives leak a guideline (the plain ablation
    # keeps them)
    for text in [*systems.values(), *objectives.values()]:
        for phrase in _table_phrases():
            assert phrase not in text.lower(), (phrase, text)


def test_load_guidelines_reads_an_explicit_path(tmp_path, raw):
    raw["dimensions"]["speed"]["groups"][0]["high"] = "Sieve once, answer many"
    guidelines = load_guidelines(_write(tmp_path, raw))
    assert guidelines.groups("speed")[0].high == "Sieve once, answer many"
    assert guidelines.path == str(tmp_path / "guidelines.json")


def test_a_new_guideline_group_is_a_new_entry(tmp_path, raw):
    raw["k"] = 5
    for dim in raw["dimensions"].values():
        dim["groups"].append({"category": "Extra", "high": "good idea", "low": "bad idea"})
    guidelines = load_guidelines(_write(tmp_path, raw))
    assert guidelines.k == 5
    assert guidelines.groups("memory")[4] == GuidelineGroup("Extra", "good idea", "bad idea")


# ---------------------------------------------------------------------------------------------
# Malformed files
# ---------------------------------------------------------------------------------------------


def _broken(raw: dict, edit) -> dict:
    data = copy.deepcopy(raw)
    edit(data)
    return data


BROKEN = {
    "missing group field": (
        lambda d: d["dimensions"]["memory"]["groups"][2].pop("low"),
        [r"dimensions\.memory\.groups\[2\]", "missing field 'low'"],
    ),
    "empty group field": (
        lambda d: d["dimensions"]["speed"]["groups"][1].update(category="  "),
        [r"dimensions\.speed\.groups\[1\]", "field 'category' is empty"],
    ),
    "wrong K": (
        lambda d: d["dimensions"]["maintainability"]["groups"].pop(),
        [r"dimensions\.maintainability\.groups", "3 groups", "k = 4"],
    ),
    "unknown dimension": (
        lambda d: d["dimensions"].update(latency=copy.deepcopy(d["dimensions"]["speed"])),
        ["'latency'", "QUALCODE_CONDITIONS"],
    ),
    "missing system prompt": (
        lambda d: d["dimensions"]["speed"].pop("system"),
        [r"dimensions\.speed", "missing field 'system'"],
    ),
    "bad level": (
        lambda d: d["dimensions"]["speed"]["objective"].update(medium="so-so"),
        [r"dimensions\.speed\.objective", "unknown field 'medium'", "'high', 'low'"],
    ),
    "missing level in a group": (
        lambda d: d["dimensions"]["speed"]["groups"][3].pop("high"),
        [r"dimensions\.speed\.groups\[3\]", "missing field 'high'"],
    ),
    "unknown group field": (
        lambda d: d["dimensions"]["speed"]["groups"][0].update(medium="x"),
        [r"dimensions\.speed\.groups\[0\]", "unknown field 'medium'"],
    ),
    "non-string field": (
        lambda d: d["dimensions"]["memory"]["groups"][0].update(high=3),
        [r"dimensions\.memory\.groups\[0\]", "field 'high' must be a str"],
    ),
    "duplicate category": (
        lambda d: d["dimensions"]["memory"]["groups"][1].update(category="Algorithm"),
        [r"dimensions\.memory\.groups\[1\]", "'Algorithm'", "groups\\[0\\]"],
    ),
    "bad k": (lambda d: d.update(k=0), ["'k'", "positive"]),
    "missing k": (lambda d: d.pop("k"), ["missing field 'k'"]),
    "no dimensions": (lambda d: d.update(dimensions={}), ["'dimensions'", "empty"]),
    "unknown top-level key": (lambda d: d.update(groups=[]), ["unknown field 'groups'"]),
}


@pytest.mark.parametrize("case", BROKEN, ids=BROKEN)
def test_a_malformed_file_errors_naming_the_file_and_where(tmp_path, raw, case):
    edit, patterns = BROKEN[case]
    path = _write(tmp_path, _broken(raw, edit))
    with pytest.raises(ValueError) as info:
        load_guidelines(path)
    message = str(info.value)
    assert str(path) in message
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)


def test_unreadable_or_invalid_json_names_the_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(ValueError, match=r"nope\.json"):
        load_guidelines(missing)
    bad = tmp_path / "bad.json"
    bad.write_text('{"k": 4,', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json.*line 1"):
        load_guidelines(bad)


def test_a_duplicate_key_is_an_error_not_a_silent_override(tmp_path):
    text = PACKAGED.read_text(encoding="utf-8").replace('"k": 4,', '"k": 4, "k": 5,', 1)
    path = tmp_path / "dup.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup\.json.*duplicate key 'k'"):
        load_guidelines(path)


# ---------------------------------------------------------------------------------------------
# prompt()
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dimension", list(TABLE_2))
@pytest.mark.parametrize("level", LEVELS)
def test_prompt_carries_the_guideline_objective_task_and_output_contract(dimension, level):
    guidelines = load_guidelines()
    _, high, low = TABLE_2[dimension][1]
    text = high if level == "high" else low
    messages = prompt(dimension, level, text, TASK)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == guidelines.system(dimension)
    user = messages[1]["content"]
    assert TASK.statement in user
    assert guidelines.objective(dimension, level) in user
    assert text in user
    other = low if level == "high" else high
    assert other not in user  # only the target level's guideline
    for needle in ("Python 3", "standard input", "standard output", "```python"):
        assert needle in user, needle
    assert "explanation" in user.lower()


def test_prompt_with_a_group_names_its_category():
    group = load_guidelines().groups("memory")[3]
    user = prompt("memory", "low", group, TASK)[1]["content"]
    assert "Buffering entire inputs, duplicates" in user
    assert "Implementation" in user
    assert "Incremental processing" not in user


@pytest.mark.parametrize("dimension", list(TABLE_2))
@pytest.mark.parametrize("level", LEVELS)
def test_prompt_without_guideline_has_no_guideline_text(dimension, level):
    guidelines = load_guidelines()
    messages = prompt(dimension, level, None, TASK)
    everything = "\n".join(m["content"] for m in messages).lower()
    for phrase in _table_phrases():
        assert phrase not in everything, phrase
    for category in {c for rows in TABLE_2.values() for c, _, _ in rows}:
        assert f"guideline ({category.lower()})" not in everything
    assert guidelines.objective(dimension, level).lower() in everything
    assert TASK.statement.lower() in everything
    # the same prompt as with a guideline, less the guideline
    with_guideline = prompt(dimension, level, TABLE_2[dimension][0][1], TASK)
    assert messages[0] == with_guideline[0]
    assert len(messages[1]["content"]) < len(with_guideline[1]["content"])


def test_the_levels_ask_for_opposite_objectives():
    high = prompt("speed", "high", None, TASK)[1]["content"]
    low = prompt("speed", "low", None, TASK)[1]["content"]
    assert "fast" in high.lower() and "slow" in low.lower()
    assert "correct" in low.lower()  # a low-quality variant must still be relevant


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("latency", "high", None, TASK), ValueError, "latency"),
        (("speed", "+", None, TASK), ValueError, r"level.*'high'"),
        (("speed", "high", "  ", TASK), ValueError, "guideline"),
        (("speed", "high", None, "a statement"), TypeError, "SeedTask"),
        (("speed", "high", None, SeedTask("p2", "  ")), ValueError, "p2.*statement"),
        (("speed", "high", None, SeedTask("p3", "x", language="java")), ValueError, "p3.*java"),
    ],
)
def test_prompt_rejects_bad_arguments(args, error, match):
    with pytest.raises(error, match=match):
        prompt(*args)


def test_prompt_uses_the_guidelines_it_is_given(tmp_path, raw):
    raw["dimensions"]["speed"]["system"] = "You are a custom system prompt."
    custom = load_guidelines(_write(tmp_path, raw))
    assert prompt("speed", "high", None, TASK, guidelines=custom)[0]["content"] == (
        "You are a custom system prompt."
    )
    assert custom.prompt("speed", "high", None, TASK) == prompt(
        "speed", "high", None, TASK, guidelines=custom
    )
