"""MTEB's six CoREB(v1) tasks, scored inside a ``coreb evaluate`` run.

The three ``Coreb*Retrieval`` tasks are the run's own rankings pooled per main task as MTEB's
datasets hold them (:func:`eval_metrics.mteb_protocol.pool_positives`: positives only, the c2c
anchor ranked, C2T against the full texts); the three ``Coreb*Reranking`` tasks are the
17-candidate lists of :mod:`coreb_toolkit.builders.coreb.reranking` (those ``coreb build --mteb``
exports), scored by the first stage from what it already holds
(:meth:`coreb_toolkit.retrieval.base.Retriever.score`). ``coreb submit mteb`` recomputes all six
from the files the run keeps (:mod:`model_cards.mteb_results`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from coreb_toolkit.benchmark.runner import ReleaseInput, full_text_corpus, stage_line
from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.coreb.release import cached_release
from coreb_toolkit.builders.coreb.subtask_data import subtasks_by_release
from coreb_toolkit.builders.hub_folder import is_hub_folder
from coreb_toolkit.retrieval.base import Retriever
from coreb_toolkit.vocabulary import CORPUS_CODE, CORPUS_TEXT, MAIN_TASKS, main_task_key


def score_mteb_tasks(
    retriever: Retriever,
    item: ReleaseInput,
    ranked: Mapping[str, dict],
    full_runs: Mapping[str, dict],
    source: str,
    options: Any = None,
    *,
    top_k: int,
    progress: bool = True,
) -> tuple[dict[str, dict], dict[str, dict[str, Any]], dict[str, list]]:
    """``(list runs by main task, {MTEB task: figures}, the lists by main task)`` of one
    release's first stage: ``ranked`` are its runs before exclusion, ``full_runs`` the full-text
    runs of the subtasks that ranked the abbreviated texts. Main tasks whose subtasks are not
    all in ``item`` give nothing (MTEB pools all of them). The lists are returned for a second
    stage to rescore (:func:`rerank_mteb_lists`)."""
    families = _families(subtasks_by_release(source, options).get(item.name, []), item.subtasks)
    tasks = _mteb_retrieval(item, ranked, full_runs, families, top_k)
    lists = _lists(source, item.name, families, options)
    scorer = _first_stage_scorer(retriever)
    runs, scored = _score_lists(scorer, item, lists, progress, source, options, "first stage")
    return runs, {**tasks, **scored}, lists


def _families(available: Sequence[str], selected: Collection[str]) -> dict[str, list[str]]:
    """``{main task: its subtasks}`` of the main tasks (T2C, C2T, C2C) whose subtasks are all
    ``selected``: MTEB pools every subtask of a main task, so a part gives no MTEB figure."""
    out: dict[str, list[str]] = {}
    for family in MAIN_TASKS:
        names = [s for s in available if main_task_key(s) == family]
        if names and all(s in selected for s in names):
            out[family] = names
    return out


def _mteb_retrieval(
    item: ReleaseInput,
    ranked: Mapping[str, dict],
    full_runs: Mapping[str, dict],
    families: Mapping[str, list[str]],
    top_k: int,
) -> dict[str, dict[str, Any]]:
    """MTEB's ``Coreb*Retrieval`` scores of the runs before exclusion (MTEB ranks the c2c
    anchor), with the full-text runs where the subtask ranked the abbreviated texts, pooled
    per main task as MTEB's datasets hold them (:func:`eval_metrics.mteb_protocol.
    pool_positives`); the same figures ``coreb submit mteb`` recomputes from the files."""
    from coreb_toolkit.vocabulary import MTEB_RETRIEVAL_TASKS
    from eval_metrics.mteb_protocol import K_VALUES, mteb_metrics, pool_positives

    out: dict[str, dict[str, Any]] = {}
    for family, names in families.items():
        parts = [(s, item.subtasks[s].qrels, full_runs.get(s, ranked[s])) for s in names]
        qrels, run, _ = pool_positives(parts)
        if not qrels:
            continue
        metrics = mteb_metrics(qrels, run, [k for k in K_VALUES if k <= top_k])
        main = metrics.get("ndcg_at_10")
        if main is None:  # runs shallower than 10
            continue
        out[MTEB_RETRIEVAL_TASKS[family]] = {
            "main_score": main, "n_queries": len(qrels), "scores": metrics,
        }  # fmt: skip
    return out


def mteb_lists(
    source: str, release: str, selected: Collection[str], options: Any = None
) -> dict[str, list]:
    """``{main task: [RerankingList, ...]}``: MTEB's reranking lists of ``release``
    (:mod:`coreb_toolkit.builders.coreb.reranking`, the lists ``coreb build --mteb`` exports),
    for each main task whose subtasks are all ``selected`` (MTEB pools all of them)."""
    available = subtasks_by_release(source, options).get(release, [])
    return _lists(source, release, _families(available, selected), options)


def _lists(
    source: str, release: str, families: Mapping[str, list[str]], options: Any
) -> dict[str, list]:
    """The test lists (:attr:`RerankingList.scored`) of each main task of ``families``."""
    from coreb_toolkit.builders.coreb.reranking import folder_lists, release_lists

    out: dict[str, list] = {}
    for family, names in families.items():
        if is_hub_folder(source):
            lists = folder_lists(source, release, names, family)
        else:
            read = cached_release(source, options or QrelsOptions())
            lists = release_lists(read.releases[release], family)
        scored = [x for x in lists if x.scored]
        if scored:
            out[family] = scored
    return out


def _score_lists(
    score: Any,
    item: ReleaseInput,
    lists: Mapping[str, list],
    progress: bool,
    source: str,
    options: Any,
    who: str,
) -> tuple[dict[str, dict], dict[str, dict[str, Any]]]:
    """Every list scored by ``score(family, lists, corpus) -> run`` (``{main task: run}``) and
    what results.json records of them (MTEB's metrics over the lists, the pairs scored)."""
    from coreb_toolkit.builders.coreb.mteb import MTEB_RERANKING
    from coreb_toolkit.builders.coreb.reranking import LIST_SIZE, RERANKING_CORPUS
    from eval_metrics.mteb_protocol import mteb_metrics

    runs: dict[str, dict] = {}
    recorded: dict[str, dict[str, Any]] = {}
    for family, family_lists in lists.items():
        corpus_name = RERANKING_CORPUS[family]
        if corpus_name == CORPUS_TEXT:
            full_text_corpus(source, item.name, item.corpora, options)  # loaded once
        started = time.perf_counter()
        run = score(family, family_lists, item.corpora[corpus_name])
        qrels = {x.query_id: x.qrels() for x in family_lists}
        metrics = mteb_metrics(qrels, run)
        task = MTEB_RERANKING[family][1]
        pairs = sum(len(x.candidates) for x in family_lists)
        runs[family] = run
        recorded[task] = {
            "main_score": metrics["map_at_10"], "n_queries": len(family_lists), "n_pairs": pairs,
            "list_size": LIST_SIZE, "seed": 0, "scores": metrics,
        }  # fmt: skip
        stage_line(progress, "%s %s: %d lists, %d pairs scored by the %s in %.1f s (MAP@10 %.4f)",
                   item.name, task, len(family_lists), pairs, who,
                   time.perf_counter() - started, metrics["map_at_10"])  # fmt: skip
    return runs, recorded


def _first_stage_scorer(retriever: Retriever) -> Any:
    from coreb_toolkit.builders.coreb.reranking import RERANKING_CORPUS

    def score(family: str, lists: Sequence[Any], corpus: Mapping[str, str]) -> dict:
        return retriever.score(
            {x.query_id: x.query for x in lists},
            corpus,
            {x.query_id: x.candidates for x in lists},
            query_type=MAIN_TASKS[family].query_type,
            document_type="code" if RERANKING_CORPUS[family] == CORPUS_CODE else "text",
        )

    return score


def rerank_mteb_lists(
    reranker: Any,
    item: ReleaseInput,
    lists: Mapping[str, list],
    first_runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    source: str,
    options: Any = None,
    *,
    progress: bool = True,
) -> tuple[dict[str, dict], dict[str, dict[str, Any]]]:
    """MTEB's three ``Coreb*Reranking`` tasks with the reranker's scores of the ``lists`` the
    first stage scored (:func:`score_mteb_tasks`; ``first_runs``: ``{main task: run}``), each
    pair scored with its subtask's
    instruction as the reranked runs are (:func:`coreb_toolkit.benchmark.rerank.
    rerank_subtask`): ``({main task: run}, {MTEB task: figures})``. Those are what MTEB's
    reranking tasks measure of a reranker: its order of fixed candidates."""
    import dataclasses

    from coreb_toolkit.benchmark.rerank import rerank_subtask
    from coreb_toolkit.builders.coreb.reranking import RERANKING_CORPUS

    lists = {family: found for family, found in lists.items() if family in first_runs}

    def score(family: str, family_lists: Sequence[Any], corpus: Mapping[str, str]) -> dict:
        by_subtask: dict[str, dict[str, Mapping[str, float]]] = {}
        for x in family_lists:
            by_subtask.setdefault(x.subtask, {})[x.query_id] = first_runs[family][x.query_id]
        run: dict[str, dict[str, float]] = {}
        for subtask, sub_run in by_subtask.items():
            # the list's corpus (C2T: the full texts, whatever view the subtask ranked); no
            # exclusion: a list never holds the c2c anchor (another problem's, or judged)
            data = dataclasses.replace(
                item.subtasks[subtask], corpus=corpus, corpus_name=RERANKING_CORPUS[family],
                exclude={},
            )  # fmt: skip
            size = max(len(docs) for docs in sub_run.values())
            run.update(rerank_subtask(reranker, subtask, data, sub_run, size, progress))
        return run

    return _score_lists(score, item, lists, progress, source, options, "reranker")
