"""What commands share: the scoring and model arguments, loading runs, qrels and subtask maps."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eval_metrics import (
    RetrievalEvaluation,
    evaluate_retrieval,
    read_exclusions,
    read_qrels,
    read_run,
)
from eval_metrics.aggregate import MAIN_TASKS
from eval_metrics.retrieval import NO_POSITIVE_POLICIES

# CoREB query ids carry their subtask: q_t2c_full_retro_python_0001 -> t2c_full_retro_python.
_COREB_QUERY_ID = re.compile(r"^q_((?:{})_[a-z0-9_]+?)_\d+$".format("|".join(MAIN_TASKS)))
ALL = "all"


def _positive(flag: str, value: int | float | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        raise ValueError(f"{flag} must be at least 1, got {value}")


@dataclass
class ScoringArguments:
    """How run files are scored: the CoREB protocol's parameters (``coreb score``, ``compare``)."""

    qrels: Path = field(metadata={"help": "TREC qrels file: 'query_id 0 doc_id relevance'"})
    exclude: Path | None = field(
        default=None,
        metadata={
            "help": "documents to drop from a query's ranking before scoring (the code-to-code "
            "anchor): JSON {query_id: doc_id | [doc_id]} or TSV 'query_id doc_id' lines"
        },
    )
    subtasks: Path | None = field(
        default=None,
        metadata={
            "help": "JSON file {query_id: subtask} grouping queries into subtasks (default: read "
            "from CoREB query ids q_<subtask>_<number>, else one group)"
        },
    )
    k: list[int] | None = field(
        default=None,
        metadata={
            "metavar": "K",
            "help": "cutoffs for every measure (default: nDCG@1,3,5,10 MAP@10,100 "
            "Recall@1,3,5,10,100 MRR@10 P@1,3,5,10)",
        },
    )
    no_positive_policy: Literal[NO_POSITIVE_POLICIES] = field(
        default="zero",
        metadata={
            "help": "queries without a relevant document (c2t_match negatives): 'zero' scores "
            "them 0 and counts them (official runner, published numbers), 'exclude' drops them"
        },
    )
    relevance_level: int = field(
        default=2,
        metadata={"help": "grade from which a document is relevant (CoREB's graded scheme: 2)"},
    )

    def __post_init__(self) -> None:
        _positive("--relevance-level", self.relevance_level)
        for k in self.k or ():
            _positive("--k", k)


@dataclass
class ModelArguments:
    """The models of an evaluation and where results go (``coreb evaluate``,
    ``coreb qualcode evaluate``)."""

    model: list[str] | None = field(
        default=None,
        metadata={
            "help": "retriever(s) or scorers: bm25 (code-aware tokens, the default), minilm "
            "(all-MiniLM-L6-v2, bundled), or any sentence-transformers model name or folder; "
            "several are compared side by side"
        },
    )
    out: Path | None = field(
        default=None, metadata={"metavar": "DIR", "help": "the results folder (required)"}
    )
    batch_size: int | None = field(
        default=None, metadata={"help": "dense models: encoding batch size"}
    )
    max_length: int | None = field(
        default=None, metadata={"help": "dense models: max tokens per text"}
    )
    cache_dir: Path | None = field(
        default=None,
        metadata={
            "metavar": "DIR",
            "help": "dense models: corpus embeddings (and ONNX / OpenVINO exports, in "
            "DIR/exported) cached here; with --reranker, its scores "
            "are cached in DIR/rerank; coreb evaluate: a release given as --dataset is built "
            "once into DIR/datasets and reused",
        },
    )
    backend: Literal["torch", "onnx", "openvino"] = field(
        default="torch",
        metadata={
            "help": "dense models: the runtime of the encoder on CPU, torch (default), onnx (ONNX "
            "Runtime) or openvino; the model is exported once per fingerprint (into "
            "--cache-dir/exported when given) and its results record the backend"
        },
    )
    quantize: Literal["int8"] | None = field(
        default=None,
        metadata={
            "help": "dense models with --backend onnx or openvino: int8 (onnx: dynamic "
            "quantisation; openvino: int8 weights); results record the quantisation"
        },
    )
    reranker: str | None = field(
        default=None,
        metadata={
            "metavar": "NAME",
            "help": "a second stage: an alias (minilm, smollm2), a model folder, or a Hub id "
            "such as Qwen/Qwen3-Reranker-0.6B",
        },
    )
    rerank_batch_size: int | None = field(
        default=None,
        metadata={
            "metavar": "N",
            "help": "with --reranker: at most N pairs of the maximum length per forward pass "
            "(pairs are length-sorted and batched by a budget of N x max-length tokens, so short "
            "ones pack more)",
        },
    )
    rerank_max_length: int | None = field(
        default=None,
        metadata={
            "metavar": "N",
            "help": "with --reranker: most tokens per (query, document) pair; the document is "
            "truncated (default: the backend's, 512 cross-encoder / 8192 generative)",
        },
    )
    rerank_trust_remote_code: bool = field(
        default=False,
        metadata={
            "help": "with --reranker: run the model's own code from its folder or the Hub "
            "(jina-reranker-v2 and models trained from it need it); only for models you trust",
        },
    )
    rerank_backend: Literal["torch", "onnx", "openvino"] = field(
        default="torch",
        metadata={
            "help": "with a cross-encoder --reranker: the runtime of its classifier on CPU, "
            "torch (default), onnx or openvino, exported once per fingerprint (into "
            "--cache-dir/rerank/exported when given); the generative yes/no reranker runs on "
            "torch only",
        },
    )
    rerank_quantize: Literal["int8"] | None = field(
        default=None,
        metadata={
            "help": "with --rerank-backend onnx or openvino: int8 (onnx: dynamic quantisation; "
            "openvino: int8 weights)",
        },
    )
    json: Path | None = field(
        default=None, metadata={"help": "also write every result as one JSON file"}
    )

    def rerank_flags(self) -> dict[str, Any]:
        """The flags that only mean something with ``--reranker``, and their values."""
        return {
            "--rerank-batch-size": self.rerank_batch_size,
            "--rerank-max-length": self.rerank_max_length,
            "--rerank-trust-remote-code": self.rerank_trust_remote_code or None,
            "--rerank-backend": None if self.rerank_backend == "torch" else self.rerank_backend,
            "--rerank-quantize": self.rerank_quantize,
        }

    def __post_init__(self) -> None:
        given = [flag for flag, value in self.rerank_flags().items() if value is not None]
        if given and self.reranker is None:
            raise ValueError(f"{', '.join(given)} only apply with --reranker NAME (e.g. minilm)")
        counts = {**self.rerank_flags(), "--batch-size": self.batch_size,
                  "--max-length": self.max_length}  # fmt: skip
        for flag, value in counts.items():
            # the counts; not a switch (--rerank-trust-remote-code) nor a name (--rerank-backend)
            if isinstance(value, int) and not isinstance(value, bool):
                _positive(flag, value)
        from coreb_toolkit.retrieval.backends import check_backend

        check_backend(self.backend, self.quantize, "--backend/--quantize")
        check_backend(self.rerank_backend, self.rerank_quantize,
                      "--rerank-backend/--rerank-quantize")  # fmt: skip

    def retriever_options(self, model: str) -> dict[str, Any]:
        """The first-stage options given that ``model``'s retriever takes (the registry says
        which: BM25 takes none of these, a dense model all)."""
        from coreb_toolkit.retrieval.registry import entry_for

        takes = entry_for(model).options
        return {k: v for k, v in self._given_retriever_options().items() if k in takes}

    def _given_retriever_options(self) -> dict[str, Any]:
        given = {"batch_size": self.batch_size, "max_length": self.max_length,
                 "cache_dir": self.cache_dir, "quantize": self.quantize,
                 "backend": None if self.backend == "torch" else self.backend}  # fmt: skip
        return {k: v for k, v in given.items() if v is not None}

    def check_retriever_options(self, also: Iterable[str] = ()) -> None:
        """A first-stage option that no --model takes (nor the command itself: ``also``) is an
        error, not ignored."""
        from coreb_toolkit.retrieval.registry import entry_for

        taken = {o for model in self.model or () for o in entry_for(model).options} | set(also)
        if self.reranker is not None:
            taken.add("cache_dir")  # the reranker's score cache
        unused = [k for k in self._given_retriever_options() if k not in taken]
        if unused:
            flags = ", ".join("--" + k.replace("_", "-") for k in unused)
            raise ValueError(
                f"{flags} applies to dense models only, and no --model is one "
                f"({' '.join(self.model or []) or 'none'}); drop it or add e.g. --model minilm"
            )

    def load_reranker(self) -> Any:
        """The second-stage reranker, loaded once and shared by every --model; loaded before any
        retrieval so that a bad name or option fails first."""
        if self.reranker is None:
            return None
        from coreb_toolkit.benchmark.rerank import resolve_reranker

        options: dict[str, Any] = {}
        if self.rerank_max_length is not None:
            options["max_length"] = self.rerank_max_length
        if self.rerank_trust_remote_code:
            options["trust_remote_code"] = True
        if self.rerank_batch_size is not None:
            # the backends batch by a padded-token budget: N pairs of the longest allowed length
            options["batch_size"] = self.rerank_batch_size
        if self.cache_dir is not None:
            options["cache_dir"] = self.cache_dir / "rerank"
        if self.rerank_backend != "torch":
            options["inference_backend"] = self.rerank_backend
        if self.rerank_quantize is not None:
            options["quantize"] = self.rerank_quantize
        return resolve_reranker(self.reranker, options)


def qrels_spellings(parser: argparse.ArgumentParser) -> None:
    """``--qrels-scheme``, today's spelling of ``QrelsOptions.scheme`` (``--scheme``), unless
    the dataclass declares it itself (an ``aliases`` entry in its field's metadata)."""
    with contextlib.suppress(argparse.ArgumentError):
        parser.add_argument(
            "--qrels-scheme",
            dest="scheme",
            choices=("v2", "v1"),
            default=argparse.SUPPRESS,
            help="for releases without qrels: v2 graded (default) or v1 binary (= --scheme)",
        )


def out_needed(what: str, example: str) -> str:
    """The error for a missing ``--out``: what it is for and the command line to type."""
    return f"{what} needs --out DIR for the runs, results, summary and plots, e.g.: {example}"


def load_subtasks(path: Path | None, qrels: Mapping[str, object]) -> dict[str, str]:
    """``{query_id: subtask}`` for every judged query."""
    if path is not None:
        mapping = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(mapping, dict):
            raise ValueError(f"{path}: expected a JSON object {{query_id: subtask}}")
        missing = [q for q in qrels if q not in mapping]
        if missing:
            raise ValueError(
                f"{path}: {len(missing)} judged queries have no subtask, e.g. {missing[0]!r}"
            )
        return {q: str(mapping[q]) for q in qrels}
    found = {q: _COREB_QUERY_ID.match(q) for q in qrels}
    if all(found.values()):
        return {q: m.group(1) for q, m in found.items()}
    return dict.fromkeys(qrels, ALL)


def split(mapping: Mapping[str, dict], subtask_of: Mapping[str, str]) -> dict[str, dict]:
    """Split a ``{query_id: ...}`` mapping by subtask (unknown queries go to no subtask)."""
    parts: dict[str, dict] = {}
    for query_id, value in mapping.items():
        parts.setdefault(subtask_of.get(query_id, "<unjudged>"), {})[query_id] = value
    return parts


@dataclass(frozen=True)
class Judgments:
    """What every run of one command is scored against, read once."""

    qrels: dict[str, dict[str, int]]
    exclude: dict[str, list[str]]
    subtask_of: dict[str, str]


def load_judgments(args: ScoringArguments) -> Judgments:
    """Read ``--qrels``, ``--exclude`` and ``--subtasks`` and check they agree."""
    qrels = read_qrels(args.qrels)
    exclude = read_exclusions(args.exclude) if args.exclude else {}
    unknown = [q for q in exclude if q not in qrels]
    if unknown:
        raise ValueError(f"{args.exclude}: query {unknown[0]!r} is not in {args.qrels}")
    return Judgments(qrels, exclude, load_subtasks(args.subtasks, qrels))


def score_run(
    run_path: Path, args: ScoringArguments, judgments: Judgments, progress: bool = True
) -> dict[str, RetrievalEvaluation]:
    """Evaluate one run file subtask by subtask."""
    from tqdm.auto import tqdm

    run = read_run(run_path)
    unknown = [q for q in run if q not in judgments.qrels]
    if unknown:
        raise ValueError(
            f"{run_path}: {len(unknown)} ranked queries are not in {args.qrels}, "
            f"e.g. {unknown[0]!r}: is this the qrels file of the same subtask and release?"
        )
    qrels_parts = split(judgments.qrels, judgments.subtask_of)
    run_parts = split(run, judgments.subtask_of)
    exclude_parts = split(judgments.exclude, judgments.subtask_of)
    evaluations = {}
    for subtask in tqdm(
        sorted(qrels_parts), desc="subtasks", unit="subtask", disable=None if progress else True
    ):
        run_part = run_parts.get(subtask)
        if not run_part:
            raise ValueError(f"{run_path} ranks no query of subtask {subtask!r}")
        evaluations[subtask] = evaluate_retrieval(
            qrels_parts[subtask],
            run_part,
            k_values=args.k,
            exclude=exclude_parts.get(subtask),
            no_positive_policy=args.no_positive_policy,
            relevance_level=args.relevance_level,
        )
    return evaluations
