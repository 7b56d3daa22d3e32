"""``coreb build``: the release-to-Hub-folder command."""

from __future__ import annotations

import datasets
import pytest

from coreb_cli.main import main
from tests.coreb_dataset import release as R


def test_build_writes_folder_and_mteb_export(tmp_path, capsys, monkeypatch):
    release = R.write_release(tmp_path / "release")
    monkeypatch.chdir(tmp_path)
    assert main(["build", str(release), "--mteb", "mteb"]) == 0
    out = capsys.readouterr().out
    assert "wrote coreb: 12 subtask configs" in out
    assert "t2c_weird_variant" in out  # the warning is shown, not buried
    # the default folder is ./coreb, so the load users write works literally
    ds = datasets.load_dataset("coreb", "t2c_full_retro_any")
    assert ds[R.V3]["query_id"] == ["q_t2c_full_retro_any_0001"]
    assert "c2c_cross_lang-qrels" in datasets.get_dataset_config_names("mteb")


def test_build_refuses_to_overwrite_and_reports_problems(tmp_path, capsys):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    out.mkdir()
    with pytest.raises(SystemExit) as info:
        main(["build", str(release), "--out", str(out)])
    assert info.value.code == 2
    assert "exists; add --force" in capsys.readouterr().err
    (release / "code_corpus" / f"{R.V3}.jsonl").write_text("{oops\n")
    with pytest.raises(SystemExit) as info:
        main(["build", str(release), "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert f"{release / 'code_corpus' / R.V3}.jsonl:1: malformed JSON" in err
    assert "nothing was written" in err
    assert list(out.iterdir()) == []


def test_build_help_explains_the_layout(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = capsys.readouterr().out
    for needle in ("code2code_qrels", 'load_dataset("coreb", "t2c_full_retro_any")', "--mteb"):
        assert needle in text
