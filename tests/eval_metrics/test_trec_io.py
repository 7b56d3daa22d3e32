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


# ── Fields read as trec_eval reads them (C atol / atof over ASCII) ──────────────────────────


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"q 0 d 99999999999\n", r"qrels:1: qrels\['q'\]\['d'\] is 99999999999.*at most 65535"),
        (b"q 0 d 2\nq 0 e 4294967297\n", r"qrels:2: .*at most 65535"),
        (b"q 0 d " + b"9" * 5000 + b"\n", r"qrels:1: .*a 5000-digit integer.*at most 65535"),
        ("q 0 d ３\n".encode(), r"qrels:1: .*ASCII digits.*'３'"),
        ("q 0 d ٢\n".encode(), r"qrels:1: .*ASCII digits.*'٢'"),
        (b"q 0 d 1_000\n", r"qrels:1: .*ASCII digits.*'1_000'"),
        (b"q 0 d\xff 2\n", r"qrels:1: .*not valid UTF-8"),
        ("q 0 d\u00a0e 2\n".encode(), r"qrels:1: .*whitespace U\+00A0"),
    ],
)
def test_qrels_fields_trec_eval_would_misread(tmp_path, data, message):
    path = tmp_path / "qrels"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_qrels(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"q Q0 d 1 0.5 t\nq Q0 e 2 1e39 t\n", r"run:2: .*1e\+39.*single precision"),
        (b"q Q0 d 1 -1e39 t\n", r"run:1: .*single precision"),
        (b"q Q0 d 1 1e400 t\n", r"run:1: .*is inf"),
        ("q Q0 d 1 ０.５ t\n".encode(), r"run:1: score '０.５'.*ASCII"),
        ("q Q0 d 1 ٠.٥ t\n".encode(), r"run:1: score '٠.٥'.*ASCII"),
        (b"q Q0 d 1 1_000 t\n", r"run:1: score '1_000'.*ASCII"),
        (b"q Q0 d 1 0x1p3 t\n", r"run:1: score '0x1p3'.*ASCII"),
        (b"q Q0 d 1 0.5 t\nq Q0 \xc3( 2 0.4 t\n", r"run:2: .*not valid UTF-8"),
        ("q Q0 d\u2003e 1 0.5 t\n".encode(), r"run:1: .*whitespace U\+2003"),
    ],
)
def test_run_fields_trec_eval_would_misread(tmp_path, data, message):
    path = tmp_path / "run"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_run(path)


def test_numbers_trec_eval_reads_are_read_the_same(tmp_path):
    # the ASCII forms C atol / atof accept, with the values they give
    (tmp_path / "qrels").write_text("q 0 a +2\nq 0 b 02\nq 0 c 0\nq 0 d 65535\n")
    assert read_qrels(tmp_path / "qrels") == {"q": {"a": 2, "b": 2, "c": 0, "d": 65535}}
    (tmp_path / "run").write_text(
        "q Q0 a 1 1e5 t\nq Q0 b 2 .5 t\nq Q0 c 3 5. t\nq Q0 d 4 -0.25E-3 t\nq Q0 e 5 +3 t\n"
        "q\tQ0\tf\t6\t3.4e38\tt\r\n"
    )
    assert read_run(tmp_path / "run") == {
        "q": {"a": 1e5, "b": 0.5, "c": 5.0, "d": -0.25e-3, "e": 3.0, "f": 3.4e38}
    }


def test_writers_refuse_scores_trec_eval_cannot_hold(tmp_path):
    with pytest.raises(ValueError, match=r"run\['q'\]\['d'\] is 1e\+39.*single precision"):
        write_run({"q": {"d": 1e39}}, tmp_path / "r")
    with pytest.raises(ValueError, match=r"qrels\['q'\]\['d'\] is 65536.*at most 65535"):
        write_qrels({"q": {"d": 65536}}, tmp_path / "q")
    for bad in ("d\x00e", "d\ud800"):  # a NUL ends a C string; a lone surrogate is no UTF-8
        with pytest.raises(ValueError, match="NUL or a lone surrogate"):
            write_run({"q": {bad: 1.0}}, tmp_path / "r")
    assert not (tmp_path / "r").exists() and not (tmp_path / "q").exists()
    assert not list(tmp_path.iterdir())  # no temporary file left either


def test_exclusion_files_report_file_and_line(tmp_path):
    (tmp_path / "bad.json").write_text('{\n  "q1": "a",\n  "q2": [\n}\n')
    with pytest.raises(ValueError, match=r"bad.json:4: .*not valid JSON"):
        read_exclusions(tmp_path / "bad.json")
    (tmp_path / "bad.tsv").write_bytes(b"q1\ta\nq2\t\xff\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: .*not valid UTF-8"):
        read_exclusions(tmp_path / "bad.tsv")


# ── Files a stranger hands us: bounded lines ────────────────────────────────────────────────


@pytest.mark.parametrize(("reader", "first"), [(read_run, b"q Q0 d 1 0.5 t\n"),
                                               (read_qrels, b"q 0 d 1\n")])  # fmt: skip
def test_a_line_longer_than_the_bound_is_refused_before_it_is_held(tmp_path, reader, first):
    from coreb_toolkit.untrusted import MAX_LINE_BYTES

    path = tmp_path / "huge"
    with open(path, "wb") as handle:  # one line, no newline: read whole it would be all of it
        handle.write(first)
        handle.write(b"x" * (MAX_LINE_BYTES + 10))
    with pytest.raises(ValueError, match=rf"huge:2: the line is longer than {MAX_LINE_BYTES}") as e:
        reader(path)
    assert len(str(e.value)) < 300  # the line is not echoed back
