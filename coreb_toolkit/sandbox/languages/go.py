"""Go: GOPATH mode with Debian's Go libraries (testify), no network; unit tests as one
``_test.go`` file merging the solution's and the test's imports."""

from __future__ import annotations

import re

from coreb_toolkit.sandbox.languages.base import Language

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


GO_WARMUP = """package main

import (
    "testing"
    "github.com/stretchr/testify/assert"
)

func TestWarmup(t *testing.T) {
    assert.Equal(t, 1, 1)
}
"""

GO = Language(
    name="go",
    source="main.go",
    compile=("/usr/bin/go", "build", "-o", "main", "main.go"),
    run=("/app/main",),
    binaries=("/usr/bin/go",),
    debian_package="golang-go golang-github-stretchr-testify-dev",
    # GOPATH mode with Debian's Go libraries (testify for HumanEval-X) and no network.
    env={
        "GO111MODULE": "off",
        "GOPATH": "/usr/share/gocode",
        "GOCACHE": "/gocache",
        "GOFLAGS": "-buildvcs=false",
        "GOTOOLCHAIN": "local",
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    },
    # Unit tests: solution and test merged into one _test.go file, built by `go test -c`.
    test_source="main_test.go",
    test_compile=("/usr/bin/go", "test", "-c", "-o", "main.test"),
    test_run=("/app/main.test", "-test.v"),
    merge_unit_test=go_unittest_file,
    build_cache="/gocache",
    warmup={"main_test.go": GO_WARMUP},
    assertion_failure=r"(?s)\A(?!.*\bpanic: ).*--- FAIL",
)
