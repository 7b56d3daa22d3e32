"""The hierarchical training lists of SynH-Rank [SynH-Rank §4.2, §5.4].

One list per (task, dimension) with a high-quality variant: ``n_high`` high-quality relevant
docs (label 2), up to ``n_low`` low-quality relevant docs of the same dimension (label 1) and
``n_irrelevant`` docs of other tasks (label 0): the paper's 1 + 4 + 1. The query is QualCode's
instruction for the dimension joined to the statement the way the cross-encoder joins them
(:func:`reranker.cross_encoder.join_instruction`), so training and evaluation see the same
text. The docs of a list are shuffled with the seeded rng (the labels follow them), so that a
model cannot learn a position. The dataset's columns are
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
            "help": "High-quality relevant docs per list (label 2); the first ones of the "
            "dimension in the order given (1)."
        },
    )
    n_low: int = field(
        default=4,
        metadata={
            "help": "Most low-quality relevant docs per list (label 1), the first ones of the "
            "dimension in the order given (label_real puts the most different first) (4)."
        },
    )
    n_irrelevant: int = field(
        default=1,
        metadata={
            "help": "Irrelevant docs per list (label 0): seeded draws of other tasks' variants, "
            "any dimension, no code twice (1)."
        },
    )
    min_low: int = field(
        default=1,
        metadata={
            "help": "A list with fewer low-quality docs than this is dropped (1: every list "
            "has all three levels)."
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
    """What :func:`make_lists` made: the lists, what was left out, and the counts."""

    dataset: datasets.Dataset
    drops: list[Drop]
    report: dict[str, Any]


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
    """Build the hierarchical lists [SynH-Rank §4.2].

    Args:
        tasks: the seed tasks (their statements are the queries).
        variants: labelled variants (``dimension`` and ``level`` set; those without a claim
            only serve as irrelevant docs of other tasks). Highs and lows are taken in the
            order given.
        options: :class:`ListOptions` (the paper's 1 + 4 + 1 by default).
        progress: show a progress bar over the tasks.

    Returns:
        A :class:`ListsResult`; lists sorted by task, then dimension.

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
    rows = []
    for task_id in tqdm(sorted(by_task), desc="lists", disable=not progress):
        if task_id not in claims:
            drops.append(Drop(STAGE, "no labelled variant", task_id))
            continue
        for dim in QUALCODE_DIMENSIONS:
            task = by_task[task_id]
            row = _make_list(task, dim, claims[task_id], pool, owned[task_id], options, drops)
            if row is not None:
                rows.append(row)
    columns = {c: [r[c] for r in rows] for c in LIST_COLUMNS}  # from_list refuses no rows
    dataset = datasets.Dataset.from_dict(columns, features=list_features())
    return ListsResult(dataset, drops, _report(rows, drops, options, len(by_task)))


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


def _make_list(
    task: SeedTask,
    dim: str,
    claims: Claims,
    pool: Pool,
    own: int,
    options: ListOptions,
    drops: list[Drop],
) -> dict[str, Any] | None:
    """The list of ``task`` on ``dim``; ``own`` = how many codes of ``pool`` are the task's."""
    highs = claims.get((task.task_id, dim, "high"), [])
    lows = claims.get((task.task_id, dim, "low"), [])
    where = f"{dim}/{task.task_id}"
    if not highs:
        if lows:
            drops.append(Drop(STAGE, "no high-quality variant", where))
        return None
    # the first n_high highs and n_low lows in the order given; a list never holds the same
    # code twice (at two levels), so a repeat leaves room for the next one
    docs: list[tuple[Variant, int]] = []
    left: list[tuple[Variant, str]] = []
    codes: set[str] = set()
    for given, label, cap, name in (
        (highs, LABEL_HIGH, options.n_high, "high"),
        (lows, LABEL_LOW, options.n_low, "low"),
    ):
        taken = 0
        for v in given:
            if v.code in codes:
                left.append((v, "the same code as another doc of its list"))
            elif taken == cap:
                left.append((v, f"more than {cap} {name}-quality variants"))
            else:
                docs.append((v, label))
                codes.add(v.code)
                taken += 1
    if sum(1 for _, label in docs if label == LABEL_LOW) < options.min_low:
        drops.append(Drop(STAGE, f"fewer than {options.min_low} low-quality variants", where))
        return None
    # a str seed goes through sha512: the same on every machine and in any order of the lists
    rng = random.Random(f"{options.seed}:lists:{task.task_id}:{dim}")
    # the pool holds each code once; n + own draws without replacement always hold n codes of
    # other tasks when there are n (the task's own codes, its docs among them, are skipped)
    k = min(len(pool), options.n_irrelevant + own)
    drawn = [pool[i] for i in rng.sample(range(len(pool)), k)]
    irrelevant = [(v, LABEL_IRRELEVANT) for _, owners, v in drawn if task.task_id not in owners]
    irrelevant = irrelevant[: options.n_irrelevant]
    if len(irrelevant) < options.n_irrelevant:
        drops.append(Drop(STAGE, f"fewer than {options.n_irrelevant} irrelevant variants", where))
        return None
    drops += [Drop(STAGE, reason, v.variant_id, where) for v, reason in left]
    docs += irrelevant
    rng.shuffle(docs)
    text = instruction([dim], options.template)
    return {
        "query_id": where,
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


def _report(
    rows: list[dict[str, Any]], drops: list[Drop], options: ListOptions, n_tasks: int
) -> dict[str, Any]:
    by_stage: dict[str, Counter] = defaultdict(Counter)
    for d in drops:
        by_stage[d.stage][d.reason] += 1
    labels = Counter(label for r in rows for label in r["labels"])
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
        "dropped": {stage: dict(sorted(c.items())) for stage, c in sorted(by_stage.items())},
    }


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
    lines = [
        "# SynH-Rank training lists",
        "",
        "Hierarchical lists for quality-aware reranker training (SynH-Rank §4.2): per query "
        f"(a task and a quality dimension) {o['n_high']} high-quality relevant doc (label 2), "
        f"up to {o['n_low']} low-quality relevant docs (label 1) and {o['n_irrelevant']} "
        "irrelevant doc(s) of other tasks (label 0), in a seeded random order. The query is "
        f"`{o['template']}` + a newline + the task statement.",
        "",
        f"- `{LISTS_FILE}`: {report['lists']:,} lists ({per_dim}) on "
        f"{report['tasks_with_a_list']:,} tasks; docs by label: 2: {labels['2']:,}, "
        f"1: {labels['1']:,}, 0: {labels['0']:,}.",
        f"- `{REPORT_FILE}`: the counts and every variant or list left out, with its reason.",
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
    "write_lists",
]
