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

import logging
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from coreb_toolkit.benchmark.report import untrained_note
from coreb_toolkit.benchmark.results import (
    QualcodeResults,
    Results,
    check_publishable,
    read_results,
)
from coreb_toolkit.hub_access import is_hub_id
from coreb_toolkit.untrusted import check_finite, inside, markdown_code, markdown_text
from coreb_toolkit.vocabulary import (
    COREB_CITATION,
    SYNH_RANK_CITATION,
)
from model_cards.model_card_checkpoint import (
    CHECKPOINT_FILES,
    TrainingRecord,
    check_results_of_checkpoint,
    read_checkpoint,
)
from model_cards.model_card_eval import (
    EVAL_RESULTS_DIR,
    card_metadata,
    check_card,
    check_figures,
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
from model_cards.model_card_usage import paper_standing, usage_section

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


def model_kind(meta: Mapping[str, Any], reranked: bool = False, first_stage: bool = False) -> str:
    """What a model is, from the metadata a results file records of it.

    ``reranker``: the second stage of a reranked CoREB run (``reranked``), or a QualCode scorer
    that is one (the toolkit's rerankers record the ``fingerprint`` of their weights and a
    ``query_budget_tokens``); ``embedder``: an embedding dimension (a dense model, whose
    ``backend`` is its inference runtime, torch / onnx / openvino: no sign of a reranker);
    ``lexical``: BM25; else ``retriever``. A CoREB first stage (``first_stage``) is never a
    reranker.
    """
    if reranked:
        return "reranker"
    if "embedding_dim" in meta:
        return "embedder"
    if meta.get("implementation") == "bm25s" or str(meta.get("name")).lower() == "bm25":
        return "lexical"
    if not first_stage and ("fingerprint" in meta or "query_budget_tokens" in meta):
        return "reranker"
    return "retriever"


def _kind(res: Results) -> str:
    if isinstance(res, QualcodeResults):
        return model_kind(res.scorer)
    return model_kind(res.model, reranked=res.reranked, first_stage=not res.reranked)


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
) -> tuple[list[CardEvaluation], dict[str, Any], str]:
    if not paths:
        raise ValueError(
            "no results file given: name at least one results.json (or the folder holding it) "
            "that `coreb evaluate` or `coreb qualcode evaluate` wrote"
        )
    evaluations: list[CardEvaluation] = []
    subject: dict[str, Any] | None = None
    first, kind = "", ""
    seen: dict[tuple[str, str], str] = {}
    for raw in paths:
        path = Path(raw)
        target = path / "results.json" if path.is_dir() else path
        res = check_publishable(read_results(target), str(target))
        check_figures(res.to_dict(), str(target))
        meta = _subject(res)
        if subject is None:
            subject, first, kind = meta, str(target), _kind(res)
        elif _identity(meta) != _identity(subject) or _kind(res) != kind:
            raise ValueError(
                f"{target} is a result of {_identity(meta)[0]} ({_identity(meta)[1]}, "
                f"{_kind(res)}), but {first} of {_identity(subject)[0]} "
                f"({_identity(subject)[1]}, {kind}): one card describes one model; make a card "
                "per model"
            )
        if isinstance(res, QualcodeResults):
            ds_id, rev, fp = _dataset(
                res, str(target), qualcode_dataset_id, "--qualcode-dataset-id", None
            )
            split = "test"
        else:
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
    return evaluations, subject or {}, kind


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


def _adapter(training: TrainingRecord | None) -> bool:
    """Whether the checkpoint is a LoRA adapter (CoREB-Reranker always trains one)."""
    return training is not None and (training.trainer == "coreb-reranker" or
                                     training.config.get("finetuning") == "lora")  # fmt: skip


def _library(kind: str, meta: Mapping[str, Any], training: TrainingRecord | None) -> str | None:
    """The library that loads the model; ``None`` for BM25, which has no weights to load
    (bm25s builds its index from the corpus at search time)."""
    if _adapter(training):
        return "peft"  # a LoRA adapter on a transformers model
    if kind == "embedder":
        return "sentence-transformers"
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
    evaluations, subject, kind = _evaluations(
        results, dataset_id, qualcode_dataset_id, dataset_revision
    )
    training = read_checkpoint(checkpoint) if checkpoint is not None else None
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
        notes.append(f"model-index name {markdown_code(model_id)} (no --model-id given)")
    bundled_entry = None
    if base_model is None:
        from reranker.registry import bundled

        # the bundled aliases are rerankers' (minilm: all-MiniLM-L6-v2 with a new head); an
        # embedder of the same name is the embedding model itself
        bundled_entry = bundled(name) if kind == "reranker" else None
        origin = training.base_model if training is not None else None
        if origin is None and bundled_entry is not None:
            origin = bundled_entry.name
        base_model = hub_base_model(origin)
        if origin is not None and base_model is None:
            notes.append(
                f"base model {markdown_code(shown_name(origin))} is a local folder, not a Hub "
                "id: no `base_model` in the metadata (give --base-model ORG/NAME)"
            )
    elif not is_hub_id(base_model):
        raise ValueError(f"--base-model {base_model!r} is not a Hub model id (ORG/NAME)")
    untrained = bool(subject.get("untrained_head")) or bool(
        bundled_entry is not None and bundled_entry.untrained_head and training is None
    )
    if license is None:
        license = str(subject.get("license") or "apache-2.0")
        notes.append(
            f"license {markdown_code(license)} "
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
    if _adapter(training):
        tags += ["lora", "transformers"]  # library_name is peft; the base is a transformers model
    if untrained:
        tags.append("untrained-head")
    pipeline = {
        "reranker": "text-ranking",
        "embedder": "sentence-similarity",
    }.get(kind)
    title = model_id.split("/")[-1] + (" (untrained head: plumbing only)" if untrained else "")
    return ModelCardInfo(
        model_id=model_id,
        title=markdown_text(title),
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
    lines = [
        f"{markdown_code(info.model_id)} is {what} for code search, evaluated with coreb-toolkit"
    ]
    benchmarks = sorted({"CoREB" if e.kind == "coreb" else "QualCode" for e in info.evaluations})
    lines[0] += f" on {' and '.join(benchmarks)}."
    if str(name) != info.model_id:
        lines.append(f"The results files name it {markdown_code(shown_name(name))}.")
    if info.training is not None:
        recipe = {"coreb-reranker": "the CoREB-Reranker recipe (LoRA yes/no fine-tune, CoREB "
                  "§4.3)", "synh-rank": "SynH-Rank (quality-aware listwise training, SynH-Rank "
                  "§4)"}[info.training.trainer]  # fmt: skip
        base = shown_name(info.training.base_model)
        lines.append(f"It was trained with {recipe} from {markdown_code(base)}.")
    if info.base_model:
        base_link = markdown_code(info.base_model)
        if is_hub_id(info.base_model):
            base_link = f"[{base_link}](https://huggingface.co/{info.base_model})"
        lines.append(f"Base model: {base_link}.")
    return " ".join(lines) + "\n"


def _warnings(info: ModelCardInfo) -> str:
    if not info.untrained_head:
        return ""
    return "\n> [!WARNING]\n> " + untrained_note(info.subject) + "\n"


def render_model_card(info: ModelCardInfo, files: Sequence[str] = ()) -> str:
    """The README.md of the card: YAML metadata (``ModelCardData``), then the Markdown of
    ``templates/model_card.md``. ``files``: what else the card folder gets (recorded in the
    marker comment, so that a later write replaces exactly those)."""
    check_card(info)
    data = card_metadata(info)
    check_finite(data.to_dict(), "the card's metadata")
    metadata = data.to_yaml()
    results = []
    for ev in info.evaluations:
        results += coreb_sections(ev) if ev.kind == "coreb" else qualcode_sections(ev)
    marker = MARKER + " " + ",".join(["README.md", *files])
    standing = paper_standing(info.evaluations)
    values = {
        "metadata": metadata,
        "marker": marker,
        "title": info.title,
        "summary": _summary(info),
        "warnings": _warnings(info),
        "results": "\n\n".join(results),
        "standing": f"\n{standing}\n" if standing else "",
        "usage": usage_section(info),
        "training": training_section(info.training),
        "limitations": limitations(info),
        "provenance": provenance(info),
        "citations": "\n\n".join(info.citations),
    }
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(values)


#: what a card's marker comment may list: the files :func:`write_model_card` writes (plain
#: names inside ``.eval_results``); it deletes a listed file only when it matches
_CARD_FILE = re.compile(
    rf"README\.md|training_curves\.png|{re.escape(EVAL_RESULTS_DIR)}/[A-Za-z0-9_][A-Za-z0-9._-]*\.yaml"
)
#: what the cards the training libraries write into a saved folder say (TRL's, PEFT's template,
#: sentence-transformers'): a checkpoint's README.md of that kind is replaced without --force
_TRAINER_CARDS = (
    "It has been trained using [TRL](",
    "<!-- Provide a quick summary of what the model is/does. -->",
    "This is a [sentence-transformers](https://www.SBERT.net)",
    "trained using the [sentence-transformers](https://www.SBERT.net) library",
)
_MAX_README_BYTES = 64 * 1024 * 1024


def _card_path(out: Path, rel: str, what: str = "file") -> Path:
    """``out / rel`` when no part of it below ``out`` is a symlink (writing or deleting through
    one acts where it points) and it is a regular file (a folder) or missing."""
    current = out
    for part in Path(rel).parts:
        current = current / part
        if current.is_symlink():
            raise ValueError(
                f"{current} is a symlink: `coreb card` writes and deletes only plain files and "
                f"folders below --out {out}, never through a link; remove the link or choose "
                "another --out"
            )
    inside(out, rel, what)
    return out / rel


def _listed(readme: Path, text: str, overwrite: bool) -> list[str] | None:
    """The files a README.md written by this module lists (only names a card writes), or
    ``None`` for another README."""
    match = re.search(re.escape(MARKER) + r" ([^\s>]*)", text)
    if match is None:
        return None
    names = match.group(1).split(",")
    bad = [n for n in names if not _CARD_FILE.fullmatch(n)]
    if bad and not overwrite:
        raise ValueError(
            f"{readme}: its `coreb card` comment lists {bad[0]!r}, which is no file a card "
            f"writes (README.md, training_curves.png, {EVAL_RESULTS_DIR}/NAME.yaml): the README "
            "was edited, and nothing is deleted on its word; pass --force to replace it "
            "(no listed file is removed then but the valid ones), or fix the list"
        )
    for name in bad:
        logger.warning("%s lists %r, no file a card writes: left alone", readme, name)
    return [n for n in names if n not in bad]


def _trainer_card(readme: Path, text: str, info: ModelCardInfo) -> bool:
    """Whether ``readme`` is the card a training library wrote into the checkpoint itself."""
    if info.training is None or Path(info.training.folder).resolve() != readme.parent.resolve():
        return False
    return any(sign in text for sign in _TRAINER_CARDS)


def _write(path: Path, data: bytes) -> None:
    """``path`` replaced whole (a temporary file beside it, renamed): never half written, and
    never written through a link that appeared after the checks."""
    mode = path.stat().st_mode & 0o777 if path.is_file() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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

    Nothing is read, written or deleted outside ``folder``: a symlink below it (README.md,
    ``.eval_results`` or a file in it) is refused, and so is a README whose list names
    anything but a card's own files (``.eval_results/../x``). Every check runs before the first
    write.

    Raises:
        FileExistsError: ``folder`` holds a README.md of another origin and not ``overwrite``.
        ValueError: a symlink or special file where the card writes, an edited file list, or
            a figure that is not finite or out of its range.
    """
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder: choose a folder")
    texts = eval_results_files(info)
    extra = dict(texts)
    curves = None
    if info.training is not None and info.training.curves:
        curves = Path(info.training.curves)
        extra[curves.name] = ""
    card = render_model_card(info, files=list(extra))
    readme = _card_path(out, "README.md")
    previous: list[str] = []
    if readme.is_file():
        with open(readme, "rb") as handle:
            text = handle.read(_MAX_README_BYTES).decode("utf-8", errors="replace")
        listed = _listed(readme, text, overwrite)
        if listed is None and _trainer_card(readme, text, info):
            logger.info("replacing %s, the card the training library wrote", readme)
        elif listed is None and not overwrite:
            raise FileExistsError(
                f"{readme} exists and was not written by `coreb card`; pass overwrite=True "
                "(--force) to replace it, or write the card to another folder"
            )
        previous = listed or []
    _card_path(out, EVAL_RESULTS_DIR, "folder")
    targets = {rel: _card_path(out, rel) for rel in extra}
    stale = [
        _card_path(out, rel)
        for rel in previous
        if rel.startswith(EVAL_RESULTS_DIR + "/") and rel not in texts
    ]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rel, text in texts.items():
        targets[rel].parent.mkdir(exist_ok=True)
        _write(targets[rel], text.encode("utf-8"))
        written.append(targets[rel])
    if curves is not None:
        target = targets[curves.name]
        if curves.resolve() != target.resolve():
            _write(target, curves.read_bytes())
        written.append(target)
    for path in stale:
        if path.is_file():
            logger.info("removing %s: the new card has no such results", path)
            path.unlink()
    _write(readme, card.encode("utf-8"))
    return [readme, *written]


__all__ = [
    "BUNDLED_HUB_IDS",
    "CHECKPOINT_FILES",
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
