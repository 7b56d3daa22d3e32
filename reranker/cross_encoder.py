"""Cross-encoder reranker: ``[CLS] q [SEP] d [SEP]`` -> linear head -> score [protocol §4].

A thin layer over ``sentence_transformers.CrossEncoder`` with ``num_labels=1``; the score is
the model's default activation of its single logit (sigmoid for a one-label model, as
``CrossEncoder.predict`` returns it).

Instruction: a cross-encoder has no instruction slot, so a given instruction is prefixed to
the query as ``"{instruction}\\n{query}"`` (the query side of the pair), leaving the document
untouched; without one the query is used as is.

Truncation: the document only (``truncation="only_second"`` at ``max_length`` tokens); a query
(with its instruction) that leaves no room for the document is a ``ValueError``.

Throughput: each pair is tokenized once (``truncation="only_second"``), the pairs are sorted by
their token length and grouped into batches of at most ``max_tokens_per_batch`` padded tokens,
each batch padded to its own longest row, and the Hugging Face sequence classifier inside the
``CrossEncoder`` runs under ``torch.inference_mode()``; its logit goes through the
``CrossEncoder``'s own ``activation_fn``, as ``CrossEncoder.predict`` applies it (upcast to
float32 first), so the scores are ``predict``'s. ``CrossEncoder.predict`` itself sorts by
characters, batches a fixed count of pairs and tokenizes each batch again. A ``CrossEncoder``
that is not a single sequence-classification module (a causal LM scored by logits, extra
modules) is scored through ``predict``, one call per batch.

Inference backends (``inference_backend``): ``"torch"`` (default), or, for a plain sequence
classifier on the CPU, ``"onnx"`` (ONNX Runtime) or ``"openvino"``, optionally ``quantize="int8"``.
The classifier is exported once to ONNX with its ``logits`` as output
(:class:`~coreb_toolkit.retrieval.backends.ExportedEncoder`, cached by fingerprint under
``<cache_dir>/exported`` beside the score cache) and run on the same collated batches, so the
tokenization, batching and activation are those of the torch path; the fingerprint, and with it
the score cache and the results file, records the backend and the quantisation.

A BERT classifier (``BertForSequenceClassification``: all-MiniLM-L6-v2,
cross-encoder/ms-marco-MiniLM-L6-v2...) reads the last layer at the ``[CLS]`` position only
(its pooler), so that layer runs the keys and values of every position but the query,
attention output and feed-forward block of ``[CLS]`` alone: a sixth less work for a 6-layer
MiniLM, the same scores up to float rounding (:func:`bert_cls_logits`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reranker.base import BaseReranker, architectures, model_fingerprint, require, token_budget

if TYPE_CHECKING:
    from coreb_toolkit.retrieval.backends import ExportedEncoder

logger = logging.getLogger(__name__)

CPU_TOKENS_PER_BATCH = 2048


def join_instruction(instruction: str | None, query: str) -> str:
    """The query side of the pair: ``"{instruction}\\n{query}"``, or the query alone."""
    return query if instruction is None else f"{instruction}\n{query}"


class CrossEncoderReranker(BaseReranker):
    """Score pairs with a one-label sequence-classification model (a cross-encoder).

    Args:
        model: a local folder or Hub id, or a loaded ``CrossEncoder``.
        name: display name (defaults to the model path).
        max_length: most tokens per pair; the document is truncated to fit.
        max_tokens_per_batch: most padded tokens per forward pass (default: 2,048 on a CPU,
            where a batch's activations and attention scores then stay in cache and
            scoring runs ~1.2x faster than with 16,384, measured on MiniLM; 16,384 on an
            accelerator).
        batch_size: instead of ``max_tokens_per_batch``, that many pairs of ``max_length``
            tokens per forward pass (``batch_size * max_length`` tokens).
        device: ``"cpu"``, ``"cuda"``, ... (default: sentence-transformers' choice).
        cache_dir: keep scores on disk there (see :mod:`reranker.base`).
        trust_remote_code: run the model folder's own code (jina-reranker-v2 and models
            fine-tuned from it); only for models you trust.
        inference_backend: ``"torch"`` (default), ``"onnx"`` or ``"openvino"`` (CPU only, a
            plain sequence classifier only; see the module notes).
        quantize: ``"int8"`` with ``onnx`` (dynamic quantisation) or ``openvino`` (int8
            weights); ``None`` keeps the fp32 weights.

    Example::

        rr = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")
        rr.rank("sort a list", {"a": "def f(x): return sorted(x)", "b": "print(1)"})
    """

    backend = "cross-encoder"
    handles = "a sequence classifier"

    @classmethod
    def accepts(cls, config: object) -> bool:
        """A ``*ForSequenceClassification`` model."""
        return any(a.endswith("ForSequenceClassification") for a in architectures(config))

    def __init__(
        self,
        model: Any,
        *,
        name: str | None = None,
        max_length: int = 512,
        max_tokens_per_batch: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        cache_dir: str | Path | None = None,
        trust_remote_code: bool = False,
        inference_backend: str = "torch",
        quantize: str | None = None,
    ) -> None:
        from coreb_toolkit.retrieval.backends import check_backend

        st = require("sentence_transformers")
        self.inference_backend, self.quantize = check_backend(
            inference_backend, quantize, type(self).__name__
        )
        max_tokens_per_batch = token_budget(
            type(self).__name__, max_length, max_tokens_per_batch, batch_size
        )
        if max_length < 4 or (max_tokens_per_batch is not None and max_tokens_per_batch < 1):
            raise ValueError(
                f"max_length must be >= 4 and max_tokens_per_batch positive, "
                f"got {max_length} and {max_tokens_per_batch}"
            )
        self._source = str(model) if isinstance(model, (str, Path)) else None
        if isinstance(model, (str, Path)):
            model = st.CrossEncoder(
                str(model), num_labels=1, max_length=max_length, device=device,
                trust_remote_code=trust_remote_code,
            )  # fmt: skip
        num_labels = getattr(model, "num_labels", None)
        if num_labels != 1:
            raise ValueError(
                f"{type(self).__name__} supports a model with 1 output label, but got {num_labels}"
            )
        self.model = model
        self.model.eval()
        self.tokenizer = model.tokenizer
        self.name = name or str(self._source or type(model).__name__)
        self.max_length = int(max_length)
        if max_tokens_per_batch is None:
            on_cpu = str(getattr(model, "device", "cpu")).startswith("cpu")
            max_tokens_per_batch = CPU_TOKENS_PER_BATCH if on_cpu else 16384
        self.max_tokens_per_batch = int(max_tokens_per_batch)
        self.cache_dir = cache_dir
        # [CLS] q [SEP] d [SEP]: the special tokens a pair adds
        self._special = self.tokenizer.num_special_tokens_to_add(pair=True)
        self._classifier = sequence_classifier(model)
        self._bert_cls_only = is_plain_bert(self._classifier)
        self._exported: ExportedEncoder | None = None
        if self.inference_backend != "torch":
            self._check_exportable()

    def _check_exportable(self) -> None:
        """``ValueError`` for a model the exported backends cannot run as the torch path does."""
        backend = self.inference_backend
        if self._classifier is None:
            raise ValueError(
                f"{type(self).__name__}: inference_backend={backend!r} exports a plain "
                f"sequence classifier, and {self.name!r} is more (extra modules, a prompt, a "
                "non-torch CrossEncoder); use inference_backend='torch' for it"
            )
        device = str(getattr(self._classifier, "device", "cpu"))
        if not device.startswith("cpu"):
            raise ValueError(
                f"{type(self).__name__}: inference_backend={backend!r} runs on the CPU, but the "
                f"model is on {device}; load it with device='cpu' or use inference_backend='torch'"
            )

    @property
    def exported(self) -> ExportedEncoder | None:
        """The ONNX / OpenVINO classifier (exported on first use, then read from the cache), or
        ``None`` on torch."""
        if self.inference_backend == "torch":
            return None
        if self._exported is None:
            from coreb_toolkit.retrieval.backends import (
                ExportedEncoder,
                export_fingerprint,
                export_folder,
            )

            tok = self.tokenizer
            names = ("input_ids", "attention_mask")
            if "token_type_ids" in getattr(tok, "model_input_names", ()):
                names = (*names, "token_type_ids")
            cache = None if self.cache_dir is None else Path(self.cache_dir)
            self._exported = ExportedEncoder(
                self._classifier, names, self.inference_backend, self.quantize,
                export_folder(cache), export_fingerprint(self._torch_fingerprint(),
                                                         self.inference_backend, self.quantize),
                output="logits",
            )  # fmt: skip
        return self._exported

    def fingerprint(self) -> str:
        """Model source, revision, activation and a checksum of a sample of every weight, and
        the inference backend and quantisation when they are not torch's fp32."""
        if self.inference_backend == "torch":
            return self._torch_fingerprint()
        import hashlib
        import json

        from coreb_toolkit.retrieval.backends import quantization_config

        # the weights are hashed once, in the torch fingerprint; the runtime is added to it
        runtime = [self._torch_fingerprint(), self.inference_backend,
                   quantization_config(self.inference_backend, self.quantize)]  # fmt: skip
        return hashlib.sha256(json.dumps(runtime, default=str).encode()).hexdigest()

    def _torch_fingerprint(self) -> str:
        config = getattr(self.model, "config", None)
        meta = [self._source, getattr(config, "_commit_hash", None), repr(self.model.activation_fn)]
        return model_fingerprint(self.model, meta)

    def _check_queries(self, queries: list[str]) -> None:
        """``ValueError`` naming the first query that leaves no room for its document."""
        unique = list(dict.fromkeys(queries))
        ids = self.tokenizer(unique, add_special_tokens=False, verbose=False)["input_ids"]
        n_tokens = {q: len(x) + self._special for q, x in zip(unique, ids, strict=True)}
        for i, query in enumerate(queries):
            if n_tokens[query] >= self.max_length:
                raise ValueError(
                    f"{type(self).__name__}: the query at index {i} takes {n_tokens[query]} "
                    f"tokens with its instruction, leaving no room for the document within "
                    f"max_length={self.max_length}; shorten it or raise max_length"
                )

    def _score_batch(self, pairs: list[tuple[str, str]], instruction: str | None) -> list[float]:
        import torch

        queries = [join_instruction(instruction, q) for q, _ in pairs]
        docs = [d for _, d in pairs]
        self._check_queries(queries)
        enc = self.tokenizer(
            queries, docs, truncation="only_second", max_length=self.max_length, verbose=False
        )
        features = {k: v for k, v in enc.items() if k in ("input_ids", "token_type_ids")}
        scores = [0.0] * len(pairs)
        _ = self.exported  # exported (or read) outside inference mode, which export refuses
        with torch.inference_mode():
            for group in self.batches([len(ids) for ids in features["input_ids"]]):
                if self._classifier is None:
                    out = self.model.predict(
                        [(queries[i], docs[i]) for i in group],
                        batch_size=len(group),
                        show_progress_bar=False,
                        convert_to_tensor=True,
                        processing_kwargs={
                            "text": {"truncation": "only_second", "max_length": self.max_length}
                        },
                    )
                else:
                    out = self.activate(self.logits(self.collate(features, group)))
                batch_scores = out.reshape(-1).tolist()
                for i, s in zip(group, batch_scores, strict=True):
                    scores[i] = float(s)
                self._report(group, batch_scores)  # on disk now: a killed run resumes here
        return scores

    def collate(self, features: dict[str, list[list[int]]], rows: list[int]) -> dict[str, Any]:
        """``rows`` of the tokenized ``features`` padded to their longest (on the tokenizer's
        padding side, with its pad ids), with the attention mask, on the model's device."""
        import torch

        tok = self.tokenizer
        # the pad values are masked out; any id would do where a tokenizer has no pad token
        pad = {"input_ids": tok.pad_token_id or 0, "token_type_ids": tok.pad_token_type_id}
        width = max(len(features["input_ids"][i]) for i in rows)
        left = tok.padding_side == "left"
        out = {k: torch.full((len(rows), width), pad[k], dtype=torch.long) for k in features}
        out["attention_mask"] = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            n = len(features["input_ids"][i])
            span = slice(width - n, width) if left else slice(0, n)
            for k, values in features.items():
                out[k][r, span] = torch.tensor(values[i], dtype=torch.long)
            out["attention_mask"][r, span] = 1
        return {k: v.to(self._classifier.device) for k, v in out.items()}

    def logits(self, inputs: dict[str, Any]) -> Any:
        """The classifier's logits of a collated batch."""
        if self.exported is not None:
            return self.exported(inputs)
        if self._bert_cls_only:
            return bert_cls_logits(self._classifier, inputs)
        return self._classifier(**inputs).logits

    def activate(self, logits: Any) -> Any:
        """``CrossEncoder.predict``'s scores from the classifier's logits: float32 at least,
        then the model's ``activation_fn`` (sigmoid for one label unless configured)."""
        import torch

        if torch.is_floating_point(logits) and torch.finfo(logits.dtype).bits < 32:
            logits = logits.float()
        activation = self.model.activation_fn
        return activation(logits) if activation is not None else logits


def sequence_classifier(model: Any) -> Any:
    """The Hugging Face sequence classifier a ``CrossEncoder`` is a thin wrapper of, or ``None``
    when it is more (a causal LM scored by its logits, extra modules, a non-torch backend, a
    default prompt that ``predict`` would prepend)."""
    try:
        modules = list(model)
    except TypeError:
        return None
    if len(modules) != 1 or getattr(model, "backend", "torch") != "torch":
        return None
    if getattr(model, "default_prompt_name", None) is not None:
        return None
    if getattr(modules[0], "transformer_task", None) != "sequence-classification":
        return None
    return getattr(modules[0], "model", None)


def is_plain_bert(classifier: Any) -> bool:
    """Whether ``classifier`` is a ``BertForSequenceClassification`` that
    :func:`bert_cls_logits` computes exactly: encoder only, absolute positions, a pooler, and
    an attention implementation that takes an additive mask."""
    try:
        from transformers import BertForSequenceClassification
    except ImportError:
        return False
    if not isinstance(classifier, BertForSequenceClassification):
        return False
    config = classifier.config
    return (
        not config.is_decoder
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and getattr(config, "_attn_implementation", None) in ("eager", "sdpa")
        and classifier.bert.pooler is not None
    )


def bert_cls_logits(classifier: Any, inputs: dict[str, Any]) -> Any:
    """``BertForSequenceClassification`` logits with the last layer run for ``[CLS]`` only.

    The pooler reads the last hidden state at the first position, so the last layer needs the
    keys and values of every position but the query, the attention output and the
    feed-forward block of the first position alone. Eval mode (no dropout) is assumed.
    """
    import torch
    import torch.nn.functional as F

    bert = classifier.bert
    hidden = bert.embeddings(
        input_ids=inputs["input_ids"], token_type_ids=inputs.get("token_type_ids")
    )
    keep = inputs["attention_mask"]
    mask = None  # no padding in the batch: no mask, as BertModel skips it too
    if not bool(keep.all()):
        mask = (1.0 - keep[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
    *layers, last = bert.encoder.layer
    for layer in layers:
        out = layer(hidden, attention_mask=mask)
        hidden = out[0] if isinstance(out, tuple) else out  # transformers 4.x returns a tuple
    attention = last.attention.self
    rows = hidden.shape[0]

    def heads(x: torch.Tensor) -> torch.Tensor:
        shape = (rows, -1, attention.num_attention_heads, attention.attention_head_size)
        return x.view(shape).transpose(1, 2)

    context = F.scaled_dot_product_attention(
        heads(attention.query(hidden[:, :1])),
        heads(attention.key(hidden)),
        heads(attention.value(hidden)),
        attn_mask=mask,
    )
    first = last.attention.output(context.transpose(1, 2).reshape(rows, 1, -1), hidden[:, :1])
    first = last.output(last.intermediate(first), first)
    return classifier.classifier(classifier.dropout(bert.pooler(first)))
