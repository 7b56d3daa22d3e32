"""The training sequences of the yes/no prompt (SmolLM2's tokenizer, a tiny model): the loss sits
on the answer token alone, the prompt is the one the generative reranker serves, truncation
cuts the document only, and batches are left-padded with position ids restarting at 0.

Expectations come from the tokenizer's own chat template and hand-built tensors, not from
:mod:`reranker.prompt`.
"""

from __future__ import annotations

import pytest

from coreb_toolkit.vocabulary import MAIN_TASKS

torch = pytest.importorskip("torch")

# the Qwen3-Reranker model card's texts, written out here (not imported from reranker.prompt)
SYSTEM = (
    "Judge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".'
)
THINK = "<think>\n\n</think>\n\n"
T2C, C2C = MAIN_TASKS["t2c"].instruction, MAIN_TASKS["c2c"].instruction
PAIRS = [
    ("Sort a list of integers in place.", "def sort(xs):\n    xs.sort()\n"),
    ("Return the n-th Fibonacci number.", "int fib(int n) { return n < 2 ? n : fib(n - 1) + 1; }"),
    ("Reverse a string.", "s[::-1]"),
]
ANSWERS = ["yes", "no", "yes"]
LONG_DOCUMENT = "def f(values):\n" + "".join(
    f"    total_{i} = sum(values) * {i}\n" for i in range(400)
)


@pytest.fixture(scope="module")
def prompt(tiny_tokenizer):
    from reranker.prompt import YesNoPrompt

    return YesNoPrompt.for_tokenizer(tiny_tokenizer)


@pytest.fixture(scope="module")
def tiny_lm(tiny_model):
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model)).eval()


def rendered(tokenizer, instruction: str, query: str, document: str) -> str:
    """The whole prompt text as the tokenizer's chat template renders it, plus the think block."""
    user = f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text + THINK


def test_labels_supervise_the_answer_token_only(prompt, tiny_tokenizer):
    seqs = prompt.supervised(PAIRS, T2C, ANSWERS, max_length=256)
    for seq, answer in zip(seqs, ANSWERS, strict=True):
        ids, labels = seq["input_ids"], seq["labels"]
        assert len(ids) == len(labels)
        supervised = [(i, label) for i, label in enumerate(labels) if label != -100]
        # one token, the last, labelled with its own id: "yes" or "no", no end-of-turn token
        assert [i for i, _ in supervised] == [len(ids) - 1]
        assert [tiny_tokenizer.decode([label]) for _, label in supervised] == [answer]
        assert labels[-1] == ids[-1]
        assert "<|im_end|>" not in tiny_tokenizer.decode(ids[-1:])


def test_training_prompt_is_the_served_prompt(prompt, tiny_tokenizer, tiny_lm):
    from reranker.generative import GenerativeReranker

    max_length = 256
    seqs = prompt.supervised(PAIRS, T2C, ANSWERS, max_length=max_length)
    served = GenerativeReranker(
        tiny_lm, tiny_tokenizer, device="cpu", max_length=max_length - 1
    ).encode_pairs(PAIRS, T2C)
    for seq, ids, (query, document) in zip(seqs, served, PAIRS, strict=True):
        assert seq["input_ids"][:-1] == ids
        # and it is the chat template's text (SmolLM2's ChatML) with the card's think block
        assert tiny_tokenizer.decode(ids) == rendered(tiny_tokenizer, T2C, query, document)


def test_truncation_cuts_the_document_only(prompt, tiny_tokenizer):
    query = "Sum the values, many times."
    max_length = 128
    (seq,) = prompt.supervised([(query, LONG_DOCUMENT)], C2C, ["no"], max_length=max_length)
    ids = seq["input_ids"]
    assert len(ids) == max_length
    assert tiny_tokenizer.decode(ids[-1:]) == "no"
    full = rendered(tiny_tokenizer, C2C, query, LONG_DOCUMENT)
    start = full.index(LONG_DOCUMENT)
    head, tail = full[:start], full[start + len(LONG_DOCUMENT) :]
    text = tiny_tokenizer.decode(ids[:-1])
    assert text.startswith(head), "the system prompt, instruction or query was cut"
    assert text.endswith(tail), "the prompt suffix (end of turn, assistant, think block) was cut"
    kept = text[len(head) : len(text) - len(tail)]
    assert kept and LONG_DOCUMENT.startswith(kept) and len(kept) < len(LONG_DOCUMENT)


def test_a_prompt_longer_than_max_length_without_its_document_is_an_error(prompt):
    with pytest.raises(ValueError, match="max_length=64"):
        prompt.supervised([("word " * 200, "x = 1")], T2C, ["yes"], max_length=64)


def test_collator_left_pads_with_restarting_positions(prompt):
    from trainers.coreb_reranker_trainer import YesNoCollator

    seqs = prompt.supervised(PAIRS, T2C, ANSWERS, max_length=256)
    batch = YesNoCollator(prompt)(seqs)
    width = max(len(s["input_ids"]) for s in seqs)
    assert batch["input_ids"].shape == (len(seqs), width)
    for row, seq in enumerate(seqs):
        n = len(seq["input_ids"])
        pad = width - n
        assert batch["input_ids"][row, :pad].tolist() == [prompt.pad_id] * pad
        assert batch["input_ids"][row, pad:].tolist() == seq["input_ids"]
        assert batch["attention_mask"][row].tolist() == [0] * pad + [1] * n
        assert batch["position_ids"][row, pad:].tolist() == list(range(n))
        assert batch["labels"][row].tolist() == [-100] * pad + seq["labels"]
    assert min(len(s["input_ids"]) for s in seqs) < width  # some row was padded


def test_collated_loss_is_the_answer_cross_entropy_at_the_prompt_end(prompt, tiny_lm):
    """The causal LM's loss on a padded batch is the mean over rows of -log softmax(answer) at
    each prompt's last position, computed alone (padding changes nothing)."""
    from trainers.coreb_reranker_trainer import YesNoCollator

    seqs = prompt.supervised(PAIRS, T2C, ANSWERS, max_length=256)
    with torch.no_grad():
        loss = tiny_lm(**YesNoCollator(prompt)(seqs)).loss
        expected = []
        for seq in seqs:
            prompt_ids = torch.tensor([seq["input_ids"][:-1]])
            logits = tiny_lm(input_ids=prompt_ids).logits[0, -1]
            expected.append(-torch.log_softmax(logits.float(), -1)[seq["input_ids"][-1]])
    torch.testing.assert_close(loss, torch.stack(expected).mean(), atol=1e-5, rtol=1e-5)


def test_tokenize_keeps_row_order_across_instructions(prompt):
    from trainers.coreb_reranker_trainer import tokenize

    instructions = [T2C, C2C, T2C]
    rows = [
        {"query": q, "document": d, "answer": a, "instruction": i}
        for (q, d), a, i in zip(PAIRS, ANSWERS, instructions, strict=True)
    ]
    data = tokenize(rows, prompt, 256)
    assert len(data) == len(rows)
    for i, row in enumerate(rows):
        (seq,) = prompt.supervised(
            [(row["query"], row["document"])], row["instruction"], [row["answer"]], 256
        )
        assert data[i]["input_ids"] == seq["input_ids"]
        assert data[i]["labels"] == seq["labels"]
        assert data[i]["length"] == len(seq["input_ids"])
