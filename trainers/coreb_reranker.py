"""Train the CoREB-Reranker: a LoRA yes/no fine-tune of a generative reranker with TRL
[CoREB §4.3, B.3; protocol §5.1].

The steps, each one function:

1. **Examples** (:mod:`trainers.examples`): from the ``train_sources`` (a built CoREB dataset's
   train release, your own pairs), each positive twice, an easy and a hard negative per source
   record, shuffled; a problem-level validation split.
2. **Disjointness** (:mod:`trainers.decontamination`): no problem shared with the
   ``eval_sources``, no near-duplicate statement (10-gram overlap); the report is saved.
3. **Sequences**: :meth:`reranker.prompt.YesNoPrompt.supervised`, the function the
   generative reranker's prompts come from, gives ``input_ids`` and ``labels`` (-100 everywhere
   but the answer token). TRL keeps pre-tokenized labels as given; its prompt-completion mode
   would append and train the end-of-turn token too.
4. **Training**: ``trl.SFTTrainer`` with a ``peft.LoraConfig`` (base frozen), batches grouped by
   length and left-padded with explicit position ids (:class:`YesNoCollator`: a sequence's
   logits are those it gets at inference), checkpoints that carry the serving manifest, the
   config, the data fingerprint and the disjointness report.
5. **Validation**: the held-out pairs scored before and after training by
   :class:`reranker.generative.GenerativeReranker` on the in-memory model, the same code
   ``coreb evaluate --reranker OUTPUT_DIR`` runs; scores and metrics saved with the adapter.

Runs unchanged under ``accelerate launch`` (one GPU, DDP, DeepSpeed ZeRO-2; configs in
``trainers/configs/accelerate``): the Trainer owns the distribution.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reranker.prompt import IGNORE_INDEX, YesNoPrompt
from trainers.config import CorebRerankerConfig
from trainers.run_checks import DATA_REPORT, GuardedTrainer, check_resumed_data, run_guard

logger = logging.getLogger(__name__)

DISJOINTNESS_REPORT = "disjointness_report.json"
TRAINING_CONFIG = "training_config.json"
VALIDATION_SCORES = "validation_scores.jsonl"
VALIDATION_METRICS = "validation_metrics.json"
VALIDATION_CURVE = "validation_curve.jsonl"
CURVES = "training_curves.png"
RUN_INFO = "run_info.json"
EXAMPLES_DIR = "examples"


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


# -- 1-2: examples and disjointness -------------------------------------------------------
def build_training_data(config: CorebRerankerConfig) -> TrainingData:
    """Examples from ``config.train_sources``, checked against ``config.eval_sources`` and split
    into train and validation by problem."""
    from trainers import decontamination, examples

    if not config.train_sources:
        raise ValueError(
            "CorebRerankerConfig.train_sources is empty: name a built CoREB dataset "
            "(coreb:PATH@RELEASE) or pairs_jsonl:FILE to train on"
        )
    options = examples.ExampleOptions(
        positive_copies=config.positive_copies,
        easy_negatives=config.easy_negatives,
        hard_negatives=config.hard_negatives,
        miner=config.hard_negative_miner,
        mine_top_k=config.mine_top_k,
        subtasks=tuple(config.subtasks) if config.subtasks else None,
        main_tasks=tuple(config.main_tasks) if config.main_tasks else None,
        seed=config.seed,
        validation_fraction=config.validation_fraction,
    )
    rows = examples.generate_examples(config.train_sources, options)
    statements = training_statements(config.train_sources, rows)
    rows, disjointness = decontamination.check_disjointness(
        rows,
        statements,
        config.eval_sources,
        allow_shared_problems=config.allow_shared_problems,
        ngram=config.decontamination_ngram,
        max_overlap=config.max_ngram_overlap,
        near_duplicate_action=config.near_duplicate_action,
        template_filter=config.template_filter,
        template_share=config.template_share,
    )
    train, validation = examples.split_validation(rows, config.validation_fraction, config.seed)
    held_out = len(validation)
    if 0 < config.validation_max_examples < held_out:
        keep = random.Random(config.seed).sample(range(held_out), config.validation_max_examples)
        validation = [validation[i] for i in sorted(keep)]
    report = {
        "train_sources": list(config.train_sources),
        "options": asdict(options),
        "train": examples.example_counts(train),
        "validation": examples.example_counts(validation),
        "train_problems": len({r["source_problem_id"] for r in train}),
        "validation_problems": len({r["source_problem_id"] for r in validation}),
        "validation_held_out_examples": held_out,
    }
    return TrainingData(train, validation, report, disjointness.to_dict())


def yes_no(rows: Sequence[Mapping[str, Any]]) -> str:
    """``"<yes> yes / <no> no (<share>% yes)"`` of examples: the base rate a model can learn
    without learning relevance."""
    yes = sum(r["answer"] == "yes" for r in rows)
    share = f"{100 * yes / len(rows):.1f}% yes" if rows else "no example"
    return f"{yes:,} yes / {len(rows) - yes:,} no ({share})"


def training_statements(
    sources: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """Every training problem's statements, for the near-duplicate check: a CoREB source's
    problem statements (its text corpus and t2c queries), plus the t2c queries of the examples
    (which is all a pairs file has)."""
    from trainers import examples

    statements: dict[str, list[str]] = {}
    for spec in sources:
        name, location = examples.parse_source(spec)
        if name == "coreb":
            path, release = examples.split_release(location)
            for problem, texts in examples.problem_statements(path, release).items():
                statements.setdefault(problem, []).extend(texts)
    for problem, texts in examples.example_statements(rows).items():
        statements.setdefault(problem, []).extend(texts)
    return statements


def by_instruction(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Row indices by instruction, in first-seen order: what one tokenizer / scoring call
    takes (a prompt's instruction is shared by its rows)."""
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(row["instruction"], []).append(i)
    return groups


# -- 3: sequences -------------------------------------------------------------------------
def tokenize(rows: Sequence[Mapping[str, Any]], prompt: YesNoPrompt, max_length: int) -> Any:
    """A ``datasets.Dataset`` of ``input_ids``, ``labels`` and ``length`` for ``rows``, each row
    through :meth:`YesNoPrompt.supervised` (rows with one instruction in one tokenizer call)."""
    import datasets

    sequences: list[dict[str, list[int]] | None] = [None] * len(rows)
    for instruction, idx in by_instruction(rows).items():
        pairs = [(rows[i]["query"], rows[i]["document"]) for i in idx]
        answers = [rows[i]["answer"] for i in idx]
        try:
            encoded = prompt.supervised(pairs, instruction, answers, max_length)
        except ValueError as err:
            raise ValueError(f"{_first_too_long(rows, idx, prompt, max_length)}: {err}") from None
        for i, seq in zip(idx, encoded, strict=True):
            sequences[i] = seq
    return datasets.Dataset.from_dict(
        {
            "input_ids": [s["input_ids"] for s in sequences],
            "labels": [s["labels"] for s in sequences],
            "length": [len(s["input_ids"]) for s in sequences],
        }
    )


def _first_too_long(
    rows: Sequence[Mapping[str, Any]], idx: Sequence[int], prompt: YesNoPrompt, max_length: int
) -> str:
    """Which example of ``idx`` does not fit (for the error message)."""
    for i in idx:
        row = rows[i]
        try:
            prompt.supervised([(row["query"], row["document"])], row["instruction"], ["yes"],
                              max_length)  # fmt: skip
        except ValueError:
            where = ", ".join(f"{k} {row.get(k)!r}" for k in ("subtask", "query_id", "doc_id"))
            return f"training example {i} ({where})"
    return "a training example"


class YesNoCollator:
    """Left-padded batches with position ids (:meth:`YesNoPrompt.collate`, as at inference) and
    labels padded with -100."""

    def __init__(self, prompt: YesNoPrompt) -> None:
        self.prompt = prompt

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        seqs = [list(f["input_ids"]) for f in features]
        batch = self.prompt.collate(seqs)
        width = batch["input_ids"].shape[1]
        labels = torch.full((len(seqs), width), IGNORE_INDEX, dtype=torch.long)
        for row, f in enumerate(features):
            label = list(f["labels"])
            labels[row, width - len(label) :] = torch.tensor(label, dtype=torch.long)
        batch["labels"] = labels
        return batch


def answer_token_loss(
    model: Any, inputs: Mapping[str, Any], num_items_in_batch: Any = None
) -> tuple[Any, Any]:
    """The cross-entropy of the answer tokens over the full vocabulary, with the logits taken
    at the positions that predict them alone (``logits_to_keep``, as
    :class:`~reranker.generative.GenerativeReranker` scores): the same loss as the model's own
    (sum over labelled tokens / ``num_items_in_batch``, else their count), without projecting
    every position through the LM head. In a left-padded batch every answer is in the last
    column, so one position per sequence. Returns ``(loss, outputs)``."""
    import torch

    labels = inputs["labels"]
    targets = labels[:, 1:]
    # positions (of the unshifted sequence) whose next token carries a label in some row
    keep = (targets != IGNORE_INDEX).any(dim=0).nonzero().squeeze(-1)
    forward = {k: v for k, v in inputs.items() if k != "labels"}
    outputs = model(**forward, logits_to_keep=keep, use_cache=False)
    logits = outputs.logits  # rows x len(keep) x vocabulary
    picked = targets[:, keep]
    total = torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]),
        picked.reshape(-1).to(logits.device),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )
    count = (picked != IGNORE_INDEX).sum() if num_items_in_batch is None else num_items_in_batch
    return total / torch.as_tensor(count, device=total.device).clamp(min=1), outputs


# -- 4: model and trainer -----------------------------------------------------------------
def resolve_base(name: str, gguf_file: str | None) -> tuple[str, str | None]:
    """The folder / id and GGUF file of a base model; a bundled generative reranker's name
    (``smollm2``) gives its package folder and file."""
    from reranker.registry import bundled as bundled_reranker

    bundled = bundled_reranker(name)
    if bundled is not None:
        if bundled.backend != "generative":
            raise ValueError(
                f"model_name_or_path={name!r} is the bundled {bundled.backend} reranker; the "
                "CoREB-Reranker trains a generative (causal LM) yes/no reranker"
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


def load_base(config: CorebRerankerConfig, dtype: Any = None) -> tuple[Any, Any]:
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


def lora_config(config: CorebRerankerConfig) -> Any:
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


def make_trainer(
    config: CorebRerankerConfig, model: Any, tokenizer: Any, prompt: YesNoPrompt,
    train_set: Any, eval_set: Any, callbacks: Sequence[Any] = (),
) -> Any:  # fmt: skip
    """The run's ``trl.SFTTrainer``: LoRA on ``model``, :class:`YesNoCollator` batches, the
    run's checks (:mod:`trainers.run_checks`) and, with ``config.answer_only_loss``,
    :func:`answer_token_loss` (else TRL's own loss, over every position)."""
    from trl import SFTTrainer

    class YesNoTrainer(GuardedTrainer, SFTTrainer):
        """TRL's SFTTrainer with the run's checks and the answer-position loss."""

        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:  # fmt: skip
            if not config.answer_only_loss:
                return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            loss, outputs = answer_token_loss(model, inputs, num_items_in_batch)
            # as TRL's: num_items_in_batch counts every rank's tokens, DDP averages gradients
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes
            return (loss, outputs) if return_outputs else loss

    return YesNoTrainer(
        model=model,
        args=config,
        train_dataset=train_set,
        eval_dataset=eval_set,
        processing_class=tokenizer,
        data_collator=YesNoCollator(prompt),
        peft_config=lora_config(config),
        callbacks=list(callbacks),
        loss_name="answer-token cross-entropy",
    )


def checkpoint_extras(
    folder: Path, config: CorebRerankerConfig, data: TrainingData, base: str
) -> None:
    """The files that make ``folder`` (an adapter checkpoint) a servable, documented model:
    the manifest ``load_reranker`` reads, then :func:`write_run_records`."""
    from reranker.registry import write_checkpoint_manifest

    folder.mkdir(parents=True, exist_ok=True)
    write_checkpoint_manifest(
        folder, base, max_length=config.reranker_max_length(), **base_options(config)
    )
    write_run_records(folder, config, data)


def write_run_records(folder: Path, config: Any, data: TrainingData) -> None:
    """What documents a run in ``folder``: the config (``training_config.json``), the data
    report with the data's fingerprint (``data_report.json``, what a resume is checked
    against) and the disjointness report (``disjointness_report.json``, where there is one).
    ``config``: any ``TrainingArguments`` (its ``to_dict``)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / TRAINING_CONFIG, config.to_dict())
    write_json(folder / DATA_REPORT, {**data.report, "fingerprint": data.fingerprint})
    if data.disjointness:
        write_json(folder / DISJOINTNESS_REPORT, data.disjointness)


def write_run_info(folder: Path, config: Any, result: TrainResult) -> dict[str, Any]:
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
    precision = "bf16" if getattr(config, "bf16", False) else None
    precision = precision or ("fp16" if getattr(config, "fp16", False) else "fp32")
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


def base_options(config: CorebRerankerConfig) -> dict[str, Any]:
    """The reranker options the base needs beside its name (the GGUF file of a folder)."""
    from reranker.registry import bundled

    if bundled(config.model_name_or_path) is not None or config.gguf_file is None:
        return {}
    return {"gguf_file": config.gguf_file}


def write_json(path: Path, body: Any) -> None:
    """``body`` as indented, key-sorted JSON (non-JSON values as their ``str``)."""
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    path.write_text(text + "\n", encoding="utf-8")


def extras_callback(config: Any, data: TrainingData, extras: Any = None) -> Any:
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


# -- 5: validation ------------------------------------------------------------------------
def score_examples(reranker: Any, rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """P(yes) of every row by ``reranker`` (rows with one instruction scored together)."""
    scores = [0.0] * len(rows)
    for instruction, idx in by_instruction(rows).items():
        pairs = [(rows[i]["query"], rows[i]["document"]) for i in idx]
        for i, s in zip(idx, reranker.score(pairs, instruction=instruction), strict=True):
            scores[i] = float(s)
    return scores


def validation_metrics(rows: Sequence[Mapping[str, Any]], scores: Sequence[float]) -> dict:
    """Accuracy at 0.5 (a NaN score is never right), ROC AUC (ties count half, a NaN wins no
    pair), the answer's mean log-loss and the mean P(yes) of the "yes" and the "no" pairs."""
    if not rows:
        return {}
    yes = [s for r, s in zip(rows, scores, strict=True) if r["answer"] == "yes"]
    no = [s for r, s in zip(rows, scores, strict=True) if r["answer"] == "no"]
    correct = sum(
        not math.isnan(s) and (s > 0.5) == (r["answer"] == "yes")
        for r, s in zip(rows, scores, strict=True)
    )
    eps = 1e-12
    loss = [
        -math.log(max(s if r["answer"] == "yes" else 1.0 - s, eps))
        for r, s in zip(rows, scores, strict=True)
    ]
    out = {
        "pairs": len(rows),
        "accuracy": correct / len(rows),
        "log_loss": sum(loss) / len(loss),
        "mean_p_yes_of_yes": sum(yes) / len(yes) if yes else float("nan"),
        "mean_p_yes_of_no": sum(no) / len(no) if no else float("nan"),
    }
    if yes and no:
        wins = sum((a > b) + 0.5 * (a == b) for a in yes for b in no)
        out["roc_auc"] = wins / (len(yes) * len(no))
    return out


def _reranker(model: Any, tokenizer: Any, config: CorebRerankerConfig) -> Any:
    from reranker.generative import GenerativeReranker

    device = str(next(model.parameters()).device)
    return GenerativeReranker(
        model,
        tokenizer,
        name=config.model_name_or_path,
        device=device,
        max_length=config.reranker_max_length(),
    )


def examples_seen(config: Any, step: int) -> int:
    """Training examples fed by optimizer step ``step`` (every process, every accumulation)."""
    from accelerate import PartialState

    per_step = config.per_device_train_batch_size * config.gradient_accumulation_steps
    return step * per_step * PartialState().num_processes


def curve_point(config: Any, step: int, rows: Sequence[Mapping[str, Any]], scores: Any) -> dict:
    """One point of the learning curve: the step, the examples seen and
    :func:`validation_metrics` of the held-out pairs."""
    return {"step": step, "examples_seen": examples_seen(config, step),
            **validation_metrics(rows, scores)}  # fmt: skip


def curve_callback(config: CorebRerankerConfig, data: TrainingData, tokenizer: Any) -> Any:
    """A ``TrainerCallback`` that scores the held-out pairs every
    ``config.validation_curve_steps`` optimizer steps (main process) and appends the point to
    ``OUTPUT_DIR/validation_curve.jsonl`` (:func:`curve_point`): validation ROC AUC and
    log-loss against the examples seen."""
    import torch
    from transformers import TrainerCallback

    path = Path(config.output_dir) / VALIDATION_CURVE
    every = config.validation_curve_steps

    class ValidationCurve(TrainerCallback):
        """Held-out ROC AUC and log-loss every few steps."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not state.is_world_process_zero or state.global_step % every:
                return
            model = kwargs["model"]
            training = model.training
            with torch.no_grad():
                scores = score_examples(_reranker(model, tokenizer, config), data.validation)
            model.train(training)
            point = curve_point(config, state.global_step, data.validation, scores)
            logger.info(
                "step %d (%d examples): validation ROC AUC %.4f, log-loss %.4f",
                point["step"], point["examples_seen"], point.get("roc_auc", float("nan")),
                point["log_loss"],
            )  # fmt: skip
            append_jsonl(path, point)

    return ValidationCurve()


def append_jsonl(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` to the JSON Lines file ``path`` (made with its folder when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row, sort_keys=True) + "\n")


def write_validation(
    folder: Path, rows: Sequence[Mapping[str, Any]], before: Sequence[float], after: Sequence[float]
) -> dict[str, dict]:
    """``validation_scores.jsonl`` (every held-out pair, its answer, P(yes) before and after)
    and ``validation_metrics.json``; returns the metrics."""
    metrics = {"before": validation_metrics(rows, before), "after": validation_metrics(rows, after)}
    with (folder / VALIDATION_SCORES).open("w", encoding="utf-8") as out:
        for row, b, a in zip(rows, before, after, strict=True):
            keep = ("subtask", "query_id", "doc_id", "kind", "answer", "instruction")
            line = {k: row.get(k) for k in keep}
            line.update(query=row["query"], document=row["document"], before=b, after=a)
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    write_json(folder / VALIDATION_METRICS, metrics)
    return metrics


# -- the run ------------------------------------------------------------------------------
# over 80 lines: one sequence of steps, each a call above, with the distributed guards inline
def train_coreb_reranker(
    config: CorebRerankerConfig,
    *,
    data: TrainingData | None = None,
    callbacks: Sequence[Any] = (),
) -> TrainResult:
    """Train, save and validate a CoREB-Reranker adapter into ``config.output_dir``.

    ``data``: ready examples (else :func:`build_training_data` from the config).
    ``callbacks``: further ``transformers.TrainerCallback`` objects (early stopping, logging),
    after the one that completes every checkpoint. Returns the counts, the step reached, the
    wall time and the validation metrics before and after.
    """
    import torch
    from accelerate import PartialState
    from transformers import set_seed

    state = PartialState()
    set_seed(config.seed)
    data = data if data is not None else build_training_data(config)
    logger.info(
        "%d training and %d validation examples (%s); yes/no of the training examples: %s",
        len(data.train), len(data.validation), data.fingerprint[:12], yes_no(data.train),
    )  # fmt: skip
    if not data.train:
        raise ValueError("no training example: the train sources gave none (see the data report)")
    if config.resume_from_checkpoint:
        check_resumed_data(Path(config.resume_from_checkpoint), data)
    output = Path(config.output_dir)
    model, tokenizer = load_base(config)
    prompt = YesNoPrompt.for_tokenizer(tokenizer, getattr(model.config, "model_type", None))
    if tokenizer.pad_token_id is None:  # left padding needs a pad id; the prompt's is eos
        tokenizer.pad_token_id = prompt.pad_id
    train_set = tokenize(data.train, prompt, config.max_length)
    eval_set = tokenize(data.validation, prompt, config.max_length) if data.validation else None
    if eval_set is None and config.eval_strategy != "no":
        raise ValueError(
            f"eval_strategy={config.eval_strategy!r} but there is no validation split: set "
            "validation_fraction > 0 or eval_strategy='no'"
        )
    before: list[float] = []
    if data.validation and state.is_main_process:  # only the main process writes them
        logger.info(
            "scoring the %d held-out validation pairs before training", len(data.validation)
        )
        with torch.no_grad():
            before = score_examples(_reranker(model, tokenizer, config), data.validation)
    if state.is_main_process:
        output.mkdir(parents=True, exist_ok=True)
        examples_dir = output / EXAMPLES_DIR
        from trainers.examples import examples_dataset

        for split, rows in (("train", data.train), ("validation", data.validation)):
            if rows:  # an empty parquet file is one `datasets` cannot load
                examples_dataset(rows).to_parquet(str(examples_dir / f"{split}.parquet"))
            else:
                logger.info("no %s examples: no %s/%s.parquet", split, EXAMPLES_DIR, split)

    guard = run_guard()
    extra = [guard, extras_callback(config, data)]
    if config.validation_curve_steps and data.validation:
        extra.append(curve_callback(config, data, tokenizer))
        if state.is_main_process and not config.resume_from_checkpoint:
            (output / VALIDATION_CURVE).unlink(missing_ok=True)
            append_jsonl(output / VALIDATION_CURVE, curve_point(config, 0, data.validation, before))
    trainer = make_trainer(
        config, model, tokenizer, prompt, train_set, eval_set, [*extra, *callbacks]
    )
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=config.resume_from_checkpoint)
    runtime = time.perf_counter() - started
    trainer.save_model(str(output))
    result = TrainResult(
        output_dir=output,
        train_examples=len(data.train),
        validation_examples=len(data.validation),
        global_step=trainer.state.global_step,
        train_runtime_s=runtime,
        start_step=guard.start_step,
        steps_trained=guard.steps,
    )
    if state.is_main_process:
        checkpoint_extras(output, config, data, config.model_name_or_path)
        write_json(output / "log_history.json", trainer.state.log_history)
        write_run_info(output, config, result)
        if config.plot:
            save_curves(output, trainer.state.log_history)
        if data.validation:
            logger.info(
                "scoring the %d held-out validation pairs after training", len(data.validation)
            )
            unwrapped = trainer.accelerator.unwrap_model(trainer.model)
            with torch.no_grad():
                after = score_examples(_reranker(unwrapped, tokenizer, config), data.validation)
            metrics = write_validation(output, data.validation, before, after)
            result.before, result.after = metrics["before"], metrics["after"]
        if config.save_merged_model:
            unwrapped = trainer.accelerator.unwrap_model(trainer.model)
            unwrapped.merge_and_unload().save_pretrained(str(output / "merged"))
            tokenizer.save_pretrained(str(output / "merged"))
    state.wait_for_everyone()
    return result


__all__ = [
    "CURVES",
    "DATA_REPORT",
    "DISJOINTNESS_REPORT",
    "RUN_INFO",
    "TRAINING_CONFIG",
    "VALIDATION_CURVE",
    "VALIDATION_METRICS",
    "VALIDATION_SCORES",
    "TrainResult",
    "TrainingData",
    "YesNoCollator",
    "answer_token_loss",
    "build_training_data",
    "by_instruction",
    "checkpoint_extras",
    "curve_callback",
    "extras_callback",
    "load_base",
    "lora_config",
    "make_trainer",
    "resolve_base",
    "save_curves",
    "score_examples",
    "tokenize",
    "train_coreb_reranker",
    "validation_metrics",
    "write_json",
    "write_run_info",
    "write_run_records",
    "yes_no",
]
