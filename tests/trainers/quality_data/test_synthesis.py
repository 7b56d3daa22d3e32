"""Guideline-driven and plain synthesis with fake generators [SynH-Rank §4.1, §5.4, §6.2]."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from coreb_toolkit.releases.generators import CachedGenerator, GenerationError
from tests.trainers.quality_data.test_guidelines import TABLE_2  # the paper's Table 2, typed in
from trainers.quality_data.records import Drop, SeedTask, Variant
from trainers.quality_data.synthesis import (
    SynthesisOptions,
    SynthesisResult,
    extract_code,
    synthesize,
)

PHRASES = {text for rows in TABLE_2.values() for _, high, low in rows for text in (high, low)}

TASKS = [
    SeedTask("p1", "Read n and print 1 + 2 + ... + n.", tests=(("3\n", "6\n"),)),
    SeedTask("p2", "Read a line and print it reversed.", tests=(("abc\n", "cba\n"),)),
]


class FakeGenerator:
    """Answers deterministically from (messages, seed); records every call's keywords."""

    def __init__(self, name: str = "fake-llm", fail_after: int | None = None) -> None:
        self.name = name
        self.fail_after = fail_after
        self.calls: list[dict] = []

    def generate(self, messages, **kwargs) -> str:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise GenerationError("server went away")
        self.calls.append({"messages": messages, **kwargs})
        digest = hashlib.sha256(
            json.dumps([messages, kwargs.get("seed")], sort_keys=True).encode()
        ).hexdigest()[:10]
        return f"Here you go:\n```python\nprint({digest!r})\n```\nDone."


def _guideline_in(text: str) -> set[str]:
    return {phrase for phrase in PHRASES if phrase in text}


# ---------------------------------------------------------------------------------------------
# Guideline mode
# ---------------------------------------------------------------------------------------------


def test_guideline_mode_cycles_each_group_once_per_task_dimension_and_level():
    gen = FakeGenerator()
    result = synthesize(TASKS, gen, SynthesisOptions(), progress=False)
    assert isinstance(result, SynthesisResult)
    assert len(gen.calls) == 2 * 3 * 2 * 4 == 48
    assert len(result.variants) == 48
    assert all(isinstance(v, Variant) and v.origin == "guideline" for v in result.variants)

    used: dict[tuple[str, str, str], list[str]] = {}
    for call, variant in zip(gen.calls, result.variants, strict=True):
        user = call["messages"][-1]["content"]
        (phrase,) = _guideline_in(user)  # exactly one guideline per prompt
        assert variant.guideline == phrase
        key = (variant.task_id, variant.dimension, variant.level)
        used.setdefault(key, []).append(variant.category)
        rows = TABLE_2[variant.dimension]
        (row,) = [r for r in rows if r[0] == variant.category]
        assert phrase == (row[1] if variant.level == "high" else row[2])
        assert variant.task_id in ("p1", "p2")
        statement = {t.task_id: t.statement for t in TASKS}[variant.task_id]
        assert statement in user
    assert len(used) == 2 * 3 * 2
    for (_, dimension, _), categories in used.items():
        assert sorted(categories) == sorted(r[0] for r in TABLE_2[dimension])
    # the code is the fenced block of the reply
    assert all(v.code.startswith("print(") for v in result.variants)


def test_more_variants_than_groups_cycle_again_with_new_seeds():
    gen = FakeGenerator()
    options = SynthesisOptions(dimensions=("speed",), variants_per_level=6)
    result = synthesize(TASKS[:1], gen, options, progress=False)
    categories = Counter((v.level, v.category) for v in result.variants)
    assert categories[("high", "Algorithm")] == 2 and categories[("high", "Patterns")] == 1
    assert len({c["seed"] for c in gen.calls}) == 12


def test_the_papers_sampling_defaults_reach_the_generator():
    gen = FakeGenerator()
    synthesize(TASKS[:1], gen, SynthesisOptions(dimensions=("memory",)), progress=False)
    for call in gen.calls:
        assert call["max_tokens"] == 1024
        assert call["temperature"] == 0.7
        assert call["top_p"] == 0.8
        assert call["top_k"] == 20
        assert isinstance(call["seed"], int)
    options = SynthesisOptions(dimensions=("memory",), temperature=0.2, top_p=None, top_k=None)
    gen = FakeGenerator()
    synthesize(TASKS[:1], gen, options, progress=False)
    assert "top_p" not in gen.calls[0] and "top_k" not in gen.calls[0]
    assert gen.calls[0]["temperature"] == 0.2


def _seeds(gen: FakeGenerator) -> set[tuple[str, int]]:
    """(prompt, seed) of each call (guideline prompts are distinct per request)."""
    return {(json.dumps(c["messages"]), c["seed"]) for c in gen.calls}


def test_request_seeds_are_stable_distinct_and_independent_of_task_order():
    a, b, c, d = FakeGenerator(), FakeGenerator(), FakeGenerator(), FakeGenerator()
    synthesize(TASKS, a, SynthesisOptions(seed=1), progress=False)
    synthesize(TASKS, b, SynthesisOptions(seed=1), progress=False)
    synthesize(TASKS[::-1], c, SynthesisOptions(seed=1), progress=False)
    synthesize(TASKS, d, SynthesisOptions(seed=2), progress=False)
    seeds_a = [x["seed"] for x in a.calls]
    assert seeds_a == [x["seed"] for x in b.calls]
    assert len(set(seeds_a)) == 48
    assert _seeds(a) == _seeds(c)  # the same request gets the same seed in any order
    assert set(seeds_a).isdisjoint(x["seed"] for x in d.calls)


# ---------------------------------------------------------------------------------------------
# Plain mode (the "w/o guideline" ablation)
# ---------------------------------------------------------------------------------------------


def test_plain_mode_same_count_distinct_seeds_and_no_guideline():
    gen = FakeGenerator()
    result = synthesize(TASKS, gen, SynthesisOptions(mode="plain"), progress=False)
    assert len(gen.calls) == len(result.variants) == 48
    assert len({c["seed"] for c in gen.calls}) == 48
    lowered = {p.lower() for phrase in PHRASES for p in (phrase, *phrase.split(", "))}
    for call in gen.calls:
        text = "\n".join(m["content"] for m in call["messages"]).lower()
        assert not [p for p in lowered if p in text]
        assert (call["temperature"], call["top_p"], call["top_k"]) == (0.7, 0.8, 20)
    for v in result.variants:
        assert (v.origin, v.category, v.guideline) == ("plain", None, None)
        assert v.dimension in TABLE_2 and v.level in ("high", "low")
    # per (task, dimension, level) the K requests share one prompt and differ only by seed
    prompts = Counter(json.dumps(c["messages"]) for c in gen.calls)
    assert sorted(prompts.values()) == [4] * 12
    assert result.report["by_origin"] == {"plain": 48}


# ---------------------------------------------------------------------------------------------
# Cache and resumability
# ---------------------------------------------------------------------------------------------


def test_an_interrupted_run_resumes_generating_only_what_is_missing(tmp_path):
    options = SynthesisOptions(cache_dir=str(tmp_path / "cache"))
    broken = FakeGenerator(fail_after=17)
    with pytest.raises(GenerationError) as info:
        synthesize(TASKS, broken, options, progress=False)
    message = str(info.value)
    assert "17 of 48" in message and "re-run" in message and "server went away" in message
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 17

    working = FakeGenerator()
    resumed = synthesize(TASKS, working, options, progress=False)
    assert len(working.calls) == 48 - 17
    assert resumed.report["cache"] == {"dir": str(tmp_path / "cache"), "hits": 17, "misses": 31}

    reference = synthesize(TASKS, FakeGenerator(), SynthesisOptions(), progress=False)
    assert resumed.variants == reference.variants

    again = FakeGenerator()
    rerun = synthesize(TASKS, again, options, progress=False)
    assert again.calls == [] and rerun.report["cache"]["hits"] == 48
    assert rerun.variants == reference.variants


def test_the_cache_dir_argument_and_a_cached_generator(tmp_path):
    inner = FakeGenerator()
    one = SynthesisOptions(dimensions=("speed",), variants_per_level=1)
    synthesize(TASKS[:1], inner, one, cache_dir=tmp_path, progress=False)
    assert len(inner.calls) == 2
    cached = CachedGenerator(inner, tmp_path)
    result = synthesize(TASKS[:1], cached, one, progress=False)
    assert len(inner.calls) == 2 and result.report["cache"]["hits"] == 2
    with pytest.raises(ValueError, match="cache_dir"):
        synthesize(TASKS[:1], cached, one, cache_dir=tmp_path / "other", progress=False)
    with pytest.raises(ValueError, match="cache_dir"):
        synthesize(
            TASKS[:1],
            inner,
            dataclasses.replace(one, cache_dir=str(tmp_path / "a")),
            cache_dir=tmp_path / "b",
            progress=False,
        )


# ---------------------------------------------------------------------------------------------
# Report, drops, input checks
# ---------------------------------------------------------------------------------------------


def test_the_report_counts_requests_and_variants():
    def answers(messages, **kwargs):
        return "no code here" if "Read a line" in messages[-1]["content"] else "```python\nx\n```"

    gen = FakeGenerator()
    gen.generate = answers  # type: ignore[method-assign]
    result = synthesize(TASKS, gen, SynthesisOptions(), progress=False)
    report = result.report
    assert report["requests"] == 48 and report["variants"] == 48
    assert report["cache"] == {"dir": None, "hits": 0, "misses": 48}
    assert report["by_dimension_level"] == {
        d: {"high": 8, "low": 8} for d in ("speed", "memory", "maintainability")
    }
    assert report["by_origin"] == {"guideline": 48}
    assert report["generator"] == "fake-llm" and report["mode"] == "guideline"
    assert report["options"]["top_k"] == 20
    assert report["seconds"] >= 0
    # no fence: the whole reply is the code; the filter step, not this one, judges it
    assert Counter(v.code for v in result.variants) == {"x": 24, "no code here": 24}


def test_empty_output_is_kept_for_the_filter_step():
    gen = FakeGenerator()
    gen.generate = lambda messages, **kwargs: "   "  # type: ignore[method-assign]
    result = synthesize(TASKS[:1], gen, SynthesisOptions(dimensions=("speed",)), progress=False)
    assert len(result.variants) == 8 and {v.code for v in result.variants} == {""}
    assert result.report["empty_code"] == 8 and result.drops == []


def test_a_task_without_statement_is_dropped_and_counted():
    tasks = [*TASKS, SeedTask("p3", "  ", source="taco")]
    result = synthesize(tasks, FakeGenerator(), SynthesisOptions(mode="plain"), progress=False)
    assert result.drops == [Drop("synthesis", "empty statement", "p3", "taco")]
    assert result.report["drops"] == [
        {"stage": "synthesis", "reason": "empty statement", "count": 1}
    ]
    assert result.report["tasks"] == 3 and result.report["requests"] == 48


@pytest.mark.parametrize(
    ("tasks", "error", "match"),
    [
        ([TASKS[0], TASKS[0]], ValueError, "p1.*twice"),
        ([TASKS[0], "p2"], TypeError, "SeedTask"),
        ([SeedTask("j1", "x", language="java")], ValueError, "j1.*java"),
    ],
)
def test_bad_tasks_are_rejected_before_any_generation(tasks, error, match):
    gen = FakeGenerator()
    with pytest.raises(error, match=match):
        synthesize(tasks, gen, SynthesisOptions(), progress=False)
    assert gen.calls == []


def test_a_dimension_missing_from_the_guideline_file_is_an_error(tmp_path):
    from trainers.quality_data.guidelines import GUIDELINES_FILE, load_guidelines

    data = json.loads(Path(load_guidelines().path).read_text(encoding="utf-8"))
    del data["dimensions"]["memory"]
    path = tmp_path / GUIDELINES_FILE
    path.write_text(json.dumps(data), encoding="utf-8")
    gen = FakeGenerator()
    with pytest.raises(ValueError, match=r"memory.*guidelines\.json"):
        synthesize(TASKS, gen, SynthesisOptions(guidelines=str(path)), progress=False)
    options = SynthesisOptions(guidelines=str(path), dimensions=("speed",))
    synthesize(TASKS, gen, options, progress=False)
    assert len(gen.calls) == 16


def test_a_generator_without_name_or_generate_is_rejected():
    with pytest.raises(TypeError, match="Generator"):
        synthesize(TASKS, object(), SynthesisOptions(), progress=False)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# SynthesisOptions
# ---------------------------------------------------------------------------------------------


def test_options_defaults_are_the_papers_and_every_field_has_help():
    options = SynthesisOptions()
    assert (options.temperature, options.top_p, options.top_k) == (0.7, 0.8, 20)
    assert options.max_new_tokens == 1024 and options.variants_per_level == 4
    assert options.mode == "guideline"
    assert options.dimensions == ("speed", "memory", "maintainability")
    for f in dataclasses.fields(SynthesisOptions):
        assert f.metadata.get("help"), f.name
    assert SynthesisOptions(dimensions=["speed"]).dimensions == ("speed",)  # YAML lists


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mode": "nucleus"}, "mode"),
        ({"dimensions": ()}, "dimensions"),
        ({"dimensions": ("speed", "latency")}, "dimensions"),
        ({"dimensions": ("speed", "speed")}, "dimensions"),
        ({"dimensions": "speed"}, "dimensions"),
        ({"variants_per_level": 0}, "variants_per_level"),
        ({"variants_per_level": True}, "variants_per_level"),
        ({"temperature": -1}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.2}, "top_p"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 1.5}, "top_k"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"seed": "0"}, "seed"),
        ({"cache_dir": ""}, "cache_dir"),
        ({"guidelines": ""}, "guidelines"),
    ],
)
def test_options_reject_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"SynthesisOptions\.{field}"):
        SynthesisOptions(**kwargs)


# ---------------------------------------------------------------------------------------------
# extract_code
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("```python\nprint(1)\n```", "print(1)"),
        (
            "Sure:\n```python\nn = int(input())\nprint(n)\n```\nIt reads n.",
            "n = int(input())\nprint(n)",
        ),
        ("```py\nprint(2)\n```", "print(2)"),
        ("```Python3\nprint(3)\n```", "print(3)"),
        ("```\nprint(4)\n```", "print(4)"),
        ("```text\n6\n```\n```python\nprint(5)\n```\n```python\nprint(6)\n```", "print(5)"),
        ("```bash\npython main.py\n```", "python main.py"),
        ("  print(7)\n\n", "print(7)"),
        ("```python\nfor i in range(3):\n    print(i)\n", "for i in range(3):\n    print(i)"),
        ("<think>```python\nprint(0)\n```</think>\n```python\nprint(8)\n```", "print(8)"),
        ("```python\n```", ""),
        ("", ""),
        ("   \n ", ""),
    ],
)
def test_extract_code(reply, code):
    assert extract_code(reply) == code


def test_extract_code_keeps_indentation_inside_the_block():
    reply = "```python\n\ndef f():\n    return 1\n\nprint(f())\n```"
    assert extract_code(reply) == "def f():\n    return 1\n\nprint(f())"


def test_extract_code_rejects_a_non_string():
    with pytest.raises(TypeError, match="str"):
        extract_code(None)  # type: ignore[arg-type]
