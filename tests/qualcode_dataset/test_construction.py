"""QualCode / MC-QualCode construction rules on the hand-labelled CodeNet-layout fixture.

Every expected value below is read off the table in ``fixture.py`` by hand.
"""

from __future__ import annotations

import dataclasses

import pytest

import qualcode_dataset as q
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet

OPTS = q.QualcodeOptions(retrieval_negatives=5)


@pytest.fixture(scope="module")
def codenet(tmp_path_factory):
    return write_codenet(tmp_path_factory.mktemp("qc") / "codenet")


@pytest.fixture(scope="module")
def data(codenet):
    return q.prepare([codenet], OPTS, analyser=MarkerAnalyser(), progress=False)


def by_problem(rows):
    return {r["problem_id"]: r for r in rows}


def drops(data, stage):
    return {(d.reason, d.item) for d in data.dropped if d.stage == stage}


def test_speed_pairs_min_vs_max_with_the_2x_margin(data):
    pairs = by_problem(data.pairs["speed"])
    assert sorted(pairs) == ["p00010", "p00040"]
    p = pairs["p00010"]
    assert (p["chosen_id"], p["rejected_id"]) == ("s00000011", "s00000014")
    assert (p["chosen_cpu_time_ms"], p["rejected_cpu_time_ms"]) == (10, 60)
    assert p["margin"] == pytest.approx(6.0)
    assert pairs["p00040"]["margin"] == pytest.approx(13 / 5)
    assert p["instruction"] == "Retrieve code that is fast"
    assert "Print the sum of A and B" in p["query"]
    assert p["chosen"].startswith("a, b = map(int, input().split())  # s00000011")
    # exactly 2x is not a preference; one submission is no pair
    stage = drops(data, "pairs:speed")
    assert ("below the 2x margin", "p00020") in stage
    assert ("fewer than 2 submissions", "p00030") in stage


def test_memory_pairs(data):
    pairs = by_problem(data.pairs["memory"])
    assert sorted(pairs) == ["p00010", "p00020", "p00040"]
    assert (pairs["p00020"]["chosen_memory_kb"], pairs["p00020"]["rejected_memory_kb"]) == (
        100,
        201,
    )
    assert pairs["p00020"]["margin"] == pytest.approx(2.01)
    assert pairs["p00020"]["instruction"] == "Retrieve code that is memory-efficient"


def test_maintainability_pairs_clean_vs_most_smells(data):
    pairs = by_problem(data.pairs["maintainability"])
    assert sorted(pairs) == ["p00010"]
    p = pairs["p00010"]
    assert p["rejected_id"] == "s00000014"  # 2 smells beats 1
    assert p["rejected_smell_count"] == 2 and p["rejected_smell_kinds"] == ["X1", "X2"]
    assert p["chosen_id"] in {"s00000011", "s00000012", "s00000013", "s00000015"}
    assert p["chosen_smell_count"] == 0 and p["margin"] is None
    stage = drops(data, "pairs:maintainability")
    assert ("no submission with smells", "p00020") in stage
    assert ("no submission without smells", "p00030") in stage


def test_most_diverse_smells_break_a_tie_in_count(codenet, tmp_path):
    class Tie(MarkerAnalyser):
        def analyse(self, codes):
            out = super().analyse(codes)
            # s16: two findings of one rule; s14: two findings of two rules -> s14 is worse
            out["s00000016"] = q_report(["X1", "X1"])
            return out

    data = q.prepare([codenet], OPTS, analyser=Tie(), progress=False)
    assert by_problem(data.pairs["maintainability"])["p00010"]["rejected_id"] == "s00000014"

    class Tie2(MarkerAnalyser):
        def analyse(self, codes):
            out = super().analyse(codes)
            out["s00000016"] = q_report(["X1", "X2", "X3"])
            out["s00000014"] = q_report(["X1", "X1", "X1"])
            return out

    data = q.prepare([codenet], OPTS, analyser=Tie2(), progress=False)
    assert by_problem(data.pairs["maintainability"])["p00010"]["rejected_id"] == "s00000016"


def q_report(rules):
    from coreb_toolkit.quality.smells import Finding, SmellReport

    return SmellReport(tuple(Finding(r, i + 1, "m") for i, r in enumerate(rules)))


def test_labels_by_thirds_with_ties_left_unlabelled(data):
    labels = {c.submission_id: c.labels for c in data.corpus()}
    expected = {
        "s00000011": (1, 1, 1),
        "s00000012": (1, 0, 1),
        "s00000013": (0, 1, 1),
        "s00000014": (0, 0, 0),
        "s00000015": (None, None, 1),
        "s00000016": (None, None, 0),
        # 5, 7, 7, 9, 11, 13: the second 7 ties with the middle third -> unlabelled
        "s00000041": (1, 1, 1),
        "s00000042": (None, None, 1),
        "s00000043": (None, None, 1),
        "s00000044": (None, None, 1),
        "s00000045": (0, 0, 1),
        "s00000046": (0, 0, 1),
        # two submissions: no thirds; maintainability needs no thirds
        "s00000021": (None, None, 1),
        "s00000031": (None, None, 0),
    }
    got = {s: tuple(labels[s][d] for d in q.DIMENSIONS) for s in expected}
    assert got == expected
    assert ("fewer than 3 submissions: no thirds", "p00020") in drops(data, "labels:speed")


def triplets(data, k):
    return [
        (tuple(r["conditions"]), r["failed_condition"], r["chosen_id"][-2:], r["rejected_id"][-2:])
        for r in data.triplets[k]
    ]


def test_controlled_triplets_strict_balance(data):
    # k=1: speed 1 candidate, memory 1, maintainability 0 -> strict balance takes 0 of each
    assert triplets(data, 1) == []
    assert data.report["mc"]["k=1"]["combinations"]["maintainability"]["available"] == 0
    assert "maintainability" in data.report["mc"]["k=1"]["why_short"]
    # k=2: 2 / 1 / 1 available -> one from each combination
    assert triplets(data, 2) == [
        (("speed", "memory"), "speed", "11", "13"),
        (("speed", "maintainability"), "speed", "11", "13"),
        (("memory", "maintainability"), "memory", "11", "12"),
    ]
    # k=3: the failed conditions alternate
    assert triplets(data, 3) == [
        (("speed", "memory", "maintainability"), "speed", "11", "13"),
        (("speed", "memory", "maintainability"), "memory", "11", "12"),
    ]
    row = data.triplets[3][0]
    assert row["instruction"] == "Retrieve code that is fast and memory-efficient and maintainable"
    assert (row["chosen_speed_label"], row["rejected_speed_label"]) == (1, 0)
    assert row["num_conditions"] == 3


def test_quota_balance_and_uncontrolled(codenet):
    data = q.prepare(
        [codenet],
        dataclasses.replace(OPTS, mc_balance="quota"),
        analyser=MarkerAnalyser(),
        progress=False,
    )
    assert triplets(data, 1) == [
        (("speed",), "speed", "11", "13"),
        (("memory",), "memory", "11", "12"),
    ]
    free = q.prepare(
        [codenet],
        dataclasses.replace(OPTS, control_unrequested=False),
        analyser=MarkerAnalyser(),
        progress=False,
    )
    combos = free.report["mc"]["k=1"]["combinations"]
    # speed: {11,12} x {13,14} in p00010 + 41 x {45,46} in p00040; maintainability:
    # {11,12,13,15} x {14,16}
    assert {c: v["available"] for c, v in combos.items()} == {
        "speed": 6,
        "memory": 6,
        "maintainability": 8,
    }
    assert len(free.triplets[1]) == 18  # strict: 6 from each
    for row in free.triplets[1]:
        d = row["failed_condition"]
        assert (row[f"chosen_{d}_label"], row[f"rejected_{d}_label"]) == (1, 0)


def test_cap_per_combination(codenet):
    data = q.prepare(
        [codenet],
        dataclasses.replace(OPTS, control_unrequested=False, mc_per_k=6),
        analyser=MarkerAnalyser(),
        progress=False,
    )
    assert len(data.triplets[1]) == 6  # 6 // C(3,1) = 2 per combination
    assert {r["conditions"][0] for r in data.triplets[1]} == set(q.DIMENSIONS)


def test_retrieval_negatives_are_other_problems_seeded(codenet, data):
    corpus = {c.submission_id: c.problem_id for c in data.corpus()}
    for rows in data.pairs.values():
        for row in rows:
            negs = row["retrieval_negative_ids"]
            assert len(negs) == 5 == len(set(negs))
            assert all(corpus[n] != row["problem_id"] for n in negs)
    again = q.prepare([codenet], OPTS, analyser=MarkerAnalyser(), progress=False)
    assert again.pairs == data.pairs and again.triplets == data.triplets
    other = q.prepare(
        [codenet], dataclasses.replace(OPTS, seed=1), analyser=MarkerAnalyser(), progress=False
    )
    assert [r["retrieval_negative_ids"] for r in other.pairs["speed"]] != [
        r["retrieval_negative_ids"] for r in data.pairs["speed"]
    ]
    with pytest.raises(ValueError, match="needs 10 submissions of other problems, but only 9"):
        q.prepare(
            [codenet],
            dataclasses.replace(OPTS, retrieval_negatives=10),
            analyser=MarkerAnalyser(),
            progress=False,
        )


def test_every_unused_submission_is_counted(data):
    corpus = {c.submission_id for c in data.corpus()}
    assert "s00000051" not in corpus and "s00000052" not in corpus
    assert ("problem has no statement", "s00000051") in drops(data, "select")
    # the rejected verdict of every problem: counted by the reader's selection
    assert data.report["dropped"]["read"] == {"not accepted": 5}
    total = sum(n for reasons in data.report["dropped"].values() for n in reasons.values())
    assert total == len(data.dropped) + 5


def test_unparseable_code_is_counted_not_lost(codenet, tmp_path):
    class Broken(MarkerAnalyser):
        def analyse(self, codes):
            out = super().analyse(codes)
            from coreb_toolkit.quality.smells import AnalysisError

            out["s00000014"] = AnalysisError("s00000014", "does not parse")
            return out

    data = q.prepare([codenet], OPTS, analyser=Broken(), progress=False)
    assert by_problem(data.pairs["maintainability"])["p00010"]["rejected_id"] == "s00000016"
    assert ("analyser cannot read the code", "s00000014") in drops(data, "pairs:maintainability")
    # still in the corpus and in the speed pairs
    assert by_problem(data.pairs["speed"])["p00010"]["rejected_id"] == "s00000014"


def test_options_are_checked():
    with pytest.raises(ValueError, match="margin must be a number >= 1"):
        q.QualcodeOptions(margin=0.5)
    with pytest.raises(ValueError, match="mc_balance"):
        q.QualcodeOptions(mc_balance="even")
    with pytest.raises(ValueError, match="conditions"):
        q.QualcodeOptions(template="Retrieve good code")
    with pytest.raises(ValueError, match="conditions must be"):
        q.instruction(["fast"])


def test_template_is_configurable(codenet):
    data = q.prepare(
        [codenet],
        dataclasses.replace(OPTS, template="Find a solution that is {conditions}."),
        analyser=MarkerAnalyser(),
        progress=False,
    )
    assert data.pairs["speed"][0]["instruction"] == "Find a solution that is fast."
