"""The rows and ``datasets`` features of the QualCode configs (one split, ``test``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import datasets

from coreb_toolkit import vocabulary
from coreb_toolkit.builders.qualcode.data import QualcodeData
from coreb_toolkit.vocabulary import (
    QUALCODE_CORPUS,
    QUALCODE_DIMENSIONS,
    QUALCODE_PAIR_CONFIGS,
)

SPLIT = "test"
PAIR_CONFIGS: dict[str, str] = {name: d for d, name in QUALCODE_PAIR_CONFIGS.items()}
"""Pair config -> its dimension (``qualcode_speed`` -> ``speed``)."""
MC_CONFIGS: dict[str, int] = {name: k for k, name in vocabulary.MC_CONFIGS.items()}
"""MC-QualCode config -> its condition count (``mc_2cond`` -> 2)."""

_S = datasets.Value("string")
_F = datasets.Value("float64")
_I = datasets.Value("int64")


def _figure_features(prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}_cpu_time_ms": _F,
        f"{prefix}_memory_kb": _F,
        f"{prefix}_measured_cpu_time_ms": _F,
        f"{prefix}_measured_memory_kb": _F,
        f"{prefix}_smell_count": _I,
        f"{prefix}_smell_kinds": datasets.Sequence(_S),
    }


PAIR_FEATURES = datasets.Features(
    {
        "pair_id": _S,
        "dimension": _S,
        "instruction": _S,
        "query": _S,
        "chosen": _S,
        "rejected": _S,
        "problem_id": _S,
        "chosen_id": _S,
        "rejected_id": _S,
        "margin": _F,
        "label_source": _S,
        **_figure_features("chosen"),
        **_figure_features("rejected"),
        "retrieval_negative_ids": datasets.Sequence(_S),
    }
)
MC_FEATURES = datasets.Features(
    {
        "triplet_id": _S,
        "num_conditions": _I,
        "conditions": datasets.Sequence(_S),
        "failed_condition": _S,
        "instruction": _S,
        "query": _S,
        "chosen": _S,
        "rejected": _S,
        "problem_id": _S,
        "chosen_id": _S,
        "rejected_id": _S,
        **{f"{p}_{d}_label": _I for p in ("chosen", "rejected") for d in QUALCODE_DIMENSIONS},
        **_figure_features("chosen"),
        **_figure_features("rejected"),
    }
)
CORPUS_FEATURES = datasets.Features(
    {
        "doc_id": _S,
        "text": _S,
        "problem_id": _S,
        "language": _S,
        "user_id": _S,
        "origin": _S,
        "cpu_time_ms": _F,
        "memory_kb": _F,
        "measured_cpu_time_ms": _F,
        "measured_memory_kb": _F,
        "smell_count": _I,
        "smell_diversity": _I,
        "smell_kinds": datasets.Sequence(_S),
        "smell_error": _S,
        **{f"{d}_label": _I for d in QUALCODE_DIMENSIONS},
    }
)


def corpus_rows(data: QualcodeData) -> Iterator[dict[str, Any]]:
    """The rows of ``qualcode_corpus``: every submission used, by problem and submission id."""
    for c in data.corpus():
        yield {
            "doc_id": c.submission_id,
            "text": c.code,
            "problem_id": c.problem_id,
            "language": c.language,
            "user_id": c.user_id,
            "origin": c.origin,
            "cpu_time_ms": c.judge_cpu_time_ms,
            "memory_kb": c.judge_memory_kb,
            "measured_cpu_time_ms": c.measured_cpu_time_ms,
            "measured_memory_kb": c.measured_memory_kb,
            "smell_count": c.smell_count,
            "smell_diversity": None if c.smell_count is None else len(c.smell_kinds),
            "smell_kinds": list(c.smell_kinds),
            "smell_error": c.smell_error,
            **{f"{d}_label": c.labels.get(d) for d in QUALCODE_DIMENSIONS},
        }


def config_rows(data: QualcodeData, name: str) -> Iterator[dict[str, Any]]:
    """The rows of config ``name``."""
    if name in PAIR_CONFIGS:
        return iter(data.pairs[PAIR_CONFIGS[name]])
    if name in MC_CONFIGS:
        return iter(data.triplets[MC_CONFIGS[name]])
    if name == QUALCODE_CORPUS:
        return corpus_rows(data)
    raise ValueError(f"unknown QualCode config {name!r}; expected one of {list(FEATURES)}")


FEATURES: dict[str, datasets.Features] = {
    **dict.fromkeys(PAIR_CONFIGS, PAIR_FEATURES),
    **dict.fromkeys(MC_CONFIGS, MC_FEATURES),
    QUALCODE_CORPUS: CORPUS_FEATURES,
}
