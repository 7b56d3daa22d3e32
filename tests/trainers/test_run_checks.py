"""The run's checks (trainers/run_checks.py) on a checkpoint folder written here as the Trainer
writes one (no training): every file a resume reads, damaged, is a ValueError naming the file;
non-finite weights and losses name the parameter and the step."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers", reason="needs pip install coreb-toolkit[train]")
safetensors_torch = pytest.importorskip("safetensors.torch")

FINGERPRINT = "f" * 64


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """``checkpoint-3``: the files ``transformers.Trainer`` and the trainers' extras save."""
    import numpy as np
    from transformers import TrainerState

    folder = tmp_path / "checkpoint-3"
    folder.mkdir()
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    torch.save(optimizer.state_dict(), folder / "optimizer.pt")
    torch.save(scheduler.state_dict(), folder / "scheduler.pt")
    rng = {"python": random.getstate(), "numpy": np.random.get_state(),
           "cpu": torch.random.get_rng_state()}  # fmt: skip
    torch.save(rng, folder / "rng_state.pth")
    safetensors_torch.save_file(model.state_dict(), str(folder / "model.safetensors"))
    state = TrainerState(global_step=3, max_steps=6, log_history=[{"loss": 1.0, "step": 3},
                         {"grad_norm": float("inf"), "step": 3}])  # fmt: skip
    state.save_to_json(str(folder / "trainer_state.json"))
    (folder / "data_report.json").write_text(json.dumps({"fingerprint": FINGERPRINT}))
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    return folder


class Data:
    fingerprint = FINGERPRINT


def test_a_checkpoint_as_the_trainer_writes_it_passes_and_gives_its_step(checkpoint):
    from trainers.run_checks import check_resumed_data

    # the log's Infinity (a gradient norm) is what the Trainer writes: not damage
    assert "Infinity" in (checkpoint / "trainer_state.json").read_text()
    assert check_resumed_data(checkpoint, Data()) == 3


def write_state(**changes):
    def change(path: Path) -> None:
        state = json.loads(path.read_text())
        state.update(changes)
        path.write_text(json.dumps(state))

    return change


def torch_save(value):
    return lambda path: torch.save(value, path)


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def folder_instead(path: Path) -> None:
    path.unlink()
    path.mkdir()


DAMAGE = [
    ("data_report.json", b'{"fingerprint": "\xff"}', r"data_report\.json: not UTF-8 text"),
    ("data_report.json", b"[" * 100_000 + b"]" * 100_000, r"data_report\.json: nested deeper"),
    ("data_report.json", b"[]", r"data_report\.json: a JSON array, not the JSON object"),
    ("data_report.json", b'{"fingerprint": ', r"data_report\.json: not JSON"),
    ("data_report.json", folder_instead, r"data_report\.json: not a regular file"),
    ("trainer_state.json", b'"state"', r"trainer_state\.json: a JSON string, not the JSON obj"),
    ("trainer_state.json", write_state(global_step=1_000_000_000),
     r"trainer_state\.json: global_step=1000000000 does not match the checkpoint \(the folder's "
     r"name says step 3, its own max_steps=6\)"),
    ("trainer_state.json", write_state(global_step="3"), r"global_step='3', not int"),
    ("trainer_state.json", write_state(log_history={"loss": 1}), r"log_history=\{'loss': 1\}"),
    ("trainer_state.json", write_state(log_history=[1]), r"log_history holds a non-object"),
    ("trainer_state.json", write_state(shadow=1), r"trainer_state\.json: unknown field 'shadow'"),
    ("optimizer.pt", b"\x00" * 64, r"optimizer\.pt: not a torch file the Trainer can load"),
    ("optimizer.pt", truncate, r"optimizer\.pt: not a torch file the Trainer can load"),
    ("optimizer.pt", torch_save([1, 2]), r"optimizer\.pt: holds list, not the state"),
    ("optimizer.pt", torch_save({"state": {}}), r"optimizer\.pt: holds no param_groups"),
    ("scheduler.pt", b"PK\x03\x04 not a zip", r"scheduler\.pt: not a torch file"),
    ("rng_state.pth", torch_save({"cpu": torch.zeros(1)}), r"rng_state\.pth: holds no python"),
    ("model.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{}", r"model\.safetensors: not a rea"),
    ("config.json", b"{'model_type': 1}", r"config\.json: not JSON"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "damage", "message"), DAMAGE)
def test_a_damaged_checkpoint_file_is_an_error_naming_it(name, damage, message, checkpoint):
    from trainers.run_checks import check_resumed_data

    path = checkpoint / name
    if isinstance(damage, bytes):
        path.write_bytes(damage)
    else:
        damage(path)
    with pytest.raises(ValueError, match=message) as err:
        check_resumed_data(checkpoint, Data())
    assert str(checkpoint) in str(err.value)


def test_missing_records_are_named(checkpoint, tmp_path):
    from trainers.run_checks import check_resumed_data

    with pytest.raises(ValueError, match=r"=.*missing: no such folder"):
        check_resumed_data(tmp_path / "missing", Data())
    (checkpoint / "trainer_state.json").unlink()
    with pytest.raises(ValueError, match=r"no trainer_state\.json there"):
        check_resumed_data(checkpoint, Data())
    (checkpoint / "data_report.json").unlink()
    with pytest.raises(ValueError, match=r"no data_report\.json there"):
        check_resumed_data(checkpoint, Data())


def test_non_finite_weights_name_the_parameter():
    from trainers.run_checks import check_finite_weights

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
    check_finite_weights(model, "after step 1")  # finite: nothing to say
    with torch.no_grad():
        model[1].weight[0, 1] = float("nan")
        model[0].bias[0] = float("inf")
    model[0].bias.requires_grad_(False)  # a frozen weight is not the run's to check
    with pytest.raises(ValueError, match=r"after step 1: parameter '1\.weight' has 1 non-finite"):
        check_finite_weights(model, "after step 1")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_loss_names_the_step_and_the_loss(value):
    from accelerate import Accelerator

    from trainers.run_checks import check_finite_loss

    accelerator = Accelerator(cpu=True)
    check_finite_loss(torch.tensor(0.5), accelerator, "step 3: the lambda loss")
    with pytest.raises(ValueError, match=rf"step 3: the lambda loss is not finite \({value}\)"):
        check_finite_loss(torch.tensor(value), accelerator, "step 3: the lambda loss")
