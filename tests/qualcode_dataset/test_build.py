"""The QualCode Hub folder, the builder (datasets 4+ and 3.x), the CLI, and a real build."""

from __future__ import annotations

import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import datasets
import pytest

import qualcode_dataset as q
from coreb_toolkit.cli.main import main
from tests.conftest import REPO_ROOT, SHARED_DATA
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet

OPTS = q.QualcodeOptions(retrieval_negatives=5)


@pytest.fixture(scope="module")
def codenet(tmp_path_factory):
    return write_codenet(tmp_path_factory.mktemp("qcb") / "codenet")


@pytest.fixture(scope="module")
def data(codenet):
    return q.prepare([codenet], OPTS, analyser=MarkerAnalyser(), progress=False)


@pytest.fixture(scope="module")
def built(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("qcout") / "qualcode"
    q.build(data, out, progress=False)
    return out


def test_folder_holds_every_config_and_loads_with_plain_datasets(built, data, tmp_path):
    cache = str(tmp_path / "hf")  # a fresh datasets cache: it keys a local folder by its path
    # mc_1cond is empty on the fixture (strict balance, one combination has no triplet):
    # datasets has no empty split, so it is left out and the card says so
    names = sorted(p.name for p in built.iterdir() if p.is_dir())
    assert names == sorted(set(q.FEATURES) - {"mc_1cond"})
    for name, dim in q.PAIR_CONFIGS.items():
        ds = datasets.load_dataset(str(built), name, split="test", cache_dir=cache)
        assert ds.to_list() == data.pairs[dim], name
    for name, k in q.MC_CONFIGS.items():
        if k == 1:
            continue
        ds = datasets.load_dataset(str(built), name, split="test", cache_dir=cache)
        assert ds.to_list() == data.triplets[k], name
    with pytest.raises(ValueError, match="mc_1cond"):
        datasets.load_dataset(str(built), "mc_1cond", split="test", cache_dir=cache)
    assert "absent from the folder" in (built / "README.md").read_text()
    corpus = datasets.load_dataset(str(built), "qualcode_corpus", split="test", cache_dir=cache)
    assert len(corpus) == 15
    row = {r["doc_id"]: r for r in corpus}["s00000014"]
    assert (row["cpu_time_ms"], row["memory_kb"], row["smell_count"], row["smell_diversity"]) == (
        60,
        600,
        2,
        2,
    )
    assert (row["speed_label"], row["memory_label"], row["maintainability_label"]) == (0, 0, 0)


def test_card_and_report(built, data):
    card = (built / "README.md").read_text()
    assert "config_name: mc_2cond" in card and "path: qualcode_speed/test.parquet" in card
    assert "| `qualcode_speed` | 2 |" in card
    assert "below the 2x margin: 1" in card
    assert "problem has no statement" in card
    report = json.loads((built / "build_report.json").read_text())
    assert len(report["drops"]) == len(data.dropped)
    assert {"stage", "reason", "item", "where"} <= set(report["drops"][0])
    assert report["pairs"] == {"speed": 2, "memory": 3, "maintainability": 1}
    assert report["margin_distribution"]["speed"]["n"] == 2
    assert report["margin_distribution"]["speed"]["max"] == pytest.approx(6.0)


def test_rebuild_is_byte_identical_and_atomic(built, data, tmp_path):
    again = tmp_path / "again"
    q.build(data, again, progress=False)
    for path in built.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(built)).read_bytes(), path
    with pytest.raises(FileExistsError, match="overwrite"):
        q.build(data, again, progress=False)


def test_builder_class_matches_the_folder(codenet, tmp_path):
    # the default analyser (ruff) through the GeneratorBasedBuilder path of datasets 4+
    ds = q.load_config(codenet, "qualcode_speed", options=OPTS, cache_dir=str(tmp_path / "c"))
    prepared = q.prepare([codenet], OPTS, progress=False)
    assert ds.to_list() == prepared.pairs["speed"]
    with pytest.raises(ValueError, match="unknown QualCode config"):
        q.load_config(codenet, "qualcode_beauty")


def test_cli_build(codenet, tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(
        [
            "qualcode",
            "build",
            "--source",
            str(codenet),
            "--out",
            str(out),
            "--mc-per-k",
            "30",
            "--retrieval-negatives",
            "5",
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert f"wrote {out}: 4 problems, 15 submissions" in text
    assert (out / "mc_3cond" / "test.parquet").is_file()
    with pytest.raises(SystemExit) as err:
        main(["qualcode", "build", "--source", str(codenet), "--out", str(out)])
    assert err.value.code == 2
    assert "exists; add --force" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["qualcode", "build", "--source", str(codenet), "--out", str(tmp_path / "x")])
    assert "needs 99 submissions of other problems" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit):
        main(["qualcode", "build", "--source", str(tmp_path / "nope"), "--out", str(out) + "2"])
    assert "no such file or folder" in capsys.readouterr().err


DS3_PYTHON = REPO_ROOT / ".venv-ds3" / "bin" / "python"


@pytest.mark.skipif(not DS3_PYTHON.exists(), reason="needs .venv-ds3 with datasets 3.x (make venv)")
def test_loading_script_under_datasets_3(codenet, tmp_path):
    script = f"""
import json, datasets
assert datasets.__version__.startswith("3."), datasets.__version__
out = {{}}
for name in ["qualcode_speed", "mc_2cond"]:
    ds = datasets.load_dataset(
        {str(REPO_ROOT / "qualcode_dataset.py")!r}, name, data_dir={str(codenet)!r},
        retrieval_negatives=5, trust_remote_code=True, cache_dir={str(tmp_path / "cache")!r},
    )
    out[name] = ds["test"].to_list()
print(json.dumps(out))
"""
    # the script imports the toolkit's readers (sources, quality) from the repository, and the
    # ruff binary from the main environment
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONPATH": str(REPO_ROOT),
        "PATH": f"{REPO_ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
    }
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
    prepared = q.prepare([codenet], OPTS, progress=False)
    assert got["qualcode_speed"] == prepared.pairs["speed"]
    assert got["mc_2cond"] == prepared.triplets[2]


@pytest.mark.needs_shared_data
def test_real_build_from_shared_codenet(tmp_path):
    source = SHARED_DATA / "codenet"
    # every problem kept (english_only=False) so that the counts can be recomputed from the
    # raw file alone; the default drops the Japanese-only statements, checked below
    report = q.build(
        [source], tmp_path / "real", options=q.QualcodeOptions(english_only=False), progress=False
    ).report
    # the speed and memory rules recomputed here from the raw PIE file (both sides of every
    # pair are accepted submissions; a submission may appear in several pairs)
    figures: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    with open(source / "pie_py_reference.jsonl", encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            for v in ("v0", "v1"):
                figures[r["problem_id"]][r[f"submission_id_{v}"]] = (
                    float(r[f"cpu_time_{v}"]),
                    float(r[f"memory_{v}"]),
                )
    for dim, j in (("speed", 0), ("memory", 1)):
        expected = sum(
            1
            for subs in figures.values()
            if len(subs) >= 2
            and 2 * min(f[j] for f in subs.values()) < max(f[j] for f in subs.values())
        )
        assert report["pairs"][dim] == expected, dim
    assert report["problems"] == len(figures)
    assert report["submissions"] == sum(len(s) for s in figures.values())
    assert report["pairs"]["maintainability"] > 0
    assert sum(report["triplets"].values()) > 0
    english = q.prepare([source], progress=False).report
    japanese = english["dropped"]["select"]["statement only in Japanese"]
    assert english["submissions"] == report["submissions"] - japanese
    assert 0 < english["problems"] < report["problems"]
    card = (tmp_path / "real" / "README.md").read_text()
    assert "Margin (rejected / chosen figure)" in card
    assert Path(tmp_path / "real" / "qualcode_corpus" / "test.parquet").is_file()
