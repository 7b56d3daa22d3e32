"""Write a cut release in the official layout: labelled code, texts and queries in, files out.

The step after execution (:mod:`coreb_toolkit.releases.pipeline`): :func:`emit_release` turns the
labelled candidates (:class:`LabelledCode`), the statements and the generated texts into the
release's corpus, query and code-to-text qrels files; :func:`write_derived_qrels` adds the t2c and
c2c qrels derived by the reader, and :func:`release_summary` the figures of
``release_report.json``.

Document ids (``code_<tag>_*``, ``text_<tag>_*``) are a seeded shuffle (:func:`shuffled_ids`):
their order says nothing about problems or hard negatives, so no tie-break by doc id favours
either side.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coreb_toolkit.builders.coreb.layout import FAMILIES
from coreb_toolkit.builders.coreb.records import Release, ReleaseData
from coreb_toolkit.builders.coreb.statistics import release_statistics
from coreb_toolkit.releases import texts
from coreb_toolkit.releases.prompts import NOISE_STRATEGIES
from coreb_toolkit.sources.base import SourceCandidate, SourceProblem
from coreb_toolkit.vocabulary import ANY_LANGUAGE, LANGUAGE_NAMES

if TYPE_CHECKING:  # the pipeline imports this module; its config is only a type here
    from coreb_toolkit.releases.pipeline import ReleaseConfig


@dataclass
class LabelledCode:
    """A candidate with its label: what the corpus row of one piece of code says.

    Attributes:
        cand: the source candidate.
        passed: whether it passes (the sandbox's verdict, or the source's).
        pass_rate, test_passed, test_total: the sandbox's figures, where it ran.
        extra: ``label_source``, verdict counts, public-test result: copied into the row's meta.
        code_id: its document id, set when the release is written.
    """

    cand: SourceCandidate
    passed: bool
    pass_rate: float | None
    test_passed: int | None
    test_total: int | None
    extra: dict[str, Any] = field(default_factory=dict)
    code_id: str = ""


def shuffled_ids(prefix: str, n: int, seed: int, salt: str) -> list[str]:
    """``n`` document ids ``<prefix>00001`` ... in a seeded random order (the k-th item's id).

    Ids in build order would put each mutant right after the solution it came from and each
    noise text right after its statement; trec_eval breaks a score tie by doc id (descending),
    so a bag-of-words retriever that ties the two would rank the hard negative first every
    time. A uniform shuffle, drawn from ``seed`` and ``salt`` alone, carries no information
    about problems, languages or which document is a hard negative, and is the same on every
    rebuild with the seed.
    """
    numbers = list(range(1, n + 1))
    random.Random(f"{seed}:ids:{salt}").shuffle(numbers)
    width = max(5, len(str(n)))
    return [f"{prefix}{k:0{width}d}" for k in numbers]


def _order(codes: list[LabelledCode]) -> list[LabelledCode]:
    lang = {x: i for i, x in enumerate(LANGUAGE_NAMES)}
    return sorted(
        codes,
        key=lambda c: (c.cand.problem_id, lang[c.cand.language], c.cand.model,
                       "mutant_of" in c.cand.meta, c.cand.candidate_id),
    )  # fmt: skip


def emit_release(
    root: Path,
    problems: dict[str, SourceProblem],
    codes: list[LabelledCode],
    statements: dict[str, str],
    abbreviations: dict[str, str],
    search: dict[str, list[str]],
    noise: dict[str, list[str]],
    how: str,
    config: ReleaseConfig,
    report: dict[str, Any],
) -> None:
    """Write the corpora, the queries and the code-to-text qrels of one release under ``root``.

    ``how`` says how the texts were made (``deterministic`` or ``llm:<name>``); ``report``
    gets ``problems_without_a_correct_solution``. Everything random derives from
    ``config.seed``.
    """
    pids = sorted(problems)
    codes = _order(codes)
    code_rows = _code_rows(codes, problems, config)
    text_rows, original_text, noise_ids = _text_rows(
        pids, problems, statements, abbreviations, noise, how, config
    )
    neighbours = texts.lexical_neighbours(statements, k=config.text_hard_negatives)
    by_problem: dict[str, list[LabelledCode]] = defaultdict(list)
    for c in codes:
        by_problem[c.cand.problem_id].append(c)
    queries = _Queries(how)
    for pid in pids:
        rng = random.Random(f"{config.seed}:{pid}")
        correct = [
            c for c in by_problem.get(pid, []) if c.passed and "mutant_of" not in c.cand.meta
        ]
        if not correct:
            continue
        langs = [x for x in LANGUAGE_NAMES if any(c.cand.language == x for c in correct)]
        queries.text_to_code(pid, langs, statements[pid], abbreviations[pid], search.get(pid, []))
        queries.code_to_code(pid, langs, correct, rng)
        # code-to-text hard negatives: noise texts, else the BM25-closest other statements
        hard = noise_ids.get(pid) or [original_text[o] for o in neighbours.get(pid, [])]
        queries.code_to_text(
            pid, langs, correct, rng, original_text[pid], hard[: config.text_hard_negatives]
        )
        closest = original_text[neighbours[pid][0]] if neighbours.get(pid) else None
        queries.match_pairs(pid, correct, rng, original_text[pid], closest)
    skipped = [pid for pid in pids if not any(c.passed for c in by_problem.get(pid, []))]
    report["problems_without_a_correct_solution"] = len(skipped)
    split = config.name

    def write(config_name: str, rows: list[dict]) -> None:
        path = root / config_name / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")

    # in id order: the line order of a corpus file tells no more than its ids
    write("code_corpus", sorted(code_rows, key=lambda r: r["code_id"]))
    write("text_corpus", sorted(text_rows, key=lambda r: r["text_id"]))
    write("text2code_queries", queries.t2c)
    write("code2code_queries", queries.c2c)
    write("code2text_queries", queries.c2t)
    write(
        "code2text_qrels",
        [{"query_id": q, "doc_id": d, "relevance": r} for q, d, r in queries.c2t_qrels],
    )


def _code_rows(
    codes: list[LabelledCode], problems: dict[str, SourceProblem], config: ReleaseConfig
) -> list[dict[str, Any]]:
    """The code corpus rows, in ``codes`` order; sets each code's shuffled ``code_id``."""
    rows = []
    ids = shuffled_ids(f"code_{config.tag}_", len(codes), config.seed, "code")
    for c, code_id in zip(codes, ids, strict=True):
        c.code_id = code_id
        cand = c.cand
        meta = {
            "source_problem_id": cand.problem_id,
            "solution_key": f"{cand.model}_{cand.language}",
            "passed": c.passed,
            "pass_rate": c.pass_rate,
            "test_passed": c.test_passed,
            "test_total": c.test_total,
            "candidate_id": cand.candidate_id,
            "source": problems[cand.problem_id].source,
            **c.extra,
            **{k: v for k, v in cand.meta.items() if k in ("mutation", "mutant_of")},
        }
        rows.append({
            "code_id": c.code_id, "code": cand.code, "language": cand.language,
            "model": cand.model, "code_length": len(cand.code), "meta": meta,
        })  # fmt: skip
    return rows


def _text_rows(
    pids: list[str],
    problems: dict[str, SourceProblem],
    statements: dict[str, str],
    abbreviations: dict[str, str],
    noise: dict[str, list[str]],
    how: str,
    config: ReleaseConfig,
) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, list[str]]]:
    """The text corpus: one original per problem, plus the LLM noise texts where a generator
    made them; with each problem's original text id and its noise text ids."""
    text_rows, first_of = [], {}
    for pid in pids:
        first_of[pid] = len(text_rows)
        text_rows.append({
            "text_id": None, "text_style": "original", "text": statements[pid],
            "text_length": len(statements[pid]), "abbreviated_text": abbreviations[pid],
            "abbreviated_text_length": len(abbreviations[pid]),
            "meta": {"source_problem_id": pid, "generation": how,
                     "title": problems[pid].title},
        })  # fmt: skip
        for strategy, body in zip(NOISE_STRATEGIES, noise.get(pid, []), strict=False):
            text_rows.append({
                "text_id": None, "text_style": "noise",
                "text": body, "text_length": len(body), "abbreviated_text": None,
                "abbreviated_text_length": None,
                "meta": {"source_problem_id": pid, "generation": how, "strategy": strategy},
            })  # fmt: skip
    text_ids = shuffled_ids(f"text_{config.tag}_", len(text_rows), config.seed, "text")
    for row, text_id in zip(text_rows, text_ids, strict=True):
        row["text_id"] = text_id
    original_text = {pid: text_rows[k]["text_id"] for pid, k in first_of.items()}
    noise_ids: dict[str, list[str]] = defaultdict(list)
    for row in text_rows:
        if row["text_style"] == "noise":
            noise_ids[row["meta"]["source_problem_id"]].append(row["text_id"])
    return text_rows, original_text, noise_ids


class _Queries:
    """The query rows of every family and the code-to-text qrels, numbered per subtask."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.t2c: list[dict[str, Any]] = []
        self.c2c: list[dict[str, Any]] = []
        self.c2t: list[dict[str, Any]] = []
        self.c2t_qrels: list[tuple[str, str, int]] = []
        self._counters: Counter[str] = Counter()

    def qid(self, subtask: str) -> str:
        self._counters[subtask] += 1
        return f"q_{subtask}_{self._counters[subtask]:04d}"

    def text_to_code(
        self, pid: str, langs: list[str], statement: str, abbreviation: str, search: list[str]
    ) -> None:
        variants = {
            "full_retro": (statement, "full_description"),
            "canonical_retro": (abbreviation, "abbreviated"),
        }
        for variant, (text, sub_type) in variants.items():
            for suffix in (ANY_LANGUAGE, *langs):
                name = f"t2c_{variant}_{suffix}"
                self.t2c.append(
                    _t2c_row(self.qid(name), name, text, sub_type, suffix, pid, self.how)
                )
        for k, query in enumerate(search):
            for suffix in (ANY_LANGUAGE, *langs):
                name = f"t2c_search_{suffix}"
                row = _t2c_row(
                    self.qid(name), name, query, "description_search", suffix, pid, self.how
                )
                row["meta"]["search_index"] = k
                self.t2c.append(row)

    def code_to_code(
        self, pid: str, langs: list[str], correct: list[LabelledCode], rng: random.Random
    ) -> None:
        """One anchor per language, targets = the same model's solutions in other languages."""
        for lang in langs:
            anchor = rng.choice([c for c in correct if c.cand.language == lang])
            targets = sorted(
                {c.cand.language for c in correct
                 if c.cand.model == anchor.cand.model and c.cand.language != lang},
                key=LANGUAGE_NAMES.index,
            )  # fmt: skip
            if targets:
                self.c2c.append({
                    "query_id": self.qid("c2c_cross_lang"), "query": anchor.cand.code,
                    "split": "code2code", "subtask": "c2c_cross_lang",
                    "anchor_language": lang, "anchor_model": anchor.cand.model,
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                             "target_languages": targets,
                             "num_target_solutions": sum(
                                 c.cand.language in targets and c.cand.model == anchor.cand.model
                                 for c in correct)},
                })  # fmt: skip

    def code_to_text(
        self,
        pid: str,
        langs: list[str],
        correct: list[LabelledCode],
        rng: random.Random,
        original: str,
        hard: list[str],
    ) -> None:
        """Anchors per language and one for "any"; the statement is the positive (2), ``hard``
        the hard negatives (1)."""
        anchors = [(ANY_LANGUAGE, rng.choice(correct))] + [
            (lang, rng.choice([c for c in correct if c.cand.language == lang])) for lang in langs
        ]
        for variant, text_type in (("full_retro", "full_description"),
                                   ("canonical_retro", "canonical_description")):  # fmt: skip
            for suffix, anchor in anchors:
                q = self.qid(f"c2t_{variant}_{suffix}")
                self.c2t.append({
                    "query_id": q, "query": anchor.cand.code, "split": "code2text",
                    "subtask": f"c2t_{variant}_{suffix}",
                    "anchor_language": anchor.cand.language, "anchor_model": anchor.cand.model,
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                             "task_type": "description_retrieval", "text_type": text_type},
                })  # fmt: skip
                self.c2t_qrels.append((q, original, 2))
                self.c2t_qrels += [(q, t, 1) for t in hard]

    def match_pairs(
        self,
        pid: str,
        correct: list[LabelledCode],
        rng: random.Random,
        original: str,
        closest: str | None,
    ) -> None:
        """c2t_match: a positive pair and a negative pair with the closest other statement."""
        pos, neg = rng.choice(correct), rng.choice(correct)
        pairs = [(pos, original, 1, "positive")]
        if closest is not None:
            pairs.append((neg, closest, 0, "bm25_neighbour"))
        for anchor, text_id, lab, pair_type in pairs:
            q = self.qid("c2t_match")
            self.c2t.append({
                "query_id": q, "code": anchor.cand.code, "text_id": text_id,
                "split": "code2text", "subtask": "c2t_match", "label": lab, "text_type": "full",
                "anchor_language": anchor.cand.language, "anchor_model": anchor.cand.model,
                "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                         "pair_type": pair_type},
            })  # fmt: skip
            self.c2t_qrels.append((q, text_id, 2 if lab else 1))


def _t2c_row(
    qid: str, subtask: str, text: str, sub_type: str, suffix: str, pid: str, how: str
) -> dict:
    return {
        "query_id": qid, "query": text, "split": "text2code", "subtask": subtask,
        "query_type": "language_agnostic" if suffix == ANY_LANGUAGE else "language_specific",
        "sub_query_type": sub_type,
        "language_constraint": "none" if suffix == ANY_LANGUAGE else suffix,
        "meta": {"source_problem_id": pid,
                 "generation": "source" if sub_type == "full_description" else how},
    }  # fmt: skip


def write_derived_qrels(root: Path, release: Release, config: ReleaseConfig) -> None:
    """Write the t2c and c2c qrels that the reader derived from ``release`` (the v2 scheme)."""
    data = release.releases[config.name]
    for family, spec in FAMILIES.items():
        if family == "c2t":
            continue
        rows = [
            {"query_id": q, "doc_id": d, "relevance": r}
            for q in sorted(data.qrels)
            if data.queries[q][0].family == family
            for d, r in sorted(data.qrels[q].items())
        ]
        path = root / spec["qrels"] / f"{config.name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def release_summary(data: ReleaseData) -> dict[str, Any]:
    """The figures of ``release_report.json``'s ``statistics``: counts, qrels, query words."""
    st = release_statistics(data)
    return {
        "code": st["n_code"],
        "texts": st["n_text"],
        "queries": st["n_queries"],
        "queries_by_subtask": dict(
            sorted(Counter(s.name for s, _ in data.queries.values()).items())
        ),
        "code_by_language": dict(sorted(st["code_by_language"].items())),
        "passed_by_language": dict(sorted(st["code_passed_by_language"].items())),
        "qrels": {f: {str(k): v for k, v in c.items()} for f, c in st["qrels"].items()},
        "query_words_in_positive_code": query_words_in_positive_code(data),
    }


def query_words_in_positive_code(data: ReleaseData) -> dict[str, dict[str, Any]]:
    """Per ``t2c_*_any`` subtask: how many query words occur in the code of a positive.

    A query word (:func:`coreb_toolkit.releases.texts.query_words`: lowercased, stopwords left
    out) counts when it is an identifier of one of the query's positives (relevance 2), whole or
    one of its camelCase / snake_case words, or a word in its strings and comments
    (:func:`coreb_toolkit.releases.texts.code_words`). A high share means the subtask can be
    solved by string matching; the paper's search queries, written by an LLM from the
    statement, make every model score near zero.
    """
    rows: dict[str, dict[str, Any]] = {}
    vocab: dict[str, frozenset[str]] = {}
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family != "t2c" or subtask.language != ANY_LANGUAGE:
            continue
        positives = [d for d, r in data.qrels.get(qid, {}).items() if r == 2 and d in data.code]
        if not positives:
            continue
        in_code: set[str] = set()
        for d in positives:
            if d not in vocab:
                vocab[d] = texts.code_words(str(data.code[d].fields.get("code") or ""))
            in_code |= vocab[d]
        words = texts.query_words(str(rec.fields.get("query") or ""))
        row = rows.setdefault(subtask.name, {"queries": 0, "words": 0, "in_positive_code": 0,
                                             "queries_without_any": 0})  # fmt: skip
        found = sum(w in in_code for w in words)
        row["queries"] += 1
        row["words"] += len(words)
        row["in_positive_code"] += found
        row["queries_without_any"] += found == 0
    for row in rows.values():
        row["mean_words"] = round(row["words"] / row["queries"], 2)
        row["share"] = round(row["in_positive_code"] / row["words"], 4) if row["words"] else None
    return dict(sorted(rows.items()))
