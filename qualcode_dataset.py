"""QualCode and MC-QualCode: does a reranker prefer fast, lean, maintainable code? [SynH-Rank §3]

Built from CodeNet-style judged submissions (``coreb_toolkit.sources.codenet``): problem
statements and accepted submissions with the judge's CPU time and memory. Configs (one split,
``test``):

``qualcode_speed``, ``qualcode_memory``, ``qualcode_maintainability``
    One row per problem that yields a pair (protocol §3):

    * speed: ``chosen`` = the submission with the least CPU time, ``rejected`` = the one with
      the most, kept only if ``margin * cpu(chosen) < cpu(rejected)`` (margin 2);
    * memory: the same with memory;
    * maintainability: ``chosen`` = a seeded random submission with zero code smells,
      ``rejected`` = the one with the most smells, ties broken by the most diverse smells
      (distinct rules), then by submission id.

    Each row serves both tasks of the paper: the pairwise preference task (QPA over
    ``instruction``/``query``/``chosen``/``rejected``, TRL's preference vocabulary) and the
    1+99 retrieval task (``chosen`` against the ``retrieval_negative_ids`` -- 99 seeded samples
    of other problems' submissions, texts in ``qualcode_corpus``; MRR@10, nDCG@10; the paper's
    query is the instruction followed by the problem).

``mc_1cond``, ``mc_2cond``, ``mc_3cond``
    MC-QualCode triplets. Per problem and dimension a binary label: speed/memory best third
    = 1, worst third = 0, middle third discarded; maintainability 1 = no smells, 0 = some.
    A k-condition triplet asks for k dimensions C; ``chosen`` satisfies all of C, ``rejected``
    all but one (``failed_condition``); with ``control_unrequested`` (default) the two also
    carry the same labels on the dimensions not asked for, so the one failed condition is the
    only labelled difference (controlled variable). Up to ``mc_per_k`` (3,000) per k,
    balanced over the C(3, k) combinations and, inside a combination, over the failed
    condition; problems are drawn round-robin so that no problem dominates.

``qualcode_corpus``
    Every submission that survived reading: code, judge figures, measured figures (when
    measured), smell count/diversity/rules and the three MC labels.

Everything is seeded and deterministic, and every submission or candidate pair that is not
used is counted in the build report with the reason (``build_report.json`` and the card).

Maintainability uses a real static analyser (``coreb_toolkit.quality.smells``, ruff by
default) in place of the paper's SonarQube server; the rule set and its mapping to "smell
count" / "smell diversity" are in :mod:`coreb_toolkit.quality.smells` and in the card.
Measured mode (beyond the paper, which trusts one judge reading) re-runs submissions that have
public tests in the sandbox and labels speed/memory from median figures
(:mod:`coreb_toolkit.quality.measure`).

Data only, no model imports. This file holds the builder and its config (the loading-script
loader looks for them here) and re-exports the public API of
:mod:`coreb_toolkit.builders.qualcode`, where the work is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets

from coreb_toolkit.builders.config import OptionsConfigMixin
from coreb_toolkit.builders.qualcode.build import (
    CITATION,
    DEFAULT_OUT,
    QualcodeBuildReport,
    cached_data,
    card_data,
)
from coreb_toolkit.builders.qualcode.build import (
    build as _build_with_card,
)
from coreb_toolkit.builders.qualcode.data import Candidate, Drop, QualcodeData
from coreb_toolkit.builders.qualcode.options import (
    DEFAULT_TEMPLATE,
    QualcodeOptions,
    instruction,
)
from coreb_toolkit.builders.qualcode.prepare import prepare
from coreb_toolkit.builders.qualcode.rows import (
    CORPUS_FEATURES,
    FEATURES,
    MC_CONFIGS,
    MC_FEATURES,
    PAIR_CONFIGS,
    PAIR_FEATURES,
    SPLIT,
    config_rows,
    corpus_rows,
)
from coreb_toolkit.vocabulary import QUALCODE_CONDITIONS as CONDITIONS
from coreb_toolkit.vocabulary import QUALCODE_CORPUS as CORPUS_CONFIG
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS as DIMENSIONS


@dataclass
class QualcodeConfig(OptionsConfigMixin, datasets.BuilderConfig):
    """A QualCode config; the construction options (:class:`QualcodeOptions`, defaults = the
    paper) are its ``options``, and their fields keyword arguments of ``load_dataset``
    (``retrieval_negatives=5``).

    ``data_dir`` is one source path; ``sources`` (a list) gives several.
    """

    sources: tuple[str, ...] = ()
    options: QualcodeOptions = field(default_factory=QualcodeOptions)


class Qualcode(datasets.GeneratorBasedBuilder):
    """QualCode (speed, memory, maintainability pairs + 1+99 retrieval), MC-QualCode (k = 1,
    2, 3 condition triplets) and the submission corpus, from CodeNet-style sources."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = QualcodeConfig
    BUILDER_CONFIGS = [  # noqa: RUF012 (datasets reads this class attribute)
        *(
            QualcodeConfig(name=n, description=f"QualCode {d} pairs")
            for n, d in PAIR_CONFIGS.items()
        ),
        *(
            QualcodeConfig(name=n, description=f"MC-QualCode, {k} condition(s)")
            for n, k in MC_CONFIGS.items()
        ),
        QualcodeConfig(name=CORPUS_CONFIG, description="every submission with its figures"),
    ]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=__doc__.split("\n")[0],
            features=FEATURES[self.config.name],
            citation=CITATION,
        )

    def _sources(self) -> tuple[str, ...]:
        sources = tuple(self.config.sources) or (
            (self.config.data_dir,) if self.config.data_dir else ()
        )
        if not sources:
            raise ValueError(
                "Qualcode needs data_dir (a CodeNet-style source: a CodeNet root, a PIE jsonl, "
                "the shared codenet/nofuneval folders) or sources=[...] for several"
            )
        return tuple(str(s) for s in sources)

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=SPLIT, gen_kwargs={})]

    def _generate_examples(self) -> Iterator[tuple[str, dict[str, Any]]]:
        data = cached_data(self._sources(), self.config.options)
        for i, row in enumerate(config_rows(data, self.config.name)):
            yield str(i), row


def load_config(
    sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    config: str,
    *,
    options: QualcodeOptions | None = None,
    cache_dir: str | None = None,
) -> datasets.Dataset:
    """One config straight from the sources, through :class:`Qualcode` (datasets 4+ path)."""
    if config not in FEATURES:
        raise ValueError(f"unknown QualCode config {config!r}; expected one of {list(FEATURES)}")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    builder = Qualcode(
        config_name=config,
        cache_dir=cache_dir,
        sources=tuple(str(s) for s in sources),
        options=options or QualcodeOptions(),
    )
    builder.download_and_prepare()
    return builder.as_dataset(split=SPLIT)


def build(
    sources: Any, out_dir: str | os.PathLike[str] = DEFAULT_OUT, *, card: Any = None, **kwargs: Any
):
    """Build the Hub folder (every argument: :func:`coreb_toolkit.builders.qualcode.build.build`),
    with the toolkit's dataset card (and the Hub's ``eval.yaml``) unless ``card`` (``eval_card``)
    is given.

    This entry point is where the builder meets the cards: the builder modules never import
    :mod:`model_cards` (imports run builders -> cards), so the renderer is handed to them here.
    """
    if card is None:
        from model_cards.dataset_card import render_qualcode_card as card
    if "eval_card" not in kwargs:
        from model_cards.dataset_card import render_qualcode_eval_yaml

        kwargs["eval_card"] = render_qualcode_eval_yaml
    return _build_with_card(sources, out_dir, card=card, **kwargs)


__all__ = [
    "CITATION",
    "CONDITIONS",
    "CORPUS_CONFIG",
    "CORPUS_FEATURES",
    "DEFAULT_OUT",
    "DEFAULT_TEMPLATE",
    "DIMENSIONS",
    "FEATURES",
    "MC_CONFIGS",
    "MC_FEATURES",
    "PAIR_CONFIGS",
    "PAIR_FEATURES",
    "SPLIT",
    "Candidate",
    "Drop",
    "Qualcode",
    "QualcodeBuildReport",
    "QualcodeConfig",
    "QualcodeData",
    "QualcodeOptions",
    "build",
    "cached_data",
    "card_data",
    "config_rows",
    "corpus_rows",
    "instruction",
    "load_config",
    "prepare",
]
