"""The submission validator: every number on the board is recomputed from the submitted runs.

A submission (:mod:`model_cards.leaderboard.submission`) is accepted only when

1. its ``results.json`` passes the results schema (``read_results``) and ``model_meta.json``
   agrees with it;
2. it was evaluated on the board's dataset: the results' ``dataset.revision`` equals
   :func:`coreb_toolkit.benchmark.provenance.dataset_revision` of the dataset folder given, and
   the release exists there;
3. every subtask the dataset defines for that release has a row and a run file, and each
   subtask ranked the corpus the results file says (``corpora``, the c2t canonical view) with
   only documents of that corpus, at most ``top_k`` per query, ranks in score order;
4. every metric of every row -- per subtask, per main task, Overall; nDCG / MAP / Recall / MRR /
   P at every cutoff the row holds, the hard-negative intrusion rate, the best-positive tie
   share and their counts -- equals what the runs give: subtask rows from the ``coreb_metric``
   ``evaluate`` module with the protocol options the results file states (``no_positive_policy``,
   ``relevance_level``, the dataset's c2c anchor exclusions), main-task and Overall rows pooled
   over queries as :func:`eval_metrics.aggregate` pools them;
5. ``per_query.jsonl`` holds exactly the recomputed per-query values (the significance tests
   of the board use the recomputed values, never the file's);
6. a reranked result's ``first_stage_rows`` and ``delta`` are recomputed from the first
   stage's runs it carries, and its reranked runs only hold first-stage documents;
7. every MTEB CoREB(v1) figure it claims (``mteb_tasks``) equals what its run files and
   ``mteb/`` give on MTEB's protocol (:func:`model_cards.mteb_results.derive_mteb_scores`, the
   derivation of ``coreb submit mteb``); the board's CoREB(v1) mean uses the recomputed six.

The first failure is raised as :class:`SubmissionRejected` naming the file, the row, the metric,
the claimed and the recomputed value. Every file is read from inside the submission folder only
(:func:`coreb_toolkit.untrusted.inside`: no symlink or ``..`` out of it, no FIFO or device),
JSON through :mod:`coreb_toolkit.untrusted`'s bounded readers, run files a bounded line at a
time; a file that cannot be read is a rejection naming it, never a traceback.

Tolerance: a claimed figure matches when ``math.isclose(claimed, recomputed, rel_tol=1e-9,
abs_tol=1e-12)``. The runner writes every float with ``repr`` (exact round trip), so on the same
library versions the recomputation is bit-identical; the slack only covers a different libm or
pytrec_eval build (last-bit differences, ~1e-16 relative). Tampering moves figures by far more:
one query's nDCG@10 changing by a swap at ranks 10/11 moves a subtask mean of 10,000 queries
by more than 1e-6.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coreb_toolkit.benchmark.provenance import dataset_revision
from coreb_toolkit.benchmark.results import CorebResults
from coreb_toolkit.untrusted import bounded_lines, inside, jsonl_objects
from eval_metrics import COREB_METRIC_PATH, aggregate, evaluate_retrieval, positive_ties, read_run
from eval_metrics.measures import MEASURES
from eval_metrics.membership import check_run_membership
from eval_metrics.retrieval import RetrievalEvaluation
from eval_metrics.ties import PositiveTies
from eval_metrics.trec_order import trec_order
from model_cards.leaderboard.submission import Submission, read_submission

logger = logging.getLogger(__name__)

REL_TOL = 1e-9
ABS_TOL = 1e-12
#: row keys that are not figures of the runs (identity of the row)
_ROW_IDENTITY = ("level", "name")


class SubmissionRejected(ValueError):
    """A submission whose files do not hold what it claims; ``where`` names the first problem.

    For a number that does not match its runs, ``row``, ``metric``, ``claimed`` and
    ``recomputed`` are set as well.
    """

    def __init__(
        self,
        message: str,
        *,
        row: str | None = None,
        metric: str | None = None,
        claimed: Any = None,
        recomputed: Any = None,
    ) -> None:
        super().__init__(message)
        self.row, self.metric, self.claimed, self.recomputed = row, metric, claimed, recomputed


@dataclass
class BoardDataset:
    """The dataset a board is for: a built CoREB folder, its revision, its releases on demand.

    ``source`` is the local folder the validator reads; ``name`` is what the board publishes
    (the dataset's Hub id or name: never a path of this machine).
    """

    source: str
    revision: str
    _releases: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = Path(self.source).resolve().name

    @classmethod
    def open(cls, source: str | os.PathLike[str], name: str | None = None) -> BoardDataset:
        """The dataset folder ``source``; ``name`` (default: the folder's name) is published."""
        path = Path(source)
        if not path.is_dir():
            raise ValueError(
                f"{source}: the leaderboard's dataset must be a local CoREB dataset folder "
                "(`coreb build`), whose qrels the validator scores the runs against"
            )
        revision = dataset_revision(str(path))
        if revision is None:  # dataset_revision of an existing folder is its fingerprint
            raise ValueError(f"{source}: cannot fingerprint the folder")
        return cls(str(path), revision, name=name or "")

    def release(self, name: str, c2t_canonical_corpus: str) -> Any:
        """The ``ReleaseInput`` of release ``name`` (every subtask, queries, qrels, corpora)."""
        key = (name, c2t_canonical_corpus)
        if key not in self._releases:
            from coreb_toolkit.benchmark.runner import discover

            try:
                (item,) = discover(self.source, None, [name], c2t_canonical_corpus)
            except ValueError as err:
                raise SubmissionRejected(f"dataset {self.source}: {err}") from None
            self._releases[key] = item
        return self._releases[key]


@dataclass
class StageFigures:
    """One stage's figures as recomputed from its runs."""

    rows: list[dict[str, Any]]
    evaluations: dict[str, RetrievalEvaluation]
    ties: dict[str, PositiveTies]

    def per_query(self, metric: str) -> dict[str, float]:
        """``{"<subtask>/<query_id>": value}`` over every counted query (Overall's queries)."""
        return {
            f"{name}/{qid}": values[metric]
            for name, ev in self.evaluations.items()
            for qid, values in ev.per_query.items()
        }


@dataclass
class ValidatedSubmission:
    """An accepted submission with its recomputed figures (equal to the claimed ones)."""

    submission: Submission
    dataset: BoardDataset
    figures: StageFigures
    first_stage: StageFigures | None = None
    #: :func:`runs_digest` of the submitted runs: two entries with one digest are one system
    runs_digest: str = ""
    #: MTEB's CoREB(v1) main scores recomputed from the submitted files (those it claims)
    mteb_scores: dict[str, float] = field(default_factory=dict)

    @property
    def results(self) -> CorebResults:
        return self.submission.results

    @property
    def name(self) -> str:
        return self.submission.meta.name


@lru_cache(maxsize=1)
def _metric() -> Any:
    import evaluate

    return evaluate.load(COREB_METRIC_PATH)


def k_values_of(row: Mapping[str, Any], where: str) -> dict[str, list[int]]:
    """``{measure: [k, ...]}`` of the metric keys a row holds (``ndcg_at_10`` -> ndcg 10)."""
    out: dict[str, list[int]] = {}
    for key in row:
        head, sep, k = key.rpartition("_at_")
        if sep and head in MEASURES:
            if not k.isdigit():
                raise SubmissionRejected(f"{where}: {key!r} is not a metric at a cutoff")
            out.setdefault(head, []).append(int(k))
    if not out:
        raise SubmissionRejected(f"{where}: the row holds no metric (ndcg_at_10, ...)")
    return out


def _check_rank_order(path: Path, shown: Path) -> None:
    """Ranks 1..n per query in file order with scores that never rise: the file as the runner
    wrote it. trec_eval reads only the scores; a line whose rank disagrees with its score
    (a moved line) means the file was edited, which no honest pipeline does. (``read_run``
    has checked every line already.)"""
    expected: dict[str, int] = {}
    last: dict[str, float] = {}
    for number, raw in bounded_lines(path):
        parts = raw.split()
        if not parts or parts[0].startswith(b"#"):
            continue
        qid, rank, score = parts[0].decode(), parts[3], float(parts[4])
        want = expected.get(qid, 0) + 1
        if rank != str(want).encode() or score > last.get(qid, math.inf):
            raise SubmissionRejected(
                f"{shown}:{number}: query {qid!r}: rank {rank.decode()} with score {score!r} "
                f"is out of order (expected rank {want} with a score at most "
                f"{last.get(qid, math.inf)!r}): the run file was edited after it was written"
            )
        expected[qid], last[qid] = want, score


def _inside(root: Path, path: Path) -> Path:
    """``path`` resolved inside the submission folder ``root``, or a rejection naming it."""
    try:
        return inside(root, path)
    except ValueError as err:
        raise SubmissionRejected(str(err)) from None


def _read_stage_run(root: Path, path: Path, data: Any, top_k: int) -> dict[str, dict[str, float]]:
    real = _inside(root, path)
    if not real.is_file():
        raise SubmissionRejected(f"{path}: missing run file: a submission carries every run")
    try:
        run = read_run(real)
        _check_rank_order(real, path)
    except SubmissionRejected:
        raise
    except ValueError as err:
        raise SubmissionRejected(str(err).replace(str(real), str(path))) from None
    try:
        check_run_membership(str(path), run, data.qrels, data.corpus, data.corpus_name, top_k)
    except ValueError as err:
        raise SubmissionRejected(str(err)) from None
    return run


def _score_subtask(
    name: str, run: dict[str, dict[str, float]], data: Any, results: CorebResults, ks: dict
) -> tuple[dict[str, Any], RetrievalEvaluation, PositiveTies]:
    """A subtask's row from ``coreb_metric``, its per-query values and its ties."""
    options = {
        "exclude": data.exclude or None,
        "no_positive_policy": results.no_positive_policy,
        "relevance_level": results.relevance_level,
    }
    # evaluate pairs rows: one prediction row per judged query, empty where the run has none
    predictions = [
        {"query_id": q, "doc_ids": list(run.get(q, {})), "scores": list(run.get(q, {}).values())}
        for q in data.qrels
    ]
    references = [
        {"query_id": q, "doc_ids": list(j), "relevance": list(j.values())}
        for q, j in data.qrels.items()
    ]
    summary = _metric().compute(
        predictions=predictions, references=references, k_values=ks, **options
    )
    evaluation = evaluate_retrieval(data.qrels, run, k_values=ks, **options)
    # coreb_metric wraps the same engine: a difference would be a broken install, not a cheat
    if summary != evaluation.summary():
        raise RuntimeError(f"{name}: coreb_metric and eval_metrics disagree; reinstall both")
    ties = positive_ties(
        data.qrels, run, exclude=options["exclude"], relevance_level=results.relevance_level
    )
    return summary, evaluation, ties


def _cutoffs(claimed_rows: Sequence[Mapping[str, Any]], where: str) -> dict[str, list[int]]:
    """The cutoffs the subtask rows hold; the first row holding others than most rows do is
    named as itself (not the rows after it, as reading the first row's alone would)."""
    subtask_rows = [r for r in claimed_rows if r.get("level") == "subtask"]
    if not subtask_rows:
        raise SubmissionRejected(f"{where}: no subtask row")
    held = [k_values_of(row, f"{where}: subtask row {row.get('name')!r}") for row in subtask_rows]
    shown = [_shown(ks) for ks in held]
    common, count = Counter(shown).most_common(1)[0]  # ties: the first row's
    for row, text in zip(subtask_rows, shown, strict=True):
        if text != common:
            raise SubmissionRejected(
                f"{where}: subtask row {row.get('name')!r} holds the metrics {text}, while "
                f"{count} other subtask row(s) hold {common}: every row of a results file "
                "holds the same ones (rerun `coreb evaluate`)",
                row=row.get("name"),
            )
    return held[shown.index(common)]


def _shown(ks: Mapping[str, list[int]]) -> str:
    return " ".join(f"{m}@{','.join(map(str, sorted(k)))}" for m, k in sorted(ks.items()))


def _recompute(
    root: Path,
    runs_dir: Path,
    item: Any,
    results: CorebResults,
    claimed_rows: Sequence[Mapping[str, Any]],
    top_k: int,
    where: str,
) -> tuple[StageFigures, dict[str, dict[str, dict[str, float]]]]:
    """Every row of one stage from its runs; also the runs (for the reranked-run check)."""
    from coreb_toolkit.benchmark.runner import with_ties

    ks = _cutoffs(claimed_rows, where)
    evaluations, ties, runs = {}, {}, {}
    for name, data in item.subtasks.items():
        runs[name] = _read_stage_run(root, runs_dir / f"{name}.trec", data, top_k)
        _, evaluations[name], ties[name] = _score_subtask(name, runs[name], data, results, ks)
    rows = with_ties([row.to_dict() for row in aggregate(evaluations)], ties)
    return StageFigures(rows, evaluations, ties), runs


def _same(claimed: Any, recomputed: Any, rel_tol: float, abs_tol: float) -> bool:
    if isinstance(claimed, bool) or isinstance(recomputed, bool) or claimed is None:
        return claimed is recomputed or claimed == recomputed
    if isinstance(claimed, (int, float)) and isinstance(recomputed, (int, float)):
        return math.isclose(claimed, recomputed, rel_tol=rel_tol, abs_tol=abs_tol)
    return claimed == recomputed


def compare_rows(
    claimed: Sequence[Mapping[str, Any]],
    recomputed: Sequence[Mapping[str, Any]],
    where: str,
    *,
    rel_tol: float = REL_TOL,
    abs_tol: float = ABS_TOL,
) -> None:
    """Raise :class:`SubmissionRejected` at the first claimed row / figure the runs do not give."""
    mine = {(r["level"], r["name"]): r for r in recomputed}
    seen = set()
    for row in claimed:
        key = (row.get("level"), row.get("name"))
        label = f"{key[0]} row {key[1]!r}"
        if key not in mine:
            raise SubmissionRejected(f"{where}: {label} is not a row of this dataset's release")
        seen.add(key)
        ours = mine[key]
        for metric in list(row) + [k for k in ours if k not in row]:
            if metric in _ROW_IDENTITY:
                continue
            if metric not in ours or metric not in row:
                state = "claimed but not recomputable" if metric in row else "missing"
                raise SubmissionRejected(
                    f"{where}: {label}: {metric} is {state}", row=key[1], metric=metric
                )
            a, b = row[metric], ours[metric]
            if not _same(a, b, rel_tol, abs_tol):
                raise SubmissionRejected(
                    f"{where}: {label}: {metric}: claimed {a!r}, recomputed from the runs {b!r}",
                    row=key[1], metric=metric, claimed=a, recomputed=b,
                )  # fmt: skip
    missing = [k for k in mine if k not in seen]
    if missing:
        level, name = missing[0]
        raise SubmissionRejected(
            f"{where}: no {level} row {name!r}, which the dataset's release defines",
            row=name,
        )


def _check_subtasks(sub: Submission, item: Any) -> None:
    res, where = sub.results, sub.folder / "results.json"
    defined = list(item.subtasks)
    claimed = [r["name"] for r in res.rows if r["level"] == "subtask"]
    missing = [s for s in defined if s not in claimed]
    if missing:
        raise SubmissionRejected(
            f"{where}: missing subtask(s) {', '.join(missing)}: the dataset's release "
            f"{res.release} defines {len(defined)} subtasks and a submission covers every one"
        )
    extra = [s for s in claimed if s not in defined]
    if extra:
        raise SubmissionRejected(f"{where}: subtask(s) {', '.join(extra)} are not in the dataset")
    for name, data in item.subtasks.items():
        if res.corpora.get(name) != data.corpus_name:
            raise SubmissionRejected(
                f"{where}: corpora[{name!r}] is {res.corpora.get(name)!r}, but with "
                f"c2t_canonical_corpus={res.c2t_canonical_corpus!r} that subtask ranks "
                f"{data.corpus_name!r}"
            )


def runs_digest(runs: Mapping[str, Mapping[str, Mapping[str, float]]]) -> str:
    """``sha256:<hex>`` of what a set of runs ranks: per subtask and query, the documents in
    trec_eval's order (score descending, ties by doc id descending). Scores, tags and layout
    do not enter it: two runs with one digest give every metric alike, so they are one system
    however they are named."""
    digest = hashlib.sha256()
    for name in sorted(runs):
        for qid in sorted(runs[name]):
            ranked = trec_order(runs[name][qid], single_precision=False)
            digest.update("\0".join([name, qid, *ranked]).encode() + b"\n")
    return f"sha256:{digest.hexdigest()}"


def _check_per_query(sub: Submission, figures: StageFigures) -> None:
    """``per_query.jsonl`` line by line against the recomputed values."""
    path = sub.per_query_file
    real = _inside(sub.folder, path)
    if not real.is_file():
        raise SubmissionRejected(f"{path}: missing; a submission carries its per-query values")
    expected: dict[tuple[str, str], dict[str, Any]] = {}
    for name, ev in figures.evaluations.items():
        for qid, values in ev.per_query.items():
            expected[(name, qid)] = {
                **values,
                "hard_negative_intrusion": ev.intrusion.get(qid),
                "best_positive_tied": figures.ties[name].tied.get(qid),
            }
    try:
        for number, record in jsonl_objects(real):
            _check_query_line(f"{path}:{number}", record, expected)
    except SubmissionRejected:
        raise
    except ValueError as err:
        raise SubmissionRejected(str(err).replace(str(real), str(path))) from None
    if expected:
        (name, qid) = next(iter(expected))
        raise SubmissionRejected(f"{path}: no line for {name} query {qid!r} ({len(expected)} lack)")


def _check_query_line(
    where: str, record: dict[str, Any], expected: dict[tuple[str, str], dict[str, Any]]
) -> None:
    key = (record.pop("subtask", None), record.pop("query_id", None))
    if not all(isinstance(k, str) for k in key):
        raise SubmissionRejected(
            f"{where}: subtask and query_id must be strings, got {type(key[0]).__name__} and "
            f"{type(key[1]).__name__}"
        )
    if key not in expected:
        raise SubmissionRejected(f"{where}: {key} is not a counted query, or twice")
    want = expected.pop(key)
    for metric in sorted(set(want) | set(record)):
        a, b = record.get(metric, "<missing>"), want.get(metric, "<not recomputable>")
        if not _same(a, b, REL_TOL, ABS_TOL):
            raise SubmissionRejected(
                f"{where}: {key[0]} query {key[1]!r}: {metric}: claimed {a!r}, "
                f"recomputed from the runs {b!r}",
                row=key[0], metric=metric, claimed=a, recomputed=b,
            )  # fmt: skip


def validate_submission(
    folder: str | os.PathLike[str] | Submission,
    dataset: str | os.PathLike[str] | BoardDataset,
    *,
    rel_tol: float = REL_TOL,
    abs_tol: float = ABS_TOL,
) -> ValidatedSubmission:
    """Check a submission against the board's dataset (see the module docstring).

    Args:
        folder: the submission folder (or a :class:`Submission` already read).
        dataset: the board's built CoREB folder (or a :class:`BoardDataset`, to share one
            load between submissions).
        rel_tol, abs_tol: the tolerance of every comparison (module docstring).

    Raises:
        SubmissionRejected: (a ``ValueError``) naming the first problem.
    """
    from coreb_toolkit.benchmark.runner import delta_rows

    board = dataset if isinstance(dataset, BoardDataset) else BoardDataset.open(dataset)
    try:
        sub = folder if isinstance(folder, Submission) else read_submission(folder)
    except (ValueError, TypeError) as err:
        raise SubmissionRejected(str(err)) from None
    res, where = sub.results, str(sub.folder / "results.json")
    claimed_revision = res.dataset.get("revision")
    if claimed_revision != board.revision:
        raise SubmissionRejected(
            f"{where}: dataset revision {claimed_revision!r} is not the board's dataset "
            f"{board.source} (revision {board.revision!r}); evaluate on that dataset"
        )
    item = board.release(res.release, res.c2t_canonical_corpus)
    _check_subtasks(sub, item)
    # a reranked run holds the reranked top rerank_top_k only (CoREB B.3: top-128)
    top_k = res.rerank_top_k if res.reranked and res.rerank_top_k else res.top_k
    figures, runs = _recompute(sub.folder, sub.runs_dir, item, res, res.rows, top_k, where)
    compare_rows(res.rows, figures.rows, where, rel_tol=rel_tol, abs_tol=abs_tol)
    _check_per_query(sub, figures)
    first = None
    if res.reranked:
        first, first_runs = _recompute(
            sub.folder, sub.first_stage_runs_dir, item, res, res.first_stage_rows or [],
            res.top_k, f"{where} (first_stage_rows)",
        )  # fmt: skip
        compare_rows(res.first_stage_rows or [], first.rows, f"{where} (first_stage_rows)",
                     rel_tol=rel_tol, abs_tol=abs_tol)  # fmt: skip
        for name, run in runs.items():
            for qid, docs in run.items():
                stray = next((d for d in docs if d not in first_runs[name].get(qid, {})), None)
                if stray is not None:
                    raise SubmissionRejected(
                        f"{sub.runs_dir / name}.trec: query {qid!r} ranks {stray!r}, which the "
                        "first stage did not retrieve: a reranker only reorders its candidates"
                    )
        keys = next(iter(figures.evaluations.values())).metric_keys
        delta = delta_rows(first.rows, figures.rows, keys)
        compare_rows(res.delta or [], delta, f"{where} (delta)", rel_tol=rel_tol, abs_tol=abs_tol)
    mteb_scores = _check_mteb_tasks(sub, board, rel_tol=rel_tol, abs_tol=abs_tol)
    logger.info("%s: accepted (%d rows recomputed)", sub.folder, len(figures.rows))
    return ValidatedSubmission(sub, board, figures, first, runs_digest(runs), mteb_scores)


def _check_mteb_tasks(
    sub: Submission, board: BoardDataset, *, rel_tol: float, abs_tol: float
) -> dict[str, float]:
    """``{MTEB task: main score}`` recomputed from the submission's files for every task its
    ``mteb_tasks`` claims (the derivation of ``coreb submit mteb``), each claimed figure
    checked; ``{}`` for a result that claims none."""
    claimed = sub.results.mteb_tasks or {}
    if not claimed:
        return {}
    where = str(sub.folder / "results.json")
    root = sub.folder.resolve()
    # the files the derivation reads (names the schema holds to [A-Za-z0-9_]), from inside the
    # submission only: no symlink, no `..` out of it, no FIFO or device
    for kind, names in (sub.results.mteb or {}).items():
        for name in names:
            _inside(sub.folder, Path("mteb") / kind / f"{name}.trec")
    from model_cards.mteb_results import derive_mteb_scores

    try:
        derived = derive_mteb_scores([root], [sub.results], str(board.source))
    except ValueError as err:
        raise SubmissionRejected(f"{where}: mteb_tasks: {err}") from None
    out: dict[str, float] = {}
    for task, figures in claimed.items():
        if task not in derived.scores:
            why = derived.skipped.get(task, "not derivable")
            raise SubmissionRejected(f"{where}: mteb_tasks.{task} is claimed, but {why}")
        recomputed = derived.scores[task]
        pairs = [("main_score", figures["main_score"], recomputed["main_score"])]
        pairs += [(key, value, recomputed.get(key)) for key, value in figures["scores"].items()]
        for key, value, again in pairs:
            if again is None or not _same(value, again, rel_tol, abs_tol):
                raise SubmissionRejected(
                    f"{where}: mteb_tasks.{task}.{key} is {value!r}, but the submitted files "
                    f"give {again!r}",
                    row=task,
                    metric=key,
                    claimed=value,
                    recomputed=again,
                )
        out[task] = recomputed["main_score"]
    return out


__all__ = [
    "ABS_TOL",
    "REL_TOL",
    "BoardDataset",
    "StageFigures",
    "SubmissionRejected",
    "ValidatedSubmission",
    "compare_rows",
    "k_values_of",
    "runs_digest",
    "validate_submission",
]
