"""What a sandbox language is: one :class:`Language` entry carrying its own hooks.

Paths inside the sandbox: the candidate's build directory is ``/app`` (read-only when tests
run), the test's private writable directory is ``/work``. Standard library only.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

from coreb_toolkit import vocabulary


class ToolchainMissing(RuntimeError):
    """A language toolchain is not installed: an environment problem, never a failed solution."""


def append_unit_test(code: str, test_program: str) -> str:
    """The unit-test program of most languages: the test appended to the solution."""
    return code.rstrip("\n") + "\n\n" + test_program + "\n"


@dataclass(frozen=True)
class Language:
    """How to build and run one language.

    Attributes:
        name: the ``language`` field of a candidate, a name of
            :data:`coreb_toolkit.vocabulary.LANGUAGES`.
        source: file name of the program in the build directory.
        compile: argv run in the build directory (``None``: nothing to build).
        run: argv that runs the built program (``{heap_mb}`` is the test's memory limit).
        binaries: host executables the language needs (checked before anything runs).
        debian_package: what to install when a binary is missing (space-separated).
        debian_extras: Debian packages the sandboxed programs of this language may use
            (libraries, not the toolchain): installed by ``make system-deps`` too.
        env: extra environment variables inside the sandbox.
        test_source: file name of a separate unit-test program (Go's ``_test.go``), if any.
        test_compile: argv building the unit-test program, when it is separate.
        test_run: argv running it.
        merge_unit_test: ``(code, test_program) -> source`` of the ``unittest`` style (default:
            the test appended; Go merges the package clauses and imports).
        functional_harness: the code appended for the ``functional`` style (LeetCode-style
            calls, ``{fn!r}`` the function's name); ``None``: the style is refused.
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
        out_of_memory: regex over a failed run's stderr meaning the runtime ran out of memory
            below the cgroup cap (verdict ``memory_limit``): Python's ``MemoryError``, Ruby's
            ``NoMemoryError``; the default of every language.
        out_of_memory_any_exit: the same whatever the exit status (the JVM's
            ``OutOfMemoryError`` in a thread other than main leaves the program running).
    """

    name: str
    source: str
    compile: tuple[str, ...] | None
    run: tuple[str, ...]
    binaries: tuple[str, ...]
    debian_package: str
    debian_extras: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    test_source: str | None = None
    test_compile: tuple[str, ...] | None = None
    test_run: tuple[str, ...] | None = None
    merge_unit_test: Callable[[str, str], str] = append_unit_test
    functional_harness: str | None = None
    memory_overhead_mb: int = 0
    build_cache: str | None = None
    build_cache_writable: bool = True
    warmup: dict[str, str] | None = None
    warmup_compile: tuple[str, ...] | None = None
    syntax_check: Callable[[str], str | None] | None = None
    syntax_error: str = r"(?!)"
    assertion_failure: str = r"(?!)"
    out_of_memory: str = r"MemoryError"
    out_of_memory_any_exit: str = r"(?!)"

    def __post_init__(self) -> None:
        if self.name not in vocabulary.LANGUAGES:
            raise ValueError(
                f"Language {self.name!r} is not a language of coreb_toolkit.vocabulary "
                f"({', '.join(vocabulary.LANGUAGE_NAMES)}): add its LanguageTerm there first"
            )

    @property
    def label(self) -> str:
        """The display label (``C++``), from the vocabulary."""
        return vocabulary.LANGUAGES[self.name].label

    @property
    def debian_packages(self) -> tuple[str, ...]:
        """Every Debian package this language needs: its toolchain's, then its extras."""
        return (*self.debian_package.split(), *self.debian_extras)

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
