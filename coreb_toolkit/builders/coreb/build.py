"""``coreb build``: a release in the official layout -> a Hub dataset folder.

The folder holds ``<config>/<split>.parquet`` for every subtask, corpus view and official
config, and a README.md dataset card whose ``configs:`` declare them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.card_data import CorebCardData
from coreb_toolkit.builders.coreb.layout import FAMILIES, OFFICIAL_CONFIGS
from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.coreb.records import Release
from coreb_toolkit.builders.coreb.release import local_inputs, read_release
from coreb_toolkit.builders.coreb.rows import config_rows, features_of
from coreb_toolkit.builders.coreb.statistics import card_data
from coreb_toolkit.builders.hub_folder import check_destination, write_hub_folder
from coreb_toolkit.vocabulary import CORPUS_CONFIGS

DEFAULT_OUT = "coreb"


@dataclass
class BuildReport:
    """What :func:`build` wrote: ``{config: {split: rows}}`` and the warnings it logged."""

    out_dir: Path
    rows: dict[str, dict[str, int]]
    warnings: list[str]
    # release -> family -> the shipped qrels against the execution metadata (audit_qrels)
    qrels_audit: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)


def hub_layout(release: Release) -> dict[str, list[tuple[str, str]]]:
    """``{config: [(kind, split), ...]}``: which config/split files the folder holds."""
    layout: dict[str, list[tuple[str, str]]] = {}
    for name in release.subtasks:
        layout[name] = [
            ("subtask", r)
            for r, d in release.releases.items()
            if any(s.name == name for s, _ in d.queries.values())
        ]
    for name in CORPUS_CONFIGS:
        layout[name] = [("corpus", r) for r in release.releases]
    qrels_family = {spec["qrels"]: family for family, spec in FAMILIES.items()}
    for name in OFFICIAL_CONFIGS:
        splits = []
        for split, data in release.releases.items():
            family = qrels_family.get(name)
            if family is None or data.qrels_source.get(family) == "shipped":
                present = bool(data.records[name])  # as published, where published
            else:  # derived qrels: present when the family has queries
                present = any(s.family == family for s, _ in data.queries.values())
            if present or name in ("code_corpus", "text_corpus"):
                splits.append(("official", split))
        layout[name] = splits
    return {k: v for k, v in layout.items() if v}


def build(
    source: str | os.PathLike[str] | Release,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    *,
    options: QrelsOptions | None = None,
    overwrite: bool = False,
    pretty_name: str = "CoREB",
    license: str = "apache-2.0",
    progress: bool = True,
    card: Callable[[CorebCardData], str] | None = None,
    eval_card: Callable[[CorebCardData], str] | None = None,
) -> BuildReport:
    """Write the Hub dataset folder for every release in ``source``.

    The folder holds ``<config>/<split>.parquet`` for every subtask, corpus view and official
    config, and a README.md dataset card whose ``configs:`` declare them, so
    ``load_dataset(out_dir, "t2c_full_retro_any")`` works with any ``datasets`` version.

    Nothing is written unless the whole release validates; the folder appears (or replaces the
    old one, with ``overwrite``) in one rename, so a failed build leaves nothing half-written.

    Args:
        source: a release folder in the official layout, a Hub id, or a :class:`Release`
            already read (its qrels were derived with ``source.options``).
        options: how missing qrels are derived; with a :class:`Release`, only its own options
            (or None) are accepted, since its qrels are already derived.
        card: renders the README.md from the card data (required here; the entry point
            ``coreb_dataset.build`` defaults it to
            :func:`model_cards.dataset_card.render_coreb_card`).
        eval_card: renders the Hub's ``eval.yaml`` (the benchmark's tasks) from the same card
            data, written beside the README.md; none without it (e.g.
            :func:`model_cards.dataset_card.render_coreb_eval_yaml`).

    Raises:
        ValueError: ``source`` is a :class:`Release` read with other ``options``.
    """
    if card is None:
        raise TypeError(
            "build() needs card=, the renderer of the README.md (the builders do not import "
            "model_cards, which is downstream of them): call coreb_dataset.build, "
            "which passes model_cards.dataset_card.render_coreb_card"
        )
    if isinstance(source, Release) and options is not None and options != source.options:
        raise ValueError(
            f"build() got a Release read with {source.options} and options={options}: its "
            "qrels were derived when it was read, so these options would be ignored; read it "
            f"again with read_release({source.path!r}, options), or drop options"
        )
    options = options or QrelsOptions()
    out = Path(out_dir)
    # fail before the (long) read where the answer does not depend on it
    early = release_inputs(source) if isinstance(source, Release) else local_inputs(source)
    check_destination(out, overwrite=overwrite, inputs=early)
    release = source if isinstance(source, Release) else read_release(source, options)
    layout = hub_layout(release)
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {}
    for name, parts in layout.items():
        for kind, split in parts:
            data = release.releases[split]
            files.setdefault(name, {})[split] = (
                lambda data=data, name=name, kind=kind: config_rows(data, name, kind),
                features_of(kind, name),
            )
    render = card

    def data(rows: dict[str, dict[str, int]]) -> CorebCardData:
        return card_data(release, layout, rows, pretty_name=pretty_name, license=license)

    rows = write_hub_folder(
        out,
        files,
        lambda rows: render(data(rows)),
        overwrite=overwrite,
        progress=progress,
        desc="coreb build",
        inputs=release_inputs(release),
        extra_files={"eval.yaml": lambda rows: eval_card(data(rows))} if eval_card else None,
    )
    audit = {name: d.qrels_audit for name, d in release.releases.items() if d.qrels_audit}
    return BuildReport(out, rows, [str(w) for w in release.warnings], audit)


def release_inputs(release: Release) -> tuple[str, ...]:
    """The real paths ``release`` was read from: what no output of a build may touch."""
    return (*release.inputs, release.path)
