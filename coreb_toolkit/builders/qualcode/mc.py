"""MC-QualCode [SynH-Rank §3]: binary labels per dimension, and k-condition triplets
balanced over the combinations of conditions and the failed condition."""

from __future__ import annotations

import itertools
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from coreb_toolkit.builders.qualcode.data import (
    Candidate,
    Drop,
    figure_columns,
    seeded_rng,
    usable_candidates,
)
from coreb_toolkit.builders.qualcode.options import QualcodeOptions, instruction
from coreb_toolkit.vocabulary import MC_CONDITION_COUNTS, QUALCODE_DIMENSIONS


def label_candidates(
    dim: str,
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
    dropped: list[Drop],
) -> None:
    """Binary labels: speed/memory best third 1, worst third 0, middle None; maintainability
    1 without smells, 0 with. A third ends where values tie across its boundary: tied
    submissions at the edge get None rather than an arbitrary side."""
    stage = f"labels:{dim}"
    for problem_id, cands in candidates.items():
        for c in cands:
            c.labels[dim] = None
        usable = usable_candidates(dim, problem_id, cands, options, [], stage)
        if dim == "maintainability":
            for c in usable:
                c.labels[dim] = int(c.smell_count == 0)
            continue
        if len(usable) < 3:
            dropped.append(Drop(stage, "fewer than 3 submissions: no thirds", problem_id))
            continue
        ordered = sorted(usable, key=lambda c: (c.figure(dim, options.labels), c.submission_id))
        values = [c.figure(dim, options.labels) for c in ordered]
        n, third = len(ordered), len(ordered) // 3
        for i in range(third):
            if values[i] < values[third]:
                ordered[i].labels[dim] = 1
            if values[n - 1 - i] > values[n - 1 - third]:
                ordered[n - 1 - i].labels[dim] = 0


class _TripletSource:
    """The candidate triplets of one problem for one (conditions, failed condition): counted
    exactly in O(n), enumerated lazily in a seeded order (every chosen gets its first
    rejected, then its second, ...), so a problem with thousands of submissions costs only
    the triplets actually taken."""

    def __init__(
        self,
        combo: tuple[str, ...],
        failed: str,
        cands: list[Candidate],
        options: QualcodeOptions,
        rng: random.Random,
    ) -> None:
        rest = [d for d in QUALCODE_DIMENSIONS if d not in combo]

        def signature(c: Candidate) -> tuple[int | None, ...] | None:
            if not options.control_unrequested:
                return ()
            sig = tuple(c.labels.get(d) for d in rest)
            return None if None in sig else sig

        good = [c for c in cands if all(c.labels.get(d) == 1 for d in combo)]
        bad = [
            c
            for c in cands
            if c.labels.get(failed) == 0 and all(c.labels.get(d) == 1 for d in combo if d != failed)
        ]
        rng.shuffle(good)
        rng.shuffle(bad)
        self.bad_by_sig: dict[tuple, list[Candidate]] = defaultdict(list)
        for n in bad:
            sig = signature(n)
            if sig is not None:
                self.bad_by_sig[sig].append(n)
        self.good = [(p, self.bad_by_sig.get(signature(p), [])) for p in good]
        self.good = [(p, ns) for p, ns in self.good if ns]
        self.count = sum(len(ns) for _, ns in self.good)

    def __iter__(self) -> Iterator[tuple[Candidate, Candidate]]:
        rounds = max((len(ns) for _, ns in self.good), default=0)
        for r in range(rounds):
            for p, ns in self.good:
                if r < len(ns):
                    yield p, ns[r]


def _round_robin(iterables: Sequence[Iterable[Any]], limit: int) -> list[Any]:
    """One item from each iterable in turn until ``limit`` items or all are exhausted."""
    out: list[Any] = []
    active = [iter(x) for x in iterables]
    while active and len(out) < limit:
        still = []
        for it in active:
            item = next(it, _END)
            if item is _END:
                continue
            out.append(item)
            still.append(it)
            if len(out) >= limit:
                break
        active = still
    return out


_END = object()


def make_triplets(
    statements: Mapping[str, str],
    candidates: Mapping[str, list[Candidate]],
    options: QualcodeOptions,
) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    triplets: dict[int, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {}
    for k in MC_CONDITION_COUNTS:
        combos = list(itertools.combinations(QUALCODE_DIMENSIONS, k))
        cap = options.mc_per_k // len(combos)
        sources: dict[tuple[str, ...], list[list[_TripletSource]]] = {}
        for combo in combos:
            sources[combo] = []
            for failed in combo:
                problems = sorted(candidates)
                seeded_rng(options, "mc-problems", k, *combo, failed).shuffle(problems)
                sources[combo].append(
                    [
                        _TripletSource(
                            combo,
                            failed,
                            candidates[pid],
                            options,
                            seeded_rng(options, "mc", k, *combo, failed, pid),
                        )
                        for pid in problems
                    ]
                )
        available = {
            combo: sum(src.count for per_failed in lists for src in per_failed)
            for combo, lists in sources.items()
        }
        take = {
            combo: min(cap, min(available.values()) if options.mc_balance == "strict" else n)
            for combo, n in available.items()
        }
        rows = []
        taken: dict[tuple[str, ...], Counter] = {}
        for combo in combos:
            # problems round-robin inside a failed condition, failed conditions round-robin
            by_failed = [
                [(failed, p, n) for p, n in _round_robin(per_failed, take[combo])]
                for failed, per_failed in zip(combo, sources[combo], strict=True)
            ]
            chosen = _round_robin(by_failed, take[combo])
            taken[combo] = Counter(f for f, _, _ in chosen)
            rows += [_triplet_row(k, combo, f, p, n, statements, options) for f, p, n in chosen]
        triplets[k] = rows
        report[f"k={k}"] = {
            "target": options.mc_per_k,
            "cap_per_combination": cap,
            "combinations": {
                "+".join(combo): {
                    "available": available[combo],
                    "taken": take[combo],
                    "by_failed_condition": dict(sorted(taken[combo].items())),
                }
                for combo in combos
            },
            "reached": len(rows),
            "why_short": _why_short(options, cap, available, len(rows)),
        }
    return triplets, report


def _why_short(
    options: QualcodeOptions, cap: int, available: Mapping[tuple[str, ...], int], reached: int
) -> str | None:
    if reached >= options.mc_per_k or reached == cap * len(available):
        return None
    scarce = min(available, key=lambda c: available[c])
    text = (
        f"the data holds only {available[scarce]} distinct candidate triplets for "
        f"{'+'.join(scarce)} (cap {cap} per combination)"
    )
    if options.mc_balance == "strict":
        text += "; strict balance takes that many from every combination"
    return text


def _triplet_row(
    k: int,
    combo: tuple[str, ...],
    failed: str,
    p: Candidate,
    n: Candidate,
    statements: Mapping[str, str],
    options: QualcodeOptions,
) -> dict[str, Any]:
    row = {
        "triplet_id": f"mc{k}/{'+'.join(combo)}/{failed}/{p.submission_id}/{n.submission_id}",
        "num_conditions": k,
        "conditions": list(combo),
        "failed_condition": failed,
        "instruction": instruction(combo, options.template),
        "query": statements[p.problem_id],
        "chosen": p.code,
        "rejected": n.code,
        "problem_id": p.problem_id,
        "chosen_id": p.submission_id,
        "rejected_id": n.submission_id,
    }
    for prefix, c in (("chosen", p), ("rejected", n)):
        for d in QUALCODE_DIMENSIONS:
            row[f"{prefix}_{d}_label"] = c.labels.get(d)
        row.update(figure_columns(prefix, c))
    return row
