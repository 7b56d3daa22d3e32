"""Sandboxed execution of untrusted solutions in Python, C++, Java, Go and Ruby.

Every CoREB code candidate is labelled by running it against test oracles, and QualCode needs
real CPU time and memory figures. This package runs such code so that it can never harm the
machine, leak anything or hang the pipeline (bubblewrap namespaces, cgroup v1 limits and
accounting), and judges it (stdin/stdout, LeetCode-style functional and unit-test styles).

    >>> from coreb_toolkit.sandbox import execute
    >>> [r] = execute([{"id": "c1", "language": "python", "code": "print(input()[::-1])",
    ...                 "tests": [{"input": "abc\\n", "output": "cba\\n"}]}])
    >>> r["passed"], r["verdicts"]
    (True, ['pass'])
"""

from __future__ import annotations

from coreb_toolkit.sandbox.isolation import IsolationUnavailable, Limits, RunOutcome, run_command
from coreb_toolkit.sandbox.languages import LANGUAGES, Language, ToolchainMissing
from coreb_toolkit.sandbox.runner import (
    VERDICTS,
    ExecutionConfig,
    Executor,
    check_candidate,
    execute,
    execute_file,
    read_candidates,
)

__all__ = [
    "LANGUAGES",
    "VERDICTS",
    "ExecutionConfig",
    "Executor",
    "IsolationUnavailable",
    "Language",
    "Limits",
    "RunOutcome",
    "ToolchainMissing",
    "check_candidate",
    "execute",
    "execute_file",
    "read_candidates",
    "run_command",
]
