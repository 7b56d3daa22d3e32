"""The contract: validation, rank on top of score, the on-disk cache (no model needed)."""

from __future__ import annotations

import dataclasses

import pytest

from reranker.base import BaseReranker, RankedDocument, Reranker


class LengthReranker(BaseReranker):
    """Scores a pair by its document length; counts model calls."""

    def __init__(self, cache_dir=None, tag="v1"):
        self.name = "length"
        self.max_length = 10
        self.cache_dir = cache_dir
        self.tag = tag
        self.calls: list[list[tuple[str, str]]] = []

    def fingerprint(self) -> str:
        return self.tag

    def _score_batch(self, pairs, instruction):
        self.calls.append(list(pairs))
        bonus = 0.5 if instruction else 0.0
        return [len(d) + bonus for _, d in pairs]


def test_satisfies_protocol():
    assert isinstance(LengthReranker(), Reranker)


def test_ranked_document_is_frozen():
    doc = RankedDocument("a", 1.0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.score = 2.0  # type: ignore[misc]


def test_rank_mapping_sorts_by_score_ties_keep_order_and_top_k():
    rr = LengthReranker()
    ranked = rr.rank("q", {"a": "xx", "b": "xxxx", "c": "xx", "d": "x"})
    assert [(r.doc_id, r.score, r.rank) for r in ranked] == [
        ("b", 4.0, 1),
        ("a", 2.0, 2),
        ("c", 2.0, 3),
        ("d", 1.0, 4),
    ]
    assert [r.doc_id for r in rr.rank("q", ["x", "xxx"], top_k=1)] == ["1"]


@pytest.mark.parametrize("top_k", [0, -1, 1.5])
def test_rank_rejects_bad_top_k(top_k):
    with pytest.raises(ValueError, match="top_k"):
        LengthReranker().rank("q", ["x"], top_k=top_k)


def test_empty_document_names_its_index():
    with pytest.raises(ValueError, match="empty document at index 2"):
        LengthReranker().score([("q", "a"), ("q", "b"), ("q", "  ")])


def test_empty_query_names_its_index():
    with pytest.raises(ValueError, match="empty query at index 1"):
        LengthReranker().score([("q", "a"), ("", "b")])
    with pytest.raises(ValueError, match="empty query at index 0"):
        LengthReranker().rank("", ["a"])


def test_non_pairs_are_type_errors():
    with pytest.raises(TypeError, match="index 0"):
        LengthReranker().score([("q", "a", "b")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sequence"):
        LengthReranker().score("qa")  # type: ignore[arg-type]


def test_cache_hit_calls_no_model_and_keys_on_instruction(tmp_path):
    rr = LengthReranker(cache_dir=tmp_path)
    pairs = [("q", "ab"), ("q", "abc"), ("q", "ab")]
    assert rr.score(pairs) == [2.0, 3.0, 2.0]
    assert rr.calls == [[("q", "ab"), ("q", "abc")]]  # the duplicate is scored once
    fresh = LengthReranker(cache_dir=tmp_path)  # a new process, the same fingerprint
    assert fresh.score(pairs) == [2.0, 3.0, 2.0]
    assert fresh.calls == []
    assert fresh.score(pairs, instruction="i") == [2.5, 3.5, 2.5]  # new key: scored
    assert len(fresh.calls) == 1
    other = LengthReranker(cache_dir=tmp_path, tag="v2")  # other weights: never a stale hit
    other.score(pairs)
    assert len(other.calls) == 1
