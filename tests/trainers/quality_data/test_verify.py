"""Filtering and verifying variants [SynH-Rank §4.1]: each stage drops what it should and counts
it; the sandbox stages measure honestly (a quadratic program against a linear one)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from coreb_toolkit.quality.measure import MeasurementUnavailable
from trainers.quality_data import verify
from trainers.quality_data.records import SeedTask, Variant
from trainers.quality_data.verify import (
    FILTER_STAGES,
    PAPER_STAGES,
    VerifyOptions,
    filter_variants,
    normalise_code,
)

sandboxed = pytest.mark.needs_toolchain("bwrap", "python3")


def run(tasks, variants, **options):
    eval_statements = options.pop("eval_statements", ())
    return filter_variants(
        tasks, variants, VerifyOptions(**options), eval_statements=eval_statements,
        progress=False,
    )  # fmt: skip


def dropped(result):
    """variant_id -> (stage, reason) of every drop."""
    return {d.item: (d.stage, d.reason) for d in result.drops}


def ids(variants):
    return [v.variant_id for v in variants]


# --------------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------------


def test_every_option_has_help_and_the_paper_defaults():
    fields = dataclasses.fields(VerifyOptions)
    assert all(f.metadata.get("help") for f in fields)
    options = VerifyOptions()
    assert options.stages == FILTER_STAGES
    assert (options.margin, options.repeats, options.figures) == (2.0, 5, "measured")
    assert (options.min_unique, options.decontamination_ngram, options.analyser) == (3, 10, "ruff")
    assert PAPER_STAGES == ("decontaminate", "empty", "duplicate", "min_unique")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("stages", ("empty", "bogus")),
        ("stages", ("duplicate", "empty")),  # out of order
        ("stages", ("empty", "empty")),
        ("stages", "paperish"),
        ("margin", 0.5),
        ("margin", True),
        ("repeats", 0),
        ("figures", "guessed"),
        ("analyser", "sonarqube"),
        ("min_unique", 0),
        ("decontamination_ngram", 2.5),
    ],
)
def test_bad_options_name_the_field(name, value):
    with pytest.raises(ValueError, match=f"VerifyOptions.{name}"):
        VerifyOptions(**{name: value})


def test_stage_presets_and_lists():
    assert VerifyOptions(stages="paper").stages == PAPER_STAGES
    assert VerifyOptions(stages="none").stages == ()
    assert VerifyOptions(stages=["empty", "claim"]).stages == ("empty", "claim")


def test_a_variant_of_an_unknown_task_is_refused():
    with pytest.raises(ValueError, match="not in tasks"):
        run([SeedTask("a", "x")], [Variant("b", "print(1)", "plain")], stages=())


# --------------------------------------------------------------------------------------------
# normalisation
# --------------------------------------------------------------------------------------------


def test_normalise_removes_comments_and_whitespace_but_keeps_strings():
    base = "def f(a, b):\n    return a + b\n\nprint(f(1, 2))\n"
    noisy = "# header\ndef f( a,b ):  # add\n  return a+b\n\n\n\nprint(f(1,\n        2))"
    assert normalise_code(base) == normalise_code(noisy)
    # a '#' in a string is not a comment, and string contents are kept exactly
    assert normalise_code('print("a # b")') != normalise_code('print("a  # b")')
    assert normalise_code('print("a # b")') != normalise_code('print("a")')
    # indentation depth matters, its width does not
    assert normalise_code("if x:\n    y()\nz()") != normalise_code("if x:\n    y()\n    z()")


def test_normalise_falls_back_to_the_generic_rule():
    # an unclosed bracket does not tokenize: whole-line comments and blank lines go, runs of
    # whitespace become one space, line by line
    assert normalise_code("x = (1,\n   # note\n\n   2   +  3") == "x = (1,\n2 + 3"
    assert normalise_code("int main() {\n  // c\n  return  0;\n}", "cpp") == (
        "int main() {\nreturn 0;\n}"
    )
    with pytest.raises(ValueError, match="unknown language"):
        normalise_code("x", "cobol")


# --------------------------------------------------------------------------------------------
# the paper's stages (no sandbox)
# --------------------------------------------------------------------------------------------

EVAL = (
    "Given an array of integers find the length of the longest strictly increasing "
    "subsequence and print it on a single line of output"
)
WORDS = EVAL.split()


def test_decontamination_drops_a_shared_10_gram_not_a_shared_9_gram():
    ten = " ".join(WORDS[4:14])
    nine = " ".join(WORDS[4:13])
    tasks = [
        SeedTask("ten", f"Read the input and {ten} quickly"),
        SeedTask("nine", f"Alpha beta {nine} gamma delta epsilon zeta eta theta iota"),
        SeedTask("none", "Count the vowels of a word and print how many there are in total"),
    ]
    variants = [Variant(t.task_id, f"print({k})", "plain") for t in tasks for k in range(2)]
    result = run(tasks, variants, stages=("decontaminate",), eval_statements=["other", EVAL])
    assert dropped(result) == {
        v.variant_id: ("decontaminate", "seed task shares a 10-gram with an evaluation statement")
        for v in variants[:2]
    }
    assert all("ten" in d.where and "evaluation statement 1" in d.where for d in result.drops)
    assert ids(result.kept) == ids(variants[2:])
    assert result.report["tasks"]["decontaminated"] == ["ten"]
    assert result.report["drops"]["decontaminate"] == {
        "seed task shares a 10-gram with an evaluation statement": 2
    }


def test_max_ngram_overlap_drops_only_tasks_sharing_more_than_that_share():
    # "shared" has 14 words: 5 10-grams, all in the evaluation statement; "template" has 20
    # words of which 10 (1 10-gram of 11) are the evaluation statement's opening
    opening = " ".join(WORDS[:10])
    shared = " ".join(WORDS[:14])
    template = opening + " " + " ".join(f"own{k}" for k in range(10))
    tasks = [SeedTask("shared", shared), SeedTask("template", template)]
    variants = [Variant(t.task_id, f"print({k})", "plain") for t in tasks for k in range(2)]
    evaluation = [" ".join(WORDS[:16])]
    result = run(tasks, variants, stages=("decontaminate",), eval_statements=evaluation,
                 max_ngram_overlap=0.5)  # fmt: skip
    assert result.report["tasks"]["decontaminated"] == ["shared"]
    assert result.report["tasks"]["largest_ngram_overlap"] == 1.0
    assert {v.task_id for v in result.kept} == {"template"}
    assert set(result.report["drops"]["decontaminate"]) == {
        "seed task shares over 0.5 of its 10-grams with the evaluation set"
    }
    # the paper's rule (0): the template task goes too
    paper = run(tasks, variants, stages=("decontaminate",), eval_statements=evaluation)
    assert paper.report["tasks"]["decontaminated"] == ["shared", "template"]
    with pytest.raises(ValueError, match="max_ngram_overlap"):
        VerifyOptions(max_ngram_overlap=1.0)


def test_empty_code_is_dropped():
    task = SeedTask("t", "s")
    variants = [Variant("t", c, "plain") for c in ("print(1)", "", " \n\t\n", "print(2)")]
    result = run([task], variants, stages=("empty",))
    assert dropped(result) == {v.variant_id: ("empty", "empty code") for v in variants[1:3]}
    assert ids(result.kept) == ids([variants[0], variants[3]])


def test_duplicates_differing_in_comments_and_whitespace_are_dropped():
    first = Variant("t", "n = int(input())\nfor i in range(n):\n    print(i)\n", "guideline",
                    "speed", "high", "Algorithm")  # fmt: skip
    again = Variant("t", "# loop\nn=int( input() )\n\nfor i in range(n):  # each\n  print(i)",
                    "guideline", "speed", "low", "Loop")  # fmt: skip
    other = Variant("t", "n = int(input())\nprint(*range(n), sep='\\n')\n", "plain")
    elsewhere = dataclasses.replace(first, task_id="u")  # same code, another task: kept
    result = run(
        [SeedTask("t", "s"), SeedTask("u", "s")], [first, again, other, elsewhere],
        stages=("duplicate",),
    )  # fmt: skip
    assert dropped(result) == {
        again.variant_id: ("duplicate", "same normalised code as an earlier variant")
    }
    assert result.drops[0].where == first.variant_id
    assert ids(result.kept) == ids([first, other, elsewhere])


def test_min_unique_drops_tasks_with_too_few_unique_candidates():
    tasks = [SeedTask(t, "s") for t in "xyz"]
    x = [Variant("x", f"print({k})", "plain") for k in range(3)]
    y = [Variant("y", "print(1)", "plain"), Variant("y", "print( 1 )  # again", "real"),
         Variant("y", "print(2)", "plain")]  # fmt: skip
    z = [Variant("z", f"print({k})", "plain") for k in range(2)]
    result = run(tasks, x + y + z, stages=("min_unique",), min_unique=3)
    reason = "task has fewer than 3 unique candidates"
    assert dropped(result) == {v.variant_id: ("min_unique", reason) for v in y + z}
    assert ids(result.kept) == ids(x)
    assert result.report["tasks"] == {
        "in": 3, "with_variants": 3, "kept": 1, "dropped": 2, "decontaminated": [],
        "largest_ngram_overlap": None,
    }  # fmt: skip


def _paper_fixture():
    tasks = [
        SeedTask("keep", "Print numbers", tests=(("", "1\n"),)),
        SeedTask("leak", " ".join(WORDS), tests=(("", "1\n"),)),
        SeedTask("few", "Print two", tests=(("", "2\n"),)),
    ]
    variants = [
        Variant("keep", "print(1)", "guideline", "speed", "high", "Algorithm"),
        Variant("keep", "print(1)  # dup", "guideline", "speed", "low", "Algorithm"),
        Variant("keep", "", "plain"),
        Variant("keep", "print(2 - 1)", "plain"),
        Variant("keep", "print(3 - 2)", "real"),
        Variant("leak", "print(1)", "plain"),
        Variant("few", "print(2)", "plain"),
        Variant("few", "print(1 + 1)", "plain"),
    ]
    return tasks, variants


def test_paper_stages_run_no_sandbox_and_no_analyser(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the paper's filter must not run the sandbox or the analyser")

    monkeypatch.setattr(verify, "measure", refuse)
    monkeypatch.setattr(verify, "get_analyser", refuse)
    tasks, variants = _paper_fixture()
    result = run(tasks, variants, stages=PAPER_STAGES, eval_statements=[EVAL])
    assert ids(result.kept) == ids([variants[0], variants[3], variants[4]])
    assert all(v.passed is None and v.cpu_time_ms is None for v in result.kept)
    assert Counter(d.stage for d in result.drops) == {
        "decontaminate": 1, "empty": 1, "duplicate": 1, "min_unique": 2,
    }  # fmt: skip


def test_report_counts_equal_the_drops():
    tasks, variants = _paper_fixture()
    result = run(tasks, variants, stages=PAPER_STAGES, eval_statements=[EVAL])
    report = result.report
    counted = {(s, r): n for s, reasons in report["drops"].items() for r, n in reasons.items()}
    assert counted == Counter((d.stage, d.reason) for d in result.drops)
    assert set(report["drops"]) == set(PAPER_STAGES)
    assert report["variants"] == {"in": 8, "kept": 3, "dropped": 5}
    assert report["variants"]["kept"] + report["variants"]["dropped"] == len(variants)
    assert report["kept_by"]["origin"] == {"guideline": 1, "plain": 1, "real": 1}
    assert report["kept_by"]["claim"] == {"None/None": 2, "speed/high": 1}
    assert set(report["seconds"]) == set(PAPER_STAGES)
    assert report["options"]["stages"] == list(PAPER_STAGES)
    assert report["verified"] is None  # neither sandbox stage ran


def test_inputs_are_not_changed_and_order_is_kept():
    tasks, variants = _paper_fixture()
    before = [dataclasses.replace(v) for v in variants]
    result = run(tasks, variants[::-1], stages=("empty",))
    assert variants == before
    assert ids(result.kept) == ids([v for v in variants[::-1] if v.code])


# --------------------------------------------------------------------------------------------
# claims from given figures (judge) and from the analyser: no sandbox
# --------------------------------------------------------------------------------------------


def _judge(code, dim, level, category, figure):
    key = "judge_cpu_time_ms" if dim == "speed" else "judge_memory_kb"
    return Variant("j", code, "real", dim, level, category, **{key: figure})


def test_speed_and_memory_claims_with_judge_figures():
    v = {
        # same-category pairs: 10 vs 25 holds (2 * 10 < 25); 10 vs 20 is exactly 2x: not kept
        "hi_a": _judge("print(1)", "speed", "high", "A", 10.0),
        "lo_a": _judge("print(2)", "speed", "low", "A", 25.0),
        "hi_b": _judge("print(3)", "speed", "high", "B", 10.0),
        "lo_b": _judge("print(4)", "speed", "low", "B", 20.0),
        # no low of category X: against the median of all lows, 30
        "hi_x1": _judge("print(5)", "memory", "high", "X", 14.0),
        "hi_x2": _judge("print(6)", "memory", "high", "X", 16.0),
        "lo_y": _judge("print(7)", "memory", "low", "Y", 10.0),
        "lo_z": _judge("print(8)", "memory", "low", "Z", 30.0),
        "lo_w": _judge("print(9)", "memory", "low", "W", 100.0),
        "nofig": _judge("print(10)", "speed", "high", "A", None),
        "noclaim": Variant("j", "print(11)", "real"),
    }
    result = run([SeedTask("j", "s")], list(v.values()), stages=("claim",), figures="judge")
    kept = {name for name, x in v.items() if x.variant_id in ids(result.kept)}
    # lo_b: the only kept speed high (10) is not 2x better than 20; lo_y: 2 * 14 > 10
    assert kept == {"hi_a", "lo_a", "hi_x1", "lo_z", "lo_w", "noclaim"}
    reasons = dropped(result)
    assert reasons[v["hi_b"].variant_id] == (
        "claim",
        "'fast' claim not verified: not 2x better than its low sibling(s)",
    )
    assert reasons[v["hi_x2"].variant_id] == (
        "claim",
        "'memory-efficient' claim not verified: not 2x better than its low sibling(s)",
    )
    assert reasons[v["lo_b"].variant_id] == (
        "claim",
        "low speed claim not verified: no kept high is 2x better",
    )
    assert reasons[v["nofig"].variant_id] == ("claim", "no judge figures")
    where = {d.item: d.where for d in result.drops}
    assert where[v["hi_x2"].variant_id] == "16 vs 30 (median of 3 low(s))"


def test_a_claim_without_sibling_or_figures_is_dropped():
    task = SeedTask("t", "s")
    lone = Variant("t", "print(1)", "guideline", "speed", "high", "Algorithm", cpu_time_ms=5.0)
    unmeasured = Variant("t", "print(2)", "guideline", "memory", "low", "Memory")
    result = run([task], [lone, unmeasured], stages=("claim",))
    assert dropped(result) == {
        lone.variant_id: ("claim", "no sibling to compare"),
        unmeasured.variant_id: ("claim", "no measured figures"),
    }


def test_maintainability_claims_by_the_analyser():
    def m(code, level):
        return Variant("t", code, "guideline", "maintainability", level, "Readability")

    clean_high = m("print(1)\n", "high")
    smelly_high = m("import os\nprint(1)\n", "high")  # F401: an unused import
    smelly_low = m("import sys\nprint(2)\n", "low")
    clean_low = m("print(2)\n", "low")
    broken_high = m("def (:\n", "high")
    broken_plain = Variant("t", "def (:\n", "plain")  # no claim: passes the stage
    variants = [clean_high, smelly_high, smelly_low, clean_low, broken_high, broken_plain]
    result = run([SeedTask("t", "s")], variants, stages=("claim",))
    assert ids(result.kept) == ids([clean_high, smelly_low, broken_plain])
    reasons = dropped(result)
    assert reasons == {
        smelly_high.variant_id: ("claim", "'maintainable' claim not verified: has code smells"),
        clean_low.variant_id: ("claim", "low maintainability claim not verified: no code smells"),
        broken_high.variant_id: ("claim", "analyser cannot read the code"),
    }
    assert "parse" in {d.item: d.where for d in result.drops}[broken_high.variant_id]
    by_id = {v.variant_id: v for v in result.kept}
    assert by_id[smelly_low.variant_id].smell_kinds == ("F401",)
    assert by_id[clean_high.variant_id].smell_count == 0
    assert by_id[broken_plain.variant_id].smell_count is None
    assert smelly_low.smell_count is None  # the input is not changed


# --------------------------------------------------------------------------------------------
# the sandbox stages
# --------------------------------------------------------------------------------------------


def test_measurement_unavailable_propagates(monkeypatch):
    def unavailable(*args, **kwargs):
        raise MeasurementUnavailable("no bubblewrap here")

    monkeypatch.setattr(verify, "measure", unavailable)
    task = SeedTask("t", "s", tests=(("", "1\n"),))
    with pytest.raises(MeasurementUnavailable, match="no bubblewrap"):
        run([task], [Variant("t", "print(1)", "plain")], stages=("tests",))


N = 2500  # the quadratic program makes ~3 million loop steps: ~0.3 s of CPU a run


def pairs_divisible_by_7(n):
    """Pairs 0 <= i < j < n with 7 | i + j, counted by residues (independent of the programs)."""
    counts = [len(range(r, n, 7)) for r in range(7)]
    same = counts[0] * (counts[0] - 1) // 2
    return same + sum(counts[r] * counts[7 - r] for r in range(1, 4))


QUADRATIC = """n = int(input())
total = 0
for i in range(n):
    for j in range(i + 1, n):
        if (i + j) % 7 == 0:
            total += 1
print(total)
"""
LINEAR = """n = int(input())
counts = [0] * 7
for i in range(n):
    counts[i % 7] += 1
total = counts[0] * (counts[0] - 1) // 2
for r in range(1, 4):
    total += counts[r] * counts[7 - r]
print(total)
"""
LINEAR_2 = """n = int(input())
c = [len(range(r, n, 7)) for r in range(7)]
print(c[0] * (c[0] - 1) // 2 + sum(c[r] * c[7 - r] for r in range(1, 4)))
"""
LINEAR_3 = """n = int(input())
c = [sum(1 for i in range(n) if i % 7 == r) for r in range(7)]
print(c[0] * (c[0] - 1) // 2 + c[1] * c[6] + c[2] * c[5] + c[3] * c[4])
"""
LINEAR_4 = """n = int(input())
res = [(n - r + 6) // 7 for r in range(7)]
print(res[0] * (res[0] - 1) // 2 + sum(res[r] * res[7 - r] for r in (1, 2, 3)))
"""


@pytest.fixture(scope="module")
def sandbox_run():
    tests = ((f"{N}\n", f"{pairs_divisible_by_7(N)}\n"), ("10\n", f"{pairs_divisible_by_7(10)}\n"))
    tasks = [SeedTask("pairs", "Count pairs", tests=tests), SeedTask("untested", "No tests")]
    v = {
        "hi_alg": Variant("pairs", LINEAR, "guideline", "speed", "high", "Algorithm"),
        "lo_alg": Variant("pairs", QUADRATIC, "guideline", "speed", "low", "Algorithm"),
        "hi_loop": Variant("pairs", LINEAR_2, "guideline", "speed", "high", "Loop"),
        # claims to be slow, but is linear too: no kept high is 2x faster
        "lo_loop": Variant("pairs", LINEAR_3, "guideline", "speed", "low", "Loop"),
        "mem_hi": Variant("pairs", LINEAR_4, "guideline", "memory", "high", "Memory"),
        "wrong": Variant("pairs", "print(int(input()))\n", "plain"),
        "plain": Variant("pairs", LINEAR_4 + "\n", "plain"),
        "untested": Variant("untested", "print(1)\n", "plain"),
    }
    try:
        result = run(tasks, list(v.values()), stages=("tests", "claim"), repeats=3)
    except MeasurementUnavailable as err:
        pytest.skip(f"the sandbox cannot measure here: {err}")
    return v, result


@sandboxed
def test_tests_and_claims_in_the_sandbox(sandbox_run):
    v, result = sandbox_run
    name = {x.variant_id: k for k, x in v.items()}
    assert [name[i] for i in ids(result.kept)] == ["hi_alg", "lo_alg", "plain"]
    assert {name[i]: reason for i, reason in dropped(result).items()} == {
        "hi_loop": ("claim", "'fast' claim not verified: not 2x better than its low sibling(s)"),
        "lo_loop": ("claim", "low speed claim not verified: no kept high is 2x better"),
        "mem_hi": ("claim", "no sibling to compare"),
        "wrong": ("tests", "fails its tests"),
        "untested": ("tests", "task has no tests"),
    }
    where = {name[d.item]: d.where for d in result.drops}
    assert where["wrong"] == "test 0: wrong_answer; test 1: wrong_answer"
    kept = {name[x.variant_id]: x for x in result.kept}
    assert all(x.passed and x.cpu_time_ms > 0 and x.memory_kb > 0 for x in kept.values())
    assert all(x.smell_count is not None for x in kept.values())
    assert kept["lo_alg"].cpu_time_ms > 2 * kept["hi_alg"].cpu_time_ms
    assert all(x.passed is None and x.cpu_time_ms is None for x in v.values())  # not mutated


@sandboxed
def test_sandbox_report(sandbox_run):
    v, result = sandbox_run
    report = result.report
    assert report["drops"] == {
        "tests": {"fails its tests": 1, "task has no tests": 1},
        "claim": {
            "'fast' claim not verified: not 2x better than its low sibling(s)": 1,
            "low speed claim not verified: no kept high is 2x better": 1,
            "no sibling to compare": 1,
        },
    }
    assert report["verified"] == len(v)
    assert report["verified_per_second"] > 0
    assert report["kept_by"]["claim"] == {"None/None": 1, "speed/high": 1, "speed/low": 1}
