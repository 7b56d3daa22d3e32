"""The CoREB Hub dataset: one config per subtask, built from a release in the official layout.

CoREB (the CoREB paper, Appendix A.3-A.6; ``docs/protocol.md`` §1-§2) publishes a release as
8 configs
(``code_corpus``, ``text_corpus``, ``{text2code,code2code,code2text}_{queries,qrels}``) with one
split per release (``release_v2602``, ``release_v2603``). This module turns that into what an
evaluator wants, one config per subtask (``t2c_full_retro_any``, ``c2c_cross_lang``,
``c2t_match``, ...), each row a query with its positives, hard negatives, exclusions and the name
of the corpus config it ranks.

The configs are defined once, by :class:`Coreb`, a :class:`datasets.GeneratorBasedBuilder`:

* with ``datasets`` 3.x this file is a loading script::

      load_dataset("coreb_dataset.py", "t2c_full_retro_any", data_dir="path/to/release",
                   trust_remote_code=True)

* with ``datasets`` 4+ (no scripts) the class is used directly (:func:`load_config`), and
  :func:`build` (``coreb build``) writes, through the same rows, a folder of Parquet files plus
  a README whose ``configs:`` make ``load_dataset("coreb", "t2c_full_retro_any")`` work anywhere.

This file holds the builder and its configs (the loading-script loader looks for them here) and
re-exports the public API of :mod:`coreb_toolkit.builders`, where the work is done: as a
loading script it needs the toolkit installed (``datasets`` 3 names the missing package).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import datasets

from coreb_toolkit.builders.config import OptionsConfigMixin
from coreb_toolkit.builders.coreb.build import (
    DEFAULT_OUT,
    BuildReport,
    hub_layout,
    release_inputs,
)
from coreb_toolkit.builders.coreb.build import (
    build as _build_with_card,
)
from coreb_toolkit.builders.coreb.layout import (
    CITATION,
    CONFIG_NAME_PATTERN,
    DESCRIPTION,
    FAMILIES,
    OFFICIAL_CONFIGS,
    OFFICIAL_FIELDS,
    RESERVED_CONFIG_NAMES,
)
from coreb_toolkit.builders.coreb.mteb import (
    MtebExport,
    check_mteb_destination,
    export_mteb,
    load_mteb_task,
    mteb_statistics,
)
from coreb_toolkit.builders.coreb.prepared import (
    is_release_source,
    prepared_dataset,
    source_fingerprint,
)
from coreb_toolkit.builders.coreb.qrels import QRELS_SCHEMES, QRELS_SOURCES, QrelsOptions
from coreb_toolkit.builders.coreb.records import (
    Problem,
    Record,
    Release,
    ReleaseData,
    ReleaseError,
)
from coreb_toolkit.builders.coreb.release import (
    cached_release,
    clear_release_cache,
    local_inputs,
    read_release,
    resolve_release_path,
)
from coreb_toolkit.builders.coreb.reranking import (
    LIST_SIZE,
    RerankingList,
    records,
    release_lists,
    reranking_lists,
    write_reranking_records,
)
from coreb_toolkit.builders.coreb.rows import (
    CORPUS_FEATURES,
    OFFICIAL_FEATURES,
    SUBTASK_FEATURES,
    config_rows,
    corpus_rows,
    features_of,
    official_rows,
    subtask_rows,
)
from coreb_toolkit.builders.coreb.statistics import card_data, release_statistics
from coreb_toolkit.builders.coreb.subtask_data import SubtaskData, load_subtask, subtask_data
from coreb_toolkit.builders.hub_folder import (
    check_destination,
    configs_yaml,
    hub_folder_configs,
    is_hub_folder,
    read_hub_config,
    replace_folder,
    write_hub_folder,
    write_parquet,
)
from coreb_toolkit.builders.scratch import reclaim_leftovers, scratch_folder
from coreb_toolkit.vocabulary import (
    CORPUS_CODE,
    CORPUS_CONFIGS,
    CORPUS_TEXT,
    CORPUS_TEXT_ABBREVIATED,
    LANGUAGE_NAMES,
    LANGUAGE_SUFFIXES,
    LANGUAGES,
    MAIN_TASKS,
    SUBTASKS,
    SubtaskMetadata,
    classify_subtask,
)

Subtask = SubtaskMetadata
"""The former name of :class:`~coreb_toolkit.vocabulary.SubtaskMetadata`."""


@dataclass
class CorebConfig(OptionsConfigMixin, datasets.BuilderConfig):
    """A CoREB config: a subtask, a corpus view or one of the 8 official configs.

    Args:
        kind: ``"subtask"``, ``"corpus"`` or ``"official"``.
        family: the main task of a subtask config (``t2c``, ``c2c``, ``c2t``).
        options: the :class:`QrelsOptions` used where a release ships no qrels. Its fields are
            also keyword arguments of ``load_dataset`` (``min_hard_negatives=3``;
            ``qrels_scheme`` for ``scheme``).
    """

    OPTION_ALIASES = {"qrels_scheme": "scheme"}  # noqa: RUF012 (a ClassVar of the mixin)

    kind: str = "subtask"
    family: str | None = None
    options: QrelsOptions = field(default_factory=QrelsOptions)


def _config(name: str, kind: str, family: str | None = None) -> CorebConfig:
    if kind == "subtask":
        task = MAIN_TASKS[family].name if family in MAIN_TASKS else family
        description = f"CoREB {task} subtask {name}"
    elif kind == "corpus":
        description = f"CoREB corpus view {name} (doc_id, text)"
    else:
        description = f"the official CoREB config {name}, unchanged in content"
    return CorebConfig(name=name, kind=kind, family=family, description=description)


def _configs(subtasks: Iterable[SubtaskMetadata]) -> list[CorebConfig]:
    return [
        *(_config(s.name, "subtask", s.family) for s in subtasks),
        *(_config(c, "corpus") for c in CORPUS_CONFIGS),
        *(_config(c, "official") for c in OFFICIAL_CONFIGS),
    ]


class Coreb(datasets.GeneratorBasedBuilder):
    """CoREB: one config per subtask (one split per release), the corpora, the official configs.

    ``data_dir`` is a release folder in the official layout (``<config>/<split>.jsonl`` or
    ``.parquet``) or a Hub dataset id holding it.
    """

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = CorebConfig
    BUILDER_CONFIGS = _configs(SUBTASKS.values())

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=DESCRIPTION,
            features=features_of(self.config.kind, self.config.name),
            citation=CITATION,
            license="apache-2.0",
        )

    def _release(self) -> Release:
        if not self.config.data_dir:
            raise ValueError(
                f"{type(self).__name__} needs data_dir: the release folder in the official layout "
                "(<config>/<split>.jsonl or .parquet), e.g. data_dir='path/to/release'"
            )
        return cached_release(self.config.data_dir, self.config.options)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        release = self._release()
        names = [
            name
            for name, data in release.releases.items()
            if self.config.kind != "subtask"
            or any(s.name == self.config.name for s, _ in data.queries.values())
        ]
        if not names:
            raise ValueError(
                f"no release in {release.path} has queries of subtask {self.config.name!r}; "
                f"present: {', '.join(release.subtasks) or 'none'}"
            )
        return [datasets.SplitGenerator(name=n, gen_kwargs={"release": n}) for n in names]

    def _generate_examples(self, release: str) -> Iterator[tuple[str, dict[str, Any]]]:
        data = self._release().releases[release]
        for i, row in enumerate(config_rows(data, self.config.name, self.config.kind)):
            yield str(i), row


def builder_class(subtasks: Iterable[SubtaskMetadata]) -> type[Coreb]:
    """:class:`Coreb` with the configs of a release that holds subtasks outside the registry."""
    extra = [s for s in subtasks if s.name not in SUBTASKS]
    if not extra:
        return Coreb
    configs = [*Coreb.BUILDER_CONFIGS, *(_config(s.name, "subtask", s.family) for s in extra)]
    return type("Coreb", (Coreb,), {"BUILDER_CONFIGS": configs})


def load_config(
    release_dir: str | os.PathLike[str],
    config: str,
    *,
    cache_dir: str | None = None,
    options: QrelsOptions | None = None,
) -> datasets.DatasetDict:
    """One config straight from a release folder, through :class:`Coreb` (datasets 4+ path)."""
    options = options or QrelsOptions()
    release = cached_release(str(release_dir), options)
    cls = builder_class(release.subtasks.values())
    builder = cls(
        config_name=config, data_dir=str(release_dir), cache_dir=cache_dir, options=options
    )
    builder.download_and_prepare()
    return builder.as_dataset()


def build(
    source: Any, out_dir: str | os.PathLike[str] = DEFAULT_OUT, *, card: Any = None, **kwargs: Any
):
    """Build the Hub folder (every argument: :func:`coreb_toolkit.builders.coreb.build.build`),
    with the toolkit's dataset card (and the Hub's ``eval.yaml``) unless ``card`` (``eval_card``)
    is given.

    This entry point is where the builder meets the cards: the builder modules never import
    :mod:`model_cards` (imports run builders -> cards), so the renderer is handed to them here.
    """
    if card is None:
        from model_cards.dataset_card import render_coreb_card as card
    if "eval_card" not in kwargs:
        from model_cards.dataset_card import render_coreb_eval_yaml

        kwargs["eval_card"] = render_coreb_eval_yaml
    return _build_with_card(source, out_dir, card=card, **kwargs)


def prepare_dataset(
    source: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    options: QrelsOptions | None = None,
    progress: bool = True,
    fingerprint: str | None = None,
) -> str:
    """A built dataset for ``source`` (a built folder or its Hub id as it is; a release folder,
    in either layout, or a Hub release such as ``hq-bench/coreb`` built once into
    ``cache_dir`` and reused, keyed by the source's fingerprint): every argument in
    :func:`coreb_toolkit.builders.coreb.prepared.prepared_dataset`."""
    return prepared_dataset(
        source, cache_dir, build, options=options, progress=progress, fingerprint=fingerprint
    )


__all__ = [
    "CITATION",
    "CONFIG_NAME_PATTERN",
    "CORPUS_CODE",
    "CORPUS_CONFIGS",
    "CORPUS_FEATURES",
    "CORPUS_TEXT",
    "CORPUS_TEXT_ABBREVIATED",
    "DEFAULT_OUT",
    "DESCRIPTION",
    "FAMILIES",
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "LANGUAGE_SUFFIXES",
    "LIST_SIZE",
    "OFFICIAL_CONFIGS",
    "OFFICIAL_FEATURES",
    "OFFICIAL_FIELDS",
    "QRELS_SCHEMES",
    "QRELS_SOURCES",
    "RESERVED_CONFIG_NAMES",
    "SUBTASKS",
    "SUBTASK_FEATURES",
    "BuildReport",
    "Coreb",
    "CorebConfig",
    "MtebExport",
    "Problem",
    "QrelsOptions",
    "Record",
    "Release",
    "ReleaseData",
    "ReleaseError",
    "RerankingList",
    "Subtask",
    "SubtaskData",
    "SubtaskMetadata",
    "build",
    "builder_class",
    "cached_release",
    "card_data",
    "check_destination",
    "check_mteb_destination",
    "classify_subtask",
    "clear_release_cache",
    "config_rows",
    "configs_yaml",
    "corpus_rows",
    "export_mteb",
    "features_of",
    "hub_folder_configs",
    "hub_layout",
    "is_hub_folder",
    "is_release_source",
    "load_config",
    "load_mteb_task",
    "load_subtask",
    "local_inputs",
    "mteb_statistics",
    "official_rows",
    "prepare_dataset",
    "read_hub_config",
    "read_release",
    "reclaim_leftovers",
    "records",
    "release_inputs",
    "release_lists",
    "release_statistics",
    "replace_folder",
    "reranking_lists",
    "resolve_release_path",
    "scratch_folder",
    "source_fingerprint",
    "subtask_data",
    "subtask_rows",
    "write_hub_folder",
    "write_parquet",
    "write_reranking_records",
]
