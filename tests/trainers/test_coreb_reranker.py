"""The CoREB-Reranker trainer on a tiny model (CPU, seconds per step): what training changes
(the adapter, never the base), resume, train/serve identity through ``coreb evaluate``, the
checkpoint contents, the config's checks, the CLI and the shipped configs.

One 4-step run (``trained``, tests/trainers/conftest.py) is shared by the tests that read its
output; the resume test and the CLI test train on their own (2 + 2 steps, 1 step).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path

import pytest

from coreb_toolkit.cli.main import main
from tests.trainers.conftest import MAX_LENGTH, TRAIN_RELEASE

torch = pytest.importorskip("torch")
pytest.importorskip("trl", reason="needs pip install coreb-toolkit[train]")
safetensors_torch = pytest.importorskip("safetensors.torch")

REPO = Path(__file__).resolve().parents[2]
ADAPTER = "adapter_model.safetensors"
#: the files that make a folder a servable, documented checkpoint
CHECKPOINT_FILES = (
    "adapter_config.json",
    ADAPTER,
    "coreb_reranker.json",
    "training_config.json",
    "data_report.json",
    "disjointness_report.json",
    "training_curves.png",
)


def adapter(folder: Path) -> dict[str, torch.Tensor]:
    return safetensors_torch.load_file(str(folder / ADAPTER))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- what training changes ----------------------------------------------------------------
def test_training_moves_the_lora_weights_and_no_base_weight(trained):
    after = trained.model.state_dict()
    lora = {k for k in after if ".lora_" in k}
    assert lora, "no LoRA module in the trained model"
    seen = set()
    for name, before in trained.before.items():
        # a wrapped linear layer keeps its weight as <module>.base_layer.weight
        module, _, leaf = name.rpartition(".")
        now = name if name in after else f"{module}.base_layer.{leaf}"
        assert now in after, f"{name} is gone from the trained model"
        assert torch.equal(after[now], before), f"base weight {name} changed"
        seen.add(now)
    assert set(after) - seen == lora  # nothing but the adapter was added
    trainable = {n for n, p in trained.model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_" in n for n in trainable)
    saved = adapter(trained.output)
    lora_b = {k: v for k, v in saved.items() if "lora_B" in k}
    assert lora_b and all(v.abs().sum() > 0 for v in lora_b.values()), "a lora_B is still zero"


def test_all_linear_means_every_linear_layer_but_the_head(trained):
    import transformers

    base = transformers.AutoModelForCausalLM.from_pretrained(trained.config.model_name_or_path)
    linear = {
        name
        for name, module in base.named_modules()
        if isinstance(module, torch.nn.Linear) and name != "lm_head"
    }
    adapted = {k.split(".lora_A")[0] for k in adapter(trained.output) if ".lora_A" in k}
    # PEFT's saved names: base_model.model.<module>.lora_A.weight
    assert {a.removeprefix("base_model.model.") for a in adapted} == linear
    cfg = json.loads((trained.output / "adapter_config.json").read_text())
    assert (cfg["r"], cfg["lora_alpha"], cfg["lora_dropout"]) == (16, 16, 0.05)


class Interrupt(Exception):
    """Raised by :class:`InterruptAfterSave`: the process dies right after a checkpoint."""


def interrupt_after_save(step: int):
    from transformers import TrainerCallback

    class InterruptAfterSave(TrainerCallback):
        # runs after the trainer's own save and the checkpoint-extras callback (list order)
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == step:
                raise Interrupt(step)

    return InterruptAfterSave()


def test_resume_equals_an_uninterrupted_run(trained, make_config, tmp_path):
    """Run B has run A's config (max_steps=4: the same learning-rate schedule) and dies right
    after saving checkpoint-2, the way a killed job leaves its folder; a fresh call resumes it
    from checkpoint-2 (weights, optimizer, scheduler, RNG state, the sampler's position: the
    group_by_length data order) and must end where A ended."""
    from trainers.coreb_reranker_trainer import train_coreb_reranker

    assert trained.config.train_sampling_strategy == "group_by_length"
    out = tmp_path / "b"
    with pytest.raises(Interrupt):
        train_coreb_reranker(make_config(out), callbacks=[interrupt_after_save(2)])
    assert (out / "checkpoint-2" / ADAPTER).is_file()
    assert not (out / "checkpoint-4").exists() and not (out / ADAPTER).exists()
    result = train_coreb_reranker(
        make_config(out, resume_from_checkpoint=str(out / "checkpoint-2"))
    )
    assert (result.start_step, result.steps_trained, result.global_step) == (2, 2, 4)
    assert (trained.result.start_step, trained.result.steps_trained) == (0, 4)
    a, b = adapter(trained.output), adapter(out)
    assert a.keys() == b.keys()
    for name in a:
        # exact on CPU in practice; the tolerance allows for kernels that reduce differently
        torch.testing.assert_close(b[name], a[name], atol=1e-7, rtol=1e-6, msg=name)
    # the data order too: the same losses at steps 3 and 4
    losses_a = [e["loss"] for e in trained_log(trained.output) if e.get("step") in (3, 4)]
    losses_b = [e["loss"] for e in trained_log(out) if e.get("step") in (3, 4)]
    assert len(losses_a) == 2 and losses_b == pytest.approx(losses_a, abs=1e-6)


def test_non_finite_weights_stop_the_run_naming_the_adapter_weight(make_config, tmp_path):
    from transformers import TrainerCallback

    from trainers.coreb_reranker_trainer import train_coreb_reranker

    class Poison(TrainerCallback):
        def on_optimizer_step(self, args, state, control, model=None, **kwargs):
            weight = next(p for p in model.parameters() if p.requires_grad)
            with torch.no_grad():
                weight.view(-1)[0] = float("inf")

    out = tmp_path / "poisoned"
    with pytest.raises(ValueError, match=r"after step 1: parameter '[\w.]+lora_\w\.[\w.]+' has 1 "
                       r"non-finite"):  # fmt: skip
        train_coreb_reranker(make_config(out, max_steps=2, save_steps=1), callbacks=[Poison()])
    assert not (out / "checkpoint-1").exists() and not (out / ADAPTER).exists()


def test_resume_refuses_changed_examples(trained, make_config, tmp_path):
    from trainers.common import TrainingData
    from trainers.coreb_reranker_trainer import build_training_data, train_coreb_reranker

    checkpoint = trained.output / "checkpoint-2"
    saved = json.loads((checkpoint / "data_report.json").read_text())["fingerprint"]
    data = build_training_data(trained.config)
    assert data.fingerprint == saved  # a rebuild from the same config is the same data
    changed = TrainingData(data.train[1:], data.validation, data.report, data.disjointness)
    with pytest.raises(ValueError, match="training examples changed since that checkpoint"):
        train_coreb_reranker(
            make_config(tmp_path / "c", resume_from_checkpoint=str(checkpoint)), data=changed
        )


def trained_log(folder: Path) -> list[dict]:
    return [e for e in json.loads((folder / "log_history.json").read_text()) if "loss" in e]


# -- one prompt for training and serving --------------------------------------------------
def test_validation_scores_equal_coreb_evaluate_and_the_published_prompt(
    trained, tiny_dataset, tmp_path
):
    import peft
    import transformers

    from eval_metrics.trec_io import read_run
    from reranker.instructions import instruction_for
    from tests.trainers.tiny import published_prompt_ids, yes_minus_no

    rows = read_jsonl(trained.output / "validation_scores.jsonl")
    assert rows
    assert any(abs(r["after"] - r["before"]) > 1e-4 for r in rows), "training changed no score"
    out = tmp_path / "evaluate"
    argv = ["evaluate", "--dataset", str(tiny_dataset), "--model", "bm25", "--reranker",
            str(trained.output), "--top-k", "100", "--rerank-top-k", "100",
            "--releases", TRAIN_RELEASE, "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    (reranked,) = [p for p in out.iterdir() if "+" in p.name]
    runs = {p.stem: read_run(p) for p in (reranked / TRAIN_RELEASE / "runs").glob("*.trec")}
    compared = 0
    for row in rows:
        score = runs.get(row["subtask"], {}).get(row["query_id"], {}).get(row["doc_id"])
        if score is not None:
            assert score == pytest.approx(row["after"], abs=1e-5), row
            compared += 1
    # bm25's top 100 of the tiny corpus holds every validation pair
    assert compared == len(rows), f"only {compared} of {len(rows)} pairs were reranked"

    for row in rows:
        assert row["instruction"] == instruction_for(row["subtask"])
    # the saved adapter (loaded by PEFT itself) on the Qwen3-Reranker prompt as its model card
    # publishes it: P(yes) = sigmoid(logit(yes) - logit(no)), the score the trainer wrote
    model = peft.AutoPeftModelForCausalLM.from_pretrained(str(trained.output)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(trained.output))
    served_length = MAX_LENGTH - 1  # the prompt alone: the training sequence less its answer
    by_hand = []
    for row in rows:
        ids = published_prompt_ids(tokenizer, row["instruction"], row["query"], row["document"])
        if len(ids) <= served_length:  # a longer one was cut: no published text to compare
            by_hand.append((1 / (1 + math.exp(-yes_minus_no(model, tokenizer, ids))), row))
    assert len(by_hand) >= 3, "too few validation pairs fit uncut"
    for p_yes, row in by_hand:
        assert row["after"] == pytest.approx(p_yes, abs=1e-5), row


# -- what a checkpoint holds --------------------------------------------------------------
def test_validation_never_counts_a_nan_score_right():
    from trainers.coreb_reranker_trainer import validation_metrics

    nan = float("nan")
    rows = [{"answer": "no"}, {"answer": "yes"}, {"answer": "no"}]
    metrics = validation_metrics(rows, [nan, 0.9, 0.2])
    assert metrics["accuracy"] == pytest.approx(2 / 3)  # the NaN "no" is wrong, not right
    assert metrics["roc_auc"] == pytest.approx(0.5)  # the yes wins its pair with 0.2, not NaN's


def test_checkpoints_and_the_output_folder_hold_the_servable_files(trained, tiny_dataset):
    config = trained.config
    folders = [trained.output / "checkpoint-2", trained.output / "checkpoint-4", trained.output]
    for folder in folders:
        for name in CHECKPOINT_FILES:
            assert (folder / name).is_file(), f"{folder.name} lacks {name}"
        manifest = json.loads((folder / "coreb_reranker.json").read_text())
        assert manifest["base_model"] == config.model_name_or_path
        assert manifest["options"]["max_length"] == 255  # 256-token sequences less the answer
        saved = json.loads((folder / "training_config.json").read_text())
        assert (saved["lora_r"], saved["max_steps"], saved["max_length"]) == (16, 4, 256)
        assert saved["train_sources"] == [f"coreb:{tiny_dataset}@release_v2602"]
        # what was checked against which eval source: the fixture's v2602 (P8, P9) against
        # v2603 (P1, P2), with the paper's defaults: no problem shared, no near duplicate
        report = json.loads((folder / "disjointness_report.json").read_text())
        assert report["eval_sources"] == [f"{tiny_dataset}@release_v2603"]
        assert (report["shared_problems"], report["near_duplicates"]) == ([], [])
        assert (report["train_problems"], report["eval_problems"]) == (2, 2)
        assert (report["ngram"], report["max_overlap"], report["action"]) == (10, 0.2, "error")
    out = trained.output
    for folder in folders:
        png = (folder / "training_curves.png").read_bytes()
        # the PNG signature, then the IHDR chunk: a width and a height (RFC 2083)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
        width, height = struct.unpack(">II", png[16:24])
        assert width >= 100 and height >= 100
    for name in ("validation_scores.jsonl", "validation_metrics.json", "log_history.json"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "validation_metrics.json").read_text())
    assert (
        metrics["before"]["pairs"]
        == metrics["after"]["pairs"]
        == trained.result.validation_examples
    )


def test_examples_are_saved_as_datasets_and_fingerprinted(trained):
    import datasets

    out = trained.output
    splits = {
        split: datasets.Dataset.from_parquet(str(out / "examples" / f"{split}.parquet"))
        for split in ("train", "validation")
    }
    assert len(splits["train"]) == trained.result.train_examples > 0
    assert len(splits["validation"]) == trained.result.validation_examples > 0
    report = json.loads((out / "data_report.json").read_text())
    assert report["train"]["total"] == len(splits["train"])
    # the fingerprint is the SHA-256 of the examples as saved, in order (recomputed here)
    digest = hashlib.sha256()
    for split in ("train", "validation"):
        for row in splits[split]:
            digest.update(json.dumps(row, sort_keys=True, ensure_ascii=False).encode())
            digest.update(b"\n")
        digest.update(b"\x00")
    assert report["fingerprint"] == digest.hexdigest()
    # problem-level split: no problem on both sides
    problems = {s: set(d["source_problem_id"]) for s, d in splits.items()}
    assert problems["train"] and problems["validation"]
    assert not problems["train"] & problems["validation"]


# -- the config's checks ------------------------------------------------------------------
BAD_VALUES = [
    ("lora_r", 0),
    ("lora_dropout", 1.5),
    ("near_duplicate_action", "x"),
    ("max_length", 4),
    ("packing", True),
    ("main_tasks", ["x"]),
    ("validation_fraction", 1.0),
    ("easy_negatives", -1),
]


@pytest.mark.parametrize(("name", "value"), BAD_VALUES)
def test_a_bad_config_value_is_an_error_naming_the_field(name, value, tiny_model, tmp_path):
    from trainers.coreb_reranker_config import CorebRerankerConfig

    with pytest.raises(ValueError, match=rf"CorebRerankerConfig\.{name}\b"):
        CorebRerankerConfig(
            output_dir=str(tmp_path), model_name_or_path=str(tiny_model), **{name: value}
        )


def test_bf16_on_a_machine_without_it_is_an_error_naming_the_field(tiny_model, tmp_path):
    from trainers.base_config import bf16_supported
    from trainers.coreb_reranker_config import CorebRerankerConfig

    if bf16_supported():
        pytest.skip("this machine trains in bf16")
    with pytest.raises(ValueError, match=r"CorebRerankerConfig\.bf16=True: .*leave bf16 unset"):
        CorebRerankerConfig(output_dir=str(tmp_path), model_name_or_path=str(tiny_model), bf16=True)


def no_training(monkeypatch) -> list:
    """Replace the run by a recorder: the CLI tests parse, they do not train."""
    import trainers.coreb_reranker_trainer as trainer

    seen: list = []

    def record(config, **kwargs):
        seen.append(config)
        return trainer.TrainResult(Path(config.output_dir), 0, 0, 0, 0.0)

    monkeypatch.setattr(trainer, "train_coreb_reranker", record)
    return seen


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--lora_r", "0"], "CorebRerankerConfig.lora_r"),
        (["--lora_dropout", "1.5"], "CorebRerankerConfig.lora_dropout"),
        (["--max_length", "4"], "CorebRerankerConfig.max_length"),
        (["--packing", "true"], "CorebRerankerConfig.packing"),
        (["--main_tasks", "x"], "CorebRerankerConfig.main_tasks"),
        (["--near_duplicate_action", "x"], "--near_duplicate_action"),
        (["--learning_rate", "inf"], "CorebRerankerConfig.learning_rate=inf: must be a finite"),
        (["--num_train_epochs", "0"], "CorebRerankerConfig.num_train_epochs=0.0: trains no"),
    ],
)
def test_a_bad_flag_value_exits_2_naming_the_field(flags, named, monkeypatch, capsys, tmp_path):
    seen = no_training(monkeypatch)
    with pytest.raises(SystemExit) as exit_:
        main(["train", "reranker", "--output_dir", str(tmp_path), *flags])
    assert exit_.value.code == 2
    assert named in capsys.readouterr().err
    assert not seen


# -- the command line ---------------------------------------------------------------------
def test_yaml_values_are_defaults_flags_override_and_env_is_set(monkeypatch, tmp_path):
    seen = no_training(monkeypatch)
    monkeypatch.setenv("COREB_TRAIN_TEST_VAR", "unset")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "env:\n  COREB_TRAIN_TEST_VAR: from-yaml\n"
        f"output_dir: {tmp_path / 'ckpt'}\n"
        "max_steps: 10\nlora_r: 8\nlearning_rate: 2.0e-4\n"
        "train_sources: [coreb:somewhere@release_v2602]\n"
    )
    assert main(["train", "reranker", "--config", str(cfg), "--max_steps", "3"]) == 0
    (config,) = seen
    assert config.max_steps == 3  # the flag wins
    assert config.lora_r == 8 and config.learning_rate == 2e-4  # the file's values
    assert config.train_sources == ["coreb:somewhere@release_v2602"]
    assert config.output_dir == str(tmp_path / "ckpt")
    assert config.warmup_steps == 100  # untouched: the paper's default
    import os

    assert os.environ["COREB_TRAIN_TEST_VAR"] == "from-yaml"


def test_an_unknown_yaml_key_is_an_error_naming_it(monkeypatch, capsys, tmp_path):
    seen = no_training(monkeypatch)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("lora_rank: 8\n")
    with pytest.raises(SystemExit) as exit_:
        main(["train", "reranker", "--config", str(cfg)])
    assert exit_.value.code == 2
    assert "lora_rank" in capsys.readouterr().err
    assert not seen


def test_help_lists_the_fields_and_an_example(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["train", "reranker", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--output_dir", "--train_sources", "--eval_sources", "--lora_r",
                 "--max_steps", "--resume_from_checkpoint", "--config"):  # fmt: skip
        assert flag in text, flag
    assert "coreb train reranker --config" in text  # an example


def test_a_tiny_run_through_the_cli_writes_a_servable_adapter(tiny_values, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["train", "reranker", "--output_dir", str(out), "--max_steps", "1",
            "--save_strategy", "no", "--validation_fraction", "0", "--plot", "false"]  # fmt: skip
    for key in ("model_name_or_path", "max_length", "per_device_train_batch_size",
                "report_to", "disable_tqdm", "seed"):  # fmt: skip
        argv += [f"--{key}", str(tiny_values[key])]
    argv += ["--train_sources", *tiny_values["train_sources"]]
    argv += ["--eval_sources", *tiny_values["eval_sources"]]
    assert main(argv) == 0
    assert "trained 1 steps" in capsys.readouterr().out
    for name in CHECKPOINT_FILES:
        assert (out / name).is_file() == (name != "training_curves.png"), name  # --plot false
    # no validation split asked for: no scores, no validation examples
    assert not (out / "validation_scores.jsonl").exists()
    assert (out / "examples" / "train.parquet").is_file()
    assert not (out / "examples" / "validation.parquet").exists()


def test_training_on_an_evaluation_release_is_refused(make_config, tiny_dataset, tmp_path):
    from trainers.coreb_reranker_trainer import train_coreb_reranker
    from trainers.decontamination import ContaminationError

    config = make_config(tmp_path / "x", eval_sources=[f"{tiny_dataset}@{TRAIN_RELEASE}"])
    with pytest.raises(ContaminationError, match=r"P8|P9"):
        train_coreb_reranker(config)
    assert not (tmp_path / "x").exists()  # refused before anything was written


# -- the shipped configs ------------------------------------------------------------------
def test_the_shipped_config_is_the_papers_run(monkeypatch):
    import yaml

    from trainers.base_config import bf16_supported

    seen = no_training(monkeypatch)
    path = REPO / "trainers" / "configs" / "coreb_reranker_qwen3_4b.yaml"
    # bf16, as the paper trained, where the machine has it (parsing here, on any machine)
    assert yaml.safe_load(path.read_text()).get("bf16") in (True, None)
    cpu = [] if bf16_supported() else ["--bf16", "false"]
    assert main(["train", "reranker", "--config", str(path), *cpu]) == 0
    (config,) = seen
    assert config.model_name_or_path == "Qwen/Qwen3-Reranker-4B"
    assert config.learning_rate == 1e-5
    assert config.warmup_steps == 100
    assert config.lr_scheduler_type == "linear"
    assert config.weight_decay == 0.01
    assert config.num_train_epochs == 2
    assert config.per_device_train_batch_size == 12
    assert config.gradient_accumulation_steps == 1
    assert config.max_length == 4096
    assert (config.lora_r, config.lora_alpha, config.lora_dropout) == (16, 16, 0.05)
    assert config.lora_target_modules == ["all-linear"]
    assert config.activation_checkpointing is True
    assert config.optim.startswith("adamw")
    assert (config.adam_beta1, config.adam_beta2, config.adam_epsilon) == (0.9, 0.999, 1e-8)
    assert (config.positive_copies, config.easy_negatives, config.hard_negatives) == (2, 1, 1)
    assert config.train_sources == ["coreb:coreb@release_v2602"]
    assert config.eval_sources == ["coreb@release_v2603"]


@pytest.mark.parametrize(
    ("name", "kind", "processes"),
    [("single_gpu", "NO", 1), ("ddp", "MULTI_GPU", 8), ("deepspeed_zero2", "DEEPSPEED", 8)],
)
def test_the_accelerate_configs_load_as_accelerate_reads_them(name, kind, processes):
    pytest.importorskip("accelerate")
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(
        str(REPO / "trainers" / "configs" / "accelerate" / f"{name}.yaml")
    )
    assert str(config.distributed_type).rsplit(".", 1)[-1] == kind
    assert config.num_processes == processes
    if kind == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] == 2
