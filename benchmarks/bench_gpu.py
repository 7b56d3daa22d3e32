"""GPU throughput (tokens/s) of the encoder and the yes/no reranker: bf16 SDPA / FlashAttention
against the same model's fp32 torch path, and the reranker against the chip's bf16 roofline.

The prepared script for a lent GPU (the ``device`` tool), one call::

    python3 benchmarks/bench_gpu.py --out $OUT/bench_gpu.json          # on the GPU machine
    .venv/bin/python benchmarks/bench_gpu.py --device cpu --smoke      # its logic, here

It needs only torch and transformers (both in the GPU machine's image) and no weights: the
models are built from their configurations with random weights, since throughput does not
depend on the values (nothing can be downloaded there, and the bundled models do not fit the
64 MiB that travels). Two shapes:

* **encoder**: all-MiniLM-L6-v2's ``BertModel`` (6 layers, hidden 384, 12 heads), batches of
  ``--encoder-batch`` texts of ``--encoder-length`` tokens, as ``DenseRetriever`` encodes;
* **reranker**: a Qwen3-0.6B-shaped causal LM (the base of Qwen3-Reranker-0.6B and the
  CoREB-Reranker: 28 layers, hidden 1024, 16 query / 8 key-value heads of 128, MLP 3072,
  vocabulary 151,936), prompts of ``--reranker-length`` tokens, logits of the last position
  only, as ``GenerativeReranker`` scores.

Contenders per model: fp32 with SDPA (the baseline, 1.00x), bf16 with SDPA (PyTorch picks its
FlashAttention kernel on Hopper), bf16 with ``flash_attention_2`` when the ``flash-attn``
package is installed (reported as skipped otherwise). Each is warmed up, then timed over
``--iters`` forward passes between CUDA synchronisations; tokens/s counts every position of
the batch (no padding: all rows have the same length). Roofline: the forward pass's matrix
FLOPs (2 per weight per token in the layers, plus the attention products 4 x length x width
per layer per token, causal ones halved; the last-position vocabulary head) over the time,
against ``--peak-tflops`` (default 790: the bf16 matrix product measured on this H200 kind,
KINDS.md; the datasheet's dense bf16 is about 990).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

MINILM = {"vocab_size": 30522, "hidden_size": 384, "num_hidden_layers": 6,
          "num_attention_heads": 12, "intermediate_size": 1536,
          "max_position_embeddings": 512}  # fmt: skip
QWEN3_0_6B = {"vocab_size": 151936, "hidden_size": 1024, "num_hidden_layers": 28,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "intermediate_size": 3072, "max_position_embeddings": 40960,
              "tie_word_embeddings": True}  # fmt: skip
SMOKE = {"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128}


def build(kind: str, attn: str, dtype, device: str, smoke: bool):
    import transformers

    if kind == "encoder":
        shape = {**MINILM, **(SMOKE | {"num_attention_heads": 4} if smoke else {})}
        config = transformers.BertConfig(**shape, attn_implementation=attn)
        model = transformers.BertModel(config)
    else:
        extra = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16}
        shape = {**QWEN3_0_6B, **(SMOKE | extra if smoke else {})}
        config = transformers.Qwen3Config(**shape, attn_implementation=attn)
        model = transformers.Qwen3ForCausalLM(config)
    return model.to(device=device, dtype=dtype).eval(), config


def forward_flops(kind: str, config, length: int) -> float:
    """Matrix FLOPs of one forward pass per token (see the module notes)."""
    h, layers, mlp = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    if kind == "encoder":
        per_layer = 4 * h * h + 2 * h * mlp  # q, k, v, o + the two MLP matrices
        attention = 4 * length * h  # scores and weighted sum, full attention
        head = 0.0
    else:
        heads, kv, dim = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        per_layer = h * heads * dim * 2 + h * kv * dim * 2 + 3 * h * mlp  # q,o + k,v + gated MLP
        attention = 4 * length * heads * dim / 2  # causal: half the pairs
        head = 2 * h * config.vocab_size / length  # last position only, spread over the prompt
    return layers * (2 * per_layer + attention) + head


def measure(kind, attn, dtype, args) -> dict:
    import torch

    try:
        model, config = build(kind, attn, dtype, args.device, args.smoke)
    except (ImportError, ValueError) as err:  # flash_attention_2 without flash-attn
        return {"attention": attn, "dtype": str(dtype).removeprefix("torch."), "skipped": str(err)}
    batch, length = (args.encoder_batch, args.encoder_length) if kind == "encoder" else (
        args.reranker_batch, args.reranker_length)  # fmt: skip
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (batch, length), generator=gen).to(args.device)
    mask = torch.ones_like(ids)

    def step():
        if kind == "encoder":
            return model(input_ids=ids, attention_mask=mask).last_hidden_state
        return model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits

    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    with torch.inference_mode():
        for _ in range(args.warmup):
            step()
        sync()
        start = time.perf_counter()
        for _ in range(args.iters):
            step()
        sync()
        seconds = (time.perf_counter() - start) / args.iters
    tokens_per_s = batch * length / seconds
    achieved = tokens_per_s * forward_flops(kind, config, length) / 1e12
    peak_mib = torch.cuda.max_memory_allocated() / 2**20 if args.device.startswith("cuda") else None
    return {
        "attention": attn, "dtype": str(dtype).removeprefix("torch."), "batch": batch,
        "length": length, "seconds_per_forward": seconds, "tokens_per_s": tokens_per_s,
        "achieved_tflops": achieved, "share_of_peak": achieved / args.peak_tflops,
        "peak_memory_mib": peak_mib,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--encoder-batch", type=int, default=256)
    parser.add_argument("--encoder-length", type=int, default=256)
    parser.add_argument("--reranker-batch", type=int, default=16)
    parser.add_argument("--reranker-length", type=int, default=1024)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--peak-tflops", type=float, default=790.0)
    parser.add_argument("--smoke", action="store_true", help="tiny shapes: the logic, on a CPU")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/bench_gpu.json"))
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("bench_gpu: no CUDA device here; run it on a GPU machine, or pass "
                         "--device cpu --smoke to check its logic")  # fmt: skip
    if args.smoke:
        args.encoder_batch, args.encoder_length = 4, 32
        args.reranker_batch, args.reranker_length, args.iters, args.warmup = 2, 64, 2, 1
    import transformers

    on_cuda = args.device.startswith("cuda")
    device_name = torch.cuda.get_device_name() if on_cuda else platform.processor() or "cpu"
    body = {
        "benchmark": "bench_gpu",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "device": device_name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peak_tflops": args.peak_tflops,
        "smoke": args.smoke,
        "weights": "random (shape only)",
    }
    contenders = [("sdpa", torch.float32), ("sdpa", torch.bfloat16),
                  ("flash_attention_2", torch.bfloat16)]  # fmt: skip
    for kind in ("encoder", "reranker"):
        rows = [measure(kind, attn, dtype, args) for attn, dtype in contenders]
        base = rows[0]["tokens_per_s"]
        for row in rows:
            if "tokens_per_s" in row:
                row["vs_fp32"] = row["tokens_per_s"] / base
            print(json.dumps({kind: row}), flush=True)
        body[kind] = rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=2) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
