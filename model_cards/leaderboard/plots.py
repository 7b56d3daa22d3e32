"""The parameter-efficiency plots of the CoREB paper (Figures 9 and 10, B.9 Figure 13).

* :func:`plot_parameter_efficiency` (Figure 9): Overall nDCG@10 against the parameter count on a
  log axis; circles for code-specialized models, squares for general-purpose ones; the Pareto
  frontier (no other model is both smaller or equal and better) dashed.
* :func:`plot_ndcg_per_billion` (Figure 10): nDCG@10 per billion parameters as bars, sorted
  descending, general-purpose bars hatched; with more than ``2 * keep`` models only the ``keep``
  most and ``keep`` least efficient are drawn, as in the paper.

Models without a parameter count (BM25; the paper's GemEmb-2) are left out and named in the
note :func:`plot_note` returns (Markdown, names escaped). Every model is labelled by its full
name (``org-a/coder`` and ``org-b/coder`` are two models), drawn as text
(:func:`coreb_toolkit.untrusted.plot_text`: a ``$`` starts no mathtext); each bar has its own
position, so that two labels that look alike still make two bars. matplotlib is imported
lazily with the Agg backend.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coreb_toolkit.untrusted import markdown_text, plot_text
from coreb_toolkit.vocabulary import MAIN_SCORE
from eval_metrics.aggregate import OVERALL
from model_cards.leaderboard.table import Leaderboard

KEEP = 4


@dataclass(frozen=True)
class SizedModel:
    """One point of the plots."""

    name: str
    parameters: int
    score: float
    code_specialized: bool

    @property
    def per_billion(self) -> float:
        return self.score / (self.parameters / 1e9)


def sized_models(board: Leaderboard) -> tuple[list[SizedModel], list[str]]:
    """The board's models with a known size, and the names of those without one."""
    sized, unknown = [], []
    for e in board.entries:
        meta = e.submission.meta
        row = next(r for r in e.figures.rows if r["level"] == "overall" and r["name"] == OVERALL)
        if meta.parameters is None:
            unknown.append(meta.name)
        else:
            sized.append(SizedModel(meta.name, meta.parameters, row[MAIN_SCORE],
                                    meta.code_specialized))  # fmt: skip
    return sized, unknown


def pareto_frontier(models: Sequence[SizedModel]) -> list[SizedModel]:
    """The models no other model beats with as few parameters, by size ascending."""
    frontier: list[SizedModel] = []
    best = float("-inf")
    for m in sorted(models, key=lambda m: (m.parameters, -m.score)):
        if m.score > best:
            frontier.append(m)
            best = m.score
    return frontier


def plot_note(board: Leaderboard) -> str | None:
    """What the plots leave out, or ``None`` when every model has a known size."""
    _, unknown = sized_models(board)
    if not unknown:
        return None
    names = ", ".join(markdown_text(name) for name in unknown)
    return (
        f"Left out of the parameter-efficiency plots (no parameter count): {names}"
        " (the paper leaves out GemEmb-2 for the same reason)."
    )


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError(
            "the leaderboard plots need matplotlib: pip install 'coreb-toolkit[leaderboard]'"
        ) from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, plt: Any, path: str | os.PathLike[str], unknown: Sequence[str]) -> Path:
    if unknown:  # said on the figure too, so that a copied PNG does not hide who is missing
        names = plot_text(", ".join(unknown))
        fig.text(0.01, 0.01, f"Not shown (no parameter count): {names}", fontsize=7,
                 color="dimgray")  # fmt: skip
    fig.tight_layout(rect=(0, 0.04 if unknown else 0, 1, 1))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    plt.close(fig)
    return target


def plot_parameter_efficiency(board: Leaderboard, path: str | os.PathLike[str]) -> Path | None:
    """Figure 9 as a PNG at ``path``; ``None`` (nothing written) when no model has a size."""
    models, unknown = sized_models(board)
    if not models:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for code, marker, label in ((True, "o", "Code-specialized"), (False, "s", "General-purpose")):
        group = [m for m in models if m.code_specialized is code]
        if group:
            ax.scatter([m.parameters for m in group], [m.score for m in group], marker=marker,
                       s=60, label=label, zorder=3)  # fmt: skip
    for m in models:
        ax.annotate(plot_text(m.name), (m.parameters, m.score), textcoords="offset points",
                    xytext=(5, 5), fontsize=8)  # fmt: skip
    frontier = pareto_frontier(models)
    ax.plot([m.parameters for m in frontier], [m.score for m in frontier], "k--", lw=1,
            label="Pareto frontier", zorder=2)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("Parameters (log scale)")
    ax.set_ylabel("Overall nDCG@10")
    ax.set_title("Overall nDCG@10 vs. parameter count")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, plt, path, unknown)


def plot_ndcg_per_billion(
    board: Leaderboard, path: str | os.PathLike[str], *, keep: int = KEEP
) -> Path | None:
    """Figure 10 as a PNG at ``path``; ``None`` (nothing written) when no model has a size."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ValueError(f"keep must be a positive int, got {keep!r}")
    models, unknown = sized_models(board)
    if not models:
        return None
    ranked = sorted(models, key=lambda m: m.per_billion, reverse=True)
    if len(ranked) > 2 * keep:  # the paper's four most and four least efficient
        ranked = ranked[:keep] + ranked[-keep:]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(ranked) + 1.5))
    positions = list(range(len(ranked)))  # not categories: alike labels would share one bar
    bars = ax.barh(positions, [m.per_billion for m in ranked], color="tab:blue",
                   edgecolor="black")  # fmt: skip
    ax.set_yticks(positions, [plot_text(m.name) for m in ranked])
    for bar, m in zip(bars, ranked, strict=True):
        if not m.code_specialized:
            bar.set_hatch("//")
        ax.annotate(f"{m.per_billion:.3g}", (bar.get_width(), bar.get_y() + bar.get_height() / 2),
                    xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlabel("nDCG@10 per billion parameters (hatched: general-purpose)")
    ax.set_title("Parameter efficiency")
    return _save(fig, plt, path, unknown)


__all__ = [
    "KEEP",
    "SizedModel",
    "pareto_frontier",
    "plot_ndcg_per_billion",
    "plot_note",
    "plot_parameter_efficiency",
    "sized_models",
]
