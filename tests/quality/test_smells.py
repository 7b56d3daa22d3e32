"""Smell analysers: hand-written snippets whose findings are known, errors per id, batching."""

from __future__ import annotations

import re

import pytest

from coreb_toolkit.quality import smells
from coreb_toolkit.quality.smells import (
    ANALYSERS,
    DEFAULT_RUFF_RULES,
    RUFF_SONAR,
    AnalysisError,
    Finding,
    SmellAnalyser,
    SmellReport,
    get_analyser,
)

pytest.importorskip("ruff", reason="the ruff analyser needs ruff (pip install ruff)")

BARE_EXCEPT = """\
try:
    x = int("1")
except:
    x = 0
print(x)
"""

GLOBAL = """\
counter = 0


def bump():
    global counter
    counter += 1


bump()
"""

UNUSED_IMPORT = """\
import os
import sys

print(sys.argv)
"""

# McCabe complexity counted by hand: 1 + one per for/while/if/elif/except = 1 + 15 = 16.
NESTED = """\
def walk(grid, k):
    total = 0
    for row in grid:
        for cell in row:
            if cell > 0:
                if cell % 2 == 0:
                    total += cell
                elif cell % 3 == 0:
                    total -= cell
                else:
                    while cell > k:
                        cell //= 2
                        if cell == 7:
                            break
            elif cell < 0:
                if cell % 2:
                    total += 1
                if cell % 5:
                    total += 2
                if cell % 7:
                    total += 3
            else:
                try:
                    total //= cell
                except ZeroDivisionError:
                    total = 0
    if total > 100:
        return 100
    if total < -100:
        return -100
    if total == 0:
        return 1
    return total
"""

CLEAN = """\
def mean(values):
    return sum(values) / len(values)


print(mean([1, 2, 3]))
"""

# Formatting is not a smell: doubled newlines (as in CodeNet dumps), no spaces around
# operators, trailing whitespace and a long line.
BADLY_FORMATTED = (
    "n=int(input())  \n\n\n\n\nvalues=list(map(int,input().split()))\n\n"
    "print(sum(values)*n+" + "+".join(["1"] * 60) + ")\n"
)

# Sonar exempts module-level names from S5806 (builtins) and S1481 (unused loop variables):
# only the copies inside the function count.
SCOPES = """\
import sys

input = sys.stdin.readline
for i in range(3):
    print(input())


def read_all():
    input = sys.stdin.readline
    for j in range(3):
        print(input())
"""

NAMING = """\
def Solve(N):
    Total = N * 2
    return Total


print(Solve(3))
"""

COMMENTED_OUT = """\
x = 1
# print(x)
print(x + 1)
"""

NOQA = "import os  # noqa: F401\n"

SYNTAX_ERROR = "print 'python 2'\n"

SNIPPETS = {
    "bare_except": BARE_EXCEPT,
    "global": GLOBAL,
    "unused_import": UNUSED_IMPORT,
    "nested": NESTED,
    "clean": CLEAN,
    "formatting": BADLY_FORMATTED,
    "scopes": SCOPES,
    "naming": NAMING,
    "commented_out": COMMENTED_OUT,
    "noqa": NOQA,
}

# (rule, line) of every finding, written by hand.
RUFF_EXPECTED = {
    "bare_except": [("E722", 3)],
    "global": [("PLW0603", 5)],
    "unused_import": [("F401", 1)],
    "nested": [("C901", 1)],
    "clean": [],
    "formatting": [],
    "scopes": [("A001", 9), ("B007", 10)],
    "naming": [("N802", 1), ("N803", 1), ("N806", 2)],
    "commented_out": [("ERA001", 2)],
    "noqa": [("F401", 1)],
}


@pytest.fixture(scope="module")
def ruff():
    return get_analyser("ruff")


@pytest.fixture(scope="module")
def ruff_reports(ruff):
    return ruff.analyse(SNIPPETS)


@pytest.mark.parametrize("key", list(RUFF_EXPECTED))
def test_ruff_findings_known_by_hand(ruff_reports, key):
    report = ruff_reports[key]
    assert isinstance(report, SmellReport)
    assert [(f.rule, f.line) for f in report.findings] == RUFF_EXPECTED[key]
    assert report.count == len(RUFF_EXPECTED[key])
    assert report.diversity == len({rule for rule, _ in RUFF_EXPECTED[key]})


def test_complexity_threshold_is_stated_and_configurable(ruff_reports):
    [finding] = ruff_reports["nested"].findings
    assert "(16 > 15)" in finding.message
    assert get_analyser("ruff", max_complexity=16).analyse({"n": NESTED})["n"].count == 0


def test_report_counts_kinds_and_diversity():
    report = SmellReport(
        (Finding("N806", 2, "a"), Finding("F401", 1, "b"), Finding("N806", 3, "c"))
    )
    assert (report.count, report.kinds, report.diversity) == (3, ("F401", "N806"), 2)
    assert (SmellReport().count, SmellReport().kinds, SmellReport().diversity) == (0, (), 0)


def test_syntax_error_fails_only_that_id(ruff):
    reports = ruff.analyse({"ok": CLEAN, "broken": SYNTAX_ERROR, "import": UNUSED_IMPORT})
    assert list(reports) == ["ok", "broken", "import"]
    error = reports["broken"]
    assert isinstance(error, AnalysisError)
    assert isinstance(error, ValueError)
    assert error.submission_id == "broken"
    assert str(error).startswith("broken: does not parse (line 1")
    assert reports["ok"].count == 0
    assert reports["import"].kinds == ("F401",)


def test_text_that_is_not_unicode_fails_only_that_id(ruff):
    reports = ruff.analyse({"lone-surrogate": "print('\ud800')\n", "ok": UNUSED_IMPORT})
    assert isinstance(reports["lone-surrogate"], AnalysisError)
    assert "not valid Unicode" in str(reports["lone-surrogate"])
    assert reports["ok"].kinds == ("F401",)
    assert isinstance(ruff.analyse({"only": "\ud800"})["only"], AnalysisError)


def test_batch_equals_one_by_one(ruff, ruff_reports):
    for key, code in SNIPPETS.items():
        assert ruff.analyse({key: code}) == {key: ruff_reports[key]}


def test_chunks_give_the_batch_result_in_input_order(ruff, ruff_reports, monkeypatch):
    codes = {f"{key}-{i}": code for i in range(3) for key, code in SNIPPETS.items()}
    whole = ruff.analyse(codes)
    monkeypatch.setattr(smells, "CHUNK_FILES", 4)  # several chunks, the last one short
    chunked = ruff.analyse(codes)
    assert chunked == whole and list(chunked) == list(codes)
    assert chunked[f"{next(iter(SNIPPETS))}-2"] == ruff_reports[next(iter(SNIPPETS))]


def test_scratch_files_go_to_memory_only_with_room(tmp_path, monkeypatch):
    monkeypatch.setattr(smells, "SHM", tmp_path)
    assert smells._scratch_root(10_000, 10) == str(tmp_path)
    free = smells.shutil.disk_usage(tmp_path).free
    assert smells._scratch_root(free // 4, 10) is None  # would not fit: the default temp dir
    monkeypatch.setattr(smells, "SHM", tmp_path / "absent")
    assert smells._scratch_root(10, 1) is None


def test_results_are_reproducible_and_keep_input_order(ruff):
    codes = {"z": UNUSED_IMPORT, "a/b c": NAMING, "é": BARE_EXCEPT}
    first, second = ruff.analyse(codes), ruff.analyse(codes)
    assert first == second
    assert list(first) == ["z", "a/b c", "é"]


def test_empty_batch_and_bad_input(ruff):
    assert ruff.analyse({}) == {}
    with pytest.raises(TypeError, match="mapping"):
        ruff.analyse([CLEAN])
    with pytest.raises(TypeError, match="must be a str"):
        ruff.analyse({"x": b"print(1)"})
    with pytest.raises(ValueError, match="non-empty"):
        ruff.analyse({"": CLEAN})


def test_ruff_rule_set_is_documented(ruff):
    rules = ruff.rules()
    assert list(rules) == list(DEFAULT_RUFF_RULES) == list(RUFF_SONAR)
    assert rules["F401"].startswith("unused-import: ")
    # no pycodestyle formatting rule (E1/E2/E3/E5/W): the only pycodestyle rule is E722
    assert [r for r in rules if re.fullmatch(r"[EW]\d+", r)] == ["E722"]
    assert ruff.version()[0].isdigit()


def test_ruff_options_are_checked():
    with pytest.raises(ValueError, match="unknown rule codes"):
        get_analyser("ruff", select=["F4"])
    with pytest.raises(TypeError, match="list of rule codes"):
        get_analyser("ruff", select="F401")
    with pytest.raises(ValueError, match="max_complexity"):
        get_analyser("ruff", max_complexity=0)
    narrow = get_analyser("ruff", select=["E722"])
    assert narrow.analyse(SNIPPETS)["unused_import"].count == 0
    assert list(narrow.rules()) == ["E722"]


def test_unknown_analyser_lists_registered_ones():
    with pytest.raises(ValueError, match=r"'sonarqube'.*registered are pylint, ruff"):
        get_analyser("sonarqube")


def test_registry_entries_follow_the_contract(ruff):
    assert set(ANALYSERS) == {"ruff", "pylint"}
    assert isinstance(ruff, SmellAnalyser)
    assert ruff.name == "ruff"


# -- the second backend ------------------------------------------------------------------


@pytest.fixture(scope="module")
def pylint():
    pytest.importorskip("pylint", reason="the pylint analyser needs pylint (pip install pylint)")
    return get_analyser("pylint")


# (message id, line), written by hand
PYLINT_EXPECTED = {
    "bare_except": [("W0702", 3)],
    "global": [("W0603", 5)],
    "unused_import": [("W0611", 1)],
    "clean": [],
    "formatting": [],
    "naming": [("C0103", 1), ("C0103", 1), ("C0103", 2)],
}


def test_pylint_runs_with_its_own_rules(pylint):
    codes = {key: SNIPPETS[key] for key in PYLINT_EXPECTED} | {"broken": SYNTAX_ERROR}
    reports = pylint.analyse(codes)
    assert list(reports) == list(codes)
    for key, expected in PYLINT_EXPECTED.items():
        assert [(f.rule, f.line) for f in reports[key].findings] == expected, key
    assert isinstance(reports["broken"], AnalysisError)
    assert str(reports["broken"]).startswith("broken: does not parse (line 1")
    assert "s000" not in str(reports["broken"])  # no temporary file names
    assert isinstance(pylint, SmellAnalyser)
    assert pylint.rules()["W0611"].startswith("unused-import: ")
    assert pylint.version()[0].isdigit()


def test_pylint_options_are_checked(pylint):
    with pytest.raises(ValueError, match="unknown pylint message"):
        get_analyser("pylint", enable=["X9999"])
    with pytest.raises(ValueError, match="message ids, not symbols"):
        get_analyser("pylint", enable=["unused-import"])
