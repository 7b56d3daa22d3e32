"""``coreb card model``: the CLI writes README.md + .eval_results/ from real results files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from huggingface_hub import ModelCard

import coreb_dataset
from coreb_toolkit.benchmark.runner import evaluate_model
from coreb_toolkit.cli.main import main
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("card_cli")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    evaluate_model(str(root / "hub"), "bm25", root / "res", releases=[R.V3], plots=False)
    return root / "res" / "BM25" / R.V3


def test_card_model_writes_the_card(results, tmp_path, capsys):
    out = tmp_path / "card"
    argv = ["card", "model", str(results), "--dataset-id", "my-org/coreb", "--out", str(out),
            "--model-id", "my-org/bm25", "--date", "2026-12-02"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "wrote the card of my-org/bm25 (lexical)" in printed
    assert ".eval_results/coreb.yaml" in printed
    card = ModelCard.load(out / "README.md")
    rows = json.loads((results / "results.json").read_text())["rows"]
    overall = next(r for r in rows if r["name"] == "Overall")
    (got,) = [
        r.metric_value
        for r in card.data.eval_results
        if r.dataset_config == "Overall" and r.metric_type == "ndcg_at_10"
    ]
    assert got == overall["ndcg_at_10"]
    assert "date: '2026-12-02'" in (out / ".eval_results" / "coreb.yaml").read_text()


def test_card_model_errors_name_the_fix(results, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["card", "model", str(results), "--out", str(tmp_path / "x")])
    assert stop.value.code == 2
    assert "give the Hub id it is published as (--dataset-id ORG/NAME)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["card", "model", str(results), "--dataset-id", "my-org/coreb"])
    assert "--out DIR is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["card", "model", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "README.md").write_text("# mine\n")
    with pytest.raises(SystemExit):
        main(["card", "model", str(results), "--dataset-id", "my-org/coreb",
              "--out", str(tmp_path / "mine")])  # fmt: skip
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "mine" / "README.md").read_text() == "# mine\n"


def test_card_help_explains_with_examples(capsys):
    with pytest.raises(SystemExit):
        main(["card", "model", "--help"])
    text = capsys.readouterr().out
    for flag in ("--out", "--checkpoint", "--dataset-id", "--model-id", "--force"):
        assert flag in text
    assert "examples:" in text and "coreb card model results/" in text


def test_card_model_refuses_a_symlinked_eval_results(results, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "card"
    out.mkdir()
    (out / ".eval_results").symlink_to(elsewhere)
    with pytest.raises(SystemExit) as stop:
        main(["card", "model", str(results), "--dataset-id", "my-org/coreb", "--out", str(out)])
    assert stop.value.code == 2
    assert ".eval_results is a symlink" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not (out / "README.md").exists()
