"""Guideline-driven synthesis of high- and low-quality variants [SynH-Rank §4.1, §5.4, §6.2].

For every seed task, dimension, level and ``k < variants_per_level`` one request goes to an LLM:

* ``mode="guideline"`` (SynH-Rank): the prompt carries guideline group ``k % K`` of the
  dimension (Table 2, :mod:`trainers.quality_data.guidelines`), so cycling the ``K = 4`` groups
  gives ``2K`` variants per dimension per task, each from a distinct coding strategy;
* ``mode="plain"`` (the "w/o guideline" ablation, §6.2): the same prompt without a guideline,
  plain nucleus sampling, the same number of requests, each with its own seed.

Both sample with the paper's defaults (temperature 0.7, top-p 0.8, top-k 20, 1,024 new tokens,
§5.4). Each request's seed is derived from ``(seed, task_id, dimension, level, k)``, so a run is
reproducible and a request's seed does not depend on the order of the tasks. With a
``cache_dir`` every response is kept on disk (:class:`~coreb_toolkit.releases.generators.
CachedGenerator`): a run that stopped (a server failure raises, after what was generated is
cached) is resumed by running it again, which generates only what is missing.

Nothing is filtered here: an empty or code-less reply is a variant with empty code, which the
filter step counts and drops [SynH-Rank §4.1 "Filtering"].

Example:
    >>> from coreb_toolkit.releases.generators import from_spec
    >>> gen = from_spec("openai:http://localhost:8000/v1#Qwen/Qwen3-Coder-30B-A3B-Instruct",
    ...                 cache_dir="synthesis-cache")  # doctest: +SKIP
    >>> result = synthesize(tasks, gen, SynthesisOptions())  # doctest: +SKIP
    >>> result.report["requests"], result.report["cache"]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.releases.generators import CachedGenerator, GenerationError, Generator
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS
from trainers.quality_data.guidelines import GuidelineGroup, Guidelines, load_guidelines
from trainers.quality_data.records import LEVELS, Drop, SeedTask, Variant

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("guideline", "plain")
"""``guideline``: SynH-Rank's guideline-driven prompts; ``plain``: the same prompts without a
guideline, plain nucleus sampling (the "w/o guideline" ablation)."""

STAGE = "synthesis"
"""The ``Drop.stage`` of what this step leaves out."""


@dataclass(frozen=True)
class SynthesisOptions:
    """How variants are synthesised, with the paper's values as defaults [SynH-Rank §4.1,
    §5.4]; each field's ``help`` says what it does."""

    mode: str = field(
        default="guideline",
        metadata={
            "help": "'guideline': each request carries one Table 2 guideline group (SynH-Rank); "
            "'plain': the same prompt without guideline, plain nucleus sampling (the 'w/o "
            "guideline' ablation), the same number of requests."
        },
    )
    dimensions: tuple[str, ...] = field(
        default=QUALCODE_DIMENSIONS,
        metadata={
            "help": "The quality dimensions to synthesise for (speed, memory, "
            "maintainability); each must be in the guideline file."
        },
    )
    variants_per_level: int = field(
        default=4,
        metadata={
            "help": "Requests per task, dimension and level (4 = K: each guideline group once, "
            "2K variants per dimension per task). Above K the groups cycle again with new "
            "seeds."
        },
    )
    temperature: float = field(
        default=0.7, metadata={"help": "Sampling temperature (0.7, SynH-Rank §5.4)."}
    )
    top_p: float | None = field(
        default=0.8,
        metadata={"help": "Nucleus sampling mass, 0 < top_p <= 1 (0.8); None: the backend's."},
    )
    top_k: int | None = field(
        default=20,
        metadata={"help": "Top-k sampling, a positive int (20); None: the backend's default."},
    )
    max_new_tokens: int = field(
        default=1024, metadata={"help": "Most tokens per response (1,024, SynH-Rank §5.4)."}
    )
    seed: int = field(
        default=0,
        metadata={
            "help": "Seeds every request: each one's seed is a hash of (seed, task_id, "
            "dimension, level, k), independent of the order of the tasks."
        },
    )
    cache_dir: str | None = field(
        default=None,
        metadata={
            "help": "Keep every response on disk here, so a re-run (after an interruption) "
            "generates only what is missing. None: no cache (a warning says so)."
        },
    )
    guidelines: str | None = field(
        default=None,
        metadata={
            "help": "A guideline file of your own (the format of trainers/quality_data/"
            "guidelines.json); None: the packaged Table 2 groups."
        },
    )

    def __post_init__(self) -> None:
        name = type(self).__name__
        if self.mode not in MODES:
            raise ValueError(f"{name}.mode must be one of {MODES}, got {self.mode!r}")
        dims = self.dimensions
        if isinstance(dims, str) or not isinstance(dims, Iterable):
            raise ValueError(
                f"{name}.dimensions must be a list of dimensions such as ['speed'], got {dims!r}"
            )
        dims = tuple(dims)
        unknown = [d for d in dims if d not in QUALCODE_DIMENSIONS]
        if not dims or unknown or len(set(dims)) != len(dims):
            raise ValueError(
                f"{name}.dimensions must be distinct dimensions of {QUALCODE_DIMENSIONS}, at "
                f"least one, got {list(dims)!r}"
            )
        object.__setattr__(self, "dimensions", dims)  # a YAML list becomes a tuple
        for key in ("variants_per_level", "max_new_tokens"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}.{key} must be a positive int, got {value!r}")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
            raise ValueError(f"{name}.temperature must be a number >= 0 (0 = greedy), got {t!r}")
        p = self.top_p
        if p is not None and (
            isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1
        ):
            raise ValueError(f"{name}.top_p must be None or a number in (0, 1], got {p!r}")
        k = self.top_k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"{name}.top_k must be None or a positive int, got {k!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"{name}.seed must be an int, got {self.seed!r}")
        for key in ("cache_dir", "guidelines"):
            value = getattr(self, key)
            if value is None:
                continue
            if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
                raise ValueError(f"{name}.{key} must be None or a path, got {value!r}")
            object.__setattr__(self, key, str(value))
        if self.mode == "plain" and self.temperature == 0 and self.variants_per_level > 1:
            logger.warning(
                "plain mode at temperature 0 decodes greedily: the %d variants per level will "
                "be identical (and the filter will drop them as duplicates)",
                self.variants_per_level,
            )


@dataclass
class SynthesisResult:
    """What :func:`synthesize` made.

    Attributes:
        variants: one :class:`Variant` per request, in request order (task, dimension, level,
            k); ``code`` is :func:`extract_code` of the reply, possibly empty.
        drops: the tasks left out (an empty statement), each a :class:`Drop`.
        report: counts: tasks, requests, cache hits and misses, variants per dimension and level
            and per origin, empty codes, drops by (stage, reason), seconds.
    """

    variants: list[Variant]
    drops: list[Drop]
    report: dict[str, Any]


@dataclass(frozen=True)
class _Request:
    task: SeedTask
    dimension: str
    level: str
    k: int
    group: GuidelineGroup | None
    messages: list[dict]
    seed: int


def request_seed(seed: int, task_id: str, dimension: str, level: str, k: int) -> int:
    """The sampling seed of one request: the first 4 bytes of a SHA-256 of its coordinates.

    Stable across runs, machines and Python versions (no ``hash()``), and independent of the
    order in which tasks come.
    """
    key = "\x1f".join(str(x) for x in (seed, task_id, dimension, level, k))
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:4], "big")


def synthesize(
    tasks: Iterable[SeedTask],
    generator: Generator,
    options: SynthesisOptions | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    guidelines: Guidelines | None = None,
    progress: bool = True,
) -> SynthesisResult:
    """Variants of every task for every dimension and level [SynH-Rank §4.1, equation 3].

    Args:
        tasks: the seed tasks (Python tasks with distinct ids).
        generator: any :class:`~coreb_toolkit.releases.generators.Generator` (an
            OpenAI-compatible server, a local ``transformers`` model, a
            :class:`~coreb_toolkit.releases.generators.CachedGenerator` of either).
        options: :class:`SynthesisOptions` (``None``: the paper's defaults).
        cache_dir: where responses are kept (overrides nothing: giving it here and a different
            one in ``options`` or on a ``CachedGenerator`` is an error).
        guidelines: already loaded guidelines (default: ``options.guidelines``' file, else the
            packaged Table 2 file).
        progress: show a progress bar.

    Returns:
        A :class:`SynthesisResult`; the report's ``cache`` says how many responses came from
        the cache (``hits``) and how many were generated (``misses``).

    Raises:
        TypeError: a task is not a :class:`SeedTask`, or ``generator`` is no Generator.
        ValueError: duplicate task ids, a non-Python task, a dimension the guideline file
            lacks, conflicting cache folders.
        GenerationError: the generator failed; what was generated before is in the cache, so
            running again resumes.
    """
    options = options if options is not None else SynthesisOptions()
    if not isinstance(getattr(generator, "name", None), str) or not callable(
        getattr(generator, "generate", None)
    ):
        raise TypeError(
            f"generator must be a Generator (a str `name` and a `generate` method), got "
            f"{generator!r}; build one with coreb_toolkit.releases.generators.from_spec"
        )
    task_list = _check_tasks(tasks)
    chosen = guidelines if guidelines is not None else load_guidelines(options.guidelines)
    missing = [d for d in options.dimensions if d not in chosen.dimensions]
    if missing:
        raise ValueError(
            f"dimension(s) {', '.join(missing)} of SynthesisOptions.dimensions are not in the "
            f"guideline file {chosen.path} (it has {', '.join(chosen.dimensions)}); add them "
            "there or leave them out of dimensions"
        )
    gen = _cached(generator, cache_dir, options.cache_dir)
    hits0, misses0 = (gen.hits, gen.misses) if isinstance(gen, CachedGenerator) else (0, 0)

    drops: list[Drop] = []
    usable = []
    for task in task_list:
        if task.statement.strip():
            usable.append(task)
        else:
            drops.append(Drop(STAGE, "empty statement", task.task_id, task.source))
    requests = _plan(usable, options, chosen)  # every prompt is built before any generation
    start = time.perf_counter()
    variants = _generate(requests, gen, options, progress)
    seconds = time.perf_counter() - start

    if isinstance(gen, CachedGenerator):
        cache = {
            "dir": str(gen.cache_dir),
            "hits": gen.hits - hits0,
            "misses": gen.misses - misses0,
        }
    else:
        cache = {"dir": None, "hits": 0, "misses": len(requests)}
    report = {
        "mode": options.mode,
        "generator": gen.name,
        "guidelines": chosen.path,
        "k": chosen.k,
        "options": asdict(options),
        "tasks": len(task_list),
        "tasks_used": len(usable),
        "requests": len(requests),
        "cache": cache,
        **_counts(variants, drops, options.dimensions),
        "seconds": round(seconds, 3),
    }
    logger.info(
        "synthesis (%s): %d requests for %d tasks, %d from the cache, %.1fs",
        options.mode, len(requests), len(usable), cache["hits"], seconds,
    )  # fmt: skip
    return SynthesisResult(variants=variants, drops=drops, report=report)


def _counts(
    variants: list[Variant], drops: list[Drop], dimensions: tuple[str, ...]
) -> dict[str, Any]:
    """The report's counts of variants (per dimension and level, per origin) and drops."""
    by_level: dict[str, dict[str, int]] = {d: dict.fromkeys(LEVELS, 0) for d in dimensions}
    for v in variants:
        by_level[v.dimension][v.level] += 1  # type: ignore[index]
    drop_counts = Counter((d.stage, d.reason) for d in drops)
    return {
        "variants": len(variants),
        "by_dimension_level": by_level,
        "by_origin": dict(Counter(v.origin for v in variants)),
        "empty_code": sum(1 for v in variants if not v.code),
        "drops": [
            {"stage": stage, "reason": reason, "count": n}
            for (stage, reason), n in sorted(drop_counts.items())
        ],
    }


def _check_tasks(tasks: Iterable[SeedTask]) -> list[SeedTask]:
    task_list = list(tasks)
    seen: set[str] = set()
    for i, task in enumerate(task_list):
        if not isinstance(task, SeedTask):
            raise TypeError(f"tasks[{i}] must be a SeedTask, got {type(task).__name__}: {task!r}")
        if task.task_id in seen:
            raise ValueError(
                f"task id {task.task_id!r} comes twice in tasks; ids name the variants' tasks "
                "and must be unique"
            )
        seen.add(task.task_id)
    other = [f"{t.task_id} ({t.language})" for t in task_list if t.language != "python"]
    if other:
        raise ValueError(
            f"the synthesis prompts ask for Python 3 (Table 2's guidelines are Python's), but "
            f"{len(other)} task(s) have another language: {', '.join(other[:5])}"
            f"{' ...' if len(other) > 5 else ''}; give python tasks"
        )
    return task_list


def _cached(
    generator: Generator,
    argument: str | os.PathLike[str] | None,
    option: str | None,
) -> Generator:
    """``generator`` behind a response cache when a cache folder is given (once)."""
    if argument is not None and option is not None and Path(argument) != Path(option):
        raise ValueError(
            f"cache_dir {str(argument)!r} (argument) and SynthesisOptions.cache_dir {option!r} "
            "differ; give one"
        )
    folder = argument if argument is not None else option
    if isinstance(generator, CachedGenerator):
        if folder is not None and Path(folder) != generator.cache_dir:
            raise ValueError(
                f"the generator already caches in {str(generator.cache_dir)!r}, but cache_dir "
                f"{str(folder)!r} was given; give one cache_dir"
            )
        return generator
    if folder is None:
        logger.warning(
            "no cache_dir: responses are not kept on disk, and an interrupted run starts over"
        )
        return generator
    return CachedGenerator(generator, folder)


def _plan(
    tasks: list[SeedTask], options: SynthesisOptions, guidelines: Guidelines
) -> list[_Request]:
    out = []
    for task in tasks:
        for dimension in options.dimensions:
            groups = guidelines.groups(dimension)
            for level in LEVELS:
                for k in range(options.variants_per_level):
                    group = groups[k % len(groups)] if options.mode == "guideline" else None
                    messages = guidelines.prompt(dimension, level, group, task)
                    seed = request_seed(options.seed, task.task_id, dimension, level, k)
                    out.append(_Request(task, dimension, level, k, group, messages, seed))
    return out


def _generate(
    requests: list[_Request], gen: Generator, options: SynthesisOptions, progress: bool
) -> list[Variant]:
    from tqdm.auto import tqdm

    sampling = {
        key: value
        for key, value in (("top_p", options.top_p), ("top_k", options.top_k))
        if value is not None
    }  # an unset knob is not sent: generators written before top_p/top_k keep working
    origin = "guideline" if options.mode == "guideline" else "plain"
    variants = []
    for i, r in enumerate(
        tqdm(requests, desc=f"synthesis ({options.mode})", unit="request", disable=not progress)
    ):
        try:
            response = gen.generate(
                r.messages,
                max_tokens=options.max_new_tokens,
                temperature=options.temperature,
                seed=r.seed,
                **sampling,
            )
        except GenerationError as err:
            kept = (
                f"they are cached in {gen.cache_dir}, a re-run generates only the rest"
                if isinstance(gen, CachedGenerator)
                else "no cache_dir was given, so a re-run generates them again"
            )
            raise GenerationError(
                f"synthesis request {i + 1} of {len(requests)} (task {r.task.task_id!r}, "
                f"{r.dimension}/{r.level}, k={r.k}) failed: {err}. {i} of {len(requests)} "
                f"responses were done; {kept}: re-run to resume"
            ) from err
        if not isinstance(response, str):
            raise TypeError(
                f"{gen.name} returned {type(response).__name__} for request {i + 1}, not a str"
            )
        variants.append(
            Variant(
                task_id=r.task.task_id,
                code=extract_code(response),
                origin=origin,
                dimension=r.dimension,
                level=r.level,
                category=r.group.category if r.group is not None else None,
                guideline=r.group.text(r.level) if r.group is not None else None,
            )
        )
    return variants


_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.DOTALL | re.M
)
_PYTHON_TAGS = ("python", "py", "python3", "py3")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def extract_code(response: str) -> str:
    """The program in a reply: the first ```` ```python ```` fenced block.

    Without a Python-tagged block, the first fenced block of any tag; without any fence, the
    whole reply stripped; ``""`` when there is nothing. A ``<think>...</think>`` part (reasoning
    models) is ignored, and a block the reply ends inside (cut at ``max_new_tokens``) runs to the
    end. Surrounding blank lines go; the block's indentation stays.

    Raises:
        TypeError: ``response`` is not a str.
    """
    if not isinstance(response, str):
        raise TypeError(
            f"response must be the generator's reply (str), got {type(response).__name__}"
        )
    text = _THINK.sub("", response)
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text)]
    if not blocks:
        return text.strip()
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    body = python[0] if python else blocks[0][1]
    return _LEADING_BLANK_LINES.sub("", body).rstrip()


__all__ = [
    "MODES",
    "STAGE",
    "SynthesisOptions",
    "SynthesisResult",
    "extract_code",
    "request_seed",
    "synthesize",
]
