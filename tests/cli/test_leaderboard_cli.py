"""`coreb leaderboard submit | validate | build` in-process, on BM25 over the fixture release."""

from __future__ import annotations

import json
import shutil

import pytest

from coreb_toolkit.cli.main import main
from tests.model_cards.leaderboard_data import RELEASE, make_board_data

pytest.importorskip("pandas", reason="needs pandas (the leaderboard extra)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_board_data(tmp_path_factory.mktemp("board"), bm25_only=True)


def run_cli(*argv) -> int:
    return main([str(a) for a in argv])


def test_help_lists_the_actions(capsys):
    with pytest.raises(SystemExit) as exit_:
        run_cli("leaderboard", "--help")
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for action in ("submit", "validate", "build", "serve"):
        assert f"coreb leaderboard {action} " in out


def test_submit_validate_build(data, tmp_path, capsys):
    sub = tmp_path / "subs" / "bm25"
    code = run_cli("leaderboard", "submit", data.evaluations / "BM25" / RELEASE, "--out", sub,
                   "--url", "https://example.org/bm25")  # fmt: skip
    assert code == 0
    assert json.loads((sub / "model_meta.json").read_text())["url"] == "https://example.org/bm25"
    assert run_cli("leaderboard", "validate", sub, "--dataset", data.dataset) == 0
    out = capsys.readouterr().out
    overall = json.loads((sub / "results.json").read_text())["rows"][-1]
    assert f"accepted {sub}: BM25" in out and f"{overall['ndcg_at_10']:.4f}" in out

    board = tmp_path / "board"
    assert run_cli("leaderboard", "build", tmp_path / "subs", "--dataset", data.dataset,
                   "--out", board) == 0  # fmt: skip
    assert (board / "leaderboard.json").is_file() and (board / "space" / "app.py").is_file()
    # BM25 has no parameter count: no efficiency plot, and the page says why
    assert not (board / "parameter_efficiency.png").exists()
    saved = json.loads((board / "leaderboard.json").read_text())
    assert "BM25" in saved["plot_note"]


def test_validate_names_the_mismatch_and_exits_1(data, tmp_path, capsys):
    sub = tmp_path / "bm25"
    shutil.copytree(data.submissions / "bm25", sub)
    res = json.loads((sub / "results.json").read_text())
    res["rows"][0]["ndcg_at_10"] += 0.5
    (sub / "results.json").write_text(json.dumps(res))
    assert run_cli("leaderboard", "validate", sub, "--dataset", data.dataset) == 1
    out = capsys.readouterr().out
    assert f"REJECTED {sub}" in out and f"{res['rows'][0]['name']!r}: ndcg_at_10: claimed" in out
    # build stops at the rejected submission, with the same message, exit status 2
    with pytest.raises(SystemExit) as exit_:
        run_cli(
            "leaderboard", "build", tmp_path, "--dataset", data.dataset, "--out", tmp_path / "b"
        )
    assert exit_.value.code == 2
    assert "ndcg_at_10: claimed" in capsys.readouterr().err
