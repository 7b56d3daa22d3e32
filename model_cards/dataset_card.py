"""Dataset cards (README.md) of the CoREB and QualCode Hub folders.

The Markdown lives in ``templates/`` beside this file (sentence-transformers' habit), filled with
:class:`string.Template` (``$name`` placeholders) from a card-data dataclass of plain data:
strings, numbers, lists and dicts the builder computed (the dataclasses of
:mod:`coreb_toolkit.builders.card_data`, re-exported here). The builders never import this
module: the data flows builders -> cards, and the entry points ``coreb_dataset.build`` /
``qualcode_dataset.build`` hand this renderer to the builder. (jinja2, which
``huggingface_hub``'s ``DatasetCard.from_template`` needs, comes only with the ``models``
extra, so the builds do not depend on it.)

Example::

    from model_cards.dataset_card import render_coreb_card
    text = render_coreb_card(data)  # data: CorebCardData, as coreb build makes it
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Any

from coreb_toolkit.builders.card_data import (
    CorebCardData,
    CorebCardRelease,
    CorebCardSubtask,
    QualcodeCardData,
)
from coreb_toolkit.vocabulary import (
    LANGUAGE_SUFFIXES,
    MC_CONDITION_COUNTS,
    MC_CONFIGS,
    QUALCODE_DIMENSIONS,
    QUALCODE_PAIR_CONFIGS,
)

TEMPLATES = Path(__file__).parent / "templates"
COREB_TEMPLATE = TEMPLATES / "coreb_dataset_card.md"
QUALCODE_TEMPLATE = TEMPLATES / "qualcode_dataset_card.md"
EVAL_YAML = "eval.yaml"
#: ``evaluation_framework`` of the eval.yaml files: the harness that scores these tasks (the
#: Hub's spec names one, e.g. inspect-ai, "or your own")
EVALUATION_FRAMEWORK = "coreb-toolkit"


# --------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` label for ``n`` rows (``n<1K``, ``1K<n<10K``, ...)."""
    for bound, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < bound:
            return label
    return "1M<n<10M"


def markdown_table(header: Sequence[str], body: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; ints get thousands separators (``1,234``)."""

    def cell(v: Any) -> str:
        return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in body]
    return "\n".join(lines)


def _render(template: Path, values: Mapping[str, Any]) -> str:
    return Template(template.read_text(encoding="utf-8")).substitute(
        {k: str(v) for k, v in values.items()}
    )


# --------------------------------------------------------------------------------------------
# CoREB
# --------------------------------------------------------------------------------------------


def _get(counts: Mapping[Any, int], key: Any) -> int:
    return counts.get(key, 0)


# one table per paper table, in the card's order: splitting it would only scatter them
def _coreb_statistics(families: Sequence[str], release: CorebCardRelease) -> list[str]:
    """The statistics section of one release, in the shapes of the paper's Tables 5, 10-12."""
    st = release.statistics
    by_lang, qrels = st["queries_by_language"], st["qrels"]
    code_lang, code_passed = st["code_by_language"], st["code_passed_by_language"]
    langs = sorted(
        {lang for c in by_lang.values() for lang in c},
        key=lambda x: (LANGUAGE_SUFFIXES.index(x) if x in LANGUAGE_SUFFIXES else 99, x),
    )
    n_passed = sum(code_passed.values())
    parts = [
        f"### {release.name}\n\n{st['n_code']:,} code documents, {st['n_text']:,} texts, "
        f"{st['n_queries']:,} queries; qrels "
        + ", ".join(f"{f}: {release.qrels_source.get(f, 'none')}" for f in families)
        + "."
    ]
    parts.append(
        "Corpus composition (cf. Table 12):\n\n"
        + markdown_table(
            ["language", "code documents", "verified correct (passed)", "pass rate"],
            [
                (
                    lang,
                    code_lang[lang],
                    _get(code_passed, lang),
                    f"{_get(code_passed, lang) / code_lang[lang]:.2f}",
                )
                for lang in sorted(code_lang)
            ]
            + [("total", st["n_code"], n_passed, f"{n_passed / max(1, st['n_code']):.2f}")],
        )
        + "\n\n"
        + markdown_table(["generator model", "code documents"], sorted(st["code_by_model"].items()))
        + "\n\n"
        + markdown_table(["text style", "texts"], sorted(st["text_by_style"].items()))
    )
    parts.append(
        "Queries per main task and language (cf. Tables 10, 11; `-` = no suffix):\n\n"
        + markdown_table(
            ["main task", *langs, "total"],
            [
                (
                    f,
                    *(_get(by_lang.get(f, {}), lang) for lang in langs),
                    sum(by_lang.get(f, {}).values()),
                )
                for f in families
            ],
        )
    )
    parts.append(
        "Queries per subtask variant (cf. Table 11):\n\n"
        + markdown_table(
            ["main task", "variant", "queries"],
            [(f, v, n) for (f, v), n in sorted(st["queries_by_variant"].items())],
        )
    )
    parts.append(
        "Queries, positives and hard negatives per query, by subtask:\n\n"
        + markdown_table(
            ["subtask", "queries", "positives / query", "hard negatives / query"],
            [
                (name, n, f"{pos / n:.2f}", f"{neg / n:.2f}")
                for name, (n, pos, neg) in sorted(st["per_subtask"].items())
            ],
        )
    )
    judged = {f: qrels.get(f, {}) for f in families}
    parts.append(
        "Graded judgments (cf. Table 5):\n\n"
        + markdown_table(
            ["main task", "relevance 2 (positive)", "relevance 1 (hard negative)", "total"],
            [
                (f, _get(judged[f], 2), _get(judged[f], 1), _get(judged[f], 1) + _get(judged[f], 2))
                for f in families
            ]
            + [
                (
                    "all",
                    *(sum(_get(judged[f], r) for f in families) for r in (2, 1)),
                    sum(sum(c.values()) for c in qrels.values()),
                )
            ],
        )
    )
    if release.qrels_audit:
        parts.append(qrels_audit_section(families, release.qrels_audit))
    return parts


def qrels_audit_section(families: Sequence[str], audit: Mapping[str, Mapping[str, Any]]) -> str:
    """The shipped qrels held against the execution metadata and the paper's rules (the
    builders' ``audit_qrels``), as Markdown: one row per main task, then the subtasks whose
    shipped positives include failed solutions."""
    rows = []
    for f in families:
        a = audit.get(f)
        if a is None:
            continue
        failed = sum(a["failed_positives"].values())
        by_rule = (
            (f"{a['positives_by_rule']:,}", f"{a['hard_negatives_by_rule']:,}",
             f"{a['hard_negatives_in_pool']:,}",
             f"{a['derived_positives']:,} / {a['derived_hard_negatives']:,}")
            if "positives_by_rule" in a else ("-", "-", "-", a.get("note", "-"))
        )  # fmt: skip
        rows.append((f, f"{a['positives']:,}", f"{a['hard_negatives']:,}", failed, *by_rule))
    text = (
        "Shipped qrels against the execution metadata and the paper's rules (relevance 2 = "
        "verified-correct solutions / the original description; `--qrels derived` rebuilds "
        "with the rules instead):\n\n"
        + markdown_table(
            [
                "main task",
                "positives",
                "hard negatives",
                "positives that failed execution",
                "positives the rules grade 2",
                "hard negatives the rules grade 1",
                "hard negatives in the rules' pool",
                "the rules' positives / hard negatives",
            ],
            rows,
        )
    )
    failed_rows = sorted(
        (name, n) for a in audit.values() for name, n in a["failed_positives"].items() if n
    )
    if failed_rows:
        text += (
            "\n\nShipped positives whose execution failed (`meta.passed` false), by subtask: "
            "the paper grades only verified-correct solutions 2, so these subtasks' published "
            "figures credit failed code:\n\n"
            + markdown_table(["subtask", "failed solutions graded 2"], failed_rows)
        )
    return text


def render_coreb_card(data: CorebCardData) -> str:
    """The README.md of a CoREB build: YAML metadata with ``configs:``, then the card."""
    opts = data.qrels_options
    subtask_table = markdown_table(
        ["config", "main task", "ranks", *data.releases],
        [
            (
                f"`{s.name}`" + ("" if s.known else " (not in the paper)"),
                s.main_task,
                f"`{s.corpus}`",
                *s.rows,
            )
            for s in data.subtasks
        ],
    )
    qrels_note = (
        f"Some qrels were derived from execution outcomes (scheme `{opts['scheme']}`, "
        f"`min_hard_negatives={opts['min_hard_negatives']}`, "
        f"`max_hard_negatives={opts.get('max_hard_negatives')}`, "
        f"`c2t_hard_negatives={opts['c2t_hard_negatives']}`, "
        f"`original_text_style={opts['original_text_style']!r}`); see the statistics for which."
        if data.qrels_derived
        else "Every release shipped its qrels; they are used as given."
    )
    statistics = [p for r in data.statistics for p in _coreb_statistics(data.families, r)]
    return _render(
        COREB_TEMPLATE,
        {
            "pretty_name": data.pretty_name,
            "license": data.license,
            "size_category": size_category(data.total_rows),
            "configs": "\n".join(data.configs_yaml),
            "first_release": data.releases[0],
            "subtask_table": subtask_table,
            "qrels_note": qrels_note,
            "statistics": "\n\n".join(statistics),
            "citation": data.citation,
        },
    )


# --------------------------------------------------------------------------------------------
# QualCode
# --------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _measured_section(report: Mapping[str, Any], margin: float) -> str:
    if "measured" not in report:
        return ""
    m = report["measured"]
    return (
        "\n### Measured labels\n\nLabels come from medians of "
        f"{m['repeats']} sandboxed re-runs on the public tests "
        f"({m['submissions_measured']:,} submissions measured, "
        f"{m['submissions_failing_tests']:,} failing their tests). Agreement of the "
        f"measured {margin:g}x preference with the judge's, over all submission pairs of "
        "a problem:\n\n"
        + markdown_table(
            ["dimension", "pairs compared", "agree", "rate"],
            [
                (d, m[d].get("n_compared", 0), m[d].get("n_agree", 0), _fmt(m[d].get("rate")))
                for d in ("speed", "memory")
            ],
        )
        + "\n"
    )


def _exclusion_note(report: Mapping[str, Any]) -> str:
    """The paragraph on the problems a problem split gave to training; empty without one."""
    ex = report.get("exclusion")
    if not ex:
        return ""
    n = ex["problems_excluded"]
    held = f"{n:,} problem was" if n == 1 else f"{n:,} problems were"
    return (
        f"\n\n{held} held out for training (problem split seed {ex['seed']}); none of their "
        f"submissions is in this build ({ex['submissions_excluded']:,} submissions left out; "
        f"split file `{Path(ex['file']).name}`, SHA-256 `{ex['sha256']}`)."
    )


def _qualcode_tables(data: QualcodeCardData) -> dict[str, str]:
    """The statistics tables of the QualCode card."""
    r, o, rows, split = data.report, data.options, data.rows, data.split
    pairs_table = markdown_table(
        ["config", "pairs", "problems without a pair (why)"],
        [
            (
                f"`{QUALCODE_PAIR_CONFIGS[d]}`",
                rows.get(QUALCODE_PAIR_CONFIGS[d], {}).get(split, 0),
                "; ".join(
                    f"{why}: {n}"
                    for why, n in r["dropped"].get(f"pairs:{d}", {}).items()
                    if why.startswith(("fewer", "below", "no submission"))
                )
                or "-",
            )
            for d in QUALCODE_DIMENSIONS
        ],
    )
    mc_rows = []
    for k in MC_CONDITION_COUNTS:
        info = r["mc"][f"k={k}"]
        for combo, c in info["combinations"].items():
            failed = ", ".join(f"{f}: {n}" for f, n in sorted(c["by_failed_condition"].items()))
            mc_rows.append((f"`{MC_CONFIGS[k]}`", combo, c["available"], c["taken"], failed or "-"))
    drops = [
        (stage, reason, n)
        for stage, reasons in r["dropped"].items()
        for reason, n in reasons.items()
    ]
    return {
        "pairs_table": pairs_table,
        "mc_table": markdown_table(
            ["config", "conditions", "candidate triplets", "taken", "by failed condition"], mc_rows
        ),
        "reached": "\n".join(
            f"- k={k}: {r['mc'][f'k={k}']['reached']:,} of {o['mc_per_k']:,}"
            + (f" -- {r['mc'][f'k={k}']['why_short']}" if r["mc"][f"k={k}"]["why_short"] else "")
            for k in MC_CONDITION_COUNTS
        ),
        "margin_table": markdown_table(
            ["dimension", "pairs", "min", "q1", "median", "q3", "max"],
            [
                (d, m["n"], *(_fmt(m.get(x, "-")) for x in ("min", "q1", "median", "q3", "max")))
                for d, m in r["margin_distribution"].items()
            ],
        ),
        "rules_table": markdown_table(
            ["rule", "what it flags"], sorted(r["analyser"]["rules"].items())
        ),
        "drop_table": markdown_table(["stage", "reason", "count"], drops) if drops else "(none)",
        "labels_table": markdown_table(
            ["dimension", "label 1", "label 0", "unlabelled"],
            [
                (
                    d,
                    r["mc_labels"][d].get("1", 0),
                    r["mc_labels"][d].get("0", 0),
                    r["mc_labels"][d].get("unlabelled", 0),
                )
                for d in QUALCODE_DIMENSIONS
            ],
        ),
    }


def render_qualcode_card(data: QualcodeCardData) -> str:
    """The README.md of a QualCode build: YAML with ``configs:``, the construction, and the
    statistics of the build report."""
    r, o, rows, split = data.report, data.options, data.rows, data.split
    smell = r["smell_count_distribution"]
    empty = [n for n in data.configs if not rows.get(n, {}).get(split, 0)]
    empty_note = (
        f"Empty on this data, so absent from the folder (`datasets` has no empty split): "
        f"{', '.join(f'`{n}`' for n in empty)}; the statistics below say why."
        if empty
        else ""
    )
    return _render(
        QUALCODE_TEMPLATE,
        {
            "pretty_name": data.pretty_name,
            "license": data.license,
            "size_category": size_category(sum(n for p in rows.values() for n in p.values())),
            "configs": "\n".join(data.configs_yaml),
            "example_instruction": data.example_instruction,
            "sources": ", ".join(f"`{s}`" for s in r["sources"]),
            "exclusion_note": _exclusion_note(r),
            "rows_table_body": "\n".join(
                f"| `{n}` | {rows.get(n, {}).get(split, 0):,} |" for n in data.configs
            ),
            "empty_note": empty_note,
            "margin": f"{o['margin']:g}",
            "figures_from": (
                "the judge's readings (as the paper)"
                if o["labels"] == "judge"
                else "medians of sandboxed re-runs"
            ),
            "controlled": (
                ", and both agree on the conditions not asked for"
                if o["control_unrequested"]
                else ""
            ),
            "mc_per_k": f"{o['mc_per_k']:,}",
            "balance": (
                "the same number from every combination"
                if o["mc_balance"] == "strict"
                else "up to a per-combination cap"
            ),
            "seed": o["seed"],
            "template": o["template"],
            "analyser_name": r["analyser"]["name"],
            "analyser_version": r["analyser"]["version"],
            "problems": f"{r['problems']:,}",
            "submissions": f"{r['submissions']:,}",
            "without_smells": f"{r['submissions_without_smells']:,}",
            "smell_median": _fmt(smell.get("median", "-")),
            "smell_max": _fmt(smell.get("max", "-")),
            "measured": _measured_section(r, o["margin"]),
            "citation": data.citation,
            **_qualcode_tables(data),
        },
    )


# --------------------------------------------------------------------------------------------
# eval.yaml: the Hub's benchmark registration (hub-docs docs/hub/eval-results.md)
# --------------------------------------------------------------------------------------------


def coreb_task_id(config: str, release: str) -> str:
    """The eval.yaml task id of CoREB subtask ``config`` on ``release``: ``<config>-<release>``
    (``t2c_full_retro_any-release_v2603``). A release is a split of every subtask config, and
    releases are independent benchmarks (each ranks its own corpora), so a task is one
    (config, split) pair; an id naming the config alone could not tell two releases apart, and
    a new release would change what an old score means. The model cards' ``.eval_results``
    entries use the same ids."""
    return f"{config}-{release}"


def eval_yaml(name: str, description: str, tasks: Sequence[Mapping[str, str]]) -> str:
    """The text of an ``eval.yaml``: ``name``, ``description``, ``evaluation_framework`` and
    ``tasks: [{id, config, split}]``, the fields of the Hub's spec."""
    import yaml

    body = {
        "name": name,
        "description": description,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [{"id": t["id"], "config": t["config"], "split": t["split"]} for t in tasks],
    }
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)


def render_coreb_eval_yaml(data: CorebCardData) -> str:
    """The ``eval.yaml`` of a CoREB build: one task per subtask config and release that has
    queries (``id`` from :func:`coreb_task_id`, ``split`` the release); corpora and the
    official configs are no tasks."""
    tasks = [
        {"id": coreb_task_id(s.name, release), "config": s.name, "split": release}
        for s in data.subtasks
        for release, n in zip(data.releases, s.rows, strict=True)
        if n
    ]
    description = (
        f"{data.pretty_name}: code retrieval and reranking with graded, execution-derived "
        "relevance (text-to-code, code-to-text, code-to-code; releases as splits). Score every "
        "query against the whole corpus its row names; nDCG@10 at relevance level 2 is the main "
        "score, computed by coreb-toolkit (`coreb evaluate`), which also writes the model "
        "cards' .eval_results. Task ids are <config>-<release>."
    )
    return eval_yaml(data.pretty_name, description, tasks)


def render_qualcode_eval_yaml(data: QualcodeCardData) -> str:
    """The ``eval.yaml`` of a QualCode build: the three pair configs (main score QPA) and the
    MC-QualCode configs (MCA) that hold rows; the corpus is no task."""
    tasks = [
        {"id": name, "config": name, "split": data.split}
        for name in [*QUALCODE_PAIR_CONFIGS.values(), *MC_CONFIGS.values()]
        if data.rows.get(name, {}).get(data.split, 0)
    ]
    description = (
        f"{data.pretty_name}: quality-aware code reranking (SynH-Rank). Each pair config asks a "
        "scorer to prefer the faster, leaner or cleaner of two correct solutions (QPA, ties "
        "count as losses); each mc_<k>cond config tests k conditions at once (MCA). Scored by "
        "coreb-toolkit (`coreb qualcode evaluate`)."
    )
    return eval_yaml(data.pretty_name, description, tasks)


__all__ = [
    "COREB_TEMPLATE",
    "EVALUATION_FRAMEWORK",
    "EVAL_YAML",
    "QUALCODE_TEMPLATE",
    "CorebCardData",
    "CorebCardRelease",
    "CorebCardSubtask",
    "QualcodeCardData",
    "coreb_task_id",
    "eval_yaml",
    "markdown_table",
    "render_coreb_card",
    "render_coreb_eval_yaml",
    "render_qualcode_card",
    "render_qualcode_eval_yaml",
    "size_category",
]
