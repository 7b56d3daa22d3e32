"""SynH-Rank's losses, and what they call on a generative yes/no reranker
[SynH-Rank §4.2, §6; protocol §5.2].

* :func:`lambda_loss`: eq. (5)-(6), sentence-transformers' ``LambdaLoss`` with the LambdaRank
  weights, every pair, the natural log, raw scores; **averaged over the batch's ordered pairs**
  where the paper sums (tests/trainers/test_synh_rank_loss.py checks it against the equations
  written out).
* :class:`ListInfoNCELoss`: eq. (4), sentence-transformers' ``MultipleNegativesRankingLoss``
  over each row's own negatives (the InfoNCE ablation and the SRCL baseline).
* :class:`YesNoScorer`, :class:`ListCollator`, :class:`ListwiseTrainer`: a generative reranker
  trained with the same loss objects. sentence-transformers can wrap a causal LM as a
  ``CrossEncoder`` (``LogitScore``), but its inputs are rendered through the chat template with
  its own truncation (``longest_first``, the query cut too), not
  :meth:`reranker.prompt.YesNoPrompt.encode`'s ids (the document cut, never the instruction, the
  query or the suffix), which the served :class:`~reranker.generative.GenerativeReranker`
  scores; so the losses call :class:`YesNoScorer` (``preprocess`` through ``YesNoPrompt``, score
  = logit(yes) - logit(no), whose sigmoid is the served P(yes)) from a ``transformers.Trainer``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss
from transformers import Trainer

from trainers.run_checks import GuardedTrainer
from trainers.synh_rank_config import SynhRankConfig


def build_loss(config: SynhRankConfig, model: Any) -> Any:
    """The sentence-transformers loss of ``config.loss`` on ``model`` (a ``CrossEncoder`` or a
    :class:`YesNoScorer`): :func:`lambda_loss` or :class:`ListInfoNCELoss`."""
    from torch import nn

    if config.loss == "lambda":
        return lambda_loss(model, config.lambda_sigma, config.loss_mini_batch_size)
    activation = nn.Sigmoid() if config.infonce_activation == "sigmoid" else nn.Identity()
    return ListInfoNCELoss(model, scale=config.infonce_scale, activation_fn=activation)


def lambda_loss(model: Any, sigma: float = 1.0, mini_batch_size: int | None = None) -> Any:
    """SynH-Rank's loss, eq. (5)-(6) [SynH-Rank §4.2]: sentence-transformers' ``LambdaLoss``
    with the LambdaRank weights (``|2^rel_i - 2^rel_j| / IDCG * |1/log2(1+rank_i) -
    1/log2(1+rank_j)|``, ranks from the current scores, gains ``2^rel - 1``), every pair
    (``k=None``), the natural log of ``1 + exp(-sigma (s_i - s_j))``, on raw scores; averaged
    over the batch's ordered pairs where the paper sums."""
    from sentence_transformers.cross_encoder.losses import LambdaLoss, LambdaRankScheme
    from torch import nn

    return LambdaLoss(
        model,
        weighting_scheme=LambdaRankScheme(),
        k=None,
        sigma=sigma,
        reduction_log="natural",
        activation_fn=nn.Identity(),
        mini_batch_size=mini_batch_size,
    )


class ListInfoNCELoss(MultipleNegativesRankingLoss):
    """InfoNCE over each row's own negatives, eq. (4) [SynH-Rank §4.2, §6.1]: sentence-
    transformers' ``MultipleNegativesRankingLoss`` (its forward and loss: ``scale *
    activation(score)`` through a softmax over the positive and the row's negatives) with no
    in-batch negatives, on a ``CrossEncoder`` or on any scorer with what it calls
    (``preprocess``, a call returning ``{"scores"}``, ``device``). Its constructor accepts a
    ``CrossEncoder`` only, so a scorer's loss sets the constructor's attributes itself."""

    def __init__(self, model: Any, scale: float = 10.0, activation_fn: Any = None) -> None:
        import torch
        from sentence_transformers.cross_encoder import CrossEncoder

        activation = activation_fn if activation_fn is not None else torch.nn.Sigmoid()
        if isinstance(model, CrossEncoder):
            super().__init__(model, num_negatives=0, scale=scale, activation_fn=activation)
            return
        torch.nn.Module.__init__(self)
        self.model = model
        self.num_negatives = 0
        self.scale = scale
        self.activation_fn = activation
        self.cross_entropy_loss = torch.nn.CrossEntropyLoss()

    def get_in_batch_negatives(self, anchors: Any, candidates: Any) -> Any:
        """None: the row's own negatives only (another row may be the same task's relevant
        code under another dimension)."""
        return iter(())


class YesNoScorer:
    """What the sentence-transformers losses call on a model, over a causal LM and the yes/no
    prompt: ``preprocess(pairs)`` (``((instruction, statement), document)`` pairs to
    :meth:`YesNoPrompt.encode` ids, left-padded with position ids as at inference), a call
    returning ``{"scores": logit(yes) - logit(no)}`` at the last position, ``device`` and
    ``num_labels``. ``model``: what to call (the Trainer's, possibly wrapped for DDP)."""

    num_labels = 1

    def __init__(self, model: Any, prompt: Any, max_length: int, keep_last: bool = True) -> None:
        self.model = model
        self.prompt = prompt
        self.max_length = max_length
        self.keep_last = keep_last

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def preprocess(self, pairs: Sequence[tuple[Any, str]], **kwargs: Any) -> dict[str, Any]:
        """Left-padded prompt ids of ``((instruction, statement), document)`` pairs (rows with
        one instruction in one tokenizer call); ``prompt`` / ``task`` are not used."""
        seqs: list[list[int]] = [[] for _ in pairs]
        groups: dict[str, list[int]] = {}
        for i, ((instruction, _), _) in enumerate(pairs):
            groups.setdefault(instruction, []).append(i)
        for instruction, idx in groups.items():
            encoded = self.prompt.encode(
                [(pairs[i][0][1], pairs[i][1]) for i in idx], instruction, self.max_length
            )
            for i, ids in zip(idx, encoded, strict=True):
                seqs[i] = ids
        return self.prompt.collate(seqs)

    def __call__(self, features: Mapping[str, Any]) -> dict[str, Any]:
        kwargs = {"logits_to_keep": 1} if self.keep_last else {}
        logits = self.model(**features, use_cache=False, **kwargs).logits[:, -1, :]
        scores = logits[:, self.prompt.yes_id].float() - logits[:, self.prompt.no_id].float()
        return {"scores": scores.unsqueeze(1)}


def _accepts_keep_last(model: Any) -> bool:
    params = inspect.signature(model.forward).parameters
    return "logits_to_keep" in params or "kwargs" in params


class ListCollator:
    """Batches of loss rows for :class:`ListwiseTrainer`: ``columns`` is the loss's inputs (the
    query sides as ``(instruction, statement)``, then each text column), ``label`` the labels
    (a tensor per row) where the loss takes them."""

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = [c for c in columns if c != "labels"]
        self.labels = "labels" in columns

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        sides = [(f["instruction"], f["statement"]) for f in features]
        batch: dict[str, Any] = {
            "columns": [sides, *([f[c] for f in features] for c in self.columns)]
        }
        if self.labels:
            batch["label"] = [torch.tensor(f["labels"], dtype=torch.float) for f in features]
        return batch


class ListwiseTrainer(GuardedTrainer, Trainer):
    """A ``transformers.Trainer`` whose loss is a sentence-transformers list loss (the same
    object a cross-encoder run trains with) called on :class:`YesNoScorer` over the model the
    Trainer passes (unwrapped, or wrapped for DDP): for generative rerankers. ``loss``,
    ``prompt``, ``max_length`` and ``loss_name`` (:class:`~trainers.run_checks.GuardedTrainer`)
    beside the Trainer's own arguments; the batches are :class:`ListCollator`'s."""

    def __init__(self, *args: Any, loss: Any, prompt: Any, max_length: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.list_loss = loss
        self.yes_no_prompt = prompt
        self.input_length = max_length
        self.keep_last = _accepts_keep_last(self.model)
        # the loss is a mean already: let the Trainer divide it by the accumulation steps
        self.model_accepts_loss_kwargs = False

    def _remove_unused_columns(self, dataset: Any, description: str | None = None) -> Any:
        return dataset  # the collator reads the text columns

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        self.list_loss.model = YesNoScorer(
            model, self.yes_no_prompt, self.input_length, self.keep_last
        )
        loss = self.list_loss(inputs["columns"], inputs.get("label"))
        return (loss, {}) if return_outputs else loss

    def prediction_step(
        self,
        model: Any,
        inputs: dict[str, Any],
        prediction_loss_only: bool,
        ignore_keys: Any = None,
    ) -> tuple[Any, None, None]:
        import torch

        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None


__all__ = [
    "ListCollator",
    "ListInfoNCELoss",
    "ListwiseTrainer",
    "YesNoScorer",
    "build_loss",
    "lambda_loss",
]
