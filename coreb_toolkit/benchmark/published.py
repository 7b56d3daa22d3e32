"""The CoREB paper's published first-stage retrieval results, shipped as data with their source.

``published_results.json`` (package data next to this module) holds Table 3 (release_v2603) and
Table 14 (release_v2602) of the paper: for each of the eleven embedding models, nDCG@10 and
Recall@10 on T2C, C2T, C2C and Overall (query-count-weighted), exactly as printed. Use it to put
a local run next to the paper's numbers, e.g. :func:`rank_among_published`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from coreb_toolkit.untrusted import markdown_text

PUBLISHED_RELEASES: tuple[str, ...] = ("release_v2603", "release_v2602")
"""The releases the paper reports first-stage retrieval for, newest first."""

PUBLISHED_TASKS: tuple[str, ...] = ("t2c", "c2t", "c2c", "overall")
"""The task columns of each table; ``overall`` is the query-count-weighted mean of the others."""

PUBLISHED_METRICS: tuple[str, ...] = ("ndcg_at_10", "recall_at_10")
"""The metrics of each task column (graded qrels, relevance level 2)."""

RESOURCE = "published_results.json"


@dataclass(frozen=True)
class PublishedResult:
    """One model's row of a published table.

    Attributes:
        model: the model's name as the paper writes it (``"C2LLM-7B"``, ``"GemEmb-2"``).
        release: the canonical release name (``"release_v2603"``).
        task_scores: ``{task: {metric: value}}`` for every task in :data:`PUBLISHED_TASKS` and
            metric in :data:`PUBLISHED_METRICS`.
        parameters: the size the paper states (``"0.5B"``, ``"nominal 3B"``), or ``None``.
        open_weights: whether the paper says the weights are open; ``None`` where it does not say.
        note: the paper's remark on the model, if any (``"closed API (...)"``).
    """

    model: str
    release: str
    task_scores: dict[str, dict[str, float]] = field(hash=False)
    parameters: str | None = None
    open_weights: bool | None = None
    note: str | None = None

    def score(self, task: str, metric: str = "ndcg_at_10") -> float:
        """The published ``metric`` on ``task`` (``"t2c"``, ``"c2t"``, ``"c2c"``, ``"overall"``)."""
        try:
            return self.task_scores[task][metric]
        except KeyError:
            raise KeyError(
                f"no published {metric!r} on {task!r}; tasks {PUBLISHED_TASKS}, "
                f"metrics {PUBLISHED_METRICS}"
            ) from None

    @property
    def overall_ndcg_at_10(self) -> float:
        """The headline number: Overall nDCG@10."""
        return self.score("overall", "ndcg_at_10")

    @property
    def parameters_billion(self) -> float | None:
        """The stated size in billions of parameters (``"nominal 3B"`` -> 3.0), or ``None``."""
        if self.parameters is None:
            return None
        found = re.search(r"(\d+(?:\.\d+)?)\s*B\b", self.parameters)
        return float(found.group(1)) if found else None


def canonical_release(release: str) -> str:
    """``"release_v2603"``, ``"v2603"`` or ``"v202603"`` -> ``"release_v2603"``.

    Raises:
        ValueError: the name is none of the published releases or their aliases.
    """
    for name in PUBLISHED_RELEASES:
        tag = name.removeprefix("release_v")
        if release in (name, f"v{tag}", f"v20{tag}"):
            return name
    raise ValueError(
        f"no published results for release {release!r}; known: {', '.join(PUBLISHED_RELEASES)} "
        "(or their aliases v2603 / v202603 style)"
    )


def _read_text() -> str:
    """The raw text of the packaged JSON (a seam the tests replace)."""
    return resources.files(__package__).joinpath(RESOURCE).read_text(encoding="utf-8")


def _check_entry(release: str, index: int, entry: Any) -> PublishedResult:
    where = f"{RESOURCE}: {release}[{index}]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is not an object")
    model = entry.get("model")
    if not isinstance(model, str) or not model:
        raise ValueError(f"{where} has no model name")
    where = f"{RESOURCE}: {release} model {model!r}"
    scores: dict[str, dict[str, float]] = {}
    for task in PUBLISHED_TASKS:
        cell = entry.get(task)
        if not isinstance(cell, dict):
            raise ValueError(f"{where} lacks the task {task!r}")
        scores[task] = {}
        for metric in PUBLISHED_METRICS:
            value = cell.get(metric)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where} lacks {task}.{metric} (got {value!r})")
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{where} has {task}.{metric} = {value!r}, not in [0, 1]")
            scores[task][metric] = float(value)
    parameters = entry.get("parameters")
    open_weights = entry.get("open_weights")
    note = entry.get("note")
    if parameters is not None and not isinstance(parameters, str):
        raise ValueError(f"{where} has a non-string parameters {parameters!r}")
    if open_weights is not None and not isinstance(open_weights, bool):
        raise ValueError(f"{where} has a non-boolean open_weights {open_weights!r}")
    if note is not None and not isinstance(note, str):
        raise ValueError(f"{where} has a non-string note {note!r}")
    return PublishedResult(model, release, scores, parameters, open_weights, note)


def _load() -> tuple[dict[str, Any], dict[str, list[PublishedResult]]]:
    """Parse and validate the packaged JSON: ``(source, {release: [rows]})``.

    Raises:
        ValueError: the file is not JSON, lacks a source or a release, repeats a model, or an
            entry lacks a task or metric or has a value outside [0, 1]; the message names it.
    """
    try:
        data = json.loads(_read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{RESOURCE} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{RESOURCE} is not a JSON object")
    source = data.get("source")
    releases = data.get("releases")
    if not isinstance(source, dict):
        raise ValueError(f"{RESOURCE} has no 'source' object")
    if not isinstance(releases, dict) or set(releases) != set(PUBLISHED_RELEASES):
        found = sorted(releases) if isinstance(releases, dict) else releases
        raise ValueError(f"{RESOURCE} 'releases' must be {list(PUBLISHED_RELEASES)}, got {found}")
    rows: dict[str, list[PublishedResult]] = {}
    for release in PUBLISHED_RELEASES:
        entries = releases[release]
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{RESOURCE}: {release} is not a non-empty list of models")
        rows[release] = [_check_entry(release, i, e) for i, e in enumerate(entries)]
        names = [r.model for r in rows[release]]
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"{RESOURCE}: {release} lists {twice} more than once")
    return source, rows


def published_source() -> dict[str, Any]:
    """Where the numbers come from: paper, arXiv id, table per release, protocol and notes."""
    return _load()[0]


def published_results(release: str) -> list[PublishedResult]:
    """The paper's rows for ``release`` (canonical name or alias), in the paper's order
    (descending Overall nDCG@10).

    Raises:
        ValueError: an unknown release (the message names the known ones), or a corrupt file.
    """
    name = canonical_release(release)
    return _load()[1][name]


def published_result(release: str, model: str) -> PublishedResult:
    """The paper's row for ``model`` on ``release``.

    Raises:
        KeyError: the paper reports no such model on that release.
    """
    for row in published_results(release):
        if row.model == model:
            return row
    known = ", ".join(r.model for r in published_results(release))
    raise KeyError(f"no published result for {model!r} on {release!r}; known: {known}")


def rank_among_published(release: str, overall_ndcg_at_10: float) -> tuple[int, int]:
    """``(rank, count)``: the 1-based place ``overall_ndcg_at_10`` would take among the paper's
    models on ``release``, and how many models the paper lists there.

    The rank is one more than the number of published models scoring strictly higher, so a
    score that ties a published one shares its place (0.637 on v2603 ties GemEmb-2: rank 1).
    Compare like with like: the paper's figures are rounded to three decimals.
    """
    if isinstance(overall_ndcg_at_10, bool) or not math.isfinite(overall_ndcg_at_10):
        raise ValueError(f"overall nDCG@10 must be a finite number, got {overall_ndcg_at_10!r}")
    rows = published_results(release)
    higher = sum(1 for r in rows if r.overall_ndcg_at_10 > overall_ndcg_at_10)
    return higher + 1, len(rows)


def published_reranking() -> dict[str, Any]:
    """The paper's reranking results (CoREB §4.3, Figure 8) as far as its text states them:
    ``release``, ``first_stage``, ``rerank_top_k``, ``metric`` (relative change of nDCG@10,
    percent), ``rows`` (``{"model", "t2c", "c2t", "c2c"}``, ``None`` where the text gives no
    number) and ``coreb_reranker`` (what the text says of the paper's own reranker).

    Raises:
        ValueError: the packaged file has no well-formed ``reranking`` entry.
    """
    data = json.loads(_read_text()).get("reranking")
    where = f"{RESOURCE}: reranking"
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError(f"{where} is missing or has no rows")
    for row in data["rows"]:
        for task in ("t2c", "c2t", "c2c"):
            value = row.get(task)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):  # fmt: skip
                raise ValueError(f"{where}: {row.get('model')!r} {task} is {value!r}")
    return data


def is_published_release(release: str) -> bool:
    """Whether the paper reports first-stage results for ``release`` (name or alias)."""
    try:
        canonical_release(release)
    except ValueError:
        return False
    return True


# the results' main-task row names, in the paper's column order
_ROW_NAMES = {"t2c": "T2C", "c2t": "C2T", "c2c": "C2C", "overall": "Overall"}


def beside_published(results: list[dict[str, Any]], release: str) -> str:
    """A Markdown table of the paper's rows for ``release`` and the recomputed ``results`` (the
    runner's results dicts of that release) by Overall nDCG@10: nDCG@10 and Recall@10 per
    task. The paper's rows say "reported by the paper (Table N)"; they were not recomputed."""
    source = published_source()
    name = canonical_release(release)
    table = source["tables"][name]
    entries: list[tuple[float, str, str, list[str]]] = []
    for row in published_results(name):
        cells = [f"{row.score(t, m):.3f}" for t in PUBLISHED_TASKS for m in PUBLISHED_METRICS]
        entries.append((row.overall_ndcg_at_10, markdown_text(row.model),
                        f"reported by the paper ({table})", cells))  # fmt: skip
    for res in results:
        rows = {r["name"]: r for r in res["rows"] if r["level"] != "subtask"}
        if "Overall" not in rows:
            continue
        cells = [
            f"{rows[_ROW_NAMES[t]][m]:.3f}" if _ROW_NAMES[t] in rows else "-"
            for t in PUBLISHED_TASKS
            for m in PUBLISHED_METRICS
        ]
        label = f"**{markdown_text(res['model'].get('name'))}**"
        entries.append((rows["Overall"]["ndcg_at_10"], label, "recomputed here", cells))
    entries.sort(key=lambda e: -e[0])
    views = " and ".join(
        sorted({str(res.get("c2t_canonical_corpus", "abbreviated")) for res in results})
    )
    views = f"the {views} view" if results else "no view"
    header = ["rank", "model", *(f"{_ROW_NAMES[t]} {m.split('_')[0]}@10"
              for t in PUBLISHED_TASKS for m in PUBLISHED_METRICS), "source"]  # fmt: skip
    lines = [
        f"Beside the paper's first-stage results on {name} ({table} of {source['paper']}; "
        "nDCG@10 and Recall@10, graded qrels at relevance level 2, Overall query-count "
        "weighted). The paper's rows are its printed figures, not recomputed here (the "
        "paper does not say which text view its c2t_canonical_retro_* ranked; the recomputed "
        f"rows rank {views}).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for rank, (_, label, where, cells) in enumerate(entries, 1):
        lines.append(f"| {rank} | {label} | " + " | ".join(cells) + f" | {where} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "PUBLISHED_METRICS",
    "PUBLISHED_RELEASES",
    "PUBLISHED_TASKS",
    "PublishedResult",
    "beside_published",
    "canonical_release",
    "is_published_release",
    "published_reranking",
    "published_result",
    "published_results",
    "published_source",
    "rank_among_published",
]


# ------------------------------------------------------------------------------------------
# MTEB's CoREB(v1): the reference rows of the PR that added the benchmark to mteb
# ------------------------------------------------------------------------------------------

MTEB_REFERENCE_RESOURCE = "mteb_reference.json"


@dataclass(frozen=True)
class MtebReferenceRow:
    """One model's six CoREB(v1) main scores (0-1) as mteb's PR prints them, and their mean."""

    model: str
    scores: dict[str, float] = field(hash=False)

    @property
    def mean(self) -> float:
        """The CoREB(v1) mean (:func:`coreb_toolkit.vocabulary.coreb_v1_mean`)."""
        from coreb_toolkit.vocabulary import coreb_v1_mean

        value = coreb_v1_mean(self.scores)
        if value is None:
            raise ValueError(f"{self.model}: not all six CoREB(v1) tasks have a score")
        return value


def mteb_reference() -> tuple[str, list[MtebReferenceRow]]:
    """``(source URL, rows)``: the CoREB(v1) rows of the mteb PR that added the six tasks
    (shipped as ``mteb_reference.json``, scores as printed, in percent, turned to 0-1)."""
    from coreb_toolkit.vocabulary import COREB_V1_TASKS

    text = resources.files("coreb_toolkit.benchmark").joinpath(MTEB_REFERENCE_RESOURCE)
    data = json.loads(text.read_text("utf-8"))
    rows = [
        MtebReferenceRow(row["model"], {t: row[t] / 100 for t in COREB_V1_TASKS})
        for row in data["rows"]
    ]
    return data["source"], rows
