"""The CoREB-Reranker's loss from the answer position alone equals the loss over every position
(the model's own, and TRL's), in value and in gradient, on the same batch."""

from __future__ import annotations

import pytest

from trainers.common import load_base
from trainers.coreb_reranker_trainer import (
    YesNoCollator,
    answer_token_loss,
    build_training_data,
    make_trainer,
    tokenize,
)


@pytest.fixture(scope="module")
def setup(make_config, tmp_path_factory):
    import torch

    from reranker.prompt import YesNoPrompt

    config = make_config(tmp_path_factory.mktemp("loss") / "out")
    data = build_training_data(config)
    model, tokenizer = load_base(config)
    torch.manual_seed(0)
    with torch.no_grad():  # a random head, so that yes/no are not the model's only guesses
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    prompt = YesNoPrompt.for_tokenizer(tokenizer, model.config.model_type)
    rows = data.train[:6]
    features = tokenize(rows, prompt, config.max_length)
    batch = YesNoCollator(prompt)([features[i] for i in range(len(rows))])
    lengths = {len(f["input_ids"]) for f in features}
    assert len(lengths) > 1, "the batch must be left-padded to test the answer position"
    return {"config": config, "model": model, "tokenizer": tokenizer, "prompt": prompt,
            "batch": batch, "data": data}  # fmt: skip


def _grads(model, loss) -> dict:
    model.zero_grad()
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_answer_loss_equals_the_models_full_logits_loss_and_gradient(setup):
    import torch

    model, batch = setup["model"], setup["batch"]
    full = model(**batch, use_cache=False)  # labels given: logits at every position, HF's loss
    assert full.logits.shape[1] == batch["input_ids"].shape[1]
    ours, outputs = answer_token_loss(model, batch)
    assert outputs.logits.shape[:2] == (batch["input_ids"].shape[0], 1)  # one position a row
    assert abs(ours.item() - full.loss.item()) < 1e-6
    g_full, g_ours = _grads(model, full.loss), _grads(model, answer_token_loss(model, batch)[0])
    assert g_full.keys() == g_ours.keys() and g_full
    for name in g_full:
        torch.testing.assert_close(g_ours[name], g_full[name], atol=1e-6, rtol=1e-5, msg=name)
    # gradient accumulation: the sum over answer tokens divided by the count given
    n = torch.tensor(11)
    ours, _ = answer_token_loss(model, batch, num_items_in_batch=n)
    full = model(**batch, use_cache=False, num_items_in_batch=n).loss
    assert abs(ours.item() - full.item()) < 1e-6


def test_answer_loss_equals_trls_loss_in_the_trainer(setup, tmp_path):
    import copy

    import torch

    losses = {}
    for answer_only in (False, True):
        config = copy.copy(setup["config"])
        config.answer_only_loss = answer_only
        config.output_dir = str(tmp_path / str(answer_only))
        model = copy.deepcopy(setup["model"])
        train_set = tokenize(setup["data"].train[:6], setup["prompt"], config.max_length)
        trainer = make_trainer(config, model, setup["tokenizer"], setup["prompt"], train_set, None)
        trainer.model.train()
        batch = {k: v.clone() for k, v in setup["batch"].items()}
        loss = trainer.compute_loss(trainer.model, batch)
        grads = _grads(trainer.model, loss)
        losses[answer_only] = (loss.item(), grads)
    (full, g_full), (ours, g_ours) = losses[False], losses[True]
    assert abs(full - ours) < 1e-6
    assert g_full.keys() == g_ours.keys() and all("lora" in n for n in g_full)
    for name in g_full:
        torch.testing.assert_close(g_ours[name], g_full[name], atol=1e-6, rtol=1e-5, msg=name)


def test_a_row_without_a_label_counts_nothing(setup):
    batch = {k: v.clone() for k, v in setup["batch"].items()}
    batch["labels"][0] = -100
    full = setup["model"](**batch, use_cache=False).loss
    ours, _ = answer_token_loss(setup["model"], batch)
    assert abs(ours.item() - full.item()) < 1e-6
