"""Project CodeNet problems and accepted submissions, for the QualCode dataset builder.

QualCode [SynH-Rank §3] needs, per problem, an English statement, its limits, public tests where
there are some, and accepted submissions with the judge's CPU time and memory. Project CodeNet
(Puri et al., 2021, "CodeNet: A Large-Scale AI for Code Dataset for Learning a Diversity of
Coding Tasks", https://github.com/IBM/Project_CodeNet) has all of that; :func:`load` reads it
from any mix of these layouts (each is detected from what the path holds):

* **full CodeNet root**: ``metadata/pNNNNN.csv`` (submission_id, problem_id, user_id, date,
  language, original_language, filename_ext, status, cpu_time, memory, code_size, accuracy),
  code in ``data/pNNNNN/<language>/<submission_id>.<filename_ext>``, and where present
  ``metadata/problem_list.csv``, ``problem_descriptions/pNNNNN.html`` and the public tests
  ``derived/input_output/data/pNNNNN/{input,output}.txt``.
* **PIE pairs jsonl** (Shypula et al., 2024, "Learning Performance-Improving Code Edits",
  https://github.com/madaan/pie-perf): one row per pair of accepted submissions of the same
  user, ``submission_id_v0/v1``, ``cpu_time_v0/v1`` (ms), ``memory_v0/v1`` (KB),
  ``status_v0/v1``, code in ``input`` (v0) and ``target`` (v1).
* **NoFunEval runtime_efficiency jsonl** (Singhal et al., 2024, "NoFunEval: Funny How Code LMs
  Falter on Requirements Beyond Functional Correctness", https://github.com/microsoft/NoFunEval):
  ``problem_id``, ``submission_id_v0``, ``cpu_time_v0/v1`` (ms, as strings), ``source_code``,
  ``target_code``. It has no memory, no status and no id for the target: sources are read as
  accepted (NoFunEval took its pairs from PIE, whose pairs are all accepted), targets are
  dropped as ``"no submission id"`` (load the PIE file too to have them, under their real id).
* **problem list** ``*.csv`` (id, name, dataset, time_limit, memory_limit, ...): ``time_limit``
  is in milliseconds and ``memory_limit`` in kilobytes (KiB): AtCoder's "1024 MB" is written
  1048576, AIZU's usual 128 MB 131072.
* **statements**: a ``.tar.gz`` / ``.tar`` of ``pNNNNN.html`` files, or a folder of them.
* **public tests**: a folder of ``pNNNNN/`` folders holding ``input.N.txt`` / ``output.N.txt``
  (NoFunEval's ``codenet_public_test_cases``) or ``input.txt`` / ``output.txt`` (CodeNet).
* **a folder bundling any of the above** (``../shared/data/codenet``: PIE jsonl + problem list +
  statements archive; ``../shared/data/nofuneval``: runtime_efficiency.jsonl + public tests).
  Files in it of no known layout (NoFunEval's other tasks) are skipped.

Only submissions with ``status == "Accepted"`` in the requested language are kept. Those the
selection leaves out are counted in :attr:`CodenetData.filtered`, not itemised (on full CodeNet
they are most of its 13.9M rows); every other drop is itemised in :attr:`CodenetData.dropped`.

Code is kept as the judge received it, with two repairs of how it was stored: line endings
become ``"\\n"``, and in the jsonl sources, whose code has every line break doubled (a
``"\\r\\n"`` turned into ``"\\n\\n"``: 993 of PIE's 1,000 v0 codes, all multi-line ones), the
doubling is undone (:func:`~coreb_toolkit.sources.codenet_records.undouble_newlines`), which
also makes code with a backslash line continuation compile again. PIE's code is otherwise what
PIE ships: ``2to3`` output (``input()`` became ``eval(input())``, ``print(x)`` became
``print((x))``, and ``print(*a)`` became ``print((*a))``, which does not compile), so the same
submission read from PIE and from NoFunEval (which undid some ``eval``) or from CodeNet itself
may differ: the first one read is kept and the difference is counted as
``"conflicting duplicate"``.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import tarfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from coreb_toolkit.sources.codenet_html import decode_html, html_to_text, statement_language
from coreb_toolkit.sources.codenet_records import (
    PROBLEM_ID,
    SUBMISSION_ID,
    Malformed,
    decode_code,
    number_field,
    optional_string_field,
    pie_record,
    string_field,
    undouble_newlines,
    unify_newlines,
)

logger = logging.getLogger(__name__)

LAYOUTS = (
    "a full Project CodeNet root (metadata/pNNNNN.csv + data/pNNNNN/<Language>/), "
    "a PIE pairs jsonl (submission_id_v0/v1, input, target), "
    "a NoFunEval runtime_efficiency jsonl (submission_id_v0, source_code, target_code), "
    "a problem list csv (id,name,dataset,time_limit,memory_limit), "
    "a .tar.gz/.tar or folder of pNNNNN.html statements, "
    "a folder of pNNNNN/input.N.txt + output.N.txt public tests, "
    "or a folder holding any of these"
)

# CodeNet's spelling of the languages, for sources that write them in lower case.
CODENET_LANGUAGES: tuple[str, ...] = (
    "C",
    "C++",
    "C#",
    "D",
    "Go",
    "Haskell",
    "Java",
    "JavaScript",
    "Kotlin",
    "OCaml",
    "PHP",
    "Perl",
    "Python",
    "Ruby",
    "Rust",
    "Scala",
    "Swift",
)

_HTML_NAME = re.compile(r"(?:^|/)(p\d+)\.html?$")
_TEST_FILE = re.compile(r"(input|output)(?:\.(\d+))?\.txt")
_METADATA_COLUMNS = (
    "submission_id",
    "problem_id",
    "language",
    "filename_ext",
    "status",
    "cpu_time",
    "memory",
)
_PROBLEM_LIST_COLUMNS = ("id", "time_limit", "memory_limit")
_MAX_LISTED_ERRORS = 20
_MAX_LOGGED_CONFLICTS = 10


# -- public data shapes ------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """One accepted submission, with the judge's figures.

    Attributes:
        problem_id: CodeNet problem id (``"p03371"``).
        submission_id: CodeNet submission id (``"s504204235"``), unique across CodeNet.
        language: the language as CodeNet writes it (``"Python"``, ``"C++"``).
        code: the source code, ``"\\n"`` line endings (see the module docstring for repairs).
        cpu_time_ms: the judge's CPU time in milliseconds.
        memory_kb: the judge's peak memory in kilobytes; ``None`` where the source has none
            (NoFunEval).
        status: the judge's verdict, always ``"Accepted"`` for kept submissions.
        user_id: CodeNet user id, where the source has it.
        origin: where it was read, e.g. ``"pie_py_reference.jsonl:17 (v0)"``.
    """

    problem_id: str
    submission_id: str
    language: str
    code: str
    cpu_time_ms: float | None
    memory_kb: float | None
    status: str
    user_id: str | None
    origin: str


@dataclass(frozen=True)
class Problem:
    """One problem.

    Attributes:
        problem_id: CodeNet problem id.
        name: its title from the problem list (AtCoder's carry the contest name).
        statement: clean text converted from the HTML statement by :func:`html_to_text`;
            ``None`` when no statement was found.
        time_limit_ms: time limit in milliseconds, from the problem list.
        memory_limit_kb: memory limit in kilobytes (1024 MB = 1048576), from the problem list.
        tests: public ``(input, expected output)`` pairs, possibly none.
        statement_language: ``"en"`` or ``"ja"``: about a third of CodeNet's statements (AIZU's
            JOI/PC-Koshien problems, some AtCoder ones) exist only in Japanese; ``None`` when
            there is no statement.
    """

    problem_id: str
    name: str | None
    statement: str | None
    time_limit_ms: float | None
    memory_limit_kb: float | None
    tests: tuple[tuple[str, str], ...] = ()
    statement_language: str | None = None


@dataclass(frozen=True)
class Dropped:
    """A record that was read and left out, and why.

    Attributes:
        stage: ``"read"``.
        reason: a short stable key: ``"duplicate submission"``, ``"conflicting duplicate"``,
            ``"no code file"``, ``"undecodable code"``, ``"missing cpu_time"``,
            ``"no submission id"``.
        item: the submission (or problem) id.
        where: ``file:line`` or a path.
    """

    stage: str
    reason: str
    item: str
    where: str


@dataclass
class CodenetData:
    """What :func:`load` read.

    Attributes:
        problems: every problem with at least one kept submission (when the sources hold no
            submissions at all, every problem with a statement or public tests), by id, sorted.
        submissions: problem id -> its kept submissions, sorted by submission id.
        dropped: the records left out, one entry each (see :class:`Dropped`).
        sources: what was read, one line per file or folder, for the build report.
        filtered: records left out by the selection itself, counted, not itemised:
            ``"not accepted"`` and ``"other language"``.
    """

    problems: dict[str, Problem]
    submissions: dict[str, list[Submission]]
    dropped: list[Dropped]
    sources: list[str]
    filtered: dict[str, int] = field(default_factory=dict)

    def drop_counts(self) -> dict[str, int]:
        """Reason -> how many records were left out for it (itemised and filtered alike)."""
        counts = Counter(d.reason for d in self.dropped)
        counts.update(self.filtered)
        return dict(sorted(counts.items()))


# -- loading -----------------------------------------------------------------------------------


def load(
    sources: Sequence[str | os.PathLike], *, language: str = "Python", progress: bool = True
) -> CodenetData:
    """Read CodeNet-style problems and their accepted submissions from ``sources``.

    Each source is a file or folder in one of the layouts of the module docstring, detected from
    its content. Sources merge in the order given: a submission id seen again with the same
    code and figures is kept once (``"duplicate submission"``; figures the first lacked, such as
    memory, are taken from the second); seen with other code or figures, the first is kept and
    the second counted as ``"conflicting duplicate"`` (and logged). Statements, limits and
    public tests attach from any source that has them (the first one wins).

    Args:
        sources: paths of files or folders.
        language: the CodeNet language to keep (``"Python"``, ``"C++"``, ...), compared without
            regard to case.
        progress: show a progress bar over a full CodeNet metadata scan.

    Returns:
        A :class:`CodenetData`.

    Raises:
        TypeError: ``sources`` is a single path rather than a list of them.
        ValueError: a source does not exist or its layout is not recognised; or records are
            malformed (all of them are listed, with ``file:line`` and what is wrong).
    """
    if isinstance(sources, (str, bytes, os.PathLike)):
        raise TypeError(
            f"load() takes a sequence of paths, got the single path {sources!r}: pass [{sources!r}]"
        )
    if not sources:
        raise ValueError(f"load() needs at least one source: {LAYOUTS}")
    reader = _Reader(language=language, progress=progress)
    parts = [(kind, path) for source in sources for kind, path in _detect(Path(source))]
    for kind, path in parts:
        reader.read(kind, path)
    reader.raise_errors()
    return reader.finish()


def _detect(path: Path) -> list[tuple[str, Path]]:
    """The readable parts of one source: ``(kind, path)`` pairs."""
    if not path.exists():
        raise ValueError(f"CodeNet source {path} does not exist; accepted layouts: {LAYOUTS}")
    if path.is_file():
        kind, why = _file_kind(path)
        if kind is None:
            raise ValueError(
                f"CodeNet source {path}: layout not recognised ({why}); accepted layouts: {LAYOUTS}"
            )
        return [(kind, path)]
    if (path / "metadata").is_dir() and (path / "data").is_dir():
        return [("codenet_root", path)]
    kind = _folder_kind(path)
    if kind is not None:
        return [(kind, path)]
    parts: list[tuple[str, Path]] = []
    for child in sorted(path.iterdir()):
        kind = _file_kind(child)[0] if child.is_file() else _folder_kind(child)
        if kind is None:
            logger.info("%s: no CodeNet layout, skipped", child)
        else:
            parts.append((kind, child))
    if not parts:
        raise ValueError(
            f"CodeNet source {path}: layout not recognised (a folder with nothing readable in "
            f"it); accepted layouts: {LAYOUTS}"
        )
    return parts


def _file_kind(path: Path) -> tuple[str | None, str]:
    """The layout of a file, or ``None`` and why not."""
    name = path.name.lower()
    if name.endswith(".jsonl"):
        with path.open(encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), None)
        if first is None:
            return None, "an empty jsonl file"
        try:
            row = json.loads(first)
        except json.JSONDecodeError as err:
            return None, f"line 1 is not JSON: {err.msg}"
        if not isinstance(row, dict):
            return None, "its first line is not a JSON object"
        if {"submission_id_v0", "submission_id_v1", "input", "target"} <= row.keys():
            return "pie", ""
        if {"submission_id_v0", "source_code"} <= row.keys():
            return "nofuneval", ""
        return None, f"a jsonl file whose rows have the fields {sorted(row)[:8]}"
    if name.endswith(".csv"):
        with path.open(encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), [])
        if set(_PROBLEM_LIST_COLUMNS) <= set(header):
            return "problem_list", ""
        return None, f"a csv file with the columns {header[:8]}"
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(path) as tar:
            for count, member in enumerate(tar):
                if member.isfile() and _HTML_NAME.search(member.name):
                    return "descriptions_tar", ""
                if count > 100:
                    break
        return None, "an archive without pNNNNN.html files"
    return None, "a file of no known kind (.jsonl, .csv, .tar.gz)"


def _folder_kind(path: Path) -> str | None:
    if next((p for p in path.glob("p*.htm*") if _HTML_NAME.search(p.name)), None):
        return "descriptions_dir"
    for sub in path.iterdir():
        if sub.is_dir() and PROBLEM_ID.fullmatch(sub.name):
            if any(_TEST_FILE.fullmatch(f.name) for f in sub.iterdir()):
                return "tests_dir"
            break
    return None


class _Reader:
    """Reads the sources one by one and merges what they hold."""

    def __init__(self, *, language: str, progress: bool) -> None:
        self.language = language
        self.progress = progress
        self.submissions: dict[str, Submission] = {}
        self.dropped: list[Dropped] = []
        self.filtered: Counter[str] = Counter()
        self.errors: list[str] = []
        self.sources: list[str] = []
        self.conflicts = 0
        self.had_submission_source = False
        # Sources of problem data, read once the problems are known.
        self.problem_lists: list[Path] = []
        self.descriptions: list[tuple[str, Path]] = []
        self.test_dirs: list[Path] = []

    def raise_errors(self) -> None:
        """Raise once for all the malformed records met so far."""
        if not self.errors:
            return
        shown = self.errors[:_MAX_LISTED_ERRORS]
        more = len(self.errors) - len(shown)
        raise ValueError(
            f"{len(self.errors)} malformed record(s) in the CodeNet sources:\n  "
            + "\n  ".join(shown)
            + (f"\n  ... and {more} more" if more else "")
        )

    # -- per layout --------------------------------------------------------------------------

    def read(self, kind: str, path: Path) -> None:
        if kind == "pie":
            self.had_submission_source = True
            rows = self._read_pie(path)
            self.sources.append(f"{path} (PIE pairs jsonl, {rows} rows)")
        elif kind == "nofuneval":
            self.had_submission_source = True
            rows = self._read_nofuneval(path)
            self.sources.append(f"{path} (NoFunEval runtime_efficiency jsonl, {rows} rows)")
        elif kind == "codenet_root":
            self.had_submission_source = True
            self._read_codenet_root(path)
        elif kind == "problem_list":
            self.problem_lists.append(path)
            self.sources.append(f"{path} (problem list csv)")
        elif kind in ("descriptions_tar", "descriptions_dir"):
            self.descriptions.append((kind, path))
            self.sources.append(f"{path} (HTML statements)")
        elif kind == "tests_dir":
            self.test_dirs.append(path)
            self.sources.append(f"{path} (public tests)")
        else:  # pragma: no cover - _detect only returns the kinds above
            raise AssertionError(kind)

    def _jsonl_rows(self, path: Path) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """``(line, "file:line", row)`` for each JSON object line; errors recorded for others."""
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as err:
                    self.errors.append(f"{where}: not valid JSON ({err.msg})")
                    continue
                if not isinstance(row, dict):
                    self.errors.append(f"{where}: expected a JSON object, got {type(row).__name__}")
                    continue
                yield number, where, row

    def _read_pie(self, path: Path) -> int:
        rows = 0
        for number, where, row in self._jsonl_rows(path):
            rows += 1
            try:
                records = [
                    pie_record(row, version, code_field)
                    for version, code_field in (("v0", "input"), ("v1", "target"))
                ]
            except Malformed as err:
                self.errors.append(f"{where}: {err}")
                continue
            for version, record in zip(("v0", "v1"), records, strict=True):
                origin = f"{path.name}:{number} ({version})"
                self._offer(**record, origin=origin, where=where)
        return rows

    def _read_nofuneval(self, path: Path) -> int:
        rows = 0
        for number, where, row in self._jsonl_rows(path):
            rows += 1
            try:
                language = row.get("language", row.get("pl"))
                if not isinstance(language, str):
                    raise Malformed(f"field 'pl' must be a string, got {language!r}")
                record = {
                    "problem_id": string_field(row, "problem_id", PROBLEM_ID),
                    "submission_id": string_field(row, "submission_id_v0", SUBMISSION_ID),
                    "language": language,
                    "code": undouble_newlines(unify_newlines(string_field(row, "source_code"))),
                    "cpu_time_ms": number_field(row.get("cpu_time_v0"), "cpu_time_v0"),
                    "memory_kb": number_field(row.get("memory_v0"), "memory_v0"),
                    # NoFunEval's pairs come from PIE, which pairs accepted submissions only.
                    "status": string_field(row, "status_v0") if "status_v0" in row else "Accepted",
                    "user_id": optional_string_field(row, "user_id"),
                }
            except Malformed as err:
                self.errors.append(f"{where}: {err}")
                continue
            origin = f"{path.name}:{number} (source)"
            self._offer(**record, origin=origin, where=where)
            if "target_code" in row and language.casefold() == self.language.casefold():
                target = f"target of {record['submission_id']}"
                self.dropped.append(Dropped("read", "no submission id", target, where))
        return rows

    def _read_codenet_root(self, root: Path) -> None:
        files = sorted(
            p for p in (root / "metadata").glob("p*.csv") if PROBLEM_ID.fullmatch(p.stem)
        )
        kept_before = len(self.submissions)
        rows = 0
        for csv_path in tqdm(
            files, desc="CodeNet metadata", unit="problem", disable=not self.progress
        ):
            rows += self._read_metadata_file(root, csv_path)
        kept = len(self.submissions) - kept_before
        self.sources.append(
            f"{root} (CodeNet root: {len(files)} metadata files, {rows} rows, {kept} kept)"
        )
        for kind, sub in (
            ("problem_list", root / "metadata" / "problem_list.csv"),
            ("descriptions_dir", root / "problem_descriptions"),
            ("tests_dir", root / "derived" / "input_output" / "data"),
        ):
            if sub.exists():
                self.read(kind, sub)

    def _read_metadata_file(self, root: Path, csv_path: Path) -> int:
        """One ``metadata/pNNNNN.csv``: the kept submissions offered, the rows counted."""
        want = self.language.casefold()
        rel = csv_path.relative_to(root).as_posix()
        rows = 0
        with csv_path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            missing = [c for c in _METADATA_COLUMNS if c not in header]
            if missing:
                self.errors.append(f"{csv_path}:1: the header lacks the column(s) {missing}")
                return 0
            col = {name: i for i, name in enumerate(header)}
            for row in reader:
                rows += 1
                where = f"{csv_path}:{reader.line_num}"
                if len(row) != len(header):
                    self.errors.append(
                        f"{where}: {len(row)} fields where the header has {len(header)}"
                    )
                    continue
                # The selection first: it leaves out most rows, cheaply.
                language = row[col["language"]]
                if language.casefold() != want:
                    self.filtered["other language"] += 1
                    continue
                if row[col["status"]] != "Accepted":
                    self.filtered["not accepted"] += 1
                    continue
                problem_id = row[col["problem_id"]]
                submission_id = row[col["submission_id"]]
                try:
                    if problem_id != csv_path.stem:
                        raise Malformed(f"problem_id {problem_id!r} in the file of {csv_path.stem}")
                    if not SUBMISSION_ID.fullmatch(submission_id):
                        raise Malformed(f"submission_id {submission_id!r} is not a CodeNet id")
                    cpu = number_field(row[col["cpu_time"]], "cpu_time")
                    memory = number_field(row[col["memory"]], "memory")
                except Malformed as err:
                    self.errors.append(f"{where}: {err}")
                    continue
                if cpu is None:  # dropped before its code file is read
                    self.dropped.append(Dropped("read", "missing cpu_time", submission_id, where))
                    continue
                ext = row[col["filename_ext"]]
                code_path = root / "data" / problem_id / language / f"{submission_id}.{ext}"
                if not code_path.is_file():
                    self.dropped.append(Dropped("read", "no code file", submission_id, where))
                    continue
                code = decode_code(code_path.read_bytes())
                if code is None:
                    self.dropped.append(
                        Dropped("read", "undecodable code", submission_id, str(code_path))
                    )
                    continue
                self._offer(
                    problem_id=problem_id,
                    submission_id=submission_id,
                    language=language,
                    code=code,
                    cpu_time_ms=cpu,
                    memory_kb=memory,
                    status="Accepted",
                    user_id=(row[col["user_id"]] if "user_id" in col else "") or None,
                    origin=f"{code_path.relative_to(root).as_posix()} ({rel}:{reader.line_num})",
                    where=where,
                )
        return rows

    # -- merging -----------------------------------------------------------------------------

    def _offer(self, *, where: str, **fields: Any) -> None:
        """Keep one submission record, or count why not."""
        if fields["language"].casefold() != self.language.casefold():
            self.filtered["other language"] += 1
            return
        if fields["status"] != "Accepted":
            self.filtered["not accepted"] += 1
            return
        fields["language"] = _codenet_language(fields["language"])
        submission = Submission(**fields)
        if submission.cpu_time_ms is None:
            self.dropped.append(
                Dropped("read", "missing cpu_time", submission.submission_id, where)
            )
            return
        first = self.submissions.get(submission.submission_id)
        if first is None:
            self.submissions[submission.submission_id] = submission
            return
        if _same_submission(first, submission):
            self.submissions[submission.submission_id] = replace(
                first,
                memory_kb=first.memory_kb if first.memory_kb is not None else submission.memory_kb,
                user_id=first.user_id or submission.user_id,
            )
            self.dropped.append(
                Dropped("read", "duplicate submission", submission.submission_id, where)
            )
            return
        self.conflicts += 1
        self.dropped.append(
            Dropped("read", "conflicting duplicate", submission.submission_id, where)
        )
        if self.conflicts <= _MAX_LOGGED_CONFLICTS:
            logger.warning(
                "submission %s at %s differs from the one read first at %s (%s); keeping the first",
                submission.submission_id,
                where,
                first.origin,
                _difference(first, submission),
            )

    # -- problems ----------------------------------------------------------------------------

    def finish(self) -> CodenetData:
        if self.conflicts > _MAX_LOGGED_CONFLICTS:
            logger.warning(
                "%d conflicting duplicate submissions in all (the first %d logged)",
                self.conflicts,
                _MAX_LOGGED_CONFLICTS,
            )
        by_problem: dict[str, list[Submission]] = {}
        for submission in self.submissions.values():
            by_problem.setdefault(submission.problem_id, []).append(submission)
        for subs in by_problem.values():
            subs.sort(key=lambda s: s.submission_id)

        wanted = set(by_problem) if self.had_submission_source else None
        limits = self._read_problem_lists()
        html = self._read_statements(wanted)
        tests = self._read_tests(wanted)
        self.raise_errors()
        problem_ids = wanted if wanted is not None else set(html) | set(tests)

        problems: dict[str, Problem] = {}
        for problem_id in sorted(problem_ids):
            name, time_limit, memory_limit = limits.get(problem_id, (None, None, None))
            statement = html_to_text(html[problem_id]) if problem_id in html else None
            problems[problem_id] = Problem(
                problem_id=problem_id,
                name=name,
                statement=statement or None,
                time_limit_ms=time_limit,
                memory_limit_kb=memory_limit,
                tests=tests.get(problem_id, ()),
                statement_language=statement_language(statement) if statement else None,
            )
        data = CodenetData(
            problems=problems,
            submissions=dict(sorted(by_problem.items())),
            dropped=self.dropped,
            sources=self.sources,
            filtered=dict(sorted(self.filtered.items())),
        )
        logger.info(
            "CodeNet: %d %s submissions kept on %d problems (%d without a statement, %d with "
            "public tests); left out: %s",
            sum(len(s) for s in data.submissions.values()),
            self.language,
            len(problems),
            sum(p.statement is None for p in problems.values()),
            sum(bool(p.tests) for p in problems.values()),
            data.drop_counts(),
        )
        return data

    def _read_problem_lists(self) -> dict[str, tuple[str | None, float | None, float | None]]:
        """Problem id -> (name, time limit in ms, memory limit in KB), the first list wins."""
        limits: dict[str, tuple[str | None, float | None, float | None]] = {}
        for path in self.problem_lists:
            with path.open(encoding="utf-8", newline="") as fh:
                reader = csv.DictReader(fh)
                for row in reader:
                    where = f"{path}:{reader.line_num}"
                    try:
                        problem_id = string_field(row, "id", PROBLEM_ID)
                        entry = (
                            row.get("name") or None,
                            number_field(row.get("time_limit"), "time_limit"),
                            number_field(row.get("memory_limit"), "memory_limit"),
                        )
                    except Malformed as err:
                        self.errors.append(f"{where}: {err}")
                        continue
                    limits.setdefault(problem_id, entry)
        return limits

    def _read_statements(self, wanted: set[str] | None) -> dict[str, str]:
        """Problem id -> HTML, from the first statement source that has it."""
        found: dict[str, str] = {}
        for kind, path in self.descriptions:
            if wanted is not None and wanted <= found.keys():
                break
            if kind == "descriptions_dir":
                for file in sorted(path.iterdir()):
                    match = _HTML_NAME.search(file.name)
                    if not match or match[1] in found:
                        continue
                    if wanted is None or match[1] in wanted:
                        found[match[1]] = decode_html(file.read_bytes(), str(file))
            else:
                with tarfile.open(path) as tar:
                    for member in tar:
                        match = _HTML_NAME.search(member.name)
                        if not member.isfile() or not match or match[1] in found:
                            continue
                        if wanted is None or match[1] in wanted:
                            raw = tar.extractfile(member).read()  # type: ignore[union-attr]
                            found[match[1]] = decode_html(raw, f"{path}!{member.name}")
        return found

    def _read_tests(self, wanted: set[str] | None) -> dict[str, tuple[tuple[str, str], ...]]:
        found: dict[str, tuple[tuple[str, str], ...]] = {}
        for path in self.test_dirs:
            for folder in sorted(path.iterdir()):
                problem_id = folder.name
                if not folder.is_dir() or not PROBLEM_ID.fullmatch(problem_id):
                    continue
                if problem_id in found or (wanted is not None and problem_id not in wanted):
                    continue
                files: dict[tuple[int, str], Path] = {}
                for file in folder.iterdir():
                    match = _TEST_FILE.fullmatch(file.name)
                    if match:
                        files[int(match[2] or 0), match[1]] = file
                pairs = []
                for number in sorted({n for n, _ in files}):
                    if (number, "input") not in files or (number, "output") not in files:
                        self.errors.append(
                            f"{folder}: test {number} has an input or an output file, not both"
                        )
                        continue
                    pairs.append(
                        (
                            unify_newlines(files[number, "input"].read_text(encoding="utf-8")),
                            unify_newlines(files[number, "output"].read_text(encoding="utf-8")),
                        )
                    )
                found[problem_id] = tuple(pairs)
        return found


def _same_submission(a: Submission, b: Submission) -> bool:
    """Same code and the same figures, where both sources know them."""
    return not _difference(a, b)


def _difference(a: Submission, b: Submission) -> str:
    diffs = []
    for name in ("problem_id", "language", "code", "cpu_time_ms", "memory_kb", "user_id"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and x != y:
            diffs.append(name if name == "code" else f"{name} {x!r} vs {y!r}")
    return ", ".join(diffs)


def _codenet_language(language: str) -> str:
    for spelling in CODENET_LANGUAGES:
        if spelling.casefold() == language.casefold():
            return spelling
    return language
