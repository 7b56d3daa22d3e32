"""Maintainability as code smells counted by a real static analyser [SynH-Rank §3.1].

The paper labels maintainability with SonarQube: the positive of a problem is a random
submission with zero code smells, the negative the one with the most (and most diverse)
smells. SonarQube is a server; this module runs analysers installed from PyPI instead, behind
one small contract (:class:`SmellAnalyser`): ``analyse`` takes many files at once (one process
call for the whole batch) and returns one :class:`SmellReport` -- the *smell count* is the
number of findings, the *smell diversity* the number of distinct rules -- or one
:class:`AnalysisError` (code that does not parse) per id.

    >>> from coreb_toolkit.quality.smells import get_analyser
    >>> reports = get_analyser("ruff").analyse({"a": "import os\\n", "b": "print(1)\\n"})
    >>> reports["a"].kinds, reports["b"].count
    (('F401',), 0)

Backends (``ANALYSERS``; a new one is one class and one registry line):

``ruff`` (default)
    The rule set below, run with ``--isolated`` (no configuration file from anywhere),
    ``--ignore-noqa`` (an author's ``# noqa`` does not hide a smell; SonarQube only honours its
    own ``# NOSONAR``) and an explicit ``--target-version``, so findings depend on the code and
    the ruff version only (:meth:`RuffAnalyser.version` records it).
``pylint``
    pylint's own messages for the same families (``PYLINT_RULES``), run as one
    ``python -m pylint`` process with an empty rc file. pylint honours inline
    ``# pylint: disable`` pragmas (it has no switch to ignore them).

The ruff rule set and the Sonar Python rules it stands for (Sonar way profile unless marked;
keys from SonarSource/sonar-python):

====================  ==========================================================================
ruff                  SonarQube (python:...)
====================  ==========================================================================
C901 (mccabe > 15)    S3776 cognitive complexity of a function > 15 (ruff has no cognitive
                      complexity; cyclomatic > 15 is Sonar's own ``FunctionComplexity`` rule)
PLR0913 (args > 13)   S107 too many parameters (Sonar's default maximum, 13)
N801                  S101 class names
N802                  S1542 function names / S100 method names
N803, N806            S117 local variable and function parameter names
N815                  S116 field names
F401                  S1128 unnecessary imports
F841                  S1481 unused local variables / S1854 unused assignments
B007 (in functions)   S1481: an unused loop variable of a function is an unused local
ARG001, ARG002        S1172 unused function parameters
ERA001                S125 commented-out code
PIE790                S2772 needless ``pass``
PLR1711               S3626 redundant jump statements (useless ``return``)
E722                  S5754 ``SystemExit`` should be re-raised (a bare ``except`` swallows it)
TRY203                S2737 ``except`` clauses should do more than re-raise
SIM102                S1066 mergeable ``if`` statements
SIM114                S1871 identical branches in a conditional
SIM201, SIM202        S1940 inverted boolean checks
F403                  S2208 wildcard imports
ISC001                S5799 confusing implicit string concatenation
A001 (in functions)   S5806 builtins shadowed by local variables
FIX001, FIX002        S1134 / S1135 FIXME and TODO tags
PLW0603               (no Sonar counterpart) the ``global`` statement: module state mutated from
                      inside functions, a maintainability smell pylint and ruff both report
====================  ==========================================================================

Decisions:

* Formatting is not a smell (SonarQube counts none): no pycodestyle whitespace, blank-line or
  line-length rules (E1/E2/E3/E5/W). CodeNet dumps often double every newline; that must not
  count.
* B007 and A001 are kept only inside function scope, as Sonar's S1481 and S5806 are (both
  exempt module-level names); ruff reports them at module level too, so those findings are
  dropped here (by the enclosing ``def`` in the parsed code). A002 (builtin-named *parameter*)
  is left out: S5806 checks assignments only.
* Left out: PLR2004 magic values (no such rule in the Sonar way profile, and it would fire on
  nearly every competitive-programming constant); PLR0911/PLR0912/PLR0915 too many
  returns/branches/statements (one complex function would count two to four times next to
  C901; Sonar's S1142/S138 are outside the Sonar way profile); N816 (Sonar checks no
  module-level names); preview rules (unstable from one ruff release to the next).
* Sonar way rules ruff has no equivalent for are not covered: S1192 duplicated string literals,
  S3358 nested conditional expressions, S108 empty blocks, S1144/S5603 unused private or
  nested definitions, S4144 duplicated functions.

The rule set, thresholds and target version are options of :class:`RuffAnalyser`
(``select=``, ``max_complexity=``, ``max_args=``, ``target_version=``).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

_INSTALL = "pip install 'coreb-toolkit[quality]'"


@dataclass(frozen=True)
class Finding:
    """One smell: the analyser's rule code, the 1-based line, and its message."""

    rule: str
    line: int
    message: str


@dataclass(frozen=True)
class SmellReport:
    """The smells of one submission, in line order (then rule, then message)."""

    findings: tuple[Finding, ...] = ()

    @property
    def count(self) -> int:
        """The smell count: the number of findings."""
        return len(self.findings)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The distinct rule codes, sorted."""
        return tuple(sorted({f.rule for f in self.findings}))

    @property
    def diversity(self) -> int:
        """The smell diversity: the number of distinct rules."""
        return len(self.kinds)


class AnalysisError(ValueError):
    """The analyser cannot read one submission (it does not parse); names the submission id."""

    def __init__(self, submission_id: str, reason: str) -> None:
        self.submission_id = submission_id
        self.reason = reason
        super().__init__(f"{submission_id}: {reason}")


@runtime_checkable
class SmellAnalyser(Protocol):
    """The backend contract: name, version, documented rule set, batch analysis."""

    name: str

    def version(self) -> str:
        """The analyser's version (findings are reproducible for a fixed version)."""
        ...

    def rules(self) -> dict[str, str]:
        """Rule code -> what it reports, for every rule this analyser counts."""
        ...

    def analyse(self, codes: Mapping[str, str]) -> dict[str, SmellReport | AnalysisError]:
        """Analyse ``{submission_id: source}`` in one batch; results in input order."""
        ...


def _check_codes(codes: object) -> dict[str, str]:
    if not isinstance(codes, Mapping):
        raise TypeError(
            f"codes must be a mapping {{submission_id: source}}, got {type(codes).__name__}"
        )
    for key, value in codes.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"submission ids must be non-empty strings, got {key!r}")
        if not isinstance(value, str):
            raise TypeError(f"{key}: the source must be a str, got {type(value).__name__}")
    return dict(codes)


def _write_batch(
    root: Path, codes: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, AnalysisError]]:
    """One file per submission, named by position (ids may hold any character).

    Returns ``{file name: submission id}`` and the errors of sources that cannot be written
    as UTF-8 (lone surrogates from a bad decode), which are left out of the batch.
    """
    names, errors = {}, {}
    for i, (sid, code) in enumerate(codes.items()):
        try:
            data = code.encode("utf-8")
        except UnicodeEncodeError as err:
            errors[sid] = AnalysisError(sid, f"not valid Unicode text ({err.reason})")
            continue
        name = f"s{i:07d}.py"
        # bytes as they are: the analyser sees the exact text, so lines are the submission's
        (root / name).write_bytes(data)
        names[name] = sid
    return names, errors


def _run(
    argv: Sequence[str], cwd: Path, timeout_s: float, what: str, **env: str
) -> tuple[int, str, str]:
    """Run a command; (exit code, stdout, stderr). ``env`` entries are added to the environment."""
    # No configuration reaches the analyser through the environment.
    base = {k: v for k, v in os.environ.items() if k not in ("PYLINTRC", "RUFF_CACHE_DIR")}
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env={**base, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"{what} did not finish within {timeout_s:g} s; analyse fewer files per batch or "
            "raise timeout_s"
        ) from None
    return proc.returncode, proc.stdout, proc.stderr


def _sorted_report(findings: list[tuple[int, int, str, str]]) -> SmellReport:
    findings.sort()
    return SmellReport(tuple(Finding(rule, line, message) for line, _, rule, message in findings))


def _function_spans(code: str) -> list[tuple[int, int, bool]] | None:
    """(first line, last line, is a function) of every def/class; None if it does not parse."""
    try:
        with warnings.catch_warnings():  # e.g. invalid escape sequences: not ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            last = node.end_lineno if node.end_lineno is not None else node.lineno
            spans.append((node.lineno, last, not isinstance(node, ast.ClassDef)))
    return spans


def _in_function(spans: list[tuple[int, int, bool]], line: int) -> bool:
    """Whether the innermost def/class around ``line`` is a function (Sonar's local scope)."""
    inside = [s for s in spans if s[0] <= line <= s[1]]
    return bool(inside) and max(inside)[2]


CHUNK_FILES = 5000
"""Submissions per analyser process: each chunk's scratch folder stays small."""
SHM = Path("/dev/shm")


def _scratch_root(n_chars: int, n_files: int) -> str | None:
    """Where a chunk's files go: ``/dev/shm`` (memory) when it is writable with room to spare
    (writing and removing hundreds of thousands of small files on a slow disk took longer
    than analysing them: measured 149-538 s wall for 151 s of CPU at 200k submissions), else
    the default temporary folder (``None``)."""
    try:
        room = shutil.disk_usage(SHM).free
    except OSError:
        return None
    # UTF-8 takes at most 4 bytes a character, a file at least a 4 KiB page; 64 MiB to spare
    needed = 4 * n_chars + 4096 * n_files + 64 * 2**20
    return str(SHM) if os.access(SHM, os.W_OK) and room > needed else None


class _BatchAnalyser:
    """Runs one analyser process over a temporary folder holding the whole batch."""

    name: str
    timeout_s: float

    def _run_batch(self, root: Path, batch: Path) -> list[dict[str, Any]]:
        """The analyser's raw findings, each with ``"file"``: the file name it concerns."""
        raise NotImplementedError

    def _report(
        self, sid: str, code: str, found: list[dict[str, Any]]
    ) -> SmellReport | AnalysisError:
        """One submission's raw findings -> its report or error."""
        raise NotImplementedError

    def analyse(self, codes: Mapping[str, str]) -> dict[str, SmellReport | AnalysisError]:
        """Analyse ``{submission_id: source}``, one process call per :data:`CHUNK_FILES`
        submissions; results in input order."""
        codes = _check_codes(codes)
        items = list(codes.items())
        starts = range(0, len(items), CHUNK_FILES)
        results: dict[str, SmellReport | AnalysisError] = {}
        for start in tqdm(starts, desc=f"{self.name} smells", unit="chunk",
                          disable=None if len(starts) > 1 else True):  # fmt: skip
            results.update(self._analyse_chunk(dict(items[start : start + CHUNK_FILES])))
        return {sid: results[sid] for sid in codes}

    def _analyse_chunk(self, codes: dict[str, str]) -> dict[str, SmellReport | AnalysisError]:
        """One analyser process over ``codes``, written to a scratch folder of their own."""
        scratch = _scratch_root(sum(map(len, codes.values())), len(codes))
        with tempfile.TemporaryDirectory(prefix="coreb-smells-", dir=scratch) as tmp:
            root = Path(tmp)
            batch = root / "batch"
            batch.mkdir()
            names, results = _write_batch(batch, codes)
            found: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
            for item in self._run_batch(root, batch) if names else []:
                if item["file"] not in found:
                    raise RuntimeError(f"{self.name} reported a file it was not given: {item}")
                found[item["file"]].append(item)
        for name, sid in names.items():
            results[sid] = self._report(sid, codes[sid], found[name])
        return results


# --------------------------------------------------------------------------------------------
# ruff

RUFF_SONAR = {
    "C901": "S3776 cognitive complexity (cyclomatic > max_complexity, Sonar FunctionComplexity)",
    "PLR0913": "S107 too many parameters",
    "N801": "S101 class names",
    "N802": "S1542 function names / S100 method names",
    "N803": "S117 function parameter names",
    "N806": "S117 local variable names",
    "N815": "S116 field names",
    "F401": "S1128 unnecessary imports",
    "F841": "S1481 unused local variables / S1854 unused assignments",
    "B007": "S1481 unused local variables (loop variables in functions)",
    "ARG001": "S1172 unused function parameters",
    "ARG002": "S1172 unused function parameters (methods)",
    "ERA001": "S125 commented-out code",
    "PIE790": "S2772 needless pass",
    "PLR1711": "S3626 redundant jump statements",
    "E722": "S5754 SystemExit should be re-raised (bare except)",
    "TRY203": "S2737 except clauses should do more than re-raise",
    "SIM102": "S1066 mergeable if statements",
    "SIM114": "S1871 identical branches",
    "SIM201": "S1940 inverted boolean checks",
    "SIM202": "S1940 inverted boolean checks",
    "F403": "S2208 wildcard imports",
    "ISC001": "S5799 confusing implicit string concatenation",
    "A001": "S5806 builtins shadowed by local variables",
    "FIX001": "S1134 FIXME tags",
    "FIX002": "S1135 TODO tags",
    "PLW0603": "(no Sonar counterpart) global statement",
}
"""ruff rule -> the Sonar Python rule it stands for (see the module docstring)."""

DEFAULT_RUFF_RULES: tuple[str, ...] = tuple(RUFF_SONAR)
# Sonar's S1481 and S5806 exempt module-level names; ruff's B007 and A001 do not.
FUNCTION_SCOPE_ONLY = frozenset({"B007", "A001"})
# Diagnostics meaning ruff could not read a file: a syntax error (its code changed across
# releases: E999, then none, then "invalid-syntax") or an I/O error (E902).
_UNREADABLE = {None, "E999", "invalid-syntax", "E902"}


def _find_ruff() -> str:
    try:
        import ruff

        path = ruff.find_ruff_bin()
        if path and os.path.isfile(path):
            return str(path)
    except (ImportError, FileNotFoundError):
        pass
    path = shutil.which("ruff")
    if path is None:
        raise ImportError(f"the ruff smell analyser needs ruff: {_INSTALL}")
    return path


class RuffAnalyser(_BatchAnalyser):
    """Code smells from ruff's rules (the rule set and its Sonar mapping: module docstring).

    Args:
        select: full rule codes to count (default ``DEFAULT_RUFF_RULES``); prefixes and
            preview rules are refused, so the rule set is exactly what :meth:`rules` lists.
        max_complexity: C901 fires above this McCabe complexity (15, Sonar's threshold).
        max_args: PLR0913 fires above this many parameters (13, Sonar's S107 default).
        target_version: the Python version the code is parsed as (``py312``).
        binary: the ruff executable (default: the ``ruff`` package's, else ``ruff`` on PATH).
        timeout_s: limit for one batch.
    """

    name = "ruff"

    def __init__(
        self,
        *,
        select: Sequence[str] | None = None,
        max_complexity: int = 15,
        max_args: int = 13,
        target_version: str = "py312",
        binary: str | None = None,
        timeout_s: float = 3600.0,
    ) -> None:
        for key, value in (("max_complexity", max_complexity), ("max_args", max_args)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key} must be a positive int, got {value!r}")
        if isinstance(select, str):
            raise TypeError(f"select must be a list of rule codes, got the string {select!r}")
        self.select = tuple(DEFAULT_RUFF_RULES if select is None else select)
        if not self.select:
            raise ValueError("select must name at least one rule")
        self.max_complexity = max_complexity
        self.max_args = max_args
        self.target_version = target_version
        self.binary = binary or _find_ruff()
        self.timeout_s = timeout_s
        self._version: str | None = None
        self._rules = self._describe(self.select)

    def _describe(self, codes: Sequence[str]) -> dict[str, str]:
        code, out, err = _run(
            [self.binary, "rule", "--all", "--output-format", "json"],
            Path.cwd(),
            120,
            "ruff rule --all",
        )
        if code != 0:
            raise RuntimeError(f"`ruff rule --all` failed ({code}): {err.strip()[-500:]}")
        known = {r["code"]: r for r in json.loads(out)}
        unknown = [c for c in codes if c not in known]
        if unknown:
            raise ValueError(
                f"RuffAnalyser: unknown rule codes {unknown} for ruff {self.version()}; give full "
                "codes such as 'F401' (prefixes are refused so the rule set stays explicit)"
            )
        preview = [c for c in codes if str(known[c].get("preview")).lower() == "true"]
        if preview:
            raise ValueError(
                f"RuffAnalyser: {preview} are preview rules in ruff {self.version()}; preview "
                "rules change between releases, pick stable ones"
            )
        out_rules = {}
        for c in codes:
            rule = known[c]
            text = rule.get("explanation", "").split("## What it does", 1)[-1].strip()
            what = text.split("\n\n", 1)[0].replace("\n", " ").strip()
            out_rules[c] = f"{rule['name']}: {what}" if what else rule["name"]
        return out_rules

    def version(self) -> str:
        if self._version is None:
            code, out, err = _run([self.binary, "--version"], Path.cwd(), 60, "ruff --version")
            if code != 0:
                raise RuntimeError(f"`ruff --version` failed ({code}): {err.strip()[-500:]}")
            self._version = out.strip().removeprefix("ruff").strip()
        return self._version

    def rules(self) -> dict[str, str]:
        return dict(self._rules)

    def _run_batch(self, root: Path, batch: Path) -> list[dict[str, Any]]:
        argv = [
            self.binary, "check", "--isolated", "--no-cache", "--ignore-noqa",
            "--no-respect-gitignore", "--exit-zero", "--output-format", "json",
            "--target-version", self.target_version,
            "--select", ",".join(self.select),
            "--config", f"lint.mccabe.max-complexity = {self.max_complexity}",
            "--config", f"lint.pylint.max-args = {self.max_args}",
            str(batch),
        ]  # fmt: skip
        code, out, err = _run(argv, root, self.timeout_s, "ruff check")
        if code != 0:
            raise RuntimeError(f"ruff check failed (exit {code}): {err.strip()[-2000:]}")
        try:
            diagnostics = json.loads(out)
        except json.JSONDecodeError:
            raise RuntimeError(f"ruff check printed no JSON: {out[:300]!r}") from None
        return [{**d, "file": os.path.basename(d["filename"])} for d in diagnostics]

    def _report(
        self, sid: str, code: str, found: list[dict[str, Any]]
    ) -> SmellReport | AnalysisError:
        unreadable = [d for d in found if d.get("code") in _UNREADABLE]
        if unreadable:
            first = min(unreadable, key=lambda d: (d["location"]["row"], d["location"]["column"]))
            return AnalysisError(
                sid, f"does not parse (line {first['location']['row']}: {first['message']})"
            )
        spans = None
        if any(d["code"] in FUNCTION_SCOPE_ONLY for d in found):
            spans = _function_spans(code)
            if spans is None:  # ruff parses it, this Python does not: keep what ruff found
                logger.debug("%s: no scopes (CPython cannot parse it), B007/A001 kept", sid)
        rows = []
        for d in found:
            line = int(d["location"]["row"])
            out_of_scope = spans is not None and not _in_function(spans, line)
            if d["code"] in FUNCTION_SCOPE_ONLY and out_of_scope:
                continue
            rows.append((line, int(d["location"]["column"]), d["code"], d["message"]))
        return _sorted_report(rows)


# --------------------------------------------------------------------------------------------
# pylint

PYLINT_RULES = {
    "R0912": "too-many-branches (complexity; Sonar S3776)",
    "R1702": "too-many-nested-blocks (Sonar S134)",
    "R0913": "too-many-arguments (Sonar S107)",
    "C0103": "invalid-name (Sonar S101/S100/S1542/S116/S117)",
    "W0611": "unused-import (Sonar S1128)",
    "W0612": "unused-variable (Sonar S1481)",
    "W0613": "unused-argument (Sonar S1172)",
    "W0107": "unnecessary-pass (Sonar S2772)",
    "R1711": "useless-return (Sonar S3626)",
    "W0702": "bare-except (Sonar S5754)",
    "W0706": "try-except-raise (Sonar S2737)",
    "W0401": "wildcard-import (Sonar S2208)",
    "W0622": "redefined-builtin (Sonar S5806)",
    "W0511": "fixme (Sonar S1134/S1135)",
    "W0603": "global-statement (no Sonar counterpart)",
}
"""The pylint messages counted by default, with the Sonar rule each stands for."""

DEFAULT_PYLINT_RULES: tuple[str, ...] = tuple(PYLINT_RULES)
# Messages meaning pylint could not read the module at all.
_PYLINT_FATAL = frozenset({"E0001", "F0001", "F0002", "F0010"})


def _import_pylint() -> Any:
    try:
        import pylint
    except ImportError as err:
        raise ImportError(f"the pylint smell analyser needs pylint: {_INSTALL}") from err
    return pylint


class PylintAnalyser(_BatchAnalyser):
    """Code smells from pylint's messages (``PYLINT_RULES`` by default).

    Module-level names are not held to pylint's UPPER_CASE constant style
    (``--const-naming-style=any``): Sonar checks no module-level names, and competitive
    programs are scripts. Other thresholds are pylint's own defaults.

    Args:
        enable: message ids to count (e.g. ``"W0611"``); default ``DEFAULT_PYLINT_RULES``.
        jobs: pylint's ``-j`` (1: deterministic and light on shared machines).
        timeout_s: limit for one batch.
    """

    name = "pylint"

    def __init__(
        self, *, enable: Sequence[str] | None = None, jobs: int = 1, timeout_s: float = 3600.0
    ) -> None:
        if isinstance(enable, str):
            raise TypeError(f"enable must be a list of message ids, got the string {enable!r}")
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a positive int, got {jobs!r}")
        self.enable = tuple(DEFAULT_PYLINT_RULES if enable is None else enable)
        if not self.enable:
            raise ValueError("enable must name at least one message")
        self.jobs = jobs
        self.timeout_s = timeout_s
        self._rules = self._describe(self.enable)

    @staticmethod
    def _describe(ids: Sequence[str]) -> dict[str, str]:
        _import_pylint()
        from pylint.exceptions import UnknownMessageError
        from pylint.lint import PyLinter

        linter = PyLinter()
        linter.load_default_plugins()
        out = {}
        for msgid in ids:
            try:
                [definition] = linter.msgs_store.get_message_definitions(msgid)
            except UnknownMessageError:
                raise ValueError(
                    f"PylintAnalyser: unknown pylint message {msgid!r}; give message ids such "
                    "as 'W0611'"
                ) from None
            if definition.msgid != msgid:
                raise ValueError(
                    f"PylintAnalyser: give message ids, not symbols: {msgid!r} is "
                    f"{definition.msgid!r}"
                )
            description = " ".join(definition.description.split())
            out[msgid] = f"{definition.symbol}: {description}"
        return out

    def version(self) -> str:
        return str(_import_pylint().__version__)

    def rules(self) -> dict[str, str]:
        return dict(self._rules)

    def _run_batch(self, root: Path, batch: Path) -> list[dict[str, Any]]:
        (root / "empty.rc").write_text("", encoding="utf-8")
        argv = [
            sys.executable, "-m", "pylint", "--rcfile", str(root / "empty.rc"),
            "--persistent=n", "--score=n", "--output-format=json2", "--recursive=y",
            "--const-naming-style=any", "-j", str(self.jobs), "--disable=all",
            "--enable=" + ",".join(sorted(set(self.enable) | {"E0001"})),
            str(batch),
        ]  # fmt: skip
        code, out, err = _run(
            argv, root, self.timeout_s, "pylint", PYLINTHOME=str(root / "pylint.d")
        )
        if code & 32 or not out.strip():  # 32: usage error (pylint's exit-code bit field)
            raise RuntimeError(f"pylint failed (exit {code}): {err.strip()[-2000:]}")
        try:
            messages = json.loads(out)["messages"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise RuntimeError(f"pylint printed no JSON report: {out[:300]!r}") from None
        return [
            {**m, "file": os.path.basename(m.get("absolutePath") or m["path"])} for m in messages
        ]

    def _report(
        self, sid: str, code: str, found: list[dict[str, Any]]
    ) -> SmellReport | AnalysisError:
        fatal = [m for m in found if m["messageId"] in _PYLINT_FATAL]
        if fatal:
            first = min(fatal, key=lambda m: (m["line"] or 0, m["messageId"]))
            # pylint names the module (our file name) in the message; the id says it
            message = re.sub(r" \(s\d{7}, line \d+\)", "", first["message"])
            return AnalysisError(sid, f"does not parse (line {first['line']}: {message})")
        rows = [
            (int(m["line"]), int(m["column"]), m["messageId"], m["message"])
            for m in found
            if m["messageId"] in self._rules
        ]
        return _sorted_report(rows)


# --------------------------------------------------------------------------------------------

ANALYSERS: dict[str, Callable[..., SmellAnalyser]] = {
    "ruff": RuffAnalyser,
    "pylint": PylintAnalyser,
}
"""Registered smell analysers: name -> factory taking the analyser's options."""


def get_analyser(name: str = "ruff", **options: Any) -> SmellAnalyser:
    """The registered analyser ``name``, built with ``options`` (see its class)."""
    if name not in ANALYSERS:
        raise ValueError(
            f"unknown smell analyser {name!r}: registered are {', '.join(sorted(ANALYSERS))}"
        )
    return ANALYSERS[name](**options)
