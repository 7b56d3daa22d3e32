"""A leaderboard submission: one folder per model, made from a ``coreb evaluate`` folder.

``<submission>/``
    ``results.json``
        the typed results file exactly as :mod:`coreb_toolkit.benchmark.results` wrote it;
    ``runs/<subtask>.trec``
        the runs behind every number (the files the runner wrote, as scored);
    ``per_query.jsonl``
        the runner's per-query values (checked against the runs, never trusted);
    ``model_meta.json``
        what the page shows about the model (:class:`ModelMeta`);
    ``first_stage/runs/<subtask>.trec``
        for a reranked result only: the first stage's runs, so that its ``first_stage_rows``
        and ``delta`` are recomputed too rather than taken on trust;
    ``mteb/{excluded,full_text,reranking}/*.trec``
        for a result that claims MTEB's CoREB(v1) scores (``mteb_tasks``): the files they are
        recomputed from (the c2c anchors' scores, the full-text rankings, the 17-candidate
        lists' scores), so that its CoREB(v1) mean is recomputed too.

:func:`make_submission` copies an evaluation folder into that shape and writes
``model_meta.json`` from the results' ``model`` dict plus what the caller states;
:func:`read_submission` reads one back. :mod:`model_cards.leaderboard.validate` checks it.

A submission comes from a stranger: every file of it is read through
:func:`coreb_toolkit.untrusted.inside` (nothing is read through a symlink or ``..`` leading out
of the folder, nor from a FIFO or a device) and :func:`~coreb_toolkit.untrusted.read_json`.
The names it declares (model, first stage, reranker) are shown to others, so they must be
printable and unambiguous (:func:`check_name`); two entries whose names differ only by case,
width or lookalike letters (:func:`name_key`) never share a board.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import unicodedata
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from coreb_toolkit.benchmark.results import CorebResults, check_publishable, read_results
from coreb_toolkit.untrusted import inside, read_json

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.json"
META_FILE = "model_meta.json"
PER_QUERY_FILE = "per_query.jsonl"
RUNS_DIR = "runs"
MTEB_DIR = "mteb"
FIRST_STAGE_DIR = "first_stage"

MODEL_TYPES: tuple[str, ...] = ("lexical", "embedder", "reranked")
"""``lexical`` (BM25 and kin), ``embedder`` (a dense first stage), ``reranked`` (a first stage
followed by a reranker: CoREB §4.3)."""


#: Unicode categories a shown name may not hold: controls, format characters (bidi overrides,
#: zero-width joiners), line and paragraph separators, private use, surrogates, unassigned
_UNSHOWN = ("Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn")
#: scripts whose letters pass for Latin ones (``ВМ25``, ``ΒΜ25`` look like ``BM25``)
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK")
#: Cyrillic and Greek letters that look like a Latin one (after casefolding), for
#: :func:`name_key`; the confusables of Unicode TR 39 for these two scripts, lowercase
_LOOKALIKES = str.maketrans(
    "асеһіјӏорѕхуԁԛԝвкмнтьαβεηικμνορτυχϲϳ",
    "acehijlopsxydqwbkmhtbabenikmvoptuxcj",
)


def _script(char: str) -> str | None:
    """The script of a letter as its Unicode name starts (``LATIN``, ``CYRILLIC``...)."""
    if not char.isalpha():
        return None
    return unicodedata.name(char, "").split(" ", 1)[0] or None


def check_name(value: object, what: str) -> str:
    """``value`` when it is a name fit to show: a non-empty str, NFKC-normalised, without
    leading or trailing whitespace, control or format characters, and not mixing Latin letters
    with Cyrillic or Greek ones (the lookalike scripts). A ``ValueError`` says how to fix it."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty str, got {value!r}")
    if value != value.strip():
        raise ValueError(
            f"{what} {value!r} starts or ends with whitespace; write the name without it"
        )
    odd = next((c for c in value if unicodedata.category(c) in _UNSHOWN), None)
    if odd is not None:
        raise ValueError(
            f"{what} {value!r} holds the character U+{ord(odd):04X} "
            f"({unicodedata.category(odd)}: a control, format or unassigned character); a name "
            "shown on the board is printable text"
        )
    normal = unicodedata.normalize("NFKC", value)
    if normal != value:
        raise ValueError(
            f"{what} {value!r} is not NFKC-normalised (it reads as {normal!r}); write it so"
        )
    scripts = {_script(c) for c in value} - {None}
    if "LATIN" in scripts and scripts & set(_LOOKALIKE_SCRIPTS):
        mixed = ", ".join(sorted(scripts & {"LATIN", *_LOOKALIKE_SCRIPTS}))
        raise ValueError(
            f"{what} {value!r} mixes letters of {mixed}, whose lookalikes pass for each other; "
            "write the name in one of these scripts"
        )
    return value


def name_key(name: str) -> str:
    """What two names that read alike share: NFKC, casefolded, Cyrillic and Greek lookalike
    letters read as Latin. Two entries with one key never share a board."""
    return unicodedata.normalize("NFKC", name).casefold().translate(_LOOKALIKES)


@dataclass(frozen=True)
class ModelMeta:
    """``model_meta.json``: what the leaderboard shows and filters on.

    Args:
        name: the model's name, as the results file's ``model.name`` states it.
        type: one of :data:`MODEL_TYPES`.
        parameters: the parameter count (first stage plus reranker for a reranked entry), or
            ``None`` where it is unknown or meaningless (BM25): such entries stay on the board
            but are left out of the parameter-efficiency plot, as the paper leaves out GemEmb-2.
        code_specialized: trained for code (the paper's Figures 9-10 mark these apart).
        url: where the model lives (a Hub page, a paper), or ``None``.
        license: the model's license id, or ``None``.
        revision: the model's revision or fingerprint as the results file states it.
        first_stage: for a reranked entry, the first stage's name.
        reranker: for a reranked entry, the reranker's name.
    """

    name: str
    type: str
    parameters: int | None = None
    code_specialized: bool = False
    url: str | None = None
    license: str | None = None
    revision: str | None = None
    first_stage: str | None = None
    reranker: str | None = None

    def __post_init__(self) -> None:
        check_name(self.name, "ModelMeta.name")
        if self.type not in MODEL_TYPES:
            raise ValueError(
                f"ModelMeta.type must be one of {', '.join(MODEL_TYPES)}, got {self.type!r}"
            )
        p = self.parameters
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p <= 0):
            raise ValueError(
                f"ModelMeta.parameters must be a positive int or null (unknown), got {p!r}"
            )
        if self.type == "lexical" and p is not None:
            raise ValueError(
                f"ModelMeta {self.name!r}: a lexical retriever (BM25 and kin) has no parameters, "
                f"got parameters={p}; leave it null"
            )
        if not isinstance(self.code_specialized, bool):
            raise TypeError(
                f"ModelMeta.code_specialized must be true or false, got {self.code_specialized!r}"
            )
        for name in ("url", "license", "revision", "first_stage", "reranker"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"ModelMeta.{name} must be a str or null, got {value!r}")
        for name in ("first_stage", "reranker"):
            if getattr(self, name) is not None:
                check_name(getattr(self, name), f"ModelMeta.{name}")
        if (self.type == "reranked") != (self.reranker is not None):
            raise ValueError(
                f"ModelMeta {self.name!r}: type {self.type!r} with reranker={self.reranker!r}; a "
                "reranked entry names its reranker and only a reranked entry does"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, where: str = META_FILE) -> ModelMeta:
        """A :class:`ModelMeta` from ``model_meta.json``'s dict; unknown keys are an error."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"{where}: unknown field(s) {', '.join(unknown)}; the fields are "
                f"{', '.join(sorted(known))}"
            )
        try:
            return cls(**data)
        except TypeError as err:
            if "missing" in str(err):
                raise ValueError(f"{where}: {err}") from None
            raise TypeError(f"{where}: {err}") from None
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None


@dataclass(frozen=True)
class Submission:
    """A submission folder read back: its results, model metadata and paths."""

    folder: Path
    results: CorebResults
    meta: ModelMeta

    @property
    def runs_dir(self) -> Path:
        return self.folder / RUNS_DIR

    @property
    def first_stage_runs_dir(self) -> Path:
        return self.folder / FIRST_STAGE_DIR / RUNS_DIR

    @property
    def per_query_file(self) -> Path:
        return self.folder / PER_QUERY_FILE


def infer_model_type(results: CorebResults) -> str:
    """The :data:`MODEL_TYPES` entry a results file implies, or a ``ValueError`` asking for it."""
    if results.reranked:
        return "reranked"
    model = results.model
    if model.get("implementation") == "bm25s" or str(model.get("name", "")).lower() == "bm25":
        return "lexical"
    if "embedding_dim" in model:
        return "embedder"
    raise ValueError(
        f"cannot tell the type of model {model.get('name')!r} from its results file (no "
        f"embedding_dim, not BM25): state it (model_type=..., --type {'|'.join(MODEL_TYPES)})"
    )


def _parameters_of(results: CorebResults) -> int | None:
    value = results.model.get("parameters")
    if results.reranked:  # a pipeline: known only when both stages state it
        first = (results.model.get("first_stage") or {}).get("parameters")
        second = (results.reranker or {}).get("parameters")
        return first + second if isinstance(first, int) and isinstance(second, int) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_meta_from_results(
    results: CorebResults,
    *,
    model_type: str | None = None,
    parameters: int | None = None,
    code_specialized: bool = False,
    url: str | None = None,
    license: str | None = None,
) -> ModelMeta:
    """The :class:`ModelMeta` of a results file, with what the caller states on top.

    Whatever the results file states (name, revision, parameters, license, the reranked pair)
    is taken from it; a caller's ``parameters`` or ``license`` that contradicts it is an error
    rather than a silent override.
    """
    model = results.model
    if model_type is not None:
        _check_type(results, model_type, f"model_type={model_type!r}")
    stated = _parameters_of(results)
    if parameters is not None and stated is not None and parameters != stated:
        raise ValueError(
            f"parameters={parameters} contradicts the results file of {model.get('name')!r}, "
            f"which states {stated}; leave parameters unset"
        )
    stated_license = model.get("license") if isinstance(model.get("license"), str) else None
    if license is not None and stated_license is not None and license != stated_license:
        raise ValueError(
            f"license={license!r} contradicts the results file of {model.get('name')!r}, which "
            f"states {stated_license!r}; leave license unset"
        )
    revision = model.get("revision")
    if results.reranked:
        revision = (results.reranker or {}).get("fingerprint")
    return ModelMeta(
        name=str(model.get("name")),
        type=model_type or infer_model_type(results),
        parameters=parameters if parameters is not None else stated,
        code_specialized=code_specialized,
        url=url,
        license=license if license is not None else stated_license,
        revision=revision if isinstance(revision, str) else None,
        first_stage=(results.first_stage or {}).get("model") if results.reranked else None,
        reranker=str((results.reranker or {}).get("name")) if results.reranked else None,
    )


def _copy_runs(source: Path, target: Path, subtasks: list[str], what: str) -> None:
    target.mkdir(parents=True)
    for name in subtasks:
        path = source / f"{name}.trec"
        if not path.is_file():
            raise ValueError(
                f"{what}: no run file {path} for subtask {name!r}; a submission carries the run "
                "behind every row: rerun `coreb evaluate`"
            )
        shutil.copyfile(path, target / path.name)


def make_submission(
    evaluation: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    **meta: Any,
) -> Submission:
    """Turn a ``coreb evaluate`` folder (``<out>/<model>/<release>/``) into a submission.

    Copies ``results.json``, ``runs/``, ``per_query.jsonl`` and, for a reranked result, the
    first stage's runs (found through the results' ``first_stage.results`` path); writes
    ``model_meta.json`` from :func:`model_meta_from_results` with ``meta`` (``model_type``,
    ``parameters``, ``code_specialized``, ``url``, ``license``).

    Raises:
        ValueError: not a CoREB results folder, a missing run file, ``out`` exists (without
            ``force``) or lies inside ``evaluation``.
    """
    source = Path(evaluation)
    results = read_results(source)
    if not isinstance(results, CorebResults):
        raise ValueError(
            f"{source}: a {results.kind} results file; the leaderboard takes CoREB ones"
        )
    check_publishable(results, str(source / RESULTS_FILE if source.is_dir() else source))
    target = Path(out)
    if target.resolve().is_relative_to(source.resolve()):
        raise ValueError(f"{target} lies inside the evaluation folder {source}; choose another")
    if target.exists():
        if not force:
            raise ValueError(f"{target} exists; give force=True (--force) to replace it")
        if not (target / META_FILE).is_file() and any(target.iterdir()):
            raise ValueError(
                f"{target} exists and is not a submission (no {META_FILE}); not replacing it"
            )
        shutil.rmtree(target)
    model_meta = model_meta_from_results(results, **meta)
    subtasks = [r["name"] for r in results.rows if r["level"] == "subtask"]
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        shutil.copyfile(source / RESULTS_FILE, tmp / RESULTS_FILE)
        if not (source / PER_QUERY_FILE).is_file():
            raise ValueError(f"{source}: no {PER_QUERY_FILE}; rerun `coreb evaluate`")
        shutil.copyfile(source / PER_QUERY_FILE, tmp / PER_QUERY_FILE)
        _copy_runs(source / RUNS_DIR, tmp / RUNS_DIR, subtasks, str(source))
        if results.mteb_tasks:  # what MTEB's six are recomputed from (validate checks them)
            for kind, names in (results.mteb or {}).items():
                _copy_runs(source / MTEB_DIR / kind, tmp / MTEB_DIR / kind, list(names),
                           str(source))  # fmt: skip
        if results.reranked:
            relative = (results.first_stage or {}).get("results")
            if not relative:
                raise ValueError(f"{source}: a reranked result without first_stage.results")
            first_dir = (source / relative).parent
            _copy_runs(first_dir / RUNS_DIR, tmp / FIRST_STAGE_DIR / RUNS_DIR, subtasks,
                       f"{source} (first stage {first_dir})")  # fmt: skip
        (tmp / META_FILE).write_text(
            json.dumps(model_meta.to_dict(), indent=2) + "\n", encoding="utf-8"
        )
        tmp.replace(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    logger.info("submission %s written to %s", model_meta.name, target)
    return read_submission(target)


def read_submission(folder: str | os.PathLike[str]) -> Submission:
    """A submission folder's results (schema-checked by ``read_results``) and model metadata.

    Both files are read only from inside ``folder`` (:func:`coreb_toolkit.untrusted.inside`).
    Every error is a ``ValueError`` naming the file.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{root}: no such submission folder")
    results_path = inside(root, RESULTS_FILE)
    if not results_path.exists():
        raise ValueError(f"{root / RESULTS_FILE}: no such file; a submission carries its results")
    results = read_results(results_path)
    if not isinstance(results, CorebResults):
        raise ValueError(f"{root}: a {results.kind} results file; the leaderboard takes CoREB ones")
    check_publishable(results, str(root / RESULTS_FILE))
    meta_path = root / META_FILE
    meta_real = inside(root, META_FILE)
    if not meta_real.exists():
        raise ValueError(f"{root}: no {META_FILE}; make the folder with `coreb leaderboard submit`")
    meta = ModelMeta.from_dict(read_json(meta_real), str(meta_path))
    name = results.model.get("name")
    if meta.name != name:
        raise ValueError(
            f"{meta_path}: name {meta.name!r} differs from the results file's model name "
            f"{name!r}; they must agree"
        )
    stated = _parameters_of(results)
    if stated is not None and meta.parameters != stated:
        raise ValueError(
            f"{meta_path}: parameters {meta.parameters} differ from the results file's {stated}"
        )
    if (meta.type == "reranked") != results.reranked:
        raise ValueError(
            f"{meta_path}: type {meta.type!r} but the results file is "
            f"{'a reranked' if results.reranked else 'a first-stage'} result"
        )
    _check_type(results, meta.type, str(meta_path))
    if results.reranked:  # the pair the page shows is the pair the results file ran
        pair = ((results.first_stage or {}).get("model"), (results.reranker or {}).get("name"))
        if (meta.first_stage, meta.reranker) != pair:
            raise ValueError(
                f"{meta_path}: first_stage {meta.first_stage!r} and reranker {meta.reranker!r} "
                f"differ from the results file's {pair[0]!r} and {pair[1]!r}; they must agree"
            )
    return Submission(root, results, meta)


def _check_type(results: CorebResults, declared: str, where: str) -> None:
    """A declared type the results file contradicts (BM25 declared an embedder, an embedder
    declared lexical, which would hide its parameter count) is an error."""
    try:
        told = infer_model_type(results)
    except ValueError:
        return  # the results file does not tell: the declared type stands, marked self-reported
    if told != declared:
        raise ValueError(
            f"{where}: type {declared!r} but the results file describes a {told} model "
            f"(implementation {results.model.get('implementation')!r}); state type {told!r}"
        )


def find_submissions(root: str | os.PathLike[str]) -> list[Path]:
    """The submission folders under ``root`` (those holding a ``model_meta.json``), sorted.

    Symlinked folders are not walked into; one that leads out of ``root`` is an error naming it
    (a submission must not make the board read files elsewhere on this machine).
    """
    base = Path(root)
    if not base.is_dir():
        raise ValueError(f"{base}: no such submissions folder")
    found = []
    for here, folders, files in os.walk(base, followlinks=False):
        current = Path(here)
        for name in folders:
            if (current / name).is_symlink():
                inside(base, current / name, "folder")  # raises when it leads out
        if META_FILE in files and current != base / FIRST_STAGE_DIR:
            found.append(current)
    found.sort()
    if not found:
        raise ValueError(
            f"{base}: no submission in it (no {META_FILE} below); make one with "
            "`coreb leaderboard submit EVALUATION_DIR --out DIR`"
        )
    return found


__all__ = [
    "FIRST_STAGE_DIR",
    "META_FILE",
    "MODEL_TYPES",
    "PER_QUERY_FILE",
    "RESULTS_FILE",
    "RUNS_DIR",
    "ModelMeta",
    "Submission",
    "check_name",
    "find_submissions",
    "infer_model_type",
    "make_submission",
    "model_meta_from_results",
    "name_key",
    "read_submission",
]
