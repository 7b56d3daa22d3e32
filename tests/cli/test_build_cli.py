"""``coreb build``: the release-to-Hub-folder command."""

from __future__ import annotations

import os

import datasets
import pytest

from coreb_toolkit.cli.main import main
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
    assert "wrote mteb: release release_v2603 as coreb-t2c-retrieval" in out
    names = datasets.get_dataset_config_names("mteb/coreb-c2c-retrieval")
    assert {"corpus", "queries", "default", "c2c_cross_lang-qrels"} <= set(names)


def test_build_mteb_release_flag(tmp_path, capsys):
    release = R.write_release(tmp_path / "release")
    args = ["build", str(release), "--out", str(tmp_path / "coreb"), "--mteb", str(tmp_path / "m")]
    assert main([*args, "--mteb-release", R.V2]) == 0
    assert f"release {R.V2}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main([*args, "--force", "--mteb-release", "release_v1"])
    assert info.value.code == 2
    assert "release 'release_v1' is not in" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["build", str(release), "--out", str(tmp_path / "c2"), "--mteb-release", R.V2])
    assert "--mteb-release needs --mteb DIR" in capsys.readouterr().err


def test_a_build_with_its_eval_yaml_is_rebuilt_with_force(tmp_path, capsys):
    # a build writes eval.yaml beside its card; --force must take that folder as its own
    release = R.write_release(tmp_path / "release")
    args = ["build", str(release), "--out", str(tmp_path / "coreb")]
    assert main(args) == 0
    assert (tmp_path / "coreb" / "eval.yaml").is_file()
    (tmp_path / "coreb" / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit):
        main([*args, "--force"])
    assert "holds files a build does not write (notes.txt)" in capsys.readouterr().err
    (tmp_path / "coreb" / "notes.txt").unlink()
    assert main([*args, "--force"]) == 0


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


# ------------------------------------------------------------------------------------------
# Destinations are checked, both of them, before anything is written
# ------------------------------------------------------------------------------------------


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_an_unwritable_mteb_destination_fails_before_out_is_written(tmp_path, capsys):
    release = R.write_release(tmp_path / "release")
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    out = tmp_path / "coreb"
    with pytest.raises(SystemExit) as info:
        main(["build", str(release), "--out", str(out), "--mteb", str(blocker / "mteb")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"--mteb {blocker / 'mteb'}" in err and "cannot be written" in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "release"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode-555 folder regardless")
def test_a_read_only_mteb_folder_fails_before_out_is_written(tmp_path, capsys):
    release = R.write_release(tmp_path / "release")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    out = tmp_path / "coreb"
    try:
        with pytest.raises(SystemExit):
            main(["build", str(release), "--out", str(out), "--mteb", str(ro / "mteb")])
    finally:
        ro.chmod(0o755)
    assert "cannot be written" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("which", ["out", "mteb"])
def test_a_destination_over_the_release_is_refused_with_force(tmp_path, capsys, which):
    release = R.write_release(tmp_path / "release")
    before = _files(tmp_path)
    args = ["build", str(release), "--force"]
    if which == "out":
        args += ["--out", str(release)]
    else:
        args += ["--out", str(tmp_path / "coreb"), "--mteb", str(tmp_path)]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "input of this build" in capsys.readouterr().err
    assert _files(tmp_path) == before
    assert not (tmp_path / "coreb").exists()


@pytest.mark.parametrize("mteb", ["coreb", "coreb/mteb"])
def test_mteb_and_out_must_not_overlap(tmp_path, capsys, mteb):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    with pytest.raises(SystemExit) as info:
        main(["build", str(release), "--out", str(out), "--mteb", str(tmp_path / mteb), "--force"])
    assert info.value.code == 2
    assert "--mteb and --out must be separate folders" in capsys.readouterr().err
    assert not out.exists()


def test_build_writes_the_reranking_records_the_trainer_reads(tmp_path, capsys):
    import json

    from trainers.examples import ExampleOptions, generate_examples

    release = R.write_release(tmp_path / "release")
    records = tmp_path / "records"
    assert main(["build", str(release), "--out", str(tmp_path / "coreb"),
                 "--reranking-records", str(records)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"wrote {records}: {R.V2}.jsonl (" in out
    assert sorted(p.name for p in records.iterdir()) == sorted(
        ["README.md", f"{R.V2}.jsonl", f"{R.V3}.jsonl"]
    )
    rows = [json.loads(line) for line in (records / f"{R.V3}.jsonl").read_text().splitlines()]
    # one record per (query, positive) of every query with a positive: the release's own
    positives = {(q, d) for name in ("text2code_qrels", "code2text_qrels", "code2code_qrels")
                 for q, d, r in R.V3_QRELS[name] if r == 2}  # fmt: skip
    assert {tuple(r["id"].split("/")) for r in rows} == positives
    assert {r["main_task"] for r in rows} == {"t2c", "c2t", "c2c"}
    # the trainer reads the file as it is: each positive twice ("yes"), its hard negatives "no"
    examples = generate_examples([f"pairs_jsonl:{records / f'{R.V3}.jsonl'}"], ExampleOptions())
    yes = [e for e in examples if e["answer"] == "yes"]
    assert len(yes) == 2 * len(rows)
    assert {e["main_task"] for e in examples} == {"t2c", "c2t", "c2c"}
    # written again only with --force, and never over the release or the other outputs
    with pytest.raises(SystemExit):
        main(["build", str(release), "--out", str(tmp_path / "coreb2"),
              "--reranking-records", str(records)])  # fmt: skip
    with pytest.raises(SystemExit):
        main(["build", str(release), "--out", str(tmp_path / "c3"), "--force",
              "--reranking-records", str(tmp_path / "c3" / "records")])  # fmt: skip
    assert "must be separate folders" in capsys.readouterr().err
