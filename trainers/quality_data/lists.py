"""The hierarchical training lists of SynH-Rank [SynH-Rank §4.2, §5.4].

Per task and dimension, one list per high-quality variant: the paper makes 4 high-quality and
4 low-quality variants per query and trains on instances of "one positive sample, which is both
relevant and high-quality, together with five negative samples ... four code snippets that are
relevant but low-quality, and one irrelevant snippet selected at random" (§5.4), so each high
variant heads a list of its own: ``n_high`` high-quality relevant docs (label 2), the task's
first ``n_low`` low-quality relevant docs of the dimension (label 1; the same ones in each list
of the task and dimension) and ``n_irrelevant`` docs of other tasks (label 0), the paper's
1 + 4 + 1. A list the data cannot fill is built short (fewer lows than ``n_low``, down to
``min_low``) or left out (fewer lows than ``min_low``, too few irrelevant docs), and either is
counted in the report (``short_lists``, ``missing_docs_per_label``, ``lists_not_built``), never
silent. The query is QualCode's instruction for the dimension joined to the statement the way
the cross-encoder joins them (:func:`reranker.cross_encoder.join_instruction`), so training and
evaluation see the same text. The docs of a list are shuffled with the seeded rng (the labels
follow them), so that a model cannot learn a position. The dataset's columns are
:data:`~trainers.quality_data.records.LIST_COLUMNS`: ``query``, ``docs`` and ``labels`` are
what sentence-transformers' listwise losses (``LambdaLoss``) take.

Example::

    result = make_lists(tasks, labelled, ListOptions(seed=0))
    write_lists("lists", result, split=split, sources=["../shared/data/codenet"])
    dataset = read_lists("lists")
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from coreb_toolkit.builders.qualcode.options import DEFAULT_TEMPLATE, instruction
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS
from reranker.cross_encoder import join_instruction
from trainers.quality_data.records import (
    LABEL_HIGH,
    LABEL_IRRELEVANT,
    LABEL_LOW,
    LIST_COLUMNS,
    LISTS_FILE,
    Drop,
    SeedTask,
    Shortfall,
    Variant,
)
from trainers.quality_data.split import SPLIT_FILE, ProblemSplit, write_split

logger = logging.getLogger(__name__)

STAGE = "lists"
REPORT_FILE = "report.json"


@dataclass(frozen=True)
class ListOptions:
    """How the lists are made; the defaults are the paper's [SynH-Rank §5.4]."""

    n_high: int = field(
        default=1,
        metadata={
            "help": "High-quality relevant docs per list (label 2): every high-quality variant "
            "of a task and dimension heads a list, in the order given (1: one list per high "
            "variant, the paper's; n > 1: consecutive groups of n, a last short one counted)."
        },
    )
    n_low: int = field(
        default=4,
        metadata={
            "help": "Low-quality relevant docs per list (label 1), the first ones of the task and "
            "dimension in the order given (label_real puts the most different first), the "
            "same in each of its lists; fewer are counted as a short list (4)."
        },
    )
    n_irrelevant: int = field(
        default=1,
        metadata={
            "help": "Irrelevant docs per list (label 0): seeded draws of other tasks' variants, "
            "any dimension, no code twice in a list nor across the lists of a task and "
            "dimension while the other tasks have enough (1)."
        },
    )
    min_low: int = field(
        default=1,
        metadata={
            "help": "A list with fewer low-quality docs than this is not built, and counted (1: "
            "every list has all three levels)."
        },
    )
    template: str = field(
        default=DEFAULT_TEMPLATE,
        metadata={
            "help": "The instruction template (QualCode's); {conditions} becomes 'fast', "
            "'memory-efficient' or 'maintainable'."
        },
    )
    seed: int = field(
        default=0,
        metadata={
            "help": "Seeds the irrelevant draws and the order of the docs; string-seeded per "
            "list, so the lists do not depend on the order of the inputs."
        },
    )

    def __post_init__(self) -> None:
        for name, least in (("n_high", 1), ("n_low", 1), ("n_irrelevant", 0), ("min_low", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
        if self.min_low > self.n_low:
            raise ValueError(
                f"min_low must be at most n_low ({self.n_low}), got {self.min_low}: no list "
                "could have that many low-quality docs"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, got {self.seed!r}")
        if not isinstance(self.template, str) or "{conditions}" not in self.template:
            raise ValueError(f"template must contain '{{conditions}}', got {self.template!r}")


@dataclass
class ListsResult:
    """What :func:`make_lists` made: the lists, what was left out, the lists built short of
    their options' shape, and the counts."""

    dataset: datasets.Dataset
    drops: list[Drop]
    report: dict[str, Any]
    shortfalls: list[Shortfall] = field(default_factory=list)


def list_features() -> datasets.Features:
    """The ``datasets`` features of a lists dataset (:data:`LIST_COLUMNS`, in order)."""
    s, strings = datasets.Value("string"), datasets.Sequence(datasets.Value("string"))
    features = {
        "query_id": s,
        "task_id": s,
        "dimension": s,
        "instruction": s,
        "statement": s,
        "query": s,
        "docs": strings,
        "labels": datasets.Sequence(datasets.Value("int64")),
        "doc_ids": strings,
        "origins": strings,
    }
    if list(features) != list(LIST_COLUMNS):  # records.py is the one list of the columns
        raise RuntimeError(f"list_features() is out of date with LIST_COLUMNS {list(LIST_COLUMNS)}")
    return datasets.Features(features)


def make_lists(
    tasks: Iterable[SeedTask],
    variants: Iterable[Variant],
    options: ListOptions | None = None,
    *,
    progress: bool = True,
) -> ListsResult:
    """Build the hierarchical lists [SynH-Rank §4.2, §5.4]: per task and dimension, one list
    per high-quality variant (its label-2 doc), each with the same lows and its own irrelevant
    draw.

    Args:
        tasks: the seed tasks (their statements are the queries).
        variants: labelled variants (``dimension`` and ``level`` set; those without a claim
            only serve as irrelevant docs of other tasks). Highs and lows are taken in the
            order given.
        options: :class:`ListOptions` (the paper's 1 + 4 + 1 by default).
        progress: show a progress bar over the tasks.

    Returns:
        A :class:`ListsResult`; lists sorted by task, then dimension, then the order of their
        high-quality variants. Each list short of ``n_high + n_low + n_irrelevant`` is a
        :class:`~trainers.quality_data.records.Shortfall` per short label; each list not built
        a ``Drop`` whose item is its ``query_id``; the report counts both.

    Raises:
        ValueError: two tasks share an id, or a variant is given twice.
    """
    from tqdm.auto import tqdm

    options = options or ListOptions()
    by_task: dict[str, SeedTask] = {}
    for t in tasks:
        if t.task_id in by_task:
            raise ValueError(f"two seed tasks share the id {t.task_id!r}: give each task once")
        by_task[t.task_id] = t
    drops: list[Drop] = []
    claims, pool = _sort_variants(list(variants), by_task, drops)
    owned = Counter(t for _, owners, _ in pool for t in owners)
    rows: list[dict[str, Any]] = []
    out = _Out(drops)  # appends to drops, in the order they happen
    for task_id in tqdm(sorted(by_task), desc="lists", disable=not progress):
        if task_id not in claims:
            drops.append(Drop(STAGE, "no labelled variant", task_id))
            continue
        for dim in QUALCODE_DIMENSIONS:
            task = by_task[task_id]
            rows += _make_lists(task, dim, claims[task_id], pool, owned[task_id], options, out)
    columns = {c: [r[c] for r in rows] for c in LIST_COLUMNS}  # from_list refuses no rows
    dataset = datasets.Dataset.from_dict(columns, features=list_features())
    report = _report(rows, drops, out, options, len(by_task))
    return ListsResult(dataset, drops, report, out.shortfalls)


@dataclass
class _Out:
    """What the lists of each task and dimension leave behind: the drops of variants and of
    lists not built (``lost``: their query ids), the shortfalls, the highs seen."""

    drops: list[Drop]
    lost: list[Drop] = field(default_factory=list)
    shortfalls: list[Shortfall] = field(default_factory=list)
    highs: int = 0

    def lose(self, reason: str, query_id: str, heads: list[Variant]) -> None:
        drop = Drop(STAGE, reason, query_id, " ".join(v.variant_id for v in heads))
        self.drops.append(drop)
        self.lost.append(drop)


Claims = dict[tuple[str, str, str], list[Variant]]
"""(task, dimension, level) -> the variants of that claim, in the order given."""
Pool = list[tuple[str, set[str], Variant]]
"""The irrelevant docs: (code, the tasks it belongs to, its first variant), by code."""


def _sort_variants(
    variants: list[Variant], tasks: dict[str, SeedTask], drops: list[Drop]
) -> tuple[dict[str, Claims], Pool]:
    """Claims by task -> (task, dimension, level) -> variants in the order given, and the pool
    of irrelevant docs: (code, its tasks, first variant), sorted by code."""
    claims: dict[str, Claims] = defaultdict(lambda: defaultdict(list))
    seen: set[str] = set()
    codes: dict[str, tuple[set[str], Variant]] = {}
    for v in variants:
        if not isinstance(v, Variant):
            raise TypeError(f"make_lists() takes Variants, got {type(v).__name__}")
        if v.variant_id in seen:
            raise ValueError(f"variant {v.variant_id} is given twice: give each variant once")
        seen.add(v.variant_id)
        if v.task_id not in tasks:
            drops.append(Drop(STAGE, "no seed task", v.variant_id, v.task_id))
            continue
        if v.passed is False:
            # a "relevant" doc that fails its tests is not relevant, nor a clean negative
            drops.append(Drop(STAGE, "fails its tests", v.variant_id, v.task_id))
            continue
        if not v.code.strip():
            drops.append(Drop(STAGE, "empty code", v.variant_id, v.task_id))
            continue
        if v.dimension is not None:
            claims[v.task_id][(v.task_id, v.dimension, v.level)].append(v)
        owners, first = codes.setdefault(v.code, (set(), v))
        owners.add(v.task_id)
        if v.variant_id < first.variant_id:
            codes[v.code] = (owners, v)
    pool = [(code, owners, first) for code, (owners, first) in sorted(codes.items())]
    return claims, pool


def _make_lists(
    task: SeedTask,
    dim: str,
    claims: Claims,
    pool: Pool,
    own: int,
    options: ListOptions,
    out: _Out,
) -> list[dict[str, Any]]:
    """The lists of ``task`` on ``dim``, one per group of ``n_high`` highs; ``own`` = how many
    codes of ``pool`` are the task's."""
    highs = claims.get((task.task_id, dim, "high"), [])
    lows = claims.get((task.task_id, dim, "low"), [])
    where = f"{dim}/{task.task_id}"
    if not highs:
        if lows:
            out.lose("no high-quality variant", where, [])
        return []
    # every distinct high heads a list (in groups of n_high); the lows are the first n_low in
    # the order given, the same in each list; a list never holds the same code twice (at two
    # levels), so a repeat leaves room for the next one
    heads: list[Variant] = []
    left: list[tuple[Variant, str]] = []
    codes: set[str] = set()
    for v in highs:
        if v.code in codes:
            left.append(
                (v, "the same code as another high-quality variant of its task and dimension")
            )
        else:
            heads.append(v)
            codes.add(v.code)
    out.highs += len(heads)
    taken: list[Variant] = []
    for v in lows:
        if v.code in codes:
            left.append((v, "the same code as another doc of its list"))
        elif len(taken) == options.n_low:
            left.append((v, f"more than {options.n_low} low-quality variants"))
        else:
            taken.append(v)
            codes.add(v.code)
    groups = [heads[i : i + options.n_high] for i in range(0, len(heads), options.n_high)]
    ids = [f"{where}/{k}" for k in range(len(groups))]
    if len(taken) < options.min_low:
        for query_id, group in zip(ids, groups, strict=True):
            out.lose(f"fewer than {options.min_low} low-quality variants", query_id, group)
        return []
    # a str seed goes through sha512: the same on every machine and in any order of the lists
    rng = random.Random(f"{options.seed}:lists:{task.task_id}:{dim}")
    # the pool holds each code once; n + own draws without replacement always hold n codes of
    # other tasks when there are n (the task's own codes, its docs among them, are skipped);
    # one draw for all the lists of the task and dimension, so they share no irrelevant doc
    # unless the other tasks have too few codes for that
    need = options.n_irrelevant * len(groups)
    k = min(len(pool), need + own)
    drawn = [pool[i] for i in rng.sample(range(len(pool)), k)]
    others = [v for _, owners, v in drawn if task.task_id not in owners][:need]
    if len(others) < options.n_irrelevant:
        for query_id, group in zip(ids, groups, strict=True):
            out.lose(f"fewer than {options.n_irrelevant} irrelevant variants", query_id, group)
        return []
    out.drops += [Drop(STAGE, reason, v.variant_id, where) for v, reason in left]
    text = instruction([dim], options.template)
    rows = []
    for n, (query_id, group) in enumerate(zip(ids, groups, strict=True)):
        first = n * options.n_irrelevant
        irrelevant = [others[(first + j) % len(others)] for j in range(options.n_irrelevant)]
        docs = [(v, LABEL_HIGH) for v in group] + [(v, LABEL_LOW) for v in taken]
        docs += [(v, LABEL_IRRELEVANT) for v in irrelevant]
        for label, have, want, name in (
            (LABEL_HIGH, len(group), options.n_high, "high"),
            (LABEL_LOW, len(taken), options.n_low, "low"),
        ):
            if have < want:
                reason = f"fewer than {want} {name}-quality variants"
                out.shortfalls.append(Shortfall(STAGE, reason, query_id, label, have, want))
        rng.shuffle(docs)
        rows.append(
            {
                "query_id": query_id,
                "task_id": task.task_id,
                "dimension": dim,
                "instruction": text,
                "statement": task.statement,
                "query": join_instruction(text, task.statement),
                "docs": [v.code for v, _ in docs],
                "labels": [label for _, label in docs],
                "doc_ids": [v.variant_id for v, _ in docs],
                "origins": [v.origin for v, _ in docs],
            }
        )
    return rows


def _report(
    rows: list[dict[str, Any]], drops: list[Drop], out: _Out, options: ListOptions, n_tasks: int
) -> dict[str, Any]:
    by_stage: dict[str, Counter] = defaultdict(Counter)
    for d in drops:
        by_stage[d.stage][d.reason] += 1
    labels = Counter(label for r in rows for label in r["labels"])
    order = (LABEL_HIGH, LABEL_LOW, LABEL_IRRELEVANT)
    asked = f"{options.n_high}+{options.n_low}+{options.n_irrelevant}"
    shapes = Counter("+".join(str(r["labels"].count(x)) for x in order) for r in rows)
    short = {s.item for s in out.shortfalls}
    missing = Counter()
    for s in out.shortfalls:
        missing[s.label] += s.want - s.have
    heading = sum(r["labels"].count(LABEL_HIGH) for r in rows)
    return {
        "options": asdict(options),
        "tasks": n_tasks,
        "tasks_with_a_list": len({r["task_id"] for r in rows}),
        "lists": len(rows),
        "lists_per_dimension": {
            d: sum(1 for r in rows if r["dimension"] == d) for d in QUALCODE_DIMENSIONS
        },
        "docs_per_label": {str(k): labels[k] for k in (LABEL_HIGH, LABEL_LOW, LABEL_IRRELEVANT)},
        "list_lengths": {
            str(n): c for n, c in sorted(Counter(len(r["docs"]) for r in rows).items())
        },
        "origins": dict(sorted(Counter(o for r in rows for o in r["origins"]).items())),
        "list_shapes": dict(sorted(shapes.items(), key=lambda kv: (-kv[1], kv[0]))),
        "full_lists": shapes[asked],
        "short_lists": dict(sorted(Counter(s.reason for s in out.shortfalls).items())),
        "short_lists_total": len(short),
        "missing_docs_per_label": {str(k): missing[k] for k in order},
        "lists_not_built": dict(sorted(Counter(d.reason for d in out.lost).items())),
        "high_variants": {"distinct": out.highs, "label_2_of_a_list": heading},
        "dropped": {stage: dict(sorted(c.items())) for stage, c in sorted(by_stage.items())},
    }


def summary(report: dict[str, Any]) -> str:
    """One line on how far the lists of ``report`` (:func:`make_lists`') are from their
    options' shape: full, short (by reason, the docs missing per label) and not built."""
    o = report["options"]
    asked = f"{o['n_high']}+{o['n_low']}+{o['n_irrelevant']}"
    parts = [f"{report['lists']} lists, {report['full_lists']} of them {asked}"]
    if report["short_lists_total"]:
        why = "; ".join(f"{r}: {n}" for r, n in report["short_lists"].items())
        gaps = ", ".join(f"{n} of label {k}" for k, n in report["missing_docs_per_label"].items()
                         if n)  # fmt: skip
        parts.append(f"{report['short_lists_total']} built short ({why}; docs missing: {gaps})")
    not_built = report["lists_not_built"]
    if not_built:
        why = "; ".join(f"{r}: {n}" for r, n in not_built.items())
        parts.append(f"{sum(not_built.values())} not built ({why})")
    highs = report["high_variants"]
    parts.append(f"{highs['label_2_of_a_list']} of {highs['distinct']} high-quality variants "
                 "are the label-2 doc of a list")  # fmt: skip
    return "; ".join(parts)


def write_lists(
    folder: str | os.PathLike[str],
    result: ListsResult,
    *,
    split: ProblemSplit | None = None,
    sources: Sequence[str | os.PathLike[str]] = (),
    overwrite: bool = False,
) -> Path:
    """Write ``lists.parquet``, ``report.json`` (with every drop), ``problem_split.json`` (when
    ``split`` is given) and a ``README.md`` into ``folder``, atomically; returns the folder.

    The same result always gives the same bytes.

    Raises:
        FileExistsError: ``folder`` exists and ``overwrite`` is false.
    """
    import pyarrow.parquet as pq

    out = Path(folder)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    if split is not None and not isinstance(split, ProblemSplit):
        raise TypeError(f"split must be a ProblemSplit, got {type(split).__name__}")
    report = {
        **result.report,
        "sources": [os.fspath(s) for s in sources],
        "problem_split": None
        if split is None
        else {"file": SPLIT_FILE, "seed": split.seed, "train": len(split.train)},
        "drops": [asdict(d) for d in result.drops],
        "shortfalls": [asdict(s) for s in result.shortfalls],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        # pyarrow directly (Dataset.to_parquet draws a progress bar of its own); the rows as
        # the dataset shows them, its features in the schema metadata
        pq.write_table(result.dataset.with_format("arrow")[:], tmp / LISTS_FILE)
        (tmp / REPORT_FILE).write_text(
            json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        if split is not None:
            write_split(tmp / SPLIT_FILE, split)
        (tmp / "README.md").write_text(
            _readme(out, result.report, split, report["sources"]), encoding="utf-8"
        )
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _readme(
    out: Path, report: dict[str, Any], split: ProblemSplit | None, sources: list[str]
) -> str:
    o = report["options"]
    per_dim = ", ".join(f"{d} {n:,}" for d, n in report["lists_per_dimension"].items())
    labels = report["docs_per_label"]
    shapes = ", ".join(f"{k}: {n:,}" for k, n in report.get("list_shapes", {}).items())
    lines = [
        "# SynH-Rank training lists",
        "",
        "Hierarchical lists for quality-aware reranker training (SynH-Rank §4.2, §5.4): per "
        "task and quality dimension, one list per high-quality variant: "
        f"{o['n_high']} high-quality relevant doc (label 2), {o['n_low']} low-quality "
        f"relevant docs (label 1) and {o['n_irrelevant']} irrelevant doc(s) of other tasks "
        "(label 0), in a seeded random order. The query is "
        f"`{o['template']}` + a newline + the task statement.",
        "",
        f"- `{LISTS_FILE}`: {report['lists']:,} lists ({per_dim}) on "
        f"{report['tasks_with_a_list']:,} tasks; docs by label: 2: {labels['2']:,}, "
        f"1: {labels['1']:,}, 0: {labels['0']:,}; lists by shape (2+1+0): {shapes or 'none'}.",
        *([f"- {summary(report)}."] if "full_lists" in report else []),
        f"- `{REPORT_FILE}`: the counts, every variant or list left out with its reason and "
        "every list built short (`shortfalls`).",
    ]
    if sources:
        lines.append(f"- Built from: {', '.join(f'`{s}`' for s in sources)}.")
    if split is not None:
        lines += [
            f"- `{SPLIT_FILE}`: the problem split (seed {split.seed}, evaluation fraction "
            f"{split.eval_fraction:g}): these lists were built from its {len(split.train):,} "
            f"training problems only; {len(split.eval):,} problems are held out for evaluation.",
            "",
            "The evaluation build must leave the training problems out:",
            "",
            "```",
            f"coreb qualcode build --source ... --exclude-problems-from {out / SPLIT_FILE}",
            "```",
        ]
    lines += [
        "",
        "```python",
        "from trainers.quality_data.lists import read_lists",
        f'lists = read_lists("{out}")',
        "```",
        "",
    ]
    return "\n".join(lines)


def read_lists(path: str | os.PathLike[str]) -> datasets.Dataset:
    """A lists dataset from a folder written by :func:`write_lists` (or its parquet file).

    Raises:
        FileNotFoundError: no lists file there.
        ValueError: the file lacks a column of :data:`LIST_COLUMNS` or has others; the message
            names the file and the columns.
    """
    import pyarrow.parquet as pq

    file = Path(path)
    if file.is_dir():
        file = file / LISTS_FILE
    if not file.is_file():
        raise FileNotFoundError(f"no lists at {file} (write them with write_lists)")
    try:
        table = pq.read_table(file)
    except Exception as e:  # pyarrow raises its own ArrowInvalid for a file that is not parquet
        raise ValueError(f"{file}: not a parquet file ({e})") from e
    missing = [c for c in LIST_COLUMNS if c not in table.column_names]
    extra = [c for c in table.column_names if c not in LIST_COLUMNS]
    if missing or extra:
        raise ValueError(
            f"{file}: a lists file has the columns {list(LIST_COLUMNS)}; "
            + "; ".join(
                part
                for part in (
                    f"missing {missing}" if missing else "",
                    f"unexpected {extra}" if extra else "",
                )
                if part
            )
        )
    table = table.select(list(LIST_COLUMNS))
    return datasets.Dataset.from_dict(table.to_pydict(), features=list_features())


__all__ = [
    "REPORT_FILE",
    "ListOptions",
    "ListsResult",
    "list_features",
    "make_lists",
    "read_lists",
    "summary",
    "write_lists",
]
