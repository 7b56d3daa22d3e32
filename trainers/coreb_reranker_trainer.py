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

The config is :class:`trainers.coreb_reranker_config.CorebRerankerConfig`; the base model's
loading, the LoRA config, the run records, the checkpoint callback and the end of the run are
:mod:`trainers.common`'s, which the SynH-Rank trainer shares.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from reranker.instructions import by_instruction
from reranker.prompt import IGNORE_INDEX, YesNoPrompt
from trainers.common import (
    VALIDATION_METRICS,
    VALIDATION_SCORES,
    TrainingData,
    TrainResult,
    append_jsonl,
    check_eval_split,
    checkpoint_extras,
    extras_callback,
    load_base,
    lora_config,
    save_merged,
    train_and_save,
    write_json,
    write_jsonl,
    write_run_end,
)
from trainers.coreb_reranker_config import CorebRerankerConfig
from trainers.run_checks import GuardedTrainer, check_resumed_data, run_guard

logger = logging.getLogger(__name__)

VALIDATION_CURVE = "validation_curve.jsonl"
EXAMPLES_DIR = "examples"


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


# -- 3: sequences -------------------------------------------------------------------------
def tokenize(rows: Sequence[Mapping[str, Any]], prompt: YesNoPrompt, max_length: int) -> Any:
    """A ``datasets.Dataset`` of ``input_ids``, ``labels`` and ``length`` for ``rows``, each row
    through :meth:`YesNoPrompt.supervised` (rows with one instruction in one tokenizer call)."""
    import datasets

    sequences: list[dict[str, list[int]] | None] = [None] * len(rows)
    for instruction, idx in by_instruction(r["instruction"] for r in rows).items():
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


# -- 4: the trainer ---------------------------------------------------------------------
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


# -- 5: validation ------------------------------------------------------------------------
def score_examples(reranker: Any, rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """P(yes) of every row by ``reranker`` (rows with one instruction scored together)."""
    scores = [0.0] * len(rows)
    for instruction, idx in by_instruction(r["instruction"] for r in rows).items():
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


def examples_seen(config: CorebRerankerConfig, step: int) -> int:
    """Training examples fed by optimizer step ``step`` (every process, every accumulation)."""
    from accelerate import PartialState

    per_step = config.per_device_train_batch_size * config.gradient_accumulation_steps
    return step * per_step * PartialState().num_processes


def curve_point(
    config: CorebRerankerConfig, step: int, rows: Sequence[Mapping[str, Any]], scores: Any
) -> dict:
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


def write_validation(
    folder: Path, rows: Sequence[Mapping[str, Any]], before: Sequence[float], after: Sequence[float]
) -> dict[str, dict]:
    """``validation_scores.jsonl`` (every held-out pair, its answer, P(yes) before and after)
    and ``validation_metrics.json``; returns the metrics."""
    metrics = {"before": validation_metrics(rows, before), "after": validation_metrics(rows, after)}
    keep = ("subtask", "query_id", "doc_id", "kind", "answer", "instruction")
    lines = []
    for row, b, a in zip(rows, before, after, strict=True):
        line = {k: row.get(k) for k in keep}
        line.update(query=row["query"], document=row["document"], before=b, after=a)
        lines.append(line)
    write_jsonl(folder / VALIDATION_SCORES, lines)
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
    check_eval_split(config, data.validation)
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
    result = train_and_save(trainer, config, data, guard)
    if state.is_main_process:
        write_run_end(
            config, trainer, result,
            lambda folder: checkpoint_extras(folder, config, data, config.model_name_or_path),
        )  # fmt: skip
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
            save_merged(trainer, tokenizer, output / "merged")
    state.wait_for_everyone()
    return result


__all__ = [
    "EXAMPLES_DIR",
    "VALIDATION_CURVE",
    "YesNoCollator",
    "answer_token_loss",
    "build_training_data",
    "curve_callback",
    "curve_point",
    "make_trainer",
    "score_examples",
    "tokenize",
    "train_coreb_reranker",
    "training_statements",
    "validation_metrics",
    "write_validation",
    "yes_no",
]
