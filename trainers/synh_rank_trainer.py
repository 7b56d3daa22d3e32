"""Train a quality-aware reranker with SynH-Rank's hierarchical ranking loss, or a baseline loss
[SynH-Rank §4.2, §5.4, §6; protocol §5.2].

The steps, each one function:

1. **Lists** (:func:`read_training_lists`): the ``train_lists`` folders (one row per query:
   ``query``, ``docs``, ``labels`` 2/1/0, and where each list came from), checked; a seeded
   task-level validation split (:func:`split_lists`: a task's lists of every dimension stay
   on one side).
2. **Loss rows** (:func:`loss_rows`), the columns each sentence-transformers loss takes:

   * ``lambda`` (SynH-Rank): ``(query, docs, labels)`` for ``LambdaLoss(weighting_scheme=
     LambdaRankScheme(), k=None, sigma=1, reduction_log="natural")``: eq. (5)-(6) of the paper,
     summed over the ordered pairs ``rel_i > rel_j`` with ``|dNDCG_ij|`` from the current ranks,
     **divided by the number of such pairs in the batch** (the paper writes the sum; the mean
     only rescales the learning rate per batch, tests/trainers/test_synh_rank_loss.py checks it
     against eq. (5)-(6) written out);
   * ``infonce`` (the loss ablation, Table 4): ``(query, positive, negative_1..n)``, the label-2
     document against the list's other documents, eq. (4);
   * ``srcl`` (the SRCL baseline, Table 3): any relevant document (label >= 1, a seeded choice)
     against ``srcl_negatives`` irrelevant ones: the list's label-0 documents, then documents of
     other tasks (seeded draws; never the list's own task).

   Both InfoNCE variants are sentence-transformers' ``MultipleNegativesRankingLoss`` over the
   row's own negatives only (:class:`~trainers.synh_rank_losses.ListInfoNCELoss`): in-batch
   negatives could be the same task's relevant code under another dimension.
3. **Model**: a cross-encoder (``sentence_transformers.CrossEncoder``, score = its logit; the
   query side is ``join_instruction(instruction, statement)``, the document truncated as
   :class:`reranker.cross_encoder.CrossEncoderReranker` truncates it) trained by
   ``CrossEncoderTrainer``; or a generative yes/no reranker (score = logit(yes) - logit(no)
   after :class:`reranker.prompt.YesNoPrompt`, the prompt
   :class:`reranker.generative.GenerativeReranker` serves, whose P(yes) is the sigmoid of that
   score) trained by :class:`~trainers.synh_rank_losses.ListwiseTrainer`, a
   ``transformers.Trainer`` whose loss is the same sentence-transformers loss object, called on
   :class:`~trainers.synh_rank_losses.YesNoScorer`. Full fine-tuning (the paper) or LoRA
   (generative).
4. **Output**: the model as ``reranker.registry.load_reranker(OUTPUT_DIR)`` loads it (a
   cross-encoder folder, a causal-LM folder, or a LoRA adapter with its manifest), the config,
   the data report and fingerprint, the curves, the log; every ``checkpoint-N`` the same.
5. **Validation**: the held-out lists scored before and after training by the reranker classes
   on the in-memory model: mean nDCG of the lists and the fraction of ordered pairs scored in
   order, per dimension (``validation_metrics.json``, ``validation_scores.jsonl``).

Runs under ``accelerate launch`` as ``coreb train reranker`` does (the Trainer owns the
distribution; validation and files on the main process).

The config is :class:`trainers.synh_rank_config.SynhRankConfig`; the generative base's loading,
the LoRA config, the run records, the checkpoint callback and the end of the run are
:mod:`trainers.common`'s, which the CoREB-Reranker trainer shares. The validation figures are
:mod:`eval_metrics`' own: nDCG through :func:`eval_metrics.evaluate_retrieval` (pytrec_eval),
the pairs in order counted as QPA counts its triplets
(:func:`eval_metrics.preference.preference_wins`).
"""

from __future__ import annotations

import logging
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_metrics import evaluate_retrieval
from eval_metrics.preference import preference_wins
from reranker.cross_encoder import join_instruction
from reranker.instructions import by_instruction
from trainers.common import (
    VALIDATION_METRICS,
    VALIDATION_SCORES,
    TrainingData,
    TrainResult,
    check_eval_split,
    checkpoint_extras,
    extras_callback,
    load_base,
    lora_config,
    save_merged,
    train_and_save,
    write_json,
    write_jsonl,
    write_run_end,
    write_run_records,
)
from trainers.quality_data.records import Drop
from trainers.run_checks import GuardedTrainer, check_resumed_data, run_guard
from trainers.synh_rank_config import SynhRankConfig
from trainers.synh_rank_losses import ListCollator, ListwiseTrainer, YesNoScorer, build_loss

logger = logging.getLogger(__name__)

#: the list columns training reads (``trainers.quality_data.records.LIST_COLUMNS`` has more)
REQUIRED_COLUMNS = ("query_id", "task_id", "dimension", "instruction", "statement", "docs",
                    "labels")  # fmt: skip
#: the per-document columns that must be as long as ``docs`` where they are given
PER_DOC_COLUMNS = ("labels", "doc_ids", "origins")


# -- 1: lists -----------------------------------------------------------------------------
def read_training_lists(
    config: SynhRankConfig, lists: Any = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The lists (as dicts) and a report per source: ``lists`` given (a ``datasets.Dataset``
    or dicts with the lists columns), else every ``config.train_lists`` folder through
    ``trainers.quality_data.lists.read_lists``, in order. Checked by :func:`check_lists`."""
    if lists is not None:
        rows = [dict(r) for r in lists]
        sources = [{"source": "in-memory", "lists": len(rows)}]
    else:
        if not config.train_lists:
            raise ValueError(
                "SynhRankConfig.train_lists is empty: name one or more lists folders (built by "
                "trainers.quality_data) to train on"
            )
        from trainers.quality_data.lists import read_lists

        rows, sources = [], []
        for folder in config.train_lists:
            part = [dict(r) for r in read_lists(folder)]
            source: dict[str, Any] = {"source": str(folder), "lists": len(part)}
            report = Path(folder) / "report.json"
            if report.is_file():
                import json

                source["report"] = json.loads(report.read_text(encoding="utf-8"))
            rows += part
            sources.append(source)
    check_lists(rows)
    return rows, sources


def check_lists(rows: Sequence[Mapping[str, Any]]) -> None:
    """``ValueError`` naming the list and the column of the first malformed list: a missing
    column, per-document columns of other lengths than ``docs``, a label that is no
    non-negative integer, an empty document, a repeated ``query_id``, or a ``query`` that is
    not ``instruction + "\\n" + statement`` (the query side inference scores)."""
    if not rows:
        raise ValueError("no list to train on: the lists sources are empty")
    seen: set[str] = set()
    for i, row in enumerate(rows):
        missing = [c for c in REQUIRED_COLUMNS if c not in row]
        where = f"list {i} (query_id {row.get('query_id')!r})"
        if missing:
            raise ValueError(
                f"{where}: no column {', '.join(missing)}; a list has {REQUIRED_COLUMNS}"
            )
        for column in PER_DOC_COLUMNS:
            if column in row and len(row[column]) != len(row["docs"]):
                raise ValueError(
                    f"{where}: {len(row[column])} {column} for {len(row['docs'])} docs"
                )
        for label in row["labels"]:
            if isinstance(label, bool) or not isinstance(label, int) or label < 0:
                raise ValueError(f"{where}: label {label!r} is no non-negative integer")
        for k, doc in enumerate(row["docs"]):
            if not isinstance(doc, str) or not doc.strip():
                raise ValueError(f"{where}: document {k} is empty or not a string")
        if row["query_id"] in seen:
            raise ValueError(f"{where}: query_id repeated (two sources hold the same list?)")
        seen.add(row["query_id"])
        expected = join_instruction(row["instruction"], row["statement"])
        if "query" in row and row["query"] != expected:
            raise ValueError(
                f"{where}: its query is not instruction + '\\n' + statement, the query side "
                "a cross-encoder is served; rebuild the lists"
            )


def split_lists(
    rows: Sequence[Mapping[str, Any]], fraction: float, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(train, validation)`` by ``task_id``, by the rule of
    :func:`trainers.examples.split_validation` (``round(fraction * tasks)`` tasks held out,
    seeded, at least one each side): a task's lists of every dimension stay together."""
    from trainers.examples import split_validation

    keyed = [{"source_problem_id": r["task_id"], "index": str(i)} for i, r in enumerate(rows)]
    train, validation = split_validation(keyed, fraction, seed)
    return [dict(rows[int(k["index"])]) for k in train], [
        dict(rows[int(k["index"])]) for k in validation
    ]


def list_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Lists, tasks, documents, labels, dimensions and origins of ``rows``."""
    labels = Counter(str(x) for r in rows for x in r["labels"])
    origins = Counter(str(x) for r in rows for x in r.get("origins") or ())
    return {
        "lists": len(rows),
        "tasks": len({r["task_id"] for r in rows}),
        "docs": sum(len(r["docs"]) for r in rows),
        "labels": dict(sorted(labels.items())),
        "dimensions": dict(sorted(Counter(r["dimension"] for r in rows).items())),
        "origins": dict(sorted(origins.items())),
    }


# -- 2: loss rows -------------------------------------------------------------------------
def loss_rows(
    rows: Sequence[Mapping[str, Any]],
    config: SynhRankConfig,
    *,
    pool: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[Drop]]:
    """The rows ``config.loss`` trains on, each with the query side (``query``, and
    ``instruction`` / ``statement`` for the generative prompt) and the loss's columns, in
    order; and what was left out (a :class:`Drop` per list). ``pool``: the lists SRCL draws
    other tasks' documents from (default ``rows``)."""
    out: list[dict[str, Any]] = []
    drops: list[Drop] = []
    rng = random.Random(config.seed)
    others = _other_task_docs(pool if pool is not None else rows) if config.loss == "srcl" else []
    for row in rows:
        side = {
            "query_id": row["query_id"],
            "query": join_instruction(row["instruction"], row["statement"]),
            "instruction": row["instruction"],
            "statement": row["statement"],
        }
        docs, labels = list(row["docs"]), list(row["labels"])
        if config.loss == "lambda":
            if len(set(labels)) < 2:  # no pair to order: it would add nothing to the loss
                drops.append(Drop("loss_rows", "no ordered pair (one label only)", row["query_id"]))
                continue
            out.append({**side, "docs": docs, "labels": labels})
        elif config.loss == "infonce":
            top = max(labels)
            if top < 2:
                drops.append(Drop("loss_rows", "no label-2 document", row["query_id"]))
                continue
            negatives = [d for d, y in zip(docs, labels, strict=True) if y < top]
            n = config.infonce_negatives or len(negatives)
            if not negatives or len(negatives) < n:
                why = "fewer lower-labelled documents than infonce_negatives"
                drops.append(Drop("loss_rows", why if negatives else "no lower-labelled document",
                                  row["query_id"]))  # fmt: skip
                continue
            for doc, label in zip(docs, labels, strict=True):
                if label == top:
                    keep = sorted(rng.sample(range(len(negatives)), n))  # in the list's order
                    out.append({**side, "positive": doc,
                                **_numbered([negatives[k] for k in keep])})  # fmt: skip
        else:
            picked = _srcl_row(row, config.srcl_negatives, others, rng)
            if picked is None:
                drops.append(Drop("loss_rows", "no relevant document", row["query_id"]))
                continue
            positive, negatives = picked
            out.append({**side, "positive": positive, **_numbered(negatives)})
    if config.loss != "lambda":
        _check_uniform(out, config)
    return out, drops


def _numbered(negatives: Sequence[str]) -> dict[str, str]:
    return {f"negative_{k + 1}": doc for k, doc in enumerate(negatives)}


def _other_task_docs(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Every ``(task, document)`` of ``rows`` once, in task order: SRCL's irrelevant draws."""
    by_task: dict[str, dict[str, None]] = {}
    for row in rows:
        by_task.setdefault(row["task_id"], {}).update(dict.fromkeys(row["docs"]))
    return [(task, doc) for task, docs in sorted(by_task.items()) for doc in docs]


def _srcl_row(
    row: Mapping[str, Any], n: int, pool: Sequence[tuple[str, str]], rng: random.Random
) -> tuple[str, list[str]] | None:
    """SRCL's (positive, negatives) of one list [SynH-Rank §6.1]: any relevant document, and
    ``n`` irrelevant ones: the list's label-0 documents, then other tasks' documents (drawn
    from ``pool`` until enough; never the list's task nor one of its documents)."""
    docs, labels = list(row["docs"]), list(row["labels"])
    relevant = [d for d, y in zip(docs, labels, strict=True) if y >= 1]
    if not relevant:
        return None
    positive = rng.choice(relevant)
    own = [d for d, y in zip(docs, labels, strict=True) if y == 0]
    negatives = rng.sample(own, n) if len(own) > n else own
    seen, tried = set(docs), set()
    while len(negatives) < n:
        if len(tried) == len(pool):
            raise ValueError(
                f"SynhRankConfig.srcl_negatives={n}: list {row['query_id']!r} has "
                f"{len(own)} irrelevant documents and the other tasks too few more; add lists "
                "or lower srcl_negatives"
            )
        k = rng.randrange(len(pool))
        if k in tried:
            continue
        tried.add(k)
        task, doc = pool[k]
        if task != row["task_id"] and doc not in seen:
            negatives.append(doc)
            seen.add(doc)
    return positive, negatives


def _check_uniform(rows: Sequence[Mapping[str, Any]], config: SynhRankConfig) -> None:
    """InfoNCE takes one number of negatives per batch column: every row must have it."""
    counts = Counter(sum(k.startswith("negative_") for k in r) for r in rows)
    if len(counts) > 1:
        raise ValueError(
            f"SynhRankConfig.loss={config.loss!r}: the lists give rows with different numbers "
            f"of negatives ({dict(sorted(counts.items()))} rows by count); InfoNCE takes one "
            "count per batch: set SynhRankConfig.infonce_negatives (a seeded sample per row) "
            "or build lists of one shape"
        )


def loss_columns(config: SynhRankConfig, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The loss's columns after the query side, in the order the loss reads them."""
    if config.loss == "lambda":
        return ["docs", "labels"]
    n = sum(k.startswith("negative_") for k in rows[0]) if rows else 0
    return ["positive", *(f"negative_{k + 1}" for k in range(n))]


def drop_counts(drops: Sequence[Drop]) -> list[dict[str, Any]]:
    """Drops counted by (stage, reason)."""
    counts = Counter((d.stage, d.reason) for d in drops)
    return [{"stage": s, "reason": r, "count": c} for (s, r), c in sorted(counts.items())]


# -- 3: models ----------------------------------------------------------------------------
def model_kind(config: SynhRankConfig) -> str:
    """``cross-encoder`` or ``generative``: ``config.model_type``, or (auto) the bundled
    reranker's backend, else generative for a ``*ForCausalLM`` / ``*LMHeadModel`` config."""
    if config.model_type != "auto":
        return config.model_type
    from reranker.generative import GenerativeReranker
    from reranker.registry import bundled

    entry = bundled(config.model_name_or_path)
    if entry is not None:
        return entry.backend
    import transformers

    model_config = transformers.AutoConfig.from_pretrained(
        config.model_name_or_path,
        gguf_file=config.gguf_file,
        trust_remote_code=config.trust_remote_code,
    )
    return "generative" if GenerativeReranker.accepts(model_config) else "cross-encoder"


@dataclass
class Backbone:
    """The model a run trains: its kind, the object the Trainer trains (a ``CrossEncoder``, a
    causal LM or a PEFT model over one), the tokenizer, the yes/no prompt (generative) and the
    input length."""

    kind: str
    model: Any
    tokenizer: Any
    prompt: Any
    max_length: int

    def reranker(self, model: Any = None) -> Any:
        """The reranker class that serves this kind, on ``model`` (default: the trained one)."""
        model = self.model if model is None else model
        if self.kind == "cross-encoder":
            from reranker.cross_encoder import CrossEncoderReranker

            return CrossEncoderReranker(model, max_length=self.max_length)
        from reranker.generative import GenerativeReranker

        device = str(next(model.parameters()).device)
        return GenerativeReranker(model, self.tokenizer, device=device, max_length=self.max_length)


def load_backbone(config: SynhRankConfig, kind: str) -> Backbone:
    """The base model of the run (float32 master weights; a LoRA run's frozen base as
    ``coreb train reranker`` loads it), LoRA applied where asked."""
    max_length = config.max_length_for(kind)
    if kind == "cross-encoder":
        if config.finetuning == "lora":
            raise ValueError(
                f"SynhRankConfig.finetuning='lora': {config.model_name_or_path} is a "
                "cross-encoder; LoRA is for generative rerankers, use full"
            )
        from sentence_transformers.cross_encoder import CrossEncoder

        from reranker.registry import bundled

        entry = bundled(config.model_name_or_path)
        path = str(entry.path()) if entry is not None else config.model_name_or_path
        model = CrossEncoder(
            path, num_labels=1, max_length=max_length, trust_remote_code=config.trust_remote_code
        )
        # the document is truncated, never the query: CrossEncoderReranker's inputs
        model[0].processing_kwargs = {"text": {"truncation": "only_second"}}
        return Backbone(kind, model, model.tokenizer, None, max_length)
    import torch

    from reranker.prompt import YesNoPrompt

    lora = config.finetuning == "lora"
    model, tokenizer = load_base(config, dtype=None if lora else torch.float32)
    prompt = YesNoPrompt.for_tokenizer(tokenizer, getattr(model.config, "model_type", None))
    if tokenizer.pad_token_id is None:  # left padding needs a pad id; the prompt's is eos
        tokenizer.pad_token_id = prompt.pad_id
    if lora:
        import peft

        model = peft.get_peft_model(model, lora_config(config))
        if config.activation_checkpointing:  # recomputed layers need a grad path from the input
            model.enable_input_require_grads()
    return Backbone(kind, model, tokenizer, prompt, max_length)


def cut_statements(rows: Sequence[dict[str, Any]], tokenizer: Any, budget: int | None) -> int:
    """Each row's statement cut to ``budget`` tokens and its query joined again, in place, as
    ``coreb qualcode evaluate`` cuts a statement (``RerankerScorer``); returns how many were
    cut."""
    from coreb_toolkit.benchmark.qualcode_eval import cut_query

    if budget is None:
        return 0
    cut: dict[str, str] = {}
    n = 0
    for row in rows:
        text = row["statement"]
        if text not in cut:
            cut[text] = cut_query(tokenizer, text, budget)
        if cut[text] != text:
            n += 1
            row["statement"] = cut[text]
            if "query" in row:
                row["query"] = join_instruction(row["instruction"], cut[text])
    return n


def check_query_room(backbone: Backbone, rows: Sequence[Mapping[str, Any]]) -> None:
    """``ValueError`` naming the first list whose query side leaves no room for a document
    within ``max_length`` (inference would refuse it too)."""
    if backbone.kind == "cross-encoder":
        tok = backbone.tokenizer
        special = tok.num_special_tokens_to_add(pair=True)
        queries = list(
            dict.fromkeys(join_instruction(r["instruction"], r["statement"]) for r in rows)
        )
        ids = tok(queries, add_special_tokens=False, verbose=False)["input_ids"]
        length = {q: len(x) + special for q, x in zip(queries, ids, strict=True)}
        for row in rows:
            n = length[join_instruction(row["instruction"], row["statement"])]
            if n >= backbone.max_length:
                raise ValueError(
                    f"list {row['query_id']!r}: its query takes {n} tokens with the "
                    f"instruction, no room for a document within max_length="
                    f"{backbone.max_length}; raise SynhRankConfig.max_length"
                )
        return
    for row in rows:
        try:
            backbone.prompt.encode(
                [(row["statement"], "x")], row["instruction"], backbone.max_length
            )
        except ValueError as err:
            raise ValueError(
                f"list {row['query_id']!r}: {err} (SynhRankConfig.max_length)"
            ) from None


# -- 5: validation ------------------------------------------------------------------------
def _ranks(scores: Sequence[float]) -> list[float]:
    """Finite stand-ins for ``scores`` (no NaN) in the same order: each score's rank among the
    distinct ones (0 the lowest, -inf and inf included), as :mod:`eval_metrics` takes finite
    scores only."""
    at = {value: float(k) for k, value in enumerate(sorted(set(scores)))}
    return [at[value] for value in scores]


def list_ndcgs(
    labels: Sequence[Sequence[int]], scores: Sequence[Sequence[float]]
) -> list[float | None]:
    """nDCG of every list at full depth, ``None`` for a list with no relevant document, by
    :func:`eval_metrics.evaluate_retrieval` (pytrec_eval's ``ndcg_cut`` at the longest list's
    length, discounts ``log2(1 + rank)``) with the gains ``2^rel - 1`` as the grades. Ties
    break pessimistically: equal scores rank the less relevant document first (trec_eval
    orders ties by document id descending, and the ids are given in that order), so a
    constant scorer is no perfect one; a NaN score ranks last (tied with -inf)."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for k, (ys, ss) in enumerate(zip(labels, scores, strict=True)):
        if not any(y > 0 for y in ys):
            continue
        most_relevant_first = sorted(range(len(ys)), key=lambda i: -ys[i])
        width = len(str(len(ys)))
        doc = {i: f"d{p:0{width}d}" for p, i in enumerate(most_relevant_first)}
        values = _ranks([-math.inf if math.isnan(s) else s for s in ss])
        qrels[str(k)] = {doc[i]: 2 ** int(y) - 1 for i, y in enumerate(ys)}
        run[str(k)] = {doc[i]: v for i, v in enumerate(values)}
    if not qrels:
        return [None] * len(labels)
    depth = max(len(ys) for ys in labels)
    per_query = evaluate_retrieval(
        qrels, run, k_values={"ndcg": [depth]}, no_positive_policy="exclude", relevance_level=1
    ).per_query
    key = f"ndcg_at_{depth}"
    return [per_query[str(k)][key] if str(k) in per_query else None for k in range(len(labels))]


def list_ndcg(labels: Sequence[int], scores: Sequence[float]) -> float | None:
    """:func:`list_ndcgs` of one list."""
    return list_ndcgs([labels], [scores])[0]


def ordered_pairs(labels: Sequence[int], scores: Sequence[float]) -> tuple[int, int]:
    """``(in order, pairs)``: of the pairs with ``label_i > label_j``, those scored
    ``s_i > s_j``, counted by :func:`eval_metrics.preference.preference_wins` as QualCode's QPA
    counts its triplets (a tie is not in order); a pair with a NaN score is not in order
    either."""
    n = len(labels)
    pairs = [(i, j) for i in range(n) for j in range(n) if labels[i] > labels[j]]
    scored = [(i, j) for i, j in pairs if not (math.isnan(scores[i]) or math.isnan(scores[j]))]
    if not scored:
        return 0, len(pairs)
    values = _ranks([-math.inf if math.isnan(s) else s for s in scores])
    wins = preference_wins([values[i] for i, _ in scored], [values[j] for _, j in scored])
    return sum(wins), len(pairs)


def list_metrics(
    rows: Sequence[Mapping[str, Any]], scores: Sequence[Sequence[float]]
) -> dict[str, dict[str, Any]]:
    """Per dimension and over ``all``: lists, mean nDCG of the lists (those with a relevant
    document), and the fraction of ordered pairs (label i > label j) scored in order."""
    groups: dict[str, list[int]] = {"all": list(range(len(rows)))}
    for k, row in enumerate(rows):
        groups.setdefault(row["dimension"], []).append(k)
    ndcg = list_ndcgs([r["labels"] for r in rows], scores)
    counted = [ordered_pairs(r["labels"], s) for r, s in zip(rows, scores, strict=True)]
    out: dict[str, dict[str, Any]] = {}
    for name, idx in groups.items():
        ndcgs = [ndcg[k] for k in idx if ndcg[k] is not None]
        pairs = sum(counted[k][1] for k in idx)
        out[name] = {
            "lists": len(idx),
            "ndcg": sum(ndcgs) / len(ndcgs) if ndcgs else float("nan"),
            "ordered_pairs": pairs,
            "pair_accuracy": sum(counted[k][0] for k in idx) / pairs if pairs else float("nan"),
        }
    return out


def score_lists(reranker: Any, rows: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    """Every list's document scores by ``reranker`` (its statement as the query, its
    instruction beside it, as QualCode's evaluation passes them; lists of one instruction in
    one call)."""
    import torch

    out: list[list[float]] = [[] for _ in rows]
    with torch.no_grad():
        for instruction, idx in by_instruction(r["instruction"] for r in rows).items():
            pairs = [(rows[k]["statement"], d) for k in idx for d in rows[k]["docs"]]
            scores = reranker.score(pairs, instruction=instruction)
            at = 0
            for k in idx:
                n = len(rows[k]["docs"])
                out[k] = scores[at : at + n]
                at += n
    return out


def write_list_validation(
    folder: Path,
    rows: Sequence[Mapping[str, Any]],
    before: Sequence[Sequence[float]],
    after: Sequence[Sequence[float]],
) -> dict[str, Any]:
    """``validation_scores.jsonl`` (every held-out list: its ids, labels, scores before and
    after) and ``validation_metrics.json``; returns the metrics."""
    metrics = {"before": list_metrics(rows, before), "after": list_metrics(rows, after)}
    lines = []
    for row, b, a in zip(rows, before, after, strict=True):
        line = {k: row.get(k) for k in ("query_id", "task_id", "dimension", "doc_ids")}
        line.update(labels=list(row["labels"]), before=list(b), after=list(a))
        lines.append(line)
    write_jsonl(folder / VALIDATION_SCORES, lines)
    write_json(folder / VALIDATION_METRICS, metrics)
    return metrics


# -- the run ------------------------------------------------------------------------------
@dataclass
class RunData:
    """A run's data: the loss rows and held-out lists with their report (a
    :class:`~trainers.common.TrainingData`, fingerprinted for resumes), and the
    held-out lists' loss rows (for an ``eval_strategy``, else ``None``)."""

    data: TrainingData
    eval_rows: list[dict[str, Any]] | None
    columns: list[str]


def prepare_data(config: SynhRankConfig, kind: str, lists: Any = None) -> RunData:
    """Lists read, checked and split, and the loss rows of the training lists; the report says
    where the lists came from, what each split holds and what the loss rows left out."""
    rows, sources = read_training_lists(config, lists)
    train, validation = split_lists(rows, config.validation_fraction, config.seed)
    train_rows, drops = loss_rows(train, config)
    eval_rows = None
    check_eval_split(config, validation)
    if config.eval_strategy != "no":
        eval_rows, eval_drops = loss_rows(validation, config, pool=rows)
        drops += eval_drops
    if not train_rows:
        raise ValueError(
            f"no training row: loss={config.loss!r} found none in the {len(train)} training "
            f"lists ({drop_counts(drops)})"
        )
    columns = loss_columns(config, train_rows)
    report = {
        "sources": sources,
        "loss": config.loss,
        "model_kind": kind,
        "max_length": config.max_length_for(kind),
        "train": list_counts(train),
        "validation": list_counts(validation),
        "validation_tasks": sorted({r["task_id"] for r in validation}),
        "loss_rows": {"train": len(train_rows), "validation": len(eval_rows or ())},
        "loss_columns": [
            *(["query"] if kind == "cross-encoder" else ["instruction", "statement"]),
            *columns,
        ],
        "drops": drop_counts(drops),
    }
    return RunData(TrainingData(train_rows, validation, report, {}), eval_rows, columns)


def run_extras(folder: Path, config: SynhRankConfig, data: TrainingData) -> None:
    """The files beside a saved model: a LoRA adapter's serving manifest
    (:func:`~trainers.common.checkpoint_extras`), and for every run the config, the
    data report and fingerprint."""
    if config.finetuning == "lora":
        checkpoint_extras(folder, config, data, config.model_name_or_path)
    else:
        write_run_records(folder, config, data)


def make_trainer(
    config: SynhRankConfig, backbone: Backbone, run: RunData, callbacks: Sequence[Any]
) -> Any:
    """``CrossEncoderTrainer`` (cross-encoders) or :class:`ListwiseTrainer` (generative), on
    datasets narrowed to the loss's columns (the query side first), with the extras callback
    that completes every checkpoint; both with the run's checks
    (:class:`~trainers.run_checks.GuardedTrainer`)."""
    import datasets

    side = ["query"] if backbone.kind == "cross-encoder" else ["instruction", "statement"]
    keep = [*side, *run.columns]

    def dataset(rows: Sequence[Mapping[str, Any]]) -> Any:
        return datasets.Dataset.from_list([{k: r[k] for k in keep} for r in rows])

    train_set = dataset(run.data.train)
    eval_set = dataset(run.eval_rows) if run.eval_rows else None
    extras = extras_callback(config, run.data, lambda f: run_extras(f, config, run.data))
    if backbone.kind == "cross-encoder":
        from sentence_transformers.cross_encoder import CrossEncoderTrainer

        class ListTrainer(GuardedTrainer, CrossEncoderTrainer):
            """sentence-transformers' trainer without its model-card callback: the callback
            tokenizes single columns, which the pair-only truncation (the document cut, never
            the query, as inference cuts) refuses; the cards are model_cards/' job."""

            def add_model_card_callback(self, default_args_dict: dict[str, Any]) -> None:
                return None

        loss = build_loss(config, backbone.model)
        return ListTrainer(
            model=backbone.model,
            args=config,
            train_dataset=train_set,
            eval_dataset=eval_set,
            loss=loss,
            callbacks=[extras, *callbacks],
            loss_name=f"{config.loss} ({type(loss).__name__})",
        )
    scorer = YesNoScorer(backbone.model, backbone.prompt, backbone.max_length)
    loss = build_loss(config, scorer)
    return ListwiseTrainer(
        model=backbone.model,
        args=config,
        train_dataset=train_set,
        eval_dataset=eval_set,
        processing_class=backbone.tokenizer,
        data_collator=ListCollator(run.columns),
        callbacks=[extras, *callbacks],
        loss=loss,
        loss_name=f"{config.loss} ({type(loss).__name__})",
        prompt=backbone.prompt,
        max_length=backbone.max_length,
    )


def train_synh_rank(
    config: SynhRankConfig, *, lists: Any = None, callbacks: Sequence[Any] = ()
) -> TrainResult:
    """Train, save and validate a SynH-Rank (or baseline) reranker into ``config.output_dir``.

    ``lists``: the lists (a ``datasets.Dataset`` or dicts with the lists columns) instead of
    ``config.train_lists``. ``callbacks``: further ``transformers.TrainerCallback`` objects,
    after the one that completes every checkpoint. Returns the counts (lists), the step
    reached and the steps trained (:class:`~trainers.common.TrainResult`), the wall
    time and the validation metrics before and after (by dimension and ``all``, as in
    ``validation_metrics.json``).
    """
    from accelerate import PartialState
    from transformers import set_seed

    state = PartialState()
    set_seed(config.seed)
    kind = model_kind(config)
    run = prepare_data(config, kind, lists)
    data = run.data
    logger.info(
        "%s: %d training rows (%s loss), %d validation lists (%s)",
        kind, len(data.train), config.loss, len(data.validation), data.fingerprint[:12],
    )  # fmt: skip
    backbone = load_backbone(config, kind)
    budget = config.query_budget_for(kind)  # training queries are those evaluation scores
    data.report["query_budget_tokens"] = budget
    data.report["statements_cut"] = {
        part: cut_statements(rows, backbone.tokenizer, budget)
        for part, rows in (("train", data.train), ("validation", data.validation),
                           ("eval_rows", run.eval_rows or []))
    }  # fmt: skip
    if config.resume_from_checkpoint:  # the data as trained on: statements cut
        check_resumed_data(
            Path(config.resume_from_checkpoint), data, "train_lists, loss, split and seed"
        )
    check_query_room(backbone, [*data.train, *data.validation])
    before: list[list[float]] = []
    if data.validation and state.is_main_process:  # only the main process writes them
        logger.info("scoring the %d held-out lists before training", len(data.validation))
        before = score_lists(backbone.reranker(), data.validation)
    guard = run_guard()
    trainer = make_trainer(config, backbone, run, [guard, *callbacks])
    result = train_and_save(trainer, config, data, guard)
    output = result.output_dir
    if state.is_main_process:
        write_run_end(config, trainer, result, lambda folder: run_extras(folder, config, data))
        unwrapped = trainer.accelerator.unwrap_model(trainer.model)
        if data.validation:
            logger.info("scoring the %d held-out lists after training", len(data.validation))
            after = score_lists(backbone.reranker(unwrapped), data.validation)
            metrics = write_list_validation(output, data.validation, before, after)
            result.before, result.after = metrics["before"], metrics["after"]
        if config.save_merged_model:
            save_merged(trainer, backbone.tokenizer, output / "merged")
    state.wait_for_everyone()
    return result


__all__ = [
    "REQUIRED_COLUMNS",
    "Backbone",
    "RunData",
    "check_lists",
    "check_query_room",
    "cut_statements",
    "drop_counts",
    "list_counts",
    "list_metrics",
    "list_ndcg",
    "list_ndcgs",
    "load_backbone",
    "loss_columns",
    "loss_rows",
    "make_trainer",
    "model_kind",
    "ordered_pairs",
    "prepare_data",
    "read_training_lists",
    "run_extras",
    "score_lists",
    "split_lists",
    "train_synh_rank",
    "write_list_validation",
]
