"""The results model: one typed, versioned shape for every ``results.json`` the toolkit writes.

Two kinds share one file format (``results.schema.json``, shipped beside this module, JSON
Schema 2020-12), told apart by ``kind``:

* :class:`CorebResults` (``"coreb"``): one retriever on one release, or a first stage and its
  reranker (:mod:`coreb_toolkit.benchmark.runner`);
* :class:`QualcodeResults` (``"qualcode"``): one scorer on a QualCode folder
  (:mod:`coreb_toolkit.benchmark.qualcode_eval`).

Every file carries ``schema_version`` (:data:`SCHEMA_VERSION`). :func:`write_results` writes
one; :func:`read_results` reads one back, checked against the schema first: a file of a version
it does not read (:data:`READABLE_VERSIONS`), or a malformed one, is a ``ValueError`` naming the
file and the field path (``results.json: rows[3].ndcg_at_10: expected a number, got 'x'``).
Rows stay plain dicts (``eval_metrics.AggregateRow.to_dict()`` plus the tie share): their metric
keys are open.
Everything that reads results files (reports, plots, comparisons, model cards) reads them here.

Versions: 1, the first; 2 adds the CoREB field ``mteb`` (the subtasks whose ``mteb/excluded`` /
``mteb/full_text`` runs the folder keeps for ``coreb submit mteb``, see
:mod:`coreb_toolkit.benchmark.runner`), which a version-1 file never has; 3 adds
``mteb_tasks`` (MTEB's six CoREB(v1) tasks scored in the run) and ``mteb.reranking`` (the
reranking lists' scores kept in ``mteb/reranking/``). All three are read.

A CoREB result evaluated on a query sample (``coreb evaluate --query-sample N``) records
``query_sample``; :func:`check_publishable` is the one rule that keeps such a file out of what
publishes results as the benchmark's (model cards, leaderboard submissions, MTEB export).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from coreb_toolkit.untrusted import check_finite, read_json

SCHEMA_VERSION = 3
#: the versions :func:`read_results` reads (a version-1 file is a version-2 file without
#: ``mteb``, a version-2 file a version-3 file without ``mteb_tasks``)
READABLE_VERSIONS = (1, 2, 3)
KINDS = ("coreb", "qualcode")
SCHEMA_FILE = "results.schema.json"
#: The fields the schema adds to what the runners wrote before it existed.
SCHEMA_FIELDS = ("schema_version", "kind")


@dataclass
class CorebResults:
    """One CoREB run on one release: a first stage, or (with ``reranker``) a reranked one.

    Field by field what ``results.json`` holds; the reranked fields are ``None`` for a first
    stage and are then not written.
    """

    model: dict[str, Any]
    dataset: dict[str, Any]  # {"source": ..., "revision": ...}
    release: str
    no_positive_policy: str
    relevance_level: int
    c2t_canonical_corpus: str
    corpora: dict[str, str]  # subtask -> the corpus config it ranked
    top_k: int
    retrieval_seconds: float
    versions: dict[str, str | None]
    rows: list[dict[str, Any]] = field(default_factory=list)
    rerank_top_k: int | None = None
    rerank_seconds: float | None = None
    reranker: dict[str, Any] | None = None
    rerank_note: str | None = None
    first_stage: dict[str, str] | None = None  # {"model": ..., "results": relative path}
    first_stage_rows: list[dict[str, Any]] | None = None
    delta: list[dict[str, Any]] | None = None
    # {"per_subtask": N, "seed": S}: every subtask's queries a seeded sample of at most N
    query_sample: dict[str, int] | None = None
    # {"excluded": [subtask, ...], "full_text": [subtask, ...]}: the runs kept under mteb/ for
    # MTEB's protocol (schema version 2; None in a version-1 file or with mteb_runs=False)
    mteb: dict[str, list[str]] | None = None
    # {MTEB task: {"main_score", "n_queries", "scores"[, "n_pairs", "list_size", "seed"]}}: MTEB's
    # CoREB(v1) tasks scored in the run (schema version 3; None before, or with none derivable)
    mteb_tasks: dict[str, dict[str, Any]] | None = None

    kind: ClassVar[str] = "coreb"
    # the key order of the files written before the schema, kept
    _ORDER: ClassVar[tuple[str, ...]] = (
        "model", "dataset", "release", "query_sample", "no_positive_policy", "relevance_level",
        "c2t_canonical_corpus", "corpora", "top_k", "rerank_top_k", "retrieval_seconds",
        "rerank_seconds", "reranker", "rerank_note", "first_stage", "versions", "rows",
        "first_stage_rows", "delta", "mteb", "mteb_tasks",
    )  # fmt: skip

    @property
    def reranked(self) -> bool:
        return self.reranker is not None

    @property
    def sampled(self) -> bool:
        """Whether the figures are on a sample of each subtask's queries, not the benchmark."""
        return self.query_sample is not None

    def to_dict(self) -> dict[str, Any]:
        """The dict written to ``results.json`` (schema fields first, ``None`` extras left out)."""
        return _to_dict(self)


@dataclass
class QualcodeResults:
    """One scorer on a QualCode folder: QPA (and 1+99 retrieval) per dimension, MCA per k."""

    scorer: dict[str, Any]
    dataset: dict[str, Any]  # {"source": ...}
    qualcode: dict[str, dict[str, Any]]  # dimension -> {"qpa", "ties", "n_pairs", ...}
    mc: dict[str, dict[str, Any]]  # "k=1" -> {"mca", "n_triplets", "by_combination"}
    seconds: float
    versions: dict[str, str | None] | None = None

    kind: ClassVar[str] = "qualcode"
    _ORDER: ClassVar[tuple[str, ...]] = (
        "scorer", "dataset", "qualcode", "mc", "seconds", "versions",
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The dict written to ``results.json`` (schema fields first, ``None`` extras left out)."""
        return _to_dict(self)


Results = CorebResults | QualcodeResults
_R = TypeVar("_R", CorebResults, QualcodeResults, Mapping[str, Any])
_CLASSES: dict[str, type[CorebResults] | type[QualcodeResults]] = {
    "coreb": CorebResults,
    "qualcode": QualcodeResults,
}


def _to_dict(res: Results) -> dict[str, Any]:
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": res.kind}
    for key in res._ORDER:
        value = getattr(res, key)
        if value is not None:
            out[key] = value
    return out


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON Schema of ``results.json`` (version :data:`SCHEMA_VERSION`)."""
    text = resources.files("coreb_toolkit.benchmark").joinpath(SCHEMA_FILE).read_text("utf-8")
    return json.loads(text)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


_JSON_TYPES = {"number": "a number", "integer": "an integer", "string": "a string",
               "object": "an object", "array": "a list", "boolean": "true or false",
               "null": "null"}  # fmt: skip


def _message(error: Any) -> str:
    if error.validator == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        expected = " or ".join(_JSON_TYPES.get(w, w) for w in wanted)
        return f"expected {expected}, got {error.instance!r}"
    if error.validator == "additionalProperties" and not error.validator_value:
        return f"{error.message} (not a field of this results kind)"
    return error.message


def validate(data: object, where: str = "results") -> dict[str, Any]:
    """``data`` if it is a valid results dict of this version, else a ``ValueError`` naming
    ``where`` and the field path of the first problem found."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version is None:
        raise ValueError(
            f"{where}: no schema_version; a results file written before coreb-toolkit versioned "
            f"them: rewrite it with upgrade_results() or rerun the evaluation"
        )
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = " or ".join(map(str, READABLE_VERSIONS))
        raise ValueError(
            f"{where}: schema_version: {version!r} is not a version this coreb-toolkit reads "
            f"({readable}); read it with the coreb-toolkit that wrote it, or upgrade"
        )
    check_finite(data, where)
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}: kind: expected one of {list(KINDS)}, got {kind!r}")
    for field_name, since in (("mteb", 2), ("mteb_tasks", 3)):
        if version < since and field_name in data:
            raise ValueError(
                f"{where}: {field_name}: a field of schema version {since} in a version-{version} "
                "file; the file was edited by hand: write it again with write_results()"
            )
    try:
        import jsonschema
    except ImportError as err:  # a core dependency; a broken install names it
        raise ImportError("reading results needs jsonschema: pip install jsonschema") from err
    full = schema()
    one = {"$ref": f"#/$defs/{kind}", "$defs": full["$defs"]}
    validator = jsonschema.Draft202012Validator(one)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        error = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise ValueError(f"{where}: {_path(error.absolute_path)}: {_message(error)}{more}")
    return dict(data)


def from_dict(data: Mapping[str, Any], where: str = "results") -> Results:
    """The :class:`CorebResults` / :class:`QualcodeResults` of a results dict, validated."""
    valid = validate(data, where)
    cls = _CLASSES[valid["kind"]]
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in valid.items() if k in names})


def upgrade_results(data: Mapping[str, Any]) -> dict[str, Any]:
    """A results dict written before the schema (no ``schema_version``) with the schema
    fields added; its kind is told by its keys (``scorer``: QualCode). Other keys untouched."""
    if "schema_version" in data:
        return dict(data)
    kind = "qualcode" if "scorer" in data else "coreb"
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **data}


def as_results(data: Results | Mapping[str, Any], where: str = "results") -> Results:
    """A results object from itself, a results dict, or a dict written before the schema."""
    if isinstance(data, (CorebResults, QualcodeResults)):
        return data
    return from_dict(upgrade_results(data), where)


def check_publishable(results: _R, where: str) -> _R:
    """``results`` (a results object or dict) unless it was evaluated on a query sample
    (``query_sample``), else a ``ValueError`` naming ``where``: what publishes results as the
    benchmark's (model cards, leaderboard submissions, the MTEB export) calls this on every
    file it reads."""
    if isinstance(results, Mapping):
        sample = results.get("query_sample")
    else:
        sample = getattr(results, "query_sample", None)
    if sample is not None:
        n = sample.get("per_subtask")
        raise ValueError(
            f"{where}: evaluated on a query sample ({n} {'query' if n == 1 else 'queries'} per "
            f"subtask, seed {sample.get('seed')}; `coreb evaluate --query-sample`), not on the "
            "benchmark: its figures cannot be published; rerun `coreb evaluate` without "
            "--query-sample"
        )
    return results


def write_results(path: str | os.PathLike[str], results: Results) -> Path:
    """Write ``results`` as ``path`` (``results.json``), validated first; returns the path."""
    data = results.to_dict()
    validate(data, f"{path} (being written)")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return target


def read_results(path: str | os.PathLike[str]) -> Results:
    """The results of a ``results.json`` file (or of a folder holding one), validated."""
    target = Path(path)
    if target.is_dir():
        target = target / "results.json"
    if not target.exists():
        raise ValueError(f"{target}: no such results file")
    return from_dict(read_json(target), str(target))


__all__ = [
    "KINDS",
    "READABLE_VERSIONS",
    "SCHEMA_FIELDS",
    "SCHEMA_VERSION",
    "CorebResults",
    "QualcodeResults",
    "Results",
    "as_results",
    "check_publishable",
    "from_dict",
    "read_results",
    "schema",
    "upgrade_results",
    "validate",
    "write_results",
]
