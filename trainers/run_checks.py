"""What keeps a training run honest, for every trainer of this package: the checkpoint a resume
reads, finite losses and weights, and the steps a run really trains.

* **The checkpoint** (:func:`check_resumed_data`, before anything is loaded): every file a
  resume reads is read here first, and a damaged one is a ``ValueError`` naming the file and
  what is wrong with it: the JSON records (UTF-8, JSON, nesting, an object where one is
  expected; :func:`coreb_toolkit.untrusted.read_json`), ``trainer_state.json``'s fields and its
  step (the folder's ``checkpoint-N``, its own ``max_steps``), the torch files the Trainer
  loads (``optimizer.pt``, ``scheduler.pt``, ``scaler.pt``, ``rng_state*.pth``, read as the
  Trainer reads them, memory-mapped) and the safetensors headers; then the data's fingerprint.
  What only loading can tell (a state that does not fit the model) is named by
  :class:`GuardedTrainer`, whose checkpoint loaders turn any failure into a ``ValueError``
  naming the files they read.
* **Finite numbers**: :class:`GuardedTrainer` refuses a non-finite loss at the step it appears
  (every process agrees, so none waits for the others), and :func:`run_guard`'s callback
  refuses non-finite trainable weights at the start (a resume from broken weights) and after
  every optimizer step, before the Trainer can save them.
* **Steps**: the run must have a step to train (a resume past its ``max_steps`` trains none);
  the callback counts the steps trained, which is what a run records (not the step the
  checkpoint said it was at).

DeepSpeed and FSDP load their checkpoints their own way, past these loaders; ZeRO-3 and FSDP
shard the weights, so the weight check sees only this process's shard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coreb_toolkit.untrusted import read_json

DATA_REPORT = "data_report.json"
TRAINER_STATE = "trainer_state.json"
#: the torch files ``transformers.Trainer`` loads on a resume (``weights_only``), and what each
#: must hold: the keys of its mapping
TORCH_FILES = {
    "optimizer.pt": ("state", "param_groups"),
    "scheduler.pt": (),
    "scaler.pt": (),
    "pytorch_model.bin": (),
    "adapter_model.bin": (),
}
RNG_STATE = re.compile(r"rng_state(_\d+)?\.pth")
#: the fields of ``trainer_state.json`` the Trainer reads, by the types each may have (None:
#: null allowed); ``global_step`` and ``max_steps`` must be there
STATE_FIELDS: dict[str, tuple[type | None, ...]] = {
    "epoch": (int, float),
    "global_step": (int,),
    "max_steps": (int,),
    "logging_steps": (int, float),
    "eval_steps": (int, float),
    "save_steps": (int, float),
    "num_train_epochs": (int, float),
    "num_input_tokens_seen": (int,),
    "log_history": (list,),
    "train_batch_size": (int, None),
    "best_model_checkpoint": (str, None),
    "best_global_step": (int, None),
    "stateful_callbacks": (dict, None),
    "trial_params": (dict, None),
}


# -- the checkpoint -----------------------------------------------------------------------
def check_resumed_data(
    checkpoint: Path, data: Any, same: str = "train_sources and example options"
) -> int:
    """The step ``checkpoint`` was saved at, once every file a resume reads there is readable
    (:func:`check_checkpoint_files`) and the examples are those it was trained on (its
    ``data_report.json`` fingerprint: resuming would mix two data sets). ``data``: the run's
    :class:`~trainers.common.TrainingData`; ``same``: the options the message asks to
    keep. ``ValueError`` naming the file otherwise."""
    where = f"resume_from_checkpoint={checkpoint}"
    if not checkpoint.is_dir():
        raise ValueError(f"{where}: no such folder; resume from a checkpoint-N folder a run wrote")
    if not (checkpoint / DATA_REPORT).exists():
        raise ValueError(
            f"{where}: no {DATA_REPORT} there; resume from a checkpoint-N folder this trainer wrote"
        )
    step, records = check_checkpoint_files(checkpoint)
    saved = records[DATA_REPORT].get("fingerprint")
    if saved != data.fingerprint:
        raise ValueError(
            f"{where}: the training examples changed since that checkpoint (fingerprint "
            f"{str(saved)[:12]} there, {data.fingerprint[:12]} now); resume with the same "
            f"{same}, or start a new run"
        )
    return step


def read_record(path: Path, *, obj: bool = True) -> Any:
    """A checkpoint's JSON file (a JSON object unless ``obj`` is false; ``NaN`` / ``Infinity``
    taken, as the Trainer and ``write_json`` write them); ``ValueError`` naming the file and
    the damage."""
    try:
        value = read_json(path, nonfinite=True)
    except ValueError as err:
        raise ValueError(f"{err} (a damaged checkpoint: resume from another one)") from None
    if obj and not isinstance(value, dict):
        raise ValueError(
            f"{path}: a JSON {_json_type(value)}, not the JSON object this file holds (a "
            "damaged checkpoint: resume from another one)"
        )
    return value


def _json_type(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def check_checkpoint_files(checkpoint: Path) -> tuple[int, dict[str, Any]]:
    """Every file of ``checkpoint`` a resume reads, read first (see the module docstring);
    returns the step of its ``trainer_state.json`` and its JSON records by file name."""
    if not (checkpoint / TRAINER_STATE).exists():
        raise ValueError(
            f"resume_from_checkpoint={checkpoint}: no {TRAINER_STATE} there; resume from a "
            "checkpoint-N folder a run wrote"
        )
    records = {  # the Trainer's, the model's, ours
        path.name: read_record(path, obj=path.name in (TRAINER_STATE, DATA_REPORT))
        for path in sorted(checkpoint.glob("*.json"))
    }
    step = _check_state(checkpoint / TRAINER_STATE, records[TRAINER_STATE])
    for path in sorted(checkpoint.iterdir()):
        if path.name in TORCH_FILES or RNG_STATE.fullmatch(path.name):
            _check_torch_file(path, TORCH_FILES.get(path.name, ("python", "numpy", "cpu")))
        elif path.suffix == ".safetensors":
            _check_safetensors(path)
    return step, records


def _check_state(path: Path, state: dict[str, Any]) -> int:
    """``trainer_state.json``'s fields of the types the Trainer reads, and its step: a
    non-negative integer, the ``N`` of a ``checkpoint-N`` folder, within its own ``max_steps``."""
    from dataclasses import fields

    from transformers import TrainerState

    unknown = sorted(set(state) - {f.name for f in fields(TrainerState)})
    if unknown:
        raise ValueError(
            f"{path}: unknown field {unknown[0]!r} (a damaged checkpoint, or one of another "
            "transformers version): resume from another one"
        )
    for name in ("global_step", "max_steps"):
        if name not in state:
            raise ValueError(f"{path}: no {name} (a damaged checkpoint)")
    for name, types in STATE_FIELDS.items():
        value = state.get(name)
        if name not in state or (value is None and None in types):
            continue
        if isinstance(value, bool) or not isinstance(value, tuple(t for t in types if t)):
            wanted = " or ".join("null" if t is None else t.__name__ for t in types)
            raise ValueError(f"{path}: {name}={_short(value)}, not {wanted} (a damaged checkpoint)")
    if not all(isinstance(entry, dict) for entry in state["log_history"]):
        raise ValueError(f"{path}: log_history holds a non-object entry (a damaged checkpoint)")
    step, planned = state["global_step"], state["max_steps"]
    named = re.fullmatch(r"checkpoint-(\d+)", path.parent.name)
    if step < 0 or (named and int(named.group(1)) != step) or 0 < planned < step:
        said = f"the folder's name says step {named.group(1)}, " if named else ""
        raise ValueError(
            f"{path}: global_step={step} does not match the checkpoint ({said}its own "
            f"max_steps={planned}); the file was changed: resume from another checkpoint"
        )
    return step


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_torch_file(path: Path, keys: tuple[str, ...]) -> None:
    """``path`` loads as the Trainer loads it (``weights_only``, memory-mapped: nothing is read
    whole) into a mapping with ``keys``."""
    import contextlib

    import torch

    try:
        from transformers.trainer_pt_utils import safe_globals
    except ImportError:  # older transformers: numpy's RNG state is allowed by torch itself
        safe_globals = contextlib.nullcontext
    try:
        with safe_globals():
            try:
                value = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError as err:  # a file of torch's legacy format cannot be mapped
                if not str(err).startswith("mmap can only be used"):
                    raise
                value = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a damaged file raises anything: named below
        raise ValueError(
            f"{path}: not a torch file the Trainer can load ({type(err).__name__}: "
            f"{_first_sentence(err)}); a "
            "damaged checkpoint: resume from another one"
        ) from None
    missing = [k for k in keys if not isinstance(value, dict) or k not in value]
    if not isinstance(value, dict) or missing:
        what = f"no {', '.join(missing)}" if isinstance(value, dict) else type(value).__name__
        raise ValueError(
            f"{path}: holds {what}, not the state the Trainer saved there; a damaged "
            "checkpoint: resume from another one"
        )


def _check_safetensors(path: Path) -> None:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            handle.keys()
    except Exception as err:  # safetensors raises its own error types
        raise ValueError(
            f"{path}: not a readable safetensors file ({err}); a damaged checkpoint: resume "
            "from another one"
        ) from None


def _first_sentence(err: BaseException, most: int = 200) -> str:
    """The first sentence of an error's message (torch's go on with advice for other cases)."""
    line = (str(err).strip().splitlines() or [""])[0]
    return re.split(r"(?<=\.)\s", line, maxsplit=1)[0][:most]


@contextmanager
def _loading(checkpoint: Any, files: str) -> Iterator[None]:
    """A failure while the Trainer loads ``files`` of ``checkpoint``, as a ``ValueError``."""
    try:
        yield
    except Exception as err:  # whatever the loader raises, named with its files
        raise ValueError(
            f"resume_from_checkpoint={checkpoint}: {files} could not be loaded "
            f"({type(err).__name__}: {_first_sentence(err, 300)}); a damaged checkpoint or one "
            "of another model: resume from another one"
        ) from err


# -- finite numbers and steps -------------------------------------------------------------
class GuardedTrainer:
    """A mixin placed before a ``transformers.Trainer`` class
    (``class T(GuardedTrainer, SFTTrainer)``): a non-finite training loss is a ``ValueError``
    naming the step and ``loss_name`` (a keyword of the constructor), and the checkpoint
    loaders' failures name the files they read."""

    def __init__(self, *args: Any, loss_name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loss_name = loss_name

    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        loss = super().training_step(*args, **kwargs)  # type: ignore[misc]
        trainer: Any = self  # a Trainer: its state and accelerator
        what = f"step {trainer.state.global_step + 1}: the {self.loss_name} loss"
        check_finite_loss(loss, trainer.accelerator, what)
        return loss

    def _load_from_checkpoint(self, checkpoint: Any, *args: Any, **kwargs: Any) -> Any:
        with _loading(checkpoint, "the model files (config.json, the weights)"):
            return super()._load_from_checkpoint(checkpoint, *args, **kwargs)  # type: ignore[misc]

    def _load_optimizer_and_scheduler(self, checkpoint: Any) -> Any:
        with _loading(checkpoint, "optimizer.pt / scheduler.pt"):
            return super()._load_optimizer_and_scheduler(checkpoint)  # type: ignore[misc]

    def _load_scaler(self, checkpoint: Any) -> Any:
        with _loading(checkpoint, "scaler.pt"):
            return super()._load_scaler(checkpoint)  # type: ignore[misc]

    def _load_rng_state(self, checkpoint: Any) -> Any:
        with _loading(checkpoint, "rng_state.pth"):
            return super()._load_rng_state(checkpoint)  # type: ignore[misc]


def check_finite_loss(loss: Any, accelerator: Any, what: str) -> None:
    """``ValueError`` when ``loss`` is NaN or infinite on this process or on another (every
    process learns it at once: none is left waiting for the others)."""
    import torch

    here = (~torch.isfinite(loss.detach())).any().float()
    if accelerator.reduce(here, reduction="sum").item() == 0:
        return
    value = loss.detach().float().mean().item() if here.item() else None
    seen = f"{value}" if value is not None else "finite here, not on another process"
    raise ValueError(
        f"{what} is not finite ({seen}); training stopped before the weights took it: lower "
        "learning_rate, check the data, or resume from an earlier checkpoint"
    )


def check_finite_weights(model: Any, when: str) -> None:
    """``ValueError`` naming the first trainable parameter of ``model`` with a NaN or an
    infinity (one device sync when all are finite)."""
    import torch

    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.numel()]
    if not params:
        return
    with torch.no_grad():
        finite = torch.stack([torch.isfinite(p).all() for _, p in params])
        if bool(finite.all()):
            return
        name, param = next(x for x, ok in zip(params, finite.tolist(), strict=True) if not ok)
        bad = int((~torch.isfinite(param)).sum())
    raise ValueError(
        f"{when}: parameter {name!r} has {bad} non-finite values (of {param.numel()}); the "
        "weights are broken: lower learning_rate, check the data, or resume from an earlier "
        "checkpoint"
    )


def run_guard() -> Any:
    """A ``TrainerCallback`` that refuses a run with no step to train and non-finite weights
    (at the start and after every optimizer step, before any save), and counts the steps
    trained (``start_step``, ``steps``)."""
    from transformers import TrainerCallback

    class RunGuard(TrainerCallback):
        start_step = 0
        steps = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.start_step, self.steps = state.global_step, 0
            resumed = args.resume_from_checkpoint
            where = f"resume_from_checkpoint={resumed}: " if resumed else ""
            if state.global_step >= state.max_steps:
                raise ValueError(
                    f"{where}nothing to train: the run starts at step {state.global_step} and "
                    f"ends at step {state.max_steps} (max_steps={args.max_steps}, "
                    f"num_train_epochs={args.num_train_epochs}); raise max_steps or "
                    "num_train_epochs, or resume from an earlier checkpoint"
                )
            loaded = f"{where}the weights at step {state.global_step}" if resumed else (
                "the weights before training"
            )  # fmt: skip
            check_finite_weights(kwargs["model"], loaded)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.steps += 1
            check_finite_weights(kwargs["model"], f"after step {state.global_step}")

    return RunGuard()


__all__ = [
    "DATA_REPORT",
    "TRAINER_STATE",
    "GuardedTrainer",
    "check_checkpoint_files",
    "check_finite_loss",
    "check_finite_weights",
    "check_resumed_data",
    "read_record",
    "run_guard",
]
