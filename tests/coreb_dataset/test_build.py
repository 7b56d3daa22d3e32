"""``coreb_dataset``: reading a release, per-subtask configs, derived qrels, the Hub folder."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
from pathlib import Path

import datasets
import evaluate
import pyarrow.parquet as pq
import pytest

import coreb_dataset
import eval_metrics
from coreb_dataset import QrelsOptions, ReleaseError
from eval_metrics import evaluate_retrieval
from tests.conftest import REPO_ROOT
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory) -> Path:
    return R.write_release(tmp_path_factory.mktemp("release"))


@pytest.fixture(scope="module")
def built(release_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "coreb"
    coreb_dataset.build(release_dir, out, progress=False)
    return out


def _triples(rows):
    return {
        r["query_id"]: (r["positive_ids"], r["hard_negative_ids"], r["exclude_ids"]) for r in rows
    }


def test_every_subtask_config_and_split(built):
    names = datasets.get_dataset_config_names(str(built))
    assert set(R.EXPECTED) <= set(names)
    assert {*coreb_dataset.CORPUS_CONFIGS, *coreb_dataset.OFFICIAL_CONFIGS} <= set(names)
    subtasks = [n for n in names if n[:4] in ("t2c_", "c2c_", "c2t_")]
    assert sorted(subtasks) == sorted(R.EXPECTED)
    for name, by_release in R.EXPECTED.items():
        ds = datasets.load_dataset(str(built), name)
        assert set(ds) == set(by_release), name
        for split, expected in by_release.items():
            assert _triples(ds[split]) == expected, (name, split)


def test_rows_carry_corpus_and_metadata(built):
    rows = {
        r["query_id"]: r for r in datasets.load_dataset(str(built), "t2c_search_go", split=R.V3)
    }
    row = rows["q_t2c_search_go_0001"]
    # meta arrived as a Python-literal string
    assert row["source_problem_id"] == "P2"
    assert row["language_constraint"] == "go"
    assert row["corpus"] == "corpus_code"
    assert row["qrels_source"] == "shipped"
    canon = datasets.load_dataset(str(built), "c2t_canonical_retro_any", split=R.V3)[0]
    assert canon["corpus"] == "corpus_text_abbreviated"
    full = datasets.load_dataset(str(built), "c2t_full_retro_java", split=R.V3)[0]
    assert full["corpus"] == "corpus_text"
    match = {r["query_id"]: r for r in datasets.load_dataset(str(built), "c2t_match", split=R.V3)}
    assert match["q_c2t_match_0002"]["label"] == 0
    assert match["q_c2t_match_0002"]["pair_type"] == "negative"  # meta as a JSON string
    assert match["q_c2t_match_0002"]["query"] == "anchor code code_v202603_00005"
    c2c = datasets.load_dataset(str(built), "c2c_cross_lang", split=R.V2)[0]
    assert c2c["anchor_code_id"] == R.c2(1)
    assert c2c["qrels_source"] == "derived-v2"


def test_corpus_views(built):
    code = datasets.load_dataset(str(built), "corpus_code", split=R.V2)
    assert code["doc_id"] == [R.c2(i) for i in range(1, 7)]
    by_id = {r["doc_id"]: r for r in code}
    assert by_id[R.c2(2)]["passed"] is True  # meta was a Python literal
    assert by_id[R.c2(3)]["passed"] is False
    assert by_id[R.c2(1)]["text"] == R.V2_CODE[0]["code"]
    short = {
        r["doc_id"]: r
        for r in datasets.load_dataset(str(built), "corpus_text_abbreviated", split=R.V3)
    }
    assert short[R.t3(1)]["text"] == "Short P1 (original)"
    assert short[R.t3(1)]["text_field"] == "abbreviated_text"
    # no abbreviated form: the full text stays, so no judged document is missing from the view
    assert short[R.t3(2)]["text"] == R.V3_TEXT[1]["text"]
    assert short[R.t3(2)]["text_field"] == "text"
    full = {
        r["doc_id"]: r["text"] for r in datasets.load_dataset(str(built), "corpus_text", split=R.V3)
    }
    assert full == {t["text_id"]: t["text"] for t in R.V3_TEXT}


def test_official_configs_keep_their_content(built):
    rows = datasets.load_dataset(str(built), "code_corpus", split=R.V3)
    for got, given in zip(rows, R.V3_CODE, strict=True):
        meta = given["meta"]
        if isinstance(meta, str):  # a JSON string or a Python literal
            meta = json.loads(meta) if meta.startswith('{"') else ast.literal_eval(meta)
        assert {k: got[k] for k in given if k != "meta"} == {
            k: v for k, v in given.items() if k != "meta"
        }
        assert json.loads(got["meta"]) == meta
        assert got["extra"] is None
    qrels = datasets.load_dataset(str(built), "text2code_qrels", split=R.V3)
    assert [(r["query_id"], r["doc_id"], r["relevance"]) for r in qrels] == R.V3_QRELS[
        "text2code_qrels"
    ]
    # the release without qrels gets its derived ones in the official qrels config
    derived = datasets.load_dataset(str(built), "code2code_qrels", split=R.V2)
    assert {(r["doc_id"], r["relevance"]) for r in derived} == {
        (R.c2(2), 2),
        (R.c2(3), 1),
        (R.c2(4), 1),
    }


def test_card_is_a_real_dataset_card(built):
    card = (built / "README.md").read_text(encoding="utf-8")
    header = card.split("---")[1]
    for needle in (
        "license: apache-2.0",
        "- text-retrieval",
        "- text-ranking",
        "- n<1K",
        "pretty_name: CoREB",
        "config_name: c2c_cross_lang",
    ):
        assert needle in header
    # statistics computed from the data: release_v2603 has 6 code docs, 4 passed
    assert "| total | 6 | 4 | 0.67 |" in card
    # positives and hard negatives per query: c2c_cross_lang over both releases' rows
    assert "| c2c_cross_lang | 1 | 1.00 | 2.00 |" in card
    # Table 5 shape: T2C in v2603 has 4 positives and 4 hard negatives in the shipped qrels
    assert "| t2c | 4 | 4 | 8 |" in card
    assert "`t2c_weird_variant` (not in the paper)" in card
    assert "corpus_text_abbreviated" in card and "relevance_level = 2" in card


def test_rebuild_is_byte_identical(release_dir, built, tmp_path):
    again = tmp_path / "again"
    coreb_dataset.build(release_dir, again, progress=False)

    def digest(root):
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    assert digest(again) == digest(built)


def test_derived_qrels_options(release_dir):
    v1 = coreb_dataset.read_release(release_dir, QrelsOptions(scheme="v1"))
    data = v1.releases[R.V2]
    # v1: every solution of the problem is relevant; the c2c anchor never is
    assert data.qrels["q_t2c_full_retro_ruby_0101"] == dict.fromkeys(
        [R.c2(1), R.c2(2), R.c2(3), R.c2(4)], 2
    )
    assert data.qrels["q_c2c_cross_lang_0101"] == dict.fromkeys([R.c2(2), R.c2(3), R.c2(4)], 2)
    assert data.qrels["q_c2t_match_0101"] == {}
    # shipped qrels are used as given whatever the scheme
    assert v1.releases[R.V3].qrels["q_t2c_search_go_0001"] == {R.c3(5): 1}
    none = coreb_dataset.read_release(
        release_dir, QrelsOptions(min_hard_negatives=0, c2t_hard_negatives=1)
    )
    assert none.releases[R.V2].qrels["q_t2c_full_retro_go_0102"] == {R.c2(6): 2}
    assert none.releases[R.V2].qrels["q_c2t_full_retro_any_0101"] == {R.t2(1): 2, R.t2(2): 1}
    two = coreb_dataset.read_release(release_dir, QrelsOptions(min_hard_negatives=3))
    # failed cpp plus the two correct solutions outside the python constraint... none: both
    # remaining correct ones are python positives, so only java (wrong language) can fill in
    assert two.releases[R.V2].qrels["q_t2c_full_retro_python_0101"] == {
        R.c2(1): 2,
        R.c2(4): 2,
        R.c2(3): 1,
        R.c2(2): 1,
    }
    with pytest.raises(ValueError, match="scheme must be 'v1' or 'v2'"):
        QrelsOptions(scheme="v3")


def test_unknown_original_style_is_reported(release_dir):
    with pytest.raises(ReleaseError, match="no original description \\(text_style 'canonical'\\)"):
        coreb_dataset.read_release(release_dir, QrelsOptions(original_text_style="canonical"))


def test_round_trip_scores_match_the_original_qrels(built, release_dir):
    """Build, load each config, score with coreb_metric; same as scoring the raw qrels."""
    metric = evaluate.load(eval_metrics.COREB_METRIC_PATH)
    release = coreb_dataset.read_release(release_dir)
    for name, by_release in R.EXPECTED.items():
        for split in by_release:
            rows = datasets.load_dataset(str(built), name, split=split)
            corpus = datasets.load_dataset(str(built), rows[0]["corpus"], split=split)["doc_id"]
            # a deterministic run that ranks every document of the corpus
            run = {
                r["query_id"]: {
                    d: int(hashlib.sha256(f"{r['query_id']}{d}".encode()).hexdigest()[:6], 16) / 1e7
                    for d in corpus
                }
                for r in rows
            }
            predictions = [
                {"query_id": q, "doc_ids": list(s), "scores": list(s.values())}
                for q, s in run.items()
            ]
            references = [
                {
                    "query_id": r["query_id"],
                    "doc_ids": r["positive_ids"] + r["hard_negative_ids"],
                    "relevance": [2] * len(r["positive_ids"]) + [1] * len(r["hard_negative_ids"]),
                }
                for r in rows
            ]
            exclude = {r["query_id"]: r["exclude_ids"] for r in rows if r["exclude_ids"]}
            got = metric.compute(predictions=predictions, references=references, exclude=exclude)
            # the original judgments, straight from the release files
            data = release.releases[split]
            qrels = {q: data.qrels.get(q, {}) for q in run}
            anchors = {
                q: [data.queries[q][1].meta["anchor_code_id"]]
                for q in run
                if name.startswith("c2c")
            }
            want = evaluate_retrieval(qrels, run, exclude=anchors).summary()
            assert got == want, (name, split)


def test_load_subtask_from_folder_and_release(built, release_dir):
    a = coreb_dataset.load_subtask(built, "c2c_cross_lang", R.V3)
    b = coreb_dataset.load_subtask(release_dir, "c2c_cross_lang", R.V3)
    assert a == b
    assert a.qrels == {"q_c2c_cross_lang_0001": {R.c3(2): 2, R.c3(3): 1, R.c3(4): 1}}
    assert a.exclude == {"q_c2c_cross_lang_0001": [R.c3(1)]}
    assert set(a.corpus) == {c["code_id"] for c in R.V3_CODE}
    run = {"q_c2c_cross_lang_0001": {R.c3(1): 1.0, R.c3(2): 0.9, R.c3(3): 0.1}}
    # evaluation in three lines: the anchor is dropped, the translation ranks first
    assert evaluate_retrieval(a.qrels, run, exclude=a.exclude).mean()["ndcg_at_10"] == 1.0
    with pytest.raises(ValueError, match="several releases"):
        coreb_dataset.load_subtask(built, "c2t_match")
    with pytest.raises(ValueError, match="not in release 'release_v2602'"):
        coreb_dataset.load_subtask(built, "t2c_search_go", R.V2)


def test_builder_class_directly_datasets_4_path(release_dir, built, tmp_path):
    ds = coreb_dataset.load_config(release_dir, "t2c_full_retro_any", cache_dir=str(tmp_path))
    folder = datasets.load_dataset(str(built), "t2c_full_retro_any")
    assert ds[R.V3].to_list() == folder[R.V3].to_list()
    # an unknown subtask gets a config on a builder made for that release
    weird = coreb_dataset.load_config(release_dir, "t2c_weird_variant", cache_dir=str(tmp_path))
    assert weird[R.V3]["query_id"] == ["q_t2c_weird_variant_0001"]
    with pytest.raises(ValueError, match="needs data_dir"):
        builder = coreb_dataset.Coreb(config_name="c2t_match", cache_dir=str(tmp_path))
        builder.download_and_prepare()


DS3_PYTHON = REPO_ROOT / ".venv-ds3" / "bin" / "python"


@pytest.mark.skipif(not DS3_PYTHON.exists(), reason="needs .venv-ds3 with datasets 3.x (make venv)")
def test_loading_script_under_datasets_3(release_dir, built, tmp_path):
    # a script's configs are static: subtasks outside the paper's patterns are reachable
    # through the built folder and load_config, not the script (documented)
    KNOWN = sorted(n for n in R.EXPECTED if n in coreb_dataset.SUBTASKS)
    script = f"""
import json, datasets
assert datasets.__version__.startswith("3."), datasets.__version__
out = {{}}
for name in {KNOWN!r}:
    ds = datasets.load_dataset(
        {str(REPO_ROOT / "coreb_dataset.py")!r}, name, data_dir={str(release_dir)!r},
        trust_remote_code=True, cache_dir={str(tmp_path / "cache")!r},
    )
    out[name] = {{split: ds[split].to_list() for split in ds}}
print(json.dumps(out))
"""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run(
        [str(DS3_PYTHON), "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(got) == KNOWN
    for name in KNOWN:
        by_release = R.EXPECTED[name]
        folder = datasets.load_dataset(str(built), name)
        assert set(got[name]) == set(by_release), name
        for split in by_release:
            assert got[name][split] == folder[split].to_list(), (name, split)


def test_mteb_export(release_dir, tmp_path):
    # the full check is tests/coreb_dataset/test_mteb_export.py; here, what a build user sees
    release = coreb_dataset.read_release(release_dir)
    written = coreb_dataset.export_mteb(release, tmp_path / "mteb", progress=False)
    c2c = tmp_path / "mteb" / "coreb-c2c-retrieval"
    assert written.release == R.V3 and written.folders["coreb-c2c-retrieval"]["default"] == 1
    names = datasets.get_dataset_config_names(str(c2c))
    assert {"corpus", "queries", "default", "c2c_cross_lang-qrels"} <= set(names)
    qrels = datasets.load_dataset(str(c2c), "c2c_cross_lang-qrels", split="test")
    # positives only, as in MTEB's own coreb datasets (MTEB credits any score > 0)
    assert sorted((r["corpus-id"], r["score"]) for r in qrels) == [(R.c3(2), 1)]
    corpus = datasets.load_dataset(
        str(tmp_path / "mteb" / "coreb-c2t-retrieval"),
        "c2t_canonical_retro_any-corpus",
        split="test",
    )
    assert corpus.column_names == ["id", "title", "text"]
    assert dict(zip(corpus["id"], corpus["text"], strict=True))[R.t3(1)] == "Short P1 (original)"


# ------------------------------------------------------------------------------------------
# Bad input: every problem at once, with file and line; nothing written
# ------------------------------------------------------------------------------------------


def _bad_release(root: Path) -> Path:
    R.write_release(root)
    path = root / "text2code_queries" / f"{R.V3}.jsonl"
    lines = path.read_text().splitlines()
    lines.insert(1, "{not json")  # line 2
    lines.append(
        json.dumps({"query_id": "q_t2c_full_retro_any_0009", "subtask": "t2c_full_retro_any"})
    )  # no query
    lines.append(lines[0])  # a duplicate id
    path.write_text("\n".join(lines) + "\n")
    qrels = root / "text2code_qrels" / f"{R.V3}.jsonl"
    with qrels.open("a") as fh:
        fh.write(json.dumps({"query_id": "q_nope_0001", "doc_id": R.c3(1), "relevance": 2}) + "\n")
        fh.write(
            json.dumps(
                {"query_id": "q_t2c_full_retro_any_0001", "doc_id": "code_x", "relevance": 2}
            )
            + "\n"
        )
        fh.write(
            json.dumps({"query_id": "q_t2c_full_retro_any_0001", "doc_id": R.c3(5), "relevance": 3})
            + "\n"
        )
    c2c = root / "code2code_queries" / f"{R.V3}.jsonl"
    row = json.loads(c2c.read_text().splitlines()[0])
    row["query_id"], row["meta"]["anchor_code_id"] = "q_c2c_cross_lang_0002", "code_v202603_99999"
    with c2c.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    return root


def test_every_problem_reported_with_file_and_line(tmp_path):
    root = _bad_release(tmp_path / "bad")
    out = tmp_path / "out"
    with pytest.raises(ReleaseError) as info:
        coreb_dataset.build(root, out, progress=False)
    text = str(info.value)
    t2c = root / "text2code_queries" / f"{R.V3}.jsonl"
    qrels = root / "text2code_qrels" / f"{R.V3}.jsonl"
    n_qrels = len(R.V3_QRELS["text2code_qrels"])
    expected = [
        f"{t2c}:2: malformed JSON",
        f"{t2c}:6: missing required field 'query'",
        f"{t2c}:7: duplicate query id 'q_t2c_full_retro_any_0001' (first at {t2c}:1)",
        f"{qrels}:{n_qrels + 1}: qrel for unknown t2c query 'q_nope_0001'",
        f"{qrels}:{n_qrels + 2}: qrel document 'code_x' is not in this release's code corpus",
        f"{qrels}:{n_qrels + 3}: relevance must be 1 or 2, got 3",
        "anchor 'code_v202603_99999' is not in this release's code corpus",
    ]
    for needle in expected:
        assert needle in text
    assert len(info.value.problems) == len(expected)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no leftovers


def test_failed_rebuild_keeps_the_old_folder(release_dir, tmp_path):
    out = tmp_path / "coreb"
    coreb_dataset.build(release_dir, out, progress=False)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(FileExistsError, match="exists"):
        coreb_dataset.build(release_dir, out, progress=False)
    with pytest.raises(ReleaseError):
        coreb_dataset.build(_bad_release(tmp_path / "bad"), out, overwrite=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == before
    coreb_dataset.build(release_dir, out, overwrite=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == before


def test_wrong_family_and_bad_meta(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "code2code_queries" / f"{R.V3}.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row.update(query_id="q_x_1", subtask="t2c_full_retro_any")
    row2 = {**row, "query_id": "q_x_2", "subtask": "c2c_cross_lang", "meta": "[1, 2"}
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n" + json.dumps(row2) + "\n")
    with pytest.raises(ReleaseError) as info:
        coreb_dataset.read_release(root)
    text = str(info.value)
    assert (
        f"{path}:2: subtask 't2c_full_retro_any' is a t2c subtask but the query is in "
        "code2code_queries" in text
    )
    assert f"{path}:3: meta is neither JSON nor a Python literal" in text


def test_an_id_is_scoped_by_its_release(tmp_path):
    # the published releases both use code_v202601_00001 etc. for different items: each
    # release keeps its own, nothing merges them, and the built splits stay apart
    root = R.write_release(tmp_path / "r")
    path = root / "text_corpus" / f"{R.V3}.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row["text_id"] = R.t2(1)
    row["text"] = "a v2603 text that shares its id with a v2602 one"
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    release = coreb_dataset.read_release(root)
    assert release.releases[R.V3].texts[R.t2(1)].fields["text"] == row["text"]
    assert release.releases[R.V2].texts[R.t2(1)].fields["text"] != row["text"]
    out = tmp_path / "built"
    coreb_dataset.build(release, out, progress=False)
    v3 = datasets.load_dataset(str(out), "corpus_text", split=R.V3)
    v2 = datasets.load_dataset(str(out), "corpus_text", split=R.V2)
    assert {r["doc_id"]: r["text"] for r in v3}[R.t2(1)] == row["text"]
    assert {r["doc_id"]: r["text"] for r in v2}[R.t2(1)] != row["text"]
    # within one release a repeated id is still an error
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")
    with pytest.raises(ReleaseError, match="duplicate id"):
        coreb_dataset.read_release(root)


def test_missing_release_folder_says_what_to_give(tmp_path):
    with pytest.raises(FileNotFoundError, match="official configs"):
        coreb_dataset.read_release(tmp_path / "nope")


def test_parquet_meta_string_columns_are_read(release_dir):
    # release_v2602's corpora are Parquet with meta as a string column (as on the Hub)
    table = pq.read_table(next((release_dir / "code_corpus").glob("*.parquet")))
    assert str(table.schema.field("meta").type) == "string"
    data = coreb_dataset.read_release(release_dir).releases[R.V2]
    assert data.code[R.c2(2)].meta["passed"] is True
    assert data.texts[R.t2(1)].where.endswith("release_v2602-00000-of-00001.parquet:row 0")
