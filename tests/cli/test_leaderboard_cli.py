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


def test_validate_never_prints_a_file_linked_out_of_a_submission(data, tmp_path, capsys):
    sub = tmp_path / "bm25"
    shutil.copytree(data.submissions / "bm25", sub)
    token = tmp_path / "token"
    token.write_text("hf_SECRET_TOKEN\n")
    run = sub / "runs" / "c2c_cross_lang.trec"
    run.unlink()
    run.symlink_to(token)
    assert run_cli("leaderboard", "validate", sub, "--dataset", data.dataset) == 1
    out = capsys.readouterr().out
    assert f"REJECTED {sub}" in out and "leads outside" in out and "SECRET" not in out


def test_a_bad_per_query_line_rejects_that_submission_only(data, tmp_path, capsys):
    bad, good = tmp_path / "subs" / "bad", tmp_path / "subs" / "good"
    shutil.copytree(data.submissions / "bm25", bad)
    shutil.copytree(data.submissions / "bm25", good)
    lines = (bad / "per_query.jsonl").read_text().splitlines()
    lines[1] = "[1, 2]"
    (bad / "per_query.jsonl").write_text("\n".join(lines) + "\n")
    assert run_cli("leaderboard", "validate", bad, good, "--dataset", data.dataset) == 1
    out = capsys.readouterr().out
    assert f"REJECTED {bad}: {bad / 'per_query.jsonl'}:2: each line must be a JSON object" in out
    assert f"accepted {good}: BM25" in out
    # build stops at the rejected submission, naming its file and line (exit status 2)
    with pytest.raises(SystemExit) as exit_:
        run_cli("leaderboard", "build", tmp_path / "subs", "--dataset", data.dataset, "--out",
                tmp_path / "board")  # fmt: skip
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{bad / 'per_query.jsonl'}:2: each line must be a JSON object" in err
    assert not (tmp_path / "board").exists()


def test_build_writes_its_folder_whole_or_not_at_all(data, tmp_path, monkeypatch, capsys):
    from model_cards.leaderboard import app

    subs = tmp_path / "subs"
    shutil.copytree(data.submissions / "bm25", subs / "bm25")
    board = tmp_path / "board"

    def broken(*_args, **_kwargs):
        raise ValueError("the plot failed")

    with monkeypatch.context() as mp:
        mp.setattr(app, "plot_ndcg_per_billion", broken)
        with pytest.raises(SystemExit):
            run_cli("leaderboard", "build", subs, "--dataset", data.dataset, "--out", board)
    assert "the plot failed" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["subs"]  # no board, no scratch folder

    assert run_cli("leaderboard", "build", subs, "--dataset", data.dataset, "--out", board,
                   "--dataset-name", "org/coreb") == 0  # fmt: skip
    saved = json.loads((board / "leaderboard.json").read_text())
    assert saved["dataset"]["name"] == "org/coreb" and str(data.dataset) not in json.dumps(saved)
    before = {p: p.stat().st_mtime_ns for p in board.rglob("*")}
    with monkeypatch.context() as mp:  # a failed rebuild keeps the previous board untouched
        mp.setattr(app, "plot_ndcg_per_billion", broken)
        with pytest.raises(SystemExit):
            run_cli("leaderboard", "build", subs, "--dataset", data.dataset, "--out", board,
                    "--force")  # fmt: skip
    assert {p: p.stat().st_mtime_ns for p in board.rglob("*")} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board", "subs"]
    with pytest.raises(SystemExit):  # without --force an existing board is not replaced
        run_cli("leaderboard", "build", subs, "--dataset", data.dataset, "--out", board)
    assert "exists; pass overwrite=True (--force)" in capsys.readouterr().err


def test_an_error_names_the_subcommand_typed(tmp_path, capsys):
    from coreb_toolkit.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["leaderboard", "build", str(tmp_path), "--dataset", str(tmp_path / "nowhere"),
              "--out", str(tmp_path / "out")])  # fmt: skip
    assert exit_.value.code == 2
    assert "coreb leaderboard build: error: " in capsys.readouterr().err
