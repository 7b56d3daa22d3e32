"""TREC run/qrels files: round trips and the errors trec_eval would not raise."""

from __future__ import annotations

import pytest

from eval_metrics import read_exclusions, read_qrels, read_run, write_qrels, write_run


def test_run_round_trip_ranks_like_trec_eval(tmp_path):
    run = {"q2": {"a": 0.5, "b": 0.5, "c": 0.9}, "q1": {"x": -1.25}}
    path = write_run(run, tmp_path / "run.trec", tag="sys")
    lines = path.read_text().splitlines()
    assert lines == [
        "q1 Q0 x 1 -1.25 sys",
        "q2 Q0 c 1 0.9 sys",
        "q2 Q0 b 2 0.5 sys",  # tie: doc id descending
        "q2 Q0 a 3 0.5 sys",
    ]
    assert read_run(path) == run


def test_scores_round_trip_exactly(tmp_path):
    run = {"q": {"a": 0.1 + 0.2, "b": 1e-17, "c": 123456.789012345}}
    assert read_run(write_run(run, tmp_path / "r")) == run


def test_qrels_round_trip(tmp_path):
    qrels = {"q_t2c_full_retro_python_0001": {"code_v202603_00001": 2, "code_v202603_00002": 1}}
    path = write_qrels(qrels, tmp_path / "qrels")
    assert path.read_text().splitlines()[0] == "q_t2c_full_retro_python_0001 0 code_v202603_00001 2"
    assert read_qrels(path) == qrels


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q 0 d 2\nq 0 d 1\n", r"qrels:2: duplicate \(query, doc\) pair \('q', 'd'\)"),
        ("q 0 d 1.5\n", r"qrels:1: .*non-negative integer.*'1.5'"),
        ("q 0 d -1\n", r"qrels:1: .*got -1"),
        ("q 0 d\n", r"qrels:1: a qrels line has 4 fields"),
        ("", "holds no line"),
    ],
)
def test_bad_qrels_files(tmp_path, text, message):
    path = tmp_path / "qrels"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_qrels(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q Q0 d 1 0.5 t\nq Q0 d 2 0.4 t\n", r"run:2: duplicate \(query, doc\) pair"),
        ("q Q0 d 1 nan t\n", r"run:1: .*is nan"),
        ("q Q0 d 1 inf t\n", r"run:1: .*is inf"),
        ("q Q0 d 1 high t\n", r"run:1: score 'high' is not a number"),
        ("q Q0 d 1 0.5\n", r"run:1: a run line has 6 fields"),
    ],
)
def test_bad_run_files(tmp_path, text, message):
    path = tmp_path / "run"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_run(path)


def test_writers_refuse_what_they_cannot_write(tmp_path):
    with pytest.raises(ValueError, match="without whitespace"):
        write_run({"q 1": {"d": 1.0}}, tmp_path / "r")
    with pytest.raises(ValueError, match=r"run\['q'\]\['d'\] is nan"):
        write_run({"q": {"d": float("nan")}}, tmp_path / "r")
    with pytest.raises(ValueError, match="non-negative integer"):
        write_qrels({"q": {"d": 0.5}}, tmp_path / "q")
    assert not (tmp_path / "r").exists()  # nothing half-written


def test_exclusions_json_and_tsv(tmp_path):
    (tmp_path / "a.json").write_text('{"q1": "anchor1", "q2": ["a", "b"]}')
    assert read_exclusions(tmp_path / "a.json") == {"q1": ["anchor1"], "q2": ["a", "b"]}
    (tmp_path / "a.tsv").write_text("q1\tanchor1\nq1\tanchor2\n")
    assert read_exclusions(tmp_path / "a.tsv") == {"q1": ["anchor1", "anchor2"]}
    (tmp_path / "bad.json").write_text('{"q1": 3}')
    with pytest.raises(ValueError, match="exclusions of 'q1' must be a doc id or a list"):
        read_exclusions(tmp_path / "bad.json")
