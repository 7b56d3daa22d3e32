"""The rows and ``datasets`` features of every config a CoREB build holds.

One config per subtask (a query with its positives, hard negatives, exclusions and the corpus
it ranks), the three corpus views, and the 8 official configs as published. Each function
yields the rows of one config for one release (:class:`ReleaseData`), in a fixed order, so
that a rebuild is byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import datasets

from coreb_toolkit.builders.coreb.layout import (
    BOOL,
    EXTRA_FIELD,
    FAMILIES,
    FLOAT64,
    INT64,
    META_FIELD,
    OFFICIAL_FIELDS,
    STRING,
)
from coreb_toolkit.builders.coreb.records import ReleaseData, json_text, problem_of, query_text
from coreb_toolkit.vocabulary import (
    CORPUS_CODE,
    CORPUS_CONFIGS,
    CORPUS_TEXT,
    CORPUS_TEXT_ABBREVIATED,
)

_S = datasets.Value("string")
_LIST = datasets.Sequence(_S)

SUBTASK_FEATURES = datasets.Features(
    {
        "query_id": _S,
        "query": _S,
        "positive_ids": _LIST,  # relevance 2
        "hard_negative_ids": _LIST,  # relevance 1
        "exclude_ids": _LIST,  # dropped from the ranking before scoring (the c2c anchor)
        "corpus": _S,  # the corpus config this query ranks
        "release": _S,
        "main_task": _S,
        "subtask": _S,
        "query_type": _S,
        "sub_query_type": _S,
        "language_constraint": _S,
        "anchor_language": _S,
        "anchor_model": _S,
        "anchor_code_id": _S,
        "target_languages": _LIST,
        "source_problem_id": _S,
        "task_type": _S,
        "text_type": _S,
        "text_id": _S,
        "label": datasets.Value("int64"),
        "pair_type": _S,
        "qrels_source": _S,  # shipped | derived-v2 | derived-v1
        "meta": _S,  # the query's meta as JSON, keys sorted
    }
)
CORPUS_FEATURES: dict[str, datasets.Features] = {
    CORPUS_CODE: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,
            "language": _S,
            "model": _S,
            "code_length": datasets.Value("int64"),
            "source_problem_id": _S,
            "solution_key": _S,
            "passed": datasets.Value("bool"),
            "pass_rate": datasets.Value("float64"),
            "test_passed": datasets.Value("int64"),
            "test_total": datasets.Value("int64"),
            "meta": _S,
        }
    ),
    CORPUS_TEXT: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,
            "text_style": _S,
            "text_length": datasets.Value("int64"),
            "abbreviated_text": _S,
            "abbreviated_text_length": datasets.Value("int64"),
            "source_problem_id": _S,
            "meta": _S,
        }
    ),
    CORPUS_TEXT_ABBREVIATED: datasets.Features(
        {
            "doc_id": _S,
            "text": _S,  # abbreviated_text, or the full text where a record has none
            "text_field": _S,  # which field "text" came from: abbreviated_text | text
            "text_style": _S,
            "source_problem_id": _S,
        }
    ),
}
_ARROW_KIND = {STRING: "string", INT64: "int64", FLOAT64: "float64", BOOL: "bool"}
OFFICIAL_FEATURES: dict[str, datasets.Features] = {
    config: datasets.Features(
        {
            **{name: datasets.Value(_ARROW_KIND[kind]) for name, (kind, _) in spec.items()},
            **({} if config.endswith("_qrels") else {META_FIELD: _S}),
            EXTRA_FIELD: _S,  # fields outside the published schema, as JSON (null when none)
        }
    )
    for config, spec in OFFICIAL_FIELDS.items()
}


def subtask_rows(data: ReleaseData, subtask: str) -> Iterator[dict[str, Any]]:
    """The rows of one subtask config for one release, by query id."""
    for qid in sorted(q for q, (s, _) in data.queries.items() if s.name == subtask):
        spec, rec = data.queries[qid]
        judged = data.qrels.get(qid, {})
        meta, f = rec.meta, rec.fields
        anchor = meta.get("anchor_code_id") if spec.family in ("c2c", "c2t") else None
        targets = meta.get("target_languages")
        constraint = f.get("language_constraint")
        if constraint is None and spec.family == "t2c" and spec.language is not None:
            constraint = "none" if spec.language == "any" else spec.language
        yield {
            "query_id": qid,
            "query": query_text(rec),
            "positive_ids": sorted(d for d, r in judged.items() if r == 2),
            "hard_negative_ids": sorted(d for d, r in judged.items() if r == 1),
            "exclude_ids": [anchor] if spec.family == "c2c" else [],
            "corpus": spec.corpus,
            "release": data.name,
            "main_task": spec.family,
            "subtask": spec.name,
            "query_type": f.get("query_type"),
            "sub_query_type": f.get("sub_query_type"),
            "language_constraint": constraint,
            "anchor_language": f.get("anchor_language"),
            "anchor_model": f.get("anchor_model"),
            "anchor_code_id": anchor if isinstance(anchor, str) else None,
            "target_languages": [str(t) for t in targets] if isinstance(targets, list) else None,
            "source_problem_id": problem_of(rec),
            "task_type": _str_or_none(meta.get("task_type")),
            "text_type": f.get("text_type") or _str_or_none(meta.get("text_type")),
            "text_id": f.get("text_id"),
            "label": f.get("label"),
            "pair_type": _str_or_none(meta.get("pair_type")),
            "qrels_source": data.qrels_source.get(spec.family),
            "meta": json_text(meta),
        }


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _typed(value: Any, kind: type) -> Any:
    if kind is float:
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if ok else None
    return value if isinstance(value, kind) else None


def corpus_rows(data: ReleaseData, corpus: str) -> Iterator[dict[str, Any]]:
    """The rows of one corpus config for one release, by document id."""
    if corpus == CORPUS_CODE:
        for doc_id, rec in sorted(data.code.items()):
            f, m = rec.fields, rec.meta
            yield {
                "doc_id": doc_id,
                "text": f["code"],
                "language": f["language"],
                "model": f.get("model"),
                "code_length": f.get("code_length"),
                "source_problem_id": problem_of(rec),
                "solution_key": _str_or_none(m.get("solution_key")),
                "passed": _typed(m.get("passed"), bool),
                "pass_rate": _typed(m.get("pass_rate"), float),
                "test_passed": _typed(m.get("test_passed"), int),
                "test_total": _typed(m.get("test_total"), int),
                "meta": json_text(m),
            }
    elif corpus == CORPUS_TEXT:
        for doc_id, rec in sorted(data.texts.items()):
            f = rec.fields
            yield {
                "doc_id": doc_id,
                **{k: f.get(k) for k in OFFICIAL_FIELDS["text_corpus"] if k != "text_id"},
                "source_problem_id": problem_of(rec),
                "meta": json_text(rec.meta),
            }
    elif corpus == CORPUS_TEXT_ABBREVIATED:
        for doc_id, rec in sorted(data.texts.items()):
            f = rec.fields
            short = f.get("abbreviated_text")
            yield {
                "doc_id": doc_id,
                "text": short or f["text"],
                "text_field": "abbreviated_text" if short else "text",
                "text_style": f.get("text_style"),
                "source_problem_id": problem_of(rec),
            }
    else:
        raise ValueError(f"unknown corpus config {corpus!r}; choose one of {CORPUS_CONFIGS}")


def official_rows(data: ReleaseData, config: str) -> Iterator[dict[str, Any]]:
    """The records of one official config, in file order; derived qrels where none shipped."""
    if config.endswith("_qrels"):
        family = next(f for f, spec in FAMILIES.items() if spec["qrels"] == config)
        if data.qrels_source.get(family) == "shipped":
            for rec in data.records[config]:
                yield {**rec.fields, EXTRA_FIELD: json_text(rec.extra) if rec.extra else None}
            return
        for qid in sorted(data.qrels):
            if data.queries[qid][0].family == family:
                for doc, rel in sorted(data.qrels[qid].items()):
                    yield {"query_id": qid, "doc_id": doc, "relevance": rel, EXTRA_FIELD: None}
        return
    for rec in data.records[config]:
        yield {
            **rec.fields,
            META_FIELD: json_text(rec.meta),
            EXTRA_FIELD: json_text(rec.extra) if rec.extra else None,
        }


def config_rows(data: ReleaseData, name: str, kind: str) -> Iterator[dict[str, Any]]:
    """The rows of config ``name`` (of ``kind`` subtask | corpus | official) for one release."""
    if kind == "subtask":
        return subtask_rows(data, name)
    if kind == "corpus":
        return corpus_rows(data, name)
    return official_rows(data, name)


def features_of(kind: str, name: str) -> datasets.Features:
    """The features of config ``name`` of ``kind`` (subtask | corpus | official)."""
    if kind == "subtask":
        return SUBTASK_FEATURES
    if kind == "corpus":
        return CORPUS_FEATURES[name]
    return OFFICIAL_FEATURES[name]
