"""The plain data a dataset card shows, computed by the builders
(:func:`coreb_toolkit.builders.coreb.statistics.card_data`,
:func:`coreb_toolkit.builders.qualcode.build.card_data`) and rendered by
:mod:`model_cards.dataset_card`.

The builders own these shapes and know nothing of the renderer: data flows builders -> cards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CorebCardSubtask:
    """One row of the card's subtask table."""

    name: str
    known: bool  # False: a subtask outside the paper's registry
    main_task: str  # text-to-code | code-to-code | code-to-text
    corpus: str  # the corpus config it ranks
    rows: list[int]  # rows per release, in the card's release order


@dataclass
class CorebCardRelease:
    """The statistics of one release: ``statistics`` has the keys of the builder's
    ``release_statistics`` (counts as plain or Counter dicts; a missing count is 0)."""

    name: str
    qrels_source: dict[str, str]  # family -> shipped | derived-v2 | derived-v1
    statistics: dict[str, Any]
    # family -> the shipped qrels against the execution metadata (builders' audit_qrels)
    qrels_audit: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class CorebCardData:
    """Everything the CoREB card shows, as plain data."""

    pretty_name: str
    license: str
    total_rows: int  # subtask rows + corpus documents: the size category
    configs_yaml: list[str]  # the card's ``configs:`` block, one line each
    releases: list[str]  # the splits, in the folder's order
    families: list[str]  # the main tasks in the layout's order (t2c, c2c, c2t)
    subtasks: list[CorebCardSubtask]
    qrels_derived: bool  # some family of some release had its qrels derived
    qrels_options: dict[str, Any]  # scheme, min_hard_negatives, c2t_hard_negatives, ...
    statistics: list[CorebCardRelease]
    citation: str


@dataclass
class QualcodeCardData:
    """Everything the QualCode card shows, as plain data."""

    pretty_name: str
    license: str
    configs: list[str]  # every config, in the folder's order
    split: str
    rows: dict[str, dict[str, int]]  # config -> split -> rows written
    configs_yaml: list[str]  # the card's ``configs:`` block, one line each
    report: dict[str, Any]  # the build report (sources, analyser, counts, drops, mc, ...)
    options: dict[str, Any]  # the construction options, by field name
    example_instruction: str  # the instruction for speed + memory
    citation: str


__all__ = ["CorebCardData", "CorebCardRelease", "CorebCardSubtask", "QualcodeCardData"]
