"""The run records of a trained checkpoint folder, as a model card reads them
(:mod:`model_cards.model_card`).

A checkpoint folder comes from whoever hands it over: every record is read with
:func:`coreb_toolkit.untrusted.read_json` (bounded, UTF-8, no ``NaN``, no 5,000-digit number),
only from inside the folder (:func:`coreb_toolkit.untrusted.inside`: a ``training_curves.png``
that links to a file elsewhere is not copied into a card), and the shape of what the card uses
is checked: a list where an object belongs, or a string where a number belongs, is a
``ValueError`` naming the file and the field, not a traceback while rendering.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.untrusted import inside, markdown_code, read_json

CHECKPOINT_FILES = {
    "config": "training_config.json",
    "data": "data_report.json",
    "disjointness": "disjointness_report.json",
    "validation": "validation_metrics.json",
    "log": "log_history.json",
    "run_info": "run_info.json",
    "manifest": "coreb_reranker.json",
    "curves": "training_curves.png",
}


@dataclass
class TrainingRecord:
    """The run records of a trained checkpoint folder (plain data, as the trainers wrote them)."""

    folder: str
    trainer: str  # "coreb-reranker" | "synh-rank"
    base_model: str  # as the run named it (a Hub id, a bundled name or a local folder)
    config: dict[str, Any]
    data_report: dict[str, Any]
    disjointness: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    run_info: dict[str, Any] | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)
    curves: str | None = None  # path of training_curves.png, when there is one


_NUMBER = (int, float)
_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer",
          float: "a number", type(None): "null"}  # fmt: skip


def _expect(file: Path, key: str, value: Any, kinds: tuple[type, ...]) -> Any:
    """``value`` when it is one of ``kinds`` (``bool`` is no number); else a ``ValueError``."""
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return value
    wanted = " or ".join(dict.fromkeys(_NAMES.get(k, k.__name__) for k in kinds))
    got = _NAMES.get(type(value), type(value).__name__)
    raise ValueError(
        f"{file}: {key}: expected {wanted}, got {got} ({str(value)[:60]!r}); the trainers write "
        "it so: give the folder `coreb train reranker` / `coreb train synh-rank` wrote"
    )


def _fields(file: Path, body: Mapping[str, Any], shapes: Mapping[str, tuple[type, ...]],
            prefix: str = "") -> None:  # fmt: skip
    for key, kinds in shapes.items():
        if body.get(key) is not None:
            _expect(file, prefix + key, body[key], kinds)


def _check_shapes(key: str, file: Path, value: Any) -> Any:
    """``value`` of checkpoint record ``key`` when what the card reads of it has its shape."""
    if key == "log":
        for i, entry in enumerate(_expect(file, "(top level)", value, (list,))):
            _expect(file, f"[{i}]", entry, (dict,))
            _fields(file, entry, {"train_runtime": _NUMBER}, f"[{i}].")
        return value
    _expect(file, "(top level)", value, (dict,))
    if key == "config":
        _fields(file, value, {"model_name_or_path": (str,), "finetuning": (str,)})
    elif key == "manifest":
        _fields(file, value, {"base_model": (str,)})
    elif key == "validation":
        _fields(file, value, {"before": (dict,), "after": (dict,)})
    elif key == "run_info":
        _fields(file, value, {"wall_time_s": _NUMBER, "hardware": (dict,)})
        hardware = value.get("hardware") or {}
        for i, device in enumerate(_expect(file, "hardware.devices", hardware.get("devices") or [],
                                           (list,))):  # fmt: skip
            _expect(file, f"hardware.devices[{i}]", device, (str,))
    return value


def read_checkpoint(folder: str | os.PathLike[str]) -> TrainingRecord:
    """The run records of a trained checkpoint folder (see :mod:`model_cards.model_card`).

    Raises:
        ValueError: no such folder, or one without ``training_config.json`` /
            ``data_report.json`` (not the output of a toolkit trainer), a record that is not
            JSON of the shape the trainers write (the file and field named), or a record that
            is a link out of the folder or no regular file.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"--checkpoint {path}: no such folder")

    def load(key: str, required: bool = False) -> Any:
        file = path / CHECKPOINT_FILES[key]
        if not inside(path, CHECKPOINT_FILES[key]).is_file():
            if required:
                raise ValueError(
                    f"--checkpoint {path}: no {file.name}; give the output_dir of `coreb train "
                    "reranker` or `coreb train synh-rank` (or one of its checkpoint-N folders)"
                )
            return None
        return _check_shapes(key, file, read_json(file))

    config = load("config", required=True)
    data = load("data", required=True)
    manifest = load("manifest") or {}
    trainer = "synh-rank" if "train_lists" in config else "coreb-reranker"
    base = manifest.get("base_model") or config.get("model_name_or_path")
    curves = inside(path, CHECKPOINT_FILES["curves"])
    return TrainingRecord(
        folder=str(path),
        trainer=trainer,
        base_model=str(base),
        config=config,
        data_report=data,
        disjointness=load("disjointness"),
        validation=load("validation"),
        run_info=load("run_info"),
        log_history=load("log") or [],
        curves=str(path / CHECKPOINT_FILES["curves"]) if curves.is_file() else None,
    )


def _same_weights(a: Path, b: Path) -> bool:
    """Whether two model folders hold byte-identical weights (a copied checkpoint)."""
    import hashlib

    def digest(folder: Path) -> list[tuple[str, str]]:
        files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
        return [(f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files]

    mine = digest(a)
    return bool(mine) and mine == digest(b)


def check_results_of_checkpoint(subject: Mapping[str, Any], training: TrainingRecord) -> str:
    """``ValueError`` when the results' model is another local model than the checkpoint;
    returns a note on how the match was established."""
    name = Path(str(subject.get("name"))).expanduser()
    folder = Path(training.folder)
    if not name.exists():
        return (
            f"the results name the model {markdown_code(name)}, which is not a local folder: that "
            f"it is the checkpoint {markdown_code(folder.name)} was not checked"
        )
    if name.resolve() == folder.resolve():
        return f"the results are of the checkpoint folder itself ({markdown_code(folder.name)})"
    if _same_weights(name, folder):
        return (
            f"the results are of {markdown_code(name.name)}, whose weights equal the checkpoint's"
        )
    raise ValueError(
        f"the results are of the model {name}, but --checkpoint is {folder}, whose weights "
        "differ: give the checkpoint those results were scored with (`coreb evaluate "
        "--reranker CHECKPOINT`), or leave --checkpoint out"
    )


__all__ = ["CHECKPOINT_FILES", "TrainingRecord", "check_results_of_checkpoint", "read_checkpoint"]
