"""Rerankers: score (query, document) pairs, with an optional instruction, and rank documents.

Backends: :class:`reranker.cross_encoder.CrossEncoderReranker` (``[CLS] q [SEP] d [SEP]``) and
:class:`reranker.generative.GenerativeReranker` (Qwen3-Reranker yes/no format, any chat causal
LM, PEFT LoRA adapters); :func:`reranker.registry.load_reranker` resolves names and the bundled
aliases ``minilm`` and ``smollm2``. The benchmark uses them as CoREB's second stage
(:mod:`coreb_toolkit.benchmark.rerank`, ``coreb evaluate --reranker``) and as QualCode scorers
(:mod:`coreb_toolkit.benchmark.qualcode_eval`, ``coreb evaluate --qualcode``).
"""

from __future__ import annotations

from reranker.base import BaseReranker, RankedDocument, Reranker
from reranker.registry import available, load_reranker

__all__ = ["BaseReranker", "RankedDocument", "Reranker", "available", "load_reranker"]
