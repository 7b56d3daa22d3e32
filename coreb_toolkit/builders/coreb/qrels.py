"""Qrels from execution outcomes, for the families a release ships without qrels.

[CoREB §3 Step 4, A.2, Table 5] Shipped qrels are always used as given; :class:`QrelsOptions`
says how the missing ones are derived (the v2 graded scheme or the older v1 binary one).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coreb_toolkit.builders.coreb.layout import FAMILIES
from coreb_toolkit.builders.coreb.records import Problem, Record, ReleaseData, problem_of
from coreb_toolkit.vocabulary import LANGUAGES, SubtaskMetadata

QRELS_SCHEMES: tuple[str, ...] = ("v1", "v2")


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
        default=1,
        metadata={
            "help": "The paper supplements the failed-solution pool with correct solutions "
            "that do not qualify (wrong language, same language in cross-language pairs) 'when "
            "the failed pool is insufficient' without a number. Default 1: only a query with "
            "no failed solution at all is supplemented, up to this many, in doc id order, so "
            "every query that can have a hard negative has one and no correct solution is "
            "called a hard negative without need."
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
    original_text_style: str = field(
        default="original",
        metadata={
            "help": "The text_style of the original description in the text corpus; every "
            "other style is a noise description."
        },
    )

    def __post_init__(self) -> None:
        if self.scheme not in QRELS_SCHEMES:
            raise ValueError(f"QrelsOptions.scheme must be 'v1' or 'v2', got {self.scheme!r}")
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
    """Judge, with ``options``, every query of a family ``data`` ships no qrels for; what
    cannot be judged becomes a problem, a query left without judgment a warning."""
    missing = [f for f in FAMILIES if f not in data.qrels_source]
    if not missing:
        return
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
    if problems:
        return
    for family in missing:
        data.qrels_source[family] = f"derived-{options.scheme}"
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family not in missing:
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
                judged = _t2c_qrels(data, rec, subtask, by_problem[pid], options)
            elif subtask.family == "c2c":
                judged = _c2c_qrels(data, rec, subtask, by_problem[pid], options)
            else:
                judged = _c2t_qrels(data, qid, rec, subtask, pid, texts_by_problem, options)
        except ValueError as err:
            problems.append(Problem(rec.where, str(err)))
            continue
        data.qrels[qid] = judged
        if not judged:
            warnings.append(Problem(rec.where, f"query {qid!r} has no judged document"))


def _graded(
    positives: list[str], failed: list[str], spare: list[str], options: QrelsOptions
) -> dict[str, int]:
    hard = list(failed)
    if len(hard) < options.min_hard_negatives:
        hard += spare[: options.min_hard_negatives - len(hard)]
    return {**dict.fromkeys(hard, 1), **dict.fromkeys(positives, 2)}


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
    failed = [d for d in pool if not code[d].meta["passed"]]
    spare = [d for d in passed if d not in positives]
    return _graded(positives, failed, spare, options)


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
    failed = [d for d in pool if not code[d].meta["passed"]]
    spare = [d for d in passed if d not in positives]
    return _graded(positives, failed, spare, options)


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
    originals = [t for t in same if data.texts[t].fields.get("text_style") == style]
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
            if r.fields.get("text_style") != style and problem_of(r) != pid
        ]
        others.sort(key=lambda t: hashlib.sha256(f"{qid}\0{t}".encode()).hexdigest())
        noise += others[: options.c2t_hard_negatives - len(noise)]
    return {**dict.fromkeys(noise, 1), **dict.fromkeys(originals, 2)}
