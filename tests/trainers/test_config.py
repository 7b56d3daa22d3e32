"""CorebRerankerConfig's distributed-CPU guard: processes started together on a machine without
a GPU form one gloo process group instead of N runs that each train alone."""

from __future__ import annotations

import pytest

pytest.importorskip("trl", reason="needs pip install coreb-toolkit[train]")


@pytest.fixture
def config(tmp_path):
    from trainers.config import CorebRerankerConfig

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
