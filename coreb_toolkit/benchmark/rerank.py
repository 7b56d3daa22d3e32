"""The second stage of the benchmark: rerank each query's first-stage top-k with a reranker.

For every subtask, each query's first-stage candidates are ordered exactly as trec_eval ranks
them (score descending in single precision, ties by document id descending, as
:mod:`eval_metrics` scores every measure), the query's excluded ids (the code-to-code anchor)
are dropped, and the first ``top_k`` are kept. Every (query text, document text) pair of the
subtask is scored in **one** ``reranker.score(...)`` call with the subtask's CoREB instruction
(:func:`reranker.instructions.instruction_for`), so the backend's length sorting and
token-budget batching work across queries, and its score cache sees the whole subtask.

The reranked run holds only those ``top_k`` documents per query, with the reranker's scores:
documents beyond the first stage's top-k are dropped, not appended below the reranked ones
(the paper reranks the top-128 and evaluates the reranked list). Consequences, stated in every
report: Recall@k for k >= ``top_k`` of the reranked run equals the first stage's
Recall@``top_k`` (the same documents, re-ordered), and ties among reranker scores are ordered
by trec_eval's rule like any other tie.

References:
    CoREB §4.3 and Appendix B.3 (the reranking protocol), Figure 8 (delta nDCG@10 per task).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_metrics.trec_order import trec_order
from reranker.base import BaseReranker, Reranker, runtime_metadata
from reranker.instructions import instruction_for

logger = logging.getLogger(__name__)

#: First-stage documents reranked per query: the paper reranks the top 128 (CoREB B.3). The one
#: place for the default (the runner, the CLI and the benchmarks import it).
DEFAULT_RERANK_TOP_K = 128
_INDEX = re.compile(r"\bindex (\d+)\b")


def check_top_k(top_k: object, what: str = "rerank_top_k") -> int:
    """``top_k`` if it is a positive int, else a ``ValueError`` saying so."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(
            f"{what} must be a positive integer (the paper reranks the top "
            f"{DEFAULT_RERANK_TOP_K}), got {top_k!r}"
        )
    return top_k


def first_stage_top_k(
    ranking: Mapping[str, float], top_k: int, exclude: Sequence[str] = ()
) -> list[str]:
    """The ids of ``ranking``'s best ``top_k`` documents, best first, ``exclude`` left out.

    The order is trec_eval's, the one :func:`eval_metrics.evaluate_retrieval` scores: score
    descending compared in single precision (two scores that round to the same float32 tie),
    ties by document id descending.
    """
    skip = set(exclude)
    kept = {d: s for d, s in ranking.items() if d not in skip} if skip else ranking
    return trec_order(kept, top_k)


def _subtasks(item_or_subtasks: Any) -> Mapping[str, Any]:
    subtasks = getattr(item_or_subtasks, "subtasks", item_or_subtasks)
    if not isinstance(subtasks, Mapping):
        raise TypeError(
            f"rerank_runs expects a runner.ReleaseInput or a mapping {{subtask: SubtaskData}}, "
            f"got {type(item_or_subtasks).__name__}"
        )
    return subtasks


def rerank_subtask(
    reranker: Reranker,
    subtask: str,
    data: Any,
    run: Mapping[str, Mapping[str, float]],
    top_k: int,
    progress: bool = False,
) -> dict[str, dict[str, float]]:
    """One subtask's reranked run: its pairs scored in one ``reranker.score`` call (with a
    :class:`~reranker.base.BaseReranker`, ``progress`` shows a bar over its pairs, and with a
    score cache every finished batch is on disk: a killed run resumes there)."""
    pairs: list[tuple[str, str]] = []
    where: list[tuple[str, str]] = []
    candidates: dict[str, list[str]] = {}
    for query_id, ranking in run.items():
        if query_id not in data.queries:
            raise ValueError(
                f"{subtask}: the first-stage run ranks query {query_id!r}, which the subtask "
                f"does not have; rerank a run of this subtask and release"
            )
        docs = first_stage_top_k(ranking, top_k, data.exclude.get(query_id, ()))
        candidates[query_id] = docs
        query = data.queries[query_id]
        for doc_id in docs:
            if doc_id not in data.corpus:
                raise ValueError(
                    f"{subtask}: the first-stage run of query {query_id!r} holds document "
                    f"{doc_id!r}, which is not in the corpus {data.corpus_name!r}"
                )
            document = data.corpus[doc_id]
            for what, text in (("query", query), ("document", document)):
                if not isinstance(text, str) or not text.strip():
                    raise ValueError(
                        f"reranking {subtask}: query {query_id!r}, document {doc_id!r}: the "
                        f"{what} text is empty, and a reranker cannot score it; fix the dataset "
                        f"or leave the subtask out (--subtasks)"
                    )
            pairs.append((query, document))
            where.append((query_id, doc_id))
    scores: list[float] = []
    if pairs:
        try:
            instruction = instruction_for(subtask)
            if isinstance(reranker, BaseReranker):
                bar = subtask if progress else False
                scores = reranker.score(pairs, instruction=instruction, progress=bar)
            else:  # the Reranker protocol's score has no progress bar
                scores = reranker.score(pairs, instruction=instruction)
        except ValueError as err:
            # a backend's error names the index of the pair it rejects; behind a score cache
            # it sees only the uncached pairs, so the index is ours only without one
            found = _INDEX.search(str(err))
            uncached = getattr(reranker, "cache_dir", None) is None
            if found and uncached and int(found.group(1)) < len(where):
                query_id, doc_id = where[int(found.group(1))]
                raise ValueError(
                    f"reranking {subtask}: query {query_id!r}, document {doc_id!r}: {err}"
                ) from err
            raise ValueError(f"reranking {subtask}: {err}") from err
        if len(scores) != len(pairs):
            raise ValueError(
                f"reranking {subtask}: {type(reranker).__name__}.score returned {len(scores)} "
                f"scores for {len(pairs)} pairs; a reranker returns one score per pair"
            )
    reranked: dict[str, dict[str, float]] = {q: {} for q in candidates}
    for (query_id, doc_id), score in zip(where, scores, strict=True):
        reranked[query_id][doc_id] = float(score)
    return reranked


def rerank_runs(
    reranker: Reranker,
    item_or_subtasks: Any,
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    top_k: int = DEFAULT_RERANK_TOP_K,
    progress: bool = True,
) -> dict[str, dict[str, dict[str, float]]]:
    """Rerank the first-stage ``runs`` of a release, subtask by subtask.

    Args:
        reranker: a :class:`reranker.base.BaseReranker` (or anything with its ``score``).
        item_or_subtasks: the release (:class:`coreb_toolkit.benchmark.runner.ReleaseInput`) or its
            ``{subtask: SubtaskData}``: query texts, corpus texts and exclusions.
        runs: ``{subtask: {query_id: {doc_id: score}}}`` from the first stage.
        top_k: first-stage documents reranked per query (after exclusions).
        progress: tqdm bars over the subtasks and over the pairs of each (on a terminal only;
            a log line per subtask otherwise).

    Returns:
        ``{subtask: {query_id: {doc_id: reranker score}}}`` holding, per query, only its
        first-stage top-``top_k`` (excluded ids never scored nor kept).

    Raises:
        ValueError: a bad ``top_k``, a run of a subtask or query the release lacks, a document
            missing from the corpus, or a pair the reranker rejects (an empty text, a query
            too long): the message names the subtask, the query id and the document id.
    """
    check_top_k(top_k, "top_k")
    subtasks = _subtasks(item_or_subtasks)
    unknown = [name for name in runs if name not in subtasks]
    if unknown:
        raise ValueError(
            f"runs of subtasks {unknown} have no data to rerank with; give the release that "
            f"produced them (it has {sorted(subtasks)})"
        )
    from tqdm.auto import tqdm

    release = getattr(item_or_subtasks, "name", None)
    # disable=None: shown on a terminal only, so that logs stay readable
    bar = tqdm(runs, desc=f"rerank {release}" if release else "rerank", unit="subtask",
               disable=None if progress else True, leave=False)  # fmt: skip
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in bar:
        bar.set_postfix_str(name)
        out[name] = rerank_subtask(reranker, name, subtasks[name], runs[name], top_k, progress)
        logger.info("%s: reranked %d pairs", name, sum(len(d) for d in out[name].values()))
    return out


def resolve_reranker(
    reranker: str | Path | Reranker, options: Mapping[str, Any] | None = None
) -> Reranker:
    """A reranker object from a registered alias, a model folder / Hub id, or itself.

    ``options`` go to :func:`reranker.registry.load_reranker` (``cache_dir``, ``max_length``,
    ``max_tokens_per_batch``, ``device``...); they make no sense with a ready object.
    """
    if not isinstance(reranker, (str, Path)):
        if not callable(getattr(reranker, "score", None)):
            raise TypeError(
                f"reranker must be a name, a folder or a reranker object with a score method "
                f"(reranker.base.BaseReranker), got {type(reranker).__name__}"
            )
        if options:
            raise ValueError(
                f"reranker_options {sorted(options)} only apply when the reranker is loaded by "
                f"name; set them on the {type(reranker).__name__} you pass instead"
            )
        return reranker
    from reranker.registry import ALIASES, REGISTRY, available, load_reranker

    name = str(reranker)
    alternatives = (
        f"use a registered alias ({', '.join(available())}), a local model folder, or a Hub id "
        f"such as Qwen/Qwen3-Reranker-0.6B or BAAI/bge-reranker-v2-m3"
    )
    key = ALIASES.get(name.lower(), name.lower())
    looks_local = Path(name).is_absolute() or name.startswith((".", "~"))
    if key not in REGISTRY and looks_local and not Path(name).expanduser().exists():
        raise ValueError(f"reranker {name!r}: no such folder; {alternatives}")
    if key in REGISTRY:
        return load_reranker(name, **dict(options or {}))
    _check_hub_name(name, tuple(available()))
    try:
        return load_reranker(name, **dict(options or {}))
    except (OSError, ValueError) as err:
        # transformers' messages run over several lines; the first says what went wrong
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"cannot load reranker {name!r}: {first}; {alternatives}") from err


def _check_hub_name(name: str, bundled: tuple[str, ...]) -> None:
    """Fail at once, before any Hub retry, on a name that cannot be a loadable model."""
    from coreb_toolkit.hub_access import hub_offline
    from coreb_toolkit.retrieval.registry import check_model_name

    cached = None
    if hub_offline():
        from huggingface_hub import snapshot_download

        try:
            snapshot_download(name, local_files_only=True)
            cached = True
        except Exception:  # not in the local cache (or not a repo id at all)
            cached = False
    check_model_name(name, "reranker", bundled, cached)


def backend_of(reranker: Reranker) -> str:
    """The ``backend`` a reranker class declares (``"cross-encoder"``, ``"generative"``), or
    its class name when it declares none."""
    return str(getattr(reranker, "backend", None) or type(reranker).__name__)


def reranker_metadata(reranker: Reranker, subtasks: Sequence[str]) -> dict[str, Any]:
    """What identifies the second stage in a results file."""
    fingerprint = reranker.fingerprint() if isinstance(reranker, BaseReranker) else None
    return {
        "name": str(getattr(reranker, "name", type(reranker).__name__)),
        "backend": backend_of(reranker),
        "class": type(reranker).__name__,
        "fingerprint": fingerprint,
        "max_length": getattr(reranker, "max_length", None),
        "max_tokens_per_batch": getattr(reranker, "max_tokens_per_batch", None),
        "instructions": {name: instruction_for(name) for name in subtasks},
        # the bundled plumbing alias (minilm) scores with a new, untrained head: marked
        "untrained_head": bool(getattr(reranker, "untrained_head", False)),
        **runtime_metadata(reranker),
    }


__all__ = [
    "DEFAULT_RERANK_TOP_K",
    "backend_of",
    "check_top_k",
    "first_stage_top_k",
    "rerank_runs",
    "rerank_subtask",
    "reranker_metadata",
    "resolve_reranker",
]
