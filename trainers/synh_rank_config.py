"""The SynH-Rank trainer's one config: sentence-transformers' ``CrossEncoderTrainingArguments``
with the lists, the loss and the fine-tuning options, and the paper's hyper-parameters as
defaults [SynH-Rank §4.2, §5.4, §6; protocol §5.2].

The same dataclass is used from Python, from YAML and from the command line
(``coreb train synh-rank --config cfg.yaml --max_steps 20``, through ``trl.TrlParser`` as
``coreb train reranker`` does): every field has ``help`` and ``__post_init__`` checks it,
naming the field (:class:`trainers.base_config.TrainerConventions`: bf16 where the GPU has it,
one gloo group for CPU processes started together, the base model and LoRA fields, what
``max_length`` means).

The paper's settings [§5.4]: full-parameter fine-tuning, batch 16 (lists, each one query and
its six documents), one epoch, learning rate 6e-6, a fixed seed. It states no warm-up, weight
decay or schedule: those keep the ``TrainingArguments`` defaults (no warm-up, no weight decay,
linear decay). Which row of the paper's Tables 3-4 a config gives:

* ``loss="lambda"`` on guideline lists: SynH-Rank (Table 3, Table 4 first row);
* ``loss="srcl"``: the SRCL baseline (Table 3);
* ``loss="infonce"``: the InfoNCE loss ablation (Table 4, last row);
* ``loss="lambda"`` on lists built without guidelines (plain sampling), with or without the
  filter: the two data ablations (Table 4), a choice of ``train_lists``, not of this config.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import ClassVar

from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

from trainers.base_config import DEFAULT_MAX_LENGTH, MAX_LENGTH_HELP, TrainerConventions, field_help

logger = logging.getLogger(__name__)

LOSSES = ("lambda", "infonce", "srcl")
MODEL_TYPES = ("auto", "cross-encoder", "generative")
FINETUNING = ("full", "lora")
INFONCE_ACTIVATIONS = ("sigmoid", "identity")


@dataclass
class SynhRankConfig(TrainerConventions, CrossEncoderTrainingArguments):
    """Train a quality-aware reranker on hierarchical lists (label 2 high-quality relevant, 1
    low-quality relevant, 0 irrelevant) with SynH-Rank's LambdaRank loss, or a baseline loss.

    Every ``CrossEncoderTrainingArguments`` / ``TrainingArguments`` field applies
    (``output_dir``, ``max_steps``, ``resume_from_checkpoint``, ``save_steps``, ...), spelled as
    the libraries spell them.
    """

    library_base: ClassVar[type] = CrossEncoderTrainingArguments
    #: the training input is the prompt itself, scored at its last position
    answer_tokens: ClassVar[int] = 0

    # -- model (gguf_file, attn_implementation: TrainerConventions) -----------------------
    model_name_or_path: str = field(
        default="BAAI/bge-reranker-v2-m3",
        metadata=field_help(
            "base reranker: a Hub id, a local folder, or a bundled one (minilm, smollm2); the "
            "paper's are BAAI/bge-reranker-v2-m3, jinaai/jina-reranker-v2-base-multilingual "
            "and Qwen/Qwen3-Reranker-0.6B"
        ),
    )
    model_type: str = field(
        default="auto",
        metadata=field_help(
            "cross-encoder (a sequence classifier: score = its logit) or generative (a causal "
            "LM: score = logit(yes) - logit(no) of the yes/no prompt); auto: a *ForCausalLM "
            "model is generative, any other a cross-encoder",
            choices=list(MODEL_TYPES),
        ),
    )
    trust_remote_code: bool = field(
        default=False,
        metadata=field_help(
            "run the model's own code from the Hub (jina-reranker-v2 needs it); only for "
            "models you trust"
        ),
    )
    # -- data -----------------------------------------------------------------------------
    train_lists: list[str] = field(
        default_factory=list,
        metadata=field_help(
            "lists folders (each a lists.parquet with query, docs, labels per query, as "
            "`trainers.quality_data` writes them); repeatable, concatenated in order"
        ),
    )
    validation_fraction: float = field(
        default=0.05,
        metadata=field_help(
            "fraction of the tasks whose lists are held out for validation (a seeded "
            "task-level split: a task's lists of every dimension stay together)"
        ),
    )
    # -- loss -----------------------------------------------------------------------------
    loss: str = field(
        default="lambda",
        metadata=field_help(
            "lambda: SynH-Rank's LambdaRank loss on the lists (eq. 5-6); infonce: InfoNCE, "
            "the label-2 document against the list's other documents (the loss ablation); "
            "srcl: InfoNCE, any relevant document against srcl_negatives irrelevant ones "
            "(the SRCL baseline)",
            choices=list(LOSSES),
        ),
    )
    lambda_sigma: float = field(
        default=1.0,
        metadata=field_help("sigma of the pairwise logistic term log(1 + exp(-sigma (s_i - s_j)))"),
    )
    loss_mini_batch_size: int | None = field(
        default=None,
        metadata=field_help(
            "lambda: (query, document) pairs per forward pass inside the loss (memory only, "
            "the gradient is the same; default: the batch size)"
        ),
    )
    infonce_scale: float = field(
        default=10.0,
        metadata=field_help(
            "infonce/srcl: the scores' scale, 1/temperature (sentence-transformers')"
        ),
    )
    infonce_activation: str = field(
        default="sigmoid",
        metadata=field_help(
            "infonce/srcl: applied to the scores before the scale (sentence-transformers' "
            "default is sigmoid)",
            choices=list(INFONCE_ACTIVATIONS),
        ),
    )
    infonce_negatives: int | None = field(
        default=None,
        metadata=field_help(
            "infonce: lower-labelled documents per row (default: all the list's others, 5 in "
            "the paper's lists; lists of several shapes need a number: each row gets a seeded "
            "sample, lists with fewer are dropped and counted)"
        ),
    )
    srcl_negatives: int = field(
        default=5,
        metadata=field_help(
            "srcl: irrelevant documents per query (the list's own, then other tasks' "
            "documents, seeded); the paper's is 5"
        ),
    )
    max_length: int | None = field(
        default=None,
        metadata=field_help(
            f"{MAX_LENGTH_HELP}: here a cross-encoder's (query, document) pair or a generative "
            "model's yes/no prompt (scored at its last position, no answer token), the "
            "document truncated on the right; the trained model is served with the same "
            f"length (default: {DEFAULT_MAX_LENGTH['cross-encoder']} for a cross-encoder, "
            f"{DEFAULT_MAX_LENGTH['generative']} for a generative model)"
        ),
    )
    query_budget: int | None = field(
        default=-1,
        metadata=field_help(
            "statements cut to their first this many tokens before the instruction is joined, "
            "as `coreb qualcode evaluate` cuts them (-1: half of max_length, its default; "
            "unset/None: whole, and a list whose query leaves no room is refused)"
        ),
    )
    # -- fine-tuning ----------------------------------------------------------------------
    finetuning: str = field(
        default="full",
        metadata=field_help(
            "full: every weight trained (the paper); lora: a LoRA adapter, base frozen "
            "(generative models only)",
            choices=list(FINETUNING),
        ),
    )
    # (lora_r, lora_alpha, lora_dropout, lora_target_modules, save_merged_model and plot:
    # TrainerConventions')
    # -- the paper's values for TrainingArguments' fields [SynH-Rank §5.4] -----------------
    learning_rate: float = field(default=6e-6, metadata=field_help("peak learning rate of AdamW"))
    num_train_epochs: float = field(default=1.0, metadata=field_help("training epochs"))
    per_device_train_batch_size: int = field(
        default=16, metadata=field_help("lists (queries) per batch per device")
    )
    warmup_steps: float = field(
        default=0, metadata=field_help("linear warm-up steps (the paper states none)")
    )
    seed: int = field(
        default=42, metadata=field_help("the one seed of the run: data split, SRCL draws, training")
    )

    def _check(self) -> None:
        bad = self._field_error
        choices = {
            "model_type": MODEL_TYPES,
            "loss": LOSSES,
            "finetuning": FINETUNING,
            "infonce_activation": INFONCE_ACTIVATIONS,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise bad(name, f"must be one of {allowed}")
        if (
            isinstance(self.srcl_negatives, bool)
            or not isinstance(self.srcl_negatives, int)
            or self.srcl_negatives < 1
        ):
            raise bad("srcl_negatives", "must be a positive integer")
        for name in ("loss_mini_batch_size", "infonce_negatives"):
            size = getattr(self, name)
            if size is not None and (
                isinstance(size, bool) or not isinstance(size, int) or size < 1
            ):
                raise bad(name, "must be a positive integer (or unset)")
        for name in ("lambda_sigma", "infonce_scale"):
            if not getattr(self, name) > 0:
                raise bad(name, "must be positive")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise bad("validation_fraction", "must be in [0, 1) (0 = no validation split)")
        if self.query_budget is not None and (
            isinstance(self.query_budget, bool)
            or not isinstance(self.query_budget, int)
            or (self.query_budget < 1 and self.query_budget != -1)
        ):
            raise bad("query_budget", "must be a positive number of tokens, -1 (half of "
                      "max_length) or None (whole statements)")  # fmt: skip
        if self.model_type == "cross-encoder":
            if self.finetuning == "lora":
                raise bad("finetuning", "lora is for generative rerankers; use full here")
            if self.gguf_file is not None:
                raise bad("gguf_file", "a GGUF file holds a causal LM, not a cross-encoder")
        if self.save_merged_model and self.finetuning != "lora":
            raise bad("save_merged_model", "only a LoRA run has an adapter to merge")
        if self.prompts:
            raise bad(
                "prompts",
                "the query is formed as at inference (instruction and statement); leave "
                "prompts unset",
            )
        if self.router_mapping:
            raise bad("router_mapping", "a reranker has no Router module; leave it unset")

    def query_budget_for(self, kind: str) -> int | None:
        """Tokens a statement keeps (``None``: all), as ``RerankerScorer`` keeps them."""
        if self.query_budget == -1:
            return self.max_length_for(kind) // 2
        return self.query_budget


__all__ = [
    "FINETUNING",
    "INFONCE_ACTIVATIONS",
    "LOSSES",
    "MODEL_TYPES",
    "SynhRankConfig",
]
