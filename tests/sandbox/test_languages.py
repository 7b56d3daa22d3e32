"""The language registry: toolchain errors, host-side syntax checks, Go test-file merging."""

from __future__ import annotations

import gc
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from coreb_toolkit.sandbox.harness import go_unittest_file
from coreb_toolkit.sandbox.languages import (
    LANGUAGES,
    ToolchainMissing,
    get_language,
    python_syntax_error,
)


def test_registry_has_the_five_coreb_languages():
    assert set(LANGUAGES) == {"python", "cpp", "java", "go", "ruby"}
    with pytest.raises(ValueError, match="unknown language 'rust'"):
        get_language("rust")


def test_missing_binary_names_the_debian_package(monkeypatch):
    monkeypatch.setattr("coreb_toolkit.sandbox.languages.shutil.which", lambda _: None)
    with pytest.raises(ToolchainMissing, match="apt-get install -y default-jdk-headless"):
        LANGUAGES["java"].check_toolchain()


@pytest.mark.parametrize(
    ("source", "ok"),
    [
        ("print(1)\n", True),
        ("def f(:\n", False),
        ("x = (" * 500 + ")" * 500, False),  # too deeply nested: refused, no crash
        ("x = 2 ** 10 ** 10\n", True),  # parsed only: nothing is folded or run
        ("\x00", False),
    ],
)
def test_python_syntax_check_is_parse_only(source, ok):
    assert (python_syntax_error(source) is None) is ok


def test_python_syntax_check_is_safe_from_many_threads():
    # CPython < 3.11.9 fails "AST constructor recursion depth mismatch" when another thread
    # runs while one converts an AST (cpython#106905); a GC callback that yields the GIL makes
    # that switch happen inside the conversion. The executor checks candidates on a thread pool.
    source = "\n".join(
        f"def g{i}(a):\n    return [b for b in range({i}) if (a, (b,))]" for i in range(100)
    )
    threshold = gc.get_threshold()

    def yield_gil(phase, info):
        time.sleep(0)

    gc.callbacks.append(yield_gil)
    gc.set_threshold(50)
    try:
        with ThreadPoolExecutor(8) as pool:
            errors = list(pool.map(lambda _: python_syntax_error(source), range(200)))
    finally:
        gc.callbacks.remove(yield_gil)
        gc.set_threshold(*threshold)
    assert errors == [None] * 200


def test_go_merge_keeps_one_package_clause_and_dedupes_imports():
    code = (
        'package main\n\nimport (\n    "fmt"\n    "strings"\n)\n\n'
        'func F() { fmt.Println(strings.ToUpper("x")) }\n'
    )
    test = (
        'package main\n\nimport (\n    "testing"\n    "strings"\n)\n\n'
        'func TestF(t *testing.T) { _ = strings.ToLower("X"); F() }\n'
    )
    merged = go_unittest_file(code, test)
    assert merged.count("package main") == 1
    assert merged.count('"strings"') == 1
    assert merged.index('"testing"') < merged.index("func F()") < merged.index("func TestF")
