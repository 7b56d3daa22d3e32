"""Turning a candidate and its test style into the program that runs.

Test styles found in the real sources:

* ``stdio`` (LiveCodeBench/AtCoder/CodeNet): the program reads stdin and writes stdout, compared
  token-wise with the expected output (:mod:`coreb_toolkit.sandbox.compare`).
* ``functional`` (LeetCode-style, Python): the candidate defines ``class Solution`` with the
  method ``fn_name`` (or a top-level function ``fn_name``); each test's input holds one JSON
  value per line, the arguments, and its output the JSON of the expected return value.
* ``unittest`` (HumanEval-X, MBXP): a test program is appended to the solution and the exit
  status decides (for Go, the test program is the package's ``_test.go`` file).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

STYLES = ("stdio", "functional", "unittest")

_FUNCTIONAL_HARNESS = """

# ---- coreb functional-test harness ----
def __coreb_run():
    import json as _json
    import sys as _sys

    _args = [_json.loads(_l) for _l in _sys.stdin.read().splitlines() if _l.strip()]
    _target = globals().get("Solution")
    _fn = getattr(_target(), {fn!r}) if _target is not None else globals()[{fn!r}]
    _result = _fn(*_args)
    if isinstance(_result, tuple):
        _result = list(_result)
    _sys.stdout.write(_json.dumps(_result))


__coreb_run()
"""


def program_source(code: str, style: str, fn_name: str | None, test_program: str | None) -> str:
    """The main source file for ``code`` under ``style`` (Go unit tests: see test_source)."""
    if style == "functional":
        return code + _FUNCTIONAL_HARNESS.format(fn=fn_name)
    if style == "unittest" and test_program is not None:
        return code.rstrip("\n") + "\n\n" + test_program + "\n"
    return code


_GO_PACKAGE = re.compile(r"^\s*package\s+\w+\s*;?\s*$", re.M)
_GO_IMPORT = re.compile(
    r'\A(?:\s|//[^\n]*\n|/\*.*?\*/)*import\s*(\((?:[^()"]|"[^"]*")*\)|[\w.]*\s*"[^"]*")',
    re.S,
)


def _split_go(source: str) -> tuple[list[str], str]:
    """Import specs and the rest of a Go file (its package clause removed)."""
    match = _GO_PACKAGE.search(source)
    rest = source[match.end() :] if match else source
    specs: list[str] = []
    while (m := _GO_IMPORT.match(rest)) is not None:
        block = m.group(1)
        if block.startswith("("):
            specs += [line.strip() for line in block[1:-1].splitlines() if line.strip()]
        else:
            specs.append(block.strip())
        rest = rest[m.end() :]
    return specs, rest


def go_unittest_file(code: str, test_program: str) -> str:
    """Solution and Go test merged into one ``package main`` test file.

    Go needs the package clause and the imports first, so a test program cannot simply be
    appended: both files' import specs are merged (duplicates once) ahead of both bodies,
    which is how HumanEval-X's own harness assembles its Go tests.
    """
    code_imports, code_body = _split_go(code)
    test_imports, test_body = _split_go(test_program)
    imports = list(dict.fromkeys(code_imports + test_imports))
    header = "package main\n\nimport (\n" + "".join(f"    {spec}\n" for spec in imports) + ")\n"
    return header + code_body.rstrip() + "\n\n" + test_body.lstrip("\n")


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
