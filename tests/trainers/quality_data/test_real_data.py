"""Real-data tasks and variants, and their quality labels by QualCode's rules."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import qualcode_dataset as q
from coreb_toolkit.sources import codenet
from coreb_toolkit.sources.codenet import CodenetData, Problem, Submission
from tests.conftest import SHARED_DATA
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet
from trainers.quality_data.real_data import label_real, real_tasks, real_variants
from trainers.quality_data.records import Variant

# problem -> [(submission, cpu ms, memory KB, smells)]
FIGURES = {
    "p1": [
        ("s11", 10, 400, 0),
        ("s12", 30, 150, 2),
        ("s13", 25, 100, 0),
        ("s14", 21, 201, 5),
        ("s15", 50, 90, 1),
        ("s16", 40, 420, 5),
        ("s17", 22, 180, 0),
    ],
    "p2": [("s21", 10, 100, 0), ("s22", 30, 300, 1)],  # Japanese statement
    "p3": [("s31", 10, 100, 0)],  # no statement
    "p4": [("s41", 10, 100, 0), ("s42", 15, 150, 0), ("s43", 20, 200, 0)],  # within 2x
}
STATEMENTS = {
    "p1": ("Add two numbers.", "en"),
    "p2": ("二つの数を足す。", "ja"),
    "p4": ("Sort.", "en"),
}


def code(sid: str) -> str:
    return f"print(sum(map(int, input().split())))  # {sid}\n"


def make_data() -> CodenetData:
    problems, submissions = {}, {}
    for pid, rows in FIGURES.items():
        text, lang = STATEMENTS.get(pid, (None, None))
        problems[pid] = Problem(pid, pid, text, 2000, 262144, (("1 2\n", "3\n"),), lang)
        submissions[pid] = [
            Submission(pid, s, "Python", code(s), cpu, mem, "Accepted", "u", f"x:{s}")
            for s, cpu, mem, _ in rows
        ]
    submissions["p4"].append(
        Submission("p4", "s44", "Python", "  \n", 1, 1, "Accepted", "u", "x:s44")
    )
    return CodenetData(problems, submissions, [], ["hand-made"])


def smells_of(variants):
    counts = {s: n for rows in FIGURES.values() for s, _, _, n in rows}
    return {v.variant_id: counts[v.source_id] for v in variants}


def test_tasks_take_english_statements_tests_and_the_fastest_reference():
    drops = []
    tasks = real_tasks(make_data(), ["p1", "p2", "p3", "p4", "p9"], drops=drops)
    assert [t.task_id for t in tasks] == ["p1", "p4"]
    assert tasks[0].statement == "Add two numbers." and tasks[0].tests == (("1 2\n", "3\n"),)
    assert tasks[0].reference == code("s11")  # 10 ms, the least CPU time of p1
    assert tasks[1].reference == code("s41")  # s44 (1 ms) is empty code
    assert {(d.reason, d.item) for d in drops} == {
        ("statement only in Japanese", "p2"),
        ("problem has no statement", "p3"),
        ("problem not in the sources", "p9"),
    }
    assert {d.stage for d in drops} == {"select"}


def test_variants_carry_the_submission_and_judge_figures():
    drops = []
    variants = real_variants(make_data(), ["p1", "p4"], drops=drops)
    assert [v.source_id for v in variants] == [s for p in ("p1", "p4") for s, *_ in FIGURES[p]]
    v = variants[3]
    assert (v.origin, v.task_id, v.judge_cpu_time_ms, v.judge_memory_kb) == ("real", "p1", 21, 201)
    assert v.dimension is None and v.passed is None
    assert [(d.reason, d.item) for d in drops] == [("empty code", "s44")]


def expected_figure_claims(rows, j, margin=2.0, n_low=4):
    """high = least figure (then id); lows = those margin x worse, most different first."""
    best = min(rows, key=lambda r: (r[j], r[0]))
    lows = sorted((r for r in rows if margin * best[j] < r[j]), key=lambda r: (-r[j], r[0]))
    return best[0], [r[0] for r in lows[:n_low]]


def claims(labelled, task, dim):
    mine = [v for v in labelled if v.task_id == task and v.dimension == dim]
    highs = [v.source_id for v in mine if v.level == "high"]
    return highs, [v.source_id for v in mine if v.level == "low"]


@pytest.mark.parametrize("n_low", [4, 2])
def test_speed_and_memory_claims(n_low):
    variants = real_variants(make_data(), ["p1", "p4"])
    labelled, drops = label_real(variants, smells=smells_of(variants), n_low=n_low)
    for dim, j in (("speed", 1), ("memory", 2)):
        high, lows = expected_figure_claims(FIGURES["p1"], j, n_low=n_low)
        assert claims(labelled, "p1", dim) == ([high], lows), dim
        assert claims(labelled, "p4", dim) == ([], []), dim
    # p1 speed: best 10 ms; 21, 22, 25, 30, 40, 50 are all > 20: n_low caps them
    assert claims(labelled, "p1", "speed")[1][:2] == ["s15", "s16"]
    reasons = Counter((d.stage, d.reason) for d in drops)
    assert reasons[("label:speed", "below the 2x margin")] == 1  # p4: 10 vs 20 is not > 2x
    assert reasons[("label:speed", f"more than {n_low} low-quality submissions")] == 6 - n_low


def test_maintainability_claims_follow_the_seeded_draw():
    variants = real_variants(make_data(), ["p1", "p4"])
    for seed in range(4):
        labelled, drops = label_real(variants, smells=smells_of(variants), seed=seed)
        clean = sorted(s for s, *_, n in FIGURES["p1"] if n == 0)
        drawn = random.Random(f"{seed}:maintainability:p1").choice(clean)
        # most smells first; ties (s14, s16: 5 each) by the higher id
        assert claims(labelled, "p1", "maintainability") == ([drawn], ["s16", "s14", "s12", "s15"])
        assert ("label:maintainability", "no submission with smells", "p4") in {
            (d.stage, d.reason, d.item) for d in drops
        }


def test_a_submission_with_several_claims_appears_once_per_claim():
    variants = real_variants(make_data(), ["p1"])
    labelled, _ = label_real(variants, smells=smells_of(variants), seed=0)
    s15 = [v for v in labelled if v.source_id == "s15"]
    # s15: slowest (speed low), least memory (memory high), one smell (maintainability low)
    assert sorted((v.dimension, v.level) for v in s15) == [
        ("maintainability", "low"),
        ("memory", "high"),
        ("speed", "low"),
    ]
    assert len({v.variant_id for v in labelled}) == len(labelled)
    assert all(v.code == code("s15") and v.origin == "real" for v in s15)


def test_measured_figures_and_failures():
    variants = real_variants(make_data(), ["p1"])
    measured = []
    for v in variants:
        fails = v.source_id == "s11"
        cpu = None if fails else 1000 / v.judge_cpu_time_ms  # the reverse order of the judge
        measured.append(Variant(**{**v.__dict__, "passed": not fails, "cpu_time_ms": cpu}))
    labelled, drops = label_real(measured, figures="measured", smells=smells_of(measured))
    rows = [(s, 1000 / cpu, 0) for s, cpu, *_ in FIGURES["p1"] if s != "s11"]
    high, lows = expected_figure_claims(rows, 1)
    assert claims(labelled, "p1", "speed") == ([high], lows)
    assert (high, lows) == ("s15", ["s14", "s17"])  # 20 against 47.6 and 45.5
    assert ("fails its public tests when re-run", "s11") in {(d.reason, d.item) for d in drops}
    assert claims(labelled, "p1", "memory") == ([], [])  # no measured memory


def test_the_same_pairs_as_qualcode(tmp_path):
    """The high and the first low of every task are QualCode's chosen and rejected."""
    root = write_codenet(tmp_path / "codenet")
    options = q.QualcodeOptions(retrieval_negatives=3, seed=5)
    prepared = q.prepare([root], options, analyser=MarkerAnalyser(), progress=False)
    data = codenet.load([root], progress=False)
    variants = real_variants(data, list(prepared.candidates))
    reports = MarkerAnalyser().analyse({v.variant_id: v.code for v in variants})
    labelled, _ = label_real(variants, smells=reports, seed=5)
    for dim, rows in prepared.pairs.items():
        for row in rows:
            highs, lows = claims(labelled, row["problem_id"], dim)
            assert (highs, lows[0]) == ([row["chosen_id"]], row["rejected_id"]), (dim, row)
        pairs = {r["problem_id"] for r in rows}
        assert {v.task_id for v in labelled if v.dimension == dim} == pairs, dim


def test_bad_input_is_refused():
    variants = real_variants(make_data(), ["p1"])
    with pytest.raises(ValueError, match="smells has no entry"):
        label_real(variants, smells={})
    with pytest.raises(ValueError, match="already claims"):
        label_real([Variant("p1", "x", "real", dimension="speed", level="high")], smells={})
    with pytest.raises(ValueError, match="share the id"):
        label_real(variants + variants[:1], smells=smells_of(variants))
    with pytest.raises(ValueError, match="figures must be"):
        label_real(variants, figures="guess")
    with pytest.raises(ValueError, match="margin"):
        label_real(variants, margin=0.5)
    with pytest.raises(ValueError, match="n_low"):
        label_real(variants, n_low=0)


def test_the_ruff_analyser_runs_when_no_smells_are_given():
    clean = "a, b = map(int, input().split())\nprint(a + b)\n"
    smelly = (
        "import os\ntry:\n    a, b = map(int, input().split())\nexcept:\n    pass\nprint(a + b)\n"
    )
    variants = [
        Variant("p1", clean, "real", source_id="s1", judge_cpu_time_ms=10, judge_memory_kb=10),
        Variant("p1", smelly, "real", source_id="s2", judge_cpu_time_ms=11, judge_memory_kb=11),
    ]
    labelled, _ = label_real(variants)
    assert claims(labelled, "p1", "maintainability") == (["s1"], ["s2"])
    low = next(v for v in labelled if v.source_id == "s2" and v.dimension == "maintainability")
    assert low.smell_count >= 2 and {"E722", "F401"} <= set(low.smell_kinds)


@pytest.mark.needs_shared_data
def test_real_data_labels():
    data = codenet.load([SHARED_DATA / "codenet", SHARED_DATA / "nofuneval"], progress=False)
    drops = []
    tasks = real_tasks(data, drops=drops)
    assert len(tasks) + len(drops) == len(data.submissions)
    assert Counter(d.reason for d in drops)["statement only in Japanese"] == sum(
        1 for p in data.problems.values() if p.statement_language == "ja"
    )
    variants = real_variants(data, [t.task_id for t in tasks])
    labelled, _ = label_real(variants)
    # the speed highs recomputed from the judge's figures
    for t in tasks[:40]:
        rows = [(s.submission_id, s.cpu_time_ms) for s in data.submissions[t.task_id]]
        high, lows = expected_figure_claims(rows, 1)
        got = claims(labelled, t.task_id, "speed")
        assert got == (([high], lows) if lows else ([], [])), t.task_id
