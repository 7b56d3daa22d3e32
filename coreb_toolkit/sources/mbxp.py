"""MBXP (amazon-science/mbxp-exec-eval): MBPP's problems in several languages; here the Ruby
set (``mbrbp``), whose canonical solutions come with unit-test programs.

Read in place from ``../shared/data/mbxp/mbxp/mbrbp_release_v1.2.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coreb_toolkit.sources.base import SourceCandidate, SourceProblem, corpus_code
from coreb_toolkit.sources.humaneval_x import BREAK_STATEMENT

FILES = {"ruby": "mbrbp_release_v1.2.jsonl"}


def candidates(data_dir: str | Path, language: str = "ruby", broken: bool = False) -> list[dict]:
    """Unit-test candidates for every problem that has a canonical solution."""
    if language not in FILES:
        raise ValueError(f"only {sorted(FILES)} are adapted from MBXP so far, got {language!r}")
    path = Path(data_dir) / "mbxp" / FILES[language]
    if not path.is_file():
        raise FileNotFoundError(f"MBXP file not found: {path}")
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not row.get("canonical_solution"):
                continue
            body = (BREAK_STATEMENT[language] if broken else "") + row["canonical_solution"]
            suffix = "broken" if broken else "canonical"
            out.append(
                {
                    "id": f"{row['task_id']}__{suffix}".replace("/", "__"),
                    "language": language,
                    "code": row["prompt"] + body,
                    "test_program": row["test"],
                    "test_style": "unittest",
                    "meta": {"source": "mbxp", "task_id": row["task_id"], "variant": suffix},
                }
            )
    return out


# MBXP's per-language files for the release pipeline (Go has no solutions in MBXP)
SOURCE_FILES = {
    "python": "mbpp_release_v1.jsonl",
    "java": "mbjp_release_v1.2.jsonl",
    "cpp": "mbcpp_release_v1.2.jsonl",
    "ruby": "mbrbp_release_v1.2.jsonl",
}


def mbxp_source(
    data_dir: str | Path, languages: tuple[str, ...] = tuple(SOURCE_FILES)
) -> tuple[list[SourceProblem], list[SourceCandidate]]:
    """MBPP's problems with their canonical solutions in Python, Java, C++ and Ruby.

    Problem ids are ``mbpp/<n>`` (MBXP numbers a problem the same in every language); the
    statement is MBXP's ``description``; the corpus code is the executed code without the
    prompt's doc comment (:func:`coreb_toolkit.sources.base.corpus_code`).
    """
    problems: dict[str, SourceProblem] = {}
    candidates: list[SourceCandidate] = []
    for language in languages:
        if language not in SOURCE_FILES:
            raise ValueError(
                f"MBXP has no solutions in {language!r}; choose from {sorted(SOURCE_FILES)}"
            )
        path = Path(data_dir) / "mbxp" / SOURCE_FILES[language]
        if not path.is_file():
            raise FileNotFoundError(f"MBXP file not found: {path}")
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                number = row["task_id"].rsplit("/", 1)[-1]
                pid = f"mbpp/{number}"
                if pid not in problems and row.get("description"):
                    problems[pid] = SourceProblem(
                        problem_id=pid, source="mbxp", statement=row["description"].strip(),
                        title=row.get("entry_point"), entry_point=row.get("entry_point"),
                        meta={"task_id": row["task_id"]},
                    )  # fmt: skip
                solution = row.get("canonical_solution")
                if not solution or solution == "None":
                    continue
                code = row["prompt"] + solution
                test = row["test"]
                if language == "python":
                    test += f"\n\ncheck({row['entry_point']})\n"
                cid = f"mbxp/{number}/{language}/canonical"
                candidates.append(
                    SourceCandidate(
                        candidate_id=cid, problem_id=pid, language=language, model="canonical",
                        code=corpus_code(code, solution, language),
                        execution={"id": cid, "language": language, "code": code,
                                   "test_program": test, "test_style": "unittest"},
                        solution=solution, meta={"source": "mbxp", "task_id": row["task_id"]},
                    )
                )  # fmt: skip
    known = [c for c in candidates if c.problem_id in problems]
    if len(known) != len(candidates):
        raise ValueError(f"{data_dir}: MBXP solutions without a described problem")
    return sorted(problems.values(), key=lambda p: int(p.problem_id.split("/")[1])), known
