"""What a release's files say, written from labelled code without the sandbox.

``emit_release`` is the step after execution: labelled candidates in, the official layout out. These
tests feed it synthetic problems, so they need no toolchain.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.releases.emit import LabelledCode, emit_release, release_summary
from coreb_toolkit.releases.pipeline import ReleaseConfig
from coreb_toolkit.releases.prompts import NOISE_STRATEGIES
from coreb_toolkit.sources.base import SourceCandidate, SourceProblem

N_PROBLEMS = 40


def _problems(n: int = N_PROBLEMS) -> dict[str, SourceProblem]:
    return {
        f"p/{i:03d}": SourceProblem(
            problem_id=f"p/{i:03d}",
            source="synthetic",
            statement=f"Return the {i}th value of the sequence of problem number {i} here.",
            title=f"task_{i}",
            entry_point=f"task_{i}",
        )
        for i in range(n)
    }


def _candidate(pid: str, language: str, code: str, *, mutant_of: str | None = None) -> LabelledCode:
    cid = f"{pid}/{language}/canonical" + ("/mutant-0" if mutant_of else "")
    meta = {"mutant_of": mutant_of, "mutation": {"operator": "boundary"}} if mutant_of else {}
    cand = SourceCandidate(
        candidate_id=cid, problem_id=pid, language=language, model="canonical", code=code,
        label=mutant_of is None, label_source="synthetic", meta=meta,
    )  # fmt: skip
    return LabelledCode(cand, mutant_of is None, 1.0 if mutant_of is None else 0.0, None, None)


def _codes(problems: dict[str, SourceProblem]) -> list[LabelledCode]:
    """Per problem: a Python solution, its mutant (same bag of tokens but one operator), Java."""
    out = []
    for k, pid in enumerate(problems):
        py = f"def task_{k}(xs):\n    return [x for x in xs if x < {k}]\n"
        out.append(_candidate(pid, "python", py))
        out.append(
            _candidate(pid, "python", py.replace("<", "<="), mutant_of=f"{pid}/python/canonical")
        )
        java = f"class S {{ int[] task{k}(int[] xs) {{ return xs; }} }}"
        out.append(_candidate(pid, "java", java))
    return out


def _emit_release(root: Path, seed: int) -> dict[str, list[dict]]:
    problems = _problems()
    statements = {pid: p.statement for pid, p in problems.items()}
    noise = {pid: [f"{s} about {pid}" for s in NOISE_STRATEGIES] for pid in problems}
    config = ReleaseConfig(name="release_vemit", seed=seed)
    emit_release(root, problems, _codes(problems), statements, statements,
          {pid: [f"task sequence {k}"] for k, pid in enumerate(problems)}, noise,
          "llm:test", config, {})  # fmt: skip
    return {
        name: [json.loads(line) for line in (root / name / "release_vemit.jsonl").open()]
        for name in ("code_corpus", "text_corpus", "text2code_queries", "code2text_queries")
    }


def _number(doc_id: str) -> int:
    return int(doc_id.rsplit("_", 1)[1])


def _correlation(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return cov / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


@pytest.fixture(scope="module")
def emitted(tmp_path_factory) -> dict[str, list[dict]]:
    return _emit_release(tmp_path_factory.mktemp("emit") / "release", seed=0)


def test_code_ids_carry_no_information(emitted):
    rows = emitted["code_corpus"]
    by_candidate = {r["meta"]["candidate_id"]: r["code_id"] for r in rows}
    mutants = [r for r in rows if "mutant_of" in r["meta"]]
    assert len(mutants) == N_PROBLEMS
    # trec_eval breaks a score tie by doc id, descending: with ids in build order a mutant (the
    # id right after its source's) ranked above its tied solution every time
    above = [r["code_id"] > by_candidate[r["meta"]["mutant_of"]] for r in mutants]
    assert 0.25 <= sum(above) / len(above) <= 0.75
    adjacent = sum(
        abs(_number(r["code_id"]) - _number(by_candidate[r["meta"]["mutant_of"]])) == 1
        for r in mutants
    )
    assert adjacent <= 3  # chance: ~2 in 120 per mutant
    # no trace of the problem / language / mutant order the rows were built in
    built = sorted(
        rows,
        key=lambda r: (r["meta"]["source_problem_id"], r["language"], "mutant_of" in r["meta"]),
    )
    numbers = [_number(r["code_id"]) for r in built]
    assert abs(_correlation(list(range(len(numbers))), numbers)) < 0.3
    assert sorted(numbers) == list(range(1, len(rows) + 1))
    # the file is in id order, so its line order tells nothing either
    assert [r["code_id"] for r in rows] == sorted(r["code_id"] for r in rows)


def test_text_ids_carry_no_information(emitted):
    rows = emitted["text_corpus"]
    original = {r["meta"]["source_problem_id"]: r["text_id"] for r in rows
                if r["text_style"] == "original"}  # fmt: skip
    noise = [r for r in rows if r["text_style"] == "noise"]
    assert len(noise) == 4 * N_PROBLEMS
    # the noise texts of a problem (code-to-text hard negatives) were the four ids after its
    # statement (the positive)
    close = sum(
        0 < _number(r["text_id"]) - _number(original[r["meta"]["source_problem_id"]]) <= 4
        for r in noise
    )
    assert close <= 12  # chance: ~4 in 200 per noise text
    numbers = [_number(original[pid]) for pid in sorted(original)]
    assert abs(_correlation(list(range(len(numbers))), numbers)) < 0.3
    assert [r["text_id"] for r in rows] == sorted(r["text_id"] for r in rows)


def test_queries_point_at_the_shuffled_ids(emitted, tmp_path):
    codes = {r["code_id"]: r for r in emitted["code_corpus"]}
    for q in emitted["code2text_queries"]:
        anchor = codes[q["meta"]["anchor_code_id"]]
        assert anchor["meta"]["source_problem_id"] == q["meta"]["source_problem_id"]
        assert anchor["code"] == q.get("query", q.get("code"))


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_ids_are_deterministic_for_the_seed(tmp_path):
    first = _emit_release(tmp_path / "a", seed=3)
    _emit_release(tmp_path / "b", seed=3)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    other = _emit_release(tmp_path / "c", seed=4)
    ids = {r["meta"]["candidate_id"]: r["code_id"] for r in first["code_corpus"]}
    moved = sum(ids[r["meta"]["candidate_id"]] != r["code_id"] for r in other["code_corpus"])
    assert moved > len(ids) // 2


def test_emitted_release_validates(tmp_path):
    _emit_release(tmp_path / "r", seed=0)
    release = coreb_dataset.read_release(tmp_path / "r")
    data = release.releases["release_vemit"]
    assert len(data.code) == 3 * N_PROBLEMS
    assert release_summary(data)["code"] == 3 * N_PROBLEMS


def test_summary_counts_query_words_found_in_the_positive_code(tmp_path):
    _emit_release(tmp_path / "r", seed=0)
    data = coreb_dataset.read_release(tmp_path / "r").releases["release_vemit"]
    figures = release_summary(data)["query_words_in_positive_code"]
    # search query "task sequence <k>": "task" is a word of the positives' name task_<k>,
    # "sequence" is not, the number is no word
    assert figures["t2c_search_any"] == {
        "queries": N_PROBLEMS, "words": 2 * N_PROBLEMS, "in_positive_code": N_PROBLEMS,
        "queries_without_any": 0, "mean_words": 2.0, "share": 0.5,
    }  # fmt: skip
    # the statement "Return the <k>th value of the sequence of problem number <k> here.": its
    # words th, sequence, problem (the rest are stopwords) are in no positive
    full = figures["t2c_full_retro_any"]
    assert full["words"] == 3 * N_PROBLEMS and full["in_positive_code"] == 0
    assert full["queries_without_any"] == N_PROBLEMS
    assert set(figures) == {"t2c_search_any", "t2c_full_retro_any", "t2c_canonical_retro_any"}


def test_offline_search_queries_leave_out_the_names_of_every_candidate():
    from coreb_toolkit.releases.pipeline import _generated_texts

    statement = (
        "Check whether any two values are closer to each other than the limit; hasCloseElements "
        "returns True then.\nFor example:\n>>> has_close_elements([1.0, 2.0], 0.5)\nFalse"
    )
    problems = {
        "p/0": SourceProblem("p/0", "synthetic", statement, entry_point="has_close_elements")
    }
    python = "def has_close_elements(numbers, threshold):\n    return False\n"
    java = "class S { boolean hasCloseElements(List<Double> values, double limit) { return x; } }"
    codes = [_candidate("p/0", "python", python), _candidate("p/0", "java", java)]
    _, _, search, _, how = _generated_texts(problems, codes, ReleaseConfig())
    assert how == "deterministic"
    words = search["p/0"][0].split()
    assert "closer" in words and "check" in words
    # the Java candidate's parameter names are banned too, and the name in any convention
    assert not {"values", "limit", "has", "close", "elements", "hascloseelements"} & set(words)
