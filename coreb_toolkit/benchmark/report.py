"""The Markdown summaries of CoREB results (``summary.md``): the paper's Table 3 and its notes.

Reads results dicts as :mod:`coreb_toolkit.benchmark.results` writes them (or the
:class:`~coreb_toolkit.benchmark.results.CorebResults` themselves).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coreb_toolkit.untrusted import markdown_text
from coreb_toolkit.vocabulary import CORPUS_TEXT, CORPUS_TEXT_ABBREVIATED, MAIN_TASKS
from eval_metrics.aggregate import OVERALL, TABLE_COLUMNS

#: The metrics of a summary's per-subtask table; the first two are the main table's columns.

# Which text corpus the c2t_canonical_retro_* subtasks rank: the abbreviated descriptions, as
# the paper defines the subtask (A.3), or the full texts, as the official runner and MTEB's C2T
# task rank them (their loaders keep a text document's `text`), to reproduce their figures.
C2T_CANONICAL_CORPORA = ("abbreviated", "full")
_VIEW_NOTES = {
    "abbreviated": "abbreviated texts, the paper's view (A.3)",
    "full": "full texts, the official runner's and MTEB's view",
}

TIE_NOTE = (
    "pos-tie: the share of queries (with a retrieved positive) whose best positive ties, at "
    "trec_eval's single precision, with a non-relevant document; trec_eval orders such a tie by "
    "document id, so on those queries the ids, not the model, decide which comes first."
)


def check_c2t_canonical_corpus(view: object) -> str:
    """``view`` if it names a corpus view of :data:`C2T_CANONICAL_CORPORA`, else an error."""
    if view not in C2T_CANONICAL_CORPORA:
        raise ValueError(
            f"c2t_canonical_corpus must be one of {C2T_CANONICAL_CORPORA} ('abbreviated': the "
            f"paper's view, the default; 'full': the official runner's), got {view!r}"
        )
    return str(view)


def c2t_canonical_note(view: str) -> str:
    """The sentence every summary carries about the c2t_canonical_retro_* corpus."""
    corpus = CORPUS_TEXT if view == "full" else CORPUS_TEXT_ABBREVIATED
    return f"c2t_canonical_retro_* rank {corpus} ({_VIEW_NOTES[view]})"


def rerank_note(rerank_top_k: int, top_k: int) -> str:
    """What the truncation to the first stage's top-k means for the reranked figures."""
    return (
        f"The reranked run holds each query's first-stage top {rerank_top_k} (after "
        f"exclusions), reordered by the reranker; documents beyond are dropped. First-stage rows "
        f"score its full run (top {top_k}). Recall@k for k >= {rerank_top_k} of the reranked run "
        f"equals the first stage's Recall@{rerank_top_k}, so any figure with a cutoff above "
        f"{rerank_top_k} is bounded by the first stage's candidates."
    )


def sample_note(query_sample: Mapping[str, Any]) -> str:
    """What a summary says of a result evaluated on a query sample (its ``query_sample``)."""
    n = query_sample["per_subtask"]
    return (
        f"**Query sample**: these figures are on a seeded sample of at most {n} "
        f"{'query' if n == 1 else 'queries'} per subtask (seed {query_sample['seed']}), not on "
        "the benchmark's queries: they are for quick checks, and are not comparable with "
        "published CoREB figures or with a full evaluation."
    )


def untrained_note(reranker: Mapping[str, Any]) -> str:
    """The warning a summary carries for a reranker whose scoring head is untrained."""
    return (
        f"**Untrained head**: the reranker {markdown_text(reranker.get('name'))} is the bundled "
        "plumbing alias, "
        "a bi-encoder checkpoint with a new, untrained classification head; its scores are not "
        "relevance until it is fine-tuned, so its figures test the pipeline, not a reranker."
    )


def as_dicts(results: Sequence[Any]) -> list[Mapping[str, Any]]:
    """Results dicts, from dicts or from :mod:`~coreb_toolkit.benchmark.results` objects."""
    return [res.to_dict() if hasattr(res, "to_dict") else res for res in results]


def summary_table(results: Sequence[Any], columns: Sequence[str] = TABLE_COLUMNS) -> str:
    """A Markdown table shaped like the paper's Table 3: a row per model, a column group per
    main task plus Overall (nDCG@10 first), for one release.

    A reranked result (one with ``first_stage_rows``) gets a row of its first stage just
    before its own, unless that first stage is itself among ``results`` (a comparison), and
    the summary ends with a "Δ nDCG@10 per task" table (CoREB Figure 8's numbers).
    """
    results = as_dicts(results)
    tasks = [t.label for t in MAIN_TASKS.values()] + [OVERALL]
    entries = _entries(results)
    reranked = [res for res in results if res.get("first_stage_rows") is not None]
    present = [t for t in tasks if any(r["name"] == t for _, rows in entries for r in rows)]
    header = ["model"] + [f"{t} {c}" for t in present for c in columns[:2]]
    first = results[0]
    views = {res.get("c2t_canonical_corpus", "abbreviated") for res in results}
    if len(views) > 1:
        raise ValueError(
            f"these results rank c2t_canonical_retro_* in different corpora ({sorted(views)}); "
            "compare models evaluated with one --c2t-canonical-corpus"
        )
    samples = {_sample_key(res) for res in results}
    if len(samples) > 1:
        raise ValueError(
            "these results were evaluated on different queries (a query sample and another, or "
            "the full query set); compare models evaluated with the same --query-sample and "
            "--query-seed"
        )
    lines = [
        f"Release {markdown_text(first['release'])}; "
        f"no_positive_policy={first['no_positive_policy']}, "
        f"relevance level {first['relevance_level']}; {c2t_canonical_note(views.pop())}.",
        "",
    ]
    if first.get("query_sample") is not None:
        lines += [sample_note(first["query_sample"]), ""]
    lines += [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label, rows in entries:
        by_name = {r["name"]: r for r in rows}
        cells = [markdown_text(label)]
        for t in present:
            row = by_name.get(t)
            cells += [f"{row[c]:.4f}" if row else "-" for c in columns[:2]]
        lines.append("| " + " | ".join(cells) + " |")
    for res in reranked:
        meta = res["reranker"]
        lines += ["", f"Second stage of {markdown_text(res['model'].get('name'))}: "
                      f"{markdown_text(meta['name'])} ({markdown_text(meta['backend'])}) "
                      f"rescored the top {res['rerank_top_k']}. "
                      + (rerank_note(res["rerank_top_k"], res["top_k"])
                         if res.get("rerank_note") else "")]  # fmt: skip
        if meta.get("untrained_head"):
            lines += ["", untrained_note(meta)]
    lines += _per_subtask(entries, columns)
    lines += ["", TIE_NOTE]
    if reranked:
        lines += _delta_table(reranked, present)
    lines += mteb_v1_table(results)
    return "\n".join(lines) + "\n"


def mteb_v1_table(results: Sequence[Any], heading: str = "##") -> list[str]:
    """Markdown lines: MTEB's six CoREB(v1) main scores of each result that has them
    (``mteb_tasks``) and their mean as MTEB's leaderboard computes it, beside the reference
    rows of mteb's PR; no lines when no result has them."""
    from coreb_toolkit.benchmark.published import mteb_reference
    from coreb_toolkit.vocabulary import COREB_V1_TASKS, coreb_v1_mean

    ours = [res for res in as_dicts(results) if res.get("mteb_tasks")]
    if not ours:
        return []
    source, reference = mteb_reference()
    short = [t.removeprefix("Coreb") for t in COREB_V1_TASKS]
    lines = [
        "",
        f"{heading} MTEB's CoREB(v1): six tasks, one mean",
        "",
        "MTEB's protocol, computed in this run as `mteb.evaluate` computes it: each main task "
        "pooled, positives only, the c2c anchor ranked (Retrieval, nDCG@10); each query's "
        "17-candidate list (Reranking, MAP@10). Mean: the plain mean of the six, MTEB's "
        "leaderboard's. The reference rows are MTEB's own lists, whose easy negatives are not "
        "published: ours are drawn by the rules of `coreb_toolkit.builders.coreb.reranking`, so "
        "the Reranking columns compare only as far as the lists are alike.",
        "",
        "| model | " + " | ".join(short) + " | mean |",
        "|" + "---|" * (len(short) + 2),
    ]
    for res in ours:
        main = {t: v["main_score"] for t, v in res["mteb_tasks"].items()}
        mean = coreb_v1_mean(main)
        cells = [f"{100 * main[t]:.2f}" if t in main else "-" for t in COREB_V1_TASKS]
        label = f"**{markdown_text(res['model'].get('name'))}** (this run)"
        lines.append(f"| {label} | " + " | ".join(cells) +
                     f" | {'-' if mean is None else f'{100 * mean:.2f}'} |")  # fmt: skip
    for row in reference:
        cells = [f"{100 * row.scores[t]:.2f}" for t in COREB_V1_TASKS]
        lines.append(f"| {markdown_text(row.model)} | " + " | ".join(cells) +
                     f" | {100 * row.mean:.2f} |")  # fmt: skip
    lines += ["", f"Reference rows: {source} (percent; MTEB's datasets `mteb/coreb-*`)."]
    return lines


def _sample_key(res: Mapping[str, Any]) -> tuple[Any, Any] | None:
    sample = res.get("query_sample")
    return None if sample is None else (sample.get("per_subtask"), sample.get("seed"))


def _entries(results: Sequence[Mapping[str, Any]]) -> list[tuple[str, Sequence[Mapping]]]:
    """``(label, rows)`` per table row: each result, a reranked one after its first stage."""
    names = {str(res["model"].get("name")) for res in results}
    entries: list[tuple[str, Sequence[Mapping[str, Any]]]] = []
    for res in results:
        if res.get("first_stage_rows") is not None:
            first_name = str(res.get("first_stage", {}).get("model", "first stage"))
            if first_name not in names:
                entries.append((f"{first_name} (first stage)", res["first_stage_rows"]))
        entries.append((str(res["model"].get("name")), res["rows"]))
    return entries


def _per_subtask(
    entries: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], columns: Sequence[str]
) -> list[str]:
    lines: list[str] = []
    for label, rows in entries:
        title = "Per subtask:" if len(entries) == 1 else f"Per subtask, {markdown_text(label)}:"
        lines += ["", title, "", "| subtask | queries | " + " | ".join(columns)
                  + " | HN-intrusion | pos-tie |",
                  "|---|---|" + "---|" * (len(columns) + 2)]  # fmt: skip
        for r in rows:
            name = markdown_text(r["name"])
            name = name if r["level"] == "subtask" else f"**{name}**"
            rate, tie = r["hard_negative_intrusion_rate"], r.get("positive_tie_share")
            lines.append(f"| {name} | {r['n_queries']} | "
                         + " | ".join(f"{r[c]:.4f}" for c in columns)
                         + f" | {'-' if rate is None else f'{rate:.3f}'}"
                         + f" | {'-' if tie is None else f'{tie:.3f}'} |")  # fmt: skip
    return lines


def _delta_table(reranked: Sequence[Mapping[str, Any]], present: Sequence[str]) -> list[str]:
    lines = [
        "",
        "Δ nDCG@10 per task (reranked − first stage; cells: first → reranked (Δ)):",
        "",
        "| model | " + " | ".join(present) + " |",
        "|---|" + "---|" * len(present),
    ]
    for res in reranked:
        before = {r["name"]: r for r in res["first_stage_rows"] if r["level"] != "subtask"}
        after = {r["name"]: r for r in res["rows"] if r["level"] != "subtask"}
        cells = [markdown_text(res["model"].get("name"))]
        for t in present:
            if t in before and t in after:
                b, a = before[t]["ndcg_at_10"], after[t]["ndcg_at_10"]
                cells.append(f"{b:.4f} → {a:.4f} ({a - b:+.4f})")
            else:
                cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


__all__ = [
    "C2T_CANONICAL_CORPORA",
    "TABLE_COLUMNS",
    "TIE_NOTE",
    "as_dicts",
    "c2t_canonical_note",
    "check_c2t_canonical_corpus",
    "rerank_note",
    "sample_note",
    "summary_table",
    "untrained_note",
]
