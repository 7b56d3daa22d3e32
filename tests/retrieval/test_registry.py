"""The retriever contract and registry: one search signature, declared options, fast errors."""

from __future__ import annotations

import logging

import pytest

from coreb_toolkit.retrieval import registry
from coreb_toolkit.retrieval.base import Retriever
from coreb_toolkit.retrieval.bm25 import BM25FirstStage, BM25Retriever, import_bm25s
from coreb_toolkit.retrieval.registry import REGISTRY, as_retriever, make_retriever

CORPUS = {
    "d1": "def sort_numbers(xs):\n    return sorted(xs)",
    "d2": "def reverse_string(s):\n    return s[::-1]",
    "d3": "if a <= b:\n    total += 1",
    "d4": "if a < b:\n    total += 1",
}
QUERIES = {"q1": "reverse a string", "q2": "sort numbers"}


def test_every_entry_declares_its_options_and_builds_a_retriever():
    for entry in REGISTRY.values():
        assert entry.options and entry.description
    bm25 = make_retriever("bm25", k1=1.2, b=0.5)
    assert isinstance(bm25, BM25FirstStage) and isinstance(bm25, Retriever)
    assert bm25.metadata() == {
        "name": "BM25", "implementation": "bm25s",
        "tokenizer": "code-aware (coreb_toolkit.retrieval.bm25): identifiers split; "
        "operators and integer literals kept for code",
        "k1": 1.2, "b": 0.5,
    }  # fmt: skip
    with pytest.raises(TypeError, match=r"'bm25' \(bm25\) takes no option batch_size.*k1, b"):
        make_retriever("bm25", batch_size=8)
    with pytest.raises(TypeError, match=r"takes no option k1"):
        make_retriever("some/model", k1=1.0)


def test_bm25_first_stage_is_the_engine_with_the_types_given():
    first = make_retriever("bm25")
    for query_type, document_type in (("text", "code"), ("code", "code"), ("code", "text")):
        run = first.search(QUERIES, CORPUS, top_k=3, query_type=query_type,
                           document_type=document_type)  # fmt: skip
        engine = BM25Retriever().index(CORPUS, kind=document_type)
        assert run == engine.search(QUERIES, top_k=3, kind=query_type)
    # code tokens keep operators: the mutant d4 no longer ties with d3 for a code query
    run = first.search({"q": "if a <= b: total += 1"}, CORPUS, top_k=4, query_type="code",
                       document_type="code")  # fmt: skip
    assert run["q"]["d3"] > run["q"]["d4"]
    with pytest.raises(ValueError, match="query_type must be one of"):
        first.search(QUERIES, CORPUS, top_k=3, query_type="prose")


def test_bm25_indexes_a_corpus_once(monkeypatch):
    calls = []
    index = BM25Retriever.index

    def counting(self, corpus, *, kind="auto"):
        calls.append(kind)
        return index(self, corpus, kind=kind)

    monkeypatch.setattr(BM25Retriever, "index", counting)
    first = make_retriever("bm25")
    for _ in range(3):
        first.search(QUERIES, dict(CORPUS), top_k=2, query_type="text", document_type="code")
    assert calls == ["code"]
    first.search(QUERIES, {**CORPUS, "d5": "x = 1"}, top_k=2, document_type="code")
    first.search(QUERIES, CORPUS, top_k=2, document_type="text")
    assert calls == ["code", "code", "text"]


def test_legacy_retrievers_are_wrapped():
    wrapped = as_retriever(BM25Retriever(k1=0.9, b=0.4))
    assert isinstance(wrapped, BM25FirstStage) and (wrapped.k1, wrapped.b) == (0.9, 0.4)
    assert as_retriever(wrapped) is wrapped
    with pytest.raises(TypeError, match=r"must implement .*retrieval\.base\.Retriever"):
        as_retriever(object())


@pytest.mark.parametrize(
    "name", ["not a hub id!", "/no/such/folder/model", "./missing-model", "a/b/c"]
)
def test_a_name_that_cannot_be_a_model_fails_at_once(name):
    with pytest.raises(ValueError) as info:
        make_retriever(name)
    message = str(info.value)
    assert name in message and "bm25" in message and "minilm" in message
    assert "\n" not in message


def test_offline_an_uncached_hub_id_fails_at_once(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path / "st-cache"))
    with pytest.raises(ValueError, match=r"not in the local Hub cache and HF_HUB_OFFLINE.*minilm"):
        make_retriever("nobody-owns-this/no-such-embedder")
    # a bundled name and an existing folder never ask the Hub
    assert make_retriever("bm25").name == "BM25"
    folder = tmp_path / "model"
    folder.mkdir()
    assert registry.entry_for(str(folder)).name == "dense"
    make_retriever(str(folder))  # built lazily: nothing is loaded yet


def test_bm25s_debug_lines_follow_the_root_level(capsys):
    """bm25s sets its own logger to DEBUG on import, which beat the CLI's WARNING level and
    printed ``DEBUG bm25s: Building index from IDs objects``."""
    root = logging.getLogger()
    handler = logging.StreamHandler()  # what logging.basicConfig installs (level NOTSET)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        bm25s = import_bm25s()
        logging.getLogger("bm25s").setLevel(logging.DEBUG)  # as a fresh import leaves it
        bm25s = import_bm25s()
        bm25s.BM25().index(bm25s.tokenize(["one text", "another text"], show_progress=False),
                           show_progress=False)  # fmt: skip
        BM25Retriever().index(CORPUS)
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    err = capsys.readouterr().err
    assert "bm25s" not in err and "Building index" not in err
    assert logging.getLogger("bm25s").level == logging.NOTSET
