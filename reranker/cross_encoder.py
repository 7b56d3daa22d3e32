"""Cross-encoder reranker: ``[CLS] q [SEP] d [SEP]`` -> linear head -> score [SPEC §4].

A thin layer over ``sentence_transformers.CrossEncoder`` with ``num_labels=1``; the score is
the model's default activation of its single logit (sigmoid for a one-label model, as
``CrossEncoder.predict`` returns it).

Instruction: a cross-encoder has no instruction slot, so a given instruction is prefixed to
the query as ``"{instruction}\\n{query}"`` (the query side of the pair), leaving the document
untouched; without one the query is used as is.

Truncation: the document only (``truncation="only_second"`` at ``max_length`` tokens); a query
(with its instruction) that leaves no room for the document is a ``ValueError``.

Throughput: ``CrossEncoder.predict`` already sorts its inputs by character length within a
call, but batches by a fixed count; here pairs are sorted by token length and grouped into
batches of at most ``max_tokens_per_batch`` padded tokens, each group one ``predict`` call.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from reranker.base import BaseReranker, model_fingerprint, require

logger = logging.getLogger(__name__)


def join_instruction(instruction: str | None, query: str) -> str:
    """The query side of the pair: ``"{instruction}\\n{query}"``, or the query alone."""
    return query if instruction is None else f"{instruction}\n{query}"


class CrossEncoderReranker(BaseReranker):
    """Score pairs with a one-label sequence-classification model (a cross-encoder).

    Args:
        model: a local folder or Hub id, or a loaded ``CrossEncoder``.
        name: display name (defaults to the model path).
        max_length: most tokens per pair; the document is truncated to fit.
        max_tokens_per_batch: most padded tokens per forward pass.
        device: ``"cpu"``, ``"cuda"``, ... (default: sentence-transformers' choice).
        cache_dir: keep scores on disk there (see :mod:`reranker.base`).

    Example::

        rr = CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L6-v2")
        rr.rank("sort a list", {"a": "def f(x): return sorted(x)", "b": "print(1)"})
    """

    def __init__(
        self,
        model: Any,
        *,
        name: str | None = None,
        max_length: int = 512,
        max_tokens_per_batch: int = 16384,
        device: str | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        st = require("sentence_transformers")
        if max_length < 4 or max_tokens_per_batch < 1:
            raise ValueError(
                f"max_length must be >= 4 and max_tokens_per_batch positive, "
                f"got {max_length} and {max_tokens_per_batch}"
            )
        self._source = str(model) if isinstance(model, (str, Path)) else None
        if isinstance(model, (str, Path)):
            model = st.CrossEncoder(str(model), num_labels=1, max_length=max_length, device=device)
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
        self.max_tokens_per_batch = int(max_tokens_per_batch)
        self.cache_dir = cache_dir
        # [CLS] q [SEP] d [SEP]: the special tokens a pair adds
        self._special = self.tokenizer.num_special_tokens_to_add(pair=True)

    def fingerprint(self) -> str:
        """Model source, revision, activation and a checksum of a sample of every weight."""
        config = getattr(self.model, "config", None)
        meta = [self._source, getattr(config, "_commit_hash", None), repr(self.model.activation_fn)]
        return model_fingerprint(self.model, meta)

    def _lengths(self, queries: list[str], docs: list[str]) -> list[int]:
        tok = self.tokenizer
        q_len = [
            len(ids) for ids in tok(queries, add_special_tokens=False, verbose=False)["input_ids"]
        ]
        d_len = [
            len(ids) for ids in tok(docs, add_special_tokens=False, verbose=False)["input_ids"]
        ]
        out = []
        for i, (q, d) in enumerate(zip(q_len, d_len, strict=True)):
            if q + self._special >= self.max_length:
                raise ValueError(
                    f"{type(self).__name__}: the query at index {i} takes {q + self._special} "
                    f"tokens with its instruction, leaving no room for the document within "
                    f"max_length={self.max_length}; shorten it or raise max_length"
                )
            out.append(min(q + d + self._special, self.max_length))
        return out

    def _score_batch(self, pairs: list[tuple[str, str]], instruction: str | None) -> list[float]:
        inputs = [(join_instruction(instruction, q), d) for q, d in pairs]
        lengths = self._lengths([q for q, _ in inputs], [d for _, d in inputs])
        order = sorted(range(len(inputs)), key=lambda i: -lengths[i])
        groups: list[list[int]] = []
        for i in order:
            if groups and lengths[groups[-1][0]] * (len(groups[-1]) + 1) <= (
                self.max_tokens_per_batch
            ):
                groups[-1].append(i)
            else:
                groups.append([i])
        scores = [0.0] * len(inputs)
        text_kwargs = {"truncation": "only_second", "max_length": self.max_length}
        for group in groups:
            out = self.model.predict(
                [inputs[i] for i in group],
                batch_size=len(group),
                show_progress_bar=False,
                convert_to_numpy=True,
                processing_kwargs={"text": text_kwargs},
            )
            for i, s in zip(group, out.reshape(-1).tolist(), strict=True):
                scores[i] = float(s)
        return scores
