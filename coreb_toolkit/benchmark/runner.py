"""The first-stage benchmark runner: one retriever over every CoREB subtask and release.

For each release it loads each corpus once, indexes / encodes it once for the retriever, and
searches it with the queries of every subtask that ranks it (34 subtasks share three corpora).
Each subtask's run is scored under the CoREB protocol (:func:`eval_metrics.evaluate_retrieval`,
the engine of ``coreb_metric``: relevance level 2, hard negatives zero-gain, the c2c anchor
excluded, an explicit policy for c2t_match negatives) and written out:

``<out>/<model>/<release>/``
    ``runs/<subtask>.trec`` (top-k, TREC format, written as scored: excluded documents such as
    the c2c anchor are not in it), ``per_query.jsonl``, ``results.json`` (per-subtask /
    per-task / Overall rows with the best-positive tie share of :mod:`eval_metrics.ties`,
    model metadata, library versions, dataset revision, the corpus each subtask ranked and the
    ``c2t_canonical_corpus`` view; the shape of :mod:`coreb_toolkit.benchmark.results`),
    ``summary.md`` (a table shaped like the paper's Table 3, :mod:`~coreb_toolkit.benchmark.report`)
    and PNG plots;
    ``mteb/`` (unless ``mteb_runs=False``): what MTEB's protocol ranks and the CoREB runs do not
    hold, so that ``coreb submit mteb`` derives all three of MTEB's retrieval tasks from this
    folder (:mod:`model_cards.mteb_results`): ``mteb/excluded/<subtask>.trec``, the excluded
    documents (the c2c anchor) the retriever ranked in its top-k, with their scores (the run
    before exclusion is ``runs/`` plus this file; the rank column counts within this file), and
    ``mteb/full_text/<subtask>.trec``, each ``c2t_canonical_retro_*`` subtask's queries ranked
    against the full texts (the corpus MTEB's C2T task ranks) where the run ranked the
    abbreviated ones. ``results.json`` lists them (``mteb``); runs and rows are unchanged.

With ``query_sample=N`` (:func:`sample_queries`) every subtask keeps a seeded sample of N of its
queries (its qrels and exclusions with them, its corpus whole) before either stage runs:
``results.json`` records ``query_sample`` and ``summary.md`` says the figures are not the
benchmark's; publishing (cards, leaderboard, MTEB) refuses such a file.

The retriever is any :class:`coreb_toolkit.retrieval.base.Retriever` (by name through
:func:`coreb_toolkit.retrieval.registry.make_retriever`). With a reranker (the second stage,
CoREB §4.3 / B.3, :mod:`coreb_toolkit.benchmark.rerank`) the first stage is written there as
above, unchanged, and the reranked result beside it:

``<out>/<model>+<reranker>/<release>/``
    ``runs/<subtask>.trec`` (the reranked top-``rerank_top_k`` only), ``per_query.jsonl``
    (reranked), ``results.json`` with ``rows`` (reranked), ``first_stage_rows`` (the first
    stage's full run, the same numbers as its own folder), ``delta`` (reranked minus first
    stage, every metric, per subtask / main task / Overall), ``reranker`` metadata,
    ``rerank_top_k``, ``rerank_seconds``; ``summary.md`` (both stages and the delta nDCG@10 per
    task) and plots (with ``rerank_delta.png``, CoREB Figure 8).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.benchmark.provenance import dataset_revision, library_versions
from coreb_toolkit.benchmark.report import (
    C2T_CANONICAL_CORPORA,
    TABLE_COLUMNS,
    TIE_NOTE,
    c2t_canonical_note,
    check_c2t_canonical_corpus,
    rerank_note,
    summary_table,
)
from coreb_toolkit.benchmark.rerank import DEFAULT_RERANK_TOP_K
from coreb_toolkit.benchmark.results import CorebResults, write_results
from coreb_toolkit.builders.coreb.prepared import is_release_source, prepared_dataset
from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.coreb.release import cached_release
from coreb_toolkit.builders.coreb.rows import corpus_rows
from coreb_toolkit.builders.coreb.subtask_data import (
    load_subtask,
    subtask_data,
    subtasks_by_release,
)
from coreb_toolkit.builders.hub_folder import hub_folder_configs, is_hub_folder, read_hub_config
from coreb_toolkit.retrieval.base import Retriever
from coreb_toolkit.retrieval.registry import (
    BM25,
    DEFAULT_EMBEDDER,
    as_retriever,
    make_retriever,
    model_metadata,
    resolve_model,
)
from coreb_toolkit.vocabulary import (
    CORPUS_CODE,
    CORPUS_TEXT,
    CORPUS_TEXT_ABBREVIATED,
    MAIN_TASKS,
    SUBTASKS,
    main_task_key,
)
from eval_metrics import aggregate, evaluate_retrieval, main_task_of, write_run
from eval_metrics.retrieval import RetrievalEvaluation, apply_exclusions
from eval_metrics.ties import PositiveTies, positive_ties

logger = logging.getLogger(__name__)


@dataclass
class ReleaseInput:
    """One release of a dataset: per subtask its queries, qrels, exclusions and corpus name."""

    name: str
    subtasks: dict[str, Any]  # subtask -> coreb_dataset.SubtaskData (corpus shared per name)
    corpora: dict[str, dict[str, str]] = field(default_factory=dict)

    def full_text_subtasks(self) -> list[str]:
        """The subtasks that rank the abbreviated descriptions (``c2t_canonical_retro_*`` in
        the default view): MTEB's C2T task ranks the full texts for their queries."""
        return [n for n, d in self.subtasks.items() if d.corpus_name == CORPUS_TEXT_ABBREVIATED]


def _check_options(source: str, options: Any) -> None:
    if options is not None and not isinstance(options, QrelsOptions):
        raise TypeError(
            f"options must be a coreb_dataset.QrelsOptions, got {type(options).__name__}"
        )
    if options not in (None, QrelsOptions()) and is_hub_folder(source):
        raise ValueError(
            f"{source} is a built dataset: its qrels were derived when it was built, so qrels "
            f"options ({options}) do not apply; rebuild it with them (coreb build), or give "
            "the release folder"
        )


def discover(
    source: str,
    subtasks: Sequence[str] | None,
    releases: Sequence[str] | None,
    c2t_canonical_corpus: str = "abbreviated",
    *,
    options: Any = None,
    full_text: bool = False,
) -> list[ReleaseInput]:
    """The selected subtasks of the selected releases, corpora loaded once per release.

    With ``c2t_canonical_corpus="full"`` the subtasks that rank the abbreviated text corpus
    (``c2t_canonical_retro_*``) rank the full text corpus instead (the same document ids).
    ``options`` (a ``coreb_dataset.QrelsOptions``) derive the qrels of a release folder that
    ships none; a built folder carries its qrels already. With ``full_text`` the full text
    corpus is loaded too wherever a subtask ranks the abbreviated one (for ``mteb/full_text``).
    """
    check_c2t_canonical_corpus(c2t_canonical_corpus)
    _check_options(source, options)
    available = subtasks_by_release(source, options)
    all_subtasks = sorted({s for v in available.values() for s in v})
    for name in subtasks or ():
        if name not in all_subtasks:
            raise ValueError(
                f"subtask {name!r} is not in {source}; it has: {', '.join(all_subtasks)}"
            )
    for name in releases or ():
        if name not in available:
            raise ValueError(f"release {name!r} is not in {source}; it has: {', '.join(available)}")
    order = {n: i for i, n in enumerate(SUBTASKS)}
    out = []
    for split in sorted(available):
        if releases and split not in releases:
            continue
        chosen = [s for s in available[split] if not subtasks or s in subtasks]
        chosen.sort(key=lambda n: (order.get(n, len(order)), n))
        item = ReleaseInput(split, {})
        for name in chosen:
            item.subtasks[name] = _load(
                source, name, split, item.corpora, c2t_canonical_corpus, options
            )
        if full_text and item.full_text_subtasks():
            full_text_corpus(source, split, item.corpora, options)
        if item.subtasks:
            out.append(item)
    if not out:
        raise ValueError(f"{source}: nothing selected (subtasks={subtasks}, releases={releases})")
    return out


def _load(
    source: str,
    subtask: str,
    split: str,
    corpora: dict[str, dict[str, str]],
    c2t_canonical_corpus: str = "abbreviated",
    options: Any = None,
) -> Any:
    """One subtask's data; its corpus read once per (release, corpus) and shared."""
    full_view = c2t_canonical_corpus == "full"
    if not is_hub_folder(source):
        data = load_subtask(source, subtask, split, options=options)
        if full_view and data.corpus_name == CORPUS_TEXT_ABBREVIATED:
            full_text_corpus(source, split, corpora, options)
            data.corpus_name = CORPUS_TEXT
        data.corpus = corpora.setdefault(data.corpus_name, data.corpus)
        return data
    rows = read_hub_config(source, subtask, split)
    corpus_name = rows[0]["corpus"]
    if full_view and corpus_name == CORPUS_TEXT_ABBREVIATED:
        corpus_name = CORPUS_TEXT
    _hub_corpus(source, corpus_name, split, corpora, subtask)
    data = subtask_data(subtask, split, rows, corpora[corpus_name])
    data.corpus_name = corpus_name  # the corpus ranked, which the view may have changed
    return data


def _hub_corpus(
    source: str, corpus_name: str, split: str, corpora: dict[str, dict[str, str]], subtask: str
) -> None:
    if corpus_name not in corpora:
        if corpus_name not in hub_folder_configs(source):
            raise ValueError(
                f"{source} has no config {corpus_name!r}, the corpus that {subtask} ranks: "
                "rebuild the folder with `coreb build`"
            )
        docs = read_hub_config(source, corpus_name, split, columns=["doc_id", "text"])
        corpora[corpus_name] = {d["doc_id"]: d["text"] for d in docs}


def full_text_corpus(
    source: str, split: str, corpora: dict[str, dict[str, str]], options: Any = None
) -> None:
    """Load the full text corpus of ``split`` into ``corpora`` (once)."""
    if CORPUS_TEXT in corpora:
        return
    if is_hub_folder(source):
        _hub_corpus(source, CORPUS_TEXT, split, corpora, "c2t_canonical_retro_*")
        return
    rel = cached_release(source, options or QrelsOptions())
    rows = corpus_rows(rel.releases[split], CORPUS_TEXT)
    corpora[CORPUS_TEXT] = {r["doc_id"]: r["text"] for r in rows}


def _runs(
    retriever: Retriever,
    item: ReleaseInput,
    top_k: int,
    progress: bool,
    full_text: Sequence[str] = (),
) -> tuple[dict[str, dict], dict[str, dict], float]:
    """Every subtask's run, corpus by corpus, so that each corpus is indexed / encoded once;
    then the ``full_text`` subtasks' queries against the full text corpus, searched with that
    corpus (its index and embeddings are those of the subtasks that rank it). Returns the runs,
    the full-text runs and the seconds those took."""
    from tqdm.auto import tqdm

    runs: dict[str, dict] = {}
    extra: dict[str, dict] = {}
    extra_seconds = 0.0
    by_corpus: dict[str, list[tuple[str, bool]]] = {}
    for name, data in item.subtasks.items():
        by_corpus.setdefault(data.corpus_name, []).append((name, False))
    for name in full_text:
        by_corpus.setdefault(CORPUS_TEXT, []).append((name, True))
    done, total = 0, len(item.subtasks) + len(full_text)
    # the corpora the subtasks rank, before any query: a query that is one of their documents
    # reuses its vector. Not a corpus only the MTEB full-text runs rank (those run last), so
    # that the CoREB runs are those of a run without mteb/
    ranked = dict.fromkeys(data.corpus_name for data in item.subtasks.values())
    retriever.prepare([item.corpora[name] for name in ranked])
    for corpus_name, jobs in by_corpus.items():
        corpus = item.corpora[corpus_name]
        # the code corpus is code, the text corpora prose; the queries are of their main task
        document_type = "code" if corpus_name == CORPUS_CODE else "text"
        stage_line(progress, "%s: %s (%s documents), %d subtask(s) rank it", item.name,
                   corpus_name, f"{len(corpus):,}", len(jobs))  # fmt: skip
        bar = tqdm(jobs, desc=f"{item.name}/{corpus_name}", unit="subtask",
                   disable=None if progress else True, leave=False)  # fmt: skip
        for name, is_extra in bar:
            bar.set_postfix_str(name, refresh=False)
            family = main_task_key(name)
            query_type = MAIN_TASKS[family].query_type if family in MAIN_TASKS else "auto"
            started = time.perf_counter()
            ranked = retriever.search(
                item.subtasks[name].queries, corpus, top_k=top_k,
                query_type=query_type, document_type=document_type,
            )  # fmt: skip
            took = time.perf_counter() - started
            if is_extra:
                extra[name] = ranked
                extra_seconds += took
            else:
                runs[name] = ranked
            done += 1
            stage_line(progress, "%s [%d/%d] %s%s: %d queries ranked in %.1f s", item.name,
                       done, total, name, " (full texts, for MTEB)" if is_extra else "",
                       len(item.subtasks[name].queries), took)  # fmt: skip
    return runs, extra, extra_seconds


def stage_line(progress: bool, message: str, *args: Any) -> None:
    """One line per finished stage, logged when the progress bars are not shown (stderr is no
    terminal: a log file, CI), so that a long run says where it is and what remains."""
    if progress and not sys.stderr.isatty():
        logger.info(message, *args)


def _slug(name: str) -> str:
    """A folder name for a model: the last part of its id or path."""
    return re.sub(r"[^\w.-]+", "_", name.rstrip("/").split("/")[-1]) or "model"


slug = _slug  # the public name (qualcode_eval names its folders the same way)


def check_query_sample(n: object, seed: object = 0) -> None:
    """A ``ValueError`` unless ``n`` (``query_sample``) is an integer of at least 1 and
    ``seed`` (``query_seed``) an integer."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(
            f"query_sample must be an integer of at least 1 (queries kept per subtask), got {n!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"query_seed must be an integer, got {seed!r}")


def sample_queries(item: ReleaseInput, n: int, seed: int = 0) -> ReleaseInput:
    """``item`` with each subtask reduced to a seeded sample of ``min(n, its queries)`` queries.

    The sample of a subtask is drawn by ``random.Random(f"{seed}:{release}:{subtask}")`` from its
    sorted query ids (the same ids on every machine and run, independent of the other subtasks
    selected) and kept in the subtask's own order; its qrels and exclusions are restricted to
    those queries, its corpus is unchanged (the full corpus is still ranked). ``item`` itself is
    not changed.
    """
    check_query_sample(n, seed)
    subtasks = {}
    for name, data in item.subtasks.items():
        ids = sorted(data.queries)
        chosen = set(random.Random(f"{seed}:{item.name}:{name}").sample(ids, min(n, len(ids))))
        subtasks[name] = dataclasses.replace(
            data,
            queries={q: t for q, t in data.queries.items() if q in chosen},
            qrels={q: j for q, j in data.qrels.items() if q in chosen},
            exclude={q: d for q, d in data.exclude.items() if q in chosen},
        )
    return ReleaseInput(item.name, subtasks, item.corpora)


def _check_stages(
    reranker: Any, rerank_top_k: int, top_k: int, reranker_options: Mapping | None
) -> None:
    if reranker is not None:
        from coreb_toolkit.benchmark.rerank import check_top_k

        check_top_k(rerank_top_k)
        if rerank_top_k > top_k:
            raise ValueError(
                f"rerank_top_k={rerank_top_k} exceeds top_k={top_k}: the first stage keeps only "
                f"its top {top_k} documents per query; raise top_k or lower rerank_top_k"
            )
    elif reranker_options:
        raise ValueError("reranker_options were given without a reranker to load them with")


# over 80 lines only through its docstring, which documents every argument
def evaluate_model(
    source: str,
    model: str,
    out_dir: str | os.PathLike[str],
    *,
    subtasks: Sequence[str] | None = None,
    releases: Sequence[str] | None = None,
    top_k: int = 1000,
    no_positive_policy: str = "zero",
    plots: bool = True,
    retriever: Any = None,
    reranker: Any = None,
    rerank_top_k: int = DEFAULT_RERANK_TOP_K,
    reranker_options: Mapping[str, Any] | None = None,
    c2t_canonical_corpus: str = "abbreviated",
    options: Any = None,
    dataset_source: Mapping[str, Any] | None = None,
    query_sample: int | None = None,
    query_seed: int = 0,
    mteb_runs: bool = True,
    **retriever_options: Any,
) -> list[dict[str, Any]]:
    """Run ``model`` on every selected subtask and release of ``source``; write, return results.

    ``retriever`` may be given already built (any :class:`~coreb_toolkit.retrieval.base.Retriever`,
    a ``DenseRetriever.from_model`` around a model in memory, a BM25 with other parameters);
    ``model`` then only names the output folder. Otherwise ``model`` goes to
    :func:`~coreb_toolkit.retrieval.registry.make_retriever` with ``retriever_options``
    (``progress`` also switches the bars of both stages).

    ``reranker`` adds the second stage (CoREB §4.3, B.3): a registered alias (``minilm``,
    ``smollm2``), a model folder or Hub id (loaded with ``reranker_options``: ``cache_dir``,
    ``max_length``, ``device``...), or a reranker object. Each query's first-stage top
    ``rerank_top_k`` (after exclusions) is rescored and only those documents are kept
    (:mod:`coreb_toolkit.benchmark.rerank`); both stages are scored and the reranked result is
    written to ``<out>/<model>+<reranker>/<release>/`` beside the first stage's own folder.

    ``c2t_canonical_corpus`` picks what the ``c2t_canonical_retro_*`` subtasks rank:
    ``"abbreviated"`` (default) the abbreviated descriptions, as the paper defines them (A.3);
    ``"full"`` the full texts, as the official CoREB runner and MTEB's C2T task rank them, to
    reproduce their figures. Every results dict and summary states the view. ``options`` (a
    ``coreb_dataset.QrelsOptions``) derive the qrels of a release folder that ships none.
    ``source`` may also be a Hub release (``hq-bench/coreb``: the official configs), read
    through :func:`~coreb_toolkit.builders.coreb.prepared.prepared_dataset`. ``dataset_source``
    is what ``results.json`` records as the dataset (default ``{"source": source, "revision":
    <its revision>}``): the CLI records the release a cached build was made from.

    ``query_sample=N`` evaluates a seeded sample (``query_seed``) of N queries of every subtask
    (:func:`sample_queries`; all of a subtask's queries where it has fewer), for quick checks:
    both stages see only those queries, the full corpora are ranked, and ``results.json``
    (``query_sample``) and ``summary.md`` say the figures are a sample's, not the benchmark's.

    Each run is written as it was scored: the excluded documents (the c2c anchor) are removed
    before scoring and are not in ``runs/<subtask>.trec``, so the file scored as it is, by
    trec_eval or any other tool, gives the reported figures. What MTEB's protocol needs beside
    them is kept in ``mteb/`` (``mteb_runs``, default on; the first stage only): the excluded
    documents' scores (``mteb/excluded/``) and, in the abbreviated view, the
    ``c2t_canonical_retro_*`` queries ranked against the full texts (``mteb/full_text/``: one
    more search of a corpus already encoded / indexed, or one encoding of the full texts where
    no selected subtask ranks them); ``results.json`` lists them in ``mteb``. Runs, rows and
    every other file are the same with ``mteb_runs=False``.

    Returns:
        Per release its first-stage results dict (:class:`~coreb_toolkit.benchmark.results.
        CorebResults` as written), followed, with a reranker, by the reranked one (which
        carries ``first_stage_rows``, ``delta`` and ``reranker``).
    """
    _check_stages(reranker, rerank_top_k, top_k, reranker_options)
    check_c2t_canonical_corpus(c2t_canonical_corpus)
    if query_sample is not None:
        check_query_sample(query_sample, query_seed)
    given = str(source)
    if not Path(source).exists() and is_release_source(source):
        source = prepared_dataset(source, None, options=options)
    items = discover(source, subtasks, releases, c2t_canonical_corpus, options=options,
                     full_text=mteb_runs)  # fmt: skip
    sample = None
    if query_sample is not None:
        items = [sample_queries(item, query_sample, query_seed) for item in items]
        sample = {"per_subtask": query_sample, "seed": query_seed}
    progress = bool(retriever_options.get("progress", True))  # one switch, both stages
    first_stage = (
        make_retriever(model, **retriever_options) if retriever is None else as_retriever(retriever)
    )
    second = None
    if reranker is not None:
        from coreb_toolkit.benchmark.rerank import resolve_reranker

        second = resolve_reranker(reranker, reranker_options)
    meta = model_metadata(model, first_stage)
    versions = library_versions()
    recorded = dict(dataset_source or {"source": given, "revision": dataset_revision(given)})
    first_name = str(meta.get("name") or model)
    all_results = []
    for item in items:
        runs, results, first, extras, lists = _first_stage(
            first_stage, item, top_k, no_positive_policy, progress, c2t_canonical_corpus,
            {"model": meta, "dataset": recorded, "versions": versions,
             "query_sample": sample, "mteb_runs": mteb_runs, "source": source,
             "options": options},
        )  # fmt: skip
        target = Path(out_dir) / _slug(first_name) / item.name
        all_results.append(_write(target, results, runs, *first, plots, extras))
        if second is None:
            continue
        re_runs, re_results = _second_stage(second, item, runs, results, rerank_top_k, progress)
        re_extras = None
        if extras.get("reranking"):  # MTEB's lists, rescored by the reranker
            from coreb_toolkit.benchmark.mteb_tasks import rerank_mteb_lists

            list_runs, re_results.mteb_tasks = rerank_mteb_lists(
                second, item, lists, extras["reranking"], source, options, progress=progress
            )
            re_extras = {"excluded": {}, "full_text": {}, "reranking": list_runs}
            re_results.mteb = {key: list(value) for key, value in re_extras.items()}
        re_evaluations = _evaluate(item, re_runs, no_positive_policy)
        re_ties = _ties(item, re_runs)
        re_results.rows = with_ties([row.to_dict() for row in aggregate(re_evaluations)], re_ties)
        metric_keys = next(iter(first[0].values())).metric_keys
        re_results.delta = delta_rows(results.rows, re_results.rows, metric_keys)
        name = str(re_results.reranker["name"])  # type: ignore[index]
        target = Path(out_dir) / f"{_slug(first_name)}+{_slug(name)}" / item.name
        all_results.append(
            _write(target, re_results, re_runs, re_evaluations, re_ties, plots, re_extras)
        )
    return all_results


def _first_stage(
    retriever: Retriever,
    item: ReleaseInput,
    top_k: int,
    no_positive_policy: str,
    progress: bool,
    c2t_canonical_corpus: str,
    shared: Mapping[str, Any],
) -> tuple[
    dict[str, dict],
    CorebResults,
    tuple[dict[str, RetrievalEvaluation], dict],
    dict[str, dict],
    dict[str, list],
]:
    """One release's first stage: its runs as scored, its results, its evaluations and ties,
    what ``mteb/`` keeps (``{"excluded" | "full_text" | "reranking": {name: run}}``, empty
    without ``mteb_runs``) and MTEB's reranking lists it scored (for the second stage)."""
    keep = bool(shared.get("mteb_runs"))
    t0 = time.perf_counter()
    full_text = item.full_text_subtasks() if keep else []
    ranked, full_runs, extra_seconds = _runs(retriever, item, top_k, progress, full_text)
    elapsed = time.perf_counter() - t0 - extra_seconds
    runs = _as_scored(item, ranked)
    extras: dict[str, dict] = {}
    mteb_tasks: dict[str, dict[str, Any]] = {}
    lists: dict[str, list] = {}
    if keep:
        extras = {"excluded": _excluded(item, ranked), "full_text": full_runs}
        if shared.get("query_sample") is None:  # MTEB's tasks hold every query, not a sample
            from coreb_toolkit.benchmark.mteb_tasks import score_mteb_tasks

            extras["reranking"], mteb_tasks, lists = score_mteb_tasks(
                retriever, item, ranked, full_runs, str(shared["source"]), shared.get("options"),
                top_k=top_k, progress=progress,
            )  # fmt: skip
    stage_line(progress, "%s: scoring %d subtask(s)", item.name, len(runs))
    evaluations = _evaluate(item, runs, no_positive_policy)
    ties = _ties(item, runs)
    first = next(iter(evaluations.values()))
    results = CorebResults(
        model=shared["model"],
        dataset=shared["dataset"],
        release=item.name,
        query_sample=shared.get("query_sample"),
        no_positive_policy=first.no_positive_policy,
        relevance_level=first.relevance_level,
        c2t_canonical_corpus=c2t_canonical_corpus,
        corpora={name: data.corpus_name for name, data in item.subtasks.items()},
        top_k=top_k,
        retrieval_seconds=round(elapsed, 3),
        versions=shared["versions"],
        rows=with_ties([row.to_dict() for row in aggregate(evaluations)], ties),
        mteb={key: list(value) for key, value in extras.items()} if keep else None,
        mteb_tasks=mteb_tasks or None,
    )
    return runs, results, (evaluations, ties), extras, lists


def _excluded(item: ReleaseInput, ranked: Mapping[str, dict]) -> dict[str, dict]:
    """Per subtask with exclusions, ``{query: {doc: score}}`` of the excluded documents its
    run ranked before they were removed (the c2c anchor): ``runs/`` plus these is the ranking
    MTEB scores, which has no per-query exclusion."""
    out: dict[str, dict] = {}
    for name, run in ranked.items():
        exclude = item.subtasks[name].exclude
        if not exclude:
            continue
        out[name] = {}
        for qid, docs in exclude.items():
            found = {d: run[qid][d] for d in docs if d in run.get(qid, {})}
            if found:
                out[name][qid] = found
    return out


def _as_scored(item: ReleaseInput, runs: Mapping[str, dict]) -> dict[str, dict]:
    """Each run without its queries' excluded documents: the run that is scored, and so the
    run that is written (a file that still held the c2c anchor would give other numbers to
    anyone scoring it). The exclusions are applied here, once: the runs scored and tied below
    hold no excluded document."""
    return {
        name: apply_exclusions(run, item.subtasks[name].exclude, item.subtasks[name].qrels)
        for name, run in runs.items()
    }


def _ties(item: ReleaseInput, runs: Mapping[str, dict]) -> dict[str, PositiveTies]:
    # the runs are as scored (_as_scored): exclusions already applied
    return {name: positive_ties(item.subtasks[name].qrels, run) for name, run in runs.items()}


def with_ties(rows: list[dict[str, Any]], ties: Mapping[str, PositiveTies]) -> list[dict[str, Any]]:
    """``rows`` (per subtask, main task, Overall) with the best-positive tie share
    (:mod:`eval_metrics.ties`) and the number of queries behind it, pooled over queries."""
    for row in rows:
        if row["level"] == "subtask":
            parts = [ties[row["name"]]]
        elif row["level"] == "task":
            parts = [t for name, t in ties.items() if main_task_of(name) == row["name"]]
        else:
            parts = list(ties.values())
        eligible = sum(t.n_eligible for t in parts)
        row["positive_tie_share"] = sum(t.n_tied for t in parts) / eligible if eligible else None
        row["n_tie_eligible"] = eligible
    return rows


def _evaluate(
    item: ReleaseInput, runs: Mapping[str, dict], no_positive_policy: str
) -> dict[str, RetrievalEvaluation]:
    # the runs are as scored (_as_scored): exclusions already applied
    return {
        name: evaluate_retrieval(
            item.subtasks[name].qrels, run, no_positive_policy=no_positive_policy
        )
        for name, run in runs.items()
    }


def _second_stage(
    reranker: Any,
    item: ReleaseInput,
    runs: Mapping[str, dict],
    first: CorebResults,
    rerank_top_k: int,
    progress: bool,
) -> tuple[dict[str, dict], CorebResults]:
    """The reranked runs of a release and its results, rows still to fill."""
    from coreb_toolkit.benchmark.rerank import rerank_runs, reranker_metadata

    t0 = time.perf_counter()
    reranked = rerank_runs(reranker, item, runs, top_k=rerank_top_k, progress=progress)
    elapsed = time.perf_counter() - t0
    meta = reranker_metadata(reranker, list(runs))
    first_name = str(first.model.get("name"))
    results = CorebResults(
        model={
            "name": f"{first_name} + {meta['name']}",
            "first_stage": first.model,
            "reranker": meta["name"],
        },
        dataset=first.dataset,
        release=first.release,
        query_sample=first.query_sample,
        no_positive_policy=first.no_positive_policy,
        relevance_level=first.relevance_level,
        c2t_canonical_corpus=first.c2t_canonical_corpus,
        corpora=first.corpora,
        top_k=first.top_k,
        rerank_top_k=rerank_top_k,
        retrieval_seconds=first.retrieval_seconds,
        rerank_seconds=round(elapsed, 3),
        reranker=meta,
        rerank_note=rerank_note(rerank_top_k, first.top_k),
        first_stage={
            "model": first_name,
            "results": f"../../{_slug(first_name)}/{first.release}/results.json",
        },
        versions=first.versions,
        rows=[],
        first_stage_rows=first.rows,
        delta=[],
    )
    return reranked, results


def delta_rows(
    first_rows: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    metric_keys: Sequence[str],
) -> list[dict[str, Any]]:
    """Reranked minus first stage, row by row (subtask, main task, Overall), for every metric
    and the hard-negative intrusion rate (``None`` where either stage has none)."""
    base = {(r["level"], r["name"]): r for r in first_rows}
    out = []
    for row in rows:
        key = (row["level"], row["name"])
        if key not in base:
            raise ValueError(f"the first stage has no {key[0]} row {key[1]!r} to compare with")
        before = base[key]
        delta: dict[str, Any] = {"level": row["level"], "name": row["name"],
                                 "n_queries": row["n_queries"]}  # fmt: skip
        for k in metric_keys:
            delta[k] = row[k] - before[k]
        a, b = row["hard_negative_intrusion_rate"], before["hard_negative_intrusion_rate"]
        delta["hard_negative_intrusion_rate"] = None if a is None or b is None else a - b
        out.append(delta)
    return out


def _write(
    target: Path,
    results: CorebResults,
    runs: Mapping[str, dict],
    evaluations: Mapping[str, RetrievalEvaluation],
    ties: Mapping[str, PositiveTies],
    plots: bool,
    extras: Mapping[str, Mapping[str, dict]] | None = None,
) -> dict[str, Any]:
    """Write a release's runs, per-query values, results, summary (and plots), and ``mteb/``
    where ``extras`` (:func:`_first_stage`) hold its runs; its dict."""
    (target / "runs").mkdir(parents=True, exist_ok=True)
    tag = re.sub(r"\s+", "_", str(results.model.get("name", "run")))
    for name, run in runs.items():
        write_run(run, target / "runs" / f"{name}.trec", tag=tag)
    for kind, kept in (extras or {}).items():
        (target / "mteb" / kind).mkdir(parents=True, exist_ok=True)
        for name, run in kept.items():
            write_run(run, target / "mteb" / kind / f"{name}.trec", tag=tag)
    with open(target / "per_query.jsonl", "w", encoding="utf-8") as fh:
        for name, ev in evaluations.items():
            for qid, values in ev.per_query.items():
                record = {"subtask": name, "query_id": qid, **values}
                record["hard_negative_intrusion"] = ev.intrusion.get(qid)
                record["best_positive_tied"] = ties[name].tied.get(qid)
                fh.write(json.dumps(record) + "\n")
    write_results(target / "results.json", results)
    data = results.to_dict()
    (target / "summary.md").write_text(summary_table([data]), encoding="utf-8")
    if plots:
        from coreb_toolkit.benchmark.plots import plot_all

        plot_all([data], target / "plots")
    return data


__all__ = [
    "BM25",
    "C2T_CANONICAL_CORPORA",
    "DEFAULT_EMBEDDER",
    "TABLE_COLUMNS",
    "TIE_NOTE",
    "ReleaseInput",
    "c2t_canonical_note",
    "check_c2t_canonical_corpus",
    "check_query_sample",
    "dataset_revision",
    "delta_rows",
    "discover",
    "evaluate_model",
    "library_versions",
    "make_retriever",
    "model_metadata",
    "rerank_note",
    "resolve_model",
    "sample_queries",
    "slug",
    "summary_table",
    "with_ties",
]
