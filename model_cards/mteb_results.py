"""MTEB submissions from CoREB results: ``results/<org>__<model>/<revision>/<Task>.json``.

MTEB hosts CoREB as six tasks: ``CorebT2CRetrieval``, ``CorebC2TRetrieval``,
``CorebC2CRetrieval`` (main score nDCG@10) and ``CorebT2CReranking``, ``CorebC2TReranking``,
``CorebC2CReranking`` (MAP@10), split ``test``, subset ``default``. A submission is a folder in
the layout of MTEB's results repository, written and read back with mteb's own classes
(``TaskResult``, ``ModelMeta``, ``ResultCache``), never a schema written by hand.

The scores are MTEB's protocol, recomputed from the submitted run files (``runs/<subtask>.trec``)
with pytrec_eval, not copied from the CoREB rows: each main task's runs are pooled, the qrels are
the positives only (relevance 2; MTEB's CoREB datasets hold no other judgment, see
:mod:`coreb_toolkit.builders.coreb.mteb`), queries without a positive are left out (MTEB cannot
hold them), and no document is excluded. What MTEB ranks and the CoREB runs do not hold is
read from ``mteb/``, which ``coreb evaluate`` keeps beside the runs (results schema version 2,
``results.json``'s ``mteb`` lists it; :mod:`coreb_toolkit.benchmark.runner`):

* C2C: our runs drop each query's anchor before scoring; MTEB ranks it. The anchor's score is in
  ``mteb/excluded/<subtask>.trec`` and is put back, which gives the ranking MTEB scores.
* C2T: MTEB's pooled task ranks the full descriptions for every subtask; in the abbreviated view
  (the default) the ``c2t_canonical_retro_*`` runs rank the abbreviated ones, and
  ``mteb/full_text/<subtask>.trec`` (their queries against the full texts) is used instead.
* The reranking tasks: ``mteb/reranking/<main task>.trec`` holds the scores of the 17-candidate
  lists (:mod:`coreb_toolkit.builders.coreb.reranking`, schema version 3), checked to score
  exactly each list's candidates, and scored with MAP@10 against the lists' positives.

Where our results cannot give MTEB's figure the task is not written, and the reason is reported
(:attr:`MtebSubmission.skipped`):

* C2C from results without ``mteb/excluded`` (written before schema version 2, or with
  ``mteb_runs=False``): where MTEB would have put the anchor is not in the run.
* C2T from a run of the abbreviated view without ``mteb/full_text``.
* The three ``*Reranking`` tasks from results without ``mteb/reranking/`` (the 17-candidate
  lists' scores, which ``coreb evaluate`` keeps since results schema version 3 for a run of
  every subtask of a main task without a query sample).
* The retrieval tasks of a reranked result (a first stage and a reranker): MTEB's retrieval
  tasks score one model over the whole corpus, not a pipeline. Its reranking tasks are
  submitted: they are the reranker's order of the lists.
* A main task whose subtasks the results do not all cover: MTEB pools all of them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.benchmark.provenance import dataset_revision
from coreb_toolkit.benchmark.results import CorebResults, check_publishable, read_results
from coreb_toolkit.builders.hub_folder import hub_folder_configs, replace_folder
from coreb_toolkit.untrusted import check_finite, read_json
from coreb_toolkit.vocabulary import (
    CORPUS_TEXT_ABBREVIATED,
    MTEB_RERANKING_TASKS,
    MTEB_RETRIEVAL_TASKS,
)
from eval_metrics import read_run
from eval_metrics.membership import check_run_membership
from eval_metrics.mteb_protocol import K_VALUES, mteb_metrics, pool_positives

logger = logging.getLogger(__name__)

MTEB_EXTRA = "pip install coreb-toolkit[mteb]"
MTEB_SPLIT, MTEB_SUBSET = "test", "default"
RETRIEVAL_TASKS = MTEB_RETRIEVAL_TASKS
RERANKING_TASKS = MTEB_RERANKING_TASKS
RETRIEVAL_MAIN_SCORE, RERANKING_MAIN_SCORE = "ndcg_at_10", "map_at_10"
"""The main scores of mteb's task metadata (a test checks them against mteb's)."""
#: a model revision as one folder of MTEB's results layout (results/<org>__<model>/<revision>/):
#: a commit hash, or a branch / tag name without '/' (a path separator would nest folders)
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


_WHY_C2C = (
    "not derivable: CoREB's run of {subtask} drops each query's anchor code before scoring, "
    "MTEB ranks it (it has no per-query exclusion), and these results do not keep the anchor's "
    "score (mteb/excluded/{subtask}.trec, which `coreb evaluate` writes since results schema "
    "version 2 unless mteb_runs=False): rerun `coreb evaluate` to derive it"
)
_WHY_C2T = (
    "not derivable: the c2t_canonical_retro_* runs rank the abbreviated descriptions "
    "(c2t_canonical_corpus={views}) and these results keep no full-text ranking of {missing} "
    "(mteb/full_text/, which `coreb evaluate` writes since results schema version 2 unless "
    "mteb_runs=False); MTEB's {task} ranks the full ones: rerun `coreb evaluate`, or evaluate "
    "with --c2t-canonical-corpus full"
)


class _NotDerivable(ValueError):
    """The results lack what MTEB's protocol needs for a task: the task is skipped, not an
    error."""


def _kept(results: CorebResults) -> dict[str, list[str]]:
    """What the results' ``mteb/`` folder holds (nothing for a schema-version-1 file)."""
    return {"excluded": [], "full_text": [], **(results.mteb or {})}


_WHY_RERANKING = (
    "not derivable: these results score no {family} reranking list (mteb/reranking/{family}.trec"
    ", which `coreb evaluate` writes since results schema version 3 for a run of every "
    "{family} subtask without --query-sample, unless mteb_runs=False): rerun `coreb evaluate`"
)
_LISTS_NOTE = (
    "{task}: the 17-candidate lists are this toolkit's (coreb_toolkit.builders.coreb.reranking: "
    "every judged document and least-used easy negatives of other problems, seed {seed}); "
    "mteb's statistics fix the queries, positives, sizes and documents of MTEB's lists but not "
    "which easy negatives fill each, so MAP@10 here compares with MTEB's only as far as they "
    "are alike."
)


def _reranking_scores(
    folders: Sequence[Path],
    results: Sequence[CorebResults],
    source: str,
    scores: dict[str, dict[str, float]],
    skipped: dict[str, str],
    n_queries: dict[str, int],
    notes: list[str],
) -> None:
    """MTEB's three ``Coreb*Reranking`` scores, recomputed from ``mteb/reranking/<task>.trec``
    against the lists of the dataset (each list's scores must be exactly its candidates)."""
    from coreb_toolkit.benchmark.mteb_tasks import mteb_lists

    built: dict[Path, dict[str, list]] = {}  # a folder's lists, built once for its main tasks
    for family, task in RERANKING_TASKS.items():
        owners = [
            (folder, res)
            for folder, res in zip(folders, results, strict=True)
            if task in (res.mteb_tasks or {}) and family in (res.mteb or {}).get("reranking", [])
        ]  # fmt: skip
        if not owners:
            skipped[task] = _WHY_RERANKING.format(family=family)
            continue
        folder, res = owners[0]
        path = _kept_file(folder, "mteb/reranking", family)
        run = read_run(path)
        if folder not in built:
            evaluated = [r["name"] for r in res.rows if r.get("level") == "subtask"]
            built[folder] = mteb_lists(source, res.release, evaluated)
        lists = built[folder].get(family, [])
        wanted = {x.query_id: x for x in lists}
        if set(run) != set(wanted):
            odd = sorted(set(run) ^ set(wanted))[:3]
            raise ValueError(
                f"{path}: its queries are not those of the {family} reranking lists of "
                f"{source} ({', '.join(odd)} ...): the file was not written by `coreb evaluate` "
                "on this dataset"
            )
        for qid, docs in run.items():
            if set(docs) != set(wanted[qid].candidates):
                raise ValueError(
                    f"{path}: query {qid!r} scores {len(docs)} documents, not the "
                    f"{len(wanted[qid].candidates)} candidates of its list"
                )
        qrels = {q: x.qrels() for q, x in wanted.items()}
        metrics = mteb_metrics(qrels, run)
        scores[task] = {**metrics, "main_score": metrics[RERANKING_MAIN_SCORE]}
        n_queries[task] = len(qrels)
        notes.append(_LISTS_NOTE.format(task=task, seed=res.mteb_tasks[task]["seed"]))


@dataclass
class MtebSubmission:
    """What :func:`write_mteb_submission` wrote and checked.

    Attributes:
        out_dir: the submission folder (``results/`` inside it).
        model_dir: ``out_dir/results/<org>__<model>/<revision>``.
        scores: ``{task: {metric: value}}`` as written and as mteb read them back.
        skipped: ``{task: why no MTEB figure could be derived}``.
        n_queries: ``{task: pooled queries scored}``.
        notes: what else a reader of the numbers must know.
    """

    out_dir: Path
    model_dir: Path
    scores: dict[str, dict[str, float]]
    skipped: dict[str, str]
    n_queries: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _import_mteb() -> Any:
    try:
        import mteb
    except ImportError as err:
        raise ImportError(f"MTEB submissions need mteb: {MTEB_EXTRA}") from err
    return mteb


def _read(folder: Path) -> CorebResults:
    results = read_results(folder)
    if not isinstance(results, CorebResults):
        raise ValueError(
            f"{folder}: a {results.kind} results file; MTEB's CoREB tasks take CoREB results "
            "(a `coreb evaluate --dataset` folder), QualCode has no MTEB task"
        )
    check_publishable(results, str(folder / "results.json" if folder.is_dir() else folder))
    return results


def _check_consistent(folders: Sequence[Path], results: Sequence[CorebResults]) -> None:
    first, where = results[0], folders[0]
    for folder, res in zip(folders[1:], results[1:], strict=True):
        for what, a, b in (
            ("dataset revision", first.dataset.get("revision"), res.dataset.get("revision")),
            ("release", first.release, res.release),
            ("model", first.model.get("name"), res.model.get("name")),
            ("reranker", (first.reranker or {}).get("name"), (res.reranker or {}).get("name")),
        ):
            if a != b:
                raise ValueError(
                    f"{folder} has {what} {b!r}, {where} has {a!r}: one submission is one model "
                    f"on one dataset revision; submit them separately"
                )


def pooled_run(
    results_dir: Path, results: CorebResults, dataset: str, subtasks: Sequence[str]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], int]:
    """``(qrels, run, queries without a positive)`` of ``subtasks`` pooled, MTEB's way.

    The run of a subtask is ``runs/<subtask>.trec``, or ``mteb/full_text/<subtask>.trec`` where
    the results keep one (the full texts, which MTEB ranks), with the excluded documents of
    ``mteb/excluded/<subtask>.trec`` put back (MTEB excludes nothing); a subtask with
    exclusions whose scores were not kept raises :class:`_NotDerivable`. Each run is checked
    against its subtask (the full-text view) first, as the leaderboard checks a submission
    (:func:`eval_metrics.membership.check_run_membership`): a query or document the subtask
    does not have, a put-back document that is not one of its query's exclusions, or a query
    ranking more than ``top_k``, is refused, never scored.
    """
    from coreb_toolkit.benchmark.runner import discover

    kept = _kept(results)
    (item,) = discover(dataset, list(subtasks), [results.release], "full")
    parts = []
    for subtask in subtasks:
        data = item.subtasks[subtask]
        if data.exclude and subtask not in kept["excluded"]:
            raise _NotDerivable(_WHY_C2C.format(subtask=subtask))
        where = "mteb/full_text" if subtask in kept["full_text"] else "runs"
        path = _kept_file(results_dir, where, subtask)
        sub_run = read_run(path)
        if data.exclude:
            _put_back(results_dir, subtask, sub_run, data.exclude)
        check_run_membership(
            str(path), sub_run, data.qrels, data.corpus, data.corpus_name, results.top_k
        )
        parts.append((subtask, data.qrels, sub_run))
    return pool_positives(parts)


def _kept_file(results_dir: Path, where: str, subtask: str) -> Path:
    path = results_dir / where / f"{subtask}.trec"
    if not path.is_file():
        raise ValueError(
            f"{results_dir}: no run file {where}/{subtask}.trec for subtask {subtask}, which "
            "results.json reports; the MTEB scores are recomputed from the runs, so the "
            "folder must hold every run `coreb evaluate` wrote"
        )
    return path


def _put_back(
    results_dir: Path,
    subtask: str,
    run: dict[str, dict[str, float]],
    exclude: Mapping[str, Sequence[str]],
) -> None:
    """Add ``mteb/excluded/<subtask>.trec`` (the excluded documents the retriever ranked, with
    their scores) to ``run``: the ranking before exclusion, which MTEB scores."""
    path = _kept_file(results_dir, "mteb/excluded", subtask)
    for qid, docs in read_run(path).items():
        allowed = set(exclude.get(qid, ()))
        for doc, score in docs.items():
            if doc not in allowed:
                raise ValueError(
                    f"{path}: {doc!r} is not an excluded document of query {qid!r} in "
                    f"{subtask}: the file holds only the documents the run dropped"
                )
            if doc in run.get(qid, {}):
                raise ValueError(
                    f"{path}: {doc!r} of query {qid!r} is in the run already; an excluded "
                    "document is never in runs/"
                )
            run.setdefault(qid, {})[doc] = score


def _family_subtasks(dataset: str, release: str) -> dict[str, list[str]]:
    """``{family: [subtask, ...]}`` of the build's subtask configs that hold ``release``."""
    from coreb_toolkit.builders.coreb.layout import OFFICIAL_CONFIGS
    from coreb_toolkit.vocabulary import CORPUS_CONFIGS, main_task_key

    found: dict[str, list[str]] = {}
    for name, splits in hub_folder_configs(dataset).items():
        if release not in splits or name in (*CORPUS_CONFIGS, *OFFICIAL_CONFIGS):
            continue
        family = main_task_key(name)
        if family in RETRIEVAL_TASKS:
            found.setdefault(family, []).append(name)
    return found


def _model_meta(mteb: Any, model: Mapping[str, Any], name: str, revision: str, **given: Any):
    """mteb's ``ModelMeta`` from the results' model dict and the user's flags; what neither
    knows is None (unknown), never guessed."""
    dense = model.get("embedding_dim") is not None
    return mteb.models.ModelMeta(
        loader=None,
        name=name,
        revision=revision,
        release_date=given.get("release_date"),
        languages=None,
        n_parameters=model.get("parameters"),
        memory_usage_mb=None,
        max_tokens=model.get("max_seq_length"),
        embed_dim=model.get("embedding_dim"),
        license=given.get("license") or model.get("license"),
        open_weights=given.get("open_weights"),
        public_training_code=None,
        public_training_data=None,
        framework=["Sentence Transformers", "PyTorch"] if dense else [],
        reference=given.get("reference"),
        similarity_fn_name=model.get("similarity") if dense else None,
        use_instructions=any((model.get("prompts") or {}).values()) if dense else None,
        training_datasets=None,
        model_type=["dense"] if dense else ["sparse"],
    )


@dataclass
class MtebDerivation:
    """MTEB's CoREB(v1) scores derived from results folders (:func:`derive_mteb_scores`)."""

    scores: dict[str, dict[str, float]]  # task -> metrics, main_score among them
    skipped: dict[str, str]  # task -> why no honest figure
    n_queries: dict[str, int]
    notes: list[str]


def derive_mteb_scores(
    folders: Sequence[Path], results: Sequence[CorebResults], source: str
) -> MtebDerivation:
    """MTEB's six CoREB scores recomputed from ``coreb evaluate`` folders (their run files and
    ``mteb/``) against the build ``source`` they were evaluated on, nothing written: the
    derivation :func:`write_mteb_submission` writes and the leaderboard checks claims with.

    Raises:
        ValueError: a run file that is missing or holds what its subtask or list does not.
    """
    first = results[0]
    expected = first.dataset.get("revision")
    by_family = _family_subtasks(source, first.release)
    skipped: dict[str, str] = {}
    scores: dict[str, dict[str, float]] = {}
    n_queries: dict[str, int] = {}
    notes = [
        f"Scores recomputed from the run files on MTEB's protocol (pooled per main task, "
        f"positives only, queries without a positive left out, nothing excluded), on the CoREB "
        f"build {source} (revision {expected}, release {first.release}); the TaskResult's "
        "dataset_revision is that build's, not the revision of mteb/coreb-*.",
    ]
    evaluated: dict[str, tuple[Path, CorebResults]] = {}
    for folder, res in zip(folders, results, strict=True):
        for row in res.rows:
            if row.get("level") != "subtask":
                continue
            if row["name"] in evaluated:
                raise ValueError(
                    f"subtask {row['name']} is in both {evaluated[row['name']][0]} and {folder}"
                )
            evaluated[row["name"]] = (folder, res)
    for family, task in RETRIEVAL_TASKS.items():
        subtasks = by_family.get(family, [])
        if not subtasks:
            continue
        missing = [s for s in subtasks if s not in evaluated]
        if missing:
            skipped[task] = (
                f"the results cover {len(subtasks) - len(missing)} of {len(subtasks)} {family} "
                f"subtasks (missing: {', '.join(missing)}); MTEB pools all of them"
            )
            continue
        owners = {evaluated[s][0]: evaluated[s][1] for s in subtasks}
        if any(r.reranked for r in owners.values()):
            skipped[task] = (
                "not derivable: a reranked result is a pipeline (first stage + reranker); "
                f"MTEB's {task} scores one model over the whole corpus"
            )
            continue
        abbreviated = [
            s for s in subtasks
            if evaluated[s][1].corpora.get(s) == CORPUS_TEXT_ABBREVIATED
            and s not in _kept(evaluated[s][1])["full_text"]
        ]  # fmt: skip
        if abbreviated:
            views = {r.c2t_canonical_corpus for r in owners.values()}
            skipped[task] = _WHY_C2T.format(
                views=", ".join(sorted(views)), missing=", ".join(abbreviated), task=task
            )
            continue
        qrels: dict[str, dict[str, int]] = {}
        run: dict[str, dict[str, float]] = {}
        left_out = 0
        try:
            for owner, owner_res in owners.items():
                mine = [s for s in subtasks if evaluated[s][0] == owner]
                q, r, n = pooled_run(owner, owner_res, source, mine)
                qrels.update(q)
                run.update(r)
                left_out += n
        except _NotDerivable as why:
            skipped[task] = str(why)
            continue
        for kind, what in (("excluded", "the excluded documents' scores (the c2c anchor) "
                            "put back into the runs of"),
                           ("full_text", "the full-text ranking of")):  # fmt: skip
            used = [s for s in subtasks if s in _kept(evaluated[s][1])[kind]]
            if used:
                notes.append(f"{task}: mteb/{kind}/ used: {what} {', '.join(used)}.")
        if not qrels:
            skipped[task] = "no query with a positive: MTEB's task would be empty"
            continue
        depth = min(r.top_k for r in owners.values())
        metrics = mteb_metrics(qrels, run, [k for k in K_VALUES if k <= depth])
        main = RETRIEVAL_MAIN_SCORE  # mteb's metadata of every Coreb*Retrieval task
        if main not in metrics:
            skipped[task] = f"the runs are {depth} deep; {main} needs more"
            continue
        scores[task] = {**metrics, "main_score": metrics[main]}
        n_queries[task] = len(qrels)
        if left_out:
            notes.append(
                f"{task}: {left_out} queries without a positive left out (MTEB cannot hold "
                "them; CoREB's default scores them 0)."
            )
    _reranking_scores(folders, results, source, scores, skipped, n_queries, notes)
    return MtebDerivation(scores, skipped, n_queries, notes)


def write_mteb_submission(
    results_dirs: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    model_name: str,
    revision: str,
    dataset: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    license: str | None = None,
    open_weights: bool | None = None,
    reference: str | None = None,
    release_date: str | None = None,
) -> MtebSubmission:
    """Write the MTEB results folder of CoREB evaluations and validate it with mteb, offline.

    Args:
        results_dirs: ``coreb evaluate`` folders (``<out>/<model>/<release>/``: results.json
            and runs/) of one model on one dataset revision.
        out_dir: the submission folder; ``results/`` is written inside it.
        model_name: ``ORG/NAME`` as MTEB lists the model.
        revision: the model revision: a commit hash, or a branch / tag name (a label for a
            local model); one folder of MTEB's layout, so letters, digits, ``.``, ``_`` and
            ``-`` only (:data:`REVISION`): a name with ``/`` (``refs/pr/1``) is refused, give
            its commit hash.
        dataset: the CoREB build the results were computed on (default: the results'
            ``dataset.source``); its fingerprint must equal the results' ``dataset.revision``
            (results that record none are refused: nothing would tie the runs to the qrels).

    Raises:
        ValueError: QualCode results, results of different models or dataset revisions, a
            dataset that is not the one evaluated, missing run files, nothing derivable to
            submit, or files mteb does not load back with the same scores.
        FileExistsError: ``out_dir`` exists and ``overwrite`` is false.
        ImportError: mteb is not installed.
    """
    mteb = _import_mteb()
    if model_name.count("/") != 1 or not all(model_name.split("/")):
        raise ValueError(f"--model-name must be ORG/NAME as MTEB lists models, got {model_name!r}")
    check_revision(revision)
    if not results_dirs:
        raise ValueError("give at least one results folder")
    folders = [Path(p) for p in results_dirs]
    results = [_read(f) for f in folders]
    _check_consistent(folders, results)
    first = results[0]
    source = str(dataset) if dataset is not None else str(first.dataset.get("source"))
    expected = first.dataset.get("revision")
    if not Path(source).is_dir():
        raise ValueError(
            f"the CoREB build {source!r} the results were computed on is not a local folder: "
            "pass --dataset DIR (the `coreb build` folder) to read its qrels"
        )
    if expected is None:
        raise ValueError(
            f"{folders[0] / 'results.json'}: dataset.revision is null: nothing ties its runs to "
            f"the build {source}, and scored against another build's qrels they give another "
            "figure; rerun `coreb evaluate` on the local build (it records the build's "
            "fingerprint) and submit that"
        )
    found = dataset_revision(source)
    if found != expected:
        raise ValueError(
            f"{source} has revision {found}, but the results were computed on {expected}: "
            "the qrels would not be those of the runs; pass the dataset they were computed on"
        )
    out = Path(out_dir)
    if out.is_symlink():
        raise ValueError(
            f"--out {out} is a symlink: a submission replaces the folder whole, so give the "
            "folder itself"
        )
    if os.path.lexists(out):
        if not overwrite:
            raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
        extra = sorted(p.name for p in out.iterdir() if p.name not in ("results", "NOTES.md"))
        if extra:
            raise ValueError(
                f"{out} holds files a submission does not write ({', '.join(extra[:5])}); "
                "remove them yourself or choose another folder"
            )

    derived = derive_mteb_scores(folders, results, source)
    scores, skipped, n_queries, notes = (
        derived.scores, derived.skipped, derived.n_queries, derived.notes,
    )  # fmt: skip
    if not scores:
        reasons = "; ".join(f"{t}: {why}" for t, why in skipped.items())
        raise ValueError(f"nothing on MTEB's protocol can be derived from these results: {reasons}")

    meta = _model_meta(
        mteb, first.model, model_name, revision, license=license, open_weights=open_weights,
        reference=reference, release_date=release_date,
    )  # fmt: skip
    for task, values in scores.items():
        _check_scores(task, values)
    created = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        cache = mteb.ResultCache(tmp)
        for task, values in scores.items():
            task_obj = mteb.get_task(task)
            result = mteb.TaskResult.from_task_results(
                task_obj,
                {MTEB_SPLIT: {MTEB_SUBSET: values}},
                evaluation_time=first.retrieval_seconds,
            )
            result.dataset_revision = str(expected)
            cache.save_to_cache(result, meta)
        (tmp / "NOTES.md").write_text(_notes(scores, skipped, notes), encoding="utf-8")
        _check_written(tmp)
        scores = _validate(mteb, tmp, meta, scores)
        replace_folder(tmp, out)  # an old submission is swapped back if the rename fails
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in created:  # deepest first: the folders this call made, if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    model_dir = mteb.ResultCache(out).get_task_result_path(next(iter(scores)), meta).parent
    return MtebSubmission(out, model_dir, scores, skipped, n_queries, notes)


def check_revision(revision: str) -> str:
    """``revision`` when it is one plain folder name of MTEB's results layout (:data:`REVISION`:
    a commit hash, or a branch / tag name without ``/``); else a ``ValueError`` saying so."""
    if not isinstance(revision, str) or not REVISION.fullmatch(revision):
        raise ValueError(
            f"--revision {revision!r}: MTEB's results layout keeps one folder per model "
            "revision (results/<org>__<model>/<revision>/), so it must be a commit hash or a "
            "branch / tag name of letters, digits, '.', '_' and '-' (at most 100, not starting "
            "with '.'); for a ref with '/' such as refs/pr/1, give its commit hash"
        )
    return revision


def _check_scores(task: str, values: Mapping[str, float]) -> None:
    """Every score about to be written is finite and in [0, 1] (all of MTEB's retrieval
    scores are means of per-query values in [0, 1])."""
    check_finite(dict(values), f"{task} (being written)")
    for key, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(
                f"{task} (being written): {key} is {value!r}, outside [0, 1]: the run files "
                "are broken; nothing was written"
            )


def _check_written(folder: Path) -> None:
    """Every JSON file written under ``folder`` is strict JSON (no ``NaN`` / ``Infinity``,
    which Python's ``json`` writes by default and no other reader takes)."""
    for path in sorted(folder.rglob("*.json")):
        read_json(path)


def _validate(
    mteb: Any, folder: Path, meta: Any, scores: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    """Load ``folder`` with mteb's ``ResultCache`` (offline, validated against each task) and
    check every task came back with every score we wrote (mteb stores 6 decimals); returns the
    scores as mteb read them, or raises ``ValueError`` naming what did not come back."""
    loaded = mteb.ResultCache(folder).load_results(
        models=[meta.name],
        tasks=list(scores),
        include_remote=False,
        validate_and_filter=True,
        require_model_meta=True,
    )
    got: dict[str, dict[str, float]] = {}
    for model_result in loaded.model_results:
        if model_result.model_name != meta.name or model_result.model_revision != meta.revision:
            continue
        for task_result in model_result.task_results:
            for entry in task_result.scores.get(MTEB_SPLIT, []):
                if entry["hf_subset"] == MTEB_SUBSET:
                    got[task_result.task_name] = {k: entry[k] for k in scores.get(
                        task_result.task_name, {}) if k in entry}  # fmt: skip
    for task, values in scores.items():
        if task not in got:
            raise ValueError(
                f"mteb's ResultCache did not load {task} for {meta.name} ({meta.revision}) from "
                f"{folder}: the file does not validate against mteb's task (see mteb's log)"
            )
        for key, value in values.items():
            if got[task].get(key) != round(value, 6):
                raise ValueError(
                    f"mteb read {task} {key} back as {got[task].get(key)!r}, not {value!r} "
                    "(rounded to mteb's 6 decimals)"
                )
    return got


def _notes(scores: Mapping, skipped: Mapping[str, str], notes: Sequence[str]) -> str:
    lines = ["# MTEB submission from CoREB results", "", "## Written", ""]
    lines += [f"- `{t}`: main score {v['main_score']:.6f}" for t, v in scores.items()]
    lines += ["", "## Not written (no honest MTEB figure)", ""]
    lines += [f"- `{t}`: {why}" for t, why in skipped.items()]
    lines += ["", "## Notes", "", *(f"- {n}" for n in notes), ""]
    return "\n".join(lines)
