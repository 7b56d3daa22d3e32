"""A small Project-CodeNet-layout input, written by the tests, whose every label is known.

Problem ``p00010`` has six accepted Python submissions whose figures give these MC labels
(speed and memory by thirds of six: two best = 1, two worst = 0, two middle unlabelled;
maintainability 1 = no smells)::

    sub        cpu  mem  smells   speed mem maint
    s00000011   10  100    0        1    1    1
    s00000012   20  500    0        1    0    1
    s00000013   50  200    0        0    1    1
    s00000014   60  600    2        0    0    0
    s00000015   30  300    0        -    -    1
    s00000016   40  400    1        -    -    0

``p00020``: two submissions, CPU exactly 2x apart (10 vs 20: below the margin), memory 100
vs 201 (kept), no smells on either. ``p00030``: one submission with one smell. ``p00040``: CPU
5, 7, 7, 9, 11, 13 (a tie across the best third's edge). ``p00050``: no statement. Every
problem also has a rejected submission (``Wrong Answer``) that must never appear.

The smell analyser of these tests (:class:`MarkerAnalyser`) reads a ``# smells: RULE,RULE``
comment, so that the construction rules are tested apart from any real analyser.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

from coreb_toolkit.quality.smells import AnalysisError, Finding, SmellReport

HEADER = [
    "submission_id",
    "problem_id",
    "user_id",
    "date",
    "language",
    "original_language",
    "filename_ext",
    "status",
    "cpu_time",
    "memory",
    "code_size",
    "accuracy",
]

# problem -> [(submission, cpu ms, memory KB, smell rules)]
SUBMISSIONS: dict[str, list[tuple[str, int, int, list[str]]]] = {
    "p00010": [
        ("s00000011", 10, 100, []),
        ("s00000012", 20, 500, []),
        ("s00000013", 50, 200, []),
        ("s00000014", 60, 600, ["X1", "X2"]),
        ("s00000015", 30, 300, []),
        ("s00000016", 40, 400, ["X1"]),
    ],
    "p00020": [("s00000021", 10, 100, []), ("s00000022", 20, 201, [])],
    "p00030": [("s00000031", 10, 100, ["X3"])],
    "p00040": [
        ("s00000041", 5, 50, []),
        ("s00000042", 7, 70, []),
        ("s00000043", 7, 70, []),
        ("s00000044", 9, 90, []),
        ("s00000045", 11, 110, []),
        ("s00000046", 13, 130, []),
    ],
    "p00050": [("s00000051", 10, 100, []), ("s00000052", 90, 900, [])],
}
STATEMENTS = {
    "p00010": "<h1>Sum</h1><p>Print the sum of <var>A</var> and <var>B</var>.</p>",
    "p00020": "<p>Print the larger of two numbers.</p>",
    "p00030": "<p>Print hello.</p>",
    "p00040": "<p>Reverse a string.</p>",
}


def code(submission: str, rules: list[str]) -> str:
    marker = f"  # smells: {','.join(rules)}" if rules else ""
    return f"a, b = map(int, input().split())  # {submission}\nprint(a + b){marker}\n"


def write_codenet(root: Path) -> Path:
    """Write the fixture in the Project CodeNet layout under ``root``; returns ``root``."""
    (root / "metadata").mkdir(parents=True)
    (root / "problem_descriptions").mkdir()
    for problem, subs in SUBMISSIONS.items():
        rows = []
        for sid, cpu, mem, rules in subs:
            text = code(sid, rules)
            folder = root / "data" / problem / "Python"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{sid}.py").write_text(text, encoding="utf-8")
            rows.append(
                [
                    sid,
                    problem,
                    "u1",
                    "1500000000",
                    "Python",
                    "Python (3.4.3)",
                    "py",
                    "Accepted",
                    cpu,
                    mem,
                    len(text),
                    "1/1",
                ]
            )
        bad = f"s9{problem[1:]}"
        (root / "data" / problem / "Python" / f"{bad}.py").write_text("print(0)\n")
        rows.append(
            [
                bad,
                problem,
                "u2",
                "1500000001",
                "Python",
                "Python (3.4.3)",
                "py",
                "Wrong Answer",
                1,
                1,
                9,
                "0/1",
            ]
        )
        with open(root / "metadata" / f"{problem}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            w.writerows(rows)
        if problem in STATEMENTS:
            (root / "problem_descriptions" / f"{problem}.html").write_text(
                f"<html><body>{STATEMENTS[problem]}</body></html>", encoding="utf-8"
            )
    return root


class MarkerAnalyser:
    """A smell analyser for tests: one finding per rule named in a ``# smells:`` comment."""

    name = "marker"

    def version(self) -> str:
        return "1"

    def rules(self) -> dict[str, str]:
        return {"X1": "test rule 1", "X2": "test rule 2", "X3": "test rule 3"}

    def analyse(self, codes: Mapping[str, str]) -> dict[str, SmellReport | AnalysisError]:
        out: dict[str, SmellReport | AnalysisError] = {}
        for key, text in codes.items():
            if "syntax error" in text:
                out[key] = AnalysisError(key, "does not parse")
                continue
            rules = []
            for line in text.splitlines():
                if "# smells: " in line:
                    rules += line.split("# smells: ")[1].split(",")
            out[key] = SmellReport(tuple(Finding(r, 1, "marker") for r in rules))
        return out
