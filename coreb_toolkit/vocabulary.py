"""The toolkit's vocabulary: languages, main tasks, the subtask registry, QualCode dimensions.

One place for the terms every other module keys on (builders, the sandbox's languages, the
mutation lexers, instructions, reports and plots). Standard library only, so that the
dataset builders, ``eval_metrics`` and the loading scripts may import it.

The subtask registry is declarative, one :class:`SubtaskMetadata` entry per subtask (mteb's
habit): name, family, variant, language constraint, query and document types, the corpus view it
ranks, its main score and a description. ``tests/test_vocabulary.py`` checks every entry end to
end.

References:
    CoREB §3, Appendix A.3 (Tables 6-9), B.3 (instructions); SynH-Rank §3 (QualCode).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Languages [CoREB §3: Python, Java, C++, Ruby, Go]
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LanguageTerm:
    """A CoREB language: its name in data (``cpp``), its display label (``C++``) and the
    line-comment token of its syntax."""

    name: str
    label: str
    line_comment: str


LANGUAGES: dict[str, LanguageTerm] = {
    t.name: t
    for t in (
        LanguageTerm("python", "Python", "#"),
        LanguageTerm("java", "Java", "//"),
        LanguageTerm("cpp", "C++", "//"),
        LanguageTerm("ruby", "Ruby", "#"),
        LanguageTerm("go", "Go", "//"),
    )
}
LANGUAGE_NAMES: tuple[str, ...] = tuple(LANGUAGES)
"""The five languages in the paper's order."""
ANY_LANGUAGE = "any"
LANGUAGE_SUFFIXES: tuple[str, ...] = (ANY_LANGUAGE, *LANGUAGE_NAMES)
"""Language suffixes of subtask names: ``any`` accepts all five."""
LANGUAGE_LABELS: dict[str, str] = {
    ANY_LANGUAGE: "Any",
    **{k: v.label for k, v in LANGUAGES.items()},
}
"""Display labels of the language suffixes (plot axes, tables)."""

# --------------------------------------------------------------------------------------------
# Main tasks [CoREB §3; instructions B.3]
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MainTask:
    """A CoREB main task (``t2c``) with its label (``T2C``), names, the types of its queries and
    documents and the instruction instruction-following models get [CoREB B.3]."""

    key: str
    label: str
    name: str  # text-to-code
    title: str  # Text-to-Code
    query_type: str  # text | code
    document_type: str  # code | text
    instruction: str


MAIN_TASKS: dict[str, MainTask] = {
    t.key: t
    for t in (
        MainTask(
            "t2c",
            "T2C",
            "text-to-code",
            "Text-to-Code",
            "text",
            "code",
            "Given a natural language programming task, retrieve code that correctly solves or "
            "implements the task.",
        ),
        MainTask(
            "c2t",
            "C2T",
            "code-to-text",
            "Code-to-Text",
            "code",
            "text",
            "Given a code snippet, retrieve the natural language description or problem "
            "statement that best matches the code.",
        ),
        MainTask(
            "c2c",
            "C2C",
            "code-to-code",
            "Code-to-Code",
            "code",
            "code",
            "Given a code snippet, retrieve code that is semantically equivalent or solves the "
            "same task.",
        ),
    )
}
"""The three main tasks in the paper's order (T2C, C2T, C2C)."""

QUALCODE_TASK = "qualcode"
QUALCODE_LABEL = "QualCode"

# --------------------------------------------------------------------------------------------
# Corpus views
# --------------------------------------------------------------------------------------------

CORPUS_CODE = "corpus_code"
CORPUS_TEXT = "corpus_text"
CORPUS_TEXT_ABBREVIATED = "corpus_text_abbreviated"
CORPUS_CONFIGS: tuple[str, ...] = (CORPUS_CODE, CORPUS_TEXT, CORPUS_TEXT_ABBREVIATED)

# --------------------------------------------------------------------------------------------
# Subtasks = dataset configs [CoREB A.3, Tables 6-9]
# --------------------------------------------------------------------------------------------

MAIN_SCORE = "ndcg_at_10"
"""Every CoREB subtask, c2t_match included, is a ranked retrieval scored by nDCG@10 [A.6]."""


@dataclass(frozen=True)
class SubtaskMetadata:
    """One CoREB subtask (a dataset config).

    ``language`` is the name's language suffix (``any``, ``python``, ...) or ``None`` where the
    subtask has none; ``language_role`` says what it constrains (``target``: the code to
    retrieve, for t2c; ``query``: the query code's language, for c2t). ``corpus`` is the corpus
    config it ranks. ``known`` is False for a subtask a release holds outside the paper's
    registry (kept, with a warning).
    """

    name: str
    family: str  # t2c | c2c | c2t
    variant: str  # canonical_retro, full_retro, search, cross_lang, match, ... or the raw rest
    language: str | None
    corpus: str
    description: str = ""
    main_score: str = MAIN_SCORE
    known: bool = True

    @property
    def main_task(self) -> MainTask:
        return MAIN_TASKS[self.family]

    @property
    def query_type(self) -> str:
        return MAIN_TASKS[self.family].query_type

    @property
    def document_type(self) -> str:
        return MAIN_TASKS[self.family].document_type

    @property
    def language_role(self) -> str | None:
        if self.language is None:
            return None
        return "target" if self.family == "t2c" else "query"


# (family, variant) -> (corpus view, language suffixes or None, description). Every subtask of
# the registry is one row of this table crossed with its language suffixes.
_VARIANTS: dict[tuple[str, str], tuple[str, tuple[str, ...] | None, str]] = {
    ("t2c", "canonical_retro"): (
        CORPUS_CODE,
        LANGUAGE_SUFFIXES,
        "Abbreviated problem description -> code that solves it",
    ),
    ("t2c", "full_retro"): (
        CORPUS_CODE,
        LANGUAGE_SUFFIXES,
        "Full problem statement -> code that solves it",
    ),
    ("t2c", "search"): (
        CORPUS_CODE,
        LANGUAGE_SUFFIXES,
        "Short developer-style keyword query (~19 tokens) -> code that solves it",
    ),
    ("c2c", "cross_lang"): (
        CORPUS_CODE,
        None,
        "Code by one model in one language -> the same model's solutions in other languages",
    ),
    ("c2c", "cross_model"): (
        CORPUS_CODE,
        None,
        "Code by one model -> other models' solutions of the same problem (v202603)",
    ),
    ("c2c", "mono_lang"): (
        CORPUS_CODE,
        None,
        "Code -> other solutions of the same problem in the same language (v202603)",
    ),
    # canonical_retro ranks the abbreviated descriptions, full_retro the full ones [A.3]
    ("c2t", "canonical_retro"): (
        CORPUS_TEXT_ABBREVIATED,
        LANGUAGE_SUFFIXES,
        "Code -> the abbreviated description of its problem",
    ),
    ("c2t", "full_retro"): (
        CORPUS_TEXT,
        LANGUAGE_SUFFIXES,
        "Code -> the full statement of its problem",
    ),
    ("c2t", "match"): (
        CORPUS_TEXT,
        None,
        "Code/description pairs labelled match or not, scored as ranked retrieval",
    ),
}
_LANGUAGE_CONSTRAINT = {
    ANY_LANGUAGE: "any of the five languages",
    **{k: f"{v.label} only" for k, v in LANGUAGES.items()},
}


def _registry() -> dict[str, SubtaskMetadata]:
    out: dict[str, SubtaskMetadata] = {}
    for (family, variant), (corpus, suffixes, description) in _VARIANTS.items():
        for lang in suffixes or (None,):
            name = f"{family}_{variant}" + (f"_{lang}" if lang else "")
            role = "target code" if family == "t2c" else "query code"
            text = description + (f" ({role}: {_LANGUAGE_CONSTRAINT[lang]})" if lang else "")
            out[name] = SubtaskMetadata(name, family, variant, lang, corpus, text)
    # the registry lists families in the paper's t2c, c2c, c2t order
    return out


SUBTASKS: dict[str, SubtaskMetadata] = _registry()
"""Every subtask the paper names (18 t2c, 3 c2c, 13 c2t); a release may hold a subset, or more."""


def classify_subtask(name: str, family: str) -> SubtaskMetadata:
    """The :class:`SubtaskMetadata` of ``name``; one outside the registry is kept as its own.

    An unknown name keeps the family of the file it came from and ranks that family's corpus.
    """
    if name in SUBTASKS and SUBTASKS[name].family == family:
        return SUBTASKS[name]
    rest = name[4:] if name.startswith(f"{family}_") else name
    language = None
    for lang in LANGUAGE_SUFFIXES:
        if rest.endswith(f"_{lang}"):
            rest, language = rest[: -len(lang) - 1], lang
            break
    corpus = CORPUS_CODE if family in ("t2c", "c2c") else CORPUS_TEXT
    return SubtaskMetadata(name, family, rest, language, corpus, known=False)


def main_task_key(subtask: str) -> str | None:
    """``t2c_full_retro_any`` -> ``t2c``; ``qualcode_speed`` -> ``qualcode``; else ``None``."""
    prefix = subtask.partition("_")[0].lower()
    if prefix in MAIN_TASKS or prefix == QUALCODE_TASK:
        return prefix
    return None


# --------------------------------------------------------------------------------------------
# MTEB's CoREB(v1) benchmark [mteb: mteb/tasks/{retrieval,reranking}/code/coreb_*.py]
# --------------------------------------------------------------------------------------------

MTEB_RETRIEVAL_TASKS: dict[str, str] = {
    "t2c": "CorebT2CRetrieval",
    "c2t": "CorebC2TRetrieval",
    "c2c": "CorebC2CRetrieval",
}
"""MTEB's retrieval task of each main task (main score nDCG@10, each main task pooled)."""

MTEB_RERANKING_TASKS: dict[str, str] = {
    "t2c": "CorebT2CReranking",
    "c2t": "CorebC2TReranking",
    "c2c": "CorebC2CReranking",
}
"""MTEB's reranking task of each main task (main score MAP@10 over 17-candidate lists)."""

COREB_V1_TASKS: tuple[str, ...] = (*MTEB_RETRIEVAL_TASKS.values(), *MTEB_RERANKING_TASKS.values())
"""The six tasks of MTEB's ``CoREB(v1)`` benchmark, whose leaderboard ranks on their mean."""


def coreb_v1_mean(main_scores: dict[str, float]) -> float | None:
    """The ``CoREB(v1)`` mean as MTEB's leaderboard computes it: the plain mean of the six
    tasks' main scores, or ``None`` unless all six are given."""
    if any(task not in main_scores for task in COREB_V1_TASKS):
        return None
    return sum(main_scores[task] for task in COREB_V1_TASKS) / len(COREB_V1_TASKS)


# --------------------------------------------------------------------------------------------
# QualCode [SynH-Rank §3]
# --------------------------------------------------------------------------------------------

QUALCODE_CONDITIONS: dict[str, str] = {
    "speed": "fast",
    "memory": "memory-efficient",
    "maintainability": "maintainable",
}
"""QualCode dimension -> the adjective of its instruction (``Retrieve code that is fast``)."""
QUALCODE_INSTRUCTION_TEMPLATE = "Retrieve code that is {conditions}"
"""The QualCode instruction [SynH-Rank §3]: ``{conditions}`` becomes the adjectives of the asked
dimensions joined with "and" (:func:`qualcode_instruction_text`). The builder's default
template (a build may take another; every pair and MC row records the instruction it was built
with, and evaluation reads that) and the template of
:func:`reranker.instructions.qualcode_instruction`."""
QUALCODE_DIMENSIONS: tuple[str, ...] = tuple(QUALCODE_CONDITIONS)
MC_CONDITION_COUNTS: tuple[int, ...] = (1, 2, 3)
"""MC-QualCode asks for k = 1, 2 or 3 conditions at once."""
QUALCODE_PAIR_CONFIGS: dict[str, str] = {d: f"qualcode_{d}" for d in QUALCODE_DIMENSIONS}
MC_CONFIGS: dict[int, str] = {k: f"mc_{k}cond" for k in MC_CONDITION_COUNTS}
QUALCODE_CORPUS = "qualcode_corpus"


def qualcode_instruction_text(
    adjectives: Sequence[str], template: str = QUALCODE_INSTRUCTION_TEMPLATE
) -> str:
    """The QualCode instruction asking for ``adjectives`` (in order), by ``template``.

    >>> qualcode_instruction_text(["fast", "maintainable"])
    'Retrieve code that is fast and maintainable'
    """
    return template.format(conditions=" and ".join(adjectives))


# --------------------------------------------------------------------------------------------
# The two papers, cited by every card, metric card and results file that needs them
# --------------------------------------------------------------------------------------------

COREB_CITATION = """\
@article{xue2026beyond,
  title   = {Beyond Retrieval: A Multitask Benchmark and Model for Code Search},
  author  = {Xue, Siqiao and Liao, Zihan and Qin, Jin and Zhang, Ziyin and Mu, Yixiang and
             Zhou, Fan and Yu, Hang},
  journal = {arXiv preprint arXiv:2605.04615},
  year    = {2026}
}"""
SYNH_RANK_CITATION = """\
@article{synhrank2026,
  title   = {SynH-Rank: Quality-Aware Code Search via Diverse Data Synthesis and Hierarchical
             Ranking Training},
  author  = {The SynH-Rank authors},
  year    = {2026},
  note    = {the paper's text as we have it names no authors}
}"""

__all__ = [
    "ANY_LANGUAGE",
    "COREB_CITATION",
    "COREB_V1_TASKS",
    "CORPUS_CODE",
    "CORPUS_CONFIGS",
    "CORPUS_TEXT",
    "CORPUS_TEXT_ABBREVIATED",
    "LANGUAGES",
    "LANGUAGE_LABELS",
    "LANGUAGE_NAMES",
    "LANGUAGE_SUFFIXES",
    "MAIN_SCORE",
    "MAIN_TASKS",
    "MC_CONDITION_COUNTS",
    "MC_CONFIGS",
    "MTEB_RERANKING_TASKS",
    "MTEB_RETRIEVAL_TASKS",
    "QUALCODE_CONDITIONS",
    "QUALCODE_CORPUS",
    "QUALCODE_DIMENSIONS",
    "QUALCODE_INSTRUCTION_TEMPLATE",
    "QUALCODE_LABEL",
    "QUALCODE_PAIR_CONFIGS",
    "QUALCODE_TASK",
    "SUBTASKS",
    "SYNH_RANK_CITATION",
    "LanguageTerm",
    "MainTask",
    "SubtaskMetadata",
    "classify_subtask",
    "coreb_v1_mean",
    "main_task_key",
    "qualcode_instruction_text",
]
