"""Filtering and verifying SynH-Rank variants [SynH-Rank §4.1 "Filtering", §5.4].

The paper filters synthesised variants by removing empty outputs and duplicate snippets, then
drops tasks left with fewer than three unique candidates; seeds sharing a 10-gram with the test
set were removed beforehand. It could not check that a variant solves its task or that its
quality claim holds. :func:`filter_variants` does both, as stages run in this order
(:data:`FILTER_STAGES`; :data:`PAPER_STAGES` is the paper's filter alone):

``decontaminate``
    A seed task whose statement shares any word n-gram (``decontamination_ngram``, 10) with an
    evaluation statement (:func:`trainers.decontamination.statement_ngrams`) is dropped with
    all its variants: one drop per variant, ``where`` naming the task and the evaluation
    statement. A statement shorter than n words matches only an evaluation statement with the
    same normalised text.
``empty``
    Empty or whitespace-only code.
``duplicate``
    The same :func:`normalise_code` as an earlier variant of the same task (input order): the
    first is kept, the drop's ``where`` names it.
``tests``
    Every remaining variant runs on its task's tests in the sandbox, ``repeats`` times
    (:func:`coreb_toolkit.quality.measure.measure`, one call for all variants, parallel workers
    inside); ``passed``, ``cpu_time_ms`` and ``memory_kb`` (medians) are filled in. A variant
    failing its tests is dropped (a "relevant" variant that fails is not relevant), and so are
    the variants of a task without tests. A sandbox that cannot measure raises
    :class:`~coreb_toolkit.quality.measure.MeasurementUnavailable`: an error of the run, never a
    variant's failure.
``claim``
    The quality claim of every variant with one (``dimension`` set; the others pass):

    * speed and memory, with the figures of ``figures`` (``"measured"``: the sandbox medians;
      ``"judge"``: a real submission's judge figures). The *siblings* of a variant are the
      remaining variants of the same task and dimension at the opposite level; of those, the
      ones of the same (non-``None``) ``category`` when there is any (the guideline groups of
      Table 2 pair up), else all of them. A *high* ("fast", "memory-efficient") variant is kept
      iff ``margin * figure(high) < median(figure of its siblings)`` (a single same-category
      sibling is its own median). A *low* variant is kept iff some kept high of its task and
      dimension beats it the same way. A claim whose task has no variant at the opposite level
      is dropped "no sibling to compare"; one without the figure is dropped "no measured
      figures" / "no judge figures". Highs are decided first, since lows need the kept highs.
    * maintainability, by the smell analyser (run once over all remaining variants; each gets
      ``smell_count`` and ``smell_kinds``): a high must have 0 smells, a low at least 1 and more
      than the most smells of its task's kept maintainability highs (with the high rule, that
      is "at least 1"). A maintainability claim the analyser cannot read is dropped "analyser
      cannot read the code", ``where`` holding the analyser's reason; a variant without a
      maintainability claim the analyser cannot read is kept, its smell figures left ``None``.
``min_unique``
    A task with fewer than ``min_unique`` (3) distinct normalised codes among its remaining
    variants is dropped whole, one drop per variant (the paper's rule).

Every drop is a :class:`~trainers.quality_data.records.Drop` (``stage``, ``reason``,
``item`` = the variant's ``variant_id``, ``where``); the report counts them by stage and reason.
No input :class:`~trainers.quality_data.records.Variant` is changed: figures go on copies
(:func:`dataclasses.replace`).

    >>> from trainers.quality_data.records import SeedTask, Variant
    >>> task = SeedTask("t1", "Print the sum of two numbers.", tests=(("1 2\\n", "3\\n"),))
    >>> codes = ["print(sum(map(int, input().split())))", "a, b = map(int, input().split())\\n"
    ...          "print(a + b)", "print( sum(map(int, input().split())) )  # same", "  "]
    >>> variants = [Variant("t1", code, "plain") for code in codes]
    >>> result = filter_variants([task], variants, VerifyOptions(stages=PAPER_STAGES,
    ...                          min_unique=2), progress=False)
    >>> len(result.kept), sorted((d.stage, d.reason) for d in result.drops)
    (2, [('duplicate', 'same normalised code as an earlier variant'), ('empty', 'empty code')])
"""

from __future__ import annotations

import dataclasses
import io
import logging
import statistics
import time
import tokenize
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from coreb_toolkit.quality.measure import margin_label, measure
from coreb_toolkit.quality.smells import ANALYSERS, AnalysisError, get_analyser
from coreb_toolkit.sandbox import ExecutionConfig
from coreb_toolkit.vocabulary import QUALCODE_CONDITIONS
from trainers.decontamination import statement_ngrams
from trainers.quality_data.records import Drop, SeedTask, Variant

logger = logging.getLogger(__name__)

FILTER_STAGES: tuple[str, ...] = (
    "decontaminate", "empty", "duplicate", "tests", "claim", "min_unique",
)  # fmt: skip
"""Every stage of :func:`filter_variants`, in the order they run."""

PAPER_STAGES: tuple[str, ...] = ("decontaminate", "empty", "duplicate", "min_unique")
"""The paper's filter [SynH-Rank §4.1, §5.4]: no sandbox run, no claim check."""

STAGE_PRESETS: dict[str, tuple[str, ...]] = {
    "all": FILTER_STAGES,
    "paper": PAPER_STAGES,
    "none": (),
}
"""Names :attr:`VerifyOptions.stages` also accepts (``"none"``: the "w/o filter" ablation)."""

FIGURES: tuple[str, ...] = ("measured", "judge")
"""Where speed and memory figures come from: sandbox medians, or the judge's readings."""

LINE_COMMENTS: dict[str, str] = {"python": "#", "ruby": "#", "cpp": "//", "java": "//", "go": "//"}
"""The line-comment marker of each sandbox language (:func:`normalise_code`'s generic rule)."""

_FIGURE_FIELDS = {
    "measured": {"speed": "cpu_time_ms", "memory": "memory_kb"},
    "judge": {"speed": "judge_cpu_time_ms", "memory": "judge_memory_kb"},
}
_SIBLING = {"high": "low", "low": "high"}


def _positive_int(name: str, value: object, hint: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"VerifyOptions.{name} must be a positive int ({hint}), got {value!r}")


@dataclass(frozen=True)
class VerifyOptions:
    """What :func:`filter_variants` checks, with the paper's and QualCode's values as defaults
    [SynH-Rank §4.1; CoREB QualCode §3]; each field's ``help`` says what it does."""

    stages: tuple[str, ...] = field(
        default=FILTER_STAGES,
        metadata={
            "help": "The stages to run, an ordered subset of FILTER_STAGES ('decontaminate', "
            "'empty', 'duplicate', 'tests', 'claim', 'min_unique'), or a preset name: 'all' "
            "(default), 'paper' (PAPER_STAGES: the paper's filter, no sandbox), 'none'."
        },
    )
    margin: float = field(
        default=2.0,
        metadata={
            "help": "A high speed/memory variant must satisfy margin * figure(high) < "
            "figure(low siblings) (2.0, the QualCode margin)."
        },
    )
    repeats: int = field(
        default=5,
        metadata={"help": "Sandbox runs per variant in the tests stage; figures are medians."},
    )
    figures: str = field(
        default="measured",
        metadata={
            "help": "Speed/memory figures of the claim stage: 'measured' (the sandbox medians "
            "of the tests stage) or 'judge' (real submissions' judge figures, for data without "
            "tests)."
        },
    )
    analyser: str = field(
        default="ruff",
        metadata={
            "help": "The smell analyser of maintainability claims "
            "(coreb_toolkit.quality.smells.get_analyser)."
        },
    )
    min_unique: int = field(
        default=3,
        metadata={
            "help": "A task with fewer unique (normalised) remaining candidates is dropped "
            "whole (3, the paper's)."
        },
    )
    decontamination_ngram: int = field(
        default=10,
        metadata={
            "help": "A seed task sharing a word n-gram of this length with an evaluation "
            "statement is dropped (10, the paper's)."
        },
    )
    max_ngram_overlap: float = field(
        default=0.0,
        metadata={
            "help": "0 (the paper's rule): any shared n-gram drops the seed task; x > 0: only "
            "a task sharing more than this fraction of its n-grams with the evaluation "
            "statements (as the CoREB-Reranker's max_ngram_overlap). Judges' template text "
            "('input is given from standard input in the following format') makes the "
            "paper's rule drop most CodeNet tasks."
        },
    )

    def __post_init__(self) -> None:
        stages = self.stages
        if isinstance(stages, str):
            if stages not in STAGE_PRESETS:
                raise ValueError(
                    f"VerifyOptions.stages={stages!r}: a string must be a preset name "
                    f"({', '.join(STAGE_PRESETS)}); else give a list of stages from "
                    f"{list(FILTER_STAGES)}"
                )
            stages = STAGE_PRESETS[stages]
        if not isinstance(stages, Iterable) or isinstance(stages, Mapping):
            raise ValueError(
                f"VerifyOptions.stages must be a list of stages from {list(FILTER_STAGES)}, got "
                f"{type(stages).__name__}"
            )
        stages = tuple(stages)
        unknown = [s for s in stages if s not in FILTER_STAGES]
        if unknown:
            raise ValueError(
                f"VerifyOptions.stages: unknown stage(s) {unknown}; the stages are "
                f"{list(FILTER_STAGES)}"
            )
        if len(set(stages)) != len(stages):
            raise ValueError(f"VerifyOptions.stages names a stage twice: {list(stages)}")
        ordered = tuple(s for s in FILTER_STAGES if s in stages)
        if stages != ordered:
            raise ValueError(
                f"VerifyOptions.stages must keep the order of FILTER_STAGES: got "
                f"{list(stages)}, write {list(ordered)}"
            )
        object.__setattr__(self, "stages", stages)
        margin = self.margin
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 1:
            raise ValueError(
                f"VerifyOptions.margin must be a number >= 1 (a factor between figures; 2.0 is "
                f"QualCode's), got {margin!r}"
            )
        _positive_int("repeats", self.repeats, "sandbox runs per variant, 5")
        if self.figures not in FIGURES:
            raise ValueError(
                f"VerifyOptions.figures must be one of {list(FIGURES)}, got {self.figures!r}"
            )
        if not isinstance(self.analyser, str) or self.analyser not in ANALYSERS:
            raise ValueError(
                f"VerifyOptions.analyser must be a registered smell analyser "
                f"({', '.join(sorted(ANALYSERS))}), got {self.analyser!r}"
            )
        _positive_int("min_unique", self.min_unique, "the paper's is 3")
        _positive_int("decontamination_ngram", self.decontamination_ngram, "the paper's is 10")
        x = self.max_ngram_overlap
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0.0 <= x < 1.0:
            raise ValueError(
                f"VerifyOptions.max_ngram_overlap must be a number in [0, 1) (0 = any shared "
                f"n-gram, the paper's rule), got {x!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``stages`` as a list)."""
        out = dataclasses.asdict(self)
        out["stages"] = list(self.stages)
        return out


# --------------------------------------------------------------------------------------------
# Normalisation for duplicate detection
# --------------------------------------------------------------------------------------------


def _normalise_python(code: str) -> str | None:
    """Token-level form, one logical line a line: tab-indented by block depth, tokens joined by
    one space; ``None`` if ``tokenize`` refuses the code."""
    lines: list[str] = []
    line: list[str] = []
    depth = 0
    skipped = (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in skipped:
                continue
            if tok.type == tokenize.INDENT:
                depth += 1
            elif tok.type == tokenize.DEDENT:
                depth -= 1
            elif tok.type == tokenize.NEWLINE:
                if line:
                    lines.append("\t" * depth + " ".join(line))
                line = []
            elif tok.type != tokenize.ERRORTOKEN or tok.string.strip():
                line.append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        return None
    if line:
        lines.append("\t" * depth + " ".join(line))
    return "\n".join(lines)


def _normalise_generic(code: str, marker: str) -> str:
    out = []
    for raw in code.splitlines():
        text = " ".join(raw.split())
        if text and not text.startswith(marker):
            out.append(text)
    return "\n".join(out)


def normalise_code(code: str, language: str = "python") -> str:
    """``code`` without comments and with whitespace normalised, for duplicate detection
    [SynH-Rank §4.1: "duplicate code snippets"].

    Python goes through :mod:`tokenize`: comments, blank lines and line continuations vanish,
    indentation becomes the block depth (2 or 4 spaces, tabs: all the same), tokens are joined
    by one space (so ``f(a,b)`` equals ``f( a , b )``), and string literals are kept exactly as
    written (a ``#`` inside a string is not a comment). Docstrings are code, not comments.

    A program that does not tokenize (an unclosed bracket or triple-quoted string, an
    inconsistent dedent) and every other language (:data:`LINE_COMMENTS`) fall back to a
    generic rule: each line's runs of whitespace become one space, blank lines and lines
    starting with the language's line-comment marker are removed. Trailing and block comments
    stay under that rule (without tokenizing, a marker inside a string cannot be told apart).

    >>> normalise_code("x = f(a,b)  # sum\\n\\nif x:\\n        print( x )\\n")
    'x = f ( a , b )\\nif x :\\n\\tprint ( x )'
    """
    if not isinstance(code, str):
        raise TypeError(f"normalise_code: code must be a str, got {type(code).__name__}")
    if language not in LINE_COMMENTS:
        raise ValueError(
            f"normalise_code: unknown language {language!r}; known are {sorted(LINE_COMMENTS)}"
        )
    if language == "python":
        out = _normalise_python(code)
        if out is not None:
            return out
    return _normalise_generic(code, LINE_COMMENTS[language])


# --------------------------------------------------------------------------------------------
# The filter
# --------------------------------------------------------------------------------------------


@dataclass
class FilterResult:
    """What :func:`filter_variants` returns.

    Attributes:
        kept: the variants kept, in input order; copies carrying what the stages filled in
            (test results, figures, smells).
        drops: one :class:`~trainers.quality_data.records.Drop` per variant left out.
        report: counts and timings (see :func:`filter_variants`).
    """

    kept: list[Variant]
    drops: list[Drop]
    report: dict[str, Any]


_Alive = list[tuple[int, Variant]]  # (input position, variant), in input order


def contaminated_tasks(
    tasks: Iterable[SeedTask], eval_statements: Sequence[str], n: int = 10,
    max_overlap: float = 0.0,
) -> tuple[dict[str, int], dict[str, float]]:  # fmt: skip
    """The seed tasks to drop before anything is made of them [SynH-Rank §5.1: seeds sharing a
    10-gram with the test set were removed], and every task's overlap.

    Returns ``({task_id: index of the first evaluation statement it shares an n-gram with},
    {task_id: share of its n-grams found in the evaluation statements})``; a task is in the
    first when it shares any n-gram and its share exceeds ``max_overlap`` (0: any).
    """
    first: dict[int, int] = {}  # n-gram -> first evaluation statement holding it
    for j, text in enumerate(eval_statements):
        for gram in statement_ngrams(text, n):
            first.setdefault(gram, j)
    hits: dict[str, int] = {}
    overlaps: dict[str, float] = {}
    for task in tasks:
        grams = statement_ngrams(task.statement, n)
        shared = grams & first.keys()
        overlaps[task.task_id] = len(shared) / len(grams) if grams else 0.0
        if shared and overlaps[task.task_id] > max_overlap:
            hits[task.task_id] = min(first[g] for g in shared)
    return hits, overlaps


class _Filter:
    """The stages, sharing the tasks, options and the drop list."""

    def __init__(
        self,
        tasks: dict[str, SeedTask],
        options: VerifyOptions,
        eval_statements: list[str],
        progress: bool,
        config: ExecutionConfig | None,
    ) -> None:
        self.tasks = tasks
        self.options = options
        self.eval_statements = eval_statements
        self.progress = progress
        self.config = config
        self.drops: list[Drop] = []
        self.decontaminated: list[str] = []
        self.overlaps: dict[str, float] = {}  # task -> share of its n-grams in the eval set

    def drop(self, stage: str, reason: str, variant: Variant, where: str = "") -> None:
        self.drops.append(Drop(stage, reason, variant.variant_id, where))

    def decontaminate(self, alive: _Alive) -> _Alive:
        n = self.options.decontamination_ngram
        if not self.eval_statements:
            logger.warning("decontaminate: no evaluation statements given, nothing is dropped")
        hits, self.overlaps = contaminated_tasks(
            self.tasks.values(), self.eval_statements, n, self.options.max_ngram_overlap
        )
        self.decontaminated = sorted(hits)
        limit = self.options.max_ngram_overlap
        reason = (
            f"seed task shares a {n}-gram with an evaluation statement"
            if limit == 0
            else f"seed task shares over {limit:g} of its {n}-grams with the evaluation set"
        )
        out = []
        for i, v in alive:
            if v.task_id in hits:
                self.drop(
                    "decontaminate", reason, v,
                    f"{v.task_id} ~ evaluation statement {hits[v.task_id]}",
                )  # fmt: skip
            else:
                out.append((i, v))
        return out

    def empty(self, alive: _Alive) -> _Alive:
        out = []
        for i, v in alive:
            if v.code.strip():
                out.append((i, v))
            else:
                self.drop("empty", "empty code", v, v.task_id)
        return out

    def duplicate(self, alive: _Alive) -> _Alive:
        seen: dict[tuple[str, str], str] = {}
        out = []
        for i, v in alive:
            key = (v.task_id, normalise_code(v.code, self.tasks[v.task_id].language))
            if key in seen:
                self.drop("duplicate", "same normalised code as an earlier variant", v, seen[key])
            else:
                seen[key] = v.variant_id
                out.append((i, v))
        return out

    def tests(self, alive: _Alive) -> _Alive:
        runnable = []
        for i, v in alive:
            if self.tasks[v.task_id].tests:
                runnable.append((i, v))
            else:
                self.drop("tests", "task has no tests", v, v.task_id)
        candidates = [
            {"id": f"v{i}", "code": v.code, "tests": list(self.tasks[v.task_id].tests),
             "language": self.tasks[v.task_id].language}
            for i, v in runnable
        ]  # fmt: skip
        # one call: the sandbox's workers run all variants in parallel; MeasurementUnavailable
        # (no sandbox here) propagates as an error of the run
        results = (
            measure(candidates, repeats=self.options.repeats, config=self.config,
                    progress=self.progress)
            if candidates else {}
        )  # fmt: skip
        out = []
        for i, v in runnable:
            m = results[f"v{i}"]
            if not m.passed:
                failed = [f"test {j}: {verdict}" for j, verdict in enumerate(m.verdicts)
                          if verdict != "pass"]  # fmt: skip
                self.drop("tests", "fails its tests", v, "; ".join(failed[:3]))
                continue
            out.append((i, dataclasses.replace(
                v, passed=True, cpu_time_ms=m.cpu_time_ms, memory_kb=m.memory_kb
            )))  # fmt: skip
        return out

    def claim(self, alive: _Alive) -> _Alive:
        alive, unreadable = self._smells(alive)
        keep = {i for i, _ in alive} - unreadable
        keep -= self._maintainability([(i, v) for i, v in alive if i in keep])
        keep -= self._figure_claims([(i, v) for i, v in alive if i in keep])
        return [(i, v) for i, v in alive if i in keep]

    def _smells(self, alive: _Alive) -> tuple[_Alive, set[int]]:
        """Analyse every remaining variant once; returns the copies with smells filled in and
        the positions of the maintainability claims the analyser could not read (dropped)."""
        if not alive:
            return alive, set()
        reports = get_analyser(self.options.analyser).analyse({f"v{i}": v.code for i, v in alive})
        out, unreadable = [], set()
        for i, v in alive:
            report = reports[f"v{i}"]
            if isinstance(report, AnalysisError):
                if v.dimension == "maintainability":
                    self.drop("claim", "analyser cannot read the code", v, report.reason)
                    unreadable.add(i)
                out.append((i, v))
            else:
                out.append((i, dataclasses.replace(
                    v, smell_count=report.count, smell_kinds=report.kinds
                )))  # fmt: skip
        return out, unreadable

    def _maintainability(self, alive: _Alive) -> set[int]:
        """Positions of the maintainability claims dropped (highs: smells; lows: none)."""
        dropped: set[int] = set()
        best: dict[str, int] = {}  # task -> most smells of a kept high (0 by the high rule)
        for i, v in alive:
            if v.dimension == "maintainability" and v.level == "high":
                if v.smell_count:
                    where = f"{v.smell_count} smell(s): {', '.join(v.smell_kinds)}"
                    self.drop("claim", "'maintainable' claim not verified: has code smells", v,
                              where)  # fmt: skip
                    dropped.add(i)
                else:
                    best[v.task_id] = max(best.get(v.task_id, 0), v.smell_count or 0)
        for i, v in alive:
            if v.dimension == "maintainability" and v.level == "low":
                count = v.smell_count or 0
                if count == 0:
                    reason = "low maintainability claim not verified: no code smells"
                elif count <= best.get(v.task_id, 0):
                    reason = "low maintainability claim not verified: no more smells than a high"
                else:
                    continue
                self.drop("claim", reason, v, v.task_id)
                dropped.add(i)
        return dropped

    # highs first (against their siblings' median), then lows (against the kept highs)
    def _figure_claims(self, alive: _Alive) -> set[int]:
        """Positions of the speed/memory claims dropped (see the module docstring's rule)."""
        mode = self.options.figures
        margin = self.options.margin
        dropped: set[int] = set()
        groups: dict[tuple[str, str], dict[str, list[tuple[int, Variant, float]]]] = {}
        for i, v in alive:
            if v.dimension not in ("speed", "memory"):
                continue
            figure = getattr(v, _FIGURE_FIELDS[mode][v.dimension])
            if figure is None:
                self.drop("claim", f"no {mode} figures", v, _FIGURE_FIELDS[mode][v.dimension])
                dropped.add(i)
                continue
            levels = groups.setdefault((v.task_id, v.dimension), {"high": [], "low": []})
            levels[v.level].append((i, v, float(figure)))  # type: ignore[index]
        for (task_id, dim), levels in groups.items():
            for level in ("high", "low"):
                if levels[level] and not levels[_SIBLING[level]]:
                    for i, v, _ in levels[level]:
                        self.drop("claim", "no sibling to compare", v, f"{task_id} {dim} {level}")
                        dropped.add(i)
            if not (levels["high"] and levels["low"]):
                continue
            kept_highs = []
            for i, v, fig in levels["high"]:
                same = [f for _, s, f in levels["low"] if v.category is not None
                        and s.category == v.category]  # fmt: skip
                siblings = same or [f for _, _, f in levels["low"]]
                ref = float(statistics.median(siblings))
                if margin_label(fig, ref, margin) == 1:
                    kept_highs.append(fig)
                    continue
                which = "same-category sibling" if same else f"median of {len(siblings)} low(s)"
                self.drop(
                    "claim",
                    f"'{QUALCODE_CONDITIONS[dim]}' claim not verified: not {margin:g}x better "
                    "than its low sibling(s)",
                    v, f"{fig:g} vs {ref:g} ({which})",
                )  # fmt: skip
                dropped.add(i)
            for i, v, fig in levels["low"]:
                if any(margin_label(h, fig, margin) == 1 for h in kept_highs):
                    continue
                best = f"best kept high {min(kept_highs):g}" if kept_highs else "no high kept"
                self.drop(
                    "claim", f"low {dim} claim not verified: no kept high is {margin:g}x better",
                    v, f"{fig:g} vs {best}",
                )  # fmt: skip
                dropped.add(i)
        return dropped

    def min_unique(self, alive: _Alive) -> _Alive:
        unique: dict[str, set[str]] = {}
        for _, v in alive:
            language = self.tasks[v.task_id].language
            unique.setdefault(v.task_id, set()).add(normalise_code(v.code, language))
        k = self.options.min_unique
        small = {t for t, codes in unique.items() if len(codes) < k}
        reason = f"task has fewer than {k} unique candidates"
        out = []
        for i, v in alive:
            if v.task_id in small:
                self.drop("min_unique", reason, v, f"{v.task_id}: {len(unique[v.task_id])}")
            else:
                out.append((i, v))
        return out


def _check_inputs(
    tasks: object, variants: object, eval_statements: object
) -> tuple[dict[str, SeedTask], list[Variant], list[str]]:
    if isinstance(tasks, Mapping):
        tasks = list(tasks.values())
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks must be a list of SeedTask, got {type(tasks).__name__}")
    by_id: dict[str, SeedTask] = {}
    for k, task in enumerate(tasks):
        if not isinstance(task, SeedTask):
            raise TypeError(f"tasks[{k}] must be a SeedTask, got {type(task).__name__}")
        if task.task_id in by_id:
            raise ValueError(f"tasks[{k}]: task id {task.task_id!r} given twice; ids are unique")
        by_id[task.task_id] = task
    if isinstance(variants, (str, bytes, Mapping)) or not isinstance(variants, Iterable):
        raise TypeError(f"variants must be a list of Variant, got {type(variants).__name__}")
    checked = list(variants)
    for k, v in enumerate(checked):
        if not isinstance(v, Variant):
            raise TypeError(f"variants[{k}] must be a Variant, got {type(v).__name__}")
        if v.task_id not in by_id:
            raise ValueError(
                f"variants[{k}] ({v.variant_id}) belongs to task {v.task_id!r}, which is not in "
                "tasks; pass its SeedTask too (or leave the variant out)"
            )
        if not isinstance(v.code, str):
            raise TypeError(f"variants[{k}] ({v.task_id}): code must be a str")
    if isinstance(eval_statements, (str, bytes, Mapping)) or not isinstance(
        eval_statements, Iterable
    ):
        raise TypeError(
            "eval_statements must be a list of evaluation statement strings, got "
            f"{type(eval_statements).__name__} (for a {{problem: texts}} mapping, pass the "
            "texts)"
        )
    texts = list(eval_statements)
    bad = [k for k, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"eval_statements[{bad[0]}] must be a str, got {type(texts[bad[0]])}")
    return by_id, checked, texts


def _report(
    options: VerifyOptions,
    tasks: dict[str, SeedTask],
    variants: list[Variant],
    kept: list[Variant],
    run: _Filter,
    seconds: dict[str, float],
    verified: int | None,
    n_eval: int,
) -> dict[str, Any]:
    drops: dict[str, dict[str, int]] = {stage: {} for stage in options.stages}
    for (stage, reason), count in sorted(Counter((d.stage, d.reason) for d in run.drops).items()):
        drops[stage][reason] = count
    with_variants = {v.task_id for v in variants}
    kept_tasks = {v.task_id for v in kept}

    def by(key: str) -> dict[str, int]:
        return dict(sorted(Counter(str(getattr(v, key)) for v in kept).items()))

    verify_s = sum(seconds.get(s, 0.0) for s in ("tests", "claim"))
    return {
        "options": options.to_dict(),
        "variants": {"in": len(variants), "kept": len(kept), "dropped": len(run.drops)},
        "tasks": {
            "in": len(tasks),
            "with_variants": len(with_variants),
            "kept": len(kept_tasks),
            "dropped": len(with_variants - kept_tasks),
            "decontaminated": run.decontaminated,
            "largest_ngram_overlap": max(run.overlaps.values(), default=None),
        },
        "drops": drops,
        "kept_by": {
            "origin": by("origin"),
            "dimension": by("dimension"),
            "level": by("level"),
            "claim": dict(sorted(Counter(f"{v.dimension}/{v.level}" for v in kept).items())),
        },
        "eval_statements": n_eval,
        "seconds": seconds,
        "verified": verified,
        "verified_per_second": verified / verify_s if verified and verify_s > 0 else None,
    }


def filter_variants(
    tasks: Sequence[SeedTask] | Mapping[str, SeedTask],
    variants: Sequence[Variant],
    options: VerifyOptions | None = None,
    *,
    eval_statements: Iterable[str] = (),
    progress: bool = True,
    config: ExecutionConfig | None = None,
) -> FilterResult:
    """Run the stages of ``options.stages`` over ``variants`` [SynH-Rank §4.1].

    Args:
        tasks: the seed tasks (ids unique); every variant's task must be among them.
        variants: the candidates, in the order that decides which duplicate is kept.
        options: which stages and with what settings (default :class:`VerifyOptions`: all).
        eval_statements: the evaluation set's statements, for ``decontaminate``.
        progress: progress bars of the sandbox runs.
        config: sandbox settings of the tests stage
            (default :func:`coreb_toolkit.quality.measure.default_config`).

    Returns:
        A :class:`FilterResult`. Its report holds ``options``; ``variants`` (in, kept,
        dropped); ``tasks`` (in, with_variants, kept, dropped: with variants in and none out,
        decontaminated: their ids); ``drops`` (``{stage: {reason: count}}``, every stage run);
        ``kept_by`` (origin, dimension, level, claim); ``eval_statements`` (how many);
        ``seconds`` per stage; ``verified`` (the variants entering the first of ``tests`` /
        ``claim`` that ran) and ``verified_per_second`` (those over the two stages' seconds).

    Raises:
        MeasurementUnavailable: the tests stage cannot run the sandbox here.
        ValueError, TypeError: bad tasks, variants or statements (named).
    """
    options = VerifyOptions() if options is None else options
    if not isinstance(options, VerifyOptions):
        raise TypeError(f"options must be a VerifyOptions, got {type(options).__name__}")
    by_id, checked, texts = _check_inputs(tasks, variants, eval_statements)
    run = _Filter(by_id, options, texts, progress, config)
    alive: _Alive = list(enumerate(checked))
    seconds: dict[str, float] = {}
    verified: int | None = None
    for stage in options.stages:
        if stage in ("tests", "claim") and verified is None:
            verified = len(alive)
        before, t0 = len(run.drops), time.perf_counter()
        alive = getattr(run, stage)(alive)
        seconds[stage] = time.perf_counter() - t0
        logger.info(
            "%s: %d dropped, %d left (%.2f s)",
            stage, len(run.drops) - before, len(alive), seconds[stage],
        )  # fmt: skip
    kept = [v for _, v in alive]
    report = _report(options, by_id, checked, kept, run, seconds, verified, len(texts))
    return FilterResult(kept, run.drops, report)


__all__ = [
    "FIGURES",
    "FILTER_STAGES",
    "LINE_COMMENTS",
    "PAPER_STAGES",
    "STAGE_PRESETS",
    "FilterResult",
    "VerifyOptions",
    "contaminated_tasks",
    "filter_variants",
    "normalise_code",
]
