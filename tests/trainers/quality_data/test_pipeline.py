"""The SynH-Rank data pipeline end to end (``coreb synh-rank data``) on a small CodeNet-layout
input written here: real Python programs with public tests, known judge figures, a problem split
the test chooses, and one training statement that copies an evaluation one."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.qualcode_dataset.fixture import HEADER

# problem -> statement; p1 and p2 train, p3 and p4 evaluation, p5 trains on p3's statement
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
]


def _statement(seed: int) -> str:
    words = [WORDS[(seed * 7 + i * 3) % len(WORDS)] + str(seed) for i in range(14)]
    return "Read two integers and print their sum. " + " ".join(words) + "."


STATEMENTS = {p: _statement(i) for i, p in enumerate(("p00001", "p00002", "p00003", "p00004"))}
STATEMENTS["p00005"] = STATEMENTS["p00003"]  # a re-posted evaluation problem
TRAIN, EVAL = ("p00001", "p00002", "p00005"), ("p00003", "p00004")

FAST = "a, b = map(int, input().split())\nprint(a + b)\n"
CLEAN = "import sys\n\n\ndef main():\n    a, b = map(int, sys.stdin.read().split())\n    print(a + b)\n\n\nmain()\n"  # noqa: E501
SLOW = "a, b = map(int, input().split())\nt = 0\nfor _ in range(3 * 10**6):\n    t += 1\nprint(a + b)\n"  # noqa: E501
SMELLY = "from os import *\na,b=map(int,input().split())\nl = lambda x: x\nprint(l(a+b))\n"
# (submission suffix, code, judge cpu ms, judge memory KB)
SUBMISSIONS = [
    ("1", FAST, 10, 9000),
    ("2", CLEAN, 12, 9100),
    ("3", SLOW, 400, 30000),
    ("4", SLOW.replace("t += 1", "t += 2"), 500, 40000),
    ("5", SMELLY, 30, 9200),
]


def _mine(code: str, problem: str) -> str:
    """Each problem's copy of a program (irrelevant docs must differ from a list's own)."""
    return f"{code}# {problem}\n"


def write_codenet(root: Path) -> Path:
    (root / "metadata").mkdir(parents=True)
    (root / "problem_descriptions").mkdir()
    for n, (problem, statement) in enumerate(sorted(STATEMENTS.items())):
        rows = []
        folder = root / "data" / problem / "Python"
        folder.mkdir(parents=True)
        for suffix, code, cpu, mem in SUBMISSIONS:
            sid = f"s{n}000000{suffix}"
            code = _mine(code, problem)
            (folder / f"{sid}.py").write_text(code, encoding="utf-8")
            rows.append([sid, problem, f"u{suffix}", "1500000000", "Python", "Python (3.8)",
                         "py", "Accepted", cpu, mem, len(code), "1/1"])  # fmt: skip
        with open(root / "metadata" / f"{problem}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            w.writerows(rows)
        (root / "problem_descriptions" / f"{problem}.html").write_text(
            f"<html><body><p>{statement}</p></body></html>", encoding="utf-8"
        )
        tests = root / "derived" / "input_output" / "data" / problem
        tests.mkdir(parents=True)
        (tests / "input.txt").write_text(f"{n} {n + 2}\n")
        (tests / "output.txt").write_text(f"{2 * n + 2}\n")
    return root


@pytest.fixture
def codenet(tmp_path: Path) -> Path:
    return write_codenet(tmp_path / "codenet")


@pytest.fixture
def split_file(tmp_path: Path) -> Path:
    from trainers.quality_data.split import ProblemSplit, write_split

    path = tmp_path / "problem_split.json"
    write_split(path, ProblemSplit(train=TRAIN, eval=EVAL, seed=0, eval_fraction=0.4))
    return path


def _config(tmp_path: Path, codenet: Path, split_file: Path, **values):
    from trainers.quality_data.pipeline import SynhDataConfig

    base = {
        "output_dir": str(tmp_path / "lists"),
        "sources": [str(codenet)],
        "split_file": str(split_file),
        "figures": "judge",
        "repeats": 1,
        "n_low": 2,
    }
    return SynhDataConfig(**{**base, **values})


def _rows(folder: Path) -> list[dict]:
    from trainers.quality_data.lists import read_lists

    return list(read_lists(folder))


def test_paper_filter_builds_lists_of_training_problems_only(tmp_path, codenet, split_file, caplog):
    """No sandbox: the paper's filter, real submissions labelled by judge figures."""
    from trainers.quality_data.pipeline import VARIANTS_FILE, build_synh_data

    config = _config(tmp_path, codenet, split_file, filter="paper", transformations=["none"])
    with caplog.at_level("WARNING", logger="trainers.quality_data.pipeline"):
        result = build_synh_data(config, progress=False)
    rows = _rows(result.output_dir)
    assert rows and result.lists == len(rows)
    assert {r["task_id"] for r in rows} <= set(TRAIN)
    # p00005 restates evaluation problem p00003: decontaminated, every submission counted
    assert "p00005" not in {r["task_id"] for r in rows}
    report = json.loads((result.output_dir / "report.json").read_text())
    decontaminated = report["steps"]["verify_submissions_with_tests"]["tasks"]["decontaminated"]
    assert decontaminated == ["p00005"]
    # speed: the 10 ms submission is the high, the 400/500 ms ones (> 2x) the lows
    speed = next(r for r in rows if r["query_id"] == "speed/p00001/0")
    by_label = {
        label: {
            doc for doc, lab in zip(speed["docs"], speed["labels"], strict=True) if lab == label
        }
        for label in (2, 1, 0)
    }
    assert by_label[2] == {_mine(FAST, "p00001")}
    assert by_label[1] == {_mine(SLOW, "p00001"), _mine(SLOW.replace("t += 1", "t += 2"), "p00001")}
    (irrelevant,) = by_label[0]
    assert irrelevant in {_mine(c, "p00002") for _, c, _, _ in SUBMISSIONS}
    assert speed["instruction"] == "Retrieve code that is fast"
    # every list is n_high + n_low + n_irrelevant (1 + 2 + 1 here) or a counted shortfall,
    # in report.json and in the warning the command prints
    shapes = report["list_shapes"]
    assert sum(shapes.values()) == len(rows) == report["full_lists"] + report["short_lists_total"]
    assert report["full_lists"] == shapes.get("1+2+1", 0)
    short = [r for r in rows if sorted(r["labels"], reverse=True) != [2, 1, 1, 0]]
    assert report["short_lists_total"] == len(short) == len(report["shortfalls"])
    assert report["missing_docs_per_label"]["1"] == sum(2 - r["labels"].count(1) for r in short)
    assert short  # one list has a single low: counted and said
    assert any(f"{len(short)} built short" in m for m in caplog.messages)
    assert speed["query"] == f"Retrieve code that is fast\n{speed['statement']}"
    # every candidate is in variants.jsonl with its fate; p00005's are decontaminated
    fates = [json.loads(line) for line in (result.output_dir / VARIANTS_FILE).open()]
    assert len(fates) == len(TRAIN) * len(SUBMISSIONS)
    assert {f["fate"] for f in fates if f["task_id"] == "p00005"} == {
        "decontaminate: seed task shares a 10-gram with an evaluation statement"
    }
    # the split file is written beside the lists, unchanged
    assert json.loads((result.output_dir / "problem_split.json").read_text())["train"] == list(
        TRAIN
    )


def test_overlap_fraction_keeps_template_sharing_tasks(tmp_path, codenet, split_file):
    """max_ngram_overlap: the shared 'Read two integers and print their sum.' opener is not
    10 words, but a task whose statement is an evaluation one is dropped at any fraction."""
    from trainers.quality_data.pipeline import build_synh_data

    config = _config(
        tmp_path, codenet, split_file, filter="paper", transformations=["none"],
        max_ngram_overlap=0.5,
    )  # fmt: skip
    result = build_synh_data(config, progress=False)
    assert {r["task_id"] for r in _rows(result.output_dir)} == {"p00001", "p00002"}


def test_the_config_names_the_bad_field(tmp_path, codenet, split_file):
    with pytest.raises(ValueError, match=r"SynhDataConfig\.generator=None"):
        _config(tmp_path, codenet, split_file, variants="guideline")
    with pytest.raises(ValueError, match=r"SynhDataConfig\.sources"):
        _config(tmp_path, codenet, split_file, sources=[str(tmp_path / "missing")])
    with pytest.raises(ValueError, match="unknown \\['no_such'\\]"):
        _config(tmp_path, codenet, split_file, transformations=["no_such"])
    (tmp_path / "lists").mkdir()
    with pytest.raises(ValueError, match=r"output_dir.*exists"):
        _config(tmp_path, codenet, split_file)


class FakeGenerator:
    """Answers every synthesis prompt with a program: fast for 'high', slow for 'low'."""

    name = "fake-coder"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, messages, *, max_tokens=512, temperature=0.0, seed=None, **kw):
        self.calls += 1
        text = messages[-1]["content"]
        slow = "deliberately" in text.split("## Task")[0]  # the low objectives say so
        body = SLOW if slow else FAST
        return f"```python\nvariant = {seed}\n{body}```"


def test_synthesis_path_caches_and_resumes(tmp_path, codenet, split_file, monkeypatch):
    """guideline variants from a (fake) generator through the paper's filter; a second run
    over the same cache asks the generator nothing."""
    import coreb_toolkit.releases.generators as generators
    from trainers.quality_data.pipeline import build_synh_data

    fake = FakeGenerator()
    monkeypatch.setattr(
        generators, "from_spec",
        lambda spec, cache_dir=None: generators.CachedGenerator(fake, cache_dir),
    )  # fmt: skip
    values = {"variants": "guideline", "generator": "fake:x", "filter": "paper",
              "variants_per_level": 2, "cache_dir": str(tmp_path / "cache")}  # fmt: skip
    first = build_synh_data(_config(tmp_path, codenet, split_file, **values), progress=False)
    # 2 trainable tasks (p00005 is decontaminated before synthesis) x 3 dims x 2 levels x 2
    asked = fake.calls
    assert asked == 2 * 3 * 2 * 2
    report = json.loads((first.output_dir / "report.json").read_text())
    assert report["steps"]["decontaminated_seeds"] == ["p00005"]
    assert report["steps"]["synthesis"]["cache"]["misses"] == asked
    second = build_synh_data(
        _config(tmp_path, codenet, split_file, **values, output_dir=str(tmp_path / "again")),
        progress=False,
    )
    assert fake.calls == asked  # nothing generated again
    assert (first.output_dir / "lists.parquet").read_bytes() == (
        second.output_dir / "lists.parquet"
    ).read_bytes()
    origins = Counter(o for r in _rows(first.output_dir) for o in r["origins"])
    assert set(origins) == {"guideline"}


def _sandbox_or_skip():
    from coreb_toolkit.quality.measure import MeasurementUnavailable, measure

    try:
        measure([("probe", "print(1)\n", [("", "1\n")])], repeats=1, progress=False)
    except MeasurementUnavailable as err:
        pytest.skip(f"the sandbox cannot measure here: {err}")


@pytest.mark.needs_toolchain("bwrap", "python3")
def test_full_verification_with_transformations(tmp_path, codenet, split_file):
    """Every stage: submissions run on their tests, transformations verified by the tests and
    by measurement (speed) or the analyser (maintainability)."""
    _sandbox_or_skip()
    from trainers.quality_data.pipeline import build_synh_data

    config = _config(
        tmp_path, codenet, split_file, transformations=["cryptic_names", "bare_except"],
    )  # fmt: skip
    result = build_synh_data(config, progress=False)
    report = json.loads((result.output_dir / "report.json").read_text())
    tested = report["steps"]["verify_submissions_with_tests"]
    assert tested["kept_by"]["origin"] == {"real": 2 * len(SUBMISSIONS)}  # all pass
    made = report["steps"]["transform"]["made"]
    assert made > 0
    rows = _rows(result.output_dir)
    maint = [r for r in rows if r["dimension"] == "maintainability"]
    assert maint
    for r in maint:
        origins = dict(zip(r["doc_ids"], r["origins"], strict=True))
        high = [d for d, lab in zip(r["doc_ids"], r["labels"], strict=True) if lab == 2]
        assert all(origins[d] == "real" for d in high)
    # every drop counted: the drops in report.json add up to the candidates not kept
    fates = Counter(
        json.loads(line)["fate"].split(":")[0]
        for line in (result.output_dir / "variants.jsonl").open()
    )
    assert fates["kept"] + sum(n for k, n in fates.items() if k != "kept") == (
        len(TRAIN) * len(SUBMISSIONS) + made
    )
