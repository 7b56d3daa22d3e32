"""The build report: counts, distributions and every drop with its reason."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from coreb_toolkit.builders.qualcode.data import Candidate, Drop
from coreb_toolkit.builders.qualcode.options import QualcodeOptions
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS


def build_report(
    data: Any,
    options: QualcodeOptions,
    analyser: Any,
    candidates: Mapping[str, list[Candidate]],
    pairs: Mapping[str, list[dict[str, Any]]],
    triplets: Mapping[int, list[dict[str, Any]]],
    mc_report: dict[str, Any],
    dropped: list[Drop],
    *,
    exclusion: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The build report; ``exclusion`` is the record of the problems a problem split gave to
    training and the build left out (``None``: no split was given)."""
    corpus = [c for cs in candidates.values() for c in cs]
    by_stage: dict[str, Counter] = defaultdict(Counter)
    for d in dropped:
        by_stage[d.stage][d.reason] += 1
    # what the reader's selection left out (rejected verdicts, other languages) is counted
    # there, not itemised: on all of CodeNet that is millions of records
    for reason, n in getattr(data, "filtered", {}).items():
        by_stage["read"][reason] += n
    margins = {
        dim: sorted(r["margin"] for r in rows if r["margin"] is not None)
        for dim, rows in pairs.items()
        if dim != "maintainability"
    }
    smells = [c.smell_count for c in corpus if c.smell_count is not None]
    labels = {
        d: dict(Counter("unlabelled" if c.labels.get(d) is None else c.labels[d] for c in corpus))
        for d in QUALCODE_DIMENSIONS
    }
    return {
        "sources": list(data.sources),
        "options": asdict(options),
        "analyser": {
            "name": analyser.name,
            "version": analyser.version(),
            "rules": analyser.rules(),
        },
        "problems": len(candidates),
        "submissions": len(corpus),
        "pairs": {d: len(rows) for d, rows in pairs.items()},
        "margin_distribution": {d: _distribution(v) for d, v in margins.items()},
        "smell_count_distribution": _distribution(smells),
        "submissions_without_smells": sum(1 for s in smells if s == 0),
        "mc_labels": {
            d: {str(k): v for k, v in sorted(c.items(), key=str)} for d, c in labels.items()
        },
        "triplets": {f"k={k}": len(rows) for k, rows in triplets.items()},
        "mc": mc_report,
        "dropped": {stage: dict(sorted(c.items())) for stage, c in sorted(by_stage.items())},
        "exclusion": exclusion,
    }


def _distribution(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    values = sorted(values)
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {
        "n": len(values),
        "min": values[0],
        "q1": q[0],
        "median": q[1],
        "q3": q[2],
        "max": values[-1],
        "mean": statistics.fmean(values),
    }
