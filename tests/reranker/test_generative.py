"""The generative yes/no reranker on SmolLM2-135M (loaded once per session, ~20 s).

Expected values are computed here from the model's own logits, not copied from a run.
"""

from __future__ import annotations

import copy
import math
import sys

import pytest

from reranker.generative import (
    QWEN3_PREFIX,
    QWEN3_SUFFIX,
    SYSTEM_PROMPT,
    USER_TEMPLATE,
    GenerativeReranker,
    answer_token_id,
    chat_prefix_suffix,
    common_prefix_length,
)
from tests.reranker.conftest import PAIRS
from tests.reranker.test_qwen3_parity import CARD_PREFIX, CARD_SUFFIX

torch = pytest.importorskip("torch", reason="needs pip install coreb-toolkit[models]")
INSTRUCTION = "Given a natural language programming task, retrieve code that solves it."
#: Several documents per query, as ``rank`` scores them, plus two queries with one document.
RANKED = [
    ("reverse a string", "def rev(s):\n    return s[::-1]\n"),
    ("sort a list of integers", "def f(xs):\n    return sorted(xs)\n"),
    ("reverse a string", "def rev(s):\n" + "    pass\n" * 30 + "    return s[::-1]"),
    ("reverse a string", "print(1)"),
    ("sort a list of integers", "xs.sort()"),
    ("add two numbers", "def add(a, b):\n    return a + b\n"),
    ("reverse a string", "s = input()\nprint(''.join(reversed(s)))"),
    ("parse json from a file", "import json\n\ndef load(p):\n    return json.load(open(p))\n"),
]


def test_prompt_is_the_chat_template_around_the_qwen3_user_message(smollm2):
    tok = smollm2.tokenizer
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(instruction="I", query="Q", document="D")},
    ]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = smollm2.encode_pair("Q", "D", "I")
    assert tok.decode(ids) == rendered + "<think>\n\n</think>\n\n"


def test_qwen3_uses_the_model_card_literals(smollm2):
    # the Qwen3-Reranker card's strings, written out literally in test_qwen3_parity (not ours)
    assert chat_prefix_suffix(smollm2.tokenizer, "qwen3") == (CARD_PREFIX, CARD_SUFFIX)
    assert QWEN3_PREFIX == CARD_PREFIX
    assert QWEN3_SUFFIX == CARD_SUFFIX


def test_score_is_the_softmax_of_the_yes_no_logits(smollm2):
    tok = smollm2.tokenizer
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    for query, doc in PAIRS[:3]:
        ids = smollm2.encode_pair(query, doc, INSTRUCTION)
        with torch.no_grad():
            logits = smollm2.model(torch.tensor([ids])).logits[0, -1]
        ly, ln = float(logits[yes]), float(logits[no])
        expected = math.exp(ly) / (math.exp(ly) + math.exp(ln))
        (got,) = smollm2.score([(query, doc)], instruction=INSTRUCTION)
        assert got == pytest.approx(expected, abs=1e-5)


def test_truncation_cuts_only_the_document(smollm2):
    smollm2.max_length = 200
    huge = "def f(x):\n" + "    x = x + 1\n" * 5000
    ids = smollm2.encode_pair("increment x many times", huge, INSTRUCTION)
    assert len(ids) == 200
    assert ids[: len(smollm2.prefix_ids)] == smollm2.prefix_ids
    assert ids[-len(smollm2.suffix_ids) :] == smollm2.suffix_ids
    text = smollm2.tokenizer.decode(ids)
    assert f"<Instruct>: {INSTRUCTION}\n<Query>: increment x many times\n<Document>: def f" in text
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    # the score of the huge document is the score of its kept part
    kept = smollm2.encode_pair("increment x many times", huge[:2000], INSTRUCTION)
    assert kept == ids
    a, b = smollm2.score(
        [("increment x many times", huge), ("increment x many times", huge[:2000])]
    )
    assert a == pytest.approx(b, abs=1e-6)


def test_a_query_longer_than_max_length_is_cut_as_the_official_usage_does(smollm2, caplog):
    smollm2.max_length = 100
    long = "word " * 200
    pairs = [(long, "def f(): pass"), (long, "def g(): return 1"), ("short", "def h(): pass")]
    with caplog.at_level("WARNING", logger="reranker.prompt"):
        scores = smollm2.score(pairs)
    assert "2 of 3 prompts" in caplog.text and "query was cut" in caplog.text
    ids = smollm2.encode_pairs(pairs[:2])
    assert len(ids[0]) == 100 and ids[0] == ids[1]  # both documents left out entirely
    assert scores[0] == pytest.approx(scores[1], abs=1e-6) and all(0 < s < 1 for s in scores)
    alone = smollm2.score([pairs[0]])[0]
    assert alone == pytest.approx(scores[0], abs=1e-5)
    # a training sequence is never made of a prompt whose document cannot be seen
    with pytest.raises(ValueError, match=r"without the document takes .* max_length=100"):
        smollm2.prompt.supervised([pairs[0]], "judge", ["yes"], 100)


def test_empty_document_is_an_error(smollm2):
    with pytest.raises(ValueError, match="empty document at index 1"):
        smollm2.score([("q", "def f(): pass"), ("q", "")])


def test_batched_equals_one_by_one_and_batches_respect_the_budget(smollm2):
    smollm2.max_tokens_per_batch = 1500
    lengths = [len(smollm2.encode_pair(q, d)) for q, d in PAIRS]
    groups = smollm2.batches(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(PAIRS)))
    assert any(len(g) > 1 for g in groups)  # the test does batch
    assert all(len(g) == 1 or lengths[g[0]] * len(g) <= 1500 for g in groups)
    batched = smollm2.score(PAIRS)
    single = [smollm2.score([p])[0] for p in PAIRS]
    assert batched == pytest.approx(single, abs=1e-5)


def test_tokenizer_without_pad_token_still_batches(smollm2):
    tok = copy.deepcopy(smollm2.tokenizer)
    tok.pad_token = None
    assert tok.pad_token_id is None
    rr = GenerativeReranker(smollm2.model, tok, max_tokens_per_batch=100_000)
    assert rr.pad_id == tok.eos_token_id
    assert rr.score(PAIRS[:4]) == pytest.approx(smollm2.score(PAIRS[:4]), abs=1e-5)
    assert rr.score(RANKED) == pytest.approx(smollm2.score(RANKED), abs=1e-5)  # shared heads


def test_common_prefix_length():
    assert common_prefix_length([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert common_prefix_length([[7, 8, 9], [7, 8, 9]]) == 2  # every row keeps one id
    assert common_prefix_length([[1, 2], [3, 4]]) == 0


def test_share_groups_by_query_and_the_single_queries_together(smollm2):
    assert smollm2.share_groups(RANKED) == [[0, 2, 3, 6], [1, 4], [5, 7]]


class ForwardLog:
    """Records the input width and the cache length of every forward of a model."""

    def __init__(self, model, monkeypatch):
        self.calls = []
        inner = model.forward

        def forward(*args, **kwargs):
            cache = kwargs.get("cache", kwargs.get("past_key_values"))
            past = cache.get_seq_length() if cache is not None else 0
            self.calls.append((tuple(kwargs["input_ids"].shape), past))
            return inner(*args, **kwargs)

        monkeypatch.setattr(model, "forward", forward)


def test_shared_heads_score_as_whole_prompts(smollm2, monkeypatch):
    assert smollm2.shares_heads()  # else this test would not test the shared path
    smollm2.max_tokens_per_batch = 100_000
    log = ForwardLog(smollm2.model, monkeypatch)
    shared = smollm2.score(RANKED, instruction=INSTRUCTION)
    # one forward for the three groups' heads, one for the rest of the eight prompts
    (heads_shape, heads_past), (rest_shape, rest_past) = log.calls
    assert heads_shape[0] == 3 and heads_past == 0
    assert rest_shape[0] == len(RANKED) and rest_past == heads_shape[1]
    seqs = smollm2.encode_pairs(RANKED, INSTRUCTION)
    assert rest_shape[1] < max(len(s) for s in seqs)  # the heads were not run again
    single = [smollm2.score([p], instruction=INSTRUCTION)[0] for p in RANKED]
    assert shared == pytest.approx(single, abs=1e-5)
    smollm2._plain_cache = False  # as for a model whose cache cannot be shared
    assert smollm2.score(RANKED, instruction=INSTRUCTION) == pytest.approx(shared, abs=1e-5)


def test_shared_heads_within_a_small_budget(smollm2, monkeypatch):
    assert smollm2.shares_heads()
    smollm2.max_tokens_per_batch = 150
    log = ForwardLog(smollm2.model, monkeypatch)
    small = smollm2.score(RANKED, instruction=INSTRUCTION)
    # the heads come in more than one forward, the rest of the prompts in more than one batch
    assert sum(past == 0 for _, past in log.calls) > 1
    assert sum(past > 0 for _, past in log.calls) > 1
    smollm2.max_tokens_per_batch = 100_000
    assert small == pytest.approx(smollm2.score(RANKED, instruction=INSTRUCTION), abs=1e-5)


def test_cache_hit_runs_no_forward(smollm2, tmp_path, monkeypatch):
    smollm2.cache_dir = tmp_path
    first = smollm2.score(PAIRS[:3], instruction=INSTRUCTION)
    reopened = copy.copy(smollm2)
    reopened._cache = None  # read back from disk

    def no_forward(*args, **kwargs):
        raise AssertionError("the model ran on a cache hit")

    monkeypatch.setattr(reopened.model, "forward", no_forward)
    assert reopened.score(PAIRS[:3], instruction=INSTRUCTION) == first
    with pytest.raises(AssertionError, match="cache hit"):  # a new instruction is a miss
        reopened.score(PAIRS[:1], instruction="other")


def test_answer_token_must_be_single():
    class Splitting:
        def encode(self, text, add_special_tokens=False):
            return [1, 2]

    with pytest.raises(ValueError, match="'yes' to be a single token"):
        answer_token_id(Splitting(), "yes")


def test_model_without_lm_head_is_rejected(smollm2):
    with pytest.raises(ValueError, match="causal language model"):
        GenerativeReranker(smollm2.model.model, smollm2.tokenizer)


def test_missing_extra_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r"pip install coreb-toolkit\[models\]"):
        GenerativeReranker("any/model")


@pytest.fixture(scope="module")
def lora_adapter(smollm2_session, tmp_path_factory):
    peft = pytest.importorskip("peft", reason="needs pip install peft")
    model = peft.get_peft_model(
        copy.deepcopy(smollm2_session.model),
        peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], lora_alpha=8),
    )
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.05)  # a fresh adapter's B is zero: make it act
    path = tmp_path_factory.mktemp("lora")
    model.save_pretrained(path)
    return path


def test_lora_adapter_changes_scores_and_merge_matches(smollm2_session, lora_adapter):
    base = smollm2_session
    kwargs = {"max_tokens_per_batch": 4096}
    unmerged = GenerativeReranker(
        copy.deepcopy(base.model), base.tokenizer, adapter=lora_adapter, **kwargs
    )
    merged = GenerativeReranker(
        copy.deepcopy(base.model), base.tokenizer, adapter=lora_adapter, merge=True, **kwargs
    )
    pairs = PAIRS[:4]
    s_base, s_lora, s_merged = base.score(pairs), unmerged.score(pairs), merged.score(pairs)
    assert max(abs(a - b) for a, b in zip(s_base, s_lora, strict=True)) > 1e-3
    assert s_merged == pytest.approx(s_lora, abs=1e-4)
    assert unmerged.fingerprint() != base.fingerprint()


def test_adapter_without_peft_names_the_install(smollm2, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(ImportError, match="pip install"):
        GenerativeReranker(smollm2.model, smollm2.tokenizer, adapter=tmp_path)
