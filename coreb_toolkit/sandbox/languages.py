"""The five CoREB languages: how each is built and run, and what provides its toolchain.

Adding a language is one :class:`Language` entry in ``LANGUAGES``. Paths inside the sandbox:
the candidate's build directory is ``/app`` (read-only when tests run), the test's private
writable directory is ``/work``.
"""

from __future__ import annotations

import ast
import json
import math
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


class ToolchainMissing(RuntimeError):
    """A language toolchain is not installed: an environment problem, never a failed solution."""


@dataclass(frozen=True)
class Language:
    """How to build and run one language.

    Attributes:
        name: the ``language`` field of a candidate.
        source: file name of the program in the build directory.
        compile: argv run in the build directory (``None``: nothing to build).
        run: argv that runs the built program.
        binaries: host executables the language needs (checked before anything runs).
        debian_package: what to install when a binary is missing.
        env: extra environment variables inside the sandbox.
        test_source: file name of a separate unit-test program (Go's ``_test.go``), if any.
        test_compile: argv building the unit-test program, when it is separate.
        test_run: argv running it.
        memory_overhead_mb: memory the runtime itself needs on top of the program's limit
            (the JVM's non-heap memory), added to the cgroup cap.
        build_cache: mount point of a build cache inside the sandbox, warmed once per executor
            by building ``warmup`` with ``warmup_compile``: Go's GOCACHE (library packages
            such as testify are not recompiled for every candidate) and javac's class-data
            sharing archive.
        build_cache_writable: whether builds write to the cache (each build then gets a private
            copy) or only read it (mounted read-only).
        warmup: ``{file name: source}`` built once to warm ``build_cache``.
        warmup_compile: argv of that build (default: the unit-test or normal build).
        syntax_check: checks the source on the host without running anything; returns an error
            message or ``None``. The build step of languages that have no compiler.
        syntax_error: regex over a failed run's stderr meaning the program never started
            (Ruby parses before it runs): verdict ``compile_error``.
        assertion_failure: regex over a failed unit-test program's stderr + stdout that marks a
            failed assertion (verdict ``wrong_answer``) rather than a crash (``runtime_error``).
    """

    name: str
    source: str
    compile: tuple[str, ...] | None
    run: tuple[str, ...]
    binaries: tuple[str, ...]
    debian_package: str
    env: dict[str, str] = field(default_factory=dict)
    test_source: str | None = None
    test_compile: tuple[str, ...] | None = None
    test_run: tuple[str, ...] | None = None
    memory_overhead_mb: int = 0
    build_cache: str | None = None
    build_cache_writable: bool = True
    warmup: dict[str, str] | None = None
    warmup_compile: tuple[str, ...] | None = None
    syntax_check: Callable[[str], str | None] | None = None
    syntax_error: str = r"(?!)"
    assertion_failure: str = r"(?!)"

    def check_toolchain(self) -> None:
        missing = [b for b in self.binaries if shutil.which(b) is None]
        if missing:
            raise ToolchainMissing(
                f"the {self.name} toolchain is missing ({', '.join(missing)} not on PATH): "
                f"install the Debian package {self.debian_package} "
                f"(apt-get install -y {self.debian_package}, or `make system-deps`)"
            )

    def run_argv(self, memory_mb: int) -> tuple[str, ...]:
        return tuple(a.replace("{heap_mb}", str(memory_mb)) for a in self.run)


# CPython before 3.11.9 / 3.12.1 keeps the AST validator's recursion depth in shared state, so
# two threads parsing at once can fail with "SystemError: AST constructor recursion depth
# mismatch" (python/cpython#106905). The executor builds candidates on a thread pool: serialise.
_AST_LOCK = threading.Lock()
# Parsing takes ~500 bytes of memory and ~4 us per byte of source ('x=1\n' * 1_500_000: 3.7 GB,
# 32 s). Up to this size the host parses in process (at most ~30 MB, ~0.3 s); a bigger source
# (the executor caps sources at max_code_bytes) is parsed by a child process with a memory and a
# CPU cap, so no candidate can take the host's memory or stall it.
IN_PROCESS_PARSE_CHARS = 64 * 1024
PARSE_MEMORY_MB = 1024
PARSE_CPU_S = 20.0
_CHILD_PARSER = """
import ast, json, sys
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
try:
    ast.parse(source, filename="main.py")
except SyntaxError as err:
    print(json.dumps(f"main.py:{err.lineno}:{err.offset}: SyntaxError: {err.msg}"))
except MemoryError:
    print(json.dumps({"memory": True}))
except (ValueError, RecursionError) as err:
    print(json.dumps(f"main.py: {type(err).__name__}: {err}"))
else:
    print("null")
"""


def python_syntax_error(
    source: str, *, memory_mb: int = PARSE_MEMORY_MB, cpu_time_s: float = PARSE_CPU_S
) -> str | None:
    """Parse (never compile or run) Python source; the error message if it does not parse.

    The parser alone is safe on untrusted input: no code runs and no constant is folded. A
    source over ``IN_PROCESS_PARSE_CHARS`` is parsed by a child process capped at
    ``memory_mb`` of address space and ``cpu_time_s`` of CPU; one it cannot parse within them
    gets a message saying which limit it hit.
    """
    if len(source) > IN_PROCESS_PARSE_CHARS:
        return _syntax_error_in_child(source, memory_mb, cpu_time_s)
    try:
        with _AST_LOCK:
            ast.parse(source, filename="main.py")
    except SyntaxError as err:
        return f"main.py:{err.lineno}:{err.offset}: SyntaxError: {err.msg}"
    except (ValueError, RecursionError, MemoryError) as err:
        return f"main.py: {type(err).__name__}: {err}"
    return None


def _syntax_error_in_child(source: str, memory_mb: int, cpu_time_s: float) -> str | None:
    # prlimit, not preexec_fn: the executor's threads make Python code after fork unsafe.
    argv = [
        "/usr/bin/prlimit", f"--as={memory_mb * 1024 * 1024}",
        # soft:hard, so that SIGXCPU (not SIGKILL) says the CPU cap was hit
        f"--cpu={math.ceil(cpu_time_s)}:{math.ceil(cpu_time_s) + 1}", "--core=0", "--",
        sys.executable, "-I", "-S", "-c", _CHILD_PARSER,
    ]  # fmt: skip
    what = f"the syntax check (a child capped at {memory_mb} MB and {cpu_time_s:g} s of CPU)"
    try:
        done = subprocess.run(
            argv,
            input=source.encode("utf-8", "surrogatepass"),
            capture_output=True,
            timeout=2 * cpu_time_s + 5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"main.py: {what} ran out of time"
    answer: object = None
    if done.returncode == 0:
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            answer = {}
        if answer is None or isinstance(answer, str):
            return answer
    err = done.stderr.decode("utf-8", errors="replace")
    if answer == {"memory": True}:
        return f"main.py: {what} ran out of memory"
    if done.returncode in (-24, -9):  # SIGXCPU, then SIGKILL at the hard CPU cap
        return f"main.py: {what} ran out of time"
    if "MemoryError" in err or "Cannot allocate memory" in err:  # before the parse started
        return f"main.py: {what} ran out of memory"
    return f"main.py: {what} failed (exit {done.returncode}): {err.strip()[-300:]}"


# JVM: an address-space cap breaks it, so the heap is capped with -Xmx at the test's memory
# limit and the cgroup (which counts real memory of the whole tree) gets the JVM's own overhead
# on top. Serial GC, C1 only and a small code cache keep start-up and footprint down.
_JAVA_FLAGS = (
    "-Xmx{heap_mb}m",
    "-Xss64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:MaxMetaspaceSize=128m",
    "-Xshare:auto",
)
# javac with C1 only and a class-data-sharing archive of javac's own classes (made once per
# executor by the warm-up build): about half the time of a plain `javac`.
_JAVAC = (
    "/usr/bin/javac",
    "-J-Xmx512m",
    "-J-XX:+UseSerialGC",
    "-J-XX:TieredStopAtLevel=1",
    "-J-Xshare:auto",
)
_JAVAC_ARGS = ("-encoding", "UTF-8", "-nowarn", "Main.java")
_JAVA_WARMUP = """import java.util.*;
import java.util.stream.*;

class Solution {
    public List<Integer> f(List<Integer> xs) {
        return xs.stream().map(x -> x + 1).collect(Collectors.toList());
    }
}

public class Main {
    public static void main(String[] args) {
        System.out.println(new Solution().f(Arrays.asList(1, 2, 3)));
    }
}
"""

_GO_WARMUP = """package main

import (
    "testing"
    "github.com/stretchr/testify/assert"
)

func TestWarmup(t *testing.T) {
    assert.Equal(t, 1, 1)
}
"""

LANGUAGES: dict[str, Language] = {
    lang.name: lang
    for lang in (
        Language(
            name="python",
            source="main.py",
            compile=None,
            syntax_check=python_syntax_error,
            run=("/usr/bin/python3", "/app/main.py"),
            binaries=("/usr/bin/python3",),
            debian_package="python3",
            env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"},
            assertion_failure=r"(?m)^AssertionError\b[^\n]*\s*\Z",
        ),
        Language(
            name="cpp",
            source="main.cpp",
            # Boost headers and -lcrypto (OpenSSL's MD5) as HumanEval-X's C++ harness has them;
            # the linker drops libraries a program does not use (--as-needed).
            compile=(
                "/usr/bin/g++",
                "-std=gnu++17",
                "-O2",
                "-pipe",
                "-o",
                "main",
                "main.cpp",
                "-lcrypto",
            ),
            run=("/app/main",),
            binaries=("/usr/bin/g++",),
            debian_package="g++ libboost-dev libssl-dev",
            assertion_failure=r"Assertion `.*' failed",
        ),
        Language(
            name="java",
            source="Main.java",
            compile=(*_JAVAC, "-J-XX:SharedArchiveFile=/jcache/javac.jsa", *_JAVAC_ARGS),
            run=("/usr/bin/java", *_JAVA_FLAGS, "-cp", "/app", "Main"),
            binaries=("/usr/bin/javac", "/usr/bin/java"),
            debian_package="default-jdk-headless",
            memory_overhead_mb=192,
            build_cache="/jcache",
            build_cache_writable=False,
            warmup={"Main.java": _JAVA_WARMUP},
            warmup_compile=(
                *_JAVAC,
                "-J-XX:ArchiveClassesAtExit=/jcache/javac.jsa",
                *_JAVAC_ARGS,
            ),
            assertion_failure=r"java\.lang\.AssertionError",
        ),
        Language(
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
            # Unit tests: solution and test merged into one _test.go file
            # (coreb_toolkit.sandbox.harness).
            test_source="main_test.go",
            test_compile=("/usr/bin/go", "test", "-c", "-o", "main.test"),
            test_run=("/app/main.test", "-test.v"),
            build_cache="/gocache",
            warmup={"main_test.go": _GO_WARMUP},
            assertion_failure=r"(?s)\A(?!.*\bpanic: ).*--- FAIL",
        ),
        Language(
            name="ruby",
            source="main.rb",
            compile=None,  # a separate `ruby -c` would double the cost of every candidate
            syntax_error=r"syntax error|\(SyntaxError\)",
            # -rset: Ruby >= 3.2 autoloads Set, which MBXP's solutions assume; 3.1 does not.
            run=("/usr/bin/ruby", "-rset", "/app/main.rb"),
            binaries=("/usr/bin/ruby",),
            debian_package="ruby",
            # MBXP's Ruby tests raise "Error at test case N"; minitest/test-unit style failures.
            assertion_failure=r"Error at test case|Assertion failed|\(Minitest::Assertion\)",
        ),
    )
}


def get_language(name: object) -> Language:
    if name not in LANGUAGES:
        raise ValueError(f"unknown language {name!r}: expected one of {', '.join(LANGUAGES)}")
    return LANGUAGES[name]  # type: ignore[index]
