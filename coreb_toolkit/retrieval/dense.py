"""Dense first-stage retrieval: sentence-transformers embedders ranked by exact cosine similarity.

CoREB ranks the whole corpus of every subtask by the cosine similarity of query and document
embeddings [CoREB §4.1, A.6]. A release's code corpus is ranked by every T2C and C2C subtask
(and its text corpus by every C2T one), so the expensive part, encoding the corpus, is done
once per (model, release) and reused: in memory within a run, and on disk across runs when
``cache_dir`` is set, keyed by the model revision, the prompt, the maximum length, the dtype
and a fingerprint of the corpus content. Query sets go through the same cache, keyed by their
texts, so identical query sets under other ids are encoded once.

The model's own pipeline is used unchanged (pooling, ``Normalize``, the prompts of its
``config_sentence_transformers.json``); the vectors are then L2-normalised in float32, so an
inner product is the cosine similarity (a no-op, up to rounding, for models that normalise).

Encoding sorts texts by length (a batch pads little) and runs data-parallel under ``accelerate
launch`` / ``torchrun``: the length-sorted batches are dealt out, and the gathered vectors equal
a single process's (same batches, same padding).

Search is exact (:mod:`coreb_toolkit.retrieval.embeddings`): a torch matmul over query chunks
(memory bounded by :data:`SCORE_BUDGET`), or ``faiss.IndexFlatIP`` (``pip install faiss-cpu``)
above :data:`FAISS_THRESHOLD` documents or on request. :class:`DenseFirstStage` puts a
:class:`DenseRetriever` behind the :class:`~coreb_toolkit.retrieval.base.Retriever` contract.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coreb_toolkit.retrieval.backends import (
    ExportedEncoder,
    check_backend,
    export_fingerprint,
    export_folder,
    quantization_config,
)
from coreb_toolkit.retrieval.base import corpus_fingerprint
from coreb_toolkit.retrieval.embeddings import (
    FAISS_THRESHOLD,
    SCORE_BUDGET,
    Embeddings,
    cosine_search,
)

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

#: ``model.prompts`` names read as the document prompt, in order of preference: the names
#: sentence-transformers models use for the retrieval side of their cards.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")
QUERY_PROMPT_NAMES = ("query",)

_INSTALL = "pip install coreb-toolkit[models]"
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}
_EXPORT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# The cache format; bump it when what a cache file holds changes meaning.
_CACHE_FORMAT = 1


class DenseRetriever:
    """A sentence-transformers embedder as a CoREB first stage, ranking by cosine similarity.

    Args:
        model_name_or_path: a local sentence-transformers (or transformers) folder, or a Hub id
            already in the local cache (or downloadable where the Hub is reachable).
        query_prompt, document_prompt: text the model prepends to queries / documents. An
            explicit value wins (``""`` means none); by default the model's own
            ``model.prompts`` entry (``"query"``; ``"document"``, ``"passage"`` or ``"corpus"``)
            as its card specifies; else none. Models whose card asks for a prefix but whose
            config does not declare it need the prefix passed here.
        max_length: maximum tokens per text (default: the model's ``max_seq_length``).
        batch_size: texts per forward pass.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... Default: the process's accelerator under
            ``accelerate launch``, else CUDA, MPS or CPU, whichever is there.
        dtype: ``"float32"``, ``"float16"`` or ``"bfloat16"``. Default: float32 on CPU/MPS;
            on CUDA bfloat16 where supported (it does not overflow in LLM-based embedders,
            unlike float16), else float16.
        cache_dir: where corpus embeddings are cached across runs (none by default).
        trust_remote_code: allow models that ship their own modelling code.
        progress: show tqdm progress bars while encoding (main process only).
        backend: ``"torch"`` (default), ``"onnx"`` (ONNX Runtime) or ``"openvino"``: the
            runtime of the transformer module on CPU (:mod:`coreb_toolkit.retrieval.backends`);
            the export is cached under ``cache_dir/exported``.
        quantize: ``"int8"`` with ``onnx`` (dynamic quantisation) or ``openvino`` (int8
            weights), else ``None``.

    Example::

        retriever = DenseRetriever("sentence-transformers/all-MiniLM-L6-v2", cache_dir="emb")
        run = retriever.index(data.corpus).search_text(data.queries, top_k=1000)
        evaluate_retrieval(data.qrels, run, exclude=data.exclude)
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        max_length: int | None = None,
        batch_size: int = 64,
        device: str | None = None,
        dtype: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        trust_remote_code: bool = False,
        progress: bool = True,
        backend: str = "torch",
        quantize: str | None = None,
    ):
        if not isinstance(model_name_or_path, str) or not model_name_or_path:
            raise TypeError(
                "DenseRetriever expects model_name_or_path as a non-empty str (a folder or a Hub "
                f"id), got {model_name_or_path!r}"
            )
        if max_length is not None and max_length < 1:
            raise ValueError(f"DenseRetriever: max_length must be >= 1 or None, got {max_length}")
        if batch_size < 1:
            raise ValueError(f"DenseRetriever: batch_size must be >= 1, got {batch_size}")
        if dtype is not None and dtype not in _DTYPES:
            raise ValueError(
                f"DenseRetriever: dtype must be one of {sorted(set(_DTYPES.values()))} or None, "
                f"got {dtype!r}"
            )
        self.backend, self.quantize = check_backend(backend, quantize, type(self).__name__)
        if self.backend != "torch" and device not in (None, "cpu"):
            raise ValueError(
                f"DenseRetriever: backend {backend!r} runs on the CPU, got device={device!r}; "
                "drop --device or use --backend torch"
            )
        self.model_name_or_path = model_name_or_path
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.max_length = max_length
        self.batch_size = batch_size
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.trust_remote_code = trust_remote_code
        self.progress = progress
        self._device = device
        self._dtype = _DTYPES[dtype] if dtype is not None else None
        self._model: SentenceTransformer | None = None
        self._revision: str | None = None
        self._folder: Path | None = None
        self._commit: str | None = None
        self._located = False
        self._memo: dict[str, Embeddings] = {}
        # [prompt, max_length] -> {text: its vector}, every text embedded so far (corpus and
        # queries): a query is encoded once per text, and not at all when it is a document
        # already embedded with the same prompt (a code query of c2t / c2c, without prompts)
        self._rows: dict[str, dict[str, torch.Tensor]] = {}
        self._index: Embeddings | None = None
        self._exported: ExportedEncoder | None = None

    @classmethod
    def from_model(
        cls, model: SentenceTransformer, name: str | None = None, **options: Any
    ) -> DenseRetriever:
        """Wrap an already loaded model: one you just trained, or one shared by retrievers that
        differ only in their prompts. ``name`` defaults to the folder or id it was loaded from.
        ``device`` and ``dtype`` are the model's; other ``options`` as in the constructor.
        """
        for key in ("device", "dtype"):
            if key in options:
                raise TypeError(f"DenseRetriever.from_model: {key} is the model's; got {key}=...")
        name = name or _loaded_from(model) or type(model).__name__
        self = cls(name, **options)
        self._model = model
        self._device = str(model.device)
        self._dtype = str(model.dtype).removeprefix("torch.")
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name_or_path!r})"

    # ------------------------------------------------------------------ model and its facts
    @property
    def exported(self) -> ExportedEncoder | None:
        """The ONNX / OpenVINO encoder (exported on first use, then read from the cache), or
        ``None`` for the torch backend."""
        if self.backend == "torch":
            return None
        if self._exported is None:
            inner = self.model[0].auto_model
            names = tuple(n for n in _EXPORT_INPUTS if n in self.model.tokenize(["x"]))
            fingerprint = export_fingerprint(self.revision, self.backend, self.quantize)
            slug = self._cache_path("", "").parent.name if self.cache_dir else "model"
            folder = export_folder(self.cache_dir) / slug
            self._exported = ExportedEncoder(
                inner, names, self.backend, self.quantize, folder, fingerprint
            )
        return self._exported

    @property
    def device(self) -> str:
        if self.backend != "torch":
            self._device = "cpu"
        if self._device is None or self._device == "cuda":
            # under accelerate launch a bare "cuda" means this process's own GPU, not cuda:0
            self._device = _default_device(self._device)
        return self._device

    @property
    def dtype(self) -> str:
        if self._dtype is None:
            self._dtype = _default_dtype(self.device)
        return self._dtype

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers model, loaded on first use (a cache hit never loads it)."""
        if self._model is None:
            self._model = _load_model(
                self.model_name_or_path, self.device, self.dtype, self.trust_remote_code
            )
        return self._model

    @property
    def revision(self) -> str:
        """The Hub commit of the loaded snapshot, else a content hash of the model folder.

        A commit is only trusted for Hub cache snapshots, whose files never change; any other
        folder (a git clone, a training output saved over) is hashed, so that cached
        embeddings can never outlive the weights they came from.
        """
        if self._revision is None:
            folder, commit = self._locate()
            if folder is None and self._model is None:
                # not in the local cache yet: loading downloads it (where the Hub is reachable)
                _ = self.model
                self._located = False
                folder, commit = self._locate()
            if commit is not None:
                self._revision = commit
            elif folder is not None:
                self._revision = _content_hash(folder)
            else:
                self._revision = _state_dict_hash(self.model)
        return self._revision

    @property
    def prompts(self) -> dict[str, str]:
        """The prompts actually prepended: ``{"query": ..., "document": ...}`` (``""`` = none)."""
        own = self._own_prompts()
        query = self.query_prompt
        if query is None:
            query = next((own[n] for n in QUERY_PROMPT_NAMES if own.get(n)), "")
        document = self.document_prompt
        if document is None:
            document = next((own[n] for n in DOCUMENT_PROMPT_NAMES if own.get(n)), "")
        return {"query": query, "document": document}

    @property
    def metadata(self) -> dict[str, Any]:
        """What a results card needs to name the embedder exactly (JSON-serialisable)."""
        model = self.model
        dim = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
        folder, _ = self._locate()
        return {
            "name": self.model_name_or_path,
            "revision": self.revision,
            "parameters": sum(p.numel() for p in model.parameters()),
            "embedding_dim": dim,
            "max_seq_length": self.max_length or model.max_seq_length,
            "license": _card_license(folder),
            "prompts": self.prompts,
            "dtype": self.dtype,
            "similarity": "cosine",
            "backend": self.backend,
            "quantize": self.quantize,
            "quantization": quantization_config(self.backend, self.quantize),
        }

    # ----------------------------------------------------------------------------- encoding
    def encode_corpus(self, corpus: Mapping[str, str]) -> Embeddings:
        """Embeddings of every document, in the corpus's order, encoded at most once.

        Looked up first in memory (same content, any mapping object), then in ``cache_dir``;
        a miss encodes and, on the main process only, writes the cache.
        """
        if not corpus:
            raise ValueError(f"{type(self).__name__}.encode_corpus: the corpus is empty")
        prompt = self.prompts["document"]
        emb = self._cached(corpus, prompt, "corpus")
        seen = self._rows.setdefault(json.dumps([prompt, self.max_length]), {})
        for d, vector in zip(emb.ids, emb.vectors, strict=True):
            seen.setdefault(corpus[d], vector)
        return emb

    def encode_queries(
        self, queries: Mapping[str, str], *, prompt: str | None = None
    ) -> Embeddings:
        """Embeddings of the queries, in their order, through the same cache as the corpus.

        Each query text is encoded once per prompt and length, within and across calls (the
        subtasks share most queries); a code query that is an encoded document (c2t, c2c)
        reuses its vector when query and document prompts are equal. The texts still to encode
        go through the corpus's memory and disk cache, keyed by those texts in order; a set
        none of which was seen is batched as an uncached call, so its vectors are the same (a
        text padded in another call's batch moves by float rounding, below 1e-6). ``prompt``
        overrides the query prompt for this call (a code-to-code instruction, say).
        """
        ids = list(queries)
        for q in ids:
            if not isinstance(queries[q], str):
                raise TypeError(
                    f"{type(self).__name__}.encode_queries expects str texts, but query {q!r} is "
                    f"{type(queries[q]).__name__}"
                )
        if not ids:
            return Embeddings([], self._encode([], "", "queries"))
        import torch

        prompt = self.prompts["query"] if prompt is None else prompt
        seen = self._rows.setdefault(json.dumps([prompt, self.max_length]), {})
        missing = list(dict.fromkeys(t for q in ids if (t := queries[q]) not in seen))
        if missing:
            # position ids sort in input order, so the cached (id-sorted) order is the input order
            texts = {f"{n:09d}": t for n, t in enumerate(missing)}
            vectors = self._cached(texts, prompt, "queries").vectors
            seen.update(zip(missing, vectors, strict=True))
        return Embeddings(ids, torch.stack([seen[queries[q]] for q in ids]))

    def _cached(self, texts: Mapping[str, str], prompt: str, what: str) -> Embeddings:
        """``texts`` embedded with ``prompt``: from memory, else ``cache_dir``, else encoded."""
        ids = list(texts)
        fingerprint = corpus_fingerprint(texts)
        memo_key = json.dumps([prompt, self.max_length, fingerprint])
        if memo_key in self._memo:
            return self._memo[memo_key].reordered(ids)
        path = self._cache_path(prompt, fingerprint) if self.cache_dir is not None else None
        rank, world = _distributed()
        emb = None
        if path is not None:
            key = self._cache_key(prompt, fingerprint)
            emb = self._read_cache(path, key) if rank == 0 else None
            if world > 1:
                emb = _broadcast(emb)
        if emb is None:
            started = time.perf_counter()
            emb = Embeddings(ids, self._encode([texts[d] for d in ids], prompt, what))
            if self.progress and not sys.stderr.isatty():  # a log: one line where a bar shows
                logger.info("encoded %d %s in %.1fs", len(ids), what, time.perf_counter() - started)
            if path is not None and rank == 0:
                self._write_cache(path, emb, fingerprint, prompt)
        self._memo[memo_key] = emb
        return emb.reordered(ids)

    def _encode(self, texts: list[str], prompt: str, what: str) -> torch.Tensor:
        import torch
        import torch.nn.functional as F
        from tqdm.auto import tqdm

        model = self.model
        # longest first: padding stays small, and an out-of-memory shows up on the first batch
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        batches = [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        rank, world = _distributed()
        # dealt out in turn, not in contiguous blocks, so that the long batches are shared out;
        # the batches themselves are the single-process ones, hence identical vectors
        mine = list(range(rank, len(batches), world))
        pieces: list[tuple[int, torch.Tensor]] = []
        bar = tqdm(
            total=sum(len(batches[b]) for b in mine),
            desc=f"encoding {what}",
            unit="text",
            # None: shown on a terminal only, so that logs stay readable; an inner bar
            disable=None if self.progress and rank == 0 else True,
            leave=False,
        )
        _ = self.exported  # exported (or read) outside inference mode, which export refuses
        with bar, self._max_length_applied(), torch.inference_mode():
            for b in mine:
                if self.backend != "torch":
                    vectors = self._encode_exported([texts[i] for i in batches[b]], prompt)
                    pieces.append((b, vectors))
                    bar.update(len(batches[b]))
                    continue
                vectors = model.encode(
                    [texts[i] for i in batches[b]],
                    prompt=prompt,
                    batch_size=len(batches[b]),
                    convert_to_tensor=True,
                    normalize_embeddings=False,
                    show_progress_bar=False,
                )
                pieces.append((b, vectors.float().cpu()))
                bar.update(len(batches[b]))
        if world > 1:
            pieces = _all_gather(pieces)
        if not pieces:
            dim = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)
            return torch.empty(0, dim() or 0)
        out = torch.empty(len(texts), pieces[0][1].shape[1])
        for b, vectors in pieces:
            out[torch.tensor(batches[b], dtype=torch.long)] = vectors
        return F.normalize(out, dim=1)

    def _encode_exported(self, texts: list[str], prompt: str) -> torch.Tensor:
        """The pipeline with its transformer module run by the exported encoder: the same
        tokenizer call and the same pooling / normalisation modules as ``model.encode``."""
        model, encoder = self.model, self.exported
        pooling = [m for m in list(model)[1:] if getattr(m, "include_prompt", True) is False]
        if prompt and pooling:
            raise ValueError(
                f"DenseRetriever: backend {self.backend!r} does not support a pooling that "
                "excludes the prompt (include_prompt=False); use --backend torch for this model"
            )
        features = model.tokenize([prompt + t for t in texts])
        features["token_embeddings"] = encoder(features)
        for module in list(model)[1:]:
            features = module(features)
        return features["sentence_embedding"].float()

    @contextlib.contextmanager
    def _max_length_applied(self) -> Iterator[None]:
        # set per call, not at load, so that retrievers sharing one model (from_model) each
        # keep their own length
        model = self._model
        if self.max_length is None or model is None:
            yield
            return
        old = model.max_seq_length
        model.max_seq_length = self.max_length
        try:
            yield
        finally:
            model.max_seq_length = old

    # -------------------------------------------------------------------------------- search
    def search(
        self,
        queries: Embeddings,
        corpus: Embeddings,
        top_k: int = 1000,
        *,
        backend: str = "auto",
        faiss_threshold: int = FAISS_THRESHOLD,
    ) -> dict[str, dict[str, float]]:
        """Exact cosine top-k (see :func:`cosine_search`), computed on this retriever's device."""
        return cosine_search(
            queries, corpus, top_k, backend=backend, faiss_threshold=faiss_threshold,
            device=self.device,
        )  # fmt: skip

    def index(self, corpus: Mapping[str, str]) -> DenseRetriever:
        """Encode (or load) the corpus that :meth:`search_text` ranks, like ``BM25Retriever``."""
        self._index = self.encode_corpus(corpus)
        return self

    def search_text(
        self, queries: Mapping[str, str], top_k: int = 1000, *, query_prompt: str | None = None
    ) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` over the indexed corpus, the ``top_k`` best first."""
        if self._index is None:
            raise ValueError(f"{type(self).__name__}.search_text: call index(corpus) first")
        if not queries:
            return {}
        return self.search(self.encode_queries(queries, prompt=query_prompt), self._index, top_k)

    # --------------------------------------------------------------------------------- cache
    def _cache_path(self, prompt: str, fingerprint: str) -> Path:
        key = self._cache_key(prompt, fingerprint)
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
        name = self.model_name_or_path
        if Path(name).expanduser().exists() or _HUB_ID.fullmatch(name) is None:
            name = Path(name).name or "model"  # a folder: its own name, not the whole path
        slug = re.sub(r"[^\w.-]+", "--", name)
        return self.cache_dir / slug / f"{digest}.pt"

    def _cache_key(self, prompt: str, fingerprint: str) -> dict[str, Any]:
        # the dtype is part of the key: fp16 and fp32 vectors differ enough to reorder ties
        runtime = {} if self.backend == "torch" else {"backend": self.backend,
                   "quantization": quantization_config(self.backend, self.quantize)}  # fmt: skip
        return {
            **runtime,
            "format": _CACHE_FORMAT,
            "revision": self.revision,
            "prompt": prompt,
            "max_length": self.max_length,
            "dtype": self.dtype,
            "corpus": fingerprint,
        }

    def _read_cache(self, path: Path, key: dict[str, Any]) -> Embeddings | None:
        if not path.is_file():
            return None
        import torch

        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
            emb = Embeddings(list(blob["ids"]), blob["vectors"].float())
            if blob["key"] != key:  # the file name is only a truncated hash of the key
                raise ValueError(f"it was written for {blob['key']}")
        except Exception as e:  # a truncated or foreign file is a miss, not a crash
            logger.warning(
                "ignoring unusable embedding cache %s (%s: %s)", path, type(e).__name__, e
            )
            return None
        logger.info("loaded %d cached embeddings from %s", len(emb), path)
        return emb

    def _write_cache(self, path: Path, emb: Embeddings, fingerprint: str, prompt: str) -> None:
        import torch

        path.parent.mkdir(parents=True, exist_ok=True)
        canonical = emb.reordered(sorted(emb.ids))
        key = self._cache_key(prompt, fingerprint)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        torch.save({"ids": canonical.ids, "vectors": canonical.vectors, "key": key}, tmp)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
        sidecar = {"model": self.model_name_or_path, **key, "documents": len(emb), "dim": emb.dim}
        path.with_suffix(".json").write_text(json.dumps(sidecar, indent=2) + "\n")
        logger.info("cached %d embeddings at %s", len(emb), path)

    # ------------------------------------------------------------------- folder and prompts
    def _locate(self) -> tuple[Path | None, str | None]:
        if not self._located:
            self._folder, commit = local_model_folder(self.model_name_or_path)
            self._commit = commit
            self._located = True
        return self._folder, self._commit

    def _own_prompts(self) -> dict[str, str]:
        if self._model is not None:
            return dict(self._model.prompts or {})
        folder, _ = self._locate()
        config = folder / "config_sentence_transformers.json" if folder else None
        if config is not None and config.is_file():
            return dict(json.loads(config.read_text()).get("prompts") or {})
        if folder is not None:
            return {}
        return dict(self.model.prompts or {})


# ---------------------------------------------------------------------------------- helpers
def _load_model(name: str, device: str, dtype: str, trust_remote_code: bool) -> SentenceTransformer:
    try:
        import torch
        import transformers
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise ImportError(
            f"DenseRetriever needs torch and sentence-transformers ({e.name} is missing): "
            + _INSTALL
        ) from e
    path = Path(name).expanduser()
    hub_like = not path.exists() and _HUB_ID.fullmatch(name) is not None
    if not path.exists() and not hub_like:
        raise ValueError(
            f"DenseRetriever: cannot load model {name!r}: not a local folder (no such directory) "
            "and not a Hub id ('owner/name'); pass a sentence-transformers model folder or a Hub id"
        )
    if path.is_file():
        raise ValueError(
            f"DenseRetriever: cannot load model {name!r}: it is a file; pass the model's folder"
        )
    # transformers renamed torch_dtype to dtype in 4.56
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    dtype_arg = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    try:
        model = SentenceTransformer(
            str(path) if path.exists() else name,
            device=device,
            trust_remote_code=trust_remote_code,
            model_kwargs={dtype_arg: getattr(torch, dtype)},
        )
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        detail = " ".join(str(e).split())[:200]
        if "trust_remote_code" in detail:
            fix = "it ships its own code: pass trust_remote_code=True if you trust it"
        elif path.exists():
            fix = "the folder holds no loadable sentence-transformers/transformers model"
        else:
            fix = (
                "not a local folder and the Hub is unreachable or has no such model; download it "
                f"where the Hub is reachable (hf download {name}) or pass a local folder"
            )
        raise ValueError(
            f"DenseRetriever: cannot load model {name!r}: {fix} ({type(e).__name__}: {detail})"
        ) from e
    model.eval()
    logger.info("loaded %s on %s as %s", name, device, dtype)
    return model


def _default_device(asked: str | None = None) -> str:
    _, world = _distributed()
    import torch

    if world > 1:
        from accelerate import PartialState

        device = str(PartialState().device)
        return device if asked is None or device.startswith(asked) else asked
    if asked is not None:
        return asked
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _default_dtype(device: str) -> str:
    if not device.startswith("cuda"):
        return "float32"
    import torch

    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def _distributed() -> tuple[int, int]:
    """(rank, world size) of this process; one process unless launched with several.

    ``accelerate launch`` and ``torchrun`` set ``WORLD_SIZE``; accelerate's ``PartialState``
    then joins the process group (gloo on CPU, nccl on GPU) the first time it is needed.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    try:
        from accelerate import PartialState
    except ImportError as e:
        raise ImportError(
            f"DenseRetriever runs several processes (WORLD_SIZE is set) through accelerate: "
            f"{_INSTALL}"
        ) from e
    state = PartialState()
    return state.process_index, state.num_processes


def _all_gather(obj: list) -> list:
    import torch.distributed as dist

    parts: list = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)
    return [item for part in parts for item in part]


def _broadcast(obj: Any) -> Any:
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _loaded_from(model: SentenceTransformer) -> str | None:
    inner = getattr(model, "transformers_model", None)
    with contextlib.suppress(Exception):
        inner = inner if inner is not None else model[0].auto_model
    return getattr(getattr(inner, "config", None), "_name_or_path", None) or None


def local_model_folder(name: str) -> tuple[Path | None, str | None]:
    """The folder a model loads from, and its Hub commit when it is a Hub cache snapshot;
    ``(None, None)`` for a Hub id not in the local cache (nothing is downloaded)."""
    path = Path(name).expanduser()
    if not path.is_dir():
        if _HUB_ID.fullmatch(name) is None:
            return None, None
        try:
            from huggingface_hub import snapshot_download

            cache = os.environ.get("SENTENCE_TRANSFORMERS_HOME")
            path = Path(snapshot_download(name, local_files_only=True, cache_dir=cache))
        except Exception as e:  # not in the local cache: the caller loads (downloads) it first
            logger.debug("no local snapshot of %s (%s)", name, e)
            return None, None
    path = path.resolve()
    is_snapshot = path.parent.name == "snapshots" and _HEX40.fullmatch(path.name) is not None
    return path, path.name if is_snapshot else None


def _content_hash(folder: Path) -> str:
    """sha256 over every file of the model folder (weights, configs, tokenizer), by path."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and p.name != "README.md"  # the card does not change the vectors
    )
    for p in files:
        digest.update(p.relative_to(folder).as_posix().encode() + b"\0")
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()[:40]


def _state_dict_hash(model: SentenceTransformer) -> str:
    """The last resort for a model known by no folder: a hash of its parameters."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + b"\0")
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy())
    return "params:" + digest.hexdigest()[:40]


def _card_license(folder: Path | None) -> str | None:
    readme = folder / "README.md" if folder else None
    if readme is None or not readme.is_file():
        return None
    try:
        from huggingface_hub.repocard import metadata_load

        value = (metadata_load(readme) or {}).get("license")
    except Exception as e:  # a malformed card leaves the license unknown, it is not fatal
        logger.debug("unreadable model card %s (%s)", readme, e)
        return None
    return str(value) if value else None


__all__ = [
    "DOCUMENT_PROMPT_NAMES",
    "FAISS_THRESHOLD",
    "QUERY_PROMPT_NAMES",
    "SCORE_BUDGET",
    "DenseRetriever",
    "Embeddings",
    "corpus_fingerprint",
    "cosine_search",
    "local_model_folder",
]
