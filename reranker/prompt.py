"""The yes/no judgement prompt, the one place it is built: for scoring and for training.

The Qwen3-Reranker format [protocol §4; CoREB B.3; SynH-Rank eq. 1; Qwen3-Reranker model
card, https://huggingface.co/Qwen/Qwen3-Reranker-0.6B]:

* system: ``Judge whether the Document meets the requirements based on the Query and the
  Instruct provided. Note that the answer can only be "yes" or "no".``
* user: ``<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {document}``
* assistant prefix: an empty think block, ``<think>\\n\\n</think>\\n\\n``, as the card does;
* the answer slot: the next token after the prompt, "yes" or "no".

:class:`YesNoPrompt` turns pairs into token ids (:meth:`~YesNoPrompt.encode`: the user message
cut on the right, the document first, as the official usage truncates; never the prefix or the
suffix) and left-padded batches with position ids (:meth:`~YesNoPrompt.collate`). Training
sequences (:meth:`~YesNoPrompt.supervised`) refuse a pair whose instruction and query alone do not
fit: a model must not be taught to judge a document it cannot see.
:class:`~reranker.generative.GenerativeReranker` scores the logits at the last position of
``encode``'s ids; the CoREB-Reranker trainer (:mod:`trainers`) trains on
:meth:`~YesNoPrompt.supervised`, which is ``encode`` plus the answer token, supervised alone.
Both go through the same ``encode``, so a model is trained on exactly the prompts it is served.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".'
)
USER_TEMPLATE = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
THINK_BLOCK = "<think>\n\n</think>\n\n"
#: The Qwen3-Reranker model card's literal prefix and suffix.
QWEN3_PREFIX = f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
QWEN3_SUFFIX = f"<|im_end|>\n<|im_start|>assistant\n{THINK_BLOCK}"
#: The card's default instruction, used when none is given.
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"
#: The two answers, in the order of the score (``P(yes) / (P(yes) + P(no))``).
ANSWERS = ("yes", "no")
#: The label of tokens that carry no loss (``torch.nn.CrossEntropyLoss``'s ``ignore_index``).
IGNORE_INDEX = -100
_SENTINEL = "\x00RERANK_USER_MESSAGE\x00"


def chat_prefix_suffix(tokenizer: Any, model_type: str | None = None) -> tuple[str, str]:
    """The text before and after the user message, ending with the assistant's think block."""
    name = str(getattr(tokenizer, "name_or_path", "")).lower()
    if (model_type or "").startswith("qwen3") or "qwen3" in name:
        return QWEN3_PREFIX, QWEN3_SUFFIX
    if not getattr(tokenizer, "chat_template", None):
        logger.warning("tokenizer has no chat template: using the Qwen3-Reranker ChatML text")
        return QWEN3_PREFIX, QWEN3_SUFFIX
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": _SENTINEL},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if text.count(_SENTINEL) != 1:
        raise ValueError("the chat template did not render the user message exactly once")
    prefix, suffix = text.split(_SENTINEL)
    return prefix, suffix + THINK_BLOCK


def answer_token_id(tokenizer: Any, word: str) -> int:
    """The id of ``word`` as one token; ``ValueError`` if the tokenizer splits it."""
    ids = tokenizer.encode(word, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(
            f"GenerativeReranker needs {word!r} to be a single token, but the tokenizer gives "
            f"{ids}: this model cannot be used as a yes/no reranker"
        )
    return int(ids[0])


@dataclass(frozen=True)
class YesNoPrompt:
    """The judgement prompt of one tokenizer: its text around the user message, their ids, the
    answer tokens and the padding id. Build it with :meth:`for_tokenizer`."""

    tokenizer: Any
    prefix: str
    suffix: str
    prefix_ids: tuple[int, ...]
    suffix_ids: tuple[int, ...]
    yes_id: int
    no_id: int
    pad_id: int

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, model_type: str | None = None) -> YesNoPrompt:
        """The prompt of ``tokenizer`` (its chat template; the card's literals for Qwen3)."""
        prefix, suffix = chat_prefix_suffix(tokenizer, model_type)
        pad = tokenizer.pad_token_id
        return cls(
            tokenizer=tokenizer,
            prefix=prefix,
            suffix=suffix,
            prefix_ids=tuple(tokenizer.encode(prefix, add_special_tokens=False)),
            suffix_ids=tuple(tokenizer.encode(suffix, add_special_tokens=False)),
            yes_id=answer_token_id(tokenizer, "yes"),
            no_id=answer_token_id(tokenizer, "no"),
            pad_id=int(pad if pad is not None else tokenizer.eos_token_id),
        )

    def answer_id(self, answer: str) -> int:
        """The token id of ``"yes"`` or ``"no"``."""
        if answer not in ANSWERS:
            raise ValueError(f"a yes/no answer must be one of {ANSWERS}, got {answer!r}")
        return self.yes_id if answer == "yes" else self.no_id

    def encode(
        self, pairs: Sequence[tuple[str, str]], instruction: str, max_length: int
    ) -> list[list[int]]:
        """The prompt ids of every (query, document) pair (one tokenizer call), the user message
        cut on the right so that each prompt fits ``max_length`` tokens: the document first and,
        when the instruction and query alone do not fit, the query too, as the Qwen3-Reranker
        usage truncates (``truncation="longest_first"`` of the one formatted message, between
        the literal prefix and suffix). A pair whose query was cut is logged (its document is
        then not seen at all).

        ``ValueError`` when the prefix and suffix alone take ``max_length``.
        """
        return self._encode(pairs, instruction, max_length, answer_tokens=0, cut_query=True)

    def _encode(
        self,
        pairs: Sequence[tuple[str, str]],
        instruction: str,
        max_length: int,
        answer_tokens: int,
        cut_query: bool = False,
    ) -> list[list[int]]:
        """:meth:`encode` within ``max_length - answer_tokens`` tokens (the error names the
        caller's ``max_length``); ``cut_query=False``: a head (instruction and query) that does
        not fit is a ``ValueError``."""
        bodies = [
            USER_TEMPLATE.format(instruction=instruction, query=q, document=d) for q, d in pairs
        ]
        enc = self.tokenizer(bodies, add_special_tokens=False, return_offsets_mapping=True)
        prefix, suffix = list(self.prefix_ids), list(self.suffix_ids)
        room = max_length - answer_tokens - len(prefix) - len(suffix)
        if room < 1:
            raise ValueError(
                f"max_length={max_length} leaves no room for the user message: the prompt's "
                f"prefix and suffix take {len(prefix) + len(suffix)} tokens"
            )
        out, cut = [], 0
        for body, (_, document), ids, offsets in zip(
            bodies, pairs, enc["input_ids"], enc["offset_mapping"], strict=True
        ):
            # tokens that begin before the document belong to the head (kept whole)
            n_head = bisect_left(offsets, len(body) - len(document), key=lambda o: o[0])
            cut += n_head > room
            if n_head > room and not cut_query:
                answer = " plus the answer token" if answer_tokens else ""
                raise ValueError(
                    f"the prompt without the document takes "
                    f"{n_head + len(prefix) + len(suffix)} tokens{answer}, more than "
                    f"max_length={max_length}; shorten the query/instruction or raise "
                    f"max_length"
                )
            out.append(prefix + ids[:room] + suffix)
        if cut and cut_query:
            logger.warning(
                "%d of %d prompts: the instruction and query alone exceed max_length=%d; the "
                "query was cut and the document left out, as the Qwen3-Reranker usage truncates",
                cut, len(pairs), max_length,
            )  # fmt: skip
        return out

    def supervised(
        self,
        pairs: Sequence[tuple[str, str]],
        instruction: str,
        answers: Sequence[str],
        max_length: int,
    ) -> list[dict[str, list[int]]]:
        """Training sequences: :meth:`encode`'s prompt (for ``max_length - 1`` tokens) plus the
        answer token, with ``labels`` = :data:`IGNORE_INDEX` everywhere but the answer.

        A causal LM's logits at the prompt's last position then carry the loss: the position
        whose ``P(yes) / (P(yes) + P(no))`` is the score at inference. No end-of-turn token is
        appended or trained (the answer is a single next token, as it is scored).
        """
        if len(answers) != len(pairs):
            raise ValueError(f"{len(pairs)} pairs but {len(answers)} answers")
        prompts = self._encode(pairs, instruction, max_length, answer_tokens=1)
        out = []
        for ids, answer in zip(prompts, answers, strict=True):
            out.append(
                {
                    "input_ids": [*ids, self.answer_id(answer)],
                    "labels": [IGNORE_INDEX] * len(ids) + [self.answer_id(answer)],
                }
            )
        return out

    def collate(
        self, seqs: Sequence[Sequence[int]], past_mask: torch.Tensor | None = None
    ) -> dict[str, torch.Tensor]:
        """Left-pad ``seqs`` (pad = pad token, else eos) with matching position ids, so that a
        sequence's logits are the same alone or in any batch.

        ``past_mask``: the attention mask (rows x cached positions) of the heads already in the
        key/value cache that these rows continue; positions then count on from each head and
        the returned mask covers the cache too.
        """
        import torch

        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, width - len(s) :] = torch.tensor(list(s), dtype=torch.long)
            mask[row, width - len(s) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        if past_mask is not None:
            positions = positions + past_mask.sum(-1, keepdim=True)
            mask = torch.cat([past_mask, mask], dim=1)
        return {"input_ids": ids, "attention_mask": mask, "position_ids": positions}

    def yes_probability(self, logits: torch.Tensor) -> torch.Tensor:
        """``P(yes) / (P(yes) + P(no))`` from next-token logits (rows x vocabulary)."""
        import torch

        pair = torch.stack([logits[:, self.yes_id], logits[:, self.no_id]], dim=1).float()
        return torch.softmax(pair, dim=1)[:, 0]


__all__ = [
    "ANSWERS",
    "DEFAULT_INSTRUCTION",
    "IGNORE_INDEX",
    "QWEN3_PREFIX",
    "QWEN3_SUFFIX",
    "SYSTEM_PROMPT",
    "THINK_BLOCK",
    "USER_TEMPLATE",
    "YesNoPrompt",
    "answer_token_id",
    "chat_prefix_suffix",
]
