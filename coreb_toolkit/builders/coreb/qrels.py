"""Qrels from execution outcomes, for the families a release ships without qrels.

[CoREB §3 Step 4, A.2, Table 5] Shipped qrels are always used as given; :class:`QrelsOptions`
says how the missing ones are derived (the v2 graded scheme or the older v1 binary one).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from coreb_toolkit.builders.coreb.layout import FAMILIES
from coreb_toolkit.builders.coreb.records import (
    Problem,
    Record,
    ReleaseData,
    is_noise_text,
    problem_of,
)
from coreb_toolkit.vocabulary import LANGUAGES, SubtaskMetadata

QRELS_SCHEMES: tuple[str, ...] = ("v1", "v2")
QRELS_SOURCES: tuple[str, ...] = ("shipped", "derived")


@dataclass(frozen=True)
class QrelsOptions:
    """How qrels are derived for a release that ships execution metadata but no qrels.

    Shipped qrels are always used as given; these options only matter where a release has no
    ``*_qrels`` file for a family. The one place of these fields: :class:`CorebConfig` (the
    ``datasets`` builder) and the CLI embed this class; each field's ``help`` is its
    documentation everywhere.
    """

    scheme: str = field(
        default="v2",
        metadata={
            "help": "'v2' (graded, the paper's current scheme) or 'v1' (binary, the older one: "
            "every solution of the queried problem is relevant)."
        },
    )
    min_hard_negatives: int = field(
        default=3,
        metadata={
            "help": "The paper supplements the failed-solution pool with correct solutions "
            "that do not qualify 'when the failed pool is insufficient', without a number. As "
            "the official dataset maker does (hq-bench/coreb, query_corpus_dataset_maker.py), "
            "the pool is filled step by step while it holds fewer than this many: (1) failed "
            "solutions that match the query best (T2C: in its language, any for 'any'; C2C "
            "cross_lang: another language; mono_lang: another model, the anchor's language; "
            "cross_model: another model and language), (2) the problem's other failed "
            "solutions, (3) correct solutions that do not qualify. Default 3, the maker's. "
            "With max_hard_negatives None every failed solution is kept and only step 3 "
            "tops up to this many."
        },
    )
    c2t_hard_negatives: int = field(
        default=4,
        metadata={
            "help": "Noise descriptions per code-to-text query (the paper's 4); when the "
            "problem has fewer, texts of other problems fill in (the paper's fallback), chosen "
            "by a hash of (query id, text id) so the choice is reproducible."
        },
    )
    max_hard_negatives: int | None = field(
        default=3,
        metadata={
            "help": "At most this many hard negatives per T2C / C2C query (the official "
            "maker's target_count, 3). The steps are taken in order, failed solutions first "
            "as the paper says (and the v2602 maker did); the step that overflows is drawn "
            "from by a hash of (query id, doc id): reproducible, but not the maker's "
            "random.seed(42) stream, so the members differ from the shipped ones while their "
            "pool is the same. None keeps every failed solution."
        },
    )
    original_text_style: str = field(
        default="auto",
        metadata={
            "help": "The text_style of the original description in the text corpus; every "
            "other style is a noise description. 'auto': a text is a noise description when "
            "its meta.is_noise_sample is true or its style is 'noise' or "
            "'llm_generated_noise' (the published releases' style), an original otherwise."
        },
    )

    # last: QrelsOptions("v1") still names the scheme
    qrels: str = field(
        default="shipped",
        metadata={
            "help": "'shipped' (default): use the qrels a release ships, as published, so "
            "that results compare with published ones; 'derived': judge every query by the "
            "paper's rules from the execution metadata instead (the published t2c_search qrels "
            "grade failed solutions 2; the build report's qrels audit counts them)."
        },
    )

    def __post_init__(self) -> None:
        if self.qrels not in QRELS_SOURCES:
            raise ValueError(
                f"QrelsOptions.qrels (--qrels) must be 'shipped' or 'derived', got "
                f"{self.qrels!r}; a qrels file scores a run file: `coreb score RUN --qrels FILE`"
            )
        if self.scheme not in QRELS_SCHEMES:
            raise ValueError(f"QrelsOptions.scheme must be 'v1' or 'v2', got {self.scheme!r}")
        cap = self.max_hard_negatives
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise ValueError(
                f"QrelsOptions.max_hard_negatives must be an int >= 0 or None, got {cap!r}"
            )
        for name in ("min_hard_negatives", "c2t_hard_negatives"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"QrelsOptions.{name} must be an int >= 0, got {value!r}")
        if not isinstance(self.original_text_style, str) or not self.original_text_style:
            raise ValueError(
                "QrelsOptions.original_text_style must be a non-empty string (the text_style "
                f"of the original descriptions), got {self.original_text_style!r}"
            )


def derive_qrels(
    data: ReleaseData,
    files: dict[str, dict[str, Any]],
    options: QrelsOptions,
    problems: list[Problem],
    warnings: list[Problem],
) -> None:
    """Judge, with ``options``, every query of a family ``data`` ships no qrels for (every
    family with ``options.qrels == "derived"``), and audit the shipped qrels against the same
    rules (``data.qrels_audit``); what cannot be judged becomes a problem, a query left without
    judgment a warning."""
    shipped = [f for f in FAMILIES if data.qrels_source.get(f) == "shipped"]
    missing = [f for f in FAMILIES if f not in shipped or options.qrels == "derived"]
    if shipped:
        data.qrels_audit = audit_qrels(data, shipped, options)
    if not missing:
        return
    n_problems = len(problems)
    judged = judge(data, missing, options, problems)
    if len(problems) > n_problems:
        return
    for family in missing:
        data.qrels_source[family] = f"derived-{options.scheme}"
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family not in missing:
            continue
        data.qrels[qid] = judged.get(qid, {})  # replaces shipped ones with --qrels derived
        if not data.qrels[qid]:
            warnings.append(Problem(rec.where, f"query {qid!r} has no judged document"))


def judge(
    data: ReleaseData, families: list[str], options: QrelsOptions, problems: list[Problem]
) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: 2 | 1}}`` by the paper's rules (and ``options``) for every query of
    ``families``; ``data`` is not changed. What cannot be judged is appended to ``problems``."""
    n_problems = len(problems)
    by_problem: dict[str, list[str]] = defaultdict(list)
    for doc_id, rec in sorted(data.code.items()):
        pid = problem_of(rec)
        if pid is None:
            problems.append(
                Problem(
                    rec.where, "qrels must be derived but the code has no meta.source_problem_id"
                )
            )
        elif not isinstance(rec.meta.get("passed"), bool):
            problems.append(
                Problem(rec.where, "qrels must be derived but meta.passed is not true/false")
            )
        else:
            by_problem[pid].append(doc_id)
    texts_by_problem: dict[str, list[str]] = defaultdict(list)
    for text_id, rec in sorted(data.texts.items()):
        pid = problem_of(rec)
        if pid is not None:
            texts_by_problem[pid].append(text_id)
    if len(problems) > n_problems:
        return {}
    out: dict[str, dict[str, int]] = {}
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family not in families:
            continue
        pid = problem_of(rec)
        if pid is None:
            problems.append(
                Problem(
                    rec.where, "qrels must be derived but the query has no meta.source_problem_id"
                )
            )
            continue
        try:
            if subtask.family == "t2c":
                out[qid] = _t2c_qrels(data, rec, subtask, by_problem[pid], options)
            elif subtask.family == "c2c":
                out[qid] = _c2c_qrels(data, rec, subtask, by_problem[pid], options)
            else:
                out[qid] = _c2t_qrels(data, qid, rec, subtask, pid, texts_by_problem, options)
        except ValueError as err:
            problems.append(Problem(rec.where, str(err)))
    return out


def audit_qrels(
    data: ReleaseData, families: list[str], options: QrelsOptions
) -> dict[str, dict[str, Any]]:
    """The shipped qrels of ``families`` held against the execution metadata and the paper's
    rules (what ``--qrels derived`` would give), per main task:

    ``positives`` / ``hard_negatives``: the shipped counts; ``failed_positives``: per subtask,
    shipped relevance-2 code whose execution failed (``meta.passed`` false: the paper grades
    only verified-correct solutions 2); ``positives_by_rule`` / ``hard_negatives_by_rule``:
    shipped judgments the rules give the same grade; ``hard_negatives_in_pool``: shipped hard
    negatives among those the rules draw from (they sample a few of that pool, so fewer match
    one by one); ``derived_positives`` /
    ``derived_hard_negatives``: what the rules give in all; ``note``: why the rules could not
    be applied, when so (the counts that need them are then absent).
    """
    scratch: list[Problem] = []
    derived = judge(data, families, options, scratch)
    # every document the rules could draw a hard negative from (all three steps, no cap)
    pools = judge(data, families, replace(options, max_hard_negatives=None,
                                          min_hard_negatives=1 << 30), scratch)  # fmt: skip
    audit: dict[str, dict[str, Any]] = {}
    for family in families:
        entry: dict[str, Any] = dict.fromkeys(("positives", "hard_negatives"), 0)
        entry["failed_positives"] = {}
        counts = dict.fromkeys(
            ("positives_by_rule", "hard_negatives_by_rule", "hard_negatives_in_pool",
             "derived_positives", "derived_hard_negatives"), 0)  # fmt: skip
        for qid, (subtask, _) in sorted(data.queries.items()):
            if subtask.family != family:
                continue
            rules = derived.get(qid, {})
            counts["derived_positives"] += sum(r == 2 for r in rules.values())
            counts["derived_hard_negatives"] += sum(r == 1 for r in rules.values())
            for doc, rel in data.qrels.get(qid, {}).items():
                entry["positives" if rel == 2 else "hard_negatives"] += 1
                if rules.get(doc) == rel:
                    counts["positives_by_rule" if rel == 2 else "hard_negatives_by_rule"] += 1
                if rel == 1 and pools.get(qid, {}).get(doc) == 1:
                    counts["hard_negatives_in_pool"] += 1
                failed = family != "c2t" and data.code[doc].meta.get("passed") is False
                if rel == 2 and failed:
                    by = entry["failed_positives"]
                    by[subtask.name] = by.get(subtask.name, 0) + 1
        if scratch:
            entry["note"] = f"the rules could not be applied: {scratch[0]}"
        else:
            entry.update(counts)
        audit[family] = entry
    return audit


def _graded(
    qid: str, positives: list[str], steps: list[list[str]], options: QrelsOptions
) -> dict[str, int]:
    """The judgments of one query: ``positives`` at 2, hard negatives at 1 from ``steps``
    (preferred failed, other failed, correct but not qualifying), as ``options`` say."""
    preferred, other_failed, spare = steps
    if options.max_hard_negatives is None:
        hard = preferred + other_failed
        if len(hard) < options.min_hard_negatives:
            hard += spare[: options.min_hard_negatives - len(hard)]
    else:
        hard = []
        for step in steps:
            if len(hard) >= options.min_hard_negatives:
                break
            room = options.max_hard_negatives - len(hard)
            # a step that overflows the cap is drawn from; earlier steps are kept whole
            hard += step if len(step) <= room else drawn(qid, step, room)
    return {**dict.fromkeys(hard, 1), **dict.fromkeys(positives, 2)}


def drawn(qid: str, pool: list[str], k: int) -> list[str]:
    """``k`` of ``pool`` for query ``qid``: the smallest sha256 of ``"{qid}\\0{doc id}"``, a
    reproducible draw (the official maker draws from Python's ``random.seed(42)`` stream)."""
    return sorted(pool, key=lambda d: hashlib.sha256(f"{qid}\0{d}".encode()).hexdigest())[:k]


def _steps(pool: list[str], positives: list[str], preferred: Any, data: ReleaseData) -> list:
    """The maker's three steps over ``pool`` (doc ids): failed ones ``preferred`` accepts, the
    other failed ones, the correct ones that are not ``positives``."""
    code = data.code
    failed = [d for d in pool if not code[d].meta["passed"]]
    first = [d for d in failed if preferred(code[d])]
    taken, qualified = set(first), set(positives)
    return [
        first,
        [d for d in failed if d not in taken],
        [d for d in pool if code[d].meta["passed"] and d not in qualified],
    ]


def _t2c_qrels(
    data: ReleaseData, rec: Record, subtask: SubtaskMetadata, pool: list[str], options: QrelsOptions
) -> dict[str, int]:
    if options.scheme == "v1":
        return dict.fromkeys(pool, 2)
    constraint = rec.fields.get("language_constraint") or subtask.language or "none"
    if constraint in ("none", "any"):
        constraint = None
    elif constraint not in LANGUAGES:
        raise ValueError(f"unknown language_constraint {constraint!r}")
    code = data.code
    passed = [d for d in pool if code[d].meta["passed"]]
    positives = [
        d for d in passed if constraint is None or code[d].fields["language"] == constraint
    ]
    steps = _steps(
        pool,
        positives,
        lambda r: constraint is None or r.fields["language"] == constraint,
        data,
    )
    return _graded(rec.fields["query_id"], positives, steps, options)


def _c2c_qrels(
    data: ReleaseData, rec: Record, subtask: SubtaskMetadata, pool: list[str], options: QrelsOptions
) -> dict[str, int]:
    anchor_id = rec.meta["anchor_code_id"]
    anchor = data.code[anchor_id]
    pool = [d for d in pool if d != anchor_id]
    if options.scheme == "v1":
        return dict.fromkeys(pool, 2)
    code = data.code
    lang = rec.fields.get("anchor_language") or anchor.fields["language"]
    model = rec.fields.get("anchor_model") or anchor.fields.get("model")
    targets = rec.meta.get("target_languages")
    passed = [d for d in pool if code[d].meta["passed"]]
    if subtask.variant == "cross_lang":
        wanted = set(targets) if targets else set(LANGUAGES) - {lang}
        positives = [
            d
            for d in passed
            if code[d].fields["language"] in wanted - {lang}
            and code[d].fields.get("model") == model
        ]
    elif subtask.variant == "cross_model":
        wanted = set(targets) if targets else {lang}
        positives = [
            d
            for d in passed
            if code[d].fields["language"] in wanted and code[d].fields.get("model") != model
        ]
    elif subtask.variant == "mono_lang":
        positives = [d for d in passed if code[d].fields["language"] == lang]
    else:
        raise ValueError(
            f"no rule derives qrels for the code-to-code subtask {subtask.name!r}: ship "
            "code2code_qrels for it"
        )
    preferred = {
        "cross_lang": lambda r: r.fields["language"] != lang,
        "mono_lang": lambda r: r.fields.get("model") != model and r.fields["language"] == lang,
        "cross_model": lambda r: r.fields.get("model") != model and r.fields["language"] != lang,
    }[subtask.variant]
    steps = _steps(pool, positives, preferred, data)
    return _graded(rec.fields["query_id"], positives, steps, options)


def _c2t_qrels(
    data: ReleaseData,
    qid: str,
    rec: Record,
    subtask: SubtaskMetadata,
    pid: str,
    texts_by_problem: Mapping[str, list[str]],
    options: QrelsOptions,
) -> dict[str, int]:
    if subtask.variant == "match":
        text_id = rec.fields["text_id"]
        if rec.fields["label"] == 1:
            return {text_id: 2}
        return {} if options.scheme == "v1" else {text_id: 1}
    style = options.original_text_style
    same = texts_by_problem.get(pid, [])
    originals = [t for t in same if _is_original(data.texts[t], style)]
    if not originals:
        raise ValueError(
            f"no original description (text_style {style!r}) for problem {pid!r} in the text "
            "corpus; set QrelsOptions.original_text_style if the release names it otherwise"
        )
    if options.scheme == "v1":
        return dict.fromkeys(originals, 2)
    noise = [t for t in same if t not in originals][: options.c2t_hard_negatives]
    if len(noise) < options.c2t_hard_negatives:
        others = [
            t
            for t, r in sorted(data.texts.items())
            if not _is_original(r, style) and problem_of(r) != pid
        ]
        others.sort(key=lambda t: hashlib.sha256(f"{qid}\0{t}".encode()).hexdigest())
        noise += others[: options.c2t_hard_negatives - len(noise)]
    return {**dict.fromkeys(noise, 1), **dict.fromkeys(originals, 2)}


def _is_original(rec: Record, style: str) -> bool:
    """Whether a text is the original description of its problem (``style`` as in
    :attr:`QrelsOptions.original_text_style`)."""
    if style == "auto":
        return not is_noise_text(rec)
    return rec.fields.get("text_style") == style
