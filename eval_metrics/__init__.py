"""Scoring library for CoREB and QualCode: pure functions over plain mappings, no torch.

qrels are ``{query_id: {doc_id: int}}`` and runs ``{query_id: {doc_id: float}}``, as in BEIR.
"""

from __future__ import annotations

from pathlib import Path

from eval_metrics.aggregate import AggregateRow, aggregate, main_task_of, render_table
from eval_metrics.measures import DEFAULT_K_VALUES, MEASURES
from eval_metrics.preference import mca, preference_wins, qpa
from eval_metrics.retrieval import RetrievalEvaluation, evaluate_retrieval
from eval_metrics.significance import PairedComparison, paired_test
from eval_metrics.ties import PositiveTies, positive_ties
from eval_metrics.trec_io import read_exclusions, read_qrels, read_run, write_qrels, write_run

COREB_METRIC_PATH = str(Path(__file__).resolve().parent / "coreb_metric")
"""Folder of the ``evaluate`` module: ``evaluate.load(eval_metrics.COREB_METRIC_PATH)``."""

__all__ = [
    "COREB_METRIC_PATH",
    "DEFAULT_K_VALUES",
    "MEASURES",
    "AggregateRow",
    "PairedComparison",
    "PositiveTies",
    "RetrievalEvaluation",
    "aggregate",
    "evaluate_retrieval",
    "main_task_of",
    "mca",
    "paired_test",
    "positive_ties",
    "preference_wins",
    "qpa",
    "read_exclusions",
    "read_qrels",
    "read_run",
    "render_table",
    "write_qrels",
    "write_run",
]
