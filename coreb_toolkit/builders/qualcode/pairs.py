"""QualCode pairs [SynH-Rank §3]: per problem and dimension a chosen and a rejected
submission, and the 1+99 retrieval task's seeded distractors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from coreb_toolkit.builders.qualcode.data import (
    Candidate,
    Drop,
    figure_columns,
    seeded_rng,
    usable_candidates,
)
from coreb_toolkit.builders.qualcode.options import QualcodeOptions, instruction


def make_pairs(
    dim: str,
    statements: Mapping[str, str],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> list[dict[str, Any]]:
    rows = []
    for problem_id, cands in candidates.items():
        if dim == "maintainability":
            pair = _maintainability_pair(problem_id, cands, options, dropped)
            margin = None
        else:
            pair, margin = _figure_pair(dim, problem_id, cands, options, dropped)
        if pair is None:
            continue
        chosen, rejected = pair
        rows.append(
            {
                "pair_id": f"{dim}/{problem_id}",
                "dimension": dim,
                "instruction": instruction(dim, options.template),
                "query": statements[problem_id],
                "chosen": chosen.code,
                "rejected": rejected.code,
                "problem_id": problem_id,
                "chosen_id": chosen.submission_id,
                "rejected_id": rejected.submission_id,
                "margin": margin,
                "label_source": "smells" if dim == "maintainability" else options.labels,
                **figure_columns("chosen", chosen),
                **figure_columns("rejected", rejected),
            }
        )
    return rows


def _figure_pair(
    dim: str,
    problem_id: str,
    cands: list[Candidate],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> tuple[tuple[Candidate, Candidate] | None, float | None]:
    stage = f"pairs:{dim}"
    usable = usable_candidates(dim, problem_id, cands, options, dropped, stage)
    if len(usable) < 2:
        dropped.append(Drop(stage, "fewer than 2 submissions", problem_id))
        return None, None
    key = lambda c: (c.figure(dim, options.labels), c.submission_id)  # noqa: E731
    best, worst = min(usable, key=key), max(usable, key=key)
    fb, fw = best.figure(dim, options.labels), worst.figure(dim, options.labels)
    if not options.margin * fb < fw:
        dropped.append(
            Drop(stage, f"below the {options.margin:g}x margin", problem_id, f"{fb:g} vs {fw:g}")
        )
        return None, None
    return (best, worst), (fw / fb if fb > 0 else None)


def _maintainability_pair(
    problem_id: str, cands: list[Candidate], options: QualcodeOptions, dropped: list[Drop]
) -> tuple[Candidate, Candidate] | None:
    stage = "pairs:maintainability"
    usable = usable_candidates("maintainability", problem_id, cands, options, dropped, stage)
    clean = [c for c in usable if c.smell_count == 0]
    if not clean:
        dropped.append(Drop(stage, "no submission without smells", problem_id))
        return None
    worst = max(usable, key=lambda c: (c.smell_count, len(c.smell_kinds), c.submission_id))
    if worst.smell_count == 0:
        dropped.append(Drop(stage, "no submission with smells", problem_id))
        return None
    chosen = seeded_rng(options, "maintainability", problem_id).choice(clean)
    return chosen, worst


def attach_retrieval_negatives(
    pairs: Mapping[str, list[dict[str, Any]]],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
) -> None:
    """Attach 99 seeded distractors (submissions of other problems) to every pair row."""
    pool = sorted((c.submission_id, c.problem_id) for cs in candidates.values() for c in cs)
    sizes = Counter(pid for _, pid in pool)
    k = options.retrieval_negatives
    for dim, rows in pairs.items():
        for row in rows:
            own = sizes[row["problem_id"]]
            if len(pool) - own < k:
                raise ValueError(
                    f"the 1+{k} retrieval task needs {k} submissions of other problems, but "
                    f"only {len(pool) - own} exist besides {row['problem_id']}: add sources or "
                    "lower retrieval_negatives (--retrieval-negatives)"
                )
            # k + own draws without replacement always hold k of other problems
            rng = seeded_rng(options, "retrieval", dim, row["problem_id"])
            drawn = rng.sample(range(len(pool)), min(len(pool), k + own))
            others = [pool[i][0] for i in drawn if pool[i][1] != row["problem_id"]]
            row["retrieval_negative_ids"] = others[:k]
