"""results.json: one typed, versioned shape, validated on reading; the old keys and values kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.benchmark import results as res
from coreb_toolkit.benchmark import runner
from coreb_toolkit.benchmark.provenance import dataset_revision, library_versions
from coreb_toolkit.benchmark.runner import discover, evaluate_model, with_ties
from coreb_toolkit.retrieval.bm25 import BM25Retriever
from coreb_toolkit.vocabulary import COREB_V1_TASKS
from eval_metrics import aggregate, evaluate_retrieval, read_run
from eval_metrics.retrieval import apply_exclusions
from eval_metrics.ties import positive_ties
from reranker.base import BaseReranker
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    return root / "hub"


def _old_way(source: str, release: str) -> tuple[dict, dict]:
    """The results dict and runs exactly as the runner built them before the results model and
    the Retriever contract: BM25 indexed per corpus with the corpus's kind, queries searched
    with their task's kind, exclusions applied to the run and again when scoring."""
    (item,) = discover(source, None, [release])
    runs: dict[str, dict] = {}
    by_corpus: dict[str, list[str]] = {}
    for name, data in item.subtasks.items():
        by_corpus.setdefault(data.corpus_name, []).append(name)
    for corpus_name, names in by_corpus.items():
        kind = "code" if corpus_name == "corpus_code" else "text"
        index = BM25Retriever(1.5, 0.75).index(item.corpora[corpus_name], kind=kind)
        for name in names:
            query_kind = "text" if name.startswith("t2c") else "code"
            runs[name] = index.search(item.subtasks[name].queries, top_k=1000, kind=query_kind)
    subtasks = item.subtasks
    runs = {n: apply_exclusions(r, subtasks[n].exclude, subtasks[n].qrels) for n, r in runs.items()}
    evaluations = {
        n: evaluate_retrieval(subtasks[n].qrels, r, exclude=subtasks[n].exclude,
                              no_positive_policy="zero")
        for n, r in runs.items()
    }  # fmt: skip
    ties = {n: positive_ties(subtasks[n].qrels, r, exclude=subtasks[n].exclude)
            for n, r in runs.items()}  # fmt: skip
    first = next(iter(evaluations.values()))
    old = {
        "model": {
            "name": "BM25",
            "implementation": "bm25s",
            "tokenizer": "code-aware (coreb_toolkit.retrieval.bm25): identifiers split; "
            "operators and integer literals kept for code",
            "k1": 1.5,
            "b": 0.75,
        },
        "dataset": {"source": source, "revision": None},
        "release": release,
        "no_positive_policy": first.no_positive_policy,
        "relevance_level": first.relevance_level,
        "c2t_canonical_corpus": "abbreviated",
        "corpora": {name: data.corpus_name for name, data in subtasks.items()},
        "top_k": 1000,
        "retrieval_seconds": 0.0,
        "versions": library_versions(),
        "rows": with_ties([row.to_dict() for row in aggregate(evaluations)], ties),
    }
    return old, runs


def test_results_keep_every_old_key_and_value(hub, tmp_path):
    evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False)
    folder = tmp_path / "BM25" / R.V3
    written = json.loads((folder / "results.json").read_text())
    old, runs = _old_way(str(hub), R.V3)
    assert written["schema_version"] == res.SCHEMA_VERSION and written["kind"] == "coreb"
    new = {k: v for k, v in written.items() if k not in res.SCHEMA_FIELDS}
    # version 2's one new key: the runs kept for MTEB's protocol (mteb/), beside the old ones
    assert new.pop("mteb") == {
        "excluded": [s for s in old["corpora"] if s.startswith("c2c_")],
        "full_text": [s for s, c in old["corpora"].items() if c == "corpus_text_abbreviated"],
        "reranking": ["t2c", "c2t", "c2c"],  # version 3: MTEB's lists, scored
    }
    # version 3's new key: MTEB's six CoREB(v1) tasks scored by the run
    assert sorted(new.pop("mteb_tasks")) == sorted(COREB_V1_TASKS)
    # the two values that change by design: the timing, and the revision of a local folder
    # (its content fingerprint instead of None)
    assert new["dataset"]["revision"].startswith("sha256:")
    new["dataset"]["revision"] = None
    new["retrieval_seconds"] = old["retrieval_seconds"]
    assert new == old
    assert list(new) == list(old)  # the keys in the old order
    for name, run in runs.items():
        assert read_run(folder / "runs" / f"{name}.trec") == read_run_of(run, tmp_path, name)


def read_run_of(run: dict, tmp_path: Path, name: str) -> dict:
    from eval_metrics import write_run

    path = tmp_path / "old" / f"{name}.trec"
    path.parent.mkdir(exist_ok=True)
    write_run(run, path, tag="BM25")
    return read_run(path)


def test_read_results_round_trips_and_names_the_bad_field(hub, tmp_path):
    evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False)
    path = tmp_path / "BM25" / R.V3 / "results.json"
    loaded = res.read_results(path)
    assert isinstance(loaded, res.CorebResults) and not loaded.reranked
    assert loaded.to_dict() == json.loads(path.read_text())
    assert res.read_results(path.parent).release == R.V3  # a folder holding one

    def broken(change) -> str:
        data = json.loads(path.read_text())
        change(data)
        bad = tmp_path / "bad" / "results.json"
        bad.parent.mkdir(exist_ok=True)
        bad.write_text(json.dumps(data))
        with pytest.raises(ValueError) as info:
            res.read_results(bad)
        return str(info.value).replace(str(bad), "results.json")

    assert (broken(lambda d: d["rows"][3].__setitem__("ndcg_at_10", "x"))
            == "results.json: rows[3].ndcg_at_10: expected a number, got 'x'")  # fmt: skip
    assert broken(lambda d: d.__setitem__("schema_version", 4)).startswith(
        "results.json: schema_version: 4 is not a version this coreb-toolkit reads (1 or 2 or 3)"
    )
    # version 1 is read (the same without `mteb`), but a version-1 file holding `mteb` is not
    assert res.read_results(path).mteb is not None
    assert broken(lambda d: (d.pop("mteb_tasks"), d.__setitem__("schema_version", 1))).startswith(
        "results.json: mteb: a field of schema version 2 in a version-1 file"
    )
    v1 = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("mteb", "mteb_tasks")}
    assert broken(lambda d: d.__setitem__("schema_version", 2)).startswith(
        "results.json: mteb_tasks: a field of schema version 3 in a version-2 file"
    )
    assert res.from_dict({**v1, "schema_version": 1}).mteb is None  # a version-1 file is read
    assert "results.json: mteb.excluded: expected a list" in broken(
        lambda d: d["mteb"].__setitem__("excluded", "c2c_cross_lang")
    )
    assert "results.json: no schema_version" in broken(lambda d: d.pop("schema_version"))
    assert "results.json: kind: expected one of" in broken(lambda d: d.__setitem__("kind", "x"))
    assert "results.json: rows[0]: 'level' is a required property" in broken(
        lambda d: d["rows"][0].pop("level")
    )
    assert "results.json: dataset.revision: expected a string or null, got 3" in broken(
        lambda d: d["dataset"].__setitem__("revision", 3)
    )
    assert "results.json: (top level): Additional properties" in broken(
        lambda d: d.__setitem__("surprise", 1)
    )
    (tmp_path / "bad" / "results.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        res.read_results(tmp_path / "bad" / "results.json")
    # a file written before the schema is read after upgrade_results, its keys untouched
    old = {k: v for k, v in json.loads(path.read_text()).items() if k not in res.SCHEMA_FIELDS}
    assert res.as_results(old).to_dict() == json.loads(path.read_text())


def test_dataset_revision_of_a_local_folder_is_its_content_fingerprint(hub, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(hub, copy)
    assert dataset_revision(str(hub)) == dataset_revision(str(copy))
    assert dataset_revision(str(hub)).startswith("sha256:")
    card = copy / "README.md"
    card.write_text(card.read_text() + "\n")
    assert dataset_revision(str(copy)) != dataset_revision(str(hub))


class UntrainedReranker(BaseReranker):
    """A reranker that says its head is untrained, as the bundled minilm alias does."""

    name = "untrained"
    max_length = 64
    untrained_head = True

    def __init__(self) -> None:
        self.cache_dir = None

    def fingerprint(self) -> str:
        return "untrained-1"

    def _score_batch(self, pairs, instruction):
        return [float(len(d)) for _, d in pairs]


def test_an_untrained_reranker_is_marked_in_results_and_summary(hub, tmp_path):
    results = evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False,
                             reranker=UntrainedReranker(), rerank_top_k=5)  # fmt: skip
    assert results[0]["model"]["name"] == "BM25" and "reranker" not in results[0]
    folder = tmp_path / "BM25+untrained" / R.V3
    loaded = res.read_results(folder / "results.json")
    assert loaded.reranked and loaded.reranker["untrained_head"] is True
    summary = (folder / "summary.md").read_text()
    assert "**Untrained head**: the reranker untrained" in summary
    assert "Untrained head" not in (tmp_path / "BM25" / R.V3 / "summary.md").read_text()


def test_qrels_options_reach_a_release_folder_not_a_built_one(hub, tmp_path, monkeypatch):
    options = coreb_dataset.QrelsOptions(min_hard_negatives=2)
    with pytest.raises(ValueError, match="qrels were derived when it was built"):
        evaluate_model(str(hub), "bm25", tmp_path, options=options)
    seen = []
    load = coreb_dataset.load_subtask

    def spy(*args, **kwargs):
        seen.append(kwargs.get("options"))
        return load(*args, **kwargs)

    monkeypatch.setattr(runner, "load_subtask", spy)
    evaluate_model(str(hub.parent / "release"), "bm25", tmp_path, releases=[R.V3], plots=False,
                   options=options)  # fmt: skip
    assert seen and all(o == options for o in seen)


def test_non_finite_figures_are_refused_reading_and_writing(tmp_path):
    """Issue 27 item 14: NaN/Infinity were read (Python's json takes them) and published."""
    from coreb_toolkit.benchmark.results import read_results, validate

    path = tmp_path / "results.json"
    path.write_text('{"schema_version": 1, "kind": "coreb", "x": NaN}')
    with pytest.raises(ValueError, match=r"results\.json: not JSON|NaN is not a JSON number"):
        read_results(path)
    with pytest.raises(ValueError, match=r"where: rows\[0\]\.ndcg_at_10 is inf"):
        validate({"schema_version": 1, "kind": "coreb",
                  "rows": [{"ndcg_at_10": float("inf")}]}, "where")  # fmt: skip
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ValueError, match=r"deep\.json: nested deeper"):
        read_results(deep)
