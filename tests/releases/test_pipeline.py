"""The release pipeline end to end on real sources, through the real sandbox."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import Counter
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.cli.main import main
from coreb_toolkit.releases.pipeline import ReleaseConfig, cut_release
from coreb_toolkit.releases.texts import SEARCH_QUERY_WORDS
from coreb_toolkit.sources.registry import resolve
from tests.conftest import SHARED_DATA

pytestmark = pytest.mark.needs_toolchain("bwrap")


def _rows(root: Path, config: str, split: str) -> list[dict]:
    path = root / config / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def human_eval_release(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("he") / "release"
    config = ReleaseConfig(name="release_vtest", max_problems=6, seed=1)
    report = cut_release([resolve("human-eval")], out, config)
    return out, report


def test_human_eval_release_is_valid_and_execution_labelled(human_eval_release):
    out, report = human_eval_release
    release = coreb_dataset.read_release(out)
    data = release.releases["release_vtest"]
    codes = _rows(out, "code_corpus", "release_vtest")
    canon = [c for c in codes if "mutant_of" not in c["meta"]]
    mutants = [c for c in codes if "mutant_of" in c["meta"]]
    assert len(canon) == 6
    # every label comes from a sandbox run: all canonical solutions pass, every kept mutant fails
    assert all(c["meta"]["label_source"] == "sandbox" for c in codes)
    assert all(c["meta"]["passed"] for c in canon)
    assert mutants and not any(m["meta"]["passed"] for m in mutants)
    assert all(m["meta"]["mutation"]["operator"] for m in mutants)
    assert report["mutants"]["kept"] == len(mutants)
    # the corpus code does not repeat the statement (no docstring)
    assert all('"""' not in c["code"] for c in canon)
    subtasks = Counter(s.name for s, _ in data.queries.values())
    for name in (
        "t2c_full_retro_any",
        "t2c_full_retro_python",
        "t2c_canonical_retro_any",
        "t2c_search_python",
        "c2t_full_retro_any",
        "c2t_canonical_retro_python",
    ):
        assert subtasks[name] == 6, name
    assert subtasks["c2t_match"] == 12  # one positive and one BM25-neighbour negative pair each
    assert "c2c_cross_lang" not in subtasks  # Python only: no cross-language target
    # qrels (v2): the canonical solution is the positive, its failing mutants the hard negatives
    by_code = {c["code_id"]: c for c in codes}
    for qid, (subtask, rec) in data.queries.items():
        judged = data.qrels[qid]
        if subtask.family == "t2c":
            pos = [d for d, r in judged.items() if r == 2]
            neg = [d for d, r in judged.items() if r == 1]
            assert len(pos) == 1 and by_code[pos[0]]["meta"]["passed"]
            assert all(by_code[d]["meta"]["mutant_of"] for d in neg)
            assert {by_code[d]["meta"]["source_problem_id"] for d in pos + neg} == {
                rec.meta["source_problem_id"]
            }
    # offline search queries: from the statement alone, naming nothing the code declares
    entry = {p.problem_id: p.entry_point for p in resolve("human-eval")[1]()[0]}
    search = [q for q in _rows(out, "text2code_queries", "release_vtest")
              if q["subtask"] == "t2c_search_any"]  # fmt: skip
    assert len(search) == 6
    for q in search:
        words = q["query"].split()
        name = entry[q["meta"]["source_problem_id"]]
        assert name.replace("_", "") not in words and name not in q["query"]
        assert 1 <= len(words) <= SEARCH_QUERY_WORDS
    overlap = report["statistics"]["query_words_in_positive_code"]
    assert overlap["t2c_search_any"]["queries"] == 6
    texts = {t["text_id"]: t for t in _rows(out, "text_corpus", "release_vtest")}
    assert all(t["meta"]["generation"] == "deterministic" for t in texts.values())
    c2t = [q for q in data.queries if q.startswith("q_c2t_full_retro_any")]
    for q in c2t:
        hard = [d for d, r in data.qrels[q].items() if r == 1]
        assert len(hard) == 4  # the BM25-closest other statements


def test_rerun_is_deterministic_and_resumes(human_eval_release, tmp_path):
    out, _ = human_eval_release
    work = out.with_name(out.name + ".work")
    again = tmp_path / "again"
    config = ReleaseConfig(name="release_vtest", max_problems=6, seed=1)
    cut_release([resolve("human-eval")], again, config, work_dir=work)
    assert _digest(again) == _digest(out)
    with pytest.raises(FileExistsError):
        cut_release([resolve("human-eval")], again, config, work_dir=work)


def test_builds_into_a_hub_folder(human_eval_release, tmp_path):
    import datasets

    out, _ = human_eval_release
    coreb_dataset.build(out, tmp_path / "hub", progress=False)
    ds = datasets.load_dataset(
        str(tmp_path / "hub"), "t2c_full_retro_python", split="release_vtest"
    )
    assert len(ds) == 6 and all(len(r["positive_ids"]) == 1 for r in ds)
    card = (tmp_path / "hub" / "README.md").read_text()
    assert "positives / query" in card and "pass rate" in card


@pytest.mark.needs_shared_data
@pytest.mark.needs_toolchain("g++", "javac", "go", "ruby")
def test_multilingual_release_from_shared_data(tmp_path):
    loaders = [resolve(str(SHARED_DATA / "humaneval_x")), resolve(str(SHARED_DATA / "mbxp"))]
    config = ReleaseConfig(name="release_vmulti", max_problems=3, seed=0, mutant_tries=4)
    report = cut_release(loaders, tmp_path / "multi", config)
    data = coreb_dataset.read_release(tmp_path / "multi").releases["release_vmulti"]
    langs = Counter(r.fields["language"] for r in data.code.values())
    assert set(langs) == {"python", "java", "cpp", "ruby", "go"}
    families = Counter(s.family for s, _ in data.queries.values())
    assert families["t2c"] and families["c2t"] and families["c2c"]
    # c2c: every positive is a passed solution of the anchor's problem in another language
    for qid, (subtask, rec) in data.queries.items():
        if subtask.family != "c2c":
            continue
        anchor = data.code[rec.meta["anchor_code_id"]]
        positives = [d for d, r in data.qrels[qid].items() if r == 2]
        assert positives
        for d in positives:
            doc = data.code[d]
            assert doc.meta["passed"] and doc.fields["language"] != anchor.fields["language"]
            assert doc.meta["source_problem_id"] == anchor.meta["source_problem_id"]
    assert report["sources"]["humaneval-x"]["problems"] == 3
    assert report["statistics"]["code"] == len(data.code)


def test_cli_release_and_build(tmp_path, capsys):
    code = main(["release", "--source", "human-eval", "--limit", "2", "--name", "release_vcli",
                 "--out", str(tmp_path / "rel"), "--build", str(tmp_path / "hub")])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "built" in out
    assert (tmp_path / "hub" / "README.md").is_file()


def test_cli_release_errors_are_clear(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["release", "--source", str(tmp_path), "--out", str(tmp_path / "x")])
    assert info.value.code == 2
    assert "cannot tell what source the folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["release", "--source", "human-eval", "--window", "2025-13", "--out", "x"])
    assert "expected START:END" in capsys.readouterr().err


def test_each_finished_stage_logs_its_counts_and_seconds(tmp_path, caplog):
    config = ReleaseConfig(name="release_vlog", max_problems=2, seed=1, mutant_tries=2)
    with caplog.at_level(logging.INFO, logger="coreb_toolkit.releases.pipeline"):
        report = cut_release([resolve("human-eval")], tmp_path / "rel", config)
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "coreb_toolkit.releases.pipeline" and r.levelno == logging.INFO
    ]
    pattern = re.compile(r"release_vlog: stage (\w+) done in \d+\.\d s \((.*)\)")
    matches = [m for m in map(pattern.fullmatch, lines) if m]
    # one line per stage, in order, each with its counts
    assert [m[1] for m in matches] == ["sources", "execution", "mutants", "texts", "write"]
    counts = {m[1]: m[2] for m in matches}
    assert counts["sources"] == "problems=2, candidates=2"
    assert counts["execution"] == "candidates=2, passed=2"
    mutants = report["mutants"]
    assert counts["mutants"] == (
        f"solutions=2, generated={mutants['generated']}, kept={mutants['kept']}"
    )
    assert counts["texts"] == "problems=2, made=deterministic"
    stats = report["statistics"]
    assert counts["write"] == (
        f"code={stats['code']}, texts={stats['texts']}, queries={stats['queries']}"
    )


class _ScriptedGenerator:
    """A test double with the Generator contract: answers each prompt kind recognisably."""

    name = "scripted"

    def __init__(self):
        self.calls = 0

    def generate(self, messages, *, max_tokens=512, temperature=0.0, seed=None):
        self.calls += 1
        title = messages[-1]["content"].split("\n", 1)[0]  # each prompt names its task
        if title == "# Code Retrieval Query Generation Task":
            return "find close pair under threshold"
        if title == "# Question Content Abbreviation Task":
            return "Short goal."
        if title == "# Code Problem Annotation Task":
            return "Rewritten statement of the task."
        assert title == "# Hard Negative Problem Generation Task", title
        return "A different problem about graphs."


def test_generator_path_labels_every_generated_text(tmp_path):
    from coreb_toolkit.releases.prompts import NOISE_STRATEGIES

    gen = _ScriptedGenerator()
    config = ReleaseConfig(name="release_vgen", max_problems=2, mutants_per_solution=0,
                           generator=gen)  # fmt: skip
    report = cut_release([resolve("human-eval")], tmp_path / "gen", config)
    assert report["texts"] == "llm:scripted"
    texts = _rows(tmp_path / "gen", "text_corpus", "release_vgen")
    originals = [t for t in texts if t["text_style"] == "original"]
    noise = [t for t in texts if t["text_style"] == "noise"]
    assert len(originals) == 2 and len(noise) == 8  # the paper's four strategies per problem
    assert {t["meta"]["strategy"] for t in noise} == set(NOISE_STRATEGIES)
    assert all(t["meta"]["generation"] == "llm:scripted" for t in texts)
    # c2t hard negatives are the problem's own noise texts, not other problems' statements
    data = coreb_dataset.read_release(tmp_path / "gen").releases["release_vgen"]
    for qid, (subtask, rec) in data.queries.items():
        if subtask.name == "c2t_full_retro_any":
            hard = [d for d, r in data.qrels[qid].items() if r == 1]
            assert {data.texts[d].meta["source_problem_id"] for d in hard} == {
                rec.meta["source_problem_id"]
            }
            assert len(hard) == 4
    t2c = _rows(tmp_path / "gen", "text2code_queries", "release_vgen")
    assert {q["query"] for q in t2c if q["subtask"] == "t2c_full_retro_any"} == {
        "Rewritten statement of the task."
    }
    calls = gen.calls
    assert calls == 2 * (1 + 1 + 1 + 4)  # rewrite, abbreviation, search, four noise texts


@pytest.mark.needs_shared_data
def test_livecodebench_samples_keep_their_verdict(tmp_path):
    from coreb_toolkit.sources.livecodebench import WINDOW_V202603

    loader = resolve(str(SHARED_DATA / "lcb_release_v6"), WINDOW_V202603)
    config = ReleaseConfig(name="release_vlcb", window=WINDOW_V202603, max_problems=6)
    report = cut_release([loader], tmp_path / "lcb", config)
    rows = _rows(tmp_path / "lcb", "code_corpus", "release_vlcb")
    codes = [c for c in rows if "mutant_of" not in c["meta"]]
    assert codes and all(c["meta"]["label_source"] == "livecodebench" for c in codes)
    assert {c["model"] for c in codes} <= {"Qwen3-8B", "Qwen2.5-7B-Instruct"}
    # the public tests parsed from the statement were run beside the verdict
    assert all("public_tests_passed" in c["meta"] for c in codes)
    verdicts = report["source_verdicts"]
    # a sample LiveCodeBench passes on its full tests passes the public ones too
    assert verdicts.get("source_pass_public_fail", 0) == 0
    # mutants of the samples that pass are judged by the public tests in the sandbox
    mutants = [c for c in rows if "mutant_of" in c["meta"]]
    passing = sum(c["meta"]["passed"] for c in codes)
    assert report["mutants"]["solutions"] == passing
    assert all(m["meta"]["label_source"] == "sandbox" and not m["meta"]["passed"] for m in mutants)
    texts = _rows(tmp_path / "lcb", "text_corpus", "release_vlcb")
    assert all(t["meta"]["source_problem_id"].startswith("lcb/") for t in texts)
