"""The CoREB-Reranker's one config: a TRL ``SFTConfig`` with the data, disjointness and LoRA
options, and the paper's hyper-parameters as defaults [CoREB §4.3, B.3; protocol §5.1].

The same dataclass is used from Python, from YAML and from the command line
(``coreb train reranker --config cfg.yaml --max_steps 20``, through ``trl.TrlParser``): every
field has ``help`` and ``__post_init__`` checks it, naming the field. Defaults that differ from
``SFTConfig``'s are the paper's: lr 1e-5, 100 warm-up steps, linear decay, weight decay 0.01, 2
epochs, per-device batch 12, max length 4,096, gradient (activation) checkpointing; bf16 and
FlashAttention-2 where the hardware has them (else float32 / SDPA, said in a log line). Batches
are grouped by length (``train_sampling_strategy="group_by_length"``): little padding.

:class:`TrainerConventions` is what every trainer config of this package shares (the SynH-Rank
trainer's :class:`trainers.synh_rank_config.SynhRankConfig` too): the ``bf16`` default (on where
the GPU has it) and its check, finite numbers and at least one step to train, one gloo process
group for processes started together without a GPU, the field-naming error and
:meth:`~TrainerConventions.own_fields`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, fields
from typing import ClassVar

from trl import SFTConfig

from coreb_toolkit.vocabulary import MAIN_TASKS
from trainers.decontamination import NEAR_DUPLICATE_ACTIONS

logger = logging.getLogger(__name__)

ATTENTION_IMPLEMENTATIONS = ("auto", "flash_attention_2", "sdpa", "eager")


def field_help(text: str, **extra: object) -> dict:
    """A config field's metadata: its ``help`` (what ``--help`` shows) and any further
    argparse keyword (``choices``)."""
    return {"help": text, **extra}


_help = field_help  # the short spelling this module's fields use


@dataclass
class TrainerConventions:
    """The conventions every trainer config of this package shares, as a mixin placed before
    the library's arguments class (``class C(TrainerConventions, SFTConfig)``).

    ``__post_init__`` refuses a NaN or infinite number and a run of no step
    (:meth:`_check_numbers`), runs the config's own :meth:`_check` (each error names its field
    through :meth:`_field_error`), refuses ``bf16=True`` where the machine has no bf16, makes
    processes started together without a GPU one gloo process group, sets ``bf16`` on where
    the GPU supports it when left unset (logged otherwise), then the library's
    ``__post_init__``.
    """

    #: the library's arguments class this config extends (:meth:`own_fields` are relative to it)
    library_base: ClassVar[type]

    bf16: bool | None = field(
        default=None,
        metadata=_help("bf16 mixed precision (default: on where the GPU supports it, logged)"),
    )

    def __post_init__(self) -> None:
        self._check_numbers()
        self._check()
        self._check_bf16()
        self._cpu_process_group()
        if self.bf16 is None:
            self.bf16 = bf16_available()
            if not self.bf16:
                logger.info("bf16 unavailable on this machine (no bf16 GPU): training in float32")
        super().__post_init__()  # type: ignore[misc]  # the library base's

    def _check(self) -> None:
        """The config's own checks (a subclass's; each error names its field)."""

    def _check_numbers(self) -> None:
        """No float field NaN or infinite (a learning rate, a loss's scale: no run can use
        one), and a run that trains at least one step: ``max_steps`` positive, or unset (-1)
        with a positive ``num_train_epochs`` (0 steps would save an untrained model)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise self._field_error(f.name, "must be a finite number")
        if self.max_steps == 0:
            raise self._field_error(
                "max_steps", "trains no step: give a positive number of steps, or -1 to train "
                "num_train_epochs epochs"
            )  # fmt: skip
        if self.max_steps < 0 and not self.num_train_epochs > 0:
            raise self._field_error(
                "num_train_epochs", "trains no step: give a positive number of epochs (or "
                "max_steps)"
            )  # fmt: skip

    def _field_error(self, field_name: str, why: str) -> ValueError:
        """``ValueError("Config.field=value: why")``."""
        value = getattr(self, field_name)
        return ValueError(f"{type(self).__name__}.{field_name}={value!r}: {why}")

    def _check_bf16(self) -> None:
        if self.bf16 is True and not self.use_cpu and not bf16_supported():
            raise self._field_error(
                "bf16",
                "this machine has no GPU with bf16; leave bf16 unset (on where the GPU supports "
                "it), set it false, or set use_cpu for bf16 autocast on the CPU",
            )

    def _cpu_process_group(self) -> None:
        """Processes started together (torchrun, ``accelerate launch``) on a machine without a
        GPU: make them one gloo process group, as they would be on GPUs, not N runs that each
        train alone on all the data (accelerate sets a CPU group up only with ``use_cpu``, and
        DeepSpeed's only with a backend name)."""
        import os

        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return
        import torch

        if torch.cuda.is_available():
            return
        if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true":
            if self.ddp_backend is None:
                self.ddp_backend = "gloo"
                logger.info("DeepSpeed on the CPU: ddp_backend=gloo")
        elif not self.use_cpu:
            self.use_cpu = True
            logger.info(
                "%s processes and no GPU: use_cpu=True (one gloo process group)",
                os.environ["WORLD_SIZE"],
            )

    def own_fields(self) -> dict[str, object]:
        """The fields this config adds to its library base (its recipe), by name."""
        mine = {f.name for f in fields(type(self))} - {f.name for f in fields(self.library_base)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in mine}


@dataclass
class CorebRerankerConfig(TrainerConventions, SFTConfig):
    """Train a yes/no LoRA reranker in the Qwen3-Reranker format (the CoREB-Reranker).

    Every ``SFTConfig`` / ``TrainingArguments`` field applies (``output_dir``, ``max_steps``,
    ``resume_from_checkpoint``, ``save_steps``, ``seed`` ...), spelled as TRL spells them.
    """

    library_base: ClassVar[type] = SFTConfig

    # -- model ----------------------------------------------------------------------------
    model_name_or_path: str = field(
        default="Qwen/Qwen3-Reranker-4B",
        metadata=_help(
            "base model: a Hub id, a local folder, or a bundled generative reranker "
            "(smollm2); the paper's is Qwen/Qwen3-Reranker-4B"
        ),
    )
    gguf_file: str | None = field(
        default=None,
        metadata=_help("a GGUF file inside model_name_or_path (dequantised to train)"),
    )
    attn_implementation: str = field(
        default="auto",
        metadata=_help(
            "attention kernel: auto = flash_attention_2 on a CUDA GPU that has it, else sdpa "
            "(logged)",
            choices=list(ATTENTION_IMPLEMENTATIONS),
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
    # -- LoRA -----------------------------------------------------------------------------
    lora_r: int = field(default=16, metadata=_help("LoRA rank"))
    lora_alpha: int = field(default=16, metadata=_help("LoRA alpha (scale = alpha / r)"))
    lora_dropout: float = field(default=0.05, metadata=_help("LoRA dropout"))
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["all-linear"],
        metadata=_help("modules that get adapters (all-linear: every linear layer but the head)"),
    )
    save_merged_model: bool = field(
        default=False,
        metadata=_help("also save the base model with the adapter merged in (OUTPUT_DIR/merged)"),
    )
    plot: bool = field(
        default=True, metadata=_help("save the loss / learning-rate curves as training_curves.png")
    )
    # -- the paper's values for SFTConfig's fields ----------------------------------------
    learning_rate: float = field(default=1e-5, metadata=_help("peak learning rate of AdamW"))
    warmup_steps: float = field(default=100, metadata=_help("linear warm-up steps"))
    weight_decay: float = field(default=0.01, metadata=_help("AdamW weight decay"))
    num_train_epochs: float = field(default=2.0, metadata=_help("training epochs"))
    per_device_train_batch_size: int = field(default=12, metadata=_help("batch size per device"))
    max_length: int | None = field(
        default=4096,
        metadata=_help(
            "most tokens per training sequence (prompt + answer); the document is truncated "
            "on the right to fit, never the prompt's instruction, query or suffix"
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
        for f in ("positive_copies", "lora_r", "lora_alpha", "decontamination_ngram",
                  "mine_top_k"):  # fmt: skip
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(f, "must be a positive integer")
        for f in ("easy_negatives", "hard_negatives", "validation_curve_steps",
                  "validation_max_examples"):  # fmt: skip
            value = getattr(self, f)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(f, "must be a non-negative integer")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise bad("lora_dropout", "must be in [0, 1)")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise bad("validation_fraction", "must be in [0, 1) (0 = no validation split)")
        if not 0.0 <= self.max_ngram_overlap <= 1.0:
            raise bad("max_ngram_overlap", "must be in [0, 1]")
        if not 0.0 <= self.template_share <= 1.0:
            raise bad("template_share", "must be in [0, 1]")
        if self.near_duplicate_action not in NEAR_DUPLICATE_ACTIONS:
            raise bad("near_duplicate_action", f"must be one of {NEAR_DUPLICATE_ACTIONS}")
        if self.attn_implementation not in ATTENTION_IMPLEMENTATIONS:
            raise bad("attn_implementation", f"must be one of {ATTENTION_IMPLEMENTATIONS}")
        if self.max_length is None or self.max_length < 16:
            raise bad("max_length", "must be at least 16 tokens (the prompt needs room)")
        if not self.model_name_or_path:
            raise bad("model_name_or_path", "name a base model")
        if not self.lora_target_modules:
            raise bad("lora_target_modules", "name at least one module (or all-linear)")
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

    def reranker_max_length(self) -> int:
        """The prompt length the trained model is served with (a training sequence is the
        prompt plus its answer token)."""
        return int(self.max_length) - 1


def bf16_available() -> bool:
    """Whether this machine trains in bf16: a CUDA GPU with bf16 support."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def bf16_supported() -> bool:
    """Whether ``TrainingArguments`` accepts ``bf16=True`` here without ``use_cpu`` (its own
    test: a GPU with bf16, or an XLA device)."""
    from transformers.utils import is_torch_bf16_gpu_available, is_torch_xla_available

    return bool(is_torch_bf16_gpu_available() or is_torch_xla_available())


__all__ = [
    "ATTENTION_IMPLEMENTATIONS",
    "NEAR_DUPLICATE_ACTIONS",
    "CorebRerankerConfig",
    "TrainerConventions",
    "bf16_available",
    "bf16_supported",
    "field_help",
]
