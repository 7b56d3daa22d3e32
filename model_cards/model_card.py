"""Model cards (README.md + ``.eval_results/*.yaml``) from results files and run records.

A card is rendered from :class:`ModelCardInfo`, a dataclass of plain data built by
:func:`model_card_info` from

* one or more results files (:func:`coreb_toolkit.benchmark.results.read_results`): a CoREB
  evaluation folder (:class:`~coreb_toolkit.benchmark.results.CorebResults`, first stage or
  reranked) or a QualCode one (:class:`~coreb_toolkit.benchmark.results.QualcodeResults`),
  all of one model;
* optionally the folder of a trained checkpoint (``coreb train reranker`` / ``coreb train
  synh-rank``): its ``training_config.json``, ``data_report.json``,
  ``disjointness_report.json``, ``validation_metrics.json``, ``log_history.json``,
  ``run_info.json`` and ``coreb_reranker.json`` (:func:`read_checkpoint`).

The Markdown lives in ``templates/model_card.md`` (``$name`` placeholders, as
:mod:`model_cards.dataset_card`). The YAML metadata and its ``model-index`` are built by
``huggingface_hub.ModelCardData`` with one ``huggingface_hub.EvalResult`` per figure, and the
Hub's newer ``.eval_results/<benchmark>.yaml`` files by ``huggingface_hub.EvalResultEntry`` and
``eval_result_entries_to_yaml``: nothing here writes that YAML by hand, and every number is
copied from the results file. What goes where:

* ``model-index``: CoREB nDCG@10, Recall@10, MRR@10 and MAP@100 (the table columns) per
  subtask config, per main task and Overall (an aggregate's ``dataset.config`` is its label,
  ``T2C`` / ``Overall``: ``huggingface_hub`` groups results by config, so each row needs its
  own); QualCode QPA (and the 1+99 retrieval MRR@10 / nDCG@10) per dimension, MCA per k.
* ``.eval_results``: one value per task of the benchmark's ``eval.yaml``
  (:func:`model_cards.dataset_card.coreb_task_id`): nDCG@10 per CoREB subtask and release,
  QPA per QualCode dimension, MCA per MC-QualCode k. The value carries no metric name in that
  format, so ``notes`` names it together with the protocol options.

A card never points at a local path: a results file evaluated on a local folder needs the Hub
id the folder is published as (``dataset_id=``, ``--dataset-id ORG/coreb``); a local folder's
fingerprint (``sha256:...``) is shown in the card but is no Hub revision, so ``dataset.revision``
is left out unless ``dataset_revision=`` gives the Hub commit.

Example::

    info = model_card_info(["results/BM25/release_v2603"], dataset_id="me/coreb")
    write_model_card("cards/bm25", info)   # README.md + .eval_results/coreb.yaml
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from coreb_toolkit.benchmark.report import untrained_note
from coreb_toolkit.benchmark.results import QualcodeResults, Results, read_results
from coreb_toolkit.builders.hub_folder import is_hub_id
from coreb_toolkit.vocabulary import (
    COREB_CITATION,
    SYNH_RANK_CITATION,
)
from model_cards.model_card_eval import (
    EVAL_RESULTS_DIR,
    card_metadata,
    eval_result_entries,
    eval_result_objects,
    eval_results_files,
)
from model_cards.model_card_sections import (
    coreb_sections,
    limitations,
    metric_label,
    provenance,
    qualcode_sections,
    shown_name,
    training_section,
)

logger = logging.getLogger(__name__)

TEMPLATE = Path(__file__).parent / "templates" / "model_card.md"
#: the comment that marks a README.md as written by this module (what may be overwritten)
MARKER = "written by `coreb card` (coreb-toolkit model_cards.model_card); files:"
#: the Hub ids of the bundled models (reranker/registry.py and retrieval/registry.py name the
#: pip packages, not the Hub repositories the weights come from)
BUNDLED_HUB_IDS = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2",
    "smollm2": "HuggingFaceTB/SmolLM2-135M-Instruct",
}
#: the paper's releases: figures on other releases are not comparable with its tables
PAPER_RELEASES = ("release_v2602", "release_v2603", "v202602", "v202603")
CHECKPOINT_FILES = {
    "config": "training_config.json",
    "data": "data_report.json",
    "disjointness": "disjointness_report.json",
    "validation": "validation_metrics.json",
    "log": "log_history.json",
    "run_info": "run_info.json",
    "manifest": "coreb_reranker.json",
    "curves": "training_curves.png",
}


# --------------------------------------------------------------------------------------------
# Card data
# --------------------------------------------------------------------------------------------


@dataclass
class CardEvaluation:
    """One results file as the card shows it: where it came from, the Hub dataset it is
    published against and the results themselves (``results``: the results file's dict)."""

    kind: str  # "coreb" | "qualcode"
    path: str
    dataset_id: str
    dataset_revision: str | None  # a Hub commit, or None
    fingerprint: str | None  # the local folder's fingerprint the results recorded
    split: str  # the release (CoREB) or QualCode's split
    results: dict[str, Any]


@dataclass
class TrainingRecord:
    """The run records of a trained checkpoint folder (plain data, as the trainers wrote them)."""

    folder: str
    trainer: str  # "coreb-reranker" | "synh-rank"
    base_model: str  # as the run named it (a Hub id, a bundled name or a local folder)
    config: dict[str, Any]
    data_report: dict[str, Any]
    disjointness: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    run_info: dict[str, Any] | None = None
    log_history: list[dict[str, Any]] = field(default_factory=list)
    curves: str | None = None  # path of training_curves.png, when there is one


@dataclass
class ModelCardInfo:
    """Everything a model card shows, as plain data (strings, numbers, lists, dicts)."""

    model_id: str
    title: str
    kind: str  # "reranker" | "embedder" | "lexical" | "retriever"
    subject: dict[str, Any]  # the model's metadata from the results file
    license: str
    library_name: str | None
    pipeline_tag: str | None
    base_model: str | None
    tags: list[str]
    datasets: list[str]
    evaluations: list[CardEvaluation]
    training: TrainingRecord | None = None
    untrained_head: bool = False
    eval_date: str | None = None
    source_url: str | None = None
    source_name: str | None = None
    notes: list[str] = field(default_factory=list)  # where the card's facts came from
    citations: list[str] = field(default_factory=lambda: [COREB_CITATION, SYNH_RANK_CITATION])


# --------------------------------------------------------------------------------------------
# Building the card data
# --------------------------------------------------------------------------------------------


def _subject(res: Results) -> dict[str, Any]:
    """The metadata of the model a results file is about: the scorer of a QualCode run, the
    reranker of a reranked CoREB run, else the retriever."""
    if isinstance(res, QualcodeResults):
        return dict(res.scorer)
    return dict(res.reranker if res.reranked else res.model)


def _identity(meta: Mapping[str, Any]) -> tuple[str, str | None]:
    return str(meta.get("name")), meta.get("revision") or meta.get("fingerprint")


def model_kind(meta: Mapping[str, Any], reranked: bool = False) -> str:
    """``reranker`` (a reranker's metadata: it has a ``backend``), ``embedder`` (an embedding
    dimension), ``lexical`` (BM25) or ``retriever``."""
    if reranked or "backend" in meta:
        return "reranker"
    if "embedding_dim" in meta:
        return "embedder"
    if meta.get("implementation") == "bm25s" or str(meta.get("name")).lower() == "bm25":
        return "lexical"
    return "retriever"


def _is_local(source: str, revision: str | None) -> bool:
    # a folder fingerprint is what the runner records for a local folder, a commit for a Hub id
    if str(revision or "").startswith("sha256:"):
        return True
    return Path(source).expanduser().exists() or not is_hub_id(source)


def _check_hub_id(value: str, flag: str) -> str:
    if not is_hub_id(value):
        raise ValueError(
            f"{flag} {value!r} is not a Hub dataset id: give ORG/NAME, the repository the "
            f"dataset is (or will be) published as, e.g. {flag} my-org/coreb"
        )
    return value


def _dataset(
    res: Results, where: str, given: str | None, flag: str, revision: str | None
) -> tuple[str, str | None, str | None]:
    """``(dataset id, Hub revision, local fingerprint)`` of a results file."""
    source = str(res.dataset.get("source"))
    recorded = res.dataset.get("revision")
    if _is_local(source, recorded):
        if given is None:
            raise ValueError(
                f"{where}: evaluated on the local folder {source}; a card must not point at a "
                f"local path: give the Hub id it is published as ({flag} ORG/NAME)"
            )
        fingerprint = recorded if str(recorded or "").startswith("sha256:") else None
        return _check_hub_id(given, flag), revision, fingerprint
    if given is not None and given != source:
        raise ValueError(
            f"{where}: evaluated on the Hub dataset {source}, but {flag} says {given}; drop "
            f"{flag} (the results name their dataset) or evaluate on {given}"
        )
    if revision is not None and recorded not in (None, revision):
        raise ValueError(
            f"{where}: evaluated on {source} at revision {recorded}, but --dataset-revision "
            f"says {revision}: drop it, or evaluate on that revision"
        )
    return source, recorded or revision, None


def _evaluations(
    paths: Sequence[str | os.PathLike[str]],
    dataset_id: str | None,
    qualcode_dataset_id: str | None,
    dataset_revision: str | None,
) -> tuple[list[CardEvaluation], dict[str, Any], bool]:
    if not paths:
        raise ValueError(
            "no results file given: name at least one results.json (or the folder holding it) "
            "that `coreb evaluate` or `coreb qualcode evaluate` wrote"
        )
    evaluations: list[CardEvaluation] = []
    subject: dict[str, Any] | None = None
    first = ""
    reranked = False
    seen: dict[tuple[str, str], str] = {}
    for raw in paths:
        path = Path(raw)
        target = path / "results.json" if path.is_dir() else path
        res = read_results(target)
        meta = _subject(res)
        if subject is None:
            subject, first = meta, str(target)
        elif _identity(meta) != _identity(subject):
            raise ValueError(
                f"{target} is a result of {_identity(meta)[0]} ({_identity(meta)[1]}), but "
                f"{first} of {_identity(subject)[0]} ({_identity(subject)[1]}): one card "
                "describes one model; make a card per model"
            )
        if isinstance(res, QualcodeResults):
            ds_id, rev, fp = _dataset(
                res, str(target), qualcode_dataset_id, "--qualcode-dataset-id", None
            )
            split = "test"
        else:
            reranked = reranked or res.reranked
            ds_id, rev, fp = _dataset(
                res, str(target), dataset_id, "--dataset-id", dataset_revision
            )
            split = res.release
        key = (ds_id, split)
        if key in seen:
            raise ValueError(
                f"{target} and {seen[key]} are both results on {ds_id} {split}: a card holds one "
                "result per dataset and release; keep one of them"
            )
        seen[key] = str(target)
        for other in evaluations:
            if other.dataset_id == ds_id and other.fingerprint != fp:
                raise ValueError(
                    f"{target} was evaluated on another build of {ds_id} than {other.path} "
                    f"(fingerprints {fp} and {other.fingerprint}): both would be published "
                    f"as {ds_id}; evaluate both on the folder you publish"
                )
        evaluations.append(
            CardEvaluation(res.kind, str(target), ds_id, rev, fp, split, res.to_dict())
        )
    return evaluations, subject or {}, reranked


def read_checkpoint(folder: str | os.PathLike[str]) -> TrainingRecord:
    """The run records of a trained checkpoint folder (see the module docstring).

    Raises:
        ValueError: no such folder, or one without ``training_config.json`` /
            ``data_report.json`` (not the output of a toolkit trainer), or unreadable records.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"--checkpoint {path}: no such folder")

    def load(key: str, required: bool = False) -> Any:
        file = path / CHECKPOINT_FILES[key]
        if not file.is_file():
            if required:
                raise ValueError(
                    f"--checkpoint {path}: no {file.name}; give the output_dir of `coreb train "
                    "reranker` or `coreb train synh-rank` (or one of its checkpoint-N folders)"
                )
            return None
        try:
            return json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{file}: not JSON ({err})") from None

    config = load("config", required=True)
    data = load("data", required=True)
    manifest = load("manifest") or {}
    trainer = "synh-rank" if "train_lists" in config else "coreb-reranker"
    base = manifest.get("base_model") or config.get("model_name_or_path")
    curves = path / CHECKPOINT_FILES["curves"]
    return TrainingRecord(
        folder=str(path),
        trainer=trainer,
        base_model=str(base),
        config=config,
        data_report=data,
        disjointness=load("disjointness"),
        validation=load("validation"),
        run_info=load("run_info"),
        log_history=load("log") or [],
        curves=str(curves) if curves.is_file() else None,
    )


def _same_weights(a: Path, b: Path) -> bool:
    """Whether two model folders hold byte-identical weights (a copied checkpoint)."""
    import hashlib

    def digest(folder: Path) -> list[tuple[str, str]]:
        files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
        return [(f.name, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files]

    mine = digest(a)
    return bool(mine) and mine == digest(b)


def check_results_of_checkpoint(subject: Mapping[str, Any], training: TrainingRecord) -> str:
    """``ValueError`` when the results' model is another local model than the checkpoint;
    returns a note on how the match was established."""
    name = Path(str(subject.get("name"))).expanduser()
    folder = Path(training.folder)
    if not name.exists():
        return (
            f"the results name the model `{name}`, which is not a local folder: that it is the "
            f"checkpoint `{folder.name}` was not checked"
        )
    if name.resolve() == folder.resolve():
        return f"the results are of the checkpoint folder itself (`{folder.name}`)"
    if _same_weights(name, folder):
        return f"the results are of `{name.name}`, whose weights equal the checkpoint's"
    raise ValueError(
        f"the results are of the model {name}, but --checkpoint is {folder}, whose weights "
        "differ: give the checkpoint those results were scored with (`coreb evaluate "
        "--reranker CHECKPOINT`), or leave --checkpoint out"
    )


def hub_base_model(name: str | None) -> str | None:
    """The Hub id of a base model as a run or a results file names it: a bundled alias maps
    to its Hub repository; a local folder or anything that is no Hub id gives ``None``."""
    if not name:
        return None
    from reranker.registry import bundled

    entry = bundled(name)
    if entry is not None:
        return BUNDLED_HUB_IDS.get(entry.name)
    if Path(name).expanduser().exists() or not is_hub_id(name):
        return None
    return name


def _library(kind: str, meta: Mapping[str, Any], training: TrainingRecord | None) -> str | None:
    if training is not None and (training.trainer == "coreb-reranker" or
                                 training.config.get("finetuning") == "lora"):  # fmt: skip
        return "peft"  # the folder is a LoRA adapter
    if kind == "embedder":
        return "sentence-transformers"
    if kind == "lexical":
        return meta.get("implementation") or "bm25s"
    if kind == "reranker":
        # QualCode results record the class name, CoREB results the backend's name
        cross = meta.get("backend") in ("cross-encoder", "CrossEncoderReranker")
        return "sentence-transformers" if cross else "transformers"
    return None


def model_card_info(
    results: Sequence[str | os.PathLike[str]],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    dataset_id: str | None = None,
    qualcode_dataset_id: str | None = None,
    dataset_revision: str | None = None,
    model_id: str | None = None,
    base_model: str | None = None,
    license: str | None = None,
    eval_date: str | None = None,
    source_url: str | None = None,
    source_name: str | None = None,
) -> ModelCardInfo:
    """The card data of one model from its results files (and its checkpoint's run records).

    Args:
        results: results files (``results.json``) or the folders holding them, all of one
            model (the same name and revision / fingerprint), at most one per dataset and
            release.
        checkpoint: the trained checkpoint folder, for the training recipe.
        dataset_id: the Hub id of the CoREB dataset (required when the results were
            evaluated on a local folder; refused when it contradicts a Hub source).
        qualcode_dataset_id: the same for QualCode results.
        dataset_revision: the Hub commit of the CoREB dataset (a local folder's fingerprint is
            no Hub revision).
        model_id: the Hub repository the card is for (the ``model-index`` name); default: the
            model's name where it is a Hub id, else the checkpoint folder's name.
        base_model: the Hub id of the base model; default: the checkpoint's base (a bundled
            alias mapped to its Hub id), for the bundled ``minilm`` reranker its checkpoint.
        license: default: the license the results' model metadata names, else apache-2.0.
        eval_date: ISO-8601 date of the evaluation for ``.eval_results`` (results files
            carry no date; without it the Hub uses the commit time).
        source_url, source_name: where the evaluation's logs are (``.eval_results`` source).

    Raises:
        ValueError: no results, results of several models or of one dataset twice, a local
            dataset without its Hub id, bad ids, or an unreadable checkpoint.
    """
    evaluations, subject, reranked = _evaluations(
        results, dataset_id, qualcode_dataset_id, dataset_revision
    )
    training = read_checkpoint(checkpoint) if checkpoint is not None else None
    kind = model_kind(subject, reranked)
    notes: list[str] = []
    if training is not None:
        kind = "reranker"
        notes.append(check_results_of_checkpoint(subject, training))
    name = str(subject.get("name"))
    if model_id is None:
        if training is not None:
            model_id = Path(training.folder).resolve().name
        elif is_hub_id(name) and not Path(name).exists():
            model_id = name
        else:  # a local folder's name, never its path
            model_id = Path(name).name or name
        notes.append(f"model-index name `{model_id}` (no --model-id given)")
    bundled_entry = None
    if base_model is None:
        from reranker.registry import bundled

        bundled_entry = bundled(name)
        origin = training.base_model if training is not None else None
        if origin is None and bundled_entry is not None:
            origin = bundled_entry.name
        base_model = hub_base_model(origin)
        if origin is not None and base_model is None:
            notes.append(
                f"base model `{shown_name(origin)}` is a local folder, not a Hub id: no "
                "`base_model` in the metadata (give --base-model ORG/NAME)"
            )
    elif not is_hub_id(base_model):
        raise ValueError(f"--base-model {base_model!r} is not a Hub model id (ORG/NAME)")
    untrained = bool(subject.get("untrained_head")) or bool(
        bundled_entry is not None and bundled_entry.untrained_head and training is None
    )
    if license is None:
        license = str(subject.get("license") or "apache-2.0")
        notes.append(
            f"license `{license}` "
            + ("from the model's metadata" if subject.get("license") else "(the default)")
        )
    if eval_date is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ][\d:.+Z-]+)?", eval_date):
        raise ValueError(f"--date {eval_date!r} is not an ISO-8601 date (YYYY-MM-DD)")
    kinds = {e.kind for e in evaluations}
    tags = ["coreb-toolkit", "code-search", "code"]
    tags += [t for k, t in (("coreb", "coreb"), ("qualcode", "qualcode")) if k in kinds]
    tags += {"reranker": ["reranker"], "embedder": ["embeddings"], "lexical": ["bm25"]}.get(
        kind, []
    )
    if training is not None:
        tags.append(training.trainer)
    if untrained:
        tags.append("untrained-head")
    pipeline = {
        "reranker": "text-ranking",
        "embedder": "sentence-similarity",
    }.get(kind)
    title = model_id.split("/")[-1] + (" (untrained head: plumbing only)" if untrained else "")
    return ModelCardInfo(
        model_id=model_id,
        title=title,
        kind=kind,
        subject=subject,
        license=license,
        library_name=_library(kind, subject, training),
        pipeline_tag=pipeline,
        base_model=base_model,
        tags=tags,
        datasets=list(dict.fromkeys(e.dataset_id for e in evaluations)),
        evaluations=evaluations,
        training=training,
        untrained_head=untrained,
        eval_date=eval_date,
        source_url=source_url,
        source_name=source_name,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------
# Rendering and writing
# --------------------------------------------------------------------------------------------


def _summary(info: ModelCardInfo) -> str:
    what = {
        "reranker": "a reranker",
        "embedder": "an embedding model",
        "lexical": "a lexical (BM25) retriever",
        "retriever": "a retriever",
    }[info.kind]
    name = info.subject.get("name")
    lines = [f"`{info.model_id}` is {what} for code search, evaluated with coreb-toolkit"]
    benchmarks = sorted({"CoREB" if e.kind == "coreb" else "QualCode" for e in info.evaluations})
    lines[0] += f" on {' and '.join(benchmarks)}."
    if str(name) != info.model_id:
        lines.append(f"The results files name it `{shown_name(name)}`.")
    if info.training is not None:
        recipe = {"coreb-reranker": "the CoREB-Reranker recipe (LoRA yes/no fine-tune, CoREB "
                  "§4.3)", "synh-rank": "SynH-Rank (quality-aware listwise training, SynH-Rank "
                  "§4)"}[info.training.trainer]  # fmt: skip
        base = shown_name(info.training.base_model)
        lines.append(f"It was trained with {recipe} from `{base}`.")
    if info.base_model:
        lines.append(
            f"Base model: [`{info.base_model}`](https://huggingface.co/{info.base_model})."
        )
    return " ".join(lines) + "\n"


def _warnings(info: ModelCardInfo) -> str:
    if not info.untrained_head:
        return ""
    return "\n> [!WARNING]\n> " + untrained_note(info.subject) + "\n"


def render_model_card(info: ModelCardInfo, files: Sequence[str] = ()) -> str:
    """The README.md of the card: YAML metadata (``ModelCardData``), then the Markdown of
    ``templates/model_card.md``. ``files``: what else the card folder gets (recorded in the
    marker comment, so that a later write replaces exactly those)."""
    metadata = card_metadata(info).to_yaml()
    results = []
    for ev in info.evaluations:
        results += coreb_sections(ev) if ev.kind == "coreb" else qualcode_sections(ev)
    marker = MARKER + " " + ",".join(["README.md", *files])
    values = {
        "metadata": metadata,
        "marker": marker,
        "title": info.title,
        "summary": _summary(info),
        "warnings": _warnings(info),
        "results": "\n\n".join(results),
        "training": training_section(info.training),
        "limitations": limitations(info),
        "provenance": provenance(info),
        "citations": "\n\n".join(info.citations),
    }
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(values)


def _written_by_us(readme: Path) -> list[str] | None:
    """The files a README.md written by this module lists, or ``None`` for another README."""
    text = readme.read_text(encoding="utf-8", errors="replace")
    match = re.search(re.escape(MARKER) + r" ([^\s>]*)", text)
    return match.group(1).split(",") if match else None


#: what the cards the training libraries write into a saved folder say (TRL's, PEFT's template,
#: sentence-transformers'): a checkpoint's README.md of that kind is replaced without --force
_TRAINER_CARDS = (
    "It has been trained using [TRL](",
    "<!-- Provide a quick summary of what the model is/does. -->",
    "This is a [sentence-transformers](https://www.SBERT.net)",
    "trained using the [sentence-transformers](https://www.SBERT.net) library",
)


def _trainer_card(readme: Path, info: ModelCardInfo) -> bool:
    """Whether ``readme`` is the card a training library wrote into the checkpoint itself."""
    if info.training is None or Path(info.training.folder).resolve() != readme.parent.resolve():
        return False
    text = readme.read_text(encoding="utf-8", errors="replace")
    return any(sign in text for sign in _TRAINER_CARDS)


def write_model_card(
    folder: str | os.PathLike[str], info: ModelCardInfo, *, overwrite: bool = False
) -> list[Path]:
    """Write README.md and ``.eval_results/*.yaml`` into ``folder`` (created if missing), and
    ``training_curves.png`` beside them when the checkpoint has one and ``folder`` is not the
    checkpoint. Returns the paths written.

    A README.md this module did not write is never replaced unless ``overwrite`` (``--force``),
    except the generic card TRL / PEFT / sentence-transformers saved into the checkpoint folder
    itself (it names a local base path and a wrong task); one it wrote is replaced, and the
    ``.eval_results`` files it listed that this card no longer has are removed (they would
    publish figures the card does not show).

    Raises:
        FileExistsError: ``folder`` holds a README.md of another origin and not ``overwrite``.
    """
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder: choose a folder")
    out.mkdir(parents=True, exist_ok=True)
    readme = out / "README.md"
    previous: list[str] = []
    if readme.is_file():
        listed = _written_by_us(readme)
        if listed is None and _trainer_card(readme, info):
            logger.info("replacing %s, the card the training library wrote", readme)
        elif listed is None and not overwrite:
            raise FileExistsError(
                f"{readme} exists and was not written by `coreb card`; pass overwrite=True "
                "(--force) to replace it, or write the card to another folder"
            )
        previous = listed or []
    texts = eval_results_files(info)
    extra = dict(texts)
    curves = None
    if info.training is not None and info.training.curves:
        curves = Path(info.training.curves)
        extra[curves.name] = ""
    card = render_model_card(info, files=list(extra))
    written = []
    for rel, text in texts.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if curves is not None:
        target = out / curves.name
        if curves.resolve() != target.resolve():
            shutil.copyfile(curves, target)
        written.append(target)
    for rel in previous:
        stale = out / rel
        if rel.startswith(EVAL_RESULTS_DIR + "/") and rel not in texts and stale.is_file():
            logger.info("removing %s: the new card has no such results", stale)
            stale.unlink()
    readme.write_text(card, encoding="utf-8")
    return [readme, *written]


__all__ = [
    "BUNDLED_HUB_IDS",
    "EVAL_RESULTS_DIR",
    "MARKER",
    "TEMPLATE",
    "CardEvaluation",
    "ModelCardInfo",
    "TrainingRecord",
    "card_metadata",
    "check_results_of_checkpoint",
    "eval_result_entries",
    "eval_result_objects",
    "eval_results_files",
    "hub_base_model",
    "metric_label",
    "model_card_info",
    "model_kind",
    "read_checkpoint",
    "render_model_card",
    "write_model_card",
]
