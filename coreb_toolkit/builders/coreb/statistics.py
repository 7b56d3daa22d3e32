"""Statistics of a release, and the plain data its dataset card is rendered from.

The counts follow the shapes of the paper's Tables 5, 10, 11 and 12; the card itself is
rendered by :mod:`model_cards.dataset_card` from :func:`card_data`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from coreb_toolkit.builders.card_data import CorebCardData, CorebCardRelease, CorebCardSubtask
from coreb_toolkit.builders.coreb.layout import CITATION, FAMILIES
from coreb_toolkit.builders.coreb.records import Release, ReleaseData
from coreb_toolkit.builders.hub_folder import configs_yaml
from coreb_toolkit.vocabulary import CORPUS_CODE, CORPUS_TEXT, MAIN_TASKS


def release_statistics(data: ReleaseData) -> dict[str, Any]:
    """Counts in the shapes of the paper's Tables 5, 10, 11 and 12, computed from the data."""
    qrels = {f: Counter() for f in FAMILIES}
    for qid, judged in data.qrels.items():
        fam = data.queries[qid][0].family
        for rel in judged.values():
            qrels[fam][rel] += 1
    by_lang = {f: Counter() for f in FAMILIES}
    by_variant: Counter = Counter()
    for subtask, rec in data.queries.values():
        lang = subtask.language or rec.fields.get("anchor_language") or "-"
        by_lang[subtask.family][lang] += 1
        by_variant[(subtask.family, subtask.variant)] += 1
    per_subtask: dict[str, list[int]] = {}
    for qid, (subtask, _) in data.queries.items():
        judged = data.qrels.get(qid, {})
        row = per_subtask.setdefault(subtask.name, [0, 0, 0])
        row[0] += 1
        row[1] += sum(1 for r in judged.values() if r == 2)
        row[2] += sum(1 for r in judged.values() if r == 1)
    code_lang = Counter(r.fields["language"] for r in data.code.values())
    code_passed = Counter(
        r.fields["language"] for r in data.code.values() if r.meta.get("passed") is True
    )
    code_model = Counter(r.fields.get("model") or "-" for r in data.code.values())
    text_style = Counter(r.fields.get("text_style") or "-" for r in data.texts.values())
    return {
        "qrels": qrels,
        "queries_by_language": by_lang,
        "queries_by_variant": by_variant,
        "code_by_language": code_lang,
        "code_passed_by_language": code_passed,
        "code_by_model": code_model,
        "text_by_style": text_style,
        "per_subtask": {k: tuple(v) for k, v in per_subtask.items()},
        "n_code": len(data.code),
        "n_text": len(data.texts),
        "n_queries": len(data.queries),
    }


def card_data(
    release: Release,
    layout: Mapping[str, list[tuple[str, str]]],
    rows: Mapping[str, Mapping[str, int]],
    *,
    pretty_name: str = "CoREB",
    license: str = "apache-2.0",
) -> CorebCardData:
    """What the card of a build of ``release`` shows: ``layout`` is ``{config: [(kind, split),
    ...]}`` of the folder, ``rows`` the rows written ``{config: {split: n}}``."""
    total = sum(n for name in release.subtasks for n in rows.get(name, {}).values())
    total += sum(n for name in (CORPUS_CODE, CORPUS_TEXT) for n in rows.get(name, {}).values())
    return CorebCardData(
        pretty_name=pretty_name,
        license=license,
        total_rows=total,
        configs_yaml=configs_yaml(
            {name: [split for _, split in parts] for name, parts in layout.items()}, rows
        ),
        releases=list(release.releases),
        families=list(FAMILIES),
        subtasks=[
            CorebCardSubtask(
                name=name,
                known=s.known,
                main_task=MAIN_TASKS[s.family].name,
                corpus=s.corpus,
                rows=[rows.get(name, {}).get(r, 0) for r in release.releases],
            )
            for name, s in release.subtasks.items()
        ],
        qrels_derived=any(
            src.startswith("derived")
            for d in release.releases.values()
            for src in d.qrels_source.values()
        ),
        qrels_options=asdict(release.options),
        statistics=[
            CorebCardRelease(
                name, dict(data.qrels_source), release_statistics(data), dict(data.qrels_audit)
            )
            for name, data in release.releases.items()
        ],
        citation=CITATION,
    )
