"""The QualCode build leaves out the training problems of a problem split (issue 16): none of
their ids or submissions is in any config or the corpus, and the report and card say so."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import qualcode_dataset as q
from coreb_toolkit.builders.qualcode.prepare import EXCLUDED_REASON, read_exclusion
from coreb_toolkit.cli.main import main
from tests.conftest import SHARED_DATA
from tests.qualcode_dataset.fixture import SUBMISSIONS, MarkerAnalyser, write_codenet
from trainers.quality_data.split import ProblemSplit, problem_split, write_split

# p00010 (six submissions) trains, p00050 (no statement) too; p00030 is in neither side
TRAIN, EVAL = ("p00010", "p00050"), ("p00020", "p00040")
ID = re.compile(r"[a-z]\d{5,}")  # CodeNet problem (p02345) and submission (s504204235) ids


@pytest.fixture(scope="module")
def codenet(tmp_path_factory):
    return write_codenet(tmp_path_factory.mktemp("qcx") / "codenet")


@pytest.fixture(scope="module")
def split_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("split") / "problem_split.json"
    return write_split(path, ProblemSplit(TRAIN, EVAL, seed=3, eval_fraction=0.5))


@pytest.fixture(scope="module")
def built(codenet, split_file, tmp_path_factory):
    options = q.QualcodeOptions(retrieval_negatives=3, exclude_problems_from=str(split_file))
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    out = tmp_path_factory.mktemp("qcxout") / "qualcode"
    q.build(data, out, progress=False)
    return data, out


def every_string(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from every_string(v)
    elif isinstance(value, list):
        for v in value:
            yield from every_string(v)


def training_strings(train, submissions):
    return set(train) | {s for p in train for s in submissions[p]}


def assert_folder_holds_none_of(out: Path, forbidden: set[str]) -> int:
    """Every value of every row of every config: no forbidden id, in any column."""
    rows = 0
    files = sorted(out.glob("*/test.parquet"))
    assert any(f.parent.name == "qualcode_corpus" for f in files)
    for f in files:
        for row in pq.read_table(f).to_pylist():
            rows += 1
            # ids inside longer strings too: pair ids, triplet ids, the code (the fixture's
            # code carries its submission id in a comment)
            tokens = {m for t in every_string(row) for m in ID.findall(t)}
            hits = forbidden & tokens
            assert not hits, (f.parent.name, sorted(hits)[:5])
    return rows


def test_no_training_problem_or_submission_in_any_config(built):
    data, out = built
    subs = {p: [s for s, *_ in rows] for p, rows in SUBMISSIONS.items()}
    forbidden = training_strings(TRAIN, subs)
    assert assert_folder_holds_none_of(out, forbidden) > 0
    assert set(data.candidates) == {"p00020", "p00030", "p00040"}


def test_the_report_records_the_split_and_counts_the_drops(built, split_file):
    _, out = built
    report = json.loads((out / "build_report.json").read_text())
    ex = report["exclusion"]
    assert ex["file"] == str(split_file)
    assert ex["sha256"] == hashlib.sha256(split_file.read_bytes()).hexdigest()
    assert ex["seed"] == 3
    assert ex["problems_excluded"] == 2
    assert ex["submissions_excluded"] == len(SUBMISSIONS["p00010"]) + len(SUBMISSIONS["p00050"])
    assert ex["problems_not_in_split"] == 1  # p00030
    assert ex["train_problems_in_file"] == 2
    assert report["dropped"]["select"][EXCLUDED_REASON] == ex["submissions_excluded"]
    dropped = {d["item"] for d in report["drops"] if d["reason"] == EXCLUDED_REASON}
    assert dropped == {s for p in TRAIN for s, *_ in SUBMISSIONS[p]}
    # the training problem without a statement is counted as excluded, not as statement-less
    assert "problem has no statement" not in report["dropped"]["select"]


def test_the_card_says_so(built):
    _, out = built
    card = (out / "README.md").read_text()
    assert (
        "2 problems were held out for training (problem split seed 3); none of their "
        "submissions is in this build" in card
    )
    assert f"| select | {EXCLUDED_REASON} | 8 |" in card


def test_without_a_split_the_training_problems_are_there(codenet, built):
    data, _ = built
    plain = q.prepare(
        [codenet], q.QualcodeOptions(retrieval_negatives=3), analyser=MarkerAnalyser(),
        progress=False,
    )  # fmt: skip
    assert "p00010" in plain.candidates and "p00010" not in data.candidates
    assert plain.report["exclusion"] is None
    card = q.build(plain, Path(str(codenet) + "_plain"), progress=False).out_dir / "README.md"
    assert "held out for training" not in card.read_text()


def test_cli_flag(codenet, split_file, tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["qualcode", "build", "--source", str(codenet), "--out", str(out)]
    argv += ["--retrieval-negatives", "3", "--mc-per-k", "30"]
    assert main([*argv, "--exclude-problems-from", str(split_file)]) == 0
    text = capsys.readouterr().out
    # 4 problems with a statement, less p00010; p00050 (no statement) is excluded as well
    kept = sum(len(SUBMISSIONS[p]) for p in ("p00020", "p00030", "p00040"))
    assert f"wrote {out}: 3 problems, {kept} submissions" in text
    excluded = len(SUBMISSIONS["p00010"]) + len(SUBMISSIONS["p00050"])
    assert f"2 training problems left out ({excluded} submissions; problem split seed 3" in text
    assert json.loads((out / "build_report.json").read_text())["exclusion"]["seed"] == 3
    with pytest.raises(SystemExit):
        main([*argv[:-6], "--out", str(tmp_path / "x"), "--exclude-problems-from", "nope.json"])
    assert "--exclude-problems-from) nope.json: no such file" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{", "not a JSON"),
        ('{"format": "other"}', "'format'"),
        ('{"format": "coreb-problem-split", "eval": [], "seed": 0}', "'train'"),
        ('{"format": "coreb-problem-split", "train": ["p1"], "eval": [], "seed": "0"}', "'seed'"),
        (
            '{"format": "coreb-problem-split", "train": ["p1"], "eval": ["p1"], "seed": 0}',
            "both sides",
        ),
    ],
)
def test_a_malformed_split_file_names_the_file_and_field(tmp_path, content, match):
    path = tmp_path / "problem_split.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=f"{path}.*{match}"):
        read_exclusion(path)
    with pytest.raises(FileNotFoundError, match="--exclude-problems-from"):
        read_exclusion(tmp_path / "nowhere.json")


def test_the_option_is_checked():
    with pytest.raises(ValueError, match=r"^exclude_problems_from must"):
        q.QualcodeOptions(exclude_problems_from="")
    assert q.QualcodeOptions(exclude_problems_from=Path("a.json")).exclude_problems_from == "a.json"


@pytest.mark.needs_shared_data
def test_real_build_excludes_the_training_side(tmp_path):
    from coreb_toolkit.sources import codenet

    sources = [SHARED_DATA / "codenet", SHARED_DATA / "nofuneval"]
    data = codenet.load(sources, progress=False)
    split = problem_split(data.submissions, eval_fraction=0.5, seed=0)
    split_file = write_split(tmp_path / "problem_split.json", split)
    options = q.QualcodeOptions(exclude_problems_from=str(split_file))
    out = tmp_path / "qualcode"
    report = q.build(sources, out, options=options, progress=False).report
    subs = {p: [s.submission_id for s in ss] for p, ss in data.submissions.items()}
    train = [p for p in split.train if p in subs]
    assert assert_folder_holds_none_of(out, training_strings(train, subs)) > 0
    assert report["exclusion"]["problems_excluded"] == len(train)
    assert report["exclusion"]["submissions_excluded"] == sum(len(subs[p]) for p in train)
    corpus = pq.read_table(out / "qualcode_corpus" / "test.parquet").to_pylist()
    assert {r["problem_id"] for r in corpus} <= set(split.eval)
