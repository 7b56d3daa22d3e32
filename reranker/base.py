"""The reranker contract: score (query, document) pairs, rank documents for a query.

Modelled on the backend contract of AnswerDotAI ``rerankers`` (``score`` plus a ``rank`` that
returns typed results): every backend implements :meth:`BaseReranker._score_batch` and
inherits input validation, the on-disk score cache and :meth:`BaseReranker.rank`.

The cache (``cache_dir``) is a SQLite file per backend fingerprint; a score is keyed by the
SHA-256 of (model fingerprint, max_length, instruction, query, document), so a change of
model weights, adapter, prompt template or truncation length never returns a stale score.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol, runtime_checkable

logger = logging.getLogger(__name__)

INSTALL_MODELS = "pip install coreb-toolkit[models]"
# peft lives in the `train` extra (trainers/ owns it); rerankers only need it for adapters.
INSTALL_PEFT = "pip install coreb-toolkit[models] (or pip install peft)"
# Bump when what a cached score means changes (prompt layout, score definition).
CACHE_FORMAT = 1


def require(module: str, install: str = INSTALL_MODELS) -> ModuleType:
    """Import ``module`` lazily; a missing one raises ``ImportError`` naming the pip extra."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"the reranker needs {module!r}; install it with `{install}`") from err


@dataclass(frozen=True)
class RankedDocument:
    """One ranked document: its id, its score (higher is more relevant) and its 1-based rank."""

    doc_id: str
    score: float
    rank: int


@runtime_checkable
class Reranker(Protocol):
    """What every reranker backend offers."""

    name: str

    def score(
        self, pairs: Sequence[tuple[str, str]], *, instruction: str | None = None
    ) -> list[float]:
        """One relevance score per (query, document) pair, in input order."""
        ...

    def rank(
        self,
        query: str,
        documents: Mapping[str, str] | Sequence[str],
        *,
        instruction: str | None = None,
        top_k: int | None = None,
    ) -> list[RankedDocument]:
        """The documents sorted by decreasing score (ids are the mapping keys or positions)."""
        ...


def validate_pairs(pairs: Sequence[tuple[str, str]], owner: str) -> list[tuple[str, str]]:
    """Check every pair is two non-empty strings; the error names the offending index."""
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(
            f"{owner}.score expects a sequence of (query, document) tuples, "
            f"but got {type(pairs).__name__}"
        )
    out: list[tuple[str, str]] = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{owner}.score expects (query, document) at index {i}, got {pair!r}")
        query, document = pair
        for what, text in (("query", query), ("document", document)):
            if not isinstance(text, str):
                raise TypeError(
                    f"{owner}.score expects a str {what} at index {i}, got {type(text).__name__}"
                )
            if not text.strip():
                raise ValueError(
                    f"{owner}.score got an empty {what} at index {i}: "
                    f"remove the pair or give it text"
                )
        out.append((query, document))
    return out


class ScoreCache:
    """Scores on disk, one SQLite file per model fingerprint under ``cache_dir``."""

    def __init__(self, cache_dir: str | Path, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        path = Path(cache_dir)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / f"scores-{fingerprint[:32]}.sqlite"
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, score REAL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def key(self, max_length: int | None, instruction: str | None, query: str, doc: str) -> str:
        payload = json.dumps(
            [CACHE_FORMAT, self.fingerprint, max_length, instruction, query, doc],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def get(self, keys: Sequence[str]) -> dict[str, float]:
        found: dict[str, float] = {}
        with self._connect() as db:
            unique = list(dict.fromkeys(keys))
            for start in range(0, len(unique), 500):  # SQLite caps bound parameters
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(f"SELECT key, score FROM scores WHERE key IN ({marks})", chunk)
                found.update(rows.fetchall())
        return found

    def put(self, items: Mapping[str, float]) -> None:
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", list(items.items()))


def architectures(config: object) -> list[str]:
    """The ``architectures`` a ``transformers`` config lists (none for a bare config)."""
    return [str(a) for a in (getattr(config, "architectures", None) or [])]


def runtime_metadata(reranker: object) -> dict[str, object]:
    """``inference_backend`` and ``quantization`` (what the int8 export does, ``None`` for
    fp32) of a reranker, for its results file."""
    from coreb_toolkit.retrieval.backends import quantization_config

    backend = str(getattr(reranker, "inference_backend", "torch"))
    quantize = getattr(reranker, "quantize", None)
    return {"inference_backend": backend, "quantization": quantization_config(backend, quantize)}


def token_budget(
    owner: str, max_length: int, max_tokens_per_batch: int | None, batch_size: int | None
) -> int | None:
    """The padded-token budget of a forward pass from either of its two spellings:
    ``max_tokens_per_batch`` itself, or ``batch_size`` pairs of the longest allowed length
    (``batch_size * max_length``); ``None`` when neither is given (the backend's default)."""
    if batch_size is None:
        return max_tokens_per_batch
    if max_tokens_per_batch is not None:
        raise ValueError(
            f"{owner} got both max_tokens_per_batch={max_tokens_per_batch} and "
            f"batch_size={batch_size}: give one (batch_size means batch_size * max_length tokens)"
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"{owner}: batch_size must be a positive int, got {batch_size!r}")
    return batch_size * int(max_length)


class BaseReranker(ABC):
    """Validation, caching and :meth:`rank` on top of a backend's :meth:`_score_batch`.

    Subclasses set ``name``, ``max_length`` and ``max_tokens_per_batch`` (for :meth:`batches`)
    and implement :meth:`_score_batch` (uncached scores of validated pairs) and
    :meth:`fingerprint` (what identifies the model's scores). A backend class declares what it
    is to the registry (:mod:`reranker.registry`): ``backend`` (its name in results files),
    ``handles`` (the models it takes, in words) and :meth:`accepts` (whether it takes a model
    config).
    """

    #: the backend's name in results files (``"cross-encoder"``, ``"generative"``)
    backend: str = ""
    #: the models the backend takes, in words (for errors): ``"a sequence classifier"``
    handles: str = ""
    name: str
    max_length: int | None = None
    max_tokens_per_batch: int = 16384
    cache_dir: str | Path | None = None
    #: True when the model's scoring head is freshly initialised, not trained (the bundled
    #: ``minilm`` plumbing alias): its scores are not relevance. Results files record it.
    untrained_head: bool = False
    #: the runtime of the model's forward pass (``"torch"``, ``"onnx"``, ``"openvino"``) and
    #: its quantisation (``None``: the fp32 weights); a backend that exports sets them
    inference_backend: str = "torch"
    quantize: str | None = None
    _cache: ScoreCache | None = None

    @classmethod
    def accepts(cls, config: object) -> bool:
        """Whether this backend takes a model of this ``transformers`` config (by default: no;
        a backend resolved by architecture overrides it)."""
        return False

    def metadata(self) -> dict[str, object]:
        """What identifies this reranker's scores in a results file."""
        return {
            "name": self.name,
            "backend": self.backend or type(self).__name__,
            "class": type(self).__name__,
            "fingerprint": self.fingerprint(),
            "max_length": self.max_length,
            "max_tokens_per_batch": self.max_tokens_per_batch,
            "untrained_head": self.untrained_head,
            **runtime_metadata(self),
        }

    def batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped by decreasing length, each group within the padded-token budget."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        out: list[list[int]] = []
        for i in order:
            # sorted longest first: the group's padded width is its first member's length
            if out and lengths[out[-1][0]] * (len(out[-1]) + 1) <= self.max_tokens_per_batch:
                out[-1].append(i)
            else:
                out.append([i])
        return out

    @abstractmethod
    def _score_batch(self, pairs: list[tuple[str, str]], instruction: str | None) -> list[float]:
        """Scores of already validated pairs, computed by the model (no cache)."""

    @abstractmethod
    def fingerprint(self) -> str:
        """A string that changes whenever the scores the model gives could change."""

    def _get_cache(self) -> ScoreCache | None:
        if self.cache_dir is None:
            return None
        if self._cache is None:
            self._cache = ScoreCache(self.cache_dir, self.fingerprint())
        return self._cache

    def score(
        self, pairs: Sequence[tuple[str, str]], *, instruction: str | None = None
    ) -> list[float]:
        """One relevance score per (query, document) pair, in input order.

        Raises ``ValueError`` naming the index of an empty query or document.
        """
        checked = validate_pairs(pairs, type(self).__name__)
        if not checked:
            return []
        cache = self._get_cache()
        if cache is None:
            return [float(s) for s in self._score_batch(checked, instruction)]
        keys = [cache.key(self.max_length, instruction, q, d) for q, d in checked]
        found = cache.get(keys)
        todo = [i for i, k in enumerate(keys) if k not in found]
        # one model call per distinct missing key (the same pair twice is scored once)
        first: dict[str, int] = {}
        for i in todo:
            first.setdefault(keys[i], i)
        if first:
            fresh = self._score_batch([checked[i] for i in first.values()], instruction)
            new = {k: float(s) for k, s in zip(first, fresh, strict=True)}
            cache.put(new)
            found.update(new)
        logger.debug("%s: %d cached, %d scored", self.name, len(keys) - len(first), len(first))
        return [float(found[k]) for k in keys]

    def rank(
        self,
        query: str,
        documents: Mapping[str, str] | Sequence[str],
        *,
        instruction: str | None = None,
        top_k: int | None = None,
    ) -> list[RankedDocument]:
        """Rank ``documents`` for ``query`` by decreasing score (ties keep input order).

        ``documents`` is ``{doc_id: text}`` or a sequence of texts (ids ``"0"``, ``"1"``, ...).
        """
        if isinstance(documents, Mapping):
            ids, texts = [str(k) for k in documents], list(documents.values())
        elif isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
            raise TypeError(
                f"{type(self).__name__}.rank expects a mapping {{doc_id: text}} or a sequence "
                f"of texts, but got {type(documents).__name__}"
            )
        else:
            ids, texts = [str(i) for i in range(len(documents))], list(documents)
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None, but got {top_k!r}")
        scores = self.score([(query, t) for t in texts], instruction=instruction)
        order = sorted(range(len(ids)), key=lambda i: -scores[i])
        if top_k is not None:
            order = order[:top_k]
        return [RankedDocument(ids[i], scores[i], r) for r, i in enumerate(order, start=1)]


def model_fingerprint(model: object, meta: Sequence[object]) -> str:
    """A hash of ``meta`` (source, revision, prompt...) and of the first 256 values of every
    weight: cheap, and it changes when an adapter, a merge or a fresh head changes the model."""
    import torch

    h = hashlib.sha256(json.dumps(list(meta), default=str).encode())
    with torch.no_grad():
        for name, param in model.named_parameters():
            h.update(name.encode())
            h.update(param.detach().flatten()[:256].float().cpu().numpy().tobytes())
    return h.hexdigest()
