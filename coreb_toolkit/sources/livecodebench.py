"""LiveCodeBench (code_generation_lite, release_v6): 1,055 contest problems (AtCoder, LeetCode,
Codeforces; contest dates 2023-05-07..2025-04-06), each with one Python sample from each of two
models and LiveCodeBench's verdict on it.

Read in place from ``../shared/data/lcb_release_v6/`` (see ``SOURCE.txt`` there): one
``*_codegeneration_eval_all.json`` file per model (:data:`MODEL_FILES`), each a list of rows with
the problem (question_id, question_title, question_content, platform, contest_id, contest_date,
starter_code, difficulty), the sample (``code_list``, one code string) and LiveCodeBench's verdict
on its hidden full test suite (``graded_list``). The files hold no test cases.

What this adapter makes of them:

* one :class:`~coreb_toolkit.sources.base.SourceProblem` per problem (``"lcb/<question_id>"``);
* two :class:`~coreb_toolkit.sources.base.SourceCandidate` per problem, one per model
  (``"lcb/<question_id>/<model>"``), labelled with LiveCodeBench's verdict
  (``label_source="livecodebench"``);
* an ``execution`` for a candidate: the *public* tests re-derived from the statement's examples
  (:func:`parse_public_tests`: AtCoder ``Sample Input k``/``Sample Output k`` blocks and the
  Codeforces variant of them as stdio tests, LeetCode ``Example k`` ``Input:``/``Output:`` lines
  as functional tests). The code runs after LiveCodeBench's own import prelude
  (:data:`LCB_IMPORT_PRELUDE`), which its grader puts in front of every sample, so a sample that
  uses e.g. ``List`` or ``deque`` without importing them behaves as it did under LiveCodeBench.
  :func:`coreb_toolkit.releases.recheck.recheck` runs them in the sandbox and compares with the
  labels (sources read data; running it is the release side's business).

Release windows select on ``contest_date`` (both ends inclusive):

* :data:`WINDOW_V202603`: LiveCodeBench's release_v6 test window (the last 175 problems,
  2025-01-04T18:30..2025-04-06): exactly 175 problems.
* :data:`WINDOW_V202602`: the release_v5 test window (``SOURCE.txt``: rows 713..879 when sorted
  by contest_date, 167 rows, 2024-09-28..2025-01-04T06:30). The release_v4/v5 boundary falls
  inside the LeetCode contest of 2024-09-28T19:30 (two problems, one on each side), which no
  date can split, so the window starts at that contest: it selects 168 problems, the 167 of the
  v5 window plus one release_v4 problem of the same contest.

Known properties of the data: two AtCoder problems are interactive (abc337_e, abc355_e) and have
no sample to parse; some samples are empty strings (the model produced no code); both models'
files hold the same 1,055 problems in the same order. LiveCodeBench's grader differs from the
sandbox in ways that make the sandbox *more* lenient on the public tests: it runs stdio code
wrapped in a function, feeds ``sys.stdin.readline`` lines without their newline, makes
``sys.stdin.readlines()`` end with an empty line, has no ``sys.stdin.buffer``, and compares
floats exactly (``Decimal``) where the sandbox allows 1e-6 as AtCoder does. So a sample may pass
the public tests here and still fail LiveCodeBench on those very tests (4 of 2,110 samples:
abc327_e, abc375_b twice on float digits, abc344_b on readlines), besides failing hidden tests.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from coreb_toolkit.sources.base import SourceCandidate, SourceProblem

SOURCE = "livecodebench"
ID_PREFIX = "lcb"

# Model name -> its eval file in the data directory.
MODEL_FILES: dict[str, str] = {
    "Qwen3-8B": "lcb_v6_qwen3-8b_codegeneration_eval_all.json",
    "Qwen2.5-7B-Instruct": "lcb_v6_qwen2.5-ins-7b_codegeneration_eval_all.json",
}

# release_v6's test window: the 175 problems of 2025-01-04T18:30..2025-04-06.
WINDOW_V202603: tuple[str, str] = ("2025-01-04T18:30:00", "2025-04-06T23:59:59")
# release_v5's test window (167 problems by LiveCodeBench's row order) cannot be cut by date: its
# first contest (LeetCode, 2024-09-28T19:30, problems 3570 and 3600) is split between release_v4
# and release_v5. Starting at that contest keeps all 167 and adds one: 168 problems.
WINDOW_V202602: tuple[str, str] = ("2024-09-28T19:30:00", "2025-01-04T06:30:00")

# LiveCodeBench's grader (lcb_runner/evaluation/testing_util.py, ``import_string``) executes
# this in front of every sample, stdio and call-based alike.
LCB_IMPORT_PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n"
)

_REQUIRED = (
    "question_id",
    "question_title",
    "question_content",
    "platform",
    "contest_id",
    "contest_date",
    "starter_code",
    "difficulty",
    "code_list",
    "graded_list",
)
_FUTURE_IMPORT = re.compile(r"^from __future__ import [^\n]*\n?", re.M)
_METHOD = re.compile(
    r"^\s*def\s+(\w+)\s*\(\s*self\s*(?:,(?P<params>.*?))?\)\s*(?:->[^:]*)?:", re.M | re.S
)


# -- reading ---------------------------------------------------------------------------------
def _literal_list(value: Any, path: Path, index: int, key: str) -> list[Any]:
    """A list field that may be stored as a list or as a string holding a Python list literal."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(
                f"{path}: row {index}: {key!r} is a string but not a Python list literal"
            ) from None
    if not isinstance(value, list) or not value:
        raise ValueError(
            f"{path}: row {index}: {key!r} must be a non-empty list, got {value!r:.80}"
        )
    return value


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """One model's eval file: a list of rows, each checked for the fields the adapter uses."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LiveCodeBench eval file not found: {path}")
    with open(path, encoding="utf-8") as handle:
        try:
            rows = json.load(handle)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON ({err.msg})") from None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: expected a non-empty JSON list of problem rows")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: row {index} is not a JSON object")
        missing = [key for key in _REQUIRED if key not in row]
        if missing:
            raise ValueError(f"{path}: row {index} lacks the field(s) {missing}")
        _literal_list(row["code_list"], path, index, "code_list")
        graded = _literal_list(row["graded_list"], path, index, "graded_list")
        if not isinstance(graded[0], bool):
            raise ValueError(
                f"{path}: row {index}: graded_list[0] must be a bool, got {graded[0]!r}"
            )
        try:
            datetime.fromisoformat(row["contest_date"])
        except (TypeError, ValueError):
            raise ValueError(
                f"{path}: row {index}: contest_date must be ISO 8601, got {row['contest_date']!r}"
            ) from None
    return rows


def in_window(contest_date: str, window: tuple[str, str] | None) -> bool:
    """Whether ``contest_date`` lies in ``window`` = (start, end), both inclusive."""
    if window is None:
        return True
    start, end = (datetime.fromisoformat(w) for w in window)
    return start <= datetime.fromisoformat(contest_date) <= end


# -- public tests from the statement -------------------------------------------------------
def starter_signature(starter_code: str) -> tuple[str, list[str]] | None:
    """The method name and parameter names (``self`` dropped) of a LeetCode starter code."""
    match = _METHOD.search(starter_code or "")
    if match is None:
        return None
    params = []
    depth = 0
    current = ""
    for char in match.group("params") or "":  # split on commas outside brackets (Dict[int, x])
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        if char == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += char
    params.append(current)
    names = [p.split(":")[0].split("=")[0].strip() for p in params if p.strip()]
    return match.group(1), names


def _block(lines: list[str], start: int, skip_blank: int, headers: set[int]) -> list[str]:
    """Lines from ``start`` on: ``skip_blank`` empty lines skipped, then up to an empty line."""
    i = start
    for _ in range(skip_blank):
        if i < len(lines) and lines[i] == "":
            i += 1
    block = []
    while i < len(lines) and lines[i] != "" and i not in headers:
        block.append(lines[i].rstrip("\r"))
        i += 1
    return block


def _text(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


_ATCODER_HEADER = re.compile(r"^Sample (Input|Output) (\d+)[ \t\r]*$")


def parse_atcoder_tests(statement: str) -> list[dict[str, str]]:
    """Stdio tests from AtCoder's ``Sample Input k`` / ``Sample Output k`` blocks.

    Each header line is followed by an empty line, the block (its lines end in ``\\r\\n`` or
    ``\\n``; a line holding only ``\\r`` is an empty line of the block) and an empty line before
    the explanation. An empty output is written as no block at all. A few statements put two
    empty lines after both headers of a sample; the extra one is skipped for that sample.
    """
    lines = statement.split("\n")
    found: dict[tuple[str, int], int] = {}
    for number, line in enumerate(lines):
        match = _ATCODER_HEADER.match(line)
        if match:
            found.setdefault((match.group(1), int(match.group(2))), number)
    headers = set(found.values())
    tests = []
    for (kind, k), at in sorted(found.items(), key=lambda item: item[0][1]):
        if kind != "Input" or ("Output", k) not in found:
            continue
        out_at = found[("Output", k)]
        # Two empty lines after the input header: the sample's blocks carry an extra empty line.
        extra = lines[at + 1 : at + 3] == ["", ""]
        inp = _block(lines, at + 1, 2 if extra else 1, headers)
        out = _block(lines, out_at + 1, 2 if extra else 1, headers)
        if any(line.strip() for line in inp):
            tests.append({"input": _text(inp), "output": _text(out)})
    return tests


_CF_SAMPLE = re.compile(
    r"Sample Input (\d+):\n(?P<input>.*?)\nSample Output \1:\n+(?P<output>.*?)(?=\n[ \t\r]*\n|\Z)",
    re.S,
)


def parse_codeforces_tests(statement: str) -> list[dict[str, str]]:
    """Stdio tests from Codeforces' ``Sample Input k:`` / ``Sample Output k:`` blocks.

    In these statements the input's lines are separated by empty lines (an artefact of the HTML
    conversion; LiveCodeBench's own tests of them have none), so empty input lines are dropped;
    the output block runs from its first line to the next empty line.
    """
    tests = []
    for match in _CF_SAMPLE.finditer(statement):
        inp = [line.rstrip("\r") for line in match.group("input").split("\n") if line.strip()]
        out = [line.rstrip("\r") for line in match.group("output").strip("\n").split("\n")]
        if inp and any(line.strip() for line in out):
            tests.append({"input": _text(inp), "output": _text(out)})
    return tests


_LC_EXAMPLE = re.compile(
    r"^[ \t]*Input:[ \t]*(?P<input>.*)\n[ \t]*Output:[ \t]*(?P<output>.*)$", re.M
)
_ASSIGN = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*")
_SEPARATOR = re.compile(r"\s*,")
_DECODER = json.JSONDecoder()


def _json_value(text: str, pos: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError:
        return None


def _leetcode_arguments(text: str, params: Sequence[str]) -> list[Any] | None:
    """``a = 1, b = [2,3]`` -> values in ``params`` order; None unless each name is set once."""
    values: dict[str, Any] = {}
    pos = 0
    text = text.rstrip()
    while True:
        match = _ASSIGN.match(text, pos)
        if match is None or match.group(1) in values:
            return None
        decoded = _json_value(text, match.end())
        if decoded is None:
            return None
        values[match.group(1)], pos = decoded
        if pos == len(text):
            break
        separator = _SEPARATOR.match(text, pos)
        if separator is None:
            return None
        pos = separator.end()
    if sorted(values) != sorted(params):
        return None
    return [values[name] for name in params]


def parse_leetcode_tests(statement: str, params: Sequence[str]) -> list[dict[str, str]]:
    """Functional tests from LeetCode's ``Input: a = ..., b = ...`` / ``Output: ...`` lines.

    Each argument becomes one JSON line, in the order of ``params`` (the starter code's
    parameters); an example whose values are not JSON, whose names do not match ``params``, or
    whose output line holds more than one value is skipped.
    """
    tests = []
    for match in _LC_EXAMPLE.finditer(statement):
        args = _leetcode_arguments(match.group("input"), params)
        output_text = match.group("output").strip()
        decoded = _json_value(output_text, 0)
        if args is None or decoded is None or decoded[1] != len(output_text):
            continue
        tests.append(
            {
                "input": "".join(json.dumps(a) + "\n" for a in args),
                "output": json.dumps(decoded[0]),
            }
        )
    return tests


def parse_public_tests(problem_row: dict[str, Any]) -> list[dict[str, str]]:
    """The public tests of one problem row, parsed from its statement (``[]`` if none parse).

    AtCoder and Codeforces give stdio tests, LeetCode functional tests (one JSON argument per
    input line, in the starter code's parameter order).
    """
    platform = problem_row.get("platform")
    statement = problem_row.get("question_content") or ""
    if platform == "atcoder":
        return parse_atcoder_tests(statement)
    if platform == "codeforces":
        return parse_codeforces_tests(statement)
    if platform == "leetcode":
        signature = starter_signature(problem_row.get("starter_code") or "")
        return parse_leetcode_tests(statement, signature[1]) if signature else []
    raise ValueError(
        f"LiveCodeBench row {problem_row.get('question_id')!r}: unknown platform {platform!r} "
        "(expected atcoder, leetcode or codeforces)"
    )


def test_coverage(problems: Iterable[SourceProblem]) -> dict[str, dict[str, int]]:
    """Per platform (and ``"all"``): problems, problems with at least one public test, tests."""
    coverage: dict[str, Counter] = {}
    for problem in problems:
        n_tests = int(problem.meta.get("public_tests", 0))
        for key in (problem.platform or "unknown", "all"):
            counts = coverage.setdefault(key, Counter())
            counts["problems"] += 1
            counts["with_tests"] += n_tests > 0
            counts["tests"] += n_tests
    return {
        key: {name: counts[name] for name in ("problems", "with_tests", "tests")}
        for key, counts in coverage.items()
    }


# -- problems and candidates ----------------------------------------------------------------
def execution_code(code: str) -> str:
    """``code`` behind LiveCodeBench's import prelude (``__future__`` imports kept first)."""
    future = "".join(_FUTURE_IMPORT.findall(code))
    return future + LCB_IMPORT_PRELUDE + "\n" + _FUTURE_IMPORT.sub("", code)


def _problem(row: dict[str, Any], tests: list[dict[str, str]]) -> SourceProblem:
    signature = starter_signature(row["starter_code"]) if row["platform"] == "leetcode" else None
    return SourceProblem(
        problem_id=f"{ID_PREFIX}/{row['question_id']}",
        source=SOURCE,
        statement=row["question_content"],
        title=row["question_title"],
        entry_point=signature[0] if signature else None,
        contest_date=row["contest_date"],
        platform=row["platform"],
        meta={
            "difficulty": row["difficulty"],
            "contest_id": row["contest_id"],
            "question_id": row["question_id"],
            "public_tests": len(tests),
        },
    )


def _candidate(
    row: dict[str, Any],
    model: str,
    problem: SourceProblem,
    tests: list[dict[str, str]],
    path: Path,
    index: int,
) -> SourceCandidate:
    code = _literal_list(row["code_list"], path, index, "code_list")[0]
    if not isinstance(code, str):
        raise ValueError(f"{path}: row {index}: code_list[0] must be a string")
    label = _literal_list(row["graded_list"], path, index, "graded_list")[0]
    candidate_id = f"{problem.problem_id}/{model}"
    execution = None
    if tests:
        execution = {
            "id": candidate_id.replace("/", "__"),
            "language": "python",
            "code": execution_code(code),
            "tests": tests,
            "test_style": "functional" if problem.entry_point else "stdio",
            "meta": {"source": SOURCE, "candidate_id": candidate_id},
        }
        if problem.entry_point:
            execution["fn_name"] = problem.entry_point
    return SourceCandidate(
        candidate_id=candidate_id,
        problem_id=problem.problem_id,
        language="python",
        model=model,
        code=code,
        execution=execution,
        solution=code,
        label=label,
        label_source=SOURCE,
        meta={
            "question_id": row["question_id"],
            "platform": row["platform"],
            "file": path.name,
            "sample": 0,
            "pass@1": row.get("pass@1"),
        },
    )


def load(
    data_dir: str | Path, window: tuple[str, str] | None = None
) -> tuple[list[SourceProblem], list[SourceCandidate]]:
    """Problems and candidates (two per problem, one per model) whose contest_date is in window.

    Problems come sorted by (contest_date, question_id); candidates follow the problems' order,
    the models in :data:`MODEL_FILES` order.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"LiveCodeBench data directory not found: {data_dir}")
    if window is not None:
        for bound in window:
            try:
                datetime.fromisoformat(bound)
            except (TypeError, ValueError):
                raise ValueError(
                    f"window bounds must be ISO 8601 datetimes, got {window!r}"
                ) from None
    by_model: dict[str, tuple[Path, dict[str, tuple[int, dict[str, Any]]]]] = {}
    for model, name in MODEL_FILES.items():
        path = data_dir / name
        rows: dict[str, tuple[int, dict[str, Any]]] = {}
        for index, row in enumerate(read_rows(path)):
            qid = str(row["question_id"])
            if qid in rows:
                raise ValueError(
                    f"{path}: question_id {qid!r} appears twice (rows {rows[qid][0]}, {index})"
                )
            rows[qid] = (index, row)
        by_model[model] = (path, rows)
    (first_path, first_rows), *others = by_model.values()
    for path, rows in others:
        if rows.keys() != first_rows.keys():
            diff = sorted(rows.keys() ^ first_rows.keys())
            raise ValueError(
                f"{path} and {first_path} must hold the same problems; they differ in {len(diff)} "
                f"question_ids, e.g. {diff[0]!r}"
            )
    selected = sorted(
        (row for _, row in first_rows.values() if in_window(row["contest_date"], window)),
        key=lambda row: (datetime.fromisoformat(row["contest_date"]), str(row["question_id"])),
    )
    problems: list[SourceProblem] = []
    candidates: list[SourceCandidate] = []
    for row in selected:
        tests = parse_public_tests(row)
        problem = _problem(row, tests)
        problems.append(problem)
        for model, (path, rows) in by_model.items():
            index, model_row = rows[str(row["question_id"])]
            candidates.append(_candidate(model_row, model, problem, tests, path, index))
    return problems, candidates
