"""The CoREB-Reranker's training step at the paper's shape on one GPU: peak memory and tokens/s
with the loss from the answer position alone against the loss over every position.

The prepared script for a lent GPU (the ``device`` tool), one call::

    python3 benchmarks/bench_gpu_train.py --out $OUT/bench_gpu_train.json   # on the GPU machine
    .venv/bin/python benchmarks/bench_gpu_train.py --device cpu --smoke     # its logic, here

It needs torch, transformers and peft, and no weights: a Qwen3-4B-shaped causal LM (the base of
Qwen3-Reranker-4B and of the paper's CoREB-Reranker: 36 layers, hidden 2,560, 32 query / 8
key-value heads of 128, MLP 9,728, vocabulary 151,936) is built from its configuration with
random weights (time and memory do not depend on the values), in bf16, with LoRA r 16 on every
linear module (peft, base frozen), gradient checkpointing, SDPA (or ``flash_attention_2`` where
the package is installed). A batch is the paper's: ``--batch`` (12) sequences of ``--length``
(4,096) tokens, one labelled answer token each, at the last position (left padding puts it
there). Three losses, each warmed up then timed over ``--iters`` optimizer-free steps
(forward + backward) between CUDA synchronisations:

* ``full_logits``: ``model(**batch, labels=labels)``, transformers' own loss: logits at every
  position (bf16), upcast to float32 by the loss;
* ``trl_fused``: TRL's fused LM head (``trl.trainer.utils.add_fused_lm_head``, what
  ``SFTTrainer`` 1.16 uses): log-probabilities of the labelled positions in chunks, when trl
  is installed (skipped otherwise);
* ``answer_only``: :func:`trainers.coreb_reranker_trainer.answer_token_loss` (``logits_to_keep`` at
  the answer position), the trainer's default.

Reported per loss: peak allocated GPU memory (``torch.cuda.max_memory_allocated``, reset before
the timed steps), seconds per step, tokens/s; and the ratios against ``full_logits``. An
out-of-memory is reported as such for that loss, not as a failure of the script.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QWEN3_4B = {"vocab_size": 151936, "hidden_size": 2560, "num_hidden_layers": 36,
            "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
            "intermediate_size": 9728, "max_position_embeddings": 40960,
            "tie_word_embeddings": True}  # fmt: skip
SMOKE = {"vocab_size": 512, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128}  # fmt: skip
LOSSES = ("full_logits", "trl_fused", "answer_only")


def build(args: argparse.Namespace):
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model

    shape = {**QWEN3_4B, **(SMOKE if args.smoke else {})}
    attn = "sdpa"
    try:
        from transformers.utils import is_flash_attn_2_available

        if args.device == "cuda" and is_flash_attn_2_available():
            attn = "flash_attention_2"
    except ImportError:
        pass
    config = transformers.Qwen3Config(**shape)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    with torch.device(args.device):
        model = transformers.Qwen3ForCausalLM._from_config(
            config, attn_implementation=attn, dtype=dtype
        )
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    lora = LoraConfig(r=16, lora_alpha=16, lora_dropout=0.05, target_modules="all-linear",
                      task_type="CAUSAL_LM")  # fmt: skip
    return get_peft_model(model, lora), shape, attn, dtype


def batch(args: argparse.Namespace, vocab: int) -> dict:
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (args.batch, args.length), generator=g)
    labels = torch.full_like(ids, -100)
    labels[:, -1] = ids[:, -1]  # the answer token, last in a left-padded batch
    out = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    return {k: v.to(args.device) for k, v in out.items()}


def step_fn(name: str, model, inputs: dict):
    """One forward + backward with loss ``name``; None where it cannot run here."""
    from trainers.coreb_reranker_trainer import answer_token_loss

    if name == "full_logits":
        return lambda: model(**inputs).loss.backward()
    if name == "answer_only":
        return lambda: answer_token_loss(model, inputs)[0].backward()
    try:
        from trl.trainer.utils import add_fused_lm_head
    except ImportError:
        return None
    add_fused_lm_head(model.get_base_model())
    return lambda: model(**inputs, fused_lm_head=True).loss.backward()


def measure(name: str, model, inputs: dict, args: argparse.Namespace) -> dict:
    import torch

    run = step_fn(name, model, inputs)
    if run is None:
        return {"loss": name, "skipped": "trl is not installed"}
    cuda = args.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    try:
        for _ in range(args.warmup):
            run()
            model.zero_grad(set_to_none=True)
        sync()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        for _ in range(args.iters):
            run()
            model.zero_grad(set_to_none=True)
        sync()
    except torch.OutOfMemoryError as err:
        model.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.empty_cache()
        return {"loss": name, "out_of_memory": str(err).splitlines()[0]}
    seconds = (time.perf_counter() - started) / args.iters
    return {
        "loss": name,
        "seconds_per_step": seconds,
        "tokens_per_s": args.batch * args.length / seconds,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--batch", type=int, default=12)
    p.add_argument("--length", type=int, default=4096)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--losses", nargs="+", default=list(LOSSES), choices=LOSSES)
    p.add_argument("--smoke", action="store_true", help="tiny shapes: the logic, on a CPU")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bench_gpu_train.json")
    args = p.parse_args(argv)
    if args.smoke:
        args.batch, args.length, args.iters, args.warmup = 2, 32, 1, 1
    import torch

    model, shape, attn, dtype = build(args)
    model.train()
    inputs = batch(args, shape["vocab_size"])
    rows = [measure(name, model, inputs, args) for name in args.losses]
    base = next((r for r in rows if r["loss"] == "full_logits" and "tokens_per_s" in r), None)
    for r in rows:
        if base and "tokens_per_s" in r:
            r["speedup_vs_full_logits"] = r["tokens_per_s"] / base["tokens_per_s"]
            if r["peak_memory_gib"] and base["peak_memory_gib"]:
                r["memory_vs_full_logits"] = r["peak_memory_gib"] / base["peak_memory_gib"]
    result = {
        "shape": shape, "batch": args.batch, "length": args.length, "attention": attn,
        "dtype": str(dtype), "device": torch.cuda.get_device_name(0)
        if args.device == "cuda" else platform.processor() or platform.machine(),
        "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "rows": rows,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
