"""The evaluation metadata of a model card, built with ``huggingface_hub`` from the card data
(:class:`model_cards.model_card.ModelCardInfo`): the ``model-index`` (``ModelCardData`` with one
``EvalResult`` per figure) and the ``.eval_results/<benchmark>.yaml`` files (``EvalResultEntry``
+ ``eval_result_entries_to_yaml``). Every value is copied from a results file; what goes where
is described in :mod:`model_cards.model_card`.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from coreb_toolkit.benchmark.results import check_publishable
from coreb_toolkit.untrusted import check_finite
from coreb_toolkit.vocabulary import MAIN_SCORE, MC_CONFIGS, QUALCODE_PAIR_CONFIGS
from eval_metrics.aggregate import TABLE_COLUMNS
from model_cards.dataset_card import coreb_task_id
from model_cards.model_card_sections import first_stage_name, metric_label

if TYPE_CHECKING:
    from model_cards.model_card import CardEvaluation, ModelCardInfo

logger = logging.getLogger(__name__)
EVAL_RESULTS_DIR = ".eval_results"


#: a row's figures that are shares of queries (means of per-query values in [0, 1])
_AT_K = re.compile(r"_at_\d+$")
_ROW_SHARES = ("hard_negative_intrusion_rate", "positive_tie_share")
_QUALCODE_SHARES = ("qpa", "ties", "retrieval_mrr_at_10", "retrieval_ndcg_at_10")


def _in_range(value: Any, low: float, high: float, where: str, name: str) -> None:
    if value is None:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not low <= value <= high:
        span = f"between {low} and {high}" if high != math.inf else f"at least {low}"
        raise ValueError(
            f"{where}: {name} is {value!r}, but it lies {span}: the results file was edited or "
            "is broken; rerun the evaluation that wrote it"
        )


def check_figures(results: Mapping[str, Any], where: str) -> None:
    """``ValueError`` naming ``where`` and the field when a figure a card publishes from a
    results dict is not finite or out of its range: every metric (``*_at_k``, QPA, MCA, tie and
    intrusion shares) lies in [0, 1] (a ``delta`` row in [-1, 1]), every time is at least 0."""
    check_finite(results, where)
    for key in ("retrieval_seconds", "rerank_seconds", "seconds"):
        _in_range(results.get(key), 0, math.inf, where, key)
    for key, low in (("rows", 0), ("first_stage_rows", 0), ("delta", -1)):
        for i, row in enumerate(results.get(key) or []):
            for name, value in row.items():
                if _AT_K.search(name) or name in _ROW_SHARES:
                    _in_range(value, low, 1, where, f"{key}[{i}].{name}")
    for dim, figures in (results.get("qualcode") or {}).items():
        for name in _QUALCODE_SHARES:
            _in_range(figures.get(name), 0, 1, where, f"qualcode.{dim}.{name}")
    for k, figures in (results.get("mc") or {}).items():
        _in_range(figures.get("mca"), 0, 1, where, f"mc.{k}.mca")
        for combo, values in (figures.get("by_combination") or {}).items():
            _in_range(values.get("mca"), 0, 1, where, f"mc.{k}.by_combination.{combo}.mca")


def check_card(info: ModelCardInfo) -> None:
    """Every figure a card would publish checked (:func:`check_figures` per results dict),
    and nothing non-finite anywhere in its metadata or training records: a card built in code
    is held to what :func:`model_cards.model_card.model_card_info` checks when it reads."""
    for ev in info.evaluations:
        check_publishable(ev.results, ev.path)
        check_figures(ev.results, ev.path)
    if info.training is not None:
        record = info.training
        check_finite(
            [record.config, record.data_report, record.disjointness, record.validation,
             record.run_info, record.log_history], f"the run records of {record.folder}",
        )  # fmt: skip
    check_finite(info.subject, "the model's metadata")


def _coreb_rows(ev: CardEvaluation) -> list[dict[str, Any]]:
    return list(ev.results["rows"])


def eval_result_objects(info: ModelCardInfo) -> list[Any]:
    """The ``huggingface_hub.EvalResult`` of every figure of the card's ``model-index``."""
    from huggingface_hub import EvalResult

    out = []
    for ev in info.evaluations:
        common = {
            "dataset_type": ev.dataset_id,
            "dataset_split": ev.split,
            "dataset_revision": ev.dataset_revision,
            "source_url": info.source_url,
            "source_name": info.source_name if info.source_url else None,
        }
        if ev.kind == "coreb":
            reranked = "reranker" in ev.results
            for row in _coreb_rows(ev):
                what = row["name"] if row["level"] == "subtask" else f"{row['name']} (aggregate)"
                for metric in TABLE_COLUMNS:
                    if row.get(metric) is None:
                        continue
                    out.append(EvalResult(
                        task_type="text-ranking" if reranked else "text-retrieval",
                        task_name="CoREB reranking" if reranked else "CoREB retrieval",
                        dataset_name=f"CoREB {what}, {ev.split}",
                        dataset_config=row["name"],
                        dataset_args={"level": row["level"], "n_queries": row["n_queries"]},
                        metric_type=metric,
                        metric_value=row[metric],
                        metric_name=metric_label(metric),
                        **common,
                    ))  # fmt: skip
            continue
        for dim, figures in ev.results["qualcode"].items():
            for metric in ("qpa", "retrieval_mrr_at_10", "retrieval_ndcg_at_10"):
                if figures.get(metric) is None:
                    continue
                out.append(EvalResult(
                    task_type="text-ranking",
                    task_name=f"QualCode {dim}",
                    dataset_name=f"QualCode {dim}",
                    dataset_config=QUALCODE_PAIR_CONFIGS.get(dim, dim),
                    dataset_args={"n_pairs": figures["n_pairs"]},
                    metric_type=metric,
                    metric_value=figures[metric],
                    metric_name=metric_label(metric),
                    **common,
                ))  # fmt: skip
        for k_key, figures in ev.results["mc"].items():
            if figures.get("mca") is None:
                continue
            k = int(k_key.removeprefix("k="))
            out.append(EvalResult(
                task_type="text-ranking",
                task_name=f"MC-QualCode {k} condition(s)",
                dataset_name=f"MC-QualCode k={k}",
                dataset_config=MC_CONFIGS.get(k, k_key),
                dataset_args={"n_triplets": figures["n_triplets"]},
                metric_type="mca",
                metric_value=figures["mca"],
                metric_name="MCA",
                **common,
            ))  # fmt: skip
    return out


def card_metadata(info: ModelCardInfo) -> Any:
    """The card's ``huggingface_hub.ModelCardData`` (YAML metadata and ``model-index``)."""
    from huggingface_hub import ModelCardData

    return ModelCardData(
        model_name=info.model_id,
        base_model=info.base_model,
        library_name=info.library_name,
        license=info.license,
        datasets=info.datasets,
        tags=info.tags,
        pipeline_tag=info.pipeline_tag,
        language=["en", "code"],
        eval_results=eval_result_objects(info),
    )


def _protocol_notes(ev: CardEvaluation) -> str:
    res = ev.results
    version = (res.get("versions") or {}).get("coreb-toolkit")
    toolkit = f"coreb-toolkit {version}" if version else "coreb-toolkit"
    if ev.kind == "qualcode":
        return f"{toolkit}; ties count as losses"
    parts = [
        f"relevance_level={res['relevance_level']}",
        f"no_positive_policy={res['no_positive_policy']}",
        f"c2t_canonical_corpus={res.get('c2t_canonical_corpus', 'abbreviated')}",
        f"first stage {first_stage_name(res)}, top {res['top_k']}",
    ]
    if "reranker" in res:
        parts.append(f"reranked top {res['rerank_top_k']} by {res['reranker'].get('name')}")
    return "; ".join([toolkit, *parts])


def eval_result_entries(info: ModelCardInfo) -> dict[str, list[Any]]:
    """``{dataset id: [huggingface_hub.EvalResultEntry, ...]}``: one value per task of the
    benchmark's eval.yaml (nDCG@10 per CoREB subtask, QPA per dimension, MCA per k)."""
    from huggingface_hub import EvalResultEntry

    out: dict[str, list[Any]] = {}
    for ev in info.evaluations:
        common = {
            "dataset_id": ev.dataset_id,
            "dataset_revision": ev.dataset_revision,
            "date": info.eval_date,
            "source_url": info.source_url,
            "source_name": info.source_name if info.source_url else None,
        }
        entries = out.setdefault(ev.dataset_id, [])
        notes = _protocol_notes(ev)
        if ev.kind == "coreb":
            for row in _coreb_rows(ev):
                if row["level"] == "subtask":
                    entries.append(EvalResultEntry(
                        task_id=coreb_task_id(row["name"], ev.split), value=row[MAIN_SCORE],
                        notes=f"{metric_label(MAIN_SCORE)}; {notes}", **common,
                    ))  # fmt: skip
            continue
        for dim, figures in ev.results["qualcode"].items():
            if figures.get("qpa") is None:
                logger.warning("%s: no QPA for %s (no pairs): not in .eval_results", ev.path, dim)
                continue
            entries.append(EvalResultEntry(
                task_id=QUALCODE_PAIR_CONFIGS.get(dim, dim), value=figures["qpa"],
                notes=f"QPA; {notes}", **common,
            ))  # fmt: skip
        for k_key, figures in ev.results["mc"].items():
            if figures.get("mca") is None:
                logger.warning(
                    "%s: no MCA for %s (no triplets): not in .eval_results", ev.path, k_key
                )
                continue
            k = int(k_key.removeprefix("k="))
            entries.append(EvalResultEntry(
                task_id=MC_CONFIGS.get(k, k_key), value=figures["mca"],
                notes=f"MCA; {notes}", **common,
            ))  # fmt: skip
    return out


def eval_results_files(info: ModelCardInfo) -> dict[str, str]:
    """``{".eval_results/<benchmark>.yaml": YAML text}``, one file per benchmark dataset
    (named after the dataset's repository name, with its owner where two share one)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    entries = eval_result_entries(info)
    names = [d.split("/")[-1] for d in entries]
    files: dict[str, str] = {}
    for dataset, items in entries.items():
        stem = dataset.split("/")[-1]
        if names.count(stem) > 1:
            stem = dataset.replace("/", "__")
        body = yaml.safe_dump(
            eval_result_entries_to_yaml(items), sort_keys=False, allow_unicode=True
        )
        files[f"{EVAL_RESULTS_DIR}/{stem}.yaml"] = body
    return files


__all__ = [
    "EVAL_RESULTS_DIR",
    "card_metadata",
    "check_card",
    "check_figures",
    "eval_result_entries",
    "eval_result_objects",
    "eval_results_files",
]
