"""What every trainer config of this package shares: :class:`TrainerConventions`, the mixin
placed before the library's arguments class (``class C(TrainerConventions, SFTConfig)``).

* **Checks**: ``__post_init__`` refuses a NaN or infinite number and a run of no step, then the
  shared fields' checks and the config's own, each error naming its field
  (``ValueError("Config.field=value: why")``).
* **bf16**: on where the GPU has it when left unset (logged otherwise); ``bf16=True`` refused
  where the machine has none.
* **Processes**: processes started together without a GPU form one gloo process group.
* **The fields both trainers read** (the base model, its GGUF file and attention kernel, the
  LoRA options, the merged copy, the curves, ``max_length``), written once here.

``max_length`` means the same in every config: **the most tokens of one training input**, the
whole sequence the model reads in a training step (prompt text and special tokens included),
as TRL's ``SFTConfig.max_length``. The length a trained generative model is then served with
(its prompt alone, the reranker's ``max_length``) is :meth:`TrainerConventions.reranker_max_length`:
``max_length`` less the :attr:`~TrainerConventions.answer_tokens` a training input adds to the
prompt (the CoREB-Reranker's answer token: 1; SynH-Rank scores the prompt itself: 0).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, fields
from typing import ClassVar

logger = logging.getLogger(__name__)

ATTENTION_IMPLEMENTATIONS = ("auto", "flash_attention_2", "sdpa", "eager")
#: ``max_length`` where a config leaves it unset, by model kind (a training input's tokens)
DEFAULT_MAX_LENGTH = {"cross-encoder": 512, "generative": 4096}
#: the one meaning of ``max_length`` (each config's help adds what its input is)
MAX_LENGTH_HELP = (
    "most tokens of one training input: the whole sequence the model reads in a training step, "
    "prompt text and special tokens included"
)


def field_help(text: str, **extra: object) -> dict:
    """A config field's metadata: its ``help`` (what ``--help`` shows) and any further
    argparse keyword (``choices``)."""
    return {"help": text, **extra}


@dataclass
class TrainerConventions:
    """The conventions every trainer config of this package shares, as a mixin placed before
    the library's arguments class (``class C(TrainerConventions, SFTConfig)``).

    ``__post_init__`` refuses a NaN or infinite number and a run of no step
    (:meth:`_check_numbers`), checks the shared fields (:meth:`_check_shared`) and runs the
    config's own :meth:`_check` (each error names its field through :meth:`_field_error`),
    refuses ``bf16=True`` where the machine has no bf16, makes processes started together
    without a GPU one gloo process group, sets ``bf16`` on where the GPU supports it when left
    unset (logged otherwise), then the library's ``__post_init__``.
    """

    #: the library's arguments class this config extends (:meth:`own_fields` are relative to it)
    library_base: ClassVar[type]
    #: tokens a training input adds to the prompt the trained model is served (an answer token)
    answer_tokens: ClassVar[int] = 0

    bf16: bool | None = field(
        default=None,
        metadata=field_help("bf16 mixed precision (default: on where the GPU supports it, logged)"),
    )
    # -- the base model (each config gives its default and help) ---------------------------
    model_name_or_path: str = field(default="", metadata=field_help("base model"))
    gguf_file: str | None = field(
        default=None,
        metadata=field_help(
            "a GGUF file inside model_name_or_path (a generative model; dequantised to train)"
        ),
    )
    attn_implementation: str = field(
        default="auto",
        metadata=field_help(
            "attention kernel of a generative model: auto = flash_attention_2 on a CUDA GPU "
            "that has it, else sdpa (logged)",
            choices=list(ATTENTION_IMPLEMENTATIONS),
        ),
    )
    max_length: int | None = field(default=None, metadata=field_help(MAX_LENGTH_HELP))
    # -- LoRA -----------------------------------------------------------------------------
    lora_r: int = field(default=16, metadata=field_help("LoRA rank"))
    lora_alpha: int = field(default=16, metadata=field_help("LoRA alpha (scale = alpha / r)"))
    lora_dropout: float = field(default=0.05, metadata=field_help("LoRA dropout"))
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["all-linear"],
        metadata=field_help(
            "modules that get adapters (all-linear: every linear layer but the head)"
        ),
    )
    save_merged_model: bool = field(
        default=False,
        metadata=field_help(
            "a LoRA run: also save the base model with the adapter merged in (OUTPUT_DIR/merged)"
        ),
    )
    plot: bool = field(
        default=True,
        metadata=field_help("save the loss / learning-rate curves as training_curves.png"),
    )

    def __post_init__(self) -> None:
        self._check_numbers()
        self._check_shared()
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

    def _check_shared(self) -> None:
        """The checks of the fields this class declares."""
        bad = self._field_error
        if not self.model_name_or_path:
            raise bad("model_name_or_path", "name a base model")
        for name in ("lora_r", "lora_alpha"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(name, "must be a positive integer")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise bad("lora_dropout", "must be in [0, 1)")
        if not self.lora_target_modules:
            raise bad("lora_target_modules", "name at least one module (or all-linear)")
        if self.attn_implementation not in ATTENTION_IMPLEMENTATIONS:
            raise bad("attn_implementation", f"must be one of {ATTENTION_IMPLEMENTATIONS}")
        if self.max_length is not None and self.max_length < 16:
            raise bad("max_length", "must be at least 16 tokens (the prompt needs room)")

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

    def max_length_for(self, kind: str) -> int:
        """``max_length`` (a training input's tokens), or the default of a model of ``kind``
        (cross-encoder, generative: :data:`DEFAULT_MAX_LENGTH`)."""
        return int(self.max_length or DEFAULT_MAX_LENGTH[kind])

    def reranker_max_length(self) -> int:
        """The ``max_length`` a trained generative model is served with: its prompt alone, a
        training input less its :attr:`answer_tokens`."""
        return self.max_length_for("generative") - self.answer_tokens


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
    "DEFAULT_MAX_LENGTH",
    "MAX_LENGTH_HELP",
    "TrainerConventions",
    "bf16_available",
    "bf16_supported",
    "field_help",
]
