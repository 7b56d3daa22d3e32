"""The conventions every trainer config shares (trainers/base_config.py): the distributed-CPU guard
(processes started together on a machine without a GPU form one gloo process group instead of N
runs that each train alone), finite numbers and at least one step to train."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="needs pip install coreb-toolkit[train]")


@pytest.fixture
def config(tmp_path):
    from trainers.coreb_reranker_config import CorebRerankerConfig

    return CorebRerankerConfig(output_dir=str(tmp_path), report_to="none")


def test_one_process_is_left_alone(config, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    config.use_cpu = False
    config._cpu_process_group()
    assert config.use_cpu is False and config.ddp_backend is None


def test_several_cpu_processes_become_one_gloo_group(config, monkeypatch):
    import torch

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("ACCELERATE_USE_DEEPSPEED", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config.use_cpu = False
    config._cpu_process_group()
    assert config.use_cpu is True


def test_deepspeed_on_cpu_gets_the_gloo_backend_not_use_cpu(config, monkeypatch):
    import torch

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config.use_cpu = False
    config._cpu_process_group()
    assert config.ddp_backend == "gloo" and config.use_cpu is False


def test_gpus_are_left_alone(config, monkeypatch):
    import torch

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    config.use_cpu = False
    config._cpu_process_group()
    assert config.use_cpu is False and config.ddp_backend is None


CONFIGS = [("trainers.coreb_reranker_config", "CorebRerankerConfig"),
           ("trainers.synh_rank_config", "SynhRankConfig")]  # fmt: skip
NO_RUN = [
    ("learning_rate", float("nan"), "must be a finite number"),
    ("weight_decay", float("inf"), "must be a finite number"),
    ("max_grad_norm", -float("inf"), "must be a finite number"),
    ("num_train_epochs", -1.0, "trains no step: give a positive number of epochs"),
    ("num_train_epochs", 0.0, "trains no step: give a positive number of epochs"),
    ("max_steps", 0, "trains no step: give a positive number of steps, or -1"),
]


@pytest.mark.parametrize(("module", "name"), CONFIGS)
@pytest.mark.parametrize(("field", "value", "message"), NO_RUN)
def test_a_config_no_run_can_use_is_refused_naming_the_field(
    module, name, field, value, message, tmp_path
):
    import importlib

    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(ValueError, match=rf"{name}\.{field}={value!r}: {message}"):
        cls(output_dir=str(tmp_path), report_to="none", **{field: value})
    # epochs do not count where max_steps is given
    assert cls(output_dir=str(tmp_path), report_to="none", max_steps=5, num_train_epochs=0.0)
