"""The Markdown sections of a model card (:mod:`model_cards.model_card`): results tables, the
training recipe, intended use and limitations, provenance. Each takes the card data (plain
data) and returns Markdown; every figure is read from the results or run records given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coreb_toolkit.benchmark.published import (
    canonical_release,
    is_published_release,
    published_source,
    rank_among_published,
)
from coreb_toolkit.benchmark.report import (
    c2t_canonical_note,
    mteb_v1_table,
    rerank_note,
    untrained_note,
)
from coreb_toolkit.hub_access import is_hub_id
from coreb_toolkit.untrusted import markdown_code, markdown_fence, markdown_text
from eval_metrics.aggregate import TABLE_COLUMNS
from model_cards.dataset_card import markdown_table

if TYPE_CHECKING:
    from model_cards.model_card import CardEvaluation, ModelCardInfo, TrainingRecord

#: the options of a run shown in the recipe's table (every option is in the JSON below it)
RECIPE_KEYS = (
    "model_name_or_path", "model_type", "finetuning", "loss", "learning_rate",
    "lr_scheduler_type", "warmup_steps", "warmup_ratio", "num_train_epochs", "max_steps",
    "per_device_train_batch_size", "gradient_accumulation_steps", "weight_decay", "optim",
    "adam_beta1", "adam_beta2", "adam_epsilon", "max_length", "bf16", "fp16",
    "gradient_checkpointing", "seed", "lora_r", "lora_alpha", "lora_dropout",
    "lora_target_modules", "positive_copies", "easy_negatives", "hard_negatives",
    "hard_negative_miner", "validation_fraction", "train_sources", "eval_sources", "train_lists",
)  # fmt: skip


def _f(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "-"
    return str(value)


def _signed(value: Any) -> str:
    return f"{value:+.4f}" if isinstance(value, float) else _f(value)


def shown_name(name: object) -> str:
    """A model name as a card shows it: a local folder by its folder name only (a card never
    carries this machine's paths), anything else as it is."""
    path = Path(str(name)).expanduser()
    if path.is_absolute() or path.exists():
        return f"{path.name} (a local folder)"
    return str(name)


def _where(path: str) -> str:
    """A results path as the card shows it: its last three parts (model/release/results.json),
    never the machine's absolute path."""
    return "/".join(Path(path).parts[-3:])


def _details(summary: str, body: Any) -> str:
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return f"<details><summary>{summary}</summary>\n\n{markdown_fence(text, 'json')}\n\n</details>"


def _dataset_line(ev: CardEvaluation) -> str:
    link = markdown_code(ev.dataset_id)
    if is_hub_id(ev.dataset_id):
        link = f"[{link}](https://huggingface.co/datasets/{ev.dataset_id})"
    rev = (
        f"revision {markdown_code(ev.dataset_revision)}"
        if ev.dataset_revision
        else "no Hub revision given"
    )
    built = (
        f"; evaluated on a local build with fingerprint {markdown_code(ev.fingerprint)}"
        if ev.fingerprint
        else ""
    )
    return f"Dataset {link}, split {markdown_code(ev.split)} ({rev}{built})."


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


def _policy(res: Mapping[str, Any]) -> str:
    policy = res["no_positive_policy"]
    if policy == "zero":
        return (
            "`c2t_match` negative pairs (no relevance-2 text) score 0 and count "
            "(`no_positive_policy=zero`, as the official runner; reproduces the published numbers)"
        )
    return (
        "`c2t_match` negative pairs (no relevance-2 text) are left out of every average "
        "(`no_positive_policy=exclude`, the paper's A.3 reading)"
    )


def first_stage_name(res: Mapping[str, Any]) -> str:
    """The first-stage retriever of a CoREB results dict (a reranked one names its pipeline
    ``BM25 + minilm`` as the model, and its first stage apart)."""
    return str((res.get("first_stage") or {}).get("model") or res["model"].get("name"))


def published_standing(release: str, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """One sentence: where the Overall nDCG@10 in ``rows`` would rank among the models the
    CoREB paper reports on ``release`` (None for a release it does not report)."""
    overall = next((r for r in rows if r["level"] != "subtask" and r["name"] == "Overall"), None)
    if overall is None or not is_published_release(release):
        return None
    score = overall["ndcg_at_10"]
    rank, count = rank_among_published(release, score)
    table = published_source()["tables"][canonical_release(release)]
    return (
        f"Beside the paper: an Overall nDCG@10 of {score:.3f} would rank {rank} of {count + 1} "
        f"among the {count} models the CoREB paper reports on {release} ({table}; their "
        "figures are the paper's, not recomputed here)."
    )


def coreb_sections(ev: CardEvaluation) -> list[str]:
    """The CoREB results of one evaluation: protocol, per main task / Overall, per subtask, and
    for a reranked run the first stage and the gain."""
    res = ev.results
    rows = res["rows"]
    columns = [c for c in TABLE_COLUMNS if any(c in r for r in rows)]
    labels = [metric_label(c) for c in columns]
    stage = f"First stage {markdown_code(first_stage_name(res))} (top {res['top_k']})"
    if "reranker" in res:
        stage += (
            f", reranked by {markdown_code(res['reranker'].get('name'))} "
            f"({markdown_text(res['reranker'].get('backend'))}) "
            f"on its top {res['rerank_top_k']}"
        )
    parts = [
        f"### CoREB, {ev.split}",
        _dataset_line(ev)
        + f" {stage}. Relevance level {res['relevance_level']}; {_policy(res)}; "
        + c2t_canonical_note(res.get("c2t_canonical_corpus", "abbreviated"))
        + ".",
        markdown_table(
            ["", "queries", *labels],
            [
                (
                    f"**{markdown_text(r['name'])}**",
                    r["n_queries"],
                    *(_f(r.get(c)) for c in columns),
                )
                for r in rows
                if r["level"] != "subtask"
            ],
        ),
        "Per subtask (`HN-intrusion`: among queries with a positive and a hard negative in the "
        "top 10, the share where a hard negative ranks above the best positive):",
        markdown_table(
            ["subtask", "queries", *labels, "HN-intrusion"],
            [
                (
                    markdown_code(r["name"], table=True),
                    r["n_queries"],
                    *(_f(r.get(c)) for c in columns),
                    _f(r.get("hard_negative_intrusion_rate")),
                )
                for r in rows
                if r["level"] == "subtask"
            ],
        ),
    ]
    standing = published_standing(ev.split, rows)
    if standing:
        parts.insert(3, standing)
    if "reranker" in res and res.get("first_stage_rows"):
        first = {r["name"]: r for r in res["first_stage_rows"]}
        delta = {r["name"]: r for r in res.get("delta") or []}
        parts.append(
            "nDCG@10 of the first stage and after reranking:\n\n"
            + markdown_table(
                ["", "first stage", "reranked", "Δ"],
                [
                    (
                        f"**{markdown_text(r['name'])}**",
                        _f(first.get(r["name"], {}).get("ndcg_at_10")),
                        _f(r.get("ndcg_at_10")),
                        _signed(delta.get(r["name"], {}).get("ndcg_at_10")),
                    )
                    for r in rows
                    if r["level"] != "subtask"
                ],
            )
        )
        if res.get("rerank_note"):
            # recomputed from the figures, never the file's text (a results file is a stranger's)
            parts.append(rerank_note(res["rerank_top_k"], res["top_k"]))
    mteb = mteb_v1_table([res], heading="####")
    if mteb:
        parts.append("\n".join(mteb).strip())
    return parts


def qualcode_sections(ev: CardEvaluation) -> list[str]:
    """The QualCode results of one evaluation: QPA per dimension, MCA per condition count."""
    res = ev.results
    parts = ["### QualCode", _dataset_line(ev) + " Ties count as losses (SynH-Rank §3)."]
    if res["qualcode"]:
        parts.append(
            markdown_table(
                ["dimension", "pairs", "QPA", "ties", "retrieval MRR@10", "retrieval nDCG@10"],
                [
                    (
                        d,
                        f["n_pairs"],
                        _f(f.get("qpa")),
                        _f(f.get("ties")),
                        _f(f.get("retrieval_mrr_at_10")),
                        _f(f.get("retrieval_ndcg_at_10")),
                    )
                    for d, f in res["qualcode"].items()
                ],
            )
        )
    if res["mc"]:
        parts.append(
            "MC-QualCode (MCA per number of conditions):\n\n"
            + markdown_table(
                ["k", "triplets", "MCA", "by combination"],
                [
                    (
                        k.removeprefix("k="),
                        f["n_triplets"],
                        _f(f.get("mca")),
                        "; ".join(
                            f"{c}: {_f(v.get('mca'))} ({v.get('n')})"
                            for c, v in (f.get("by_combination") or {}).items()
                        )
                        or "-",
                    )
                    for k, f in res["mc"].items()
                ],
            )
        )
    return parts


_LABELS = {"ndcg": "nDCG", "map": "MAP", "recall": "Recall", "mrr": "MRR", "precision": "P"}


def metric_label(key: str) -> str:
    """``ndcg_at_10`` -> ``nDCG@10``, ``retrieval_mrr_at_10`` -> ``retrieval MRR@10``,
    ``qpa`` -> ``QPA``."""
    match = re.fullmatch(r"(retrieval_)?([a-z]+)_at_(\d+)", key)
    if match:
        prefix = "retrieval " if match.group(1) else ""
        return f"{prefix}{_LABELS.get(match.group(2), match.group(2))}@{match.group(3)}"
    return key.upper()


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def _validation(validation: Mapping[str, Any]) -> str:
    before, after = {}, {}
    _flat("", validation.get("before") or {}, before)
    _flat("", validation.get("after") or {}, after)
    keys = list(dict.fromkeys([*before, *after]))
    if not keys:
        return ""
    return (
        "Held-out validation, scored before and after training by the serving reranker "
        "(`validation_metrics.json`):\n\n"
        + markdown_table(
            ["metric", "before", "after"], [(k, _f(before.get(k)), _f(after.get(k))) for k in keys]
        )
    )


def _hardware(run_info: Mapping[str, Any] | None, log: Sequence[Mapping[str, Any]]) -> str:
    if not run_info:
        runtime = next((e["train_runtime"] for e in reversed(log) if "train_runtime" in e), None)
        seen = f" (the trainer logged train_runtime {runtime:.1f} s)" if runtime else ""
        return f"Hardware and wall time: not recorded (no `run_info.json` in the checkpoint){seen}."
    hw = run_info.get("hardware", {})
    devices = ", ".join(hw.get("devices") or []) or hw.get("cpu") or "-"
    return markdown_table(
        ["", ""],
        [
            ("wall time of training", f"{wall:.1f} s" if isinstance(
                wall := run_info.get("wall_time_s"), (int, float)) else "-"),
            ("steps", run_info.get("global_step")),
            ("training / validation examples",
             f"{run_info.get('train_examples')} / {run_info.get('validation_examples')}"),
            ("accelerator", f"{hw.get('accelerator')} x {hw.get('num_processes')} process(es)"
                            + (f" ({dist})" if (dist := hw.get("distributed_type")) not in
                               (None, "NO") else "")),
            ("devices", devices),
            ("precision", hw.get("precision")),
            ("CPU", f"{hw.get('cpu')} ({hw.get('cpu_count')} cores, "
                    f"{hw.get('torch_threads')} torch threads)"),
            ("software", f"Python {hw.get('python')}, torch {hw.get('torch')}, "
                         f"{hw.get('platform')}"),
            ("finished", run_info.get("finished_at")),
        ],
    )  # fmt: skip


def training_section(record: TrainingRecord | None) -> str:
    """The training recipe of a checkpoint: options, data, disjointness, validation, hardware
    and wall time, curves; for a card without a checkpoint, a sentence saying so."""
    if record is None:
        return (
            "No training run records were given: this card documents an evaluation. (For a "
            "checkpoint trained by coreb-toolkit, `coreb card model RESULTS --checkpoint DIR` adds "
            "its recipe, data, disjointness report, hardware and wall time.)"
        )
    trainer = {
        "coreb-reranker": "`coreb train reranker` (trainers/coreb_reranker_trainer.py, CoREB §4.3)",
        "synh-rank": "`coreb train synh-rank` (trainers/synh_rank_trainer.py, SynH-Rank §4)",
    }[record.trainer]
    config = record.config
    parts = [
        f"Trained by {trainer} from {markdown_code(shown_name(record.base_model))}; run folder "
        f"{markdown_code(Path(record.folder).name)}.",
        "The recipe (the options the run used, from `training_config.json`):\n\n"
        + markdown_table(
            ["option", "value"],
            [
                (
                    markdown_code(k, table=True),
                    markdown_code(json.dumps(config[k], default=str), table=True),
                )
                for k in RECIPE_KEYS
                if k in config
            ],
        ),
        _details("every option of the run (training_config.json)", config),
        "**Data** (`data_report.json`):",
        _answers(record.data_report),
        _scalars(record.data_report),
        _details("the whole data report", record.data_report),
    ]
    if record.disjointness:
        parts += [
            "**Problem-level disjointness** from the evaluation data (`disjointness_report.json`):",
            _scalars(record.disjointness),
            _details("the whole disjointness report", record.disjointness),
        ]
    else:
        parts.append(
            "**Problem-level disjointness**: the run wrote no disjointness report ("
            + ("SynH-Rank's lists come with their own problem split, which the QualCode build "
               "excludes; see the data report" if record.trainer == "synh-rank"
               else "no evaluation sources were given to check against")
            + ")."
        )  # fmt: skip
    if record.validation:
        parts.append(_validation(record.validation))
    parts += [
        "**Hardware and wall time** (`run_info.json`):",
        _hardware(record.run_info, record.log_history),
    ]
    if record.curves:
        parts.append("![training curves](training_curves.png)")
    return "\n\n".join(p for p in parts if p)


def _answers(report: Mapping[str, Any]) -> str:
    """The yes/no balance of the training and validation examples (the base rate a model can
    learn without learning relevance), where the report has it."""
    parts = []
    for split in ("train", "validation"):
        answers = (
            (report.get(split) or {}).get("by_answer") if isinstance(report, Mapping) else None
        )
        if isinstance(answers, Mapping) and answers:
            yes, total = (
                answers.get("yes", 0),
                sum(v for v in answers.values() if isinstance(v, int)),
            )
            if isinstance(yes, int) and total:
                parts.append(
                    f"{split}: {yes:,} yes / {total - yes:,} no ({100 * yes / total:.1f}% yes)"
                )
    return ("Answers: " + "; ".join(parts) + ".") if parts else ""


def _scalars(report: Mapping[str, Any]) -> str:
    rows = [
        (markdown_code(k, table=True), markdown_text(_f(v)))
        for k, v in report.items()
        if isinstance(v, (int, float, str, bool))
    ]
    return markdown_table(["field", "value"], rows) if rows else ""


# --------------------------------------------------------------------------------------------
# Intended use, limitations, provenance
# --------------------------------------------------------------------------------------------

_USE = {
    "reranker": "second-stage reranking of code-search candidates (text-to-code, code-to-text, "
    "code-to-code; quality-aware preferences where QualCode results are shown) with the task "
    "instructions of coreb-toolkit's `reranker/instructions.py`",
    "embedder": "first-stage dense retrieval for code search (cosine similarity of embeddings)",
    "lexical": "a lexical first-stage baseline for code search (BM25 has no weights: this card "
    "documents an evaluation, not a model to load)",
    "retriever": "first-stage retrieval for code search",
}


def limitations(info: ModelCardInfo) -> str:
    """Intended use, then every protocol choice and caveat the figures depend on."""
    lines = [f"**Intended use**: {_USE[info.kind]}. The figures hold for the protocol below and "
             "the data named; they are not a general quality claim."]  # fmt: skip
    if info.untrained_head:
        lines.append(untrained_note(info.subject) + " Do not use it to rank anything.")
    from model_cards.model_card import PAPER_RELEASES

    for ev in info.evaluations:
        res = ev.results
        if ev.kind == "coreb":
            view = res.get("c2t_canonical_corpus", "abbreviated")
            lines += [
                f"CoREB: {_policy(res)}.",
                f"CoREB: {c2t_canonical_note(view)}; with the other view "
                "(`--c2t-canonical-corpus`) the `c2t_canonical_retro_*` figures differ.",
                f"CoREB: relevance level {res['relevance_level']}: binary measures count only "
                "relevance-2 documents and hard negatives earn no nDCG gain. MTEB's CoREB tasks "
                "pool each main task, leave out queries without a positive and keep the c2c "
                "anchor, so their numbers are not these.",
            ]
            if res.get("rerank_note"):
                lines.append(f"CoREB reranking: {rerank_note(res['rerank_top_k'], res['top_k'])}")
            if ev.split not in PAPER_RELEASES:
                lines.append(
                    f"CoREB {markdown_text(ev.split)} is not one of the paper's releases "
                    "(v202602, v202603): "
                    "its figures are not comparable with the paper's tables."
                )
        else:
            lines.append(
                "QualCode: QPA / MCA measure preference between two correct solutions of one "
                "problem (faster, leaner, fewer smells); a tie is a loss; Python only."
            )
    lines = list(dict.fromkeys(lines))  # one line per fact, however many releases share it
    subject = info.subject
    if subject.get("max_length") or subject.get("max_seq_length"):
        cut = subject.get("max_length") or subject.get("max_seq_length")
        lines.append(f"Inputs are truncated at {cut} tokens (the model's `max_length` as run).")
    return "\n".join(f"- {line}" for line in lines)


def provenance(info: ModelCardInfo) -> str:
    """Where each figure came from: the results files, their timing and library versions."""
    lines = []
    for ev in info.evaluations:
        res = ev.results
        seconds = res.get("retrieval_seconds", res.get("seconds"))
        timing = f"{seconds:.1f} s" if isinstance(seconds, (int, float)) else "-"
        if res.get("rerank_seconds") is not None:
            timing += f" + {res['rerank_seconds']:.1f} s reranking"
        versions = ", ".join(
            f"{markdown_text(k)} {markdown_text(v)}"
            for k, v in (res.get("versions") or {}).items()
            if v
        )
        lines.append(
            f"- {markdown_code(_where(ev.path))} ({ev.kind}, schema version "
            f"{res.get('schema_version')}): "
            f"{timing}; {versions or 'no versions recorded'}."
        )
    lines += [f"- {note}." for note in info.notes]
    lines.append(
        "- `.eval_results/*.yaml` hold one value per task of the benchmark's `eval.yaml` "
        "(CoREB nDCG@10 per subtask and release, QualCode QPA per dimension, MCA per k); their "
        "`notes` name the metric and the protocol options."
    )
    return "\n".join(lines)


__all__ = [
    "coreb_sections",
    "first_stage_name",
    "limitations",
    "metric_label",
    "provenance",
    "qualcode_sections",
    "training_section",
]
