"""The reranking records and lists (MTEB's ``Coreb*Reranking``, the official reranker dataset).

Hand-made rows: three problems A, B, C with their documents; the expectations are worked out in
the test from the rules the module documents.
"""

from __future__ import annotations

from collections import Counter

import pytest

from coreb_toolkit.builders.coreb.reranking import records, reranking_lists

CORPUS = [{"doc_id": f"{p}{i}", "source_problem_id": p} for p in "ABC" for i in range(4)]


def _query(qid, problem, positives, hard=(), subtask="t2c_full_retro_any"):
    return {
        "query_id": qid,
        "query": f"text of {qid}",
        "subtask": subtask,
        "positive_ids": list(positives),
        "hard_negative_ids": list(hard),
        "source_problem_id": problem,
    }


QUERIES = [
    _query("q1", "A", ["A0", "A1"], ["A2"]),
    _query("q2", "B", ["B0"], ["B1", "B2"]),
    _query("q3", "C", ["C0"]),  # no hard negative: a train record, not a test list
    _query("q4", "A", []),  # no positive: nothing
]


def test_one_record_per_positive_and_test_lists_need_a_hard_negative():
    lists = reranking_lists("t2c", QUERIES, CORPUS, list_size=6)
    assert [item.query_id for item in lists] == ["q1", "q2", "q3"]
    assert [item.scored for item in lists] == [True, True, False]
    assert [(r["query_id"], r["pos"]) for r in records(lists)] == [
        ("q1", "A0"), ("q1", "A1"), ("q2", "B0"), ("q3", "C0"),
    ]  # fmt: skip
    assert [r["query_id"] for r in records(lists, scored_only=True)] == ["q1", "q1", "q2"]
    first = records(lists)[0]
    assert first["hard_neg"] == ["A2"] and first["query"] == "text of q1"


def test_lists_hold_the_judged_documents_and_easy_ones_of_other_problems():
    lists = reranking_lists("t2c", QUERIES, CORPUS, list_size=6)
    for item in lists:
        assert len(item.candidates) == 6
        judged = {*item.positives, *item.hard_negatives}
        assert judged <= set(item.candidates)
        assert len(item.easy_negatives) == 6 - len(judged)
        # never the query's own problem (an unjudged solution of it, or the c2c anchor)
        assert all(not d.startswith(item.problem) for d in item.easy_negatives)
        assert not judged & set(item.easy_negatives)


def test_easy_negatives_are_taken_least_used_first():
    # 6 queries of problem A, 3 easy each, from the 8 documents of B and C: a least-used draw
    # takes all 8 before any is taken a second time, so the 18 draws use each 2 or 3 times
    queries = [_query(f"q{i}", "A", ["A0"], ["A1"]) for i in range(6)]
    lists = reranking_lists("t2c", queries, CORPUS, list_size=5)
    uses = Counter(d for item in lists for d in item.easy_negatives)
    assert set(uses) == {f"{p}{i}" for p in "BC" for i in range(4)}
    assert set(uses.values()) == {2, 3}
    first_two = lists[0].easy_negatives + lists[1].easy_negatives
    assert len(set(first_two)) == 6  # the second list starts with the documents not yet used


def test_the_draw_is_seeded_and_deterministic():
    a = reranking_lists("t2c", QUERIES, CORPUS, list_size=6, seed=1, release="r")
    b = reranking_lists("t2c", QUERIES, CORPUS, list_size=6, seed=1, release="r")
    c = reranking_lists("t2c", QUERIES, CORPUS, list_size=6, seed=2, release="r")
    assert [x.easy_negatives for x in a] == [x.easy_negatives for x in b]
    assert [x.easy_negatives for x in a] != [x.easy_negatives for x in c]


def test_a_short_corpus_gives_short_lists_and_a_long_judgement_keeps_every_document():
    lists = reranking_lists("t2c", QUERIES[:1], CORPUS[:6], list_size=17)
    # A0-A2 judged, B0 and B1 the only documents of another problem (A3 is A's: never an easy one)
    assert lists[0].candidates == ["A0", "A1", "A2", "B0", "B1"]
    many = _query("q9", "A", ["A0", "A1", "A2"], ["A3"])
    assert reranking_lists("t2c", [many], CORPUS, list_size=3)[0].candidates == [
        "A0", "A1", "A2", "A3",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("queries", "kwargs", "match"),
    [
        (QUERIES, {"family": "x2y"}, "family must be one of"),
        (QUERIES, {"list_size": 0}, "list_size must be an integer"),
        ([QUERIES[0], QUERIES[0]], {}, "occurs twice"),
        ([_query("q1", "A", ["Z9"], ["A1"])], {}, "does not hold"),
        ([{**QUERIES[0], "query": None}], {}, "'query' must be a non-empty string"),
    ],
)
def test_bad_input_is_refused_naming_what(queries, kwargs, match):
    family = kwargs.pop("family", "t2c")
    with pytest.raises(ValueError, match=match):
        reranking_lists(family, queries, CORPUS, **kwargs)
