"""The language registry: toolchain errors, host-side syntax checks, Go test-file merging."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from coreb_toolkit import vocabulary
from coreb_toolkit.sandbox.languages import (
    LANGUAGES,
    Language,
    ToolchainMissing,
    debian_packages,
    functional_languages,
    get_language,
    go_unittest_file,
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


# -- every language is one entry keyed on the vocabulary, carrying its own hooks -----------------
@pytest.mark.parametrize("name", list(vocabulary.LANGUAGE_NAMES))
def test_every_vocabulary_language_has_one_entry_with_its_hooks(name):
    lang = LANGUAGES[name]
    assert lang.name == name and lang.label == vocabulary.LANGUAGE_LABELS[name]
    assert lang.debian_packages and all(p in debian_packages() for p in lang.debian_packages)
    for pattern in (lang.syntax_error, lang.assertion_failure, lang.out_of_memory,
                    lang.out_of_memory_any_exit):  # fmt: skip
        re.compile(pattern)
    merged = lang.merge_unit_test("CODE\n", "TEST")
    assert "CODE" in merged and "TEST" in merged


def test_the_registry_follows_the_vocabulary():
    assert tuple(LANGUAGES) == vocabulary.LANGUAGE_NAMES
    with pytest.raises(ValueError, match=r"not a language of coreb_toolkit\.vocabulary"):
        Language("rust", "main.rs", None, ("/app/main",), (), "rustc")


def test_language_hooks_hold_what_was_language_specific():
    assert functional_languages() == ["Python"]
    assert LANGUAGES["go"].merge_unit_test is go_unittest_file
    assert LANGUAGES["cpp"].merge_unit_test("int f();\n\n", "int main(){}") == (
        "int f();\n\nint main(){}\n"
    )
    java_oom = 'Exception in thread "t" java.lang.OutOfMemoryError: Java heap space'
    assert re.search(LANGUAGES["java"].out_of_memory_any_exit, java_oom)
    assert not re.search(LANGUAGES["python"].out_of_memory_any_exit, java_oom)
    assert re.search(LANGUAGES["ruby"].out_of_memory, "failed to allocate memory (NoMemoryError)")
    assert re.search(LANGUAGES["python"].out_of_memory, "MemoryError")


def test_debian_packages_are_listed_without_the_venv():
    # -S: no site-packages, so nothing but the standard library can be imported
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-S", "-m", "coreb_toolkit.sandbox.languages", "--debian-packages"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    packages = done.stdout.split()
    assert packages == debian_packages() and packages[0] == "bubblewrap"
    for needed in ("default-jdk-headless", "golang-github-stretchr-testify-dev", "ruby", "g++",
                   "libboost-dev", "libssl-dev", "python3-numpy", "python3-scipy"):  # fmt: skip
        assert needed in packages
    assert len(packages) == len(set(packages))
