"""The `coreb` command line, run in-process on the shipped example."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coreb_toolkit.cli.main import main
from eval_metrics import evaluate_retrieval, read_exclusions, read_qrels, read_run


def run_cli(*argv: str) -> int:
    return main([str(a) for a in argv])


def test_evaluate_prints_table_and_writes_json(examples, tmp_path, capsys):
    out_json = tmp_path / "results.json"
    per_query = tmp_path / "per_query.jsonl"
    code = run_cli(
        "evaluate", examples / "run.trec", "--qrels", examples / "qrels.trec",
        "--exclude", examples / "c2c_anchors.json", "--json", out_json, "--per-query", per_query,
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    for name in ("t2c_full_retro_python", "c2c_cross_lang", "[T2C]", "[C2T]", "[C2C]", "[Overall]"):
        assert name in text
    assert "no_positive_policy=zero" in text
    payload = json.loads(out_json.read_text())
    overall = payload["rows"][-1]
    expected = evaluate_retrieval(
        read_qrels(examples / "qrels.trec"),
        read_run(examples / "run.trec"),
        exclude=read_exclusions(examples / "c2c_anchors.json"),
    ).mean()
    assert overall["name"] == "Overall"
    assert overall["ndcg_at_10"] == pytest.approx(expected["ndcg_at_10"], abs=1e-12)
    records = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert len(records) == overall["n_queries"]
    assert {"query_id", "subtask", "ndcg_at_10", "hard_negative_intrusion"} <= set(records[0])


def test_evaluate_with_subtask_map_and_k(examples, tmp_path, capsys):
    qrels = read_qrels(examples / "qrels.trec")
    mapping = tmp_path / "subtasks.json"
    mapping.write_text(json.dumps(dict.fromkeys(qrels, "c2t_match")))
    assert run_cli(
        "evaluate", examples / "run.trec", "--qrels", examples / "qrels.trec",
        "--subtasks", mapping, "--k", "5", "--columns", "ndcg_at_5",
    ) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["queries", "ndcg_at_5"]
    assert sum(line.startswith("c2t_match") for line in lines) == 1


def test_compare_reports_p_value_and_plot(examples, tmp_path, capsys):
    plot = tmp_path / "cmp.png"
    code = run_cli(
        "compare", examples / "run.trec", examples / "run_b.trec",
        "--qrels", examples / "qrels.trec", "--exclude", examples / "c2c_anchors.json",
        "--n-resamples", "2000", "--plot", plot,
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "B - A = " in text and "p = " in text and "CI [" in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input_exits_2_with_a_clear_message(examples, tmp_path, capsys):
    bad = tmp_path / "qrels"
    bad.write_text("q_c2t_match_0001 0 text_1 high\n")
    with pytest.raises(SystemExit) as exc:
        run_cli("evaluate", examples / "run.trec", "--qrels", bad)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "coreb evaluate: error:" in err and f"{bad}:1" in err and "'high'" in err
    assert "Traceback" not in err


def test_run_with_unjudged_queries_is_refused(examples, tmp_path, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text("q_c2t_match_0001 0 text_v202603_00001 2\n")
    with pytest.raises(SystemExit):
        run_cli("evaluate", examples / "run.trec", "--qrels", qrels)
    assert "ranked queries are not in" in capsys.readouterr().err


def test_console_script_help():
    out = subprocess.run(
        [sys.executable, "-m", "coreb_toolkit.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "evaluate" in out and "compare" in out
    out = subprocess.run(
        [sys.executable, "-m", "coreb_toolkit.cli", "evaluate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--no-positive-policy" in out and "examples:" in out and "--dataset" in out
