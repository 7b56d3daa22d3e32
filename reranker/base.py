"""The reranker contract: score (query, document) pairs, rank documents for a query.

Modelled on the backend contract of AnswerDotAI ``rerankers`` (``score`` plus a ``rank`` that
returns typed results): every backend implements :meth:`BaseReranker._score_batch` and
inherits input validation, the on-disk score cache and :meth:`BaseReranker.rank`.

The cache (``cache_dir``) is an append-only JSON-lines file per backend fingerprint
(:class:`ScoreCache`); a score is keyed by the SHA-256 of (model fingerprint, max_length,
instruction, query, document), so a change of model weights, adapter, prompt template or
truncation length never returns a stale score. A backend reports each forward batch's scores
(:meth:`BaseReranker._report`) and :meth:`BaseReranker.score` appends them at once, so a killed
run resumes where it stopped: its next run scores only the pairs no finished batch scored.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

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


class ScoreCacheError(RuntimeError):
    """A score cache file this code cannot read (not written by it, or damaged)."""


class ScoreCache:
    """Scores on disk: one append-only JSON-lines file per model fingerprint under ``cache_dir``.

    The first line is a header naming the format and the fingerprint; every other line is one
    ``[key, score]``. Scores are appended (one ``write`` per batch, under an exclusive lock
    where the platform has ``fcntl``), so flushing after every forward batch costs microseconds
    and a run killed at any point keeps every batch it finished. A last line without its
    newline (a writer killed mid-write) is ignored with a warning and cut off by the next
    writer; any other line that does not parse is a :class:`ScoreCacheError` naming the file
    and the line, never data. Lines written by other processes meanwhile are read on the next
    :meth:`get`.
    """

    FORMAT = "coreb-reranker-scores"

    def __init__(self, cache_dir: str | Path, fingerprint: str) -> None:
        self.fingerprint = fingerprint
        path = Path(cache_dir)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / f"scores-{fingerprint[:32]}.jsonl"
        self._header = json.dumps(
            {"format": self.FORMAT, "version": CACHE_FORMAT, "fingerprint": fingerprint}
        )
        self._scores: dict[str, float] = {}
        self._offset = 0  # bytes of the file read into _scores (whole lines only)
        self._line = 0
        self._warned_torn = False

    def key(self, max_length: int | None, instruction: str | None, query: str, doc: str) -> str:
        payload = json.dumps(
            [CACHE_FORMAT, self.fingerprint, max_length, instruction, query, doc],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def _error(self, line: int, why: str) -> ScoreCacheError:
        return ScoreCacheError(
            f"the reranker score cache {self.path} cannot be read: line {line} {why}; it was "
            f"not written by this reranker or it is damaged: delete it to score again"
        )

    def _read(self) -> None:
        """Read the whole lines appended since the last read (a torn last line is left)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        if end < len(data) and not self._warned_torn:
            self._warned_torn = True
            logger.warning(
                "%s: ignoring a torn last line (%d bytes), left by a run killed while writing "
                "(or being written now); its scores are computed again",
                self.path, len(data) - end,
            )  # fmt: skip
        for raw in data[:end].splitlines():
            self._line += 1
            self._parse(raw)
        self._offset += end

    def _parse(self, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except ValueError:
            raise self._error(self._line, "is not JSON") from None
        if self._line == 1:
            if record != json.loads(self._header):
                raise self._error(1, f"is not the header {self._header}")
            return
        ok = isinstance(record, list) and len(record) == 2 and isinstance(record[0], str)
        score = record[1] if ok else None
        if not ok or isinstance(score, bool) or not isinstance(score, (int, float)):
            raise self._error(self._line, "is not a [key, score] record")
        self._scores[record[0]] = float(score)

    def get(self, keys: Sequence[str]) -> dict[str, float]:
        self._read()
        return {k: self._scores[k] for k in dict.fromkeys(keys) if k in self._scores}

    def put(self, items: Mapping[str, float]) -> None:
        """Append ``items`` (one write, under the lock): a kill loses at most this batch."""
        if not items:
            return
        lines = "".join(json.dumps([k, float(s)]) + "\n" for k, s in items.items())
        with open(self.path, "ab") as f, _locked(f):
            size = f.seek(0, 2)
            if size and self._torn_tail(size):
                f.truncate(self._last_newline(size))  # a dead writer's half line
                size = f.seek(0, 2)
                self._offset = min(self._offset, size)
            head = "" if size else self._header + "\n"
            f.write((head + lines).encode("utf-8"))
            f.flush()
        self._scores.update({k: float(s) for k, s in items.items()})

    def _torn_tail(self, size: int) -> bool:
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            return f.read(1) != b"\n"

    def _last_newline(self, size: int) -> int:
        with open(self.path, "rb") as f:
            data = f.read(size)
        return data.rfind(b"\n") + 1


@contextlib.contextmanager
def _locked(f: Any) -> Iterator[None]:
    """An exclusive advisory lock on the open file ``f`` while the block runs."""
    try:
        import fcntl
    except ImportError:  # no advisory locks (Windows): one writer per cache
        yield
        return
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)


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
    _on_scores: Callable[[Sequence[int], Sequence[float]], None] | None = None

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

    def _report(self, rows: Sequence[int], scores: Sequence[float]) -> None:
        """Called by a backend's :meth:`_score_batch` after each forward batch with the scores
        of ``rows`` (indices into the pairs it was given): :meth:`score` appends them to the
        cache at once and moves the progress bar. A backend that never calls it still works
        (its scores are cached when :meth:`_score_batch` returns)."""
        if self._on_scores is not None:
            self._on_scores(rows, scores)

    def score(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        instruction: str | None = None,
        progress: bool | str = False,
    ) -> list[float]:
        """One relevance score per (query, document) pair, in input order.

        ``progress``: a tqdm bar over the pairs to score (shown on a terminal only; a string is
        its label). With a cache, every forward batch's scores are on disk when it ends.

        Raises ``ValueError`` naming the index of an empty query or document.
        """
        checked = validate_pairs(pairs, type(self).__name__)
        if not checked:
            return []
        cache = self._get_cache()
        keys: list[str] = []
        found: dict[str, float] = {}
        if cache is None:
            todo = list(range(len(checked)))
        else:
            keys = [cache.key(self.max_length, instruction, q, d) for q, d in checked]
            found = cache.get(keys)
            # one model call per distinct missing key (the same pair twice is scored once)
            first: dict[str, int] = {}
            for i, k in enumerate(keys):
                if k not in found:
                    first.setdefault(k, i)
            todo = list(first.values())
            level = logging.INFO if progress and found and todo else logging.DEBUG
            logger.log(level, "%s: %d of %d pairs from the score cache %s, %d to score",
                       progress if isinstance(progress, str) else self.name,
                       len(keys) - len(todo), len(keys), cache.path, len(todo))  # fmt: skip
        if not todo:
            return [float(found[k]) for k in keys]
        from tqdm.auto import tqdm

        label = progress if isinstance(progress, str) else self.name
        # disable=None: shown on a terminal only, so that logs stay readable
        bar = tqdm(total=len(todo), desc=label, unit="pair", leave=False,
                   disable=None if progress else True)  # fmt: skip
        flushed: dict[str, float] = {}

        def on_scores(rows: Sequence[int], scores: Sequence[float]) -> None:
            if cache is not None:
                new = {keys[todo[r]]: float(s) for r, s in zip(rows, scores, strict=True)}
                cache.put(new)
                flushed.update(new)
            bar.update(len(rows))

        outer, self._on_scores = self._on_scores, on_scores
        try:
            fresh = self._score_batch([checked[i] for i in todo], instruction)
        finally:
            self._on_scores = outer
            bar.close()
        if cache is None:
            return [float(s) for s in fresh]
        new = {keys[i]: float(s) for i, s in zip(todo, fresh, strict=True)}
        cache.put({k: s for k, s in new.items() if k not in flushed})
        found.update(new)
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
