"""The cross-encoder reranker on ONNX Runtime and OpenVINO (the bundled MiniLM, seeded head).

The head is untrained, so what is tested is agreement with the torch path, not relevance.
"""

from __future__ import annotations

import importlib.util

import pytest

from coreb_toolkit.benchmark.rerank import reranker_metadata
from reranker.cross_encoder import CrossEncoderReranker
from reranker.generative import GenerativeReranker
from reranker.registry import load_reranker
from tests.reranker.conftest import PAIRS

HAS = {
    "onnx": all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime")),
    "openvino": all(importlib.util.find_spec(m) for m in ("onnx", "openvino", "nncf")),
}
EXPORTED = [
    pytest.param(
        b, marks=pytest.mark.skipif(not HAS[b], reason=f"needs pip install coreb-toolkit[{b}]")
    )
    for b in ("onnx", "openvino")
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("rerank-backends")


def make(minilm, cache, backend, quantize=None):
    """The same CrossEncoder (same head) as ``minilm``, on another runtime."""
    return CrossEncoderReranker(
        minilm.model, name="minilm", max_length=minilm.max_length,
        max_tokens_per_batch=minilm.max_tokens_per_batch, cache_dir=cache,
        inference_backend=backend, quantize=quantize,
    )  # fmt: skip


@pytest.mark.parametrize("backend", EXPORTED)
def test_fp32_export_gives_the_torch_scores(minilm, cache, backend):
    expected = minilm.score(PAIRS, instruction="Retrieve code")
    exported = make(minilm, cache, backend)
    assert exported.score(PAIRS, instruction="Retrieve code") == pytest.approx(expected, abs=1e-5)
    # its own scores: another fingerprint (so another score cache), recorded in results
    assert exported.fingerprint() != minilm.fingerprint()
    meta = reranker_metadata(exported, ["t2c_search"])
    assert (meta["inference_backend"], meta["quantization"]) == (backend, None)
    assert reranker_metadata(minilm, [])["inference_backend"] == "torch"
    assert exported.exported.path.parent == cache / "exported"


@pytest.mark.parametrize("backend", EXPORTED)
def test_int8_is_close_but_not_the_fp32_scores(minilm, cache, backend):
    expected = minilm.score(PAIRS)
    int8 = make(minilm, cache, backend, "int8")
    got = int8.score(PAIRS)
    assert got == pytest.approx(expected, abs=0.02)
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) > 1e-6  # quantised
    fingerprints = {int8.fingerprint(), make(minilm, cache, backend).fingerprint()}
    assert len(fingerprints) == 2
    assert reranker_metadata(int8, [])["quantization"]["method"].startswith(("onnx", "nncf"))


@pytest.mark.skipif(not HAS["onnx"], reason="needs pip install coreb-toolkit[onnx]")
def test_a_second_load_reuses_the_export(minilm, cache):
    first = make(minilm, cache, "onnx")
    _ = first.exported
    second = make(minilm, cache, "onnx")
    assert second.exported.exported is False and second.exported.path == first.exported.path


def test_a_model_that_is_no_plain_classifier_is_refused(minilm, monkeypatch, cache):
    import reranker.cross_encoder as ce

    monkeypatch.setattr(ce, "sequence_classifier", lambda model: None)
    with pytest.raises(ValueError, match="exports a plain sequence classifier"):
        make(minilm, cache, "onnx")
    with pytest.raises(ValueError, match="backend must be one of torch, onnx, openvino"):
        make(minilm, cache, "tensorrt")
    with pytest.raises(ValueError, match="needs backend 'onnx' or 'openvino'"):
        make(minilm, cache, "torch", "int8")


def test_the_generative_reranker_refuses_an_exported_backend():
    # refused before anything loads: no model is needed
    with pytest.raises(ValueError, match="not available for the generative yes/no reranker"):
        GenerativeReranker("no/such-model", inference_backend="openvino")
    with pytest.raises(ValueError, match="not available for the generative yes/no reranker"):
        load_reranker("smollm2", inference_backend="onnx", quantize="int8")
