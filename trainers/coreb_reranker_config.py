"""The CoREB-Reranker's one config: a TRL ``SFTConfig`` with the data, disjointness and LoRA
options, and the paper's hyper-parameters as defaults [CoREB §4.3, B.3; protocol §5.1].

The same dataclass is used from Python, from YAML and from the command line
(``coreb train reranker --config cfg.yaml --max_steps 20``, through ``trl.TrlParser``): every
field has ``help`` and ``__post_init__`` checks it, naming the field. Defaults that differ from
``SFTConfig``'s are the paper's: lr 1e-5, 100 warm-up steps, linear decay, weight decay 0.01, 2
epochs, per-device batch 12, max length 4,096, gradient (activation) checkpointing; bf16 and
FlashAttention-2 where the hardware has them (else float32 / SDPA, said in a log line). Batches
are grouped by length (``train_sampling_strategy="group_by_length"``): little padding.

What every trainer config shares (bf16, the process group, finite numbers, the base model and
LoRA fields, what ``max_length`` means) is :class:`trainers.base_config.TrainerConventions`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from trl import SFTConfig

from coreb_toolkit.vocabulary import MAIN_TASKS
from trainers.base_config import (
    DEFAULT_MAX_LENGTH,
    MAX_LENGTH_HELP,
    TrainerConventions,
    field_help,
)
from trainers.decontamination import NEAR_DUPLICATE_ACTIONS

_help = field_help  # the short spelling this module's fields use


@dataclass
class CorebRerankerConfig(TrainerConventions, SFTConfig):
    """Train a yes/no LoRA reranker in the Qwen3-Reranker format (the CoREB-Reranker).

    Every ``SFTConfig`` / ``TrainingArguments`` field applies (``output_dir``, ``max_steps``,
    ``resume_from_checkpoint``, ``save_steps``, ``seed`` ...), spelled as TRL spells them.
    """

    library_base: ClassVar[type] = SFTConfig
    #: a training sequence is the served prompt plus its answer token
    answer_tokens: ClassVar[int] = 1

    # -- model (gguf_file, attn_implementation: TrainerConventions) -----------------------
    model_name_or_path: str = field(
        default="Qwen/Qwen3-Reranker-4B",
        metadata=_help(
            "base model: a Hub id, a local folder, or a bundled generative reranker "
            "(smollm2); the paper's is Qwen/Qwen3-Reranker-4B"
        ),
    )
    # -- data -----------------------------------------------------------------------------
    train_sources: list[str] = field(
        default_factory=list,
        metadata=_help(
            "where examples come from: coreb:PATH[@RELEASE] (a built CoREB dataset or release "
            "folder, e.g. coreb:coreb@release_v2602; a plain path is coreb) or "
            "pairs_jsonl:FILE (your own code-search pairs); repeatable"
        ),
    )
    eval_sources: list[str] = field(
        default_factory=list,
        metadata=_help(
            "every evaluation dataset PATH[@RELEASE] the model will be tested on: training "
            "must share no problem with them (and no near-duplicate statement)"
        ),
    )
    allow_shared_problems: bool = field(
        default=False,
        metadata=_help("allow source_problem_ids shared with eval_sources (reported, not refused)"),
    )
    decontamination_ngram: int = field(
        default=10, metadata=_help("n of the word n-grams compared with eval statements")
    )
    max_ngram_overlap: float = field(
        default=0.2,
        metadata=_help(
            "a training statement sharing more than this fraction of its compared n-grams with "
            "the eval statements is a near duplicate (0 = any shared n-gram, SynH-Rank's rule; "
            "0.2: the real v2602 -> v2603 boilerplate reaches 0.049, a copied statement 1.0)"
        ),
    )
    template_filter: bool = field(
        default=True,
        metadata=_help(
            "ignore template n-grams in the near-duplicate check: sample/format data and "
            "n-grams frequent on either side (trainers.decontamination)"
        ),
    )
    template_share: float = field(
        default=0.01,
        metadata=_help(
            "an n-gram in more than this share (and at least 3) of one side's problems is "
            "template text"
        ),
    )
    near_duplicate_action: str = field(
        default="error",
        metadata=_help(
            "a near-duplicate statement: error (refuse), report (keep, reported) or drop (its "
            "problem's examples removed, counted)",
            choices=list(NEAR_DUPLICATE_ACTIONS),
        ),
    )
    positive_copies: int = field(
        default=2, metadata=_help("times each positive appears (the paper: twice)")
    )
    easy_negatives: int = field(
        default=1, metadata=_help("random unjudged documents per source record ('no')")
    )
    hard_negatives: int = field(
        default=1,
        metadata=_help(
            "relevance-1 documents per source record ('no'), else mined first-stage ones"
        ),
    )
    hard_negative_miner: str = field(
        default="bm25",
        metadata=_help("first-stage retriever that mines hard negatives where qrels have none"),
    )
    mine_top_k: int = field(
        default=20, metadata=_help("depth of the first-stage run hard negatives are mined from")
    )
    subtasks: list[str] | None = field(
        default=None, metadata=_help("train on these subtasks only (default: all)")
    )
    main_tasks: list[str] | None = field(
        default=None, metadata=_help("train on these main tasks only: t2c c2t c2c (default: all)")
    )
    validation_fraction: float = field(
        default=0.05,
        metadata=_help("fraction of the problems held out for validation (problem-level split)"),
    )
    # -- LoRA: lora_r, lora_alpha, lora_dropout, lora_target_modules, save_merged_model and
    # plot are TrainerConventions' (the paper's: r 16, alpha 16, dropout 0.05, all-linear) ---
    # -- the paper's values for SFTConfig's fields ----------------------------------------
    learning_rate: float = field(default=1e-5, metadata=_help("peak learning rate of AdamW"))
    warmup_steps: float = field(default=100, metadata=_help("linear warm-up steps"))
    weight_decay: float = field(default=0.01, metadata=_help("AdamW weight decay"))
    num_train_epochs: float = field(default=2.0, metadata=_help("training epochs"))
    per_device_train_batch_size: int = field(default=12, metadata=_help("batch size per device"))
    max_length: int | None = field(
        default=DEFAULT_MAX_LENGTH["generative"],
        metadata=_help(
            f"{MAX_LENGTH_HELP}: here the yes/no prompt plus its answer token; the document is "
            "truncated on the right to fit, never the prompt's instruction, query or suffix "
            "(the trained model is served with max_length - 1, the prompt alone)"
        ),
    )
    validation_max_examples: int = field(
        default=0,
        metadata=_help(
            "score at most this many held-out pairs (a seeded sample of the validation "
            "problems' examples; the rest are neither trained on nor scored); 0: all"
        ),
    )
    validation_curve_steps: int = field(
        default=0,
        metadata=_help(
            "score the held-out pairs every N optimizer steps (validation ROC AUC and log-loss "
            "against examples seen, in OUTPUT_DIR/validation_curve.jsonl); 0: only before and "
            "after training"
        ),
    )
    answer_only_loss: bool = field(
        default=True,
        metadata=_help(
            "take the logits at the answer position alone (logits_to_keep, as the reranker "
            "scores); false: TRL's loss over every position (the same value, more compute)"
        ),
    )
    activation_checkpointing: bool | None = field(
        default=True,
        metadata=_help("recompute activations in the backward pass (gradient checkpointing)"),
    )
    gradient_checkpointing: bool | None = field(
        default=None,
        metadata=_help("deprecated alias of activation_checkpointing (transformers 5)"),
    )
    train_sampling_strategy: str = field(
        default="group_by_length",
        metadata=_help(
            "batch sampler: group_by_length batches similar lengths (little padding)",
            choices=["random", "sequential", "group_by_length", "batch_rebalance"],
        ),
    )

    def _check(self) -> None:
        name = type(self).__name__
        bad = self._field_error
        for f in ("positive_copies", "decontamination_ngram", "mine_top_k"):
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(f, "must be a positive integer")
        for f in ("easy_negatives", "hard_negatives", "validation_curve_steps",
                  "validation_max_examples"):  # fmt: skip
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(f, "must be a non-negative integer")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise bad("validation_fraction", "must be in [0, 1) (0 = no validation split)")
        if not 0.0 <= self.max_ngram_overlap <= 1.0:
            raise bad("max_ngram_overlap", "must be in [0, 1]")
        if not 0.0 <= self.template_share <= 1.0:
            raise bad("template_share", "must be in [0, 1]")
        if self.near_duplicate_action not in NEAR_DUPLICATE_ACTIONS:
            raise bad("near_duplicate_action", f"must be one of {NEAR_DUPLICATE_ACTIONS}")
        if self.max_length is None:  # TRL's "no truncation": a prompt needs a budget here
            raise bad("max_length", "must be at least 16 tokens (the prompt needs room)")
        if self.packing or self.padding_free:
            raise bad(
                "packing" if self.packing else "padding_free",
                "a yes/no example is one sequence scored at its last position; packing would "
                "mix sequences: leave packing and padding_free off",
            )
        for main_task in self.main_tasks or ():
            if main_task not in MAIN_TASKS:
                raise ValueError(
                    f"{name}.main_tasks: unknown main task {main_task!r}; expected some of "
                    f"{list(MAIN_TASKS)}"
                )


__all__ = ["CorebRerankerConfig"]
