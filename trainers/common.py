"""What both trainers of this package do alike, written once: the run's data and result, the
base model (resolved, loaded, LoRA), the records a run and every checkpoint carry, the callback
that completes a checkpoint, the curves, and the end of a run.

* **Data and result**: :class:`TrainingData` (a run's examples or loss rows, its report and its
  fingerprint, what a resume is checked against) and :class:`TrainResult`.
* **The base model**: :func:`resolve_base` (a bundled reranker's folder),
  :func:`attention_implementation`, :func:`load_base` (a causal LM and its tokenizer; GGUF
  dequantised), :func:`lora_config`.
* **Records**: :func:`write_run_records` (``training_config.json``, ``data_report.json``,
  ``disjointness_report.json``), :func:`checkpoint_extras` (an adapter's serving manifest and
  the records), :func:`write_run_info` (``run_info.json``), :func:`write_json`,
  :func:`write_jsonl`, :func:`append_jsonl`.
* **Callbacks and the end of a run**: :func:`extras_callback` (every ``checkpoint-N``
  completed), :func:`save_curves`, :func:`train_and_save`, :func:`write_run_end`,
  :func:`save_merged`.

The configs they read are any :class:`~trainers.base_config.TrainerConventions` (the
CoREB-Reranker's and SynH-Rank's), which declares every field read here. Grouping rows by
instruction (one scoring call per instruction) is
:func:`reranker.instructions.by_instruction`, which the benchmark's QualCode scorer
shares.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.base_config import TrainerConventions
from trainers.run_checks import DATA_REPORT

logger = logging.getLogger(__name__)

DISJOINTNESS_REPORT = "disjointness_report.json"
TRAINING_CONFIG = "training_config.json"
VALIDATION_SCORES = "validation_scores.jsonl"
VALIDATION_METRICS = "validation_metrics.json"
LOG_HISTORY = "log_history.json"
CURVES = "training_curves.png"
RUN_INFO = "run_info.json"


# -- data and result ----------------------------------------------------------------------
@dataclass
class TrainingData:
    """The examples of one run, their report and the disjointness report."""

    train: list[dict[str, Any]]
    validation: list[dict[str, Any]]
    report: dict[str, Any]
    disjointness: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        """SHA-256 of every example (train, then validation), in order."""
        digest = hashlib.sha256()
        for part in (self.train, self.validation):
            for row in part:
                digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
                digest.update(b"\n")
            digest.update(b"\x00")
        return digest.hexdigest()


@dataclass
class TrainResult:
    """What a run produced: where, how long, and the validation metrics before and after;
    ``global_step`` is the step reached, ``steps_trained`` the steps this run trained (counted
    as they end) from ``start_step`` (a resume's checkpoint, checked, else 0)."""

    output_dir: Path
    train_examples: int
    validation_examples: int
    global_step: int
    train_runtime_s: float
    before: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)
    start_step: int = 0
    steps_trained: int = 0


# -- the base model -----------------------------------------------------------------------
def resolve_base(name: str, gguf_file: str | None) -> tuple[str, str | None]:
    """The folder / id and GGUF file of a base model; a bundled generative reranker's name
    (``smollm2``) gives its package folder and file."""
    from reranker.registry import bundled as bundled_reranker

    bundled = bundled_reranker(name)
    if bundled is not None:
        if bundled.backend != "generative":
            raise ValueError(
                f"model_name_or_path={name!r} is the bundled {bundled.backend} reranker; a "
                "generative (causal LM) yes/no reranker is trained here"
            )
        return str(bundled.path()), gguf_file or bundled.options.get("gguf_file")
    return name, gguf_file


def attention_implementation(choice: str) -> str:
    """``auto``: FlashAttention-2 on a CUDA GPU that has it, else SDPA, logged either way."""
    if choice != "auto":
        return choice
    import torch
    from transformers.utils import is_flash_attn_2_available

    if torch.cuda.is_available() and is_flash_attn_2_available():
        logger.info("attention: flash_attention_2")
        return "flash_attention_2"
    why = "no CUDA GPU" if not torch.cuda.is_available() else "flash-attn is not installed"
    logger.info("attention: sdpa (FlashAttention-2 unavailable: %s)", why)
    return "sdpa"


def load_base(config: TrainerConventions, dtype: Any = None) -> tuple[Any, Any]:
    """The base causal LM and its tokenizer: in ``dtype`` (default: float32, or bf16 when
    ``config.bf16``: a LoRA run's frozen base; a full fine-tune keeps float32 master weights
    and trains under bf16 autocast)."""
    import torch
    import transformers

    from reranker.generative import check_causal_lm

    path, gguf_file = resolve_base(config.model_name_or_path, config.gguf_file)
    model_config = transformers.AutoConfig.from_pretrained(path, gguf_file=gguf_file)
    check_causal_lm(model_config, path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, gguf_file=gguf_file)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        path,
        gguf_file=gguf_file,
        dtype=dtype if dtype is not None else torch.bfloat16 if config.bf16 else torch.float32,
        attn_implementation=attention_implementation(config.attn_implementation),
    )
    if gguf_file is not None:
        dequantized(model, gguf_file)
    return model, tokenizer


def dequantized(model: Any, gguf_file: str) -> None:
    """A GGUF checkpoint loads dequantized (plain float tensors) but stays marked as quantized,
    which ``Trainer`` refuses to train; drop the marks (the weights are what they are)."""
    logger.info("%s: dequantized GGUF weights, trained as %s", gguf_file, model.dtype)
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def lora_config(config: TrainerConventions) -> Any:
    """The ``peft.LoraConfig`` of the run (a single "all-linear" entry stays a string)."""
    import peft

    targets: Any = list(config.lora_target_modules)
    if targets == ["all-linear"]:
        targets = "all-linear"
    return peft.LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
        bias="none",
    )


# -- records ----------------------------------------------------------------------------
def checkpoint_extras(
    folder: Path, config: TrainerConventions, data: TrainingData, base: str
) -> None:
    """The files that make ``folder`` (an adapter checkpoint) a servable, documented model:
    the manifest ``load_reranker`` reads, then :func:`write_run_records`."""
    from reranker.registry import write_checkpoint_manifest

    folder.mkdir(parents=True, exist_ok=True)
    write_checkpoint_manifest(
        folder, base, max_length=config.reranker_max_length(), **base_options(config)
    )
    write_run_records(folder, config, data)


def write_run_records(folder: Path, config: TrainerConventions, data: TrainingData) -> None:
    """What documents a run in ``folder``: the config (``training_config.json``), the data
    report with the data's fingerprint (``data_report.json``, what a resume is checked
    against) and the disjointness report (``disjointness_report.json``, where there is one).
    ``config``: a trainer config (its ``TrainingArguments.to_dict``)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / TRAINING_CONFIG, config.to_dict())
    write_json(folder / DATA_REPORT, {**data.report, "fingerprint": data.fingerprint})
    if data.disjointness:
        write_json(folder / DISJOINTNESS_REPORT, data.disjointness)


def write_run_info(folder: Path, config: TrainerConventions, result: TrainResult) -> dict[str, Any]:
    """Where and how long a finished run trained (``run_info.json``, main process only): the
    wall time of ``trainer.train`` (``result.train_runtime_s``), the step reached, the step it
    started from and the steps it trained, the example counts, when it finished, and the
    hardware (accelerator, device names, process count, precision, CPU, library versions); a
    model card's training recipe reads it. Returns it."""
    import os
    import platform
    from datetime import datetime, timezone

    import torch
    from accelerate import PartialState

    state = PartialState()
    devices: list[str] = []
    if torch.cuda.is_available():
        devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    precision = "bf16" if config.bf16 else "fp16" if config.fp16 else "fp32"
    info = {
        "wall_time_s": result.train_runtime_s,
        "global_step": result.global_step,
        "start_step": result.start_step,
        "steps_trained": result.steps_trained,
        "train_examples": result.train_examples,
        "validation_examples": result.validation_examples,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hardware": {
            "accelerator": state.device.type,
            "devices": devices,
            "num_processes": state.num_processes,
            "distributed_type": str(state.distributed_type.value),
            "precision": precision,
            "cpu": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / RUN_INFO, info)
    return info


def base_options(config: TrainerConventions) -> dict[str, Any]:
    """The reranker options the base needs beside its name (the GGUF file of a folder)."""
    from reranker.registry import bundled

    if bundled(config.model_name_or_path) is not None or config.gguf_file is None:
        return {}
    return {"gguf_file": config.gguf_file}


def write_json(path: Path, body: Any) -> None:
    """``body`` as indented, key-sorted JSON (non-JSON values as their ``str``)."""
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    path.write_text(text + "\n", encoding="utf-8")


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """``rows`` as JSON Lines, one object a line in the given key order (the validation
    scores of a run)."""
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def append_jsonl(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` to the JSON Lines file ``path`` (made with its folder when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, sort_keys=True) + "\n")


# -- callbacks and the end of a run -------------------------------------------------------
def extras_callback(
    config: TrainerConventions,
    data: TrainingData,
    extras: Callable[[Path], None] | None = None,
) -> Any:
    """A ``TrainerCallback`` that completes every ``checkpoint-N`` folder (main process only):
    ``extras(folder)`` (default: :func:`checkpoint_extras` of ``config.model_name_or_path``),
    then the curves so far when ``config.plot``."""
    from transformers import TrainerCallback

    def default(folder: Path) -> None:
        checkpoint_extras(folder, config, data, config.model_name_or_path)

    write = extras or default

    class CheckpointExtras(TrainerCallback):
        """Every checkpoint-N folder gets its extras (main process only)."""

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.is_world_process_zero:
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                write(folder)
                if config.plot:
                    save_curves(folder, state.log_history)

    return CheckpointExtras()


def save_curves(folder: Path, log_history: Sequence[Mapping[str, Any]]) -> None:
    """The loss and learning-rate curves so far as ``folder/training_curves.png`` (a warning,
    not an error, when nothing was logged yet)."""
    from coreb_toolkit.benchmark.plots import plot_training_curves

    try:
        plot_training_curves(log_history, folder / CURVES)
    except ValueError as err:
        logger.warning("no training curves in %s: %s", folder, err)


def check_eval_split(config: TrainerConventions, validation: Sequence[Any]) -> None:
    """``ValueError`` where ``config.eval_strategy`` asks for evaluation and the run holds no
    validation split."""
    if not validation and config.eval_strategy != "no":
        raise ValueError(
            f"{type(config).__name__}.eval_strategy={config.eval_strategy!r} but there is no "
            "validation split: set validation_fraction > 0 or eval_strategy='no'"
        )


def train_and_save(
    trainer: Any, config: TrainerConventions, data: TrainingData, guard: Any
) -> TrainResult:
    """``trainer.train`` (from ``config.resume_from_checkpoint`` where given), timed, and the
    model saved into ``config.output_dir``; returns the counts, the step reached, the wall time
    and the steps ``guard`` (:func:`trainers.run_checks.run_guard`) counted."""
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    runtime = time.perf_counter() - started
    output = Path(config.output_dir)
    trainer.save_model(str(output))
    return TrainResult(
        output_dir=output,
        train_examples=len(data.train),
        validation_examples=len(data.validation),
        global_step=trainer.state.global_step,
        train_runtime_s=runtime,
        start_step=guard.start_step,
        steps_trained=guard.steps,
    )


def write_run_end(
    config: TrainerConventions, trainer: Any, result: TrainResult, extras: Callable[[Path], None]
) -> None:
    """The files of a finished run beside its model (main process): ``extras(folder)`` (the
    records, a manifest), ``log_history.json``, ``run_info.json`` and, when ``config.plot``,
    the curves."""
    output = result.output_dir
    extras(output)
    write_json(output / LOG_HISTORY, trainer.state.log_history)
    write_run_info(output, config, result)
    if config.plot:
        save_curves(output, trainer.state.log_history)


def save_merged(trainer: Any, tokenizer: Any, folder: Path) -> None:
    """The trained adapter merged into its base, saved with the tokenizer into ``folder``."""
    unwrapped = trainer.accelerator.unwrap_model(trainer.model)
    unwrapped.merge_and_unload().save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))


__all__ = [
    "CURVES",
    "DISJOINTNESS_REPORT",
    "LOG_HISTORY",
    "RUN_INFO",
    "TRAINING_CONFIG",
    "VALIDATION_METRICS",
    "VALIDATION_SCORES",
    "TrainResult",
    "TrainingData",
    "append_jsonl",
    "attention_implementation",
    "base_options",
    "check_eval_split",
    "checkpoint_extras",
    "dequantized",
    "extras_callback",
    "load_base",
    "lora_config",
    "resolve_base",
    "save_curves",
    "save_merged",
    "train_and_save",
    "write_json",
    "write_jsonl",
    "write_run_end",
    "write_run_info",
    "write_run_records",
]
