"""The same ``coreb train reranker`` command under one process, two-process DDP (gloo) and
two-process DeepSpeed ZeRO-2, on the CPU, gives the same LoRA adapter at the same global batch.

Each run is the command users type, in a subprocess (``python -m coreb_toolkit.cli``, ``torchrun
--nproc_per_node 2 -m coreb_toolkit.cli``, ``accelerate launch --config_file ... -m
coreb_toolkit.cli``) on the tiny model of :mod:`tests.trainers.tiny`: 6 training examples, global
batch 2 (one process x 2, or two processes x 1), 2 steps. The comparison needs the runs to see
the same examples in the same steps: ``lora_dropout 0`` (dropout masks are drawn per process)
and ``train_sampling_strategy sequential`` (``group_by_length`` groups megabatches of the
per-process batch, so its order depends on the world size).

Tolerance: :data:`TOLERANCE`. The two-process runs differ from the one-process run by float32
rounding (the gradient is summed in another order; measured 1.5e-8 for DDP and ZeRO-2). One
AdamW step moves every LoRA-B element by about the learning rate (1e-3 here; LoRA-B starts at
zero), so a shard seen twice, a step without the all-reduce or a batch of the wrong size moves
the adapter by ~1e-3 (:func:`test_a_different_global_batch_is_caught`): 1e-6 sits between them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ACCELERATE_CONFIGS = REPO / "trainers" / "configs" / "accelerate"
BIN = Path(sys.executable).parent
TOLERANCE = 1e-6
LEARNING_RATE = 1e-3
TIMEOUT_S = 600


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(REPO),
        OMP_NUM_THREADS="1",
        MASTER_PORT=str(free_port()),
        DS_ACCELERATOR="cpu",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def train(launcher: list[str], args: list[str], out: Path) -> subprocess.CompletedProcess:
    """Run ``launcher + [-m coreb_toolkit.cli train reranker] + args``; fail with its output."""
    command = [*launcher, "-m", "coreb_toolkit.cli", "train", "reranker", *args]
    command += ["--output_dir", str(out)]
    try:
        done = subprocess.run(
            command, cwd=REPO, env=run_env(), capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr or ""
        tail = (stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr)[-6000:]
        pytest.fail(f"{' '.join(command)} ran past {TIMEOUT_S} s; stderr tail:\n{tail}")
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {done.returncode}\nstdout tail:\n{done.stdout[-3000:]}"
            f"\nstderr tail:\n{done.stderr[-6000:]}"
        )
    return done


def adapter(folder: Path) -> dict:
    from safetensors.torch import load_file

    path = folder / "adapter_model.safetensors"
    assert path.is_file(), f"no adapter in {folder}: {sorted(p.name for p in folder.iterdir())}"
    return load_file(str(path))


def max_abs_difference(a: dict, b: dict) -> float:
    assert a.keys() == b.keys(), f"adapter tensors differ: {sorted(a.keys() ^ b.keys())}"
    return max((a[k].double() - b[k].double()).abs().max().item() for k in a)


def last_epoch(folder: Path) -> float:
    history = json.loads((folder / "log_history.json").read_text(encoding="utf-8"))
    return [row["epoch"] for row in history if "loss" in row][-1]


@pytest.fixture(scope="module")
def common(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The training arguments every launcher gets (the per-process batch aside)."""
    from tests.trainers.tiny import write_tiny_dataset, write_tiny_model

    root = tmp_path_factory.mktemp("distributed")
    model = write_tiny_model(root / "model")
    hub = write_tiny_dataset(root / "data")
    return [
        "--model_name_or_path", str(model),
        "--train_sources", f"coreb:{hub}@release_v2602",
        "--eval_sources", f"{hub}@release_v2603",
        "--validation_fraction", "0.5",
        "--max_steps", "2",
        "--learning_rate", str(LEARNING_RATE),
        "--warmup_steps", "0",
        "--max_length", "256",
        "--lora_dropout", "0",
        "--train_sampling_strategy", "sequential",
        "--seed", "0",
        "--logging_steps", "1",
        "--save_strategy", "no",
        "--report_to", "none",
        "--disable_tqdm", "true",
        "--plot", "false",
        # AdamW divides each gradient element by its own running size: an element near zero
        # (|g| ~ eps) turns a rounding difference into a step of up to the learning rate. An
        # eps of 1e-3 keeps the steps linear in such elements, so the comparison is of the
        # gradients the processes agreed on, not of Adam's amplified rounding
        "--adam_epsilon", "1e-3",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def reference(common: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-process run: global batch 2 = 1 process x 2."""
    out = tmp_path_factory.mktemp("one_process") / "out"
    train([sys.executable], [*common, "--per_device_train_batch_size", "2"], out)
    weights = adapter(out)
    moved = max(t.abs().max().item() for k, t in weights.items() if "lora_B" in k)
    # LoRA-B starts at zero: the comparison is between trained adapters, not two zeros
    assert moved > 100 * TOLERANCE, f"2 steps moved LoRA-B by only {moved:.2e}"
    return out


def test_torchrun_ddp_equals_one_process(common: list[str], reference: Path, tmp_path: Path):
    torchrun = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port",
                str(free_port())]  # fmt: skip
    # no CPU flag: the config makes CPU processes one gloo group (else each trains alone)
    train(torchrun, [*common, "--per_device_train_batch_size", "1"], tmp_path)
    assert last_epoch(tmp_path) == pytest.approx(last_epoch(reference)), "not one process group"
    assert max_abs_difference(adapter(tmp_path), adapter(reference)) <= TOLERANCE


def test_accelerate_cpu_ddp_config_equals_one_process(
    common: list[str], reference: Path, tmp_path: Path
):
    launch = [str(BIN / "accelerate"), "launch", "--config_file",
              str(ACCELERATE_CONFIGS / "cpu_ddp.yaml"), "--main_process_port",
              str(free_port())]  # fmt: skip
    train(launch, [*common, "--per_device_train_batch_size", "1"], tmp_path)
    assert last_epoch(tmp_path) == pytest.approx(last_epoch(reference)), "not one process group"
    assert max_abs_difference(adapter(tmp_path), adapter(reference)) <= TOLERANCE


def test_deepspeed_zero2_equals_one_process(common: list[str], reference: Path, tmp_path: Path):
    pytest.importorskip("deepspeed", reason="the deepspeed extra is not installed")
    if not any(shutil.which(cxx) for cxx in ("c++", "g++")):
        # the first CPU run JIT-compiles DeepSpeed's shared-memory collectives (~1 min, cached)
        pytest.skip("no C++ compiler: DeepSpeed's CPU collectives are compiled on first use")
    launch = [str(BIN / "accelerate"), "launch", "--config_file",
              str(ACCELERATE_CONFIGS / "cpu_deepspeed_zero2.yaml"), "--main_process_port",
              str(free_port())]  # fmt: skip
    args = [*common, "--per_device_train_batch_size", "1"]  # gloo chosen by the config
    train(launch, [*args, "--save_strategy", "steps", "--save_steps", "2"], tmp_path)
    # ZeRO ran: the optimizer state is saved as one shard per process
    shards = sorted(p.name for p in (tmp_path / "checkpoint-2" / "global_step2").glob("zero_*"))
    assert shards == [f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt" for r in (0, 1)]
    assert last_epoch(tmp_path) == pytest.approx(last_epoch(reference)), "not one process group"
    assert max_abs_difference(adapter(tmp_path), adapter(reference)) <= TOLERANCE


def test_a_different_global_batch_is_caught(common: list[str], reference: Path, tmp_path: Path):
    """The tolerance can fail: one process at batch 1 (half the global batch) is far off."""
    train([sys.executable], [*common, "--per_device_train_batch_size", "1"], tmp_path)
    assert max_abs_difference(adapter(tmp_path), adapter(reference)) > 100 * TOLERANCE
