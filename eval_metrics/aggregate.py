"""Aggregation of per-subtask evaluations: per subtask, per main task, Overall (protocol §2).

Every figure is a mean over queries and carries the number of queries behind it. A main task's
figure and Overall are query-count-weighted: the mean over all their queries pooled, not the mean
of subtask means (CoREB §4.1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coreb_toolkit import vocabulary
from eval_metrics.measures import MEASURES
from eval_metrics.retrieval import INTRUSION_KEY, RetrievalEvaluation

MAIN_TASKS: dict[str, str] = {
    **{key: task.label for key, task in vocabulary.MAIN_TASKS.items()},
    vocabulary.QUALCODE_TASK: vocabulary.QUALCODE_LABEL,
}
"""Subtask name prefix -> the label of its row in a table (``t2c`` -> ``T2C``): the main tasks
of :mod:`coreb_toolkit.vocabulary` (CoREB §3) and QualCode (SynH-Rank §3)."""
OVERALL = "Overall"
TABLE_COLUMNS: tuple[str, ...] = (
    vocabulary.MAIN_SCORE,
    MEASURES["recall"].key(10),
    MEASURES["mrr"].key(10),
    MEASURES["map"].key(100),
)
"""The metric columns of a results table: nDCG@10 (the main score), Recall@10, MRR@10, MAP@100."""


def main_task_of(subtask: str) -> str:
    """The main task of a subtask config name, e.g. ``t2c_full_retro_any`` -> ``T2C``."""
    key = vocabulary.main_task_key(subtask)
    # the vocabulary reads the prefix case-insensitively; a config name is lower case
    if key is None or subtask.partition("_")[0] != key:
        raise ValueError(
            f"cannot tell the main task of subtask {subtask!r}: its name should start with one "
            f"of {', '.join(p + '_' for p in MAIN_TASKS)}"
        )
    return MAIN_TASKS[key]


@dataclass(frozen=True)
class AggregateRow:
    """One line of a results table."""

    level: str  # "subtask", "task" or "overall"
    name: str
    n_queries: int
    metrics: dict[str, float]
    intrusion_rate: float | None
    n_intrusion_eligible: int

    def to_dict(self) -> dict[str, object]:
        return {
            "level": self.level,
            "name": self.name,
            "n_queries": self.n_queries,
            **self.metrics,
            INTRUSION_KEY: self.intrusion_rate,
            "n_intrusion_eligible": self.n_intrusion_eligible,
        }


def _pool(level: str, name: str, parts: Sequence[RetrievalEvaluation]) -> AggregateRow:
    keys = parts[0].metric_keys
    n = sum(p.n_queries for p in parts)
    metrics = {
        k: (math.fsum(q[k] for p in parts for q in p.per_query.values()) / n if n else 0.0)
        for k in keys
    }
    eligible = sum(len(p.intrusion) for p in parts)
    intruded = sum(sum(p.intrusion.values()) for p in parts)
    return AggregateRow(
        level=level,
        name=name,
        n_queries=n,
        metrics=metrics,
        intrusion_rate=intruded / eligible if eligible else None,
        n_intrusion_eligible=eligible,
    )


def aggregate(
    evaluations: Mapping[str, RetrievalEvaluation], *, group_by_task: bool = True
) -> list[AggregateRow]:
    """Rows per subtask, then per main task, then Overall.

    Args:
        evaluations: ``{subtask: RetrievalEvaluation}``, all computed with the same metrics,
            policy and relevance level.
        group_by_task: add per-main-task rows (needs CoREB/QualCode subtask names).
    """
    if not evaluations:
        raise ValueError("nothing to aggregate: no evaluation given")
    first = next(iter(evaluations.values()))
    for name, ev in evaluations.items():
        if not isinstance(ev, RetrievalEvaluation):
            raise TypeError(f"evaluations[{name!r}] must be a RetrievalEvaluation, got {ev!r}")
        for attr in ("metric_keys", "no_positive_policy", "relevance_level"):
            if getattr(ev, attr) != getattr(first, attr):
                raise ValueError(
                    f"cannot pool subtask {name!r}: its {attr} ({getattr(ev, attr)!r}) differs "
                    f"from the others' ({getattr(first, attr)!r}); evaluate all subtasks alike"
                )
    rows = [_pool("subtask", name, [ev]) for name, ev in evaluations.items()]
    if group_by_task:
        tasks: dict[str, list[RetrievalEvaluation]] = {}
        for name, ev in evaluations.items():
            tasks.setdefault(main_task_of(name), []).append(ev)
        rows += [_pool("task", task, parts) for task, parts in tasks.items()]
    rows.append(_pool("overall", OVERALL, list(evaluations.values())))
    return rows


def render_table(
    rows: Sequence[AggregateRow],
    columns: Sequence[str] = TABLE_COLUMNS,
) -> str:
    """A fixed-width text table of ``rows`` (for terminals and logs)."""
    missing = [c for c in columns if rows and c not in rows[0].metrics]
    if missing:
        raise ValueError(
            f"columns {missing} were not computed; available: {', '.join(rows[0].metrics)}"
        )
    header = ["", "queries", *columns, "HN-intrusion"]
    body = []
    for row in rows:
        name = row.name if row.level == "subtask" else f"[{row.name}]"
        rate = "-" if row.intrusion_rate is None else f"{row.intrusion_rate:.4f}"
        body.append([name, str(row.n_queries), *(f"{row.metrics[c]:.4f}" for c in columns), rate])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{widths[0]}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*header), "  ".join("-" * w for w in widths)]
    lines += [fmt.format(*r) for r in body]
    return "\n".join(lines)


__all__ = [
    "MAIN_TASKS",
    "OVERALL",
    "TABLE_COLUMNS",
    "AggregateRow",
    "aggregate",
    "main_task_of",
    "render_table",
]
