"""``coreb submit mteb``: the command around ``model_cards.mteb_results``."""

from __future__ import annotations

import pytest

import coreb_dataset
from coreb_toolkit.benchmark.runner import evaluate_model
from coreb_toolkit.cli.main import main
from tests.coreb_dataset import release as R

pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("submit_cli")
    coreb_dataset.build(R.write_release(root / "release"), root / "hub", progress=False)
    evaluate_model(str(root / "hub"), "bm25", root / "res", releases=[R.V3], plots=False,
                   c2t_canonical_corpus="full")  # fmt: skip
    return root / "res" / "BM25" / R.V3


def test_submit_mteb_writes_validates_and_says_what_it_left_out(results, tmp_path, capsys):
    out = tmp_path / "sub"
    args = ["submit", "mteb", str(results), "--out", str(out), "--model-name", "org/bm25",
            "--revision", "r1"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    assert f"wrote {out / 'results' / 'org__bm25' / 'r1'} (validated by mteb's ResultCache" in text
    assert "CorebT2CRetrieval: main score" in text and "CorebC2TRetrieval: main score" in text
    # one `coreb evaluate` folder gives C2C too: the anchor's score kept in mteb/excluded/
    assert "CorebC2CRetrieval: main score" in text and "mteb/excluded/ used" in text
    assert (out / "results" / "org__bm25" / "r1" / "model_meta.json").is_file()
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "exists" in capsys.readouterr().err
    assert main([*args, "--force"]) == 0


def test_submit_mteb_reports_bad_input(results, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["submit", "mteb", str(results), "--out", str(tmp_path / "o"), "--model-name",
              "bm25", "--revision", "r1"])  # fmt: skip
    assert info.value.code == 2
    assert "--model-name must be ORG/NAME" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["submit", "mteb", str(tmp_path / "nothing"), "--out", str(tmp_path / "o"),
              "--model-name", "org/x", "--revision", "r1"])  # fmt: skip
    assert info.value.code == 2
    assert "no such results file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_submit_mteb_refuses_a_revision_with_a_slash(results, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["submit", "mteb", str(results), "--out", str(tmp_path / "o"), "--model-name",
              "org/bm25", "--revision", "refs/pr/1"])  # fmt: skip
    assert info.value.code == 2
    assert "for a ref with '/' such as refs/pr/1, give its commit hash" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
