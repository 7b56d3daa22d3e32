"""Problem-level disjointness and 10-gram decontamination between training and evaluation data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.coreb_dataset import release as R
from trainers.decontamination import (
    ContaminationError,
    EvalSource,
    check_disjointness,
    is_data,
    statement_ngrams,
)
from trainers.examples import coreb_examples, problem_statements

# two long evaluation statements (V3's P1 and P2), written into a copy of the fixture release
P1_TEXT = (
    "given an array of integers and a target value return the indices of two numbers that "
    "add up to it"
)
P2_TEXT = (
    "count the number of distinct islands in a binary grid where land cells connect in four "
    "directions only"
)
P1_WORDS, P2_WORDS = P1_TEXT.split(), P2_TEXT.split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("decontamination")
    release = R.write_release(root / "release")
    long = R.write_release(root / "long")
    texts = [dict(r) for r in R.V3_TEXT]
    texts[0]["text"], texts[2]["text"] = P1_TEXT, P2_TEXT  # t3(1) is P1's, t3(3) P2's original
    (long / "text_corpus" / f"{R.V3}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in texts), encoding="utf-8"
    )
    examples = coreb_examples(release, R.V2)
    return {
        "release": release,
        "long": long,
        "examples": examples,
        "statements": problem_statements(release, R.V2),
    }


def test_disjoint_releases_pass_with_an_empty_report(setup):
    spec = f"{setup['release']}@{R.V3}"
    kept, report = check_disjointness(setup["examples"], setup["statements"], [spec])
    assert kept == setup["examples"]
    assert report.to_dict() == {
        "eval_sources": [spec], "train_problems": 2, "eval_problems": 2, "shared_problems": [],
        "near_duplicates": [], "ngram": 10, "max_overlap": 0.0, "action": "error",
        "allow_shared_problems": False, "dropped_examples": 0,
        "template": report.template, "closest": [],
    }  # fmt: skip
    assert report.template["enabled"] is True and report.template["frequent_train_ngrams"] == 0
    json.dumps(report.to_dict())


def test_a_shared_problem_is_refused(setup):
    spec = f"{setup['release']}@{R.V2}"  # the training release itself
    with pytest.raises(ContaminationError, match=r"shares 2 problem\(s\).*P8, P9") as err:
        check_disjointness(setup["examples"], setup["statements"], [spec])
    assert "allow_shared_problems=True" in str(err.value)
    assert isinstance(err.value, ValueError) and err.value.report.shared_problems == ["P8", "P9"]


def test_shared_problems_allowed_are_reported(setup):
    spec = str(setup["release"])  # every release: P1, P2, P8, P9
    kept, report = check_disjointness(
        setup["examples"], setup["statements"], [spec], allow_shared_problems=True
    )
    assert kept == setup["examples"]
    assert report.shared_problems == ["P8", "P9"] and report.eval_problems == 4
    assert report.allow_shared_problems and report.near_duplicates == []


def _copy(words: list[str]) -> str:
    return " ".join(words)


def test_a_near_duplicate_statement_is_refused(setup):
    # P9's statement copies a 10-word run of P1's (another problem): 12 words, 3 ten-grams, 1 shared
    statements = {**setup["statements"], "P9": [f"Please {_copy(P1_WORDS[:10])} thanks."]}
    spec = f"{setup['long']}@{R.V3}"
    with pytest.raises(ContaminationError, match=r"P9 ~ P1 of .*long@release_v2603.*0\.333"):
        check_disjointness(setup["examples"], statements, [spec])
    # within the threshold it passes
    _, report = check_disjointness(setup["examples"], statements, [spec], max_overlap=1 / 3)
    assert report.near_duplicates == []
    # a run of 9 words shares no 10-gram
    nine = {**setup["statements"], "P9": [f"Please {_copy(P1_WORDS[:9])} thanks a lot."]}
    _, report = check_disjointness(setup["examples"], nine, [spec])
    assert report.near_duplicates == []


def test_report_keeps_and_names_the_eval_problem_with_most_shared_ngrams(setup):
    # 10 words of P1 then 11 of P2: 12 ten-grams, 1 shared with P1, 2 with P2
    statements = {**setup["statements"], "P9": [_copy(P1_WORDS[:10] + P2_WORDS[:11])]}
    spec = f"{setup['long']}@{R.V3}"
    kept, report = check_disjointness(
        setup["examples"], statements, [spec], near_duplicate_action="report"
    )
    assert kept == setup["examples"]
    assert report.near_duplicates == [
        {"train_problem": "P9", "eval_problem": "P2", "eval_source": spec, "overlap": 3 / 12}
    ]
    assert report.to_dict()["near_duplicates"] == report.near_duplicates


def test_drop_removes_the_problem_examples_and_counts_them(setup):
    statements = {**setup["statements"], "P9": [f"so {_copy(P2_WORDS)}"]}
    examples = setup["examples"]
    spec = f"{setup['long']}@{R.V3}"
    kept, report = check_disjointness(examples, statements, [spec], near_duplicate_action="drop")
    expected = [e for e in examples if "P9" not in (e["source_problem_id"], e["doc_problem_id"])]
    assert kept == expected and 0 < len(kept) < len(examples)
    assert report.dropped_examples == len(examples) - len(expected)
    assert [d["train_problem"] for d in report.near_duplicates] == ["P9"]


def test_short_statements_count_on_an_exact_match_only(setup):
    spec = f"{setup['release']}@{R.V3}"
    same = "full statement of p1 ORIGINAL text_v202603_00001"  # V3's P1 text, normalised
    statements = {"P9": [same]}
    with pytest.raises(ContaminationError, match=r"P9 ~ P1 .*overlap 1\.000"):
        check_disjointness(setup["examples"], statements, [spec])
    _, report = check_disjointness(setup["examples"], {"P9": ["full statement of p1"]}, [spec])
    assert report.near_duplicates == []


def test_ngrams_and_argument_errors(setup):
    assert len(statement_ngrams("A b, c! d", 2)) == 3
    assert statement_ngrams("A b", 3) == statement_ngrams("a  B!", 3)
    assert statement_ngrams("", 3) == set()
    source = EvalSource.parse("org/name@release_v2603")
    assert (source.path, source.release) == ("org/name", "release_v2603")
    assert EvalSource.parse("some/folder").release is None
    bad = [({"ngram": 0}, "ngram"), ({"max_overlap": 1.5}, "max_overlap"),
           ({"near_duplicate_action": "warn"}, "near_duplicate_action")]  # fmt: skip
    for kwargs, field in bad:
        with pytest.raises(ValueError, match=field):
            check_disjointness(setup["examples"], {}, [], **kwargs)
    with pytest.raises(ValueError, match="must be a list"):
        check_disjointness(setup["examples"], {}, str(Path("x")))


# -- the template filter ------------------------------------------------------------------
BOILERPLATE = "the input is given from standard input in the following format"  # 11 words


def _eval_with(root: Path, texts: list[str]) -> str:
    """A copy of the fixture release whose V3 text corpus also holds ``texts`` (problems E0,
    E1, ...)."""
    release = R.write_release(root)
    rows = [dict(r) for r in R.V3_TEXT]
    for i, text in enumerate(texts):
        row = dict(R.V3_TEXT[0])
        row.update(text_id=f"tx{i}", meta={"source_problem_id": f"E{i}"}, text=text)
        rows.append(row)
    (release / "text_corpus" / f"{R.V3}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    return f"{release}@{R.V3}"


def test_frequent_boilerplate_and_sample_data_are_ignored_but_a_copy_is_not(setup, tmp_path):
    stories = [f"story number {w} about trees and graphs and paths {w} again" for w in "abcde"]
    evals = [f"{s} {BOILERPLATE} n m" for s in stories[:3]]  # boilerplate in 3 of 3 problems
    spec = _eval_with(tmp_path / "ev", evals)
    # the training statement shares only the boilerplate and a run of sample numbers
    numbers = "1 2 3 4 5 6 7 8 9 10 11 12"
    train = {"P9": [f"compute the answer quickly {BOILERPLATE} {numbers}"]}
    with pytest.raises(ContaminationError, match="template n-grams compared"):
        check_disjointness(setup["examples"], train, [spec], template_filter=False)
    _, report = check_disjointness(setup["examples"], train, [spec])
    assert report.near_duplicates == [] and report.closest == []
    # the boilerplate's 10-grams and those running into it ("again the input ...", "... n m")
    assert report.template["frequent_eval_ngrams"] == 5
    shown = {d["ngram"]: (d["side"], d["problems"]) for d in report.template["most_frequent"]}
    assert shown[" ".join(BOILERPLATE.split()[:10])] == ("eval", 3)
    assert report.template["data_ngrams"] >= 3
    # a copy of one evaluation statement, boilerplate and all, is still a near duplicate
    train = {"P9": [evals[1]]}
    with pytest.raises(ContaminationError, match=r"P9 ~ E1 .*overlap 1\.000"):
        check_disjointness(setup["examples"], train, [spec])
    # ... and a phrase in only two problems is not template: it is compared
    spec2 = _eval_with(tmp_path / "ev2", evals[:2])
    with pytest.raises(ContaminationError, match="P9 ~ E"):
        check_disjointness(setup["examples"], {"P9": [f"solve it {BOILERPLATE}"]}, [spec2])


def test_the_template_share_scales_with_the_number_of_problems(setup, tmp_path):
    stories = [f"story {i} of the trees and the many paths it has here" for i in range(5)]
    spec = _eval_with(tmp_path / "ev", [f"{s} {BOILERPLATE}" for s in stories])
    train = {"P9": [f"solve it {BOILERPLATE}"]}
    _, report = check_disjointness(setup["examples"], train, [spec])  # 5 of 5 > 1%
    assert report.near_duplicates == []
    # more than 100% is never reached: with template_share=1 nothing is frequent
    with pytest.raises(ContaminationError, match="P9 ~ E"):
        check_disjointness(setup["examples"], train, [spec], template_share=1.0)
    with pytest.raises(ValueError, match="template_share"):
        check_disjointness(setup["examples"], train, [spec], template_share=2)


def test_data_ngrams_are_numbers_and_one_character_symbols():
    assert is_data(["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"])
    assert is_data(["following", "format", "n", "m", "a₁", "b₁", "a₂", "b₂", "aₘ", "bₘ"])
    assert not is_data(
        ["given", "an", "array", "of", "integers", "and", "a", "target", "value", "return"]
    )
    assert not is_data(["the", "sum", "of", "n", "over", "all", "test", "cases", "does", "not"])
    assert statement_ngrams("1 2 3 4", 2, skip_data=True) == set()
    assert len(statement_ngrams("1 2 3 4", 2)) == 3
