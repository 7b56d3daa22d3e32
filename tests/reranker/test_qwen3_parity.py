"""Our yes/no reranker on a Qwen3 model equals the official Qwen3-Reranker usage, token for token
and score for score.

The reference below is the usage code of the Qwen3-Reranker model card
(https://huggingface.co/Qwen/Qwen3-Reranker-0.6B, "Transformers Usage"), its strings written out
here literally rather than imported from ``reranker.prompt``: a drift of our prompt (system text,
``<Instruct>/<Query>/<Document>`` layout, the empty think block, the default instruction, the
truncation, the yes/no ids, the two-way softmax) from the published format fails. It runs on a
byte-level BPE tokenizer with Qwen's special tokens and a random-weight Qwen3 model, both built
here (no download).
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
tokenizers = pytest.importorskip("tokenizers")

# -- the model card's usage, verbatim in substance ----------------------------------------
CARD_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n"
)
CARD_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
CARD_DEFAULT_INSTRUCTION = (
    "Given a web search query, retrieve relevant passages that answer the query"
)


def format_instruction(instruction, query, doc):
    if instruction is None:
        instruction = CARD_DEFAULT_INSTRUCTION
    return "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}".format(  # noqa: UP032
        instruction=instruction, query=query, doc=doc
    )


def card_inputs(tokenizer, pairs, max_length):
    prefix_tokens = tokenizer.encode(CARD_PREFIX, add_special_tokens=False)
    suffix_tokens = tokenizer.encode(CARD_SUFFIX, add_special_tokens=False)
    inputs = tokenizer(
        pairs, padding=False, truncation="longest_first", return_attention_mask=False,
        max_length=max_length - len(prefix_tokens) - len(suffix_tokens),
    )  # fmt: skip
    return [prefix_tokens + ids + suffix_tokens for ids in inputs["input_ids"]]


@torch.no_grad()
def card_score(model, tokenizer, ids):
    token_false_id = tokenizer.convert_tokens_to_ids("no")
    token_true_id = tokenizer.convert_tokens_to_ids("yes")
    batch_scores = model(input_ids=torch.tensor([ids])).logits[:, -1, :]
    true_vector = batch_scores[:, token_true_id]
    false_vector = batch_scores[:, token_false_id]
    batch_scores = torch.stack([false_vector, true_vector], dim=1)
    batch_scores = torch.nn.functional.log_softmax(batch_scores, dim=1)
    return batch_scores[:, 1].exp().tolist()[0]


# -- a Qwen3 model built here -----------------------------------------------------------
@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    corpus = [CARD_PREFIX, CARD_SUFFIX, CARD_DEFAULT_INSTRUCTION, "yes no yes no"] * 50 + [
        "def sort(xs): return sorted(xs)", "Given a query, retrieve code that solves it",
    ]  # fmt: skip
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )  # fmt: skip
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        padding_side="left",
    )  # fmt: skip
    assert tokenizer.convert_tokens_to_ids("yes") != tokenizer.unk_token_id
    config = transformers.Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config).eval()
    folder = tmp_path_factory.mktemp("qwen3")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


PAIRS = [
    ("sort a list", "def sort(xs): return sorted(xs)"),
    ("reverse a string", "def rev(s):\n    return s[::-1]\n" * 40),  # the document is cut
    ("word " * 300, "def f(): pass"),  # the query alone does not fit: cut as the card cuts it
]


@pytest.mark.parametrize("instruction", [None, "Given a question, retrieve code that solves it"])
def test_prompt_ids_and_scores_equal_the_model_card_usage(qwen3, instruction):
    from reranker.registry import load_reranker

    folder, model, tokenizer = qwen3
    reranker = load_reranker(str(folder), max_length=160)
    assert reranker.prompt.yes_id == tokenizer.convert_tokens_to_ids("yes")
    assert reranker.prompt.no_id == tokenizer.convert_tokens_to_ids("no")
    texts = [format_instruction(instruction, q, d) for q, d in PAIRS]
    expected = card_inputs(tokenizer, texts, 160)
    ours = [reranker.encode_pair(q, d, instruction) for q, d in PAIRS]
    assert ours == expected
    assert [len(i) for i in ours[1:]] == [160, 160]  # both long pairs were cut, the card's way
    assert tokenizer.decode(ours[0]) == CARD_PREFIX + texts[0] + CARD_SUFFIX
    scores = reranker.score(PAIRS, instruction=instruction)  # batched, left-padded
    for got, ids in zip(scores, expected, strict=True):
        assert got == pytest.approx(card_score(model, tokenizer, ids), abs=1e-6)


def test_the_card_literals_are_ours():
    from reranker import prompt

    assert prompt.QWEN3_PREFIX == CARD_PREFIX
    assert prompt.QWEN3_SUFFIX == CARD_SUFFIX
    assert prompt.DEFAULT_INSTRUCTION == CARD_DEFAULT_INSTRUCTION
    assert prompt.USER_TEMPLATE.format(instruction="I", query="Q", document="D") == (
        format_instruction("I", "Q", "D")
    )
