"""Reading what strangers hand us and showing what they wrote (coreb_toolkit.untrusted)."""

from __future__ import annotations

import json
import math
import os
from html import escape as html_text  # the oracle: the standard library's escaper
from pathlib import Path

import pytest

from coreb_toolkit.untrusted import (
    MAX_JSON_DEPTH,
    bounded_lines,
    check_finite,
    csv_cell,
    inside,
    jsonl_objects,
    markdown_code,
    markdown_fence,
    markdown_text,
    plot_text,
    read_json,
)


def test_inside_refuses_a_symlink_out_of_the_folder(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("hf_secret\n")
    root = tmp_path / "submission"
    root.mkdir()
    (root / "run.trec").symlink_to(secret)
    with pytest.raises(ValueError, match=r"run\.trec: leads outside .*symlink"):
        inside(root, "run.trec")
    with pytest.raises(ValueError, match="leads outside"):
        inside(root, "../token")


def test_inside_takes_a_symlink_within_the_folder(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "b.txt").symlink_to(tmp_path / "a.txt")
    assert inside(tmp_path, "b.txt") == (tmp_path / "a.txt").resolve()


def test_inside_refuses_fifos(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ValueError, match=r"not a regular file .a FIFO."):
        inside(tmp_path, "pipe")


def test_read_json_refuses_what_is_not_json(tmp_path):
    path = tmp_path / "results.json"
    cases = {
        '{"a": NaN}': "NaN is not a JSON number",
        '{"a": -Infinity}': "-Infinity is not a JSON number",
        '{"a": 1e999}': "overflows a float",
        '{"a": ' + "9" * 5000 + "}": "an integer of 5000 digits",
        "[" * 100_000 + "]" * 100_000: f"nested deeper than {MAX_JSON_DEPTH}",
        "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1): "nested deeper",
        "{": "not JSON",
    }
    for text, message in cases.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=message) as err:
            read_json(path)
        assert str(err.value).startswith(str(path))
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ValueError, match=r"results\.json: not UTF-8 text \(byte 0xff"):
        read_json(path)
    path.write_text("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    assert read_json(path) is not None


def test_read_json_takes_nan_and_infinity_only_when_asked(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"loss": NaN, "grad_norm": Infinity, "low": -Infinity, "big": 1e999}')
    value = read_json(path, nonfinite=True)
    assert math.isnan(value["loss"]) and value["grad_norm"] == value["big"] == math.inf
    assert value["low"] == -math.inf
    with pytest.raises(ValueError, match="NaN is not a JSON number"):
        read_json(path)
    for text, message in (("[" * 100_000 + "]" * 100_000, "nested deeper"), ("{", "not JSON")):
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_json(path, nonfinite=True)


def test_read_json_bounds_the_size_and_refuses_special_files(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(["x" * 100]))
    with pytest.raises(ValueError, match="larger than 50 bytes"):
        read_json(path, max_bytes=50)
    with pytest.raises(ValueError, match=r"not a regular file .a character device."):
        read_json("/dev/zero")
    with pytest.raises(ValueError, match="no such file"):
        read_json(tmp_path / "missing.json")


def test_jsonl_objects_name_the_line(tmp_path):
    path = tmp_path / "per_query.jsonl"
    path.write_text('{"q": 1}\n\n[1, 2]\n')
    rows = jsonl_objects(path)
    assert next(rows) == (1, {"q": 1})
    with pytest.raises(ValueError, match=r"per_query\.jsonl:3: each line must be a JSON object"):
        next(rows)


def test_a_line_without_end_is_never_read_whole(tmp_path):
    path = tmp_path / "run.trec"
    path.write_bytes(b"x" * 10_000)
    with pytest.raises(ValueError, match=r"run\.trec:1: the line is longer than 1000 bytes"):
        list(bounded_lines(path, 1000))
    path.write_bytes(b"a\nb")
    assert list(bounded_lines(path, 1000)) == [(1, b"a\n"), (2, b"b")]


def test_check_finite_names_the_key():
    assert check_finite({"a": [1.0, 2]}, "x") == {"a": [1.0, 2]}
    with pytest.raises(ValueError, match=r"results\.json: rows\[1\]\.ndcg is nan"):
        check_finite({"rows": [{"ndcg": 1.0}, {"ndcg": float("nan")}]}, "results.json")
    with pytest.raises(ValueError, match="evaluation_time is inf"):
        check_finite({"evaluation_time": float("inf")}, "m")


def test_markdown_text_renders_as_the_text_it_was():
    markdown_it = pytest.importorskip("markdown_it", reason="rendering needs markdown-it-py")
    md = markdown_it.MarkdownIt("commonmark").enable("table")
    name = '<img src=x onerror="alert(1)"> [click](https://evil) # H **b**'
    rendered = md.render(markdown_text(name + "\n| x"))
    assert rendered == f"<p>{html_text(name)} | x</p>\n"
    cell = md.render(f"| model |\n|---|\n| {markdown_text(name + ' | y')} |\n")
    assert f"<td>{html_text(name)} | y</td>" in cell
    assert markdown_text("plain name") == "plain name"


def test_html_csv_and_plot_text():
    assert csv_cell('=HYPERLINK("http://evil","x")') == '\'=HYPERLINK("http://evil","x")'
    for start in "=+-@\t\r":
        assert csv_cell(start + "1").startswith("'")
    assert csv_cell("bm25") == "bm25"
    assert csv_cell(-0.5) == -0.5
    assert plot_text(r"$\foo$") == r"\$\foo\$"


def test_markdown_code_cannot_be_closed_from_inside():
    markdown_it = pytest.importorskip("markdown_it", reason="rendering needs markdown-it-py")
    md = markdown_it.MarkdownIt("commonmark")
    for name in ("org/model", "a`b", "``x` <img src=y>", "`", "x\n# H"):
        rendered = md.render(markdown_code(name))
        assert rendered == f"<p><code>{html_text(' '.join(name.split()))}</code></p>\n", name
    body = 'x\n```\n<img src=z>\n````\n{"a": 1}'
    rendered = md.render(markdown_fence(body, "json"))
    assert rendered == f'<pre><code class="language-json">{html_text(body)}\n</code></pre>\n'


def test_inside_takes_paths_relative_to_the_working_folder(tmp_path, monkeypatch):
    """A command given a relative folder joins names to it (`board/bm25/runs/x.trec`): that
    path is the file, not `board/bm25/board/bm25/runs/x.trec` (the demo's leaderboard)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "board" / "runs").mkdir(parents=True)
    (tmp_path / "board" / "runs" / "x.trec").write_text("q Q0 d 1 1.0 t\n")
    found = (tmp_path / "board" / "runs" / "x.trec").resolve()
    assert inside("board", Path("board") / "runs" / "x.trec") == found
    assert inside("board", "runs/x.trec") == found
    assert inside(Path("board").resolve(), "runs/x.trec") == found
    (tmp_path / "secret").write_text("token")
    with pytest.raises(ValueError, match="leads outside"):
        inside("board", Path("board") / ".." / "secret")
