"""The five CoREB languages: how each is built and run, and what provides its toolchain.

One module per language (``python``, ``cpp``, ``java``, ``go``, ``ruby``), each holding one
:class:`Language` entry with its own hooks (syntax check, unit-test merging, functional harness,
out-of-memory and assertion patterns, build cache) and its Debian packages. Adding a language:
its :class:`~coreb_toolkit.vocabulary.LanguageTerm` in :mod:`coreb_toolkit.vocabulary`, its
module here and one line in ``_ENTRIES`` below.

Standard library only: ``python3 -m coreb_toolkit.sandbox.languages --debian-packages`` lists
the Debian packages the registry needs (the Makefile's ``system-deps``) without the venv.
"""

from __future__ import annotations

import shutil  # noqa: F401  (tests patch coreb_toolkit.sandbox.languages.shutil.which)

from coreb_toolkit import vocabulary
from coreb_toolkit.sandbox.languages.base import Language, ToolchainMissing, append_unit_test
from coreb_toolkit.sandbox.languages.cpp import CPP
from coreb_toolkit.sandbox.languages.go import GO, go_unittest_file
from coreb_toolkit.sandbox.languages.java import JAVA
from coreb_toolkit.sandbox.languages.python import (
    IN_PROCESS_PARSE_CHARS,
    PARSE_CPU_S,
    PARSE_MEMORY_MB,
    PYTHON,
    python_syntax_error,
)
from coreb_toolkit.sandbox.languages.ruby import RUBY

#: What the sandbox itself needs, whatever the languages: bubblewrap.
SANDBOX_DEBIAN_PACKAGES: tuple[str, ...] = ("bubblewrap",)

# One line per language.
_ENTRIES: tuple[Language, ...] = (PYTHON, CPP, JAVA, GO, RUBY)


def _registry(entries: tuple[Language, ...]) -> dict[str, Language]:
    """The entries in the vocabulary's order; every vocabulary language needs one."""
    by_name = {lang.name: lang for lang in entries}
    if len(by_name) != len(entries) or set(by_name) != set(vocabulary.LANGUAGE_NAMES):
        raise ValueError(
            f"the sandbox languages {[lang.name for lang in entries]} must be the vocabulary's "
            f"{list(vocabulary.LANGUAGE_NAMES)}, once each: add or remove an entry in "
            "coreb_toolkit/sandbox/languages/__init__.py"
        )
    return {name: by_name[name] for name in vocabulary.LANGUAGE_NAMES}


LANGUAGES: dict[str, Language] = _registry(_ENTRIES)


def get_language(name: object) -> Language:
    """The entry of a candidate's ``language``; ``ValueError`` naming the known ones."""
    if name not in LANGUAGES:
        raise ValueError(f"unknown language {name!r}: expected one of {', '.join(LANGUAGES)}")
    return LANGUAGES[name]  # type: ignore[index]


def functional_languages() -> list[str]:
    """The labels of the languages that take functional (LeetCode-style) tests."""
    return [lang.label for lang in LANGUAGES.values() if lang.functional_harness is not None]


def debian_packages() -> list[str]:
    """Every Debian package the sandbox and its languages need, once each, in order."""
    packages = [*SANDBOX_DEBIAN_PACKAGES]
    for lang in LANGUAGES.values():
        packages += lang.debian_packages
    return list(dict.fromkeys(packages))


__all__ = [
    "IN_PROCESS_PARSE_CHARS",
    "LANGUAGES",
    "PARSE_CPU_S",
    "PARSE_MEMORY_MB",
    "SANDBOX_DEBIAN_PACKAGES",
    "Language",
    "ToolchainMissing",
    "append_unit_test",
    "debian_packages",
    "functional_languages",
    "get_language",
    "go_unittest_file",
    "python_syntax_error",
]
