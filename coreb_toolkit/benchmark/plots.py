"""The CoREB paper's first-stage figures, drawn from benchmark results JSONs.

Each input is one results dict per (model, release), as the first-stage runner writes it::

    {"model": {"name": ...}, "release": ..., "no_positive_policy": ..., "relevance_level": ...,
     "rows": [AggregateRow.to_dict(), ...]}

with rows per subtask, per main task and Overall (:func:`eval_metrics.aggregate`). Every plot
takes a list of such dicts (several models, one release) and writes a PNG:

* :func:`plot_ndcg_curves` — nDCG@k per main task (CoREB Figure 4);
* :func:`plot_language_heatmap` — nDCG@10 by target language (CoREB Figure 6);
* :func:`plot_intrusion` — hard-negative intrusion rate per task (CoREB Figure 7);
* :func:`plot_rerank_delta` — first stage vs reranked nDCG@10 per task (CoREB Figure 8), for
  reranked results (those carrying ``first_stage_rows``, written by the runner's second stage);
* :func:`plot_all` — every one of them that has data;
* :func:`plot_qualcode` — QPA per dimension and MCA per k of QualCode results.
* :func:`plot_diversity` — per-query diversity of training variants per group (SynH-Rank
  Figure 3), from ``trainers.quality_data.diversity`` reports.

Models are ordered as in the paper's Figure 7: by Overall nDCG@10, best first, ties by name.
Figures are drawn on a private Agg canvas (no pyplot, no display, global backend untouched)
under matplotlib's default style, and PNGs are written without a ``Software`` stamp, so the
same input gives the same bytes.

References:
    CoREB §4.2 (Analyses I, IV, V), Figures 4-7; §4.3, Figure 8.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from coreb_toolkit.vocabulary import (
    LANGUAGE_LABELS,
    MAIN_TASKS,
    MC_CONDITION_COUNTS,
    QUALCODE_DIMENSIONS,
)
from eval_metrics.aggregate import OVERALL

if TYPE_CHECKING:
    from matplotlib.figure import Figure

logger = logging.getLogger(__name__)

# The CoREB main tasks in the paper's order, with the panel titles of its figures.
TASKS: dict[str, str] = {t.label: t.title for t in MAIN_TASKS.values()}
NDCG_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
# Language suffixes of CoREB subtask names (protocol §1.2), with their axis labels.
LANGUAGES: dict[str, str] = dict(LANGUAGE_LABELS)
# Figure 6 leaves out the short-query Search subtask, on which every model is near zero.
DEFAULT_EXCLUDED_VARIANTS: frozenset[str] = frozenset({"search"})

# t2c suffixes constrain the code to retrieve; c2t suffixes name the query code's language.
_LANGUAGE_ROLE = {"t2c": "target", "c2t": "query", "c2c": "anchor"}

DPI = 150
_PNG_METADATA: dict[str, str | None] = {"Software": None}
_LEVELS = ("subtask", "task", "overall")
_EXPECTED = "rows as written by eval_metrics.aggregate(...) -> AggregateRow.to_dict()"


@dataclass(frozen=True)
class _Result:
    """One model's validated results: its rows keyed by (level, name)."""

    index: int
    model: str
    rows: dict[tuple[str, str], Mapping[str, Any]]

    def row(self, level: str, name: str, keys: Sequence[str]) -> Mapping[str, Any] | None:
        """The row, or None when absent; ValueError when present but missing ``keys``."""
        row = self.rows.get((level, name))
        if row is None:
            return None
        missing = [k for k in keys if k not in row]
        if missing:
            raise ValueError(
                f"results[{self.index}] (model {self.model!r}): the {level} row {name!r} lacks "
                f"{missing}; expected {_EXPECTED}"
            )
        return row


def _as_dicts(results: Any) -> Any:
    """A list of results objects (:mod:`coreb_toolkit.benchmark.results`) as results dicts;
    anything else as it is (for :func:`_validate` to judge)."""
    if isinstance(results, Sequence) and not isinstance(results, (str, bytes, Mapping)):
        return [res.to_dict() if hasattr(res, "to_dict") else res for res in results]
    return results


def _validate(results: Sequence[Mapping[str, Any]]) -> list[_Result]:
    """Check the results list and return its models ordered as in CoREB Figure 7."""
    if isinstance(results, Mapping) or not isinstance(results, Sequence):
        raise TypeError(
            f"results must be a list of results dicts (one per model), got "
            f"{type(results).__name__}; wrap a single dict in a list"
        )
    if not results:
        raise ValueError("results is empty: give at least one model's results dict")
    parsed: list[_Result] = []
    shared: dict[str, object] = {}
    for i, res in enumerate(results):
        if not isinstance(res, Mapping):
            raise TypeError(f"results[{i}] must be a dict, got {type(res).__name__}")
        missing = [k for k in ("model", "release", "rows") if k not in res]
        if missing:
            raise ValueError(
                f"results[{i}] lacks {missing}; expected a first-stage results dict with "
                f"'model' ({{'name': ...}}), 'release' and 'rows'"
            )
        model = res["model"]
        name = model.get("name") if isinstance(model, Mapping) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"results[{i}]['model'] lacks a 'name' string, got {model!r}")
        for key in ("release", "no_positive_policy", "relevance_level", "c2t_canonical_corpus"):
            # results written before the option existed ranked the abbreviated texts
            value = res.get(key, "abbreviated" if key == "c2t_canonical_corpus" else None)
            if i and value != shared[key]:
                raise ValueError(
                    f"results[{i}] (model {name!r}) has {key}={value!r} but results[0] has "
                    f"{shared[key]!r}; plot models evaluated on one release with one protocol"
                )
            shared[key] = value
        rows: dict[tuple[str, str], Mapping[str, Any]] = {}
        raw_rows = res["rows"]
        if not isinstance(raw_rows, Sequence) or isinstance(raw_rows, (str, bytes)):
            raise TypeError(f"results[{i}]['rows'] must be a list, got {type(raw_rows).__name__}")
        for j, row in enumerate(raw_rows):
            if not isinstance(row, Mapping) or "level" not in row or "name" not in row:
                raise ValueError(
                    f"results[{i}]['rows'][{j}] (model {name!r}) lacks 'level' or 'name'; "
                    f"expected {_EXPECTED}"
                )
            if row["level"] not in _LEVELS:
                raise ValueError(
                    f"results[{i}]['rows'][{j}] has level {row['level']!r}; expected one of "
                    f"{_LEVELS}"
                )
            key = (row["level"], row["name"])
            if key in rows:
                raise ValueError(
                    f"results[{i}] (model {name!r}) repeats the {key[0]} row {key[1]!r}"
                )
            rows[key] = row
        parsed.append(_Result(i, name, rows))
    names = [r.model for r in parsed]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"model names must be unique across results, repeated: {duplicated}")

    def overall(r: _Result) -> float:
        row = r.row("overall", OVERALL, ["ndcg_at_10"])
        if row is None:
            raise ValueError(
                f"results[{r.index}] (model {r.model!r}) has no overall row {OVERALL!r}; models "
                f"are ordered by it (CoREB Figure 7); expected {_EXPECTED}"
            )
        return float(row["ndcg_at_10"])

    return sorted(parsed, key=lambda r: (-overall(r), r.model))


def _release(results: Sequence[Mapping[str, Any]]) -> str:
    return str(results[0]["release"])


# --------------------------------------------------------------------------------------------
# Pure data helpers (no matplotlib)
# --------------------------------------------------------------------------------------------


def ndcg_curves(
    results: Sequence[Mapping[str, Any]],
) -> tuple[list[str], dict[str, dict[str, list[float]]]]:
    """nDCG@k (k in :data:`NDCG_CUTOFFS`) per main task and model, the data of CoREB Figure 4.

    Returns:
        ``(models, curves)``: the models in plotting order and ``{task: {model: [nDCG@1, @3,
        @5, @10]}}`` for the tasks of :data:`TASKS` that at least one model has a row for; a
        model without that task's row is absent from its dict.
    """
    results = _as_dicts(results)
    parsed = _validate(results)
    keys = [f"ndcg_at_{k}" for k in NDCG_CUTOFFS]
    curves: dict[str, dict[str, list[float]]] = {}
    for task in TASKS:
        per_model = {}
        for r in parsed:
            row = r.row("task", task, keys)
            if row is not None:
                per_model[r.model] = [float(row[k]) for k in keys]
        if per_model:
            curves[task] = per_model
    return [r.model for r in parsed], curves


def _language_subtask(
    level: str, name: str, task: str, variants: Sequence[str] | None
) -> tuple[str, str] | None:
    """``t2c_full_retro_python`` -> ``("full_retro", "python")`` when that subtask of ``task``
    is pooled for the variants asked (None: all but search); None otherwise."""
    prefix, _, rest = name.partition("_")
    variant, _, language = rest.rpartition("_")
    if level != "subtask" or prefix != task or not variant or language not in LANGUAGES:
        return None
    if variant in DEFAULT_EXCLUDED_VARIANTS if variants is None else variant not in variants:
        return None
    return variant, language


def language_matrix(
    results: Sequence[Mapping[str, Any]],
    task: str = "t2c",
    variants: Sequence[str] | None = None,
) -> tuple[list[str], list[str], np.ndarray]:
    """Per-language nDCG@10, models x languages, the data of CoREB Figures 5-6.

    For each model and language suffix, the subtasks ``{task}_{variant}_{language}`` are pooled
    weighted by their query counts (the mean over all their queries, as the paper's per-task
    figures are, CoREB §4.1): ``sum(n_queries * ndcg_at_10) / sum(n_queries)``.

    Args:
        results: results dicts, one per model, of one release.
        task: subtask prefix, ``"t2c"`` or ``"c2t"`` (``"c2c"`` subtasks carry no language
            suffix: Figure 5's anchor-language breakdown needs per-query data).
        variants: the variants to pool, e.g. ``("canonical_retro", "full_retro")``. Default:
            every variant but ``search``, as Figure 6 ("excluding Search subtask").

    Returns:
        ``(models, languages, matrix)``: models in plotting order, the language suffixes of
        :data:`LANGUAGES`, and a float array of shape ``(len(models), len(languages))`` holding
        NaN where a model has no query for that language.

    Raises:
        ValueError: on malformed results, or when no model has any matching subtask.
    """
    results = _as_dicts(results)
    if task not in {t.lower() for t in TASKS}:
        raise ValueError(f"task must be one of {[t.lower() for t in TASKS]}, got {task!r}")
    if variants is not None and (isinstance(variants, str) or not variants):
        raise ValueError(
            f"variants must be a non-empty list of subtask variants such as "
            f"['canonical_retro', 'full_retro'], or None for all but search; got {variants!r}"
        )
    parsed = _validate(results)
    languages = list(LANGUAGES)
    matrix = np.full((len(parsed), len(languages)), np.nan)
    found = False
    for i, r in enumerate(parsed):
        weight = dict.fromkeys(languages, 0)
        weighted: dict[str, list[float]] = {language: [] for language in languages}
        for level, name in sorted(r.rows):
            parts = _language_subtask(level, name, task, variants)
            if parts is None:
                continue
            row = r.row(level, name, ["n_queries", "ndcg_at_10"])
            if row is None:
                continue
            found = True
            n = int(row["n_queries"])
            weight[parts[1]] += n
            weighted[parts[1]].append(n * float(row["ndcg_at_10"]))
        for j, language in enumerate(languages):
            if weight[language]:
                matrix[i, j] = math.fsum(weighted[language]) / weight[language]
    if not found:
        chosen = "all but search" if variants is None else list(variants)
        raise ValueError(
            f"no subtask named {task}_<variant>_<language> (variants: {chosen}; languages: "
            f"{languages}) in any of the {len(parsed)} results; nothing to plot for {task!r}"
        )
    return [r.model for r in parsed], languages, matrix


def intrusion_table(
    results: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Hard-negative intrusion rate per model and main task, the data of CoREB Figure 7.

    Returns:
        ``(models, tasks, rates, eligible)``: models in plotting order, the tasks of
        :data:`TASKS` that at least one model has a row for, the rates (models x tasks, NaN
        where the rate is null — no query had both a positive and a hard negative in the top
        10 — or the model lacks the task) and the eligible-query counts (0 where absent).
    """
    results = _as_dicts(results)
    parsed = _validate(results)
    keys = ["hard_negative_intrusion_rate", "n_intrusion_eligible"]
    tasks = [t for t in TASKS if any(("task", t) in r.rows for r in parsed)]
    rates = np.full((len(parsed), len(tasks)), np.nan)
    eligible = np.zeros((len(parsed), len(tasks)), dtype=int)
    for i, r in enumerate(parsed):
        for j, task in enumerate(tasks):
            row = r.row("task", task, keys)
            if row is None:
                continue
            eligible[i, j] = int(row["n_intrusion_eligible"])
            if row["hard_negative_intrusion_rate"] is not None:
                rates[i, j] = float(row["hard_negative_intrusion_rate"])
    return [r.model for r in parsed], tasks, rates, eligible


def rerank_delta_table(
    results: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """First-stage and reranked nDCG@10 per main task and Overall, the data of CoREB Figure 8.

    Only the reranked results (those with ``first_stage_rows``) count; first-stage-only
    results in the same list (a comparison) are skipped.

    Returns:
        ``(models, tasks, first_stage, reranked)``: the reranked models in plotting order, the
        tasks of :data:`TASKS` present plus ``Overall``, and two models x tasks arrays of
        nDCG@10 (NaN where a stage lacks the row).

    Raises:
        ValueError: on malformed results, or when no result carries ``first_stage_rows``.
    """
    results = _as_dicts(results)
    parsed = _validate(results)
    chosen = [r for r in parsed if results[r.index].get("first_stage_rows") is not None]
    if not chosen:
        raise ValueError(
            "no reranked result: the rerank plot needs results with 'first_stage_rows', as "
            "evaluate_model(..., reranker=...) writes them"
        )
    firsts: dict[int, dict[tuple[str, str], Mapping[str, Any]]] = {}
    for r in chosen:
        raw = results[r.index]["first_stage_rows"]
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise TypeError(
                f"results[{r.index}]['first_stage_rows'] must be a list, got {type(raw).__name__}"
            )
        firsts[r.index] = {}
        for j, row in enumerate(raw):
            if not isinstance(row, Mapping) or "level" not in row or "name" not in row:
                raise ValueError(
                    f"results[{r.index}]['first_stage_rows'][{j}] lacks 'level' or 'name'; "
                    f"expected {_EXPECTED}"
                )
            firsts[r.index][(row["level"], row["name"])] = row
    keys = [("task", t) for t in TASKS] + [("overall", OVERALL)]
    keys = [k for k in keys if any(k in r.rows or k in firsts[r.index] for r in chosen)]
    before = np.full((len(chosen), len(keys)), np.nan)
    after = np.full((len(chosen), len(keys)), np.nan)
    for i, r in enumerate(chosen):
        for j, (level, name) in enumerate(keys):
            row = r.row(level, name, ["ndcg_at_10"])
            if row is not None:
                after[i, j] = float(row["ndcg_at_10"])
            first = firsts[r.index].get((level, name))
            if first is not None:
                if "ndcg_at_10" not in first:
                    raise ValueError(
                        f"results[{r.index}] (model {r.model!r}): the first-stage {level} row "
                        f"{name!r} lacks 'ndcg_at_10'; expected {_EXPECTED}"
                    )
                before[i, j] = float(first["ndcg_at_10"])
    return [r.model for r in chosen], [name for _, name in keys], before, after


# --------------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------------


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as err:  # pragma: no cover - matplotlib is in the dev extra
        raise ImportError(
            "coreb_toolkit.benchmark.plots needs matplotlib: pip install coreb-toolkit[plot]"
        ) from err
    return matplotlib


def _new_figure(width: float, height: float) -> Figure:
    """A figure on its own Agg canvas: no pyplot state, no display, global backend untouched."""
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, out_path: str | Path) -> Path:
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" stamp (it carries the matplotlib version); PNGs get no timestamp from Agg.
    fig.savefig(path, format="png", dpi=DPI, metadata=_PNG_METADATA, bbox_inches="tight")
    logger.info("wrote %s", path)
    return path


def _style() -> Any:
    """matplotlib's default style, so a user's matplotlibrc cannot change the bytes written."""
    _matplotlib()
    import matplotlib.style

    return matplotlib.style.context("default")


def _colors(n: int) -> list[Any]:
    cmap = _matplotlib().colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def plot_ndcg_curves(results: Sequence[Mapping[str, Any]], out_path: str | Path) -> Path:
    """nDCG@k against k in {1, 3, 5, 10}, one panel per main task, one line per model.

    Mirrors CoREB Figure 4 (nDCG@k per task, v202603), which draws the mean over models; here
    every model gets its own line and the mean over models is the dashed black line. Panels
    follow the paper's task order (T2C, C2T, C2C), for the tasks present.

    Returns:
        The PNG's path.

    Raises:
        ValueError: on malformed results, or when no model has a T2C/C2T/C2C task row.
    """
    results = _as_dicts(results)
    models, curves = ndcg_curves(results)
    if not curves:
        raise ValueError(
            f"no task row for any of {list(TASKS)} in the results; nDCG@k curves need the "
            f"per-main-task rows (aggregate(..., group_by_task=True))"
        )
    colors = dict(zip(models, _colors(len(models)), strict=True))
    markers = "osD^v<>ph*"
    with _style():
        fig = _new_figure(3.6 * len(curves) + 0.4, 3.6)
        axes = fig.subplots(1, len(curves), squeeze=False, sharey=True)[0]
        for ax, (task, per_model) in zip(axes, curves.items(), strict=True):
            for m, model in enumerate(models):
                if model in per_model:
                    ax.plot(
                        NDCG_CUTOFFS,
                        per_model[model],
                        marker=markers[m % len(markers)],
                        color=colors[model],
                        label=model,
                        linewidth=1.2,
                        markersize=4,
                    )
            if len(per_model) > 1:
                mean = np.mean(list(per_model.values()), axis=0)
                ax.plot(NDCG_CUTOFFS, mean, "k--", linewidth=2.0, label="mean over models")
            ax.set_title(f"{TASKS[task]} ({task})")
            ax.set_xticks(NDCG_CUTOFFS)
            ax.set_xlabel("k")
            ax.set_ylim(0.0, 1.0)
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("nDCG@k")
        handles, labels = {}, []
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                if label not in handles:
                    handles[label] = handle
                    labels.append(label)
        fig.legend(
            [handles[label] for label in labels],
            labels,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
            fontsize="small",
            frameon=False,
        )
        fig.suptitle(f"nDCG@k per task ({_release(results)})")
        fig.tight_layout()
        return _save(fig, out_path)


def plot_language_heatmap(
    results: Sequence[Mapping[str, Any]],
    out_path: str | Path,
    task: str = "t2c",
    variants: Sequence[str] | None = None,
) -> Path:
    """nDCG@10 by target language: a models x languages heatmap, values written in the cells.

    Mirrors CoREB Figure 6 (text-to-code nDCG@10 by target language, Search subtask excluded)
    and, for ``task="c2t"``, the same breakdown of code-to-text; Figure 5 (code-to-code by
    anchor language) needs per-query anchor languages, which results rows do not carry. Each
    cell pools the task's ``{variant}_{language}`` subtasks weighted by query count
    (:func:`language_matrix`); a cell without queries is grey and marked "n/a". The colour
    scale is fixed to [0, 1] so heatmaps of different releases compare.

    Returns:
        The PNG's path.
    """
    results = _as_dicts(results)
    models, languages, matrix = language_matrix(results, task, variants)
    cmap = _matplotlib().colormaps["viridis"].with_extremes(bad="lightgrey")
    with _style():
        fig = _new_figure(1.0 * len(languages) + 2.6, 0.42 * len(models) + 1.5)
        ax = fig.add_subplot()
        image = ax.imshow(
            np.ma.masked_invalid(matrix), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto"
        )
        ax.set_xticks(range(len(languages)), [LANGUAGES[lang] for lang in languages])
        ax.set_yticks(range(len(models)), models)
        for i in range(len(models)):
            for j in range(len(languages)):
                value = matrix[i, j]
                if np.isnan(value):
                    ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="dimgrey")
                else:
                    color = "white" if value < 0.5 else "black"
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color=color)
        fig.colorbar(image, ax=ax, label="nDCG@10")
        pooled = "all but search" if variants is None else ", ".join(variants)
        ax.set_title(
            f"{task.upper()} nDCG@10 by {_LANGUAGE_ROLE[task]} language ({_release(results)})\n"
            f"variants pooled by query count: {pooled}",
            fontsize=9,
        )
        fig.tight_layout()
        return _save(fig, out_path)


def plot_intrusion(results: Sequence[Mapping[str, Any]], out_path: str | Path) -> Path:
    """Hard-negative intrusion rate (%) per model, one bar per main task.

    Mirrors CoREB Figure 7: among queries with both a positive and a hard negative in the top
    10, the share where a hard negative ranks above the best positive (higher is worse);
    models sorted by Overall nDCG@10. Each bar is annotated with its eligible-query count
    ``n``; a null rate (no eligible query) or a missing task is drawn as "n/a".

    Returns:
        The PNG's path.

    Raises:
        ValueError: on malformed results, or when no model has any non-null task rate.
    """
    results = _as_dicts(results)
    models, tasks, rates, eligible = intrusion_table(results)
    if not tasks or np.isnan(rates).all():
        raise ValueError(
            f"no hard-negative intrusion rate to plot: the results need task rows for "
            f"{list(TASKS)} with a non-null 'hard_negative_intrusion_rate'"
        )
    colors = _colors(len(tasks))
    width = 0.8 / len(tasks)
    with _style():
        fig = _new_figure(max(6.0, 0.9 * len(tasks) * len(models) / 2 + 2.0), 4.2)
        ax = fig.add_subplot()
        for j, task in enumerate(tasks):
            xs = np.arange(len(models)) + (j - (len(tasks) - 1) / 2) * width
            heights = np.nan_to_num(rates[:, j] * 100, nan=0.0)
            ax.bar(xs, heights, width, color=colors[j], label=TASKS[task])
            for x, height, rate, n in zip(xs, heights, rates[:, j], eligible[:, j], strict=True):
                text = f"n/a (n={n})" if np.isnan(rate) else f"{height:.0f}% (n={n})"
                ax.text(x, height + 1.0, text, ha="center", va="bottom", rotation=90, fontsize=7)
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_ylim(0, 135)  # headroom for the rotated labels above a 100% bar
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("Hard-negative intrusion rate (%)")
        ax.set_title(f"Hard-negative intrusion in the top 10 ({_release(results)})")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        return _save(fig, out_path)


def plot_rerank_delta(results: Sequence[Mapping[str, Any]], out_path: str | Path) -> Path:
    """First-stage vs reranked nDCG@10 per main task and Overall, the delta written above.

    Mirrors CoREB Figure 8 (the change in nDCG@10 when a reranker rescores the first stage's
    top 128): per task a pair of bars per reranked model, the first stage hatched and light,
    the reranked solid, annotated with the signed difference. ``results`` may mix first-stage
    and reranked results (a comparison); only the reranked ones are drawn
    (:func:`rerank_delta_table`).

    Returns:
        The PNG's path.
    """
    results = _as_dicts(results)
    models, tasks, before, after = rerank_delta_table(results)
    by_name = {str(res["model"]["name"]): res for res in results}
    colors = _colors(len(models))
    width = 0.8 / (2 * len(models))
    with _style():
        fig = _new_figure(max(6.0, 1.1 * len(tasks) * len(models) + 2.0), 4.2)
        ax = fig.add_subplot()
        for i, model in enumerate(models):
            offset = (2 * i - (2 * len(models) - 1) / 2) * width
            xs = np.arange(len(tasks)) + offset
            first = np.nan_to_num(before[i], nan=0.0)
            second = np.nan_to_num(after[i], nan=0.0)
            first_stage = by_name[model].get("first_stage", {}).get("model", "first stage")
            ax.bar(xs, first, width, color=colors[i], alpha=0.35, hatch="//",
                   edgecolor=colors[i], label=f"{first_stage} (first stage)")  # fmt: skip
            ax.bar(xs + width, second, width, color=colors[i], label=f"{model} (reranked)")
            for x, b, a in zip(xs + width, before[i], after[i], strict=True):
                text = "n/a" if np.isnan(a) or np.isnan(b) else f"{a - b:+.3f}"
                top = 0.0 if np.isnan(a) else a
                top = top if np.isnan(b) else max(top, b)
                ax.text(x - width / 2, top + 0.02, text, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(tasks)), tasks)
        ax.set_ylim(0.0, 1.15)
        ax.set_yticks(np.linspace(0.0, 1.0, 6))
        ax.set_ylabel("nDCG@10")
        ax.set_title(f"Reranking: first stage vs reranked nDCG@10 ({_release(results)})")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small", frameon=False)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        return _save(fig, out_path)


def plot_all(results: Sequence[Mapping[str, Any]], out_dir: str | Path) -> list[Path]:
    """Write every CoREB figure the results have data for into ``out_dir``.

    Files: ``ndcg_at_k.png`` (Figure 4), ``language_t2c.png`` (Figure 6) and
    ``language_c2t.png``, ``intrusion.png`` (Figure 7), and ``rerank_delta.png`` (Figure 8)
    when a result is reranked (has ``first_stage_rows``). A figure without data (no task rows,
    no language-suffixed subtasks of a task, only null intrusion rates) is skipped and logged.
    Input errors (an empty list, rows lacking keys) still raise ``ValueError``.

    Returns:
        The written paths, in the order above.
    """
    results = _as_dicts(results)
    parsed = _validate(results)  # fail on malformed input before writing anything
    out = Path(out_dir)
    written: list[Path] = []
    _, curves = ndcg_curves(results)
    if curves:
        written.append(plot_ndcg_curves(results, out / "ndcg_at_k.png"))
    else:
        logger.info("skipping nDCG@k curves: no T2C/C2T/C2C task rows")
    for task in ("t2c", "c2t"):
        if any(_language_subtask(lv, name, task, None) for r in parsed for lv, name in r.rows):
            written.append(plot_language_heatmap(results, out / f"language_{task}.png", task))
        else:
            logger.info("skipping the %s language heatmap: no language-suffixed subtasks", task)
    _, tasks, rates, _ = intrusion_table(results)
    if tasks and not np.isnan(rates).all():
        written.append(plot_intrusion(results, out / "intrusion.png"))
    else:
        logger.info("skipping the intrusion plot: no non-null task intrusion rate")
    if any(res.get("first_stage_rows") is not None for res in results):
        written.append(plot_rerank_delta(results, out / "rerank_delta.png"))
    return written


def plot_qualcode(results: Sequence[Mapping[str, Any]], out_path: str | Path) -> Path:
    """Bars: QPA per dimension and MCA per k for each scorer, with the 0.5 chance line."""
    results = _as_dicts(results)
    labels = [
        *(f"QPA {d}" for d in QUALCODE_DIMENSIONS),
        *(f"MCA k={k}" for k in MC_CONDITION_COUNTS),
    ]
    fig = _new_figure(9, 3.6)
    ax = fig.add_subplot(1, 1, 1)
    width = 0.8 / max(1, len(results))
    colors = _colors(len(results))
    for i, res in enumerate(results):
        values = [res["qualcode"].get(d, {}).get("qpa") for d in QUALCODE_DIMENSIONS]
        values += [res["mc"].get(f"k={k}", {}).get("mca") for k in MC_CONDITION_COUNTS]
        xs = [j + (i - (len(results) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(
            xs,
            [v if v is not None else 0 for v in values],
            width,
            label=str(res["scorer"].get("name")),
            color=colors[i],
        )
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(range(len(labels)), labels, rotation=20)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (ties lose)")
    ax.set_title("QualCode QPA and MC-QualCode MCA")
    ax.legend(fontsize=8)
    return _save(fig, out_path)


def plot_training_curves(log_history: Sequence[Mapping[str, Any]], out_path: str | Path) -> Path:
    """Training loss (and eval loss where logged) against the step, the learning rate beside:
    the curves of a ``transformers.Trainer``'s ``state.log_history``.

    Raises:
        ValueError: when the history holds no logged loss.
    """
    train = [(e["step"], e["loss"]) for e in log_history if "loss" in e and "step" in e]
    evals = [(e["step"], e["eval_loss"]) for e in log_history if "eval_loss" in e]
    rates = [(e["step"], e["learning_rate"]) for e in log_history if "learning_rate" in e]
    if not train and not evals:
        raise ValueError("the training log holds no loss to plot (was logging_steps too large?)")
    with _style():
        fig = _new_figure(10.0, 3.6)
        loss_ax, lr_ax = fig.subplots(1, 2)
        if train:
            loss_ax.plot(*zip(*train, strict=True), marker=".", label="train loss")
        if evals:
            loss_ax.plot(*zip(*evals, strict=True), marker="o", label="eval loss")
        loss_ax.set_xlabel("step")
        loss_ax.set_ylabel("loss (answer token)")
        loss_ax.legend()
        loss_ax.grid(alpha=0.3)
        if rates:
            lr_ax.plot(*zip(*rates, strict=True), color="tab:green")
        lr_ax.set_xlabel("step")
        lr_ax.set_ylabel("learning rate")
        lr_ax.grid(alpha=0.3)
        return _save(fig, out_path)


def plot_diversity(reports: Mapping[str, Mapping[str, Any]], out_path: str | Path) -> Path:
    """Per-query syntactic and semantic diversity per group of variants (SynH-Rank Figure 3).

    ``reports`` is ``{group: report}`` with each report a
    ``trainers.quality_data.diversity.DiversityReport.to_dict()`` (``per_query``: ``{query:
    {"syntactic": ..., "semantic": ...}}``), e.g. the ``groups`` of ``compare_diversity``. One
    panel per distance: per group a box of its per-query means, the queries as points, the mean
    over queries as a diamond, written under the group's name with the query count.

    Raises:
        ValueError: on no groups, or a group without ``per_query`` values.
    """
    if not isinstance(reports, Mapping) or not reports:
        raise ValueError("reports must be a non-empty mapping {group: DiversityReport.to_dict()}")
    embedders = {str(r.get("embedder")) for r in reports.values() if isinstance(r, Mapping)}
    embedder = embedders.pop() if len(embedders) == 1 else "embeddings"
    panels = {"syntactic": "1 - CodeBLEU", "semantic": f"1 - cosine, {embedder}"}
    data: dict[str, dict[str, list[float]]] = {}
    for group, report in reports.items():
        per_query = report.get("per_query") if isinstance(report, Mapping) else None
        if not isinstance(per_query, Mapping) or not per_query:
            raise ValueError(
                f"group {group!r} has no per_query diversity to plot; expected "
                f"DiversityReport.to_dict() with at least one measured query"
            )
        for query, row in per_query.items():
            if not isinstance(row, Mapping) or not panels.keys() <= row.keys():
                raise ValueError(
                    f"group {group!r}: per_query[{query!r}] lacks 'syntactic' or 'semantic'; "
                    f"expected DiversityReport.to_dict()"
                )
        data[str(group)] = {k: [float(row[k]) for row in per_query.values()] for k in panels}
    colors = _colors(len(data))
    rng = np.random.default_rng(0)  # fixed jitter: the same input gives the same bytes
    with _style():
        fig = _new_figure(1.6 * len(data) + 4.0, 3.8)
        for ax, (key, title) in zip(fig.subplots(1, 2), panels.items(), strict=True):
            values = [d[key] for d in data.values()]
            ax.boxplot(values, widths=0.5, showfliers=False)
            for i, (vs, color) in enumerate(zip(values, colors, strict=True), start=1):
                xs = i + rng.uniform(-0.12, 0.12, len(vs))
                ax.scatter(xs, vs, s=12, color=color, alpha=0.7, zorder=3)
                ax.scatter([i], [np.mean(vs)], marker="D", color="black", zorder=4)
            labels = [
                f"{g}\nmean {np.mean(v):.3f} (n={len(v)})"
                for g, v in zip(data, values, strict=True)
            ]
            ax.set_xticks(range(1, len(data) + 1), labels, fontsize=8)
            ax.set_title(f"{key.capitalize()} distance ({title})", fontsize=10)
            ax.set_ylabel(f"mean pairwise {key} distance per query", fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle("Intra-query diversity of the code variants", fontsize=11)
        fig.tight_layout()
        return _save(fig, out_path)


__all__ = [
    "LANGUAGES",
    "NDCG_CUTOFFS",
    "TASKS",
    "intrusion_table",
    "language_matrix",
    "ndcg_curves",
    "plot_all",
    "plot_diversity",
    "plot_intrusion",
    "plot_language_heatmap",
    "plot_ndcg_curves",
    "plot_qualcode",
    "plot_rerank_delta",
    "plot_training_curves",
    "rerank_delta_table",
]
