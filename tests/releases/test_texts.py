"""Deterministic texts: extractive abbreviations, keyword search queries, BM25 neighbours."""

from __future__ import annotations

from releases.texts import abbreviate, lexical_neighbours, search_queries, split_identifier


def test_abbreviate_cuts_examples_and_keeps_sentences():
    statement = (
        "Given an array of integers, return the length of the longest increasing run. "
        "A run is a maximal block of adjacent elements.\n\nExample 1:\nInput: nums = [1,2]\n"
        "Output: 2\n\nConstraints:\n1 <= n <= 10^5"
    )
    assert abbreviate(statement) == (
        "Given an array of integers, return the length of the longest increasing run. "
        "A run is a maximal block of adjacent elements."
    )
    assert abbreviate(statement, max_chars=80) == (
        "Given an array of integers, return the length of the longest increasing run."
    )
    # one long sentence: cut at a word
    assert abbreviate("word " * 200, max_chars=23) == "word word word word"
    assert (
        abbreviate("You are given $N$ towns and $1 \\leq N$.")
        == "You are given N towns and 1 <= N."
    )


def test_split_identifier():
    assert split_identifier("hasCloseElements") == ["has", "close", "elements"]
    assert split_identifier("max_fill") == ["max", "fill"]


def test_search_queries_start_with_the_name_and_add_distinctive_terms():
    statements = {
        "a": "Return the median of the list. The median is the middle value after sorting.",
        "b": "Return the sum of the list of values.",
        "c": "Return the product of the list of values.",
    }
    queries = search_queries(statements, {"a": "findMedian", "b": "sum_all", "c": None})
    assert queries["a"].split()[:2] == ["find", "median"]
    assert "sorting" in queries["a"].split() and "the" not in queries["a"].split()
    assert queries["c"].split()[0] == "product"


def test_lexical_neighbours_are_the_closest_other_statements():
    statements = {
        "sort1": "sort the array of numbers in ascending order",
        "sort2": "sort numbers ascending and return the sorted array",
        "graph": "shortest path in a weighted graph with dijkstra",
        "tree": "height of a binary tree",
    }
    near = lexical_neighbours(statements, k=2)
    assert near["sort1"][0] == "sort2" and near["sort2"][0] == "sort1"
    assert all(pid not in others for pid, others in near.items())
    assert all(len(others) == 2 for others in near.values())
    assert lexical_neighbours({"only": "x"}) == {"only": []}
