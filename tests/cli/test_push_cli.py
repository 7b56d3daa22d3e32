"""``coreb push model|dataset|space``: once end to end in a subprocess against the local Hub
server (HF_ENDPOINT set before huggingface_hub is imported), and its flags and errors in
process."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest
from huggingface_hub import constants

import model_cards.hub as hub_module
from coreb_toolkit.cli.main import command_parser, main
from model_cards.hub import SECRET_PATTERNS
from tests.model_cards.fake_hub import FakeHub

TOKEN = "hf_fakeCliTokenNeverPrinted9876543210"
CARD = "---\nlicense: mit\nlibrary_name: sentence-transformers\n---\n# minilm on CoREB\n"


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "minilm"
    (root / "checkpoint-2").mkdir(parents=True)
    (root / "README.md").write_text(CARD, encoding="utf-8")
    (root / "model.safetensors").write_bytes(bytes(range(256)) * 4)
    (root / "checkpoint-2" / "optimizer.pt").write_bytes(b"\x00")
    return root


@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with FakeHub(token=TOKEN, user="coreb-user") as server:
        monkeypatch.setattr(constants, "ENDPOINT", server.url)  # HfApi() reads it when built
        yield server


def test_push_runs_end_to_end_in_a_subprocess(hub, folder, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_ENDPOINT=hub.url,
        HF_TOKEN=TOKEN,
        HF_HOME=str(tmp_path / "hf_home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_XET="1",  # the local server speaks LFS, not Xet
    )
    out = subprocess.run(
        [sys.executable, "-m", "coreb_toolkit.cli", "-v", "push", "model", str(folder),
         "--repo", "coreb-user/minilm", "--private", "--message", "CoREB v202603 results"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    [create] = hub.calls("create")
    assert create.json() == {
        "name": "minilm", "organization": "coreb-user", "type": "model", "visibility": "private",
    }  # fmt: skip
    [commit] = hub.commits
    assert commit.summary == "CoREB v202603 results"
    assert commit.files == {
        "README.md": CARD.encode(),
        "model.safetensors": (folder / "model.safetensors").read_bytes(),
    }
    assert commit.lfs_files == ("model.safetensors",) and len(hub.calls("lfs-upload")) == 1
    assert f"pushed {folder} to {hub.url}/coreb-user/minilm: 2 file(s) in one commit" in out.stdout
    assert f"commit: {hub.url}/coreb-user/minilm/commit/{commit.oid}" in out.stdout
    assert "checkpoint-2/: an intermediate Trainer checkpoint" in out.stdout
    assert TOKEN not in out.stdout + out.stderr
    assert "HTTP Request: POST" in out.stderr  # -v logged the requests, and not the token


def test_dry_run_lists_the_files_and_sends_nothing(hub, folder, tmp_path, capsys):
    out = tmp_path / "upload"
    assert main(["push", "model", str(folder), "--dry-run", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"dry run: 2 file(s) a push of {folder} would upload, written to {out}:" in printed
    assert "  README.md\n  model.safetensors\n" in printed
    assert "left out (1):\n  checkpoint-2/: " in printed
    assert sorted(p.name for p in out.iterdir()) == [
        ".coreb-dry-run.json", "README.md", "model.safetensors",
    ]  # fmt: skip
    assert hub.requests == []
    assert main(["push", "model", str(folder), "--dry-run", str(out), "--force"]) == 0  # a rerun


def test_the_dry_run_lists_exactly_the_files_the_push_delivers(hub, folder, tmp_path, capsys):
    out = tmp_path / "upload"
    assert main(["push", "model", str(folder), "--dry-run", str(out)]) == 0
    printed = capsys.readouterr().out.split(":\n", 1)[1].split("left out")[0]
    listed = [line.strip() for line in printed.splitlines()]
    assert main(["push", "model", str(folder), "--repo", "coreb-user/minilm"]) == 0
    [commit] = hub.commits
    assert listed == sorted(commit.files) == ["README.md", "model.safetensors"]
    assert {rel: (out / rel).read_bytes() for rel in listed} == commit.files


def test_an_unreachable_hub_is_one_clear_line(hub, folder, monkeypatch, capsys):
    with FakeHub(token=TOKEN) as gone:
        dead = gone.url  # nothing listens there once it is closed
    monkeypatch.setattr(constants, "ENDPOINT", dead)
    waits: list[float] = []
    monkeypatch.setattr(
        hub_module, "RetryPolicy", functools.partial(hub_module.RetryPolicy, sleep=waits.append)
    )
    with pytest.raises(SystemExit) as info:
        main(["push", "model", str(folder), "--repo", "coreb-user/minilm"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "coreb push model: error: pushing model repo coreb-user/minilm (revision main): " in err
    assert "cannot reach the Hub after 6 attempts (ConnectError" in err and "HF_ENDPOINT" in err
    assert waits == [1.0, 2.0, 4.0, 8.0, 8.0] and TOKEN not in err


def test_dry_run_force_never_empties_a_folder_it_did_not_write(hub, folder, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("not a dry run's\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["push", "model", str(folder), "--dry-run", str(mine), "--force"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"coreb push model: error: --dry-run {mine} exists and was not written by a dry" in err
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "not a dry run's\n"


def test_help_lists_every_secret_pattern(capsys):
    with pytest.raises(SystemExit):
        main(["push", "--help"])
    text = capsys.readouterr().out
    for pattern in SECRET_PATTERNS:
        assert pattern in text.split(), pattern


def test_revision_and_create_pr_flags_reach_the_hub(hub, folder, capsys):
    repo = hub.add_repo("model", "coreb-user/minilm")
    repo.branches["dev"], repo.heads["dev"] = {}, "1" * 40
    argv = ["push", "model", str(folder), "--repo", "coreb-user/minilm", "--revision", "dev"]
    assert main([*argv, "--create-pr"]) == 0
    [call] = hub.calls("commit")
    assert call.path.endswith("/commit/dev") and call.query == {"create_pr": ["1"]}
    assert f"pull request: {hub.url}/coreb-user/minilm/discussions/1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repo", "someone-else/minilm"], "coreb push model: error: no write access to model "
         "repo someone-else/minilm (revision main) (403 on create)"),
        ([], "give --repo NAMESPACE/NAME to push to (or --dry-run DIR"),
        (["--repo", "coreb-user/minilm", "--force"], "--force replaces the --dry-run folder"),
    ],
)  # fmt: skip
def test_errors_are_one_line_and_exit_2(argv, message, hub, folder, capsys):
    with pytest.raises(SystemExit) as info:
        main(["push", "model", str(folder), *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert hub.commits == []


def test_a_dataset_folder_pushed_as_a_space_is_refused(hub, tmp_path, capsys):
    data = tmp_path / "coreb"
    data.mkdir()
    (data / "README.md").write_text("---\nlicense: mit\n---\n# CoREB\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["push", "space", str(data), "--repo", "coreb-user/coreb"])
    assert "a Space card needs `sdk:` in its metadata" in capsys.readouterr().err
    assert hub.requests == []


def test_there_is_no_token_flag():
    # a token on a command line lands in shell history: huggingface_hub's login only
    for action in ("model", "dataset", "space"):
        leaf = command_parser("push")._subparsers._group_actions[0].choices[action]
        assert not [flag for flag in leaf._option_string_actions if "token" in flag]
        assert "--repo" in leaf._option_string_actions  # the check looks at the real flags


def test_help_shows_the_actions_and_examples(capsys):
    with pytest.raises(SystemExit):
        main(["push", "--help"])
    text = capsys.readouterr().out
    assert "model" in text and "dataset" in text and "space" in text
    assert "coreb push dataset demo/coreb --repo my-org/coreb --revision v202603" in text
    assert "no --token flag" in text
