"""``coreb publish CKPT``: evaluate the checkpoint (first stage + rerank), write its card (results,
recipe, yes/no balance, the paper's rerankers, How to use) and push it, or write a dry run."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from coreb_toolkit.cli.main import main
from tests.reranker.test_hub_round_trip import hub  # noqa: F401 - the fake Hub fixture
from tests.trainers.conftest import EVAL_RELEASE


@pytest.fixture
def checkpoint(trained, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(trained.output, folder)
    return folder


def test_publish_dry_run_evaluates_writes_the_card_and_the_upload(checkpoint, tiny_dataset,
                                                                 tmp_path, capsys):  # fmt: skip
    up = tmp_path / "up"
    code = main([
        "publish", str(checkpoint), "--repo", "me/tiny-reranker", "--dataset", str(tiny_dataset),
        "--dataset-id", "me/coreb", "--rerank-top-k", "3", "--dry-run", str(up),
    ])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "nothing was sent to me/tiny-reranker" in out
    # evaluated on the run's eval source release only (never the release it trained on)
    results = sorted((checkpoint / "evaluation").glob("*/*/results.json"))
    assert {p.parent.name for p in results} == {EVAL_RELEASE}
    reranked = [json.loads(p.read_text()) for p in results if "+" in p.parts[-3]]
    assert len(reranked) == 1 and reranked[0]["rerank_top_k"] == 3
    card = (up / "README.md").read_text()
    assert "## How to use" in card and "load_reranker('me/tiny-reranker')" in card
    assert "exp(logit[yes]) / (exp(logit[yes]) + exp(logit[no]))" in card
    assert re.search(r"Answers: train: [\d,]+ yes / [\d,]+ no \(\d+\.\d% yes\)", card)
    assert "Qwen3-Reranker-4B (paper: C2LLM-7B, top 128, release_v2603)" in card
    assert "datasets:\n- me/coreb\n" in card  # the Hub id, not the local folder
    # the upload: adapter, manifest, card and the evaluation; no Trainer checkpoint-N folders
    sent = {p.relative_to(up).as_posix() for p in up.rglob("*") if p.is_file()}
    assert {"README.md", "adapter_model.safetensors", "coreb_reranker.json"} <= sent
    assert any(s.startswith("evaluation/") and s.endswith("results.json") for s in sent)
    assert not any(s.startswith("checkpoint-") for s in sent)


def test_publish_refuses_a_folder_without_an_adapter_and_a_sampled_result(
    checkpoint, tiny_dataset, tmp_path, capsys
):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit) as exit_:
        main(["publish", str(empty), "--repo", "me/x", "--dataset", str(tiny_dataset)])
    assert exit_.value.code == 2
    assert "no adapter checkpoint there" in capsys.readouterr().err
    sampled = tmp_path / "sampled"
    assert main([
        "evaluate", "--dataset", str(tiny_dataset), "--model", "bm25", "--reranker",
        str(checkpoint), "--rerank-top-k", "2", "--releases", EVAL_RELEASE, "--query-sample", "1",
        "--out", str(sampled), "--no-compare-published",
    ]) == 0  # fmt: skip
    capsys.readouterr()
    folder = next(p.parent for p in sampled.glob("*+*/*/results.json"))
    with pytest.raises(SystemExit) as exit_:
        main(["publish", str(checkpoint), "--repo", "me/x", "--results", str(folder),
              "--dataset-id", "me/coreb", "--dry-run", str(tmp_path / "up")])  # fmt: skip
    assert exit_.value.code == 2
    assert "query sample" in capsys.readouterr().err
    assert not (tmp_path / "up").exists()


def test_publish_pushes_and_the_cards_snippet_loads_it_back(checkpoint, tiny_dataset, hub, capsys):  # noqa: F811
    from reranker.registry import load_reranker

    repo = "coreb-org/tiny-reranker"
    code = main([
        "publish", str(checkpoint), "--repo", repo, "--dataset", str(tiny_dataset),
        "--dataset-id", "coreb-org/coreb", "--rerank-top-k", "3",
    ])  # fmt: skip
    assert code == 0
    assert f"pushed {checkpoint}" in capsys.readouterr().out
    (commit,) = hub.commits
    assert "adapter_model.safetensors" in commit.lfs_files  # the weights went up through LFS
    assert not any(path.startswith("checkpoint-") for path in commit.files)
    card = (checkpoint / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)\n```", card, flags=re.DOTALL)
    snippet = next(b for b in blocks if "load_reranker" in b)
    # the card's snippet, run as a user would (print replaced to keep its output)
    shown: list = []
    namespace = {"print": shown.append}
    exec(compile(snippet, "card-snippet", "exec"), namespace)  # our own card
    (scores,) = shown
    local = load_reranker(str(checkpoint))
    expected = local.score([(namespace["query"], namespace["code"])],
                           instruction=namespace["instruction"])  # fmt: skip
    assert scores == pytest.approx(expected, abs=1e-6)
    assert namespace["reranker"].name == repo
    assert any("/resolve/" in r.path and "adapter_model.safetensors" in r.path
               for r in hub.requests)  # fmt: skip
