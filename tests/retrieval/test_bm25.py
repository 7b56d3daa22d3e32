"""BM25 with code-aware tokens."""

from __future__ import annotations

import pytest

from retrieval.bm25 import BM25Retriever, code_tokens


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
