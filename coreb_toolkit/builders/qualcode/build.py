"""``coreb qualcode build``: CodeNet-style sources -> the QualCode Hub folder.

Seven configs (``<config>/test.parquet``), the card with the statistics, and
``build_report.json`` (every drop with its reason); atomic and reproducible.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.card_data import QualcodeCardData
from coreb_toolkit.builders.hub_folder import configs_yaml, write_hub_folder
from coreb_toolkit.builders.qualcode.data import QualcodeData
from coreb_toolkit.builders.qualcode.options import QualcodeOptions, instruction
from coreb_toolkit.builders.qualcode.prepare import prepare
from coreb_toolkit.builders.qualcode.rows import FEATURES, SPLIT, config_rows
from coreb_toolkit.vocabulary import SYNH_RANK_CITATION

DEFAULT_OUT = "qualcode"
CITATION = SYNH_RANK_CITATION

_CACHE: dict[tuple, QualcodeData] = {}


def cached_data(sources: tuple[str, ...], options: QualcodeOptions) -> QualcodeData:
    """:func:`prepare` of ``sources`` with ``options``, prepared again only when a source file
    changed (size or modification time) or the options differ; one result is kept."""
    stamp = []
    split = [options.exclude_problems_from] if options.exclude_problems_from else []
    for s in [*sources, *split]:  # a changed split file behind the same path is a change
        p = Path(s)
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        stamp += [(str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file()]
    key = (sources, options, tuple(stamp))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = prepare(list(sources), options, progress=False)
    return _CACHE[key]


@dataclass
class QualcodeBuildReport:
    """What :func:`build` wrote: rows per config and the build report (also on disk)."""

    out_dir: Path
    rows: dict[str, dict[str, int]]
    report: dict[str, Any]


def build(
    sources: Sequence[str | os.PathLike[str]] | QualcodeData,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    options: QualcodeOptions | None = None,
    overwrite: bool = False,
    pretty_name: str = "QualCode",
    license: str = "cdla-permissive-2.0",
    progress: bool = True,
    card: Callable[[QualcodeCardData], str] | None = None,
    eval_card: Callable[[QualcodeCardData], str] | None = None,
) -> QualcodeBuildReport:
    """Write the Hub folder: ``<config>/test.parquet`` for the 7 configs, the card with the
    statistics, and ``build_report.json`` (every drop with its reason). Atomic, reproducible
    (the same sources and options give byte-identical files).

    Args:
        sources: CodeNet-style paths, or :class:`QualcodeData` already prepared (with its own
            options).
        options: the construction options; with :class:`QualcodeData`, only its own options
            (or None) are accepted, since its rows are already built.
        card: renders the README.md from the card data (required here; the entry point
            ``qualcode_dataset.build`` defaults it to
            :func:`model_cards.dataset_card.render_qualcode_card`).
        eval_card: renders the Hub's ``eval.yaml`` (the benchmark's tasks) from the same card
            data, written beside the README.md; none without it (e.g.
            :func:`model_cards.dataset_card.render_qualcode_eval_yaml`).

    Raises:
        FileExistsError: ``out_dir`` exists and ``overwrite`` is false.
        ValueError: ``sources`` is :class:`QualcodeData` prepared with other ``options``.
    """
    if card is None:
        raise TypeError(
            "build() needs card=, the renderer of the README.md (the builders do not import "
            "model_cards, which is downstream of them): call qualcode_dataset.build, "
            "which passes model_cards.dataset_card.render_qualcode_card"
        )
    if isinstance(sources, QualcodeData) and options is not None and options != sources.options:
        raise ValueError(
            f"build() got QualcodeData prepared with {sources.options} and options={options}: "
            "its rows were built when it was prepared, so these options would be ignored; "
            "prepare it again with prepare(sources, options), or drop options"
        )
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
    data = (
        sources
        if isinstance(sources, QualcodeData)
        else prepare(sources, options, progress=progress)
    )
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {
        name: {SPLIT: (lambda name=name: config_rows(data, name), features)}
        for name, features in FEATURES.items()
    }
    report = {**data.report, "drops": [asdict(d) for d in data.dropped]}
    render = card

    def shown(rows: dict[str, dict[str, int]]) -> QualcodeCardData:
        return card_data(data, rows, pretty_name=pretty_name, license=license)

    rows = write_hub_folder(
        out,
        files,
        lambda rows: render(shown(rows)),
        overwrite=overwrite,
        progress=progress,
        desc="coreb qualcode build",
        extra={"build_report.json": json.dumps(report, indent=1, sort_keys=True) + "\n"},
        extra_files={"eval.yaml": lambda rows: eval_card(shown(rows))} if eval_card else None,
    )
    return QualcodeBuildReport(out, rows, data.report)


def card_data(
    data: QualcodeData,
    rows: Mapping[str, Mapping[str, int]],
    *,
    pretty_name: str = "QualCode",
    license: str = "cdla-permissive-2.0",
) -> QualcodeCardData:
    """What the card of a build of ``data`` shows; ``rows`` are the rows written."""
    return QualcodeCardData(
        pretty_name=pretty_name,
        license=license,
        configs=list(FEATURES),
        split=SPLIT,
        rows={name: dict(parts) for name, parts in rows.items()},
        configs_yaml=configs_yaml({name: [SPLIT] for name in FEATURES}, rows),
        report=data.report,
        options=asdict(data.options),
        example_instruction=instruction(["speed", "memory"], data.options.template),
        citation=CITATION,
    )
