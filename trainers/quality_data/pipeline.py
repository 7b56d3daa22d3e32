"""SynH-Rank's training data in one call: seed tasks -> variants -> verification -> lists
[SynH-Rank §4.1-§4.2, §5.4].

:class:`SynhDataConfig` is the one config of ``coreb synh-rank data`` (Python, YAML and the
command line alike); :func:`build_synh_data` runs its steps and writes a lists folder that
``coreb train synh-rank --train_lists FOLDER`` reads:

1. **Tasks.** CodeNet-style ``sources`` (problems with statements, public tests and accepted
   submissions, read by :func:`coreb_toolkit.sources.codenet.load`) are split by problem
   (:func:`~trainers.quality_data.split.problem_split`, seeded and recorded), or by the
   ``split_file`` a QualCode build already excluded. The training side gives the seed tasks;
   the evaluation side's statements (and those of any ``eval_sources`` QualCode folder) are the
   evaluation set the seeds are decontaminated against (any shared word 10-gram drops a task).
2. **Variants**, by ``variants``:

   * ``guideline``: guideline-driven synthesis by ``generator`` (Table 2 groups, cycled);
   * ``plain``: the "w/o guideline" ablation, the same prompts without guidelines;
   * ``real``: no generator. The tasks' real accepted submissions, run on their tests, labelled
     by QualCode's rules (fastest / least memory / no smells = high; 2x worse / smelly = low),
     plus LLM-free low-quality variants of each high one by the program ``transformations``
     of its dimension.

3. **Verification** (:func:`~trainers.quality_data.verify.filter_variants`): the ``filter``
   preset's stages (``all``: decontamination, empty, duplicates, the task's tests in the
   sandbox, the quality claim by measurement and the smell analyser, fewer than 3 unique
   candidates; ``paper``: the paper's filter only; ``none``: decontamination alone, the
   "w/o filter" ablation). Every drop is counted with its stage and reason.
4. **Lists** (:func:`~trainers.quality_data.lists.make_lists`): per task and dimension, one list
   per high-quality variant: 1 high (label 2), 4 low (label 1), 1 irrelevant (label 0). Lists
   the data cannot fill are built short or not built, and counted (``report.json``:
   ``list_shapes``, ``short_lists``, ``missing_docs_per_label``, ``lists_not_built``; the log
   says it in one line).

The folder holds ``lists.parquet``, ``report.json`` (every step's report and every drop),
``problem_split.json``, ``README.md``, ``variants.jsonl`` (every candidate with its fate) and,
with ``diversity``, ``diversity.json`` / ``diversity.png`` over the unfiltered candidates
(paper Fig. 3).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coreb_toolkit.builders.qualcode.options import DEFAULT_TEMPLATE
from trainers.quality_data.records import Drop, SeedTask, Variant

logger = logging.getLogger(__name__)

VARIANT_SOURCES: tuple[str, ...] = ("real", "guideline", "plain")
FILTER_PRESETS: tuple[str, ...] = ("all", "paper", "none")
VARIANTS_FILE = "variants.jsonl"

#: the stages of a preset that run before real submissions are labelled (labels need figures)
_BEFORE_LABELS = ("decontaminate", "empty", "duplicate", "tests")


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass
class SynhDataConfig:
    """Build SynH-Rank training lists (``coreb synh-rank data``)."""

    output_dir: str = field(metadata=_help("the lists folder to write"))
    sources: list[str] = field(
        default_factory=list,
        metadata=_help(
            "CodeNet-style inputs: problems (statements, public tests) and accepted "
            "submissions, e.g. ../shared/data/codenet ../shared/data/nofuneval",
            nargs="+",
        ),
    )
    variants: str = field(
        default="real",
        metadata=_help(
            "where candidates come from: real (submissions + program transformations, no "
            "LLM), guideline (guideline-driven synthesis, the paper), plain (synthesis "
            "without guidelines, the ablation)",
            choices=list(VARIANT_SOURCES),
        ),
    )
    generator: str | None = field(
        default=None,
        metadata=_help(
            "the LLM of guideline/plain: 'openai:<base_url>#<model>' or "
            "'transformers:<model_name_or_path>[#<gguf_file>]' (the paper's is "
            "Qwen3-Coder-30B-A3B-Instruct)"
        ),
    )
    cache_dir: str | None = field(
        default=None,
        metadata=_help(
            "where every generator response is kept (a re-run generates only what is "
            "missing); default OUTPUT_DIR.cache next to the output"
        ),
    )
    split_file: str | None = field(
        default=None,
        metadata=_help(
            "an existing problem_split.json to train on its train side (else a new split "
            "of the sources' problems is made and written)"
        ),
    )
    eval_fraction: float = field(
        default=0.5, metadata=_help("share of problems held out for evaluation (new split)")
    )
    split_seed: int = field(default=0, metadata=_help("seed of a new problem split"))
    eval_sources: list[str] = field(
        default_factory=list,
        metadata=_help(
            "built QualCode folders whose statements are also evaluation statements (seed "
            "tasks sharing a 10-gram with any are dropped)",
            nargs="*",
        ),
    )
    max_ngram_overlap: float = field(
        default=0.0,
        metadata=_help(
            "decontamination: 0 drops a seed task sharing any word 10-gram with an evaluation "
            "statement (the paper's rule); x > 0 only one sharing more than this fraction of "
            "its 10-grams. CodeNet's judge template text ('input is given from standard input "
            "in the following format') trips the paper's rule on most tasks: on the shipped "
            "data no training statement shares more than 25% of its 10-grams, so 0.3 keeps "
            "them while a re-posted problem (most of its 10-grams) is still dropped"
        ),
    )
    max_tasks: int | None = field(
        default=None, metadata=_help("use only the first N training tasks (by id): small runs")
    )
    transformations: list[str] = field(
        default_factory=lambda: ["all"],
        metadata=_help(
            "real: program transformations applied to each high-quality submission of "
            "their dimension ('all', 'none', or names from trainers.quality_data.transforms)",
            nargs="+",
        ),
    )
    filter: str = field(
        default="all",
        metadata=_help(
            "verification: all (tests + quality claims measured + the paper's filter), "
            "paper (empty, duplicates, < 3 unique), none (the 'w/o filter' ablation); "
            "decontamination always runs",
            choices=list(FILTER_PRESETS),
        ),
    )
    margin: float = field(
        default=2.0, metadata=_help("speed/memory: high must beat low by this factor (QualCode)")
    )
    repeats: int = field(default=5, metadata=_help("sandbox runs per variant (medians)"))
    figures: str = field(
        default="measured",
        metadata=_help(
            "speed/memory figures of labels and claims: measured (sandbox medians) or judge "
            "(the judge's single reading of a real submission, as QualCode's default)",
            choices=["measured", "judge"],
        ),
    )
    analyser: str = field(default="ruff", metadata=_help("the smell analyser (ruff or pylint)"))
    variants_per_level: int = field(
        default=4, metadata=_help("synthesis: variants per dimension and level (K = 4 groups)")
    )
    temperature: float = field(default=0.7, metadata=_help("synthesis sampling temperature"))
    top_p: float = field(default=0.8, metadata=_help("synthesis nucleus (top-p)"))
    top_k: int = field(default=20, metadata=_help("synthesis top-k"))
    max_new_tokens: int = field(default=1024, metadata=_help("synthesis: tokens per response"))
    n_low: int = field(default=4, metadata=_help("low-quality relevant docs per list (label 1)"))
    n_irrelevant: int = field(default=1, metadata=_help("irrelevant docs per list (label 0)"))
    min_low: int = field(default=1, metadata=_help("a list with fewer label-1 docs is dropped"))
    template: str = field(
        default=DEFAULT_TEMPLATE, metadata=_help("instruction template (QualCode's)")
    )
    diversity: bool = field(
        default=False,
        metadata=_help("also write the diversity report of the unfiltered candidates (Fig. 3)"),
    )
    seed: int = field(default=0, metadata=_help("seeds synthesis, labels, transforms, lists"))
    overwrite: bool = field(default=False, metadata=_help("replace OUTPUT_DIR if it exists"))

    def __post_init__(self) -> None:
        name = type(self).__name__

        def bad(field_name: str, why: str) -> ValueError:
            return ValueError(f"{name}.{field_name}={getattr(self, field_name)!r}: {why}")

        if not self.sources:
            raise bad("sources", "give at least one CodeNet-style path")
        for s in self.sources:
            if not Path(s).exists():
                raise bad("sources", f"{s} does not exist")
        if self.variants not in VARIANT_SOURCES:
            raise bad("variants", f"must be one of {VARIANT_SOURCES}")
        if self.variants != "real" and not self.generator:
            raise bad("generator", f"variants={self.variants!r} needs a generator spec")
        if self.filter not in FILTER_PRESETS:
            raise bad("filter", f"must be one of {FILTER_PRESETS}")
        if self.split_file is not None and not Path(self.split_file).is_file():
            raise bad("split_file", "no such file")
        if self.max_tasks is not None and self.max_tasks < 1:
            raise bad("max_tasks", "must be a positive integer (or unset)")
        if Path(self.output_dir).exists() and not self.overwrite:
            raise bad("output_dir", "exists; set overwrite to replace it")
        if isinstance(self.transformations, str):
            self.transformations = [self.transformations]
        # the option objects check the rest, naming their field
        self.verify_options(self.filter_stages())
        self.list_options()
        if self.variants != "real":
            self.synthesis_options()
        self.transformation_names()

    # -- the option objects of the steps ----------------------------------------------------
    def filter_stages(self) -> tuple[str, ...]:
        """The stages of the ``filter`` preset; decontamination always among them (never
        train on evaluation statements)."""
        from trainers.quality_data.verify import STAGE_PRESETS

        chosen = STAGE_PRESETS[self.filter]
        return chosen if "decontaminate" in chosen else ("decontaminate", *chosen)

    def verify_options(self, stages: Sequence[str]) -> Any:
        from trainers.quality_data.verify import VerifyOptions

        return VerifyOptions(
            stages=tuple(stages),
            margin=self.margin,
            repeats=self.repeats,
            figures=self.figures,
            analyser=self.analyser,
            max_ngram_overlap=self.max_ngram_overlap,
        )

    def list_options(self) -> Any:
        from trainers.quality_data.lists import ListOptions

        return ListOptions(
            n_low=self.n_low,
            n_irrelevant=self.n_irrelevant,
            min_low=self.min_low,
            template=self.template,
            seed=self.seed,
        )

    def synthesis_options(self) -> Any:
        from trainers.quality_data.synthesis import SynthesisOptions

        return SynthesisOptions(
            mode=self.variants,
            variants_per_level=self.variants_per_level,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            max_new_tokens=self.max_new_tokens,
            seed=self.seed,
        )

    def transformation_names(self) -> list[str]:
        from trainers.quality_data.transforms import TRANSFORMATIONS

        names = list(self.transformations)
        if names == ["all"]:
            return list(TRANSFORMATIONS)
        if names in (["none"], []):
            return []
        unknown = [n for n in names if n not in TRANSFORMATIONS]
        if unknown:
            raise ValueError(
                f"{type(self).__name__}.transformations: unknown {unknown}; known: "
                f"{', '.join(TRANSFORMATIONS)} (or all / none)"
            )
        return names

    def resolved_cache_dir(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir)
        out = Path(self.output_dir)
        return out.with_name(out.name + ".cache")


@dataclass
class SynhDataResult:
    """What :func:`build_synh_data` wrote."""

    output_dir: Path
    lists: int
    report: dict[str, Any]


def _stages(config: SynhDataConfig, wanted: Sequence[str]) -> tuple[str, ...]:
    return tuple(s for s in config.filter_stages() if s in wanted)


def _eval_statements(config: SynhDataConfig, data: Any, split: Any) -> list[str]:
    texts = [
        data.problems[p].statement
        for p in split.eval
        if p in data.problems and data.problems[p].statement
    ]
    if config.eval_sources:
        from coreb_toolkit.benchmark.qualcode_eval import load_qualcode

        for source in config.eval_sources:
            q = load_qualcode(source)
            texts += sorted({r["query"] for rows in q.pairs.values() for r in rows})
            texts += sorted({r["query"] for rows in q.triplets.values() for r in rows})
    return texts


def _real_candidates(
    config: SynhDataConfig,
    data: Any,
    tasks: list[SeedTask],
    eval_texts: list[str],
    drops: list[Drop],
    steps: dict[str, Any],
) -> tuple[list[Variant], list[Variant]]:
    """Real submissions, run and labelled, plus their transformations; returns (all candidates
    before verification, the verified ones)."""
    from trainers.quality_data.real_data import label_real, real_variants
    from trainers.quality_data.transforms import TRANSFORMATIONS, transform_variants
    from trainers.quality_data.verify import filter_variants

    submissions = real_variants(data, [t.task_id for t in tasks], drops=drops)
    # A real submission was accepted by the judge on its full hidden tests: a task without
    # public tests keeps its submissions unrun (judge figures, smells), while every
    # transformation of it, which nothing can verify, is dropped by the tests stage.
    tested = {t.task_id for t in tasks if t.tests}
    kept: list[Variant] = []
    for part, stages in (("with_tests", _BEFORE_LABELS), ("judge_only", _BEFORE_LABELS[:3])):
        mine = [v for v in submissions if (v.task_id in tested) == (part == "with_tests")]
        before = filter_variants(
            tasks, mine, config.verify_options(_stages(config, stages)),
            eval_statements=eval_texts,
        )  # fmt: skip
        drops += before.drops
        kept += before.kept
        steps[f"verify_submissions_{part}"] = before.report
    labelled, label_drops = label_real(
        kept, margin=config.margin, figures=config.figures, seed=config.seed,
        n_low=config.n_low,
    )  # fmt: skip
    drops += label_drops
    steps["labels"] = {"claims": len(labelled), "dropped": len(label_drops)}
    names = config.transformation_names()
    transformed: list[Variant] = []
    for dimension in sorted({TRANSFORMATIONS[n].dimension for n in names}):
        highs = [v for v in labelled if v.dimension == dimension and v.level == "high"]
        mine = [n for n in names if TRANSFORMATIONS[n].dimension == dimension]
        made, refused = transform_variants(highs, mine, seed=config.seed)
        transformed += made
        drops += refused
    steps["transform"] = {"made": len(transformed), "names": names}
    checked = filter_variants(
        tasks,
        transformed,
        config.verify_options(_stages(config, ("empty", "duplicate", "tests"))),
    )
    drops += checked.drops
    steps["verify_transforms"] = checked.report
    real_kept, made_kept = labelled, checked.kept
    if "claim" in config.filter_stages():
        # a transformation is a new program: its claim is checked by measuring it against the
        # high-quality submission it came from (whatever figures label the real ones)
        parents = {v.parent for v in made_kept}
        highs = [v for v in labelled if v.variant_id in parents]
        measured = dataclasses.replace(config.verify_options(("claim",)), figures="measured")
        made_claims = filter_variants(tasks, [*highs, *made_kept], measured)
        made_ids = {v.variant_id for v in made_kept}
        drops += [d for d in made_claims.drops if d.item in made_ids]
        made_kept = [v for v in made_claims.kept if v.variant_id in made_ids]
        steps["verify_transform_claims"] = made_claims.report
        real_claims = filter_variants(tasks, labelled, config.verify_options(("claim",)))
        drops += real_claims.drops
        real_kept = real_claims.kept
        steps["verify_claims"] = real_claims.report
    final = filter_variants(
        tasks,
        [*real_kept, *made_kept],
        config.verify_options(_stages(config, ("min_unique",))),
    )
    drops += final.drops
    steps["verify_min_unique"] = final.report
    return [*submissions, *transformed], final.kept


def _synthesised_candidates(
    config: SynhDataConfig,
    tasks: list[SeedTask],
    eval_texts: list[str],
    drops: list[Drop],
    steps: dict[str, Any],
) -> tuple[list[Variant], list[Variant]]:
    from coreb_toolkit.releases.generators import from_spec
    from trainers.quality_data.synthesis import synthesize
    from trainers.quality_data.verify import contaminated_tasks, filter_variants

    # decontaminate the seeds first: nothing is generated for a task that would be dropped
    hits, _ = contaminated_tasks(tasks, eval_texts, 10, config.max_ngram_overlap)
    for task in tasks:
        if task.task_id in hits:
            where = f"evaluation statement {hits[task.task_id]}"
            reason = "seed task overlaps the evaluation set (10-gram)"
            drops.append(Drop("decontaminate", reason, task.task_id, where))
    tasks = [t for t in tasks if t.task_id not in hits]
    steps["decontaminated_seeds"] = sorted(hits)
    generator = from_spec(str(config.generator), cache_dir=config.resolved_cache_dir())
    made = synthesize(tasks, generator, config.synthesis_options())
    drops += made.drops
    steps["synthesis"] = made.report
    verified = filter_variants(
        tasks,
        made.variants,
        config.verify_options(config.filter_stages()),
        eval_statements=eval_texts,
    )
    drops += verified.drops
    steps["verify"] = verified.report
    return made.variants, verified.kept


def _write_variants(path: Path, candidates: list[Variant], kept: list[Variant], drops: list[Drop]):
    """Every candidate with its fate: kept, or the first drop that names it."""
    fate: dict[str, str] = {}
    for d in drops:
        fate.setdefault(d.item, f"{d.stage}: {d.reason}")
    kept_ids = {v.variant_id for v in kept}
    with open(path, "w", encoding="utf-8") as fh:
        for v in candidates:
            vid = v.variant_id
            row = {"variant_id": vid, **dataclasses.asdict(v)}
            row["fate"] = "kept" if vid in kept_ids else fate.get(vid, "not used")
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def build_synh_data(config: SynhDataConfig, *, progress: bool = True) -> SynhDataResult:
    """Run the steps of the module docstring and write ``config.output_dir``."""
    from coreb_toolkit.sources import codenet
    from trainers.quality_data.lists import ListsResult, make_lists, summary, write_lists
    from trainers.quality_data.real_data import real_tasks
    from trainers.quality_data.split import problem_split, read_split

    t0 = time.perf_counter()
    data = codenet.load(list(config.sources), progress=progress)
    if config.split_file:
        split = read_split(config.split_file)
    else:
        split = problem_split(
            sorted(data.problems), eval_fraction=config.eval_fraction, seed=config.split_seed,
            source=", ".join(config.sources),
        )  # fmt: skip
    drops: list[Drop] = []
    tasks = real_tasks(data, [p for p in split.train if p in data.problems], drops=drops)
    if config.max_tasks is not None:
        tasks = sorted(tasks, key=lambda t: t.task_id)[: config.max_tasks]
    if not tasks:
        raise ValueError(
            f"no training task in {config.sources}: the split's train side has "
            f"{len(split.train)} problems, none with an English statement"
        )
    eval_texts = _eval_statements(config, data, split)
    steps: dict[str, Any] = {"tasks": len(tasks), "eval_statements": len(eval_texts)}
    if config.variants == "real":
        candidates, kept = _real_candidates(config, data, tasks, eval_texts, drops, steps)
    else:
        candidates, kept = _synthesised_candidates(config, tasks, eval_texts, drops, steps)
    contaminated = {d.where.split(" ~ ")[0] for d in drops if d.stage == "decontaminate"}
    if len(contaminated) > len(tasks) / 2:
        logger.warning(
            "decontamination dropped %d of %d seed tasks (any shared %d-gram, the paper's "
            "rule): judges' template text is shared by most statements; see max_ngram_overlap",
            len(contaminated), len(tasks), 10,
        )  # fmt: skip
    lists = make_lists(tasks, kept, config.list_options(), progress=progress)
    report = {
        **lists.report,
        "config": dataclasses.asdict(config),
        "steps": steps,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    out = write_lists(
        config.output_dir,
        ListsResult(lists.dataset, [*drops, *lists.drops], report, lists.shortfalls),
        split=split,
        sources=config.sources,
        overwrite=config.overwrite,
    )
    _write_variants(out / VARIANTS_FILE, candidates, kept, [*drops, *lists.drops])
    if config.diversity:
        from trainers.quality_data.diversity import compare_diversity, variants_by_task

        compare_diversity({config.variants: variants_by_task(candidates)}, out_dir=out)
    logger.info("wrote %d lists to %s", len(lists.dataset), out)
    # a list short of 1 + 4 + 1, or not built, is never silent: the line reaches the console
    # (warnings are shown by default) as well as report.json and the folder's README
    shape = summary(lists.report)
    if lists.report["short_lists_total"] or lists.report["lists_not_built"]:
        logger.warning("lists: %s", shape)
    else:
        logger.info("lists: %s", shape)
    return SynhDataResult(out, len(lists.dataset), report)


def read_variants(folder: str | Path) -> list[Variant]:
    """The candidates of a lists folder (``variants.jsonl``), as :class:`Variant` records."""
    path = Path(folder) / VARIANTS_FILE
    if not path.is_file():
        raise ValueError(f"{folder} has no {VARIANTS_FILE}: write it with coreb synh-rank data")
    names = {f.name for f in dataclasses.fields(Variant)}
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                row = json.loads(line)
                values = {k: row[k] for k in names if k in row}
                values["smell_kinds"] = tuple(values.get("smell_kinds") or ())
                out.append(Variant(**values))
            except (json.JSONDecodeError, TypeError, ValueError) as err:
                raise ValueError(f"{path}:{n}: not a variant record: {err}") from err
    return out


def compare_runs(
    runs: Sequence[str | Path], out_dir: str | Path, *, progress: bool = True
) -> dict[str, Any]:
    """Diversity of the unfiltered candidates of several lists folders, the last one the
    baseline (``guideline`` vs ``plain``: the paper's Fig. 3), written to ``out_dir``."""
    from trainers.quality_data.diversity import compare_diversity, variants_by_task

    groups: dict[str, dict[str, list[str]]] = {}
    for run in runs:
        name = Path(run).name
        if name in groups:
            raise ValueError(f"two runs are named {name!r}: give folders with distinct names")
        groups[name] = variants_by_task(read_variants(run))
    return compare_diversity(groups, out_dir=out_dir, progress=progress)


__all__ = [
    "FILTER_PRESETS",
    "VARIANTS_FILE",
    "VARIANT_SOURCES",
    "SynhDataConfig",
    "SynhDataResult",
    "build_synh_data",
    "compare_runs",
    "read_variants",
]
