"""Turning a candidate and its test style into the program that runs.

Test styles found in the real sources:

* ``stdio`` (LiveCodeBench/AtCoder/CodeNet): the program reads stdin and writes stdout, compared
  token-wise with the expected output (:mod:`coreb_toolkit.sandbox.compare`).
* ``functional`` (LeetCode-style, Python): the candidate defines ``class Solution`` with the
  method ``fn_name`` (or a top-level function ``fn_name``); each test's input holds one JSON
  value per line, the arguments, and its output the JSON of the expected return value.
* ``unittest`` (HumanEval-X, MBXP): a test program is appended to the solution and the exit
  status decides (for Go, the test program is the package's ``_test.go`` file).

What is language-specific (the functional harness, how a unit test merges with the solution)
is a hook of the language's entry (:mod:`coreb_toolkit.sandbox.languages`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from coreb_toolkit.sandbox.languages import Language, functional_languages

STYLES = ("stdio", "functional", "unittest")


def program_source(
    lang: Language, code: str, style: str, fn_name: str | None, test_program: str | None
) -> str:
    """The program file for ``code`` under ``style``: with the language's functional harness
    appended, or merged with the unit-test program by the language's hook."""
    if style == "functional":
        if lang.functional_harness is None:
            raise ValueError(
                f"functional tests are not supported for {lang.label}: only for "
                f"{', '.join(functional_languages())}"
            )
        return code + lang.functional_harness.format(fn=fn_name)
    if style == "unittest" and test_program is not None:
        return lang.merge_unit_test(code, test_program)
    return code


def json_results_match(expected: str, actual: str, tolerance: float = 1e-6) -> bool:
    """Functional tests: JSON values equal, floats within ``tolerance`` (abs or rel)."""
    try:
        want = json.loads(expected)
        got = json.loads(actual)
    except (json.JSONDecodeError, ValueError):
        return False
    return _same(want, got, tolerance)


def _same(want: Any, got: Any, tol: float) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, int) and isinstance(got, int):
            return want == got
        return math.isclose(float(want), float(got), rel_tol=tol, abs_tol=tol)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(
            _same(w, g, tol) for w, g in zip(want, got, strict=True)
        )
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(_same(want[k], got[k], tol) for k in want)
    return want == got
