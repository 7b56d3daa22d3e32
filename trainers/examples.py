"""Yes/no training examples for the CoREB-Reranker [CoREB §4.3, Appendix B.3; protocol §5.1].

An example is one (instruction, query, document) judgement with the answer ``"yes"`` or
``"no"``, the columns of :data:`EXAMPLE_FEATURES`. Per source record (a query of a subtask of
the train release) the recipe gives:

* each positive (relevance 2) ``positive_copies`` times, answer ``"yes"`` (kind ``positive``);
* ``easy_negatives`` random unjudged documents of the corpus the subtask ranks (``easy_negative``);
* ``hard_negatives`` relevance-1 documents, random among them (``hard_negative``), and where the
  record has fewer, the best-scoring documents of a first-stage run (``mined_negative``).

A negative is never a judged document, never an excluded one (the c2c anchor) and never a
document of the query's own problem: an unjudged text of the same problem is often the match
itself (a ``c2t_match`` negative pair's own original statement), so calling it "no" would teach
the model a false negative. Records without a positive (``c2t_match`` negative pairs) still give
their negatives. Examples are shuffled across tasks with the seed; every random choice is seeded
per record, so a record's examples do not change when other subtasks are added or removed.

Sources plug in as example generators (:data:`EXAMPLE_GENERATORS`, one function each), chosen by
a source spec (:func:`generate_examples`)::

    coreb:PATH[@RELEASE]    a built CoREB folder, its Hub id, or a release folder (official
                            layout); RELEASE is the split (needed when PATH holds several).
                            A plain PATH without a generator prefix is coreb.
    pairs_jsonl:FILE        your own code-search pairs, one JSON object a line (see
                            :func:`trainers.pairs_jsonl.pairs_jsonl_examples`).
"""

from __future__ import annotations

import logging
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import datasets

from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.coreb.release import cached_release
from coreb_toolkit.builders.coreb.rows import corpus_rows, subtask_rows
from coreb_toolkit.builders.coreb.subtask_data import subtasks_by_release
from coreb_toolkit.builders.hub_folder import hub_folder_configs, is_hub_folder, read_hub_config
from coreb_toolkit.vocabulary import CORPUS_CODE, CORPUS_TEXT, MAIN_TASKS, main_task_key
from eval_metrics.trec_order import trec_order

logger = logging.getLogger(__name__)

EXAMPLE_COLUMNS: tuple[str, ...] = (
    "instruction",
    "query",
    "document",
    "answer",  # "yes" | "no"
    "kind",  # positive | easy_negative | hard_negative | mined_negative
    "main_task",  # t2c | c2t | c2c
    "subtask",
    "release",
    "query_id",
    "doc_id",
    "source_problem_id",  # the query's problem: the unit of disjointness and of the split
    "doc_problem_id",  # the document's problem where known, else ""
    "source",  # the generator: coreb | pairs_jsonl | ...
)
EXAMPLE_FEATURES = datasets.Features({name: datasets.Value("string") for name in EXAMPLE_COLUMNS})
"""The columns of a training example, every one a string."""
KINDS: tuple[str, ...] = ("positive", "easy_negative", "hard_negative", "mined_negative")
YES, NO = "yes", "no"


def _example(**values: str) -> dict[str, str]:
    """One example in column order; the answer follows from the kind."""
    values["answer"] = YES if values["kind"] == "positive" else NO
    return {column: values[column] for column in EXAMPLE_COLUMNS}


def _count_field(owner: str, name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}.{name}={value!r}: must be an integer >= {minimum}")


@dataclass(frozen=True)
class ExampleOptions:
    """How many examples of each kind a source record gives, and which records.

    Args:
        positive_copies: times each positive appears (the paper: 2).
        easy_negatives: random unjudged documents per record (the paper: 1).
        hard_negatives: relevance-1 documents per record, topped up with mined ones (the paper: 1).
        miner: the first-stage retriever that mines hard negatives where a record has too few
            relevance-1 items (a name for ``coreb_toolkit.retrieval.registry.make_retriever``).
        mine_top_k: depth of the mining run per query.
        subtasks: train on these subtasks only (default: all of the release).
        main_tasks: train on these main tasks only (``t2c``, ``c2t``, ``c2c``; default: all).
        seed: seeds every sample and the shuffle.
        validation_fraction: share of the problems held out by :func:`split_validation`.
    """

    positive_copies: int = 2
    easy_negatives: int = 1
    hard_negatives: int = 1
    miner: str = "bm25"
    mine_top_k: int = 20
    subtasks: tuple[str, ...] | None = None
    main_tasks: tuple[str, ...] | None = None
    seed: int = 0
    validation_fraction: float = 0.05

    def __post_init__(self) -> None:
        name = type(self).__name__
        _count_field(name, "positive_copies", self.positive_copies, 1)
        _count_field(name, "easy_negatives", self.easy_negatives, 0)
        _count_field(name, "hard_negatives", self.hard_negatives, 0)
        _count_field(name, "mine_top_k", self.mine_top_k, 1)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"{name}.seed={self.seed!r}: must be an integer")
        if not isinstance(self.miner, str) or not self.miner:
            raise ValueError(f"{name}.miner={self.miner!r}: name a retriever, e.g. 'bm25'")
        fraction = self.validation_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            raise ValueError(f"{name}.validation_fraction={fraction!r}: must be a number")
        if not 0.0 <= fraction < 1.0:
            raise ValueError(
                f"{name}.validation_fraction={fraction!r}: must be in [0, 1) (0 = no split)"
            )
        for field_name in ("subtasks", "main_tasks"):
            value = getattr(self, field_name)
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(
                    f"{name}.{field_name}={value!r}: must be a list of names (or None for all)"
                )
            if not value:
                raise ValueError(f"{name}.{field_name}=[]: name at least one, or None for all")
            object.__setattr__(self, field_name, tuple(value))  # frozen: normalise once
        for key in self.main_tasks or ():
            if key not in MAIN_TASKS:
                raise ValueError(
                    f"{name}.main_tasks: unknown main task {key!r}; expected some of "
                    f"{list(MAIN_TASKS)}"
                )


# -- reading a CoREB dataset ------------------------------------------------------------------


def _is_built(source: str) -> bool:
    return is_hub_folder(source)


def _release_data(source: str, release: str) -> Any:
    return cached_release(source, QrelsOptions()).releases[release]


def dataset_releases(dataset: str | os.PathLike[str]) -> list[str]:
    """The releases (splits) of a CoREB dataset: a built folder, its Hub id or a release folder."""
    return list(subtasks_by_release(str(dataset)))


def _pick_releases(source: str, release: str | None, *, one: bool) -> list[str]:
    names = dataset_releases(source)
    if release is not None:
        if release not in names:
            raise ValueError(f"release {release!r} is not in {source}; it has: {', '.join(names)}")
        return [release]
    if one and len(names) > 1:
        raise ValueError(
            f"{source} holds several releases ({', '.join(names)}): name the one to train on "
            f"(coreb:{source}@{names[0]}, or release=...)"
        )
    return names


def _query_rows(
    source: str, release: str, subtask: str, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    if _is_built(source):
        return read_hub_config(source, subtask, release, columns=columns)
    return list(subtask_rows(_release_data(source, release), subtask))


def _corpus_rows(
    source: str, release: str, corpus: str, columns: list[str] | None = None
) -> list[dict[str, Any]]:
    if _is_built(source):
        if corpus not in hub_folder_configs(source):
            raise ValueError(f"{source} has no corpus config {corpus!r}: rebuild it (coreb build)")
        return read_hub_config(source, corpus, release, columns=columns)
    return list(corpus_rows(_release_data(source, release), corpus))


def problem_statements(
    dataset: str | os.PathLike[str], release: str | None = None
) -> dict[str, list[str]]:
    """The problem statements of a CoREB dataset (every release, or ``release``), by problem.

    A problem's statements are its ``corpus_text`` texts (the original and its rewrites) and the
    texts of its t2c queries, each once, in a fixed order. They are what decontamination compares
    (:mod:`trainers.decontamination`).
    """
    source = str(dataset)
    by_release = subtasks_by_release(source)
    out: dict[str, dict[str, None]] = {}

    def add(pid: Any, text: Any) -> None:
        if pid and isinstance(text, str) and text.strip():
            out.setdefault(str(pid), {})[text] = None

    for split in _pick_releases(source, release, one=False):
        for row in _corpus_rows(source, split, CORPUS_TEXT):
            add(row.get("source_problem_id"), row.get("text"))
        for subtask in by_release[split]:
            if main_task_key(subtask) == "t2c":
                for row in _query_rows(source, split, subtask):
                    add(row.get("source_problem_id"), row.get("query"))
    return {pid: list(texts) for pid, texts in sorted(out.items())}


def problem_ids(dataset: str | os.PathLike[str], release: str | None = None) -> set[str]:
    """Every ``source_problem_id`` of a CoREB dataset's queries and corpora (every release, or
    ``release``)."""
    source = str(dataset)
    by_release = subtasks_by_release(source)
    found: set[str] = set()
    for split in _pick_releases(source, release, one=False):
        rows: list[dict[str, Any]] = []
        for corpus in (CORPUS_CODE, CORPUS_TEXT):
            rows += _corpus_rows(source, split, corpus)
        for subtask in by_release[split]:
            rows += _query_rows(source, split, subtask)
        found |= {str(r["source_problem_id"]) for r in rows if r.get("source_problem_id")}
    return found


# -- the CoREB generator ----------------------------------------------------------------------


def _selected_subtasks(source: str, release: str, options: ExampleOptions) -> list[str]:
    available = subtasks_by_release(source)[release]
    for name in options.subtasks or ():
        if name not in available:
            raise ValueError(
                f"ExampleOptions.subtasks: {name!r} is not in release {release} of {source}; "
                f"it has: {', '.join(available)}"
            )
    keys = options.main_tasks or tuple(MAIN_TASKS)
    chosen = [
        s
        for s in available
        if (options.subtasks is None or s in options.subtasks) and main_task_key(s) in keys
    ]
    if not chosen:
        raise ValueError(
            f"no subtask of release {release} of {source} is selected by subtasks="
            f"{options.subtasks} and main_tasks={options.main_tasks}; it has: "
            f"{', '.join(available)}"
        )
    return chosen


class _Miner:
    """Mining runs per subtask: the caller's precomputed run, else the miner's, made lazily."""

    def __init__(self, options: ExampleOptions, runs: Mapping[str, Mapping] | None) -> None:
        self.options = options
        self.runs = runs or {}
        self._retriever: Any = None

    def run(self, name: str, data: Any, qids: Sequence[str]) -> Mapping[str, Mapping[str, float]]:
        if name in self.runs:
            missing = [q for q in qids if q not in self.runs[name]]
            if missing:
                raise ValueError(
                    f"runs[{name!r}] has no ranking for queries {missing[:5]} (of {len(missing)})"
                    " that need mined hard negatives; give their runs, or leave the subtask out "
                    "of runs so that the miner ranks it"
                )
            return self.runs[name]
        if self._retriever is None:
            from coreb_toolkit.retrieval.registry import make_retriever

            self._retriever = make_retriever(self.options.miner)
        family = main_task_key(name)
        # as the benchmark runner picks them (coreb_toolkit.benchmark.runner._runs)
        query_type = MAIN_TASKS[family].query_type if family in MAIN_TASKS else "auto"
        document_type = "code" if data.corpus_name == CORPUS_CODE else "text"
        return self._retriever.search(
            {q: data.queries[q] for q in qids}, data.corpus, top_k=self.options.mine_top_k,
            query_type=query_type, document_type=document_type,
        )  # fmt: skip


def _sample(rng: random.Random, pool: Sequence[Any], k: int) -> list[Any]:
    return rng.sample(list(pool), min(k, len(pool)))


def _easy(rng: random.Random, corpus_ids: Sequence[str], blocked: set[str], k: int) -> list[str]:
    """``k`` random documents outside ``blocked``: rejection sampling (a corpus is large, a
    record's blocked set small), the filtered corpus only when that keeps missing."""
    chosen: list[str] = []
    for _ in range(20 * k if corpus_ids else 0):
        doc = corpus_ids[rng.randrange(len(corpus_ids))]
        if doc not in blocked and doc not in chosen:
            chosen.append(doc)
            if len(chosen) == k:
                return chosen
    rest = [d for d in corpus_ids if d not in blocked and d not in chosen]
    return chosen + _sample(rng, rest, k - len(chosen))


def _record_docs(
    rng: random.Random,
    judged: Mapping[str, int],
    blocked: set[str],
    corpus_ids: Sequence[str],
    corpus: Mapping[str, str],
    mined_run: Mapping[str, float] | None,
    options: ExampleOptions,
) -> list[tuple[str, str]]:
    """(kind, doc id) of one record: its positives, hard, mined and easy negatives.

    ``blocked`` (judged, excluded and same-problem documents) is never a negative but a
    relevance-1 one; ``corpus_ids`` is the corpus's ids, sorted."""
    docs = [("positive", d) for d in sorted(judged) if judged[d] == 2
            for _ in range(options.positive_copies)]  # fmt: skip
    hard = _sample(rng, sorted(d for d, r in judged.items() if r == 1), options.hard_negatives)
    docs += [("hard_negative", d) for d in hard]
    taken = set(blocked)
    if mined_run is not None:
        need = options.hard_negatives - len(hard)
        mined = [
            d
            for d in trec_order(mined_run, single_precision=False)
            if d not in taken and d in corpus
        ][:need]
        docs += [("mined_negative", d) for d in mined]
        taken |= set(mined)
    if options.easy_negatives:
        easy = _easy(rng, corpus_ids, taken, options.easy_negatives)
        docs += [("easy_negative", d) for d in easy]
    return docs


def _subtask_examples(
    source: str,
    release: str,
    name: str,
    data: Any,
    problems: Mapping[str, str],
    miner: _Miner,
    options: ExampleOptions,
) -> list[dict[str, str]]:
    """The examples of one subtask's records; ``problems`` maps its corpus's docs to problems."""
    from reranker.instructions import instruction_for

    by_problem: dict[str, set[str]] = {}
    for doc, doc_pid in problems.items():
        by_problem.setdefault(doc_pid, set()).add(doc)
    rows = _query_rows(source, release, name, columns=["query_id", "source_problem_id"])
    query_problem = {r["query_id"]: r.get("source_problem_id") for r in rows}
    qids = sorted(data.queries)
    short = [q for q in qids if sum(r == 1 for r in data.qrels.get(q, {}).values())
             < options.hard_negatives]  # fmt: skip
    mined = miner.run(name, data, short) if short else {}
    corpus_ids = sorted(data.corpus)
    instruction = instruction_for(name)
    asked = options.easy_negatives + options.hard_negatives
    examples: list[dict[str, str]] = []
    few = 0
    for qid in qids:
        pid = query_problem.get(qid)
        if not pid:
            raise ValueError(
                f"{source}: query {qid} of {name} ({release}) has no source_problem_id; "
                "problem-level disjointness and the validation split need one per query"
            )
        judged = data.qrels.get(qid, {})
        blocked = set(judged) | set(data.exclude.get(qid, ())) | by_problem.get(pid, set())
        rng = random.Random(f"{options.seed}:{release}:{name}:{qid}")
        run = mined.get(qid, {}) if qid in short else None
        docs = _record_docs(rng, judged, blocked, corpus_ids, data.corpus, run, options)
        few += sum(kind != "positive" for kind, _ in docs) < asked
        for kind, doc in docs:
            if doc not in data.corpus:
                raise ValueError(
                    f"{source}: {name} ({release}) judges {doc} for {qid}, but the corpus "
                    f"{data.corpus_name} has no such document"
                )
            examples.append(
                _example(
                    instruction=instruction,
                    query=data.queries[qid],
                    document=data.corpus[doc],
                    kind=kind,
                    main_task=str(main_task_key(name)),
                    subtask=name,
                    release=release,
                    query_id=qid,
                    doc_id=doc,
                    source_problem_id=str(pid),
                    doc_problem_id=problems.get(doc, ""),
                    source="coreb",
                )
            )
    if few:
        logger.warning(
            "%s (%s): %d of %d records got fewer than %d negatives (too few documents outside "
            "their judged, excluded and same-problem ones)",
            name,
            release,
            few,
            len(qids),
            asked,
        )
    return examples


def coreb_examples(
    dataset: str | os.PathLike[str],
    release: str | None = None,
    options: ExampleOptions | None = None,
    *,
    runs: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
) -> list[dict[str, str]]:
    """The yes/no examples of one release of a CoREB dataset (protocol §5.1), shuffled.

    Args:
        dataset: a built CoREB folder, its Hub id, or a release folder in the official layout.
        release: the split to train on (default: the only one; an error names them otherwise).
        options: counts, selection and seed (:class:`ExampleOptions`).
        runs: precomputed first-stage runs ``{subtask: {query_id: {doc_id: score}}}`` to mine
            hard negatives from; a subtask without one is ranked by ``options.miner``
            (``query_type`` / ``document_type`` as the benchmark runner picks them).

    Returns:
        Examples with the columns of :data:`EXAMPLE_FEATURES`.
    """
    from coreb_toolkit.benchmark.runner import discover

    options = options or ExampleOptions()
    source = str(dataset)
    (release,) = _pick_releases(source, release, one=True)
    names = _selected_subtasks(source, release, options)
    (item,) = discover(source, names, [release])
    miner = _Miner(options, runs)
    doc_problems: dict[str, dict[str, str]] = {}
    examples: list[dict[str, str]] = []
    for name, data in item.subtasks.items():
        if data.corpus_name not in doc_problems:
            rows = _corpus_rows(source, release, data.corpus_name,
                                columns=["doc_id", "source_problem_id"])  # fmt: skip
            doc_problems[data.corpus_name] = {
                r["doc_id"]: str(r.get("source_problem_id") or "") for r in rows
            }
        problems = doc_problems[data.corpus_name]
        examples += _subtask_examples(source, release, name, data, problems, miner, options)
    random.Random(options.seed).shuffle(examples)
    logger.info("coreb examples from %s@%s: %s", source, release, example_counts(examples))
    return examples


# -- registry and source specs ----------------------------------------------------------------


def split_release(spec: str) -> tuple[str, str | None]:
    """``"path@release"`` -> ``("path", "release")``; ``"path"`` -> ``("path", None)``.

    The text after the last ``@`` is a release when it holds no path separator and the whole
    spec is not itself an existing path."""
    head, sep, tail = spec.rpartition("@")
    if not sep or not head or not tail or re.search(r"[/\\]", tail) or os.path.exists(spec):
        return spec, None
    return head, tail


def _coreb_source(location: str, options: ExampleOptions) -> list[dict[str, str]]:
    path, release = split_release(location)
    return coreb_examples(path, release, options)


def _pairs_source(location: str, options: ExampleOptions) -> list[dict[str, str]]:
    from trainers.pairs_jsonl import pairs_jsonl_examples

    return pairs_jsonl_examples(location, options)


EXAMPLE_GENERATORS: dict[str, Callable[[str, ExampleOptions], list[dict[str, str]]]] = {
    "coreb": _coreb_source,
    "pairs_jsonl": _pairs_source,
}
"""Example generators by name: ``generator(location, options) -> examples``, where
``location`` is what follows ``name:`` in a source spec. Add one entry to plug in a source."""

_SPEC = re.compile(r"(?P<name>[A-Za-z_][\w-]+):(?P<rest>.+)", re.DOTALL)


def parse_source(spec: str) -> tuple[str, str]:
    """A source spec -> ``(generator name, location)``: ``"name:location"`` or a plain path
    (the ``coreb`` generator). A one-letter prefix is a Windows drive, not a generator."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"source spec {spec!r}: expected NAME:LOCATION or a CoREB path")
    match = _SPEC.fullmatch(spec)
    if match is None or os.path.exists(spec):
        return "coreb", spec
    name = match["name"]
    if name not in EXAMPLE_GENERATORS:
        raise ValueError(
            f"source spec {spec!r}: unknown generator {name!r}; known: "
            f"{', '.join(EXAMPLE_GENERATORS)} (e.g. coreb:PATH[@RELEASE], pairs_jsonl:FILE)"
        )
    return name, match["rest"]


def generate_examples(
    sources: Sequence[str], options: ExampleOptions | None = None
) -> list[dict[str, str]]:
    """The examples of every source spec (``coreb:PATH[@RELEASE]``, ``pairs_jsonl:FILE``, a
    plain CoREB path; see the module docstring), shuffled together with ``options.seed``."""
    options = options or ExampleOptions()
    if isinstance(sources, str) or not sources:
        raise ValueError(f"sources must be a non-empty list of source specs, got {sources!r}")
    examples: list[dict[str, str]] = []
    for spec in sources:
        name, location = parse_source(spec)
        got = EXAMPLE_GENERATORS[name](location, options)
        logger.info("%s: %d examples", spec, len(got))
        examples += got
    random.Random(options.seed).shuffle(examples)
    return examples


# -- split, dataset, counts -------------------------------------------------------------------


def split_validation(
    examples: Sequence[Mapping[str, str]], fraction: float, seed: int = 0
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``(train, validation)``, split by ``source_problem_id``: a validation problem's queries
    are never in train. ``round(fraction * problems)`` problems are held out, at least one when
    ``fraction > 0`` and at least one left to train on. (A validation problem's documents may
    still be negatives of training queries: the split keeps queries apart, not corpora.)"""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise ValueError(f"validation fraction must be a number, got {fraction!r}")
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"validation fraction={fraction!r}: must be in [0, 1) (0 = no split)")
    if fraction == 0:
        return [dict(e) for e in examples], []
    problems = sorted({e["source_problem_id"] for e in examples})
    if len(problems) < 2:
        raise ValueError(
            f"a validation split needs at least 2 problems to keep them apart; the examples have "
            f"{len(problems)} ({', '.join(problems) or 'none'}): add data or set the fraction to 0"
        )
    n = min(len(problems) - 1, max(1, round(fraction * len(problems))))
    held = set(random.Random(seed).sample(problems, n))
    train = [dict(e) for e in examples if e["source_problem_id"] not in held]
    validation = [dict(e) for e in examples if e["source_problem_id"] in held]
    return train, validation


def _check_columns(examples: Iterable[Mapping[str, Any]]) -> None:
    want = set(EXAMPLE_COLUMNS)
    for i, example in enumerate(examples):
        got = set(example)
        if got != want:
            raise ValueError(
                f"example {i} has columns missing {sorted(want - got)} / unexpected "
                f"{sorted(got - want)}; an example has exactly {list(EXAMPLE_COLUMNS)}"
            )
        if example["answer"] not in (YES, NO) or example["kind"] not in KINDS:
            raise ValueError(
                f"example {i}: answer={example['answer']!r} kind={example['kind']!r}; expected "
                f"answer yes|no and kind one of {KINDS}"
            )


def examples_dataset(examples: Sequence[Mapping[str, str]]) -> datasets.Dataset:
    """The examples as a ``datasets.Dataset`` with :data:`EXAMPLE_FEATURES` (to inspect, save
    with ``save_to_disk`` / ``to_json``, or push)."""
    _check_columns(examples)
    return datasets.Dataset.from_list(
        [{c: e[c] for c in EXAMPLE_COLUMNS} for e in examples], features=EXAMPLE_FEATURES
    )


def example_counts(examples: Iterable[Mapping[str, str]]) -> dict[str, Any]:
    """Counts for the data report: total, problems, and by kind, answer, source, main task,
    subtask (keys sorted), and the share of "yes" answers (None without examples)."""
    examples = list(examples)

    def by(column: str) -> dict[str, int]:
        return dict(sorted(Counter(e[column] for e in examples).items()))

    return {
        "total": len(examples),
        "problems": len({e["source_problem_id"] for e in examples}),
        "by_kind": by("kind"),
        "by_answer": by("answer"),
        "yes_share": (sum(e["answer"] == "yes" for e in examples) / len(examples))
        if examples
        else None,
        "by_source": by("source"),
        "by_main_task": by("main_task"),
        "by_subtask": by("subtask"),
    }


def example_statements(examples: Iterable[Mapping[str, str]]) -> dict[str, list[str]]:
    """The text queries (t2c) of ``examples`` by ``source_problem_id``: the statements of
    training problems a dataset does not describe otherwise (``pairs_jsonl`` rows), to add to
    :func:`problem_statements` for decontamination."""
    out: dict[str, dict[str, None]] = {}
    for e in examples:
        if e["main_task"] == "t2c":
            out.setdefault(e["source_problem_id"], {})[e["query"]] = None
    return {pid: list(texts) for pid, texts in sorted(out.items())}


__all__ = [
    "EXAMPLE_COLUMNS",
    "EXAMPLE_FEATURES",
    "EXAMPLE_GENERATORS",
    "KINDS",
    "ExampleOptions",
    "coreb_examples",
    "dataset_releases",
    "example_counts",
    "example_statements",
    "examples_dataset",
    "generate_examples",
    "parse_source",
    "problem_ids",
    "problem_statements",
    "split_release",
    "split_validation",
]
