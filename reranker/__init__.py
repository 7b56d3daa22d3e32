"""Rerankers: score (query, document) pairs, with an optional instruction, and rank documents.

Backends: :class:`reranker.cross_encoder.CrossEncoderReranker` (``[CLS] q [SEP] d [SEP]``) and
:class:`reranker.generative.GenerativeReranker` (Qwen3-Reranker yes/no format, any chat causal
LM, PEFT LoRA adapters); :func:`reranker.registry.load_reranker` resolves names and the bundled
aliases ``minilm`` and ``smollm2``. Wiring into the benchmark runner (the second stage) is
still to come.
"""
