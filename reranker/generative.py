"""Generative yes/no reranker in the Qwen3-Reranker format, for any chat causal LM.

The model reads the judgement prompt of :mod:`reranker.prompt` (the Qwen3-Reranker system
prompt, ``<Instruct>``, ``<Query>``, ``<Document>`` and the assistant's empty think block; the
same function builds the CoREB-Reranker's training sequences) and the score is the probability
of answering "yes" [protocol §4; CoREB B.3; SynH-Rank eq. 1]: ``P(yes) / (P(yes) + P(no))``,
the softmax over the "yes" and "no" logits at the last position.

Truncation cuts the document only (never the instruction, the query, the prefix or the
suffix); a pair whose prompt without the document exceeds ``max_length`` is a ``ValueError``.

Throughput: the prompts are tokenized in one call; pairs are sorted by token length and
grouped into batches of at most ``max_tokens_per_batch`` padded tokens (left padding, explicit
position ids, so that a pair gets the same score alone or in any batch); only the last
position's logits are computed and the forward runs in eval mode under
``torch.inference_mode()``.

Shared prompt heads (prefix caching, as vLLM's automatic prefix caching and SGLang's
RadixAttention do it): all prompts of a call open with the same system prompt and instruction,
and the pairs of one query (what :meth:`~reranker.base.BaseReranker.rank` scores) share the
query as well. The pairs are grouped by query (the queries with a single document form one
group more); the tokens a group's prompts share (its head) are run once, the heads of many
groups in one batch, and every prompt's remaining tokens then run in length-sorted batches
against the key/value cache of its group's head. The scores equal those of whole prompts up to
float rounding. A model whose cache is not a plain per-layer key/value cache (sliding windows,
recurrent layers) runs every prompt whole.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reranker.base import (
    INSTALL_PEFT,
    BaseReranker,
    architectures,
    model_fingerprint,
    require,
    token_budget,
)
from reranker.prompt import (
    DEFAULT_INSTRUCTION,
    QWEN3_PREFIX,
    QWEN3_SUFFIX,
    SYSTEM_PROMPT,
    THINK_BLOCK,
    USER_TEMPLATE,
    YesNoPrompt,
    answer_token_id,
    chat_prefix_suffix,
)

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

#: Why the yes/no reranker runs on torch only (no ONNX / OpenVINO backend).
TORCH_ONLY = (
    "its scores run shared prompt heads once and every prompt's rest against their key/value "
    "cache, and compute the last position's logits only; an ONNX export of the causal LM runs "
    "whole prompts through the full vocabulary head, and no exported causal LM has been shown "
    "here to give the same P(yes) to 1e-4"
)


class GenerativeReranker(BaseReranker):
    """Score pairs by a causal LM's P(yes) / (P(yes) + P(no)) [Qwen3-Reranker card; protocol §4].

    Args:
        model: a local folder or Hub id, or a loaded causal LM (then ``tokenizer`` is required).
        tokenizer: the tokenizer; loaded from ``model`` when omitted.
        name: display name (defaults to the model path).
        gguf_file: a GGUF file inside ``model`` (dequantised on load).
        dtype: torch dtype for loading (default float32 on CPU, bfloat16 on CUDA).
        device: ``"cpu"``, ``"cuda"``, ... (default: CUDA when available).
        adapter: a PEFT (LoRA) adapter folder loaded onto the base model.
        merge: merge the adapter into the base weights (faster inference, same scores).
        max_length: most tokens per prompt; the document is truncated to fit.
        max_tokens_per_batch: most padded tokens per forward pass (default 16,384).
        batch_size: instead of ``max_tokens_per_batch``, that many pairs of ``max_length``
            tokens per forward pass (``batch_size * max_length`` tokens).
        cache_dir: keep scores on disk there (see :mod:`reranker.base`).
        default_instruction: the instruction when ``score`` gets none (the card's default).
        inference_backend: ``"torch"`` only; ``"onnx"`` / ``"openvino"`` (and ``quantize``)
            are refused with the reason (see :data:`TORCH_ONLY`).
        quantize: ``None`` only (see ``inference_backend``).

    Example::

        rr = GenerativeReranker("Qwen/Qwen3-Reranker-0.6B")
        rr.score([("sort a list", "def f(x): return sorted(x)")], instruction=...)
    """

    backend = "generative"
    handles = "a causal LM"

    @classmethod
    def accepts(cls, config: object) -> bool:
        """A ``*ForCausalLM`` / ``*LMHeadModel`` model."""
        return any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures(config))

    # Long: loading, the adapter and the prompt's token ids are one sequence of checked steps.
    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        name: str | None = None,
        gguf_file: str | None = None,
        dtype: Any = None,
        device: str | None = None,
        adapter: str | Path | None = None,
        merge: bool = False,
        max_length: int = 8192,
        max_tokens_per_batch: int | None = None,
        batch_size: int | None = None,
        cache_dir: str | Path | None = None,
        default_instruction: str = DEFAULT_INSTRUCTION,
        inference_backend: str = "torch",
        quantize: str | None = None,
    ) -> None:
        from coreb_toolkit.retrieval.backends import check_backend

        check_backend(inference_backend, quantize, type(self).__name__)
        if inference_backend != "torch":
            raise ValueError(
                f"{type(self).__name__}: inference_backend={inference_backend!r} is not "
                f"available for the generative yes/no reranker: {TORCH_ONLY}; use "
                "inference_backend='torch' (or a cross-encoder reranker for onnx / openvino)"
            )
        torch = require("torch")
        transformers = require("transformers")
        budget = token_budget(type(self).__name__, max_length, max_tokens_per_batch, batch_size)
        max_tokens_per_batch = 16384 if budget is None else budget
        if max_length < 1 or max_tokens_per_batch < 1:
            raise ValueError(
                f"max_length and max_tokens_per_batch must be positive, "
                f"got {max_length} and {max_tokens_per_batch}"
            )
        self._source = model if isinstance(model, (str, Path)) else None
        self._gguf_file = gguf_file
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if isinstance(model, (str, Path)):
            path = str(model)
            config = transformers.AutoConfig.from_pretrained(path, gguf_file=gguf_file)
            check_causal_lm(config, path)
            if dtype is None:
                dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
            if tokenizer is None:
                tokenizer = transformers.AutoTokenizer.from_pretrained(path, gguf_file=gguf_file)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                path, gguf_file=gguf_file, dtype=dtype
            )
        elif tokenizer is None:
            raise TypeError("GenerativeReranker needs `tokenizer` when given a loaded model")
        elif getattr(model, "get_output_embeddings", lambda: None)() is None:
            raise ValueError(
                f"GenerativeReranker needs a causal language model with an LM head, but got "
                f"{type(model).__name__}; use CrossEncoderReranker for a sequence classifier"
            )
        self._adapter = str(adapter) if adapter is not None else None
        self._merge = bool(merge)
        if adapter is not None:
            peft = require("peft", INSTALL_PEFT)
            model = peft.PeftModel.from_pretrained(model, str(adapter))
            if merge:
                model = model.merge_and_unload()
        elif merge:
            raise ValueError("merge=True needs an adapter to merge")
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.name = name or str(self._source or type(model).__name__)
        self.max_length = int(max_length)
        self.max_tokens_per_batch = int(max_tokens_per_batch)
        self.cache_dir = cache_dir
        self.default_instruction = default_instruction
        model_type = getattr(getattr(model, "config", None), "model_type", None)
        #: the judgement prompt, shared with the trainers (reranker.prompt)
        self.prompt = YesNoPrompt.for_tokenizer(tokenizer, model_type)
        params = inspect.signature(self.model.forward).parameters
        self._keep_last = "logits_to_keep" in params or "kwargs" in params
        # the key/value cache argument: `cache` in recent transformers, `past_key_values` before;
        # a PEFT wrapper takes **kwargs, so ask the model it wraps
        base = getattr(self.model, "get_base_model", lambda: self.model)()
        base_params = inspect.signature(base.forward).parameters
        self._cache_arg = next((a for a in ("cache", "past_key_values") if a in base_params), None)
        self._plain_cache: bool | None = None  # probed on first use: see shares_heads

    # -- identity -------------------------------------------------------------------------
    def fingerprint(self) -> str:
        """Model source, revision, adapter and a checksum of a sample of every weight."""
        config = getattr(self.model, "config", None)
        meta = [
            self._source,
            self._gguf_file,
            getattr(config, "_commit_hash", None),
            self._adapter,
            self._merge,
            self.prefix,
            self.suffix,
        ]
        return model_fingerprint(self.model, meta)

    # -- tokenisation ---------------------------------------------------------------------
    def encode_pair(self, query: str, document: str, instruction: str | None = None) -> list[int]:
        """The prompt ids of one pair, the document truncated so the whole fits max_length."""
        return self.encode_pairs([(query, document)], instruction)[0]

    def encode_pairs(
        self, pairs: Sequence[tuple[str, str]], instruction: str | None = None
    ) -> list[list[int]]:
        """The prompt ids of every pair (one tokenizer call), each as :meth:`encode_pair`."""
        instruction = self.default_instruction if instruction is None else instruction
        try:
            return self.prompt.encode(pairs, instruction, self.max_length)
        except ValueError as err:
            raise ValueError(f"{type(self).__name__}: {err}") from None

    def collate(
        self, seqs: Sequence[list[int]], past_mask: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Left-padded batch with position ids (:meth:`reranker.prompt.YesNoPrompt.collate`)."""
        return self.prompt.collate(seqs, past_mask)

    # the prompt's parts, as attributes of the reranker
    prefix = property(lambda self: self.prompt.prefix)
    suffix = property(lambda self: self.prompt.suffix)
    prefix_ids = property(lambda self: list(self.prompt.prefix_ids))
    suffix_ids = property(lambda self: list(self.prompt.suffix_ids))
    yes_id = property(lambda self: self.prompt.yes_id)
    no_id = property(lambda self: self.prompt.no_id)
    pad_id = property(lambda self: self.prompt.pad_id)

    def share_groups(self, pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
        """Pair indices grouped by query, whose prompts share everything before the document;
        the queries with a single document form one group more (they share the instruction)."""
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(pairs):
            by_query.setdefault(query, []).append(i)
        groups = [g for g in by_query.values() if len(g) > 1]
        single = [g[0] for g in by_query.values() if len(g) == 1]
        return groups + ([single] if single else [])

    # -- scoring --------------------------------------------------------------------------
    def _forward(
        self, batch: dict[str, torch.Tensor], cache: Any = None, *, use_cache: bool = False
    ) -> Any:
        """The model's output for ``batch`` at the last position only. ``cache``: a key/value
        cache the rows continue; ``use_cache``: return the model's own cache of ``batch``."""
        batch = {k: v.to(self.device) for k, v in batch.items()}
        kwargs: dict[str, Any] = {"logits_to_keep": 1} if self._keep_last else {}
        kwargs["use_cache"] = use_cache or cache is not None
        if cache is not None:
            kwargs[self._cache_arg] = cache
        return self.model(**batch, **kwargs)

    def yes_probability(self, batch: dict[str, torch.Tensor], cache: Any = None) -> torch.Tensor:
        """P(yes) / (P(yes) + P(no)) at the last position of each (left-padded) row."""

        logits = self._forward(batch, cache).logits[:, -1, :]
        return self.prompt.yes_probability(logits).cpu()

    def shares_heads(self) -> bool:
        """Whether the model keeps a plain per-layer key/value cache, which shared prompt heads
        need (probed once with a one-token forward)."""
        if self._plain_cache is None:
            self._plain_cache = False
            try:
                from transformers.cache_utils import DynamicLayer
            except ImportError:  # an older transformers, without per-layer cache objects
                return False
            if self._cache_arg is not None:
                import torch

                with torch.inference_mode():
                    probe = {"input_ids": torch.tensor([[self.pad_id]])}
                    out = self._forward(probe, use_cache=True)
                # the cache the model builds for itself tells its layer kinds
                layers = getattr(getattr(out, self._cache_arg, None), "layers", None)
                self._plain_cache = bool(layers) and all(type(x) is DynamicLayer for x in layers)
        return self._plain_cache

    def _score_batch(self, pairs: list[tuple[str, str]], instruction: str | None) -> list[float]:
        import torch

        seqs = self.encode_pairs(pairs, instruction)
        scores = [0.0] * len(seqs)
        groups = self.share_groups(pairs) if len(seqs) > 1 and self.shares_heads() else []
        heads = [common_prefix_length([seqs[i] for i in g]) if len(g) > 1 else 0 for g in groups]
        shared = [k for k, h in enumerate(heads) if h > 0]
        grouped = {i for k in shared for i in groups[k]}
        whole = [i for i in range(len(seqs)) if i not in grouped]
        with torch.inference_mode():
            # groups of similar head length, their heads together within the token budget
            for chunk in self.batches([heads[k] for k in shared]):
                chunk_groups = [groups[shared[c]] for c in chunk]
                chunk_heads = [heads[shared[c]] for c in chunk]
                self._score_shared(seqs, chunk_groups, chunk_heads, scores)
            for batch in self.batches([len(seqs[i]) for i in whole]):
                rows = [whole[j] for j in batch]
                probs = self.yes_probability(self.collate([seqs[i] for i in rows])).tolist()
                for i, p in zip(rows, probs, strict=True):
                    scores[i] = float(p)
                self._report(rows, probs)  # on disk now: a killed run resumes here
        return scores

    def _score_shared(
        self,
        seqs: list[list[int]],
        groups: list[list[int]],
        heads: list[int],
        scores: list[float],
    ) -> None:
        """Score the pairs of ``groups``: their heads in one forward, then the rest of every
        prompt against its group's head in that cache (``SharedHeadLayer``: shared by the
        rows, not copied per row)."""
        import torch
        from transformers.cache_utils import Cache

        head_batch = self.collate([seqs[g[0]][:h] for g, h in zip(groups, heads, strict=True)])
        cache = getattr(self._forward(head_batch, use_cache=True), self._cache_arg)
        kv = [(layer.keys, layer.values) for layer in cache.layers]  # (groups, heads, width, dim)
        rows = [(i, k) for k, g in enumerate(groups) for i in g]
        tails = [seqs[i][heads[k] :] for i, k in rows]
        width = head_batch["input_ids"].shape[1]
        for batch in self.batches([width + len(t) for t in tails]):
            owner = torch.tensor([rows[j][1] for j in batch])
            rows_cache = Cache(layers=[_shared_head_layer()(k, v, owner) for k, v in kv])
            inputs = self.collate([tails[j] for j in batch], head_batch["attention_mask"][owner])
            probs = self.yes_probability(inputs, rows_cache).tolist()
            for j, p in zip(batch, probs, strict=True):
                scores[rows[j][0]] = float(p)
            self._report([rows[j][0] for j in batch], probs)


@functools.cache
def _shared_head_layer() -> type:
    """:class:`SharedHeadLayer`, built on first use (transformers is imported lazily)."""
    from transformers.cache_utils import DynamicLayer

    class SharedHeadLayer(DynamicLayer):
        """One layer's key/value cache for rows that continue shared prompt heads.

        It holds the heads' keys and values once (groups x heads x width x dim) and which
        head each row continues (``owner``). :meth:`update` returns the rows' full keys and
        values (head, then the new tokens) for this layer's attention and keeps nothing: rows
        of one head get it as a broadcast view (``expand``, no copy) and the only copy is the
        concatenation attention needs, freed when the layer is done. A ``DynamicLayer`` given
        the rows' heads (``keys[owner]``) would keep one copy of the head per row, and then
        the concatenation, in every layer, until the forward ends.
        """

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, owner: torch.Tensor):
            super().__init__()
            self.head = (keys, values)
            self.width = int(keys.shape[-2])
            one = bool((owner == owner[0]).all())
            self.owner = int(owner[0]) if one else owner.to(keys.device)

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            import torch

            rows = key_states.shape[0]
            out = []
            for head, new in zip(self.head, (key_states, value_states), strict=True):
                if isinstance(self.owner, int):
                    past = head[self.owner : self.owner + 1].expand(rows, -1, -1, -1)
                else:
                    past = head.index_select(0, self.owner)
                out.append(torch.cat([past, new], dim=-2))
            return out[0], out[1]

        def get_seq_length(self) -> int:
            return self.width

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.width + query_length, 0

    return SharedHeadLayer


def common_prefix_length(seqs: Sequence[Sequence[int]]) -> int:
    """How many leading ids all ``seqs`` share, leaving every one at least one id of its own."""
    first = seqs[0]
    n = min(len(s) for s in seqs) - 1
    for s in seqs[1:]:
        k = 0
        while k < n and s[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


def check_causal_lm(config: Any, what: str) -> None:
    """``ValueError`` unless ``config`` describes a causal language model."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    archs = list(getattr(config, "architectures", None) or [])
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return
    if not archs and getattr(config, "model_type", None) in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return
    raise ValueError(
        f"GenerativeReranker needs a causal language model, but {what} is "
        f"{archs or getattr(config, 'model_type', '?')}; use CrossEncoderReranker for a "
        f"sequence classifier"
    )


__all__ = [
    "DEFAULT_INSTRUCTION",
    "QWEN3_PREFIX",
    "QWEN3_SUFFIX",
    "SYSTEM_PROMPT",
    "THINK_BLOCK",
    "USER_TEMPLATE",
    "GenerativeReranker",
    "answer_token_id",
    "chat_prefix_suffix",
    "check_causal_lm",
    "common_prefix_length",
]
