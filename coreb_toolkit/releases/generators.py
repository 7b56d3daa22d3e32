"""LLM text generation behind one small contract, for the parts of a release an LLM writes.

A release maintainer who configures a generator gets the paper's LLM-written texts
(counterfactual rewrites, abbreviations, search queries, noise descriptions, code); without one
the pipeline falls back to :mod:`coreb_toolkit.releases.texts`. Every backend implements
:class:`Generator`:

* :class:`OpenAIGenerator`: any OpenAI-compatible chat-completions server (vLLM, TGI,
  llama.cpp server, a hosted API), through ``huggingface_hub.InferenceClient``;
* :class:`TransformersGenerator`: a local ``transformers`` causal LM (extra ``models``);
* :class:`CachedGenerator`: wraps either and keeps every response on disk, so that re-cutting
  a release costs no generation and the cache documents what was asked.

:func:`from_spec` builds one from a one-line spec (``"openai:<base_url>#<model>"`` or
``"transformers:<path>[#<gguf_file>]"``), the form the CLI and configs use.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

logger = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, str]]

SPEC_FORMS = "'openai:<base_url>#<model>' or 'transformers:<model_name_or_path>[#<gguf_file>]'"


class GenerationError(RuntimeError):
    """A generator could not produce a usable response (HTTP failure, empty completion)."""


@runtime_checkable
class Generator(Protocol):
    """What the release pipeline needs from an LLM: chat messages in, text out.

    ``name`` identifies the model (it keys the response cache and is recorded in the release's
    metadata), so two generators with the same name must answer alike.
    """

    name: str

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
    ) -> str:
        """The assistant's reply to ``messages`` (``[{"role": ..., "content": ...}]``).

        ``top_p`` (nucleus mass, ``0 < top_p <= 1``) and ``top_k`` (a positive int) restrict
        sampling; ``None`` leaves the backend's default (SynH-Rank §5.4 samples with 0.8 / 20).
        """
        ...


def _check_request(
    messages: Messages,
    max_tokens: int,
    temperature: float,
    top_p: float | None = None,
    top_k: int | None = None,
) -> list[dict]:
    """Validate a request once, for every backend, and return plain-dict messages."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValueError(
            "messages must be a non-empty list of {'role': ..., 'content': ...} dicts, "
            f"got {messages!r}"
        )
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise ValueError(f"messages[{i}] must be a dict with a str 'content', got {m!r}")
        if m.get("role") not in ("system", "user", "assistant"):
            raise ValueError(
                f"messages[{i}]['role'] must be 'system', 'user' or 'assistant', "
                f"got {m.get('role')!r}"
            )
        out.append({"role": m["role"], "content": m["content"]})
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ValueError(f"temperature must be a number >= 0, got {temperature!r}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature!r}")
    if top_p is not None and (
        isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1
    ):
        raise ValueError(
            f"top_p must be a number with 0 < top_p <= 1 (None = the backend's default), "
            f"got {top_p!r}"
        )
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(
            f"top_k must be a positive int (None = the backend's default), got {top_k!r}"
        )
    return out


def _sampling_kwargs(top_p: float | None, top_k: int | None) -> dict[str, Any]:
    """The sampling knobs that were set, for passing on (an unset one is never sent)."""
    return {k: v for k, v in (("top_p", top_p), ("top_k", top_k)) if v is not None}


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible servers
# ---------------------------------------------------------------------------------------------


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection-level exception types of the HTTP stack ``huggingface_hub`` uses.

    huggingface_hub has moved from ``requests`` to ``httpx`` (and ``httpx2``) across versions;
    the types are looked up instead of imported so that any of them is retried.
    """
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for module, attr in (("httpx2", "TransportError"), ("httpx", "TransportError")):
        with contextlib.suppress(ImportError, AttributeError):
            errors.append(getattr(importlib.import_module(module), attr))
    with contextlib.suppress(ImportError):
        requests = importlib.import_module("requests")
        errors += [requests.ConnectionError, requests.Timeout]
    return tuple(errors)


class OpenAIGenerator:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Requests go through ``huggingface_hub.InferenceClient(base_url=...).chat_completion``, which
    appends ``/v1/chat/completions`` (or ``/chat/completions`` after a ``/v1``) to ``base_url``
    and sends ``model``, ``messages``, ``max_tokens``, ``temperature`` and ``seed``; ``top_p``
    when set, as the standard field, and ``top_k`` when set, in the request body (not an OpenAI
    field, but vLLM, SGLang and llama.cpp server accept it there). A request's ``top_p`` /
    ``top_k`` win over the same keys in ``extra_params``.

    Failures: connection errors, timeouts, HTTP 429 and 5xx are retried ``retries`` times with
    exponential backoff (``backoff_s * 2**attempt``, or the server's ``Retry-After`` for 429 when
    longer); any other 4xx fails at once. Both raise :class:`GenerationError` naming the URL and
    the status. An empty completion is an error too: it usually means ``max_tokens`` was spent
    (e.g. on hidden reasoning), and silently storing "" would put an empty text in a release.

    Args:
        base_url: the server, e.g. ``"http://localhost:8000/v1"``.
        model: the model name the server expects (vLLM: the served model name). It is also the
            generator's identity: ``name = "openai:<model>"``, so the response cache survives
            moving the server to another host or port.
        api_key: sent as ``Authorization: Bearer``; ``None`` reads ``OPENAI_API_KEY`` and falls
            back to ``"EMPTY"`` (what vLLM and llama.cpp accept when started without a key).
            Never the Hugging Face token: ``InferenceClient`` would otherwise send the local
            HF token to whatever server ``base_url`` names.
        timeout: seconds per request.
        retries: retries after the first attempt (0 = a single attempt).
        backoff_s: first backoff; doubles on every retry.
        extra_params: more request fields, passed as the client's ``extra_body`` (e.g.
            ``{"top_p": 0.95}`` or vLLM's ``{"chat_template_kwargs": {"enable_thinking": False}}``).

    Note:
        With ``HF_HUB_OFFLINE=1`` huggingface_hub refuses every HTTP request, local servers
        included; unset it for the process that talks to the server (the error says so).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60,
        retries: int = 3,
        backoff_s: float = 1.0,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must be an http(s) URL such as 'http://localhost:8000/v1', "
                f"got {base_url!r}"
            )
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be the served model's name, got {model!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, got {retries!r}")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if backoff_s < 0:
            raise ValueError(f"backoff_s must be >= 0 seconds, got {backoff_s!r}")
        from huggingface_hub import InferenceClient

        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}"
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.extra_params = dict(extra_params or {})
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._client = InferenceClient(base_url=base_url, api_key=key, timeout=timeout)

    def __repr__(self) -> str:
        return f"OpenAIGenerator(base_url={self.base_url!r}, model={self.model!r})"

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
    ) -> str:
        """The first choice's message content; retried on transient failures (see class)."""
        from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

        messages = _check_request(messages, max_tokens, temperature, top_p, top_k)
        # the client merges extra_body over its own fields, so a request's top_p must leave it
        extra = {
            k: v for k, v in self.extra_params.items() if not (k == "top_p" and top_p is not None)
        }
        if top_k is not None:
            extra["top_k"] = top_k
        transient = _transport_errors()
        attempt = 0
        while True:
            delay = self.backoff_s * 2**attempt
            try:
                out = self._client.chat_completion(
                    messages,
                    model=self.model,
                    max_tokens=max_tokens,
                    temperature=float(temperature),
                    seed=seed,
                    top_p=None if top_p is None else float(top_p),
                    # only when set: older huggingface_hub versions lack the argument
                    **({"extra_body": extra} if extra else {}),
                )
                break
            except OfflineModeIsEnabled as err:  # a ConnectionError: must come before `transient`
                raise GenerationError(
                    f"cannot reach {self.base_url}: HF_HUB_OFFLINE=1 makes huggingface_hub refuse "
                    "every HTTP request, local servers included; unset it for this process"
                ) from err
            except HfHubHTTPError as err:
                status = err.response.status_code if err.response is not None else None
                url = err.response.url if err.response is not None else self.base_url
                body = _response_text(err)
                if status != 429 and (status is None or status < 500):
                    raise GenerationError(
                        f"{url} answered HTTP {status} for model {self.model!r}: {body}"
                    ) from err
                if status == 429:
                    delay = max(delay, _retry_after(err))
                failure = f"HTTP {status} from {url}: {body}"
                last: BaseException = err
            except transient as err:
                failure = f"{type(err).__name__} talking to {self.base_url}: {err}"
                last = err
            if attempt >= self.retries:
                raise GenerationError(
                    f"giving up on {self.base_url} (model {self.model!r}) after "
                    f"{attempt + 1} attempt(s): {failure}"
                ) from last
            logger.warning("%s; retry %d/%d in %.1fs", failure, attempt + 1, self.retries, delay)
            time.sleep(delay)
            attempt += 1
        if not out.choices:
            raise GenerationError(f"{self.base_url} returned no choices for model {self.model!r}")
        choice = out.choices[0]
        content = choice.message.content if choice.message is not None else None
        if not content or not content.strip():
            raise GenerationError(
                f"{self.base_url} returned an empty completion for model {self.model!r} "
                f"(finish_reason={choice.finish_reason!r}; if 'length', raise max_tokens="
                f"{max_tokens})"
            )
        return content


def _response_text(err: Any) -> str:
    with contextlib.suppress(Exception):
        return err.response.text[:500]
    return str(err)[:500]


def _retry_after(err: Any) -> float:
    """The server's ``Retry-After`` in seconds (capped at a minute), 0 when absent."""
    with contextlib.suppress(Exception):
        return min(float(err.response.headers.get("Retry-After")), 60.0)
    return 0.0


# ---------------------------------------------------------------------------------------------
# Local transformers models
# ---------------------------------------------------------------------------------------------


_DTYPES = ("auto", "float32", "float16", "bfloat16", "float64")


class TransformersGenerator:
    """A local ``transformers`` causal LM, prompted through its chat template.

    The model loads on the first :meth:`generate` call, not in the constructor, so that a
    :class:`CachedGenerator` answering a re-run from its cache never loads it.
    ``temperature == 0`` decodes greedily; otherwise it samples, seeded by ``seed`` inside a
    forked torch RNG (the global RNG is left as it was), so a seeded request is reproducible.
    When sampling, ``top_p`` / ``top_k`` replace the model's generation defaults (unset, those
    defaults stay); greedy decoding has no use for them.

    Args:
        model_name_or_path: a local folder or Hub id (loading from the Hub needs network).
        gguf_file: a GGUF file inside that folder (needs the ``gguf`` and ``accelerate``
            packages); ``None`` for safetensors / bin weights.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``.
        dtype: ``"auto"``, ``"float32"``, ``"float16"``, ``"bfloat16"`` or ``"float64"``;
            ``None`` = transformers' default.

    Raises:
        ImportError: when ``transformers`` / ``torch`` (extra ``models``) or, for a GGUF file,
            ``gguf`` / ``accelerate`` is missing.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        gguf_file: str | None = None,
        device: str = "cpu",
        dtype: str | None = None,
    ) -> None:
        for module in ("torch", "transformers"):
            if importlib.util.find_spec(module) is None:
                raise ImportError(
                    f"TransformersGenerator needs {module!r}; install the extra: "
                    "pip install coreb-toolkit[models]"
                )
        if gguf_file:
            missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
            if missing:
                raise ImportError(
                    f"transformers loads the GGUF file {gguf_file!r} only with "
                    f"{' and '.join(missing)}: pip install {' '.join(missing)}"
                )
        if dtype is not None and dtype not in _DTYPES:
            raise ValueError(f"dtype must be None or one of {_DTYPES}, got {dtype!r}")
        if not str(model_name_or_path).strip():
            raise ValueError("model_name_or_path must name a model folder or Hub id, got ''")
        self.model_name_or_path = str(model_name_or_path)
        self.gguf_file = gguf_file or None
        self.device = device
        self.dtype = dtype
        self.name = f"transformers:{self.model_name_or_path}" + (
            f"#{self.gguf_file}" if self.gguf_file else ""
        )
        self._model: Any = None
        self._tokenizer: Any = None

    def __repr__(self) -> str:
        return (
            f"TransformersGenerator({self.model_name_or_path!r}, gguf_file={self.gguf_file!r}, "
            f"device={self.device!r}, dtype={self.dtype!r})"
        )

    def _load(self) -> None:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        files: dict[str, Any] = {"gguf_file": self.gguf_file} if self.gguf_file else {}
        kwargs = dict(files)
        if self.dtype is not None:
            dtype = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
            # transformers renamed `torch_dtype` to `dtype` in 4.56
            major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
            kwargs["dtype" if (major, minor) >= (4, 56) else "torch_dtype"] = dtype
        logger.info("loading %s", self.name)
        tokenizer = AutoTokenizer.from_pretrained(self.model_name_or_path, **files)
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                f"{self.name} has no chat template; TransformersGenerator needs an instruct / "
                "chat model"
            )
        model = AutoModelForCausalLM.from_pretrained(self.model_name_or_path, **kwargs)
        model.to(self.device)
        model.eval()
        self._tokenizer, self._model = tokenizer, model

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
    ) -> str:
        """The model's reply to ``messages``: greedy at temperature 0, else seeded sampling."""
        import torch

        messages = _check_request(messages, max_tokens, temperature, top_p, top_k)
        if self._model is None:
            self._load()
        tokenizer, model = self._tokenizer, self._model
        prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        # the template already wrote BOS and the role markers
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        config = model.generation_config.to_dict()
        config.update(max_new_tokens=max_tokens, do_sample=temperature > 0)
        if temperature > 0:
            config["temperature"] = float(temperature)
            if top_p is not None:
                config["top_p"] = float(top_p)
            if top_k is not None:
                config["top_k"] = int(top_k)
        else:  # unset the sampling knobs so greedy decoding does not warn about them
            config.update(temperature=None, top_p=None, top_k=None, min_p=None)
        if config.get("pad_token_id") is None:
            pad = tokenizer.pad_token_id
            config["pad_token_id"] = tokenizer.eos_token_id if pad is None else pad
        gen_config = type(model.generation_config).from_dict(config)
        rng = contextlib.nullcontext()
        if temperature > 0 and seed is not None:
            cuda = model.device.type == "cuda"
            rng = torch.random.fork_rng(devices=[model.device] if cuda else [])
        with torch.inference_mode(), rng:
            if temperature > 0 and seed is not None:
                torch.manual_seed(seed)
            output = model.generate(**inputs, generation_config=gen_config)
        new_tokens = output[0, inputs["input_ids"].shape[1] :]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        if not text:
            raise GenerationError(f"{self.name} produced an empty completion")
        return text


# ---------------------------------------------------------------------------------------------
# On-disk cache
# ---------------------------------------------------------------------------------------------


class CachedGenerator:
    """Every response of ``inner`` kept on disk, so a re-run generates nothing.

    The key is a SHA-256 of (``inner.name``, messages, max_tokens, temperature, seed, and
    ``top_p`` / ``top_k`` only when set, so entries written before they existed keep their keys);
    the file ``<cache_dir>/<key[:2]>/<key>.json`` holds the request next to the response, so a
    release's LLM texts can be audited (what exactly was asked, of which model). Files are
    written to a temporary name and renamed, so an interrupted run never leaves a truncated
    entry. Only successful responses are cached: an error is raised again on the next run.

    Attributes:
        hits, misses: counts for this instance (the pipeline reports them).
    """

    def __init__(self, inner: Generator, cache_dir: str | os.PathLike[str]) -> None:
        if not callable(getattr(inner, "generate", None)) or not isinstance(
            getattr(inner, "name", None), str
        ):
            raise ValueError(
                f"inner must be a Generator (a str `name` and a `generate` method), got {inner!r}"
            )
        self.inner = inner
        self.name = inner.name
        self.cache_dir = Path(cache_dir)
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"CachedGenerator({self.inner!r}, cache_dir={str(self.cache_dir)!r})"

    def request(
        self,
        messages: list[dict],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        top_p: float | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """The request as stored and hashed (numbers normalised: ``0`` and ``0.0`` are equal).

        ``top_p`` / ``top_k`` are keys only when set: a request without them hashes as it did
        before they existed.
        """
        request = {
            "generator": self.name,
            "messages": _check_request(messages, max_tokens, temperature, top_p, top_k),
            "max_tokens": int(max_tokens),
            "temperature": float(temperature),
            "seed": None if seed is None else int(seed),
        }
        if top_p is not None:
            request["top_p"] = float(top_p)
        if top_k is not None:
            request["top_k"] = int(top_k)
        return request

    def path_for(self, request: Mapping[str, Any]) -> Path:
        """Where ``request``'s response is (or would be) stored."""
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        return self.cache_dir / key[:2] / f"{key}.json"

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
    ) -> str:
        """The cached response, or ``inner``'s (then stored).

        ``top_p`` / ``top_k`` reach ``inner`` only when set, so a backend written before they
        existed keeps working for requests without them.
        """
        request = self.request(messages, max_tokens, temperature, seed, top_p, top_k)
        path = self.path_for(request)
        if path.is_file():
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as err:
                raise ValueError(
                    f"unreadable generator cache entry {path}: {err}; delete it"
                ) from err
            if entry.get("request") != request or not isinstance(entry.get("response"), str):
                raise ValueError(
                    f"generator cache entry {path} does not hold this request's response; delete it"
                )
            self.hits += 1
            return entry["response"]
        self.misses += 1
        response = self.inner.generate(
            request["messages"],
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            **_sampling_kwargs(top_p, top_k),
        )
        entry = {"request": request, "response": response, "created": time.time()}
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, ensure_ascii=False, indent=1)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return response


# ---------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------


def from_spec(spec: str, cache_dir: str | os.PathLike[str] | None = None) -> Generator:
    """A generator from a one-line spec, cached on disk when ``cache_dir`` is given.

    ``"openai:http://localhost:8000/v1#Qwen/Qwen2.5-Coder-32B-Instruct"`` (API key from
    ``OPENAI_API_KEY``) or ``"transformers:/models/SmolLM2[#model.Q4_1.gguf]"``.

    Raises:
        ValueError: for any other form, showing the two accepted ones.
    """
    if not isinstance(spec, str):
        raise ValueError(f"generator spec must be a str, {SPEC_FORMS}; got {spec!r}")
    kind, sep, rest = spec.strip().partition(":")
    generator: Generator
    if sep and kind == "openai":
        base_url, _, model = rest.rpartition("#")
        if not base_url.startswith(("http://", "https://")) or not model.strip():
            raise ValueError(f"bad generator spec {spec!r}: expected {SPEC_FORMS}")
        generator = OpenAIGenerator(base_url, model.strip())
    elif sep and kind == "transformers":
        path, hashed, gguf = rest.partition("#")
        if not path.strip() or (hashed and not gguf.strip()):
            raise ValueError(f"bad generator spec {spec!r}: expected {SPEC_FORMS}")
        generator = TransformersGenerator(path.strip(), gguf_file=gguf.strip() or None)
    else:
        raise ValueError(f"bad generator spec {spec!r}: expected {SPEC_FORMS}")
    return CachedGenerator(generator, cache_dir) if cache_dir is not None else generator
