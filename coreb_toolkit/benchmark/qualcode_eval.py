"""QualCode and MC-QualCode evaluation of a scorer [SynH-Rank §3; protocol §3].

A *scorer* gives one number to an (instruction, query, code) triple. Three kinds:

* a first-stage retriever of :mod:`coreb_toolkit.retrieval.registry` by name:

  * ``bm25``: BM25 over the whole ``qualcode_corpus`` (one index, corpus statistics of all
    submissions); the query text is the instruction followed by the problem.
  * a sentence-transformers embedder (``minilm``, any model): cosine between the embedded
    instruction + problem and the code.
  * any other :class:`~coreb_toolkit.retrieval.base.Retriever`: its search scores over the
    whole corpus.

* a reranker (:func:`reranker.load_reranker`): ``score(pairs, instruction=...)`` with the
  problem as query -- the instruction goes where the reranker's prompt puts it (the
  ``<Instruct>`` slot of a Qwen3-Reranker-style model).

Measures: QPA per quality dimension on the ``qualcode_*`` pairs (a tie is a loss), MRR@10 and
nDCG@10 of the pair's ``chosen`` code among it and its 99 ``retrieval_negative_ids`` (1+99
retrieval; graded with ``eval_metrics.evaluate_retrieval``, pytrec_eval), and MCA per number of
conditions on ``mc_*cond`` (also per combination of conditions).

Output: ``<out>/<scorer>/qualcode/{results.json, summary.md, qualcode.png, scores.jsonl}``
(every pair's and triplet's two scores) and ``retrieval_per_query.jsonl`` (MRR@10 and nDCG@10
of every 1+99 query), so that two scorers can be compared pair by pair.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coreb_toolkit.benchmark.plots import plot_qualcode
from coreb_toolkit.benchmark.provenance import dataset_revision
from coreb_toolkit.benchmark.results import QualcodeResults, write_results
from coreb_toolkit.builders.hub_folder import hub_folder_configs, read_hub_config
from coreb_toolkit.vocabulary import (
    MC_CONDITION_COUNTS,
    MC_CONFIGS,
    QUALCODE_CORPUS,
    QUALCODE_DIMENSIONS,
    QUALCODE_PAIR_CONFIGS,
)
from eval_metrics import evaluate_retrieval
from eval_metrics.preference import mca, qpa
from reranker.instructions import by_instruction

logger = logging.getLogger(__name__)

DIMENSIONS = QUALCODE_DIMENSIONS  # the name this module had first
RETRIEVAL_MEASURES = {"mrr": [10], "ndcg": [10]}
RETRIEVAL_PER_QUERY = "retrieval_per_query.jsonl"  # MRR@10 / nDCG@10 of every 1+99 query


@dataclass
class QualcodeInput:
    """A built QualCode folder in memory."""

    source: str
    pairs: dict[str, list[dict[str, Any]]]  # dimension -> rows
    triplets: dict[int, list[dict[str, Any]]]  # k -> rows
    corpus: dict[str, str]  # doc_id -> code


def load_qualcode(source: str | os.PathLike[str]) -> QualcodeInput:
    """Read the configs of a folder written by ``coreb qualcode build`` (or a Hub id)."""
    source = str(source)
    configs = hub_folder_configs(source)
    needed = [QUALCODE_CORPUS]
    tasks = {*QUALCODE_PAIR_CONFIGS.values(), *MC_CONFIGS.values()}
    if not tasks & set(configs):
        raise ValueError(
            f"{source} has no QualCode configs (qualcode_speed, ..., mc_1cond, ...); build one "
            "with `coreb qualcode build --source ... --out DIR`"
        )
    for name in needed:
        if name not in configs:
            raise ValueError(f"{source} has no config {name!r}: rebuild it with coreb qualcode")
    pairs = {
        d: read_hub_config(source, config, "test")
        for d, config in QUALCODE_PAIR_CONFIGS.items()
        if config in configs
    }
    triplets = {
        k: read_hub_config(source, config, "test")
        for k, config in MC_CONFIGS.items()
        if config in configs
    }
    docs = read_hub_config(source, QUALCODE_CORPUS, "test", columns=["doc_id", "text"])
    return QualcodeInput(source, pairs, triplets, {d["doc_id"]: d["text"] for d in docs})


# --------------------------------------------------------------------------------------------
# Scorers
# --------------------------------------------------------------------------------------------

# one item to score: (instruction, query, doc_id, code)
Item = tuple[str, str, str, str]


class BM25Scorer:
    """BM25 of instruction + problem against each code, with the whole corpus's statistics."""

    def __init__(self, corpus: Mapping[str, str], k1: float = 1.5, b: float = 0.75):
        from coreb_toolkit.retrieval.bm25 import BM25Retriever

        self.name = "BM25"
        self._ids = {d: i for i, d in enumerate(corpus)}
        self._bm25 = BM25Retriever(k1, b).index(corpus, kind="code")  # submissions are code
        self.metadata = {
            "name": "BM25", "implementation": "bm25s", "k1": k1, "b": b,
            "tokenizer": "code tokens with operators and integer literals; query as prose",
        }  # fmt: skip

    def score(self, items: Sequence[Item]) -> list[float]:
        by_query: dict[str, Any] = {}
        out = []
        for instruction, query, doc_id, _ in items:
            text = f"{instruction}\n{query}"
            if text not in by_query:
                by_query[text] = self._bm25.scores(text, kind="text")  # the problem statement
            if doc_id not in self._ids:
                raise ValueError(f"BM25Scorer: document {doc_id!r} is not in the corpus")
            out.append(float(by_query[text][self._ids[doc_id]]))
        return out


class DenseScorer:
    """Cosine between an embedded instruction + problem and each embedded code."""

    def __init__(self, retriever: Any, corpus: Mapping[str, str], name: str):
        self.name = name
        self._retriever = retriever
        self._docs = retriever.encode_corpus(corpus)
        self._pos = {d: i for i, d in enumerate(self._docs.ids)}
        self._queries: dict[str, Any] = {}
        self.metadata = dict(retriever.metadata)

    def score(self, items: Sequence[Item]) -> list[float]:
        # a query (instruction + problem) is encoded once for all the calls of an evaluation
        texts = [
            t for t in dict.fromkeys(f"{i}\n{q}" for i, q, _, _ in items) if t not in self._queries
        ]
        if texts:
            emb = self._retriever.encode_queries({str(n): t for n, t in enumerate(texts)})
            for n, t in enumerate(texts):
                self._queries[t] = emb.vectors[n]
        out = []
        for instruction, query, doc_id, _ in items:
            qv = self._queries[f"{instruction}\n{query}"]
            out.append(float(qv @ self._docs.vectors[self._pos[doc_id]]))
        return out


def cut_query(tokenizer: Any, query: str, budget: int | None) -> str:
    """``query`` cut to its first ``budget`` tokens of ``tokenizer`` (whole when it fits, or
    when ``budget`` is ``None``): how :class:`RerankerScorer` fits a long problem statement,
    and how a trainer makes its training queries the same."""
    if budget is None:
        return query
    ids = tokenizer(query, add_special_tokens=False)["input_ids"]
    return query if len(ids) <= budget else tokenizer.decode(ids[:budget])


class RerankerScorer:
    """A :mod:`reranker` model: the problem as query, the instruction in its own slot.

    CodeNet statements are long (often over 512 tokens), and a reranker refuses a query that
    leaves no room for the document. So the problem statement is cut, keeping its beginning,
    to ``query_budget`` tokens of the reranker's tokenizer (default: half its ``max_length``;
    ``None`` on a model without a tokenizer keeps it whole). How many were cut is reported.
    """

    def __init__(self, reranker: Any, query_budget: int | None = -1):
        self.name = reranker.name
        self._reranker = reranker
        self._tokenizer = getattr(reranker, "tokenizer", None)
        if query_budget == -1:
            query_budget = reranker.max_length // 2 if reranker.max_length else None
        self.query_budget = query_budget if self._tokenizer is not None else None
        self._cut: dict[str, str] = {}
        self.metadata = {
            "name": reranker.name,
            "backend": type(reranker).__name__,
            "fingerprint": reranker.fingerprint(),
            "max_length": reranker.max_length,
            "query_budget_tokens": self.query_budget,
            "untrained_head": bool(getattr(reranker, "untrained_head", False)),
        }

    @property
    def queries_cut(self) -> int:
        return sum(1 for q, c in self._cut.items() if q != c)

    def _query(self, query: str) -> str:
        if self.query_budget is None:
            return query
        if query not in self._cut:
            self._cut[query] = cut_query(self._tokenizer, query, self.query_budget)
        return self._cut[query]

    def score(self, items: Sequence[Item]) -> list[float]:
        # one call per instruction: the backend sorts by length and batches inside it
        out = [0.0] * len(items)
        for instruction, idx in by_instruction(item[0] for item in items).items():
            scores = self._reranker.score(
                [(self._query(items[n][1]), items[n][3]) for n in idx], instruction=instruction
            )
            for n, s in zip(idx, scores, strict=True):
                out[n] = float(s)
        self.metadata["queries_cut"] = self.queries_cut
        return out


class RetrieverScorer:
    """Any first-stage :class:`~coreb_toolkit.retrieval.base.Retriever`: its search scores of
    each instruction + problem over the whole corpus (a document it does not return: -inf)."""

    def __init__(self, retriever: Any, corpus: Mapping[str, str]):
        self.name = retriever.name
        self._retriever = retriever
        self._corpus = dict(corpus)
        self._runs: dict[str, dict[str, float]] = {}
        self.metadata = retriever.metadata()

    def score(self, items: Sequence[Item]) -> list[float]:
        texts = [
            t for t in dict.fromkeys(f"{i}\n{q}" for i, q, _, _ in items) if t not in self._runs
        ]
        if texts:
            run = self._retriever.search(
                {str(n): t for n, t in enumerate(texts)}, self._corpus, top_k=len(self._corpus),
                query_type="text", document_type="code",
            )  # fmt: skip
            for n, t in enumerate(texts):
                self._runs[t] = run.get(str(n), {})
        return [
            float(self._runs[f"{i}\n{q}"].get(doc_id, float("-inf"))) for i, q, doc_id, _ in items
        ]


def _bm25_scorer(retriever: Any, data: QualcodeInput, name: str) -> BM25Scorer:
    return BM25Scorer(data.corpus, retriever.k1, retriever.b)


def _dense_scorer(retriever: Any, data: QualcodeInput, name: str) -> DenseScorer:
    from coreb_toolkit.retrieval.registry import model_metadata

    scorer = DenseScorer(retriever.encoder, data.corpus, retriever.name)
    scorer.metadata = model_metadata(name, retriever)
    return scorer


def _scorer_factories() -> dict[type, Any]:
    """Retriever classes with a scorer of their own (BM25's whole-corpus statistics, cached
    query embeddings); any other retriever is scored through its search."""
    from coreb_toolkit.retrieval.bm25 import BM25FirstStage
    from coreb_toolkit.retrieval.dense_first_stage import DenseFirstStage

    return {BM25FirstStage: _bm25_scorer, DenseFirstStage: _dense_scorer}


def make_scorer(name: str, data: QualcodeInput, *, reranker: bool = False, **options: Any) -> Any:
    """A first-stage retriever by name (``bm25``, an embedder: ``minilm``, a
    sentence-transformers name; :func:`coreb_toolkit.retrieval.registry.make_retriever` with
    ``options``) or, with ``reranker=True``, a reranker alias / folder / Hub id."""
    if reranker:
        from reranker import load_reranker

        return RerankerScorer(load_reranker(name, **options))
    from coreb_toolkit.retrieval.registry import make_retriever

    retriever = make_retriever(name, **options)
    factory = _scorer_factories().get(type(retriever))
    if factory is None:
        return RetrieverScorer(retriever, data.corpus)
    return factory(retriever, data, name)


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def _items(rows: Sequence[Mapping[str, Any]], side: str) -> list[Item]:
    return [(r["instruction"], r["query"], r[f"{side}_id"], r[side]) for r in rows]


TASKS = ("pairs", "retrieval", "mc")


def evaluate_qualcode(
    source: str | os.PathLike[str] | QualcodeInput,
    scorer: Any,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    tasks: Collection[str] = TASKS,
    retrieval: bool = True,
    plots: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """QPA per dimension (``pairs``), MRR@10/nDCG@10 on the 1+99 task (``retrieval``), MCA per
    k (``mc``); written under ``<out_dir>/<scorer>/qualcode/`` when ``out_dir`` is given.
    ``retrieval=False`` is the same as leaving ``"retrieval"`` out of ``tasks``.

    Returns:
        The results dict (:class:`~coreb_toolkit.benchmark.results.QualcodeResults` as
        written), with ``out_dir``, the folder written, when ``out_dir`` is given.
    """
    unknown = set(tasks) - set(TASKS)
    if unknown or not tasks:
        raise ValueError(f"tasks must be some of pairs, retrieval, mc; got {sorted(tasks)}")
    retrieval = retrieval and "retrieval" in tasks
    data = source if isinstance(source, QualcodeInput) else load_qualcode(source)
    t0 = time.perf_counter()
    scores_out: list[dict[str, Any]] = []
    qpa_rows: dict[str, dict[str, Any]] = {}
    if {"pairs", "retrieval"} & set(tasks):
        qpa_rows = _pairs(data, scorer, retrieval, progress, scores_out)
    mc_rows = _mc(data, scorer, progress, scores_out) if "mc" in tasks else {}
    results = QualcodeResults(
        scorer=scorer.metadata,
        dataset={"source": data.source, "revision": dataset_revision(data.source)},
        qualcode=qpa_rows,
        mc=mc_rows,
        seconds=round(time.perf_counter() - t0, 3),
    )
    if out_dir is None:
        return results.to_dict()
    from coreb_toolkit.benchmark.provenance import library_versions
    from coreb_toolkit.benchmark.runner import slug

    results.versions = library_versions()
    target = Path(out_dir) / slug(str(scorer.name)) / "qualcode"
    write_results(target / "results.json", results)
    out = results.to_dict()
    (target / "summary.md").write_text(summary_table([out]), encoding="utf-8")
    with open(target / "scores.jsonl", "w", encoding="utf-8") as fh:
        for rec in scores_out:
            if "task" not in rec:
                fh.write(json.dumps(rec) + "\n")
    per_query = [rec for rec in scores_out if rec.get("task") == "retrieval"]
    if per_query:
        with open(target / RETRIEVAL_PER_QUERY, "w", encoding="utf-8") as fh:
            for rec in per_query:
                fh.write(json.dumps(rec) + "\n")
    if plots:
        plot_qualcode([out], target / "qualcode.png")
    out["out_dir"] = str(target)
    return out


def _bar(items: Any, desc: str, progress: bool) -> Any:
    from tqdm.auto import tqdm

    # disable=None: shown on a terminal only, so that logs stay readable
    return tqdm(items, desc=desc, disable=None if progress else True, leave=False)


def _pairs(
    data: QualcodeInput,
    scorer: Any,
    retrieval: bool,
    progress: bool,
    scores_out: list[dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """QPA per dimension (and the 1+99 retrieval task with ``retrieval``)."""
    qpa_rows: dict[str, dict[str, Any]] = {}
    for dim, rows in _bar(data.pairs.items(), "QualCode pairs", progress):
        if not rows:
            continue
        both = scorer.score(_items(rows, "chosen") + _items(rows, "rejected"))
        chosen, rejected = both[: len(rows)], both[len(rows) :]
        qpa_rows[dim] = {
            "qpa": qpa(chosen, rejected),
            "ties": sum(c == r for c, r in zip(chosen, rejected, strict=True)) / len(rows),
            "n_pairs": len(rows),
        }
        for r, c, n in zip(rows, chosen, rejected, strict=True):
            scores_out.append(
                {"config": QUALCODE_PAIR_CONFIGS[dim], "id": r["pair_id"], "chosen": c,
                 "rejected": n}
            )  # fmt: skip
        if retrieval:
            qpa_rows[dim].update(_retrieval(dim, rows, data, scorer, scores_out))
    return qpa_rows


def _mc(
    data: QualcodeInput, scorer: Any, progress: bool, scores_out: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """MCA per number of conditions k, and per combination of conditions."""
    mc_rows: dict[str, Any] = {}
    for k, rows in _bar(data.triplets.items(), "MC-QualCode", progress):
        if not rows:
            mc_rows[f"k={k}"] = {"mca": None, "n_triplets": 0}
            continue
        both = scorer.score(_items(rows, "chosen") + _items(rows, "rejected"))
        chosen, rejected = both[: len(rows)], both[len(rows) :]
        out = mca(chosen, rejected, [int(r["num_conditions"]) for r in rows])
        by_combo: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            by_combo["+".join(r["conditions"])].append(i)
        mc_rows[f"k={k}"] = {
            "mca": out["mca"],
            "n_triplets": out["n_triplets"],
            "by_combination": {
                combo: {
                    "mca": qpa([chosen[i] for i in idx], [rejected[i] for i in idx]),
                    "n": len(idx),
                }
                for combo, idx in sorted(by_combo.items())
            },
        }
        for r, c, n in zip(rows, chosen, rejected, strict=True):
            scores_out.append(
                {"config": MC_CONFIGS[k], "id": r["triplet_id"], "chosen": c, "rejected": n}
            )
    return mc_rows


def _retrieval(
    dim: str,
    rows: Sequence[Mapping[str, Any]],
    data: QualcodeInput,
    scorer: Any,
    scores_out: list[dict[str, Any]],
) -> dict[str, Any]:
    """The 1+99 task: ``chosen`` (relevance 2) among its pair's retrieval negatives."""
    items: list[Item] = []
    owner: list[tuple[str, str]] = []
    for r in rows:
        docs = [r["chosen_id"], *r["retrieval_negative_ids"]]
        for d in docs:
            if d not in data.corpus:
                raise ValueError(
                    f"qualcode_{dim} row {r['pair_id']}: document {d!r} is not in "
                    "qualcode_corpus; the folder is inconsistent, rebuild it"
                )
            items.append((r["instruction"], r["query"], d, data.corpus[d]))
            owner.append((r["pair_id"], d))
    scores = scorer.score(items)
    run: dict[str, dict[str, float]] = defaultdict(dict)
    for (qid, d), s in zip(owner, scores, strict=True):
        run[qid][d] = s
    qrels = {r["pair_id"]: {r["chosen_id"]: 2} for r in rows}
    evaluation = evaluate_retrieval(qrels, dict(run), k_values=RETRIEVAL_MEASURES)
    means = evaluation.mean()
    for qid, values in evaluation.per_query.items():  # for paired tests between scorers
        scores_out.append({"task": "retrieval", "config": QUALCODE_PAIR_CONFIGS[dim], "id": qid,
                           **{k: values[k] for k in ("mrr_at_10", "ndcg_at_10")}})  # fmt: skip
    return {
        "retrieval_mrr_at_10": means["mrr_at_10"],
        "retrieval_ndcg_at_10": means["ndcg_at_10"],
        "retrieval_candidates": 1 + len(rows[0]["retrieval_negative_ids"]),
    }


def summary_table(results: Sequence[Any]) -> str:
    """Markdown: a row per scorer; QPA (and 1+99 MRR@10 / nDCG@10) per dimension, MCA per k."""
    from coreb_toolkit.benchmark.report import as_dicts

    results = as_dicts(results)
    header = ["scorer"]
    for d in DIMENSIONS:
        header += [f"{d} QPA", f"{d} MRR@10", f"{d} nDCG@10"]
    header += [f"MCA k={k}" for k in MC_CONDITION_COUNTS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.4f}"

    for res in results:
        cells = [str(res["scorer"].get("name"))]
        for d in DIMENSIONS:
            row = res["qualcode"].get(d, {})
            cells += [
                fmt(row.get(m)) for m in ("qpa", "retrieval_mrr_at_10", "retrieval_ndcg_at_10")
            ]
        cells += [fmt(res["mc"].get(f"k={k}", {}).get("mca")) for k in MC_CONDITION_COUNTS]
        lines.append("| " + " | ".join(cells) + " |")
    counts = results[0]
    n_pairs = ", ".join(f"{d} {v['n_pairs']}" for d, v in counts["qualcode"].items())
    n_mc = ", ".join(f"{k} {v['n_triplets']}" for k, v in counts["mc"].items())
    lines += [
        "",
        f"Pairs: {n_pairs}; MC triplets: {n_mc}. QPA/MCA count a tie as a loss "
        "(chance is 0.5 for a scorer without ties).",
    ]
    from coreb_toolkit.benchmark.report import untrained_note

    for res in results:
        if res["scorer"].get("untrained_head"):
            lines += ["", untrained_note(res["scorer"])]
    return "\n".join(lines) + "\n"


__all__ = [
    "DIMENSIONS",
    "TASKS",
    "BM25Scorer",
    "DenseScorer",
    "QualcodeInput",
    "RerankerScorer",
    "RetrieverScorer",
    "evaluate_qualcode",
    "load_qualcode",
    "make_scorer",
    "plot_qualcode",
    "summary_table",
]
