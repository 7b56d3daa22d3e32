"""Reading and writing TREC run and qrels files.

Run lines:   ``query_id Q0 doc_id rank score tag``  (whitespace separated)
Qrels lines: ``query_id iteration doc_id relevance``

Readers reject what trec_eval would silently misread: a malformed line, a duplicate
(query, doc) pair, a non-integer or negative relevance, a non-finite score. Errors name the file
and the line. Writers order each query's documents as trec_eval ranks them (score descending,
ties by doc id descending) and number the ranks from 1.
"""

from __future__ import annotations

import os
from pathlib import Path

from eval_metrics._checks import Qrels, Run, check_relevance, check_score

PathLike = str | os.PathLike


def _lines(path: PathLike):
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                yield number, fields


def read_run(path: PathLike) -> dict[str, dict[str, float]]:
    """Read a TREC run file into ``{query_id: {doc_id: score}}``.

    The rank column is ignored (trec_eval ranks by score); duplicates are an error.
    """
    run: dict[str, dict[str, float]] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 6:
            raise ValueError(
                f"{where}: a run line has 6 fields 'query_id Q0 doc_id rank score tag', "
                f"got {len(fields)}: {' '.join(fields)!r}"
            )
        query_id, _, doc_id, _, score_text, _ = fields
        try:
            score = float(score_text)
        except ValueError:
            raise ValueError(f"{where}: score {score_text!r} is not a number") from None
        try:
            score = check_score(score, query_id, doc_id)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        docs = run.setdefault(query_id, {})
        if doc_id in docs:
            raise ValueError(f"{where}: duplicate (query, doc) pair ({query_id!r}, {doc_id!r})")
        docs[doc_id] = score
    if not run:
        raise ValueError(f"{path}: the run file holds no line")
    return run


def read_qrels(path: PathLike) -> dict[str, dict[str, int]]:
    """Read a TREC qrels file into ``{query_id: {doc_id: relevance}}``."""
    qrels: dict[str, dict[str, int]] = {}
    for number, fields in _lines(path):
        where = f"{path}:{number}"
        if len(fields) != 4:
            raise ValueError(
                f"{where}: a qrels line has 4 fields 'query_id iteration doc_id relevance', "
                f"got {len(fields)}: {' '.join(fields)!r}"
            )
        query_id, _, doc_id, rel_text = fields
        try:
            rel = int(rel_text)
        except ValueError:
            rel = rel_text
        try:
            rel = check_relevance(rel, query_id, doc_id)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        docs = qrels.setdefault(query_id, {})
        if doc_id in docs:
            raise ValueError(f"{where}: duplicate (query, doc) pair ({query_id!r}, {doc_id!r})")
        docs[doc_id] = rel
    if not qrels:
        raise ValueError(f"{path}: the qrels file holds no line")
    return qrels


def _check_token(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or any(c.isspace() for c in value):
        raise ValueError(
            f"{what} {value!r} cannot be written to a TREC file: it needs a "
            "non-empty str without whitespace"
        )
    return value


def write_run(run: Run, path: PathLike, tag: str = "coreb") -> Path:
    """Write ``{query_id: {doc_id: score}}`` as a TREC run file, ranked as trec_eval ranks."""
    _check_token(tag, "run tag")
    lines = []
    for query_id in sorted(run):
        _check_token(query_id, "query id")
        ranked = sorted(run[query_id].items(), key=lambda item: (item[1], item[0]), reverse=True)
        for rank, (doc_id, score) in enumerate(ranked, start=1):
            _check_token(doc_id, f"doc id (query {query_id!r})")
            score = check_score(score, query_id, doc_id)
            lines.append(f"{query_id} Q0 {doc_id} {rank} {score!r} {tag}\n")
    return _write(path, lines)


def write_qrels(qrels: Qrels, path: PathLike) -> Path:
    """Write ``{query_id: {doc_id: relevance}}`` as a TREC qrels file."""
    lines = []
    for query_id in sorted(qrels):
        _check_token(query_id, "query id")
        for doc_id in sorted(qrels[query_id]):
            _check_token(doc_id, f"doc id (query {query_id!r})")
            rel = check_relevance(qrels[query_id][doc_id], query_id, doc_id)
            lines.append(f"{query_id} 0 {doc_id} {rel}\n")
    return _write(path, lines)


def _write(path: PathLike, lines: list[str]) -> Path:
    """Write all lines or nothing: a temporary file renamed into place."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    tmp.replace(path)
    return path


def read_exclusions(path: PathLike) -> dict[str, list[str]]:
    """Read per-query exclusions: JSON ``{query_id: doc_id | [doc_id, ...]}`` (the c2c anchor
    map ships as ``{query_id: anchor_code_id}``) or TSV lines ``query_id<TAB>doc_id``."""
    import json

    text = Path(path).read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        out: dict[str, list[str]] = {}
        for query_id, docs in data.items():
            if isinstance(docs, str):
                docs = [docs]
            if not isinstance(docs, list) or not all(isinstance(d, str) for d in docs):
                raise ValueError(
                    f"{path}: exclusions of {query_id!r} must be a doc id or a list of doc ids, "
                    f"got {docs!r}"
                )
            out[query_id] = docs
        return out
    out = {}
    for number, fields in _lines(path):
        if len(fields) != 2:
            raise ValueError(
                f"{path}:{number}: an exclusion line has 2 fields 'query_id doc_id', "
                f"got {len(fields)}"
            )
        out.setdefault(fields[0], []).append(fields[1])
    return out


__all__ = ["read_exclusions", "read_qrels", "read_run", "write_qrels", "write_run"]
