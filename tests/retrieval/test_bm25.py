"""BM25 with code-aware tokens, and BM25 over every subtask of a CoREB dataset."""

from __future__ import annotations

import json

import pytest

import coreb_dataset
from coreb_cli.main import main
from eval_metrics import evaluate_retrieval
from retrieval.bm25 import BM25Retriever, code_tokens, evaluate_bm25
from tests.coreb_dataset import release as R


def test_code_tokens_split_identifiers():
    assert code_tokens("def hasCloseElements(numbers_list):") == [
        "def", "hascloseelements", "close", "elements", "numbers_list", "numbers", "list",
    ]  # fmt: skip
    assert code_tokens("HTTPServer x") == ["httpserver", "http", "server"]
    assert code_tokens("") == []


def test_retriever_ranks_the_matching_document_first():
    corpus = {
        "d1": "def sort_numbers(xs): return sorted(xs)",
        "d2": "def reverseString(s): return s[::-1]",
        "d3": "class Graph: def shortest_path(self): pass",
    }
    run = BM25Retriever().index(corpus).search({"q": "reverse a string", "r": "sort numbers"}, 2)
    assert next(iter(sorted(run["q"], key=run["q"].get, reverse=True))) == "d2"
    assert max(run["r"], key=run["r"].get) == "d1"
    assert all(len(docs) == 2 for docs in run.values())
    with pytest.raises(ValueError, match="empty"):
        BM25Retriever().index({})
    with pytest.raises(ValueError, match="index"):
        BM25Retriever().search({"q": "x"})


def test_every_subtask_of_a_built_dataset(tmp_path):
    release = R.write_release(tmp_path / "release")
    coreb_dataset.build(release, tmp_path / "hub", progress=False)
    results = evaluate_bm25(str(tmp_path / "hub"))
    assert set(results) == {R.V2, R.V3}
    expected = {name for name, by in R.EXPECTED.items() if R.V3 in by}
    assert set(results[R.V3]) == expected
    # the same as scoring the BM25 run of one subtask by hand
    data = coreb_dataset.load_subtask(tmp_path / "hub", "c2c_cross_lang", R.V3)
    run = BM25Retriever().index(data.corpus).search(data.queries, top_k=1000)
    want = evaluate_retrieval(data.qrels, run, exclude=data.exclude).mean()
    assert results[R.V3]["c2c_cross_lang"].mean() == want
    # the anchor is never scored: it is excluded before any measure
    assert results[R.V3]["c2c_cross_lang"].n_queries == 1
    # a release folder works too (same numbers)
    direct = evaluate_bm25(str(release))
    assert direct[R.V3]["t2c_full_retro_any"].mean() == results[R.V3]["t2c_full_retro_any"].mean()


def test_cli_evaluate_dataset_mode(tmp_path, capsys):
    release = R.write_release(tmp_path / "release")
    coreb_dataset.build(release, tmp_path / "hub", progress=False)
    out_json = tmp_path / "bm25.json"
    assert main(["evaluate", "--dataset", str(tmp_path / "hub"), "--releases", R.V3,
                 "--json", str(out_json)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"== bm25 on {R.V3} ==" in text and "[Overall]" in text
    payload = json.loads(out_json.read_text())
    assert list(payload["releases"]) == [R.V3]
    assert payload["releases"][R.V3]["rows"][-1]["name"] == "Overall"
    with pytest.raises(SystemExit):
        main(["evaluate", "--dataset", str(tmp_path / "hub"), "--model", "minilm"])
    assert "only 'bm25'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate"])
    assert "give a run file and --qrels FILE, or --dataset DIR" in capsys.readouterr().err
