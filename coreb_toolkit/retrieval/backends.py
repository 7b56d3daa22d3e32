"""CPU inference backends for embedders and cross-encoders: ONNX Runtime and OpenVINO.

Used by :class:`~coreb_toolkit.retrieval.dense.DenseRetriever` (``backend=``) and
:class:`~reranker.cross_encoder.CrossEncoderReranker` (``inference_backend=``).

sentence-transformers loads models with ``backend="onnx"`` / ``"openvino"`` through Optimum
(``optimum-onnx``, ``optimum-intel``), but no release of those on PyPI works with the
transformers 5 this project pins (optimum-onnx 0.1.0 declares ``transformers<4.58`` and
imports ``transformers.modeling_utils.get_parameter_dtype``, gone in 5.x; optimum-intel 2.2.0
declares ``transformers<5.6``, ``huggingface-hub<1.22`` and fails at import on
``qwen2_vl.VisionRotaryEmbedding``). So the export goes through the libraries underneath, each
doing what it is made for:

* the transformer module of the sentence-transformers pipeline (module 0) is exported with
  ``torch.onnx.export``; its pooling / normalisation modules stay the torch modules of the
  pipeline, so only the encoder's forward pass changes runtime;
* ``onnx``: an ``onnxruntime.InferenceSession`` runs it; ``int8`` is
  ``onnxruntime.quantization.quantize_dynamic`` (weights int8, activations quantised at run
  time, no calibration data) with a scale per output channel of every weight, and
  ``reduce_range`` (7-bit weights) on CPUs without AVX-512 VNNI;
* ``openvino``: ``openvino`` compiles the same ONNX file for the CPU with
  ``INFERENCE_PRECISION_HINT=f32`` (left alone, OpenVINO runs bf16 on CPUs that have it, which
  moved MiniLM's hidden states by 6e-2); ``int8`` is ``nncf.compress_weights`` (int8 weights,
  data-free: a static quantisation would need a calibration set, and none ships offline).

Exports are cached by fingerprint (model revision, backend, quantisation, exporter and runtime
versions) under ``<cache_dir>/exported/``, beside the embedding cache, so a second run loads
the file and does not export again. The quantisation entry (:func:`quantization_config`) holds
the whole recipe and the CPU's int8 features, so a changed recipe, or another kind of CPU,
never reuses an old export, and results say where their int8 numbers were made.

Why per-channel ONNX int8 (measured 2026-12 on an AMD EPYC with AVX2 and no AVX-512 VNNI,
onnxruntime 1.32, the bundled all-MiniLM-L6-v2; worst cosine to the torch fp32 vector over the
four texts of ``tests/retrieval/test_backends.py``, then over 164 HumanEval texts):

==============================================  =======  =========
``quantize_dynamic`` recipe                     4 texts  HumanEval
==============================================  =======  =========
QInt8, per-tensor, reduce_range (the old one)   0.745    0.735
QInt8, per-tensor                               0.901    0.915
QInt8, per-tensor, MatMul only, reduce_range    0.734    0.735
QInt8, per-tensor, MatMul only                  0.910    0.919
QInt8, per-channel, reduce_range (chosen)       0.975    0.986
QInt8, per-channel                              0.981    0.984
QUInt8 (U8U8), per-channel                      0.984    0.989
==============================================  =======  =========

("MatMul only": ``op_types_to_quantize=["MatMul"]``, the embedding ``Gather`` left fp32.)
One scale per weight tensor was the loss, not saturation: without ``reduce_range`` this CPU
gives 0.90, about what a VNNI CPU gave with that recipe (0.91), and leaving the ``Gather``
unquantised does not help. A scale per output channel brings every variant to 0.975 or more.
``reduce_range`` stays where ONNX Runtime documents it (u8 x s8 products saturate in
``VPMADDUBSW`` on AVX2 / AVX-512 without VNNI): here it changes the worst cosine by -0.006 /
+0.002 and it keeps other models safe. Signed activations are not an option (dynamic
quantisation has uint8 activations only). U8U8 cannot saturate but runs slower (one thread,
HumanEval: s8 per-channel 1.7x fp32 with or without ``reduce_range``, as per-tensor; U8U8
1.5x). Per-channel scales add 0.1 MB to the file (23.0 MB; fp32 90.4 MB). On the real CoREB
release_v2603 on the same CPU, the Overall nDCG@10 of MiniLM is 0.3060 on torch, 0.3075 with
the chosen recipe and 0.2153 with the old one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import platform
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: The inference backends, ``torch`` the default.
BACKENDS = ("torch", "onnx", "openvino")
#: What ``quantize`` may be (``None``: the model's own fp32 weights).
QUANTIZATIONS = ("int8",)
INSTALL = {
    "onnx": "pip install coreb-toolkit[onnx]",
    "openvino": "pip install coreb-toolkit[openvino]",
}
_OPSET = 17
# Bump when what an exported file holds changes meaning.
_EXPORT_FORMAT = 1
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def check_backend(backend: object, quantize: object, owner: str) -> tuple[str, str | None]:
    """``(backend, quantize)`` when they are a valid pair, else a ``ValueError`` naming ``owner``.

    ``quantize`` needs an exported backend: torch has no int8 path here.
    """
    if backend not in BACKENDS:
        raise ValueError(f"{owner}: backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise ValueError(
            f"{owner}: quantize must be one of {', '.join(QUANTIZATIONS)} or None, got {quantize!r}"
        )
    if quantize is not None and backend == "torch":
        raise ValueError(
            f"{owner}: quantize={quantize!r} needs backend 'onnx' or 'openvino' (torch runs the "
            "fp32 weights); choose one of them with the quantisation"
        )
    return str(backend), None if quantize is None else str(quantize)


def _require(backend: str) -> None:
    modules = {"onnx": ("onnx", "onnxruntime"), "openvino": ("onnx", "openvino", "nncf")}
    for module in modules[backend]:
        try:
            __import__(module)
        except ImportError as e:
            raise ImportError(
                f"the {backend} backend needs {module!r}; install it with `{INSTALL[backend]}`"
            ) from e


#: The CPU flags that decide how int8 products run (``/proc/cpuinfo`` names): AVX2 and
#: AVX-512 without VNNI multiply u8 x s8 in ``VPMADDUBSW``, which saturates at 16 bits.
INT8_CPU_FLAGS = ("avx2", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8")


def cpu_flags() -> dict[str, bool]:
    """Which of :data:`INT8_CPU_FLAGS` the CPU has, read from ``/proc/cpuinfo`` (all ``False``
    where there is none: another OS, or not x86)."""
    flags = _cpuinfo_flags()
    return {flag: flag in flags for flag in INT8_CPU_FLAGS}


@functools.cache
def _cpuinfo_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def cpu_has_vnni() -> bool:
    """Whether the CPU has AVX-512 VNNI (int8 dot products), read from ``/proc/cpuinfo``."""
    return cpu_flags()["avx512_vnni"]


def cpu_features() -> dict[str, Any]:
    """The machine and its int8 flags (:func:`cpu_flags`), as results record them."""
    return {"machine": platform.machine(), "flags": cpu_flags()}


def quantization_config(backend: str, quantize: str | None) -> dict[str, Any] | None:
    """What the int8 export does and the CPU it runs on, recorded in fingerprints and results
    (``None`` for fp32). The recipe is explained in the module docstring."""
    if quantize is None:
        return None
    if backend == "onnx":
        return {
            "method": "onnxruntime.quantization.quantize_dynamic",
            "weight_type": "QInt8",
            "activation_type": "QUInt8",
            "per_channel": True,
            # 7-bit weights where u8 x s8 products could saturate (ORT's remedy)
            "reduce_range": not cpu_has_vnni(),
            "cpu": cpu_features(),
        }
    return {"method": "nncf.compress_weights", "mode": "INT8_ASYM", "data_free": True,
            "cpu": cpu_features()}  # fmt: skip


def export_fingerprint(revision: str, backend: str, quantize: str | None) -> str:
    """sha256 over what decides the exported file's numbers."""
    import torch

    versions = {"torch": torch.__version__}
    for module in ("onnx", "onnxruntime", "openvino", "nncf"):
        try:
            versions[module] = __import__(module).__version__
        except (ImportError, AttributeError):
            versions[module] = None
    key = {
        "format": _EXPORT_FORMAT,
        "revision": revision,
        "backend": backend,
        "quantize": quantization_config(backend, quantize),
        "opset": _OPSET,
        "versions": versions,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]


class _Output:
    """A HF model as a function of plain tensors returning one output (``last_hidden_state``
    of an encoder, ``logits`` of a sequence classifier)."""

    def __new__(cls, model: Any, names: tuple[str, ...], output: str) -> Any:
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                out = self.inner(**dict(zip(names, tensors, strict=True)), return_dict=True)
                return getattr(out, output)

        return Wrapped().eval()


def _export_onnx(hf_model: Any, names: tuple[str, ...], path: Path, output: str) -> None:
    import torch

    sample = {n: torch.ones((2, 8), dtype=torch.long) for n in names}
    if "token_type_ids" in sample:
        sample["token_type_ids"] = torch.zeros((2, 8), dtype=torch.long)
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[output] = {0: "batch", 1: "sequence"} if output == "last_hidden_state" else {0: "batch"}
    # the TorchScript exporter: the dynamo one needs onnxscript, which nothing else here needs
    torch.onnx.export(
        _Output(hf_model, names, output), tuple(sample[n] for n in names), str(path),
        input_names=list(names), output_names=[output], dynamic_axes=axes,
        opset_version=_OPSET, dynamo=False,
    )  # fmt: skip


class ExportedEncoder:
    """The transformer module of a sentence-transformers model, run by ONNX Runtime or OpenVINO.

    Args:
        hf_model: the Hugging Face encoder (``SentenceTransformer[0].auto_model``).
        input_names: the tokenizer outputs it takes, in order.
        backend: ``"onnx"`` or ``"openvino"``.
        quantize: ``"int8"`` or ``None``.
        folder: where the export is cached (a file per fingerprint).
        fingerprint: :func:`export_fingerprint` of the model.
        threads: intra-op threads of the runtime (default: the runtime's).
        output: the model output run: ``"last_hidden_state"`` (an encoder) or ``"logits"``.

    ``exported`` tells whether this load exported (``False``: read from the cache).
    """

    def __init__(
        self,
        hf_model: Any,
        input_names: tuple[str, ...],
        backend: str,
        quantize: str | None,
        folder: Path,
        fingerprint: str,
        threads: int | None = None,
        output: str = "last_hidden_state",
    ) -> None:
        check_backend(backend, quantize, type(self).__name__)
        if backend == "torch":
            raise ValueError(f"{type(self).__name__} runs onnx or openvino, not torch")
        _require(backend)
        self.backend, self.quantize, self.input_names = backend, quantize, input_names
        folder.mkdir(parents=True, exist_ok=True)
        suffix = f"{backend}-{quantize or 'fp32'}-{fingerprint}"
        fp32 = folder / f"model-{fingerprint}.onnx"
        self.exported = False
        if not fp32.is_file():
            tmp = fp32.with_suffix(f".tmp{os.getpid()}.onnx")
            _export_onnx(hf_model, input_names, tmp, output)
            os.replace(tmp, fp32)
            self.exported = True
            logger.info("exported %s to ONNX at %s", type(hf_model).__name__, fp32)
        if backend == "onnx":
            self.path = fp32 if quantize is None else folder / f"model-{suffix}.onnx"
            if not self.path.is_file():
                self._quantize_onnx(fp32, self.path)
            self._run = self._onnx_session(self.path, threads)
        else:
            self.path = fp32 if quantize is None else folder / f"model-{suffix}.xml"
            if quantize is not None and not self.path.is_file():
                self._compress_openvino(fp32, self.path)
            self._run = self._openvino_model(self.path, threads)
        manifest = folder / f"{suffix}.json"
        if not manifest.is_file():
            body = {"backend": backend, "quantization": quantization_config(backend, quantize),
                    "file": self.path.name, "inputs": list(input_names)}  # fmt: skip
            manifest.write_text(json.dumps(body, indent=2) + "\n")

    def _quantize_onnx(self, source: Path, target: Path) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        config = quantization_config("onnx", self.quantize) or {}
        tmp = target.with_suffix(f".tmp{os.getpid()}.onnx")
        quantize_dynamic(
            str(source), str(tmp), weight_type=QuantType[config["weight_type"]],
            per_channel=config["per_channel"], reduce_range=config["reduce_range"],
        )  # fmt: skip
        os.replace(tmp, target)
        self.exported = True
        logger.info("quantised %s to int8 at %s", source.name, target)

    def _compress_openvino(self, source: Path, target: Path) -> None:
        import nncf
        import openvino as ov

        model = nncf.compress_weights(
            ov.Core().read_model(str(source)), mode=nncf.CompressWeightsMode.INT8_ASYM
        )
        tmp = target.with_name(f"{target.stem}.tmp{os.getpid()}.xml")
        ov.save_model(model, str(tmp))
        os.replace(tmp.with_suffix(".bin"), target.with_suffix(".bin"))
        os.replace(tmp, target)
        self.exported = True
        logger.info("compressed %s to int8 weights at %s", source.name, target)

    def _onnx_session(self, path: Path, threads: int | None) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return lambda feeds: session.run(None, feeds)[0]

    def _openvino_model(self, path: Path, threads: int | None) -> Any:
        import openvino as ov

        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "f32"}
        if threads is not None:
            config["INFERENCE_NUM_THREADS"] = threads
        compiled = ov.Core().compile_model(str(path), "CPU", config)
        return lambda feeds: compiled(feeds)[0]

    def __call__(self, features: Mapping[str, Any]) -> Any:
        """The output (a float32 torch tensor) for tokenizer ``features``."""
        import torch

        feeds = {n: features[n].cpu().numpy() for n in self.input_names}
        return torch.from_numpy(self._run(feeds)).float()


def export_folder(cache_dir: Path | None) -> Path:
    """Where exports go: ``<cache_dir>/exported``, or a temporary folder when there is no
    cache (then every process exports again)."""
    if cache_dir is not None:
        return Path(cache_dir) / "exported"
    return Path(tempfile.mkdtemp(prefix="coreb-export-"))


__all__ = [
    "BACKENDS",
    "INT8_CPU_FLAGS",
    "QUANTIZATIONS",
    "ExportedEncoder",
    "check_backend",
    "cpu_features",
    "cpu_flags",
    "cpu_has_vnni",
    "export_fingerprint",
    "export_folder",
    "quantization_config",
]
