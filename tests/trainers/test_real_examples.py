"""CoREB-Reranker training data from the published v2602, checked against the published v2603
(``../shared/data/coreb``): the paper's protocol trains on one release and tests on the next,
problem-disjoint."""

from __future__ import annotations

from pathlib import Path

import pytest

import coreb_dataset
from tests.conftest import SHARED_DATA
from trainers.decontamination import ContaminationError, check_disjointness
from trainers.examples import coreb_examples, problem_statements

REAL = SHARED_DATA / "coreb"
V2, V3 = "release_v2602", "release_v2603"

pytestmark = [
    pytest.mark.needs_shared_data,
    pytest.mark.skipif(not REAL.is_dir(), reason=f"needs the published CoREB releases at {REAL}"),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real") / "coreb"
    coreb_dataset.build(REAL, out, progress=False)
    return out


def test_a_v2602_training_set_is_problem_disjoint_from_v2603(built):
    examples = coreb_examples(built, V2)
    assert {e["answer"] for e in examples} == {"yes", "no"}
    statements = problem_statements(built, V2)
    # a noise description is its original problem's: 167 problems, not 835 text "problems"
    assert len(statements) == 167
    _, report = check_disjointness(
        examples, statements, [f"{built}@{V3}"], near_duplicate_action="report", max_overlap=0.2
    )
    assert report.shared_problems == []
    assert report.train_problems == 167
    assert report.eval_problems == 175
    # every v2602 problem sharing a 10-gram shares boilerplate only: the template filter and
    # the CoREB-Reranker's threshold (0.2) flag none; SynH-Rank's "any shared 10-gram" would
    # flag most of them
    assert report.near_duplicates == []
    assert report.closest and max(c["overlap"] for c in report.closest) < 0.1
    assert report.template["frequent_train_ngrams"] > 0
    _, raw = check_disjointness(
        examples, statements, [f"{built}@{V3}"], max_overlap=0.0, template_filter=False,
        near_duplicate_action="report",
    )  # fmt: skip
    assert len(raw.near_duplicates) > 100


def test_a_real_statement_planted_in_v2602_is_caught_through_the_template_filter(built):
    examples = coreb_examples(built, V2)
    statements = problem_statements(built, V2)
    eval_statements = problem_statements(built, V3)
    # an AtCoder-style v2603 statement (its template text included), planted in a v2602 problem
    # with its first sentence and its samples rewritten: a near duplicate, not boilerplate
    target = next(
        p for p, texts in sorted(eval_statements.items())
        if "standard input in the following format" in texts[0] and len(texts[0]) > 800
    )  # fmt: skip
    original = eval_statements[target][0]
    cut = original.index("Sample Input") if "Sample Input" in original else len(original)
    planted = "A new story opens this task. " + original[original.index(".") + 1 : cut]
    planted += " Sample Input 1 7 7 7 Sample Output 1 42"
    victim = sorted(statements)[0]
    statements = {**statements, victim: [*statements[victim], planted]}
    with pytest.raises(ContaminationError, match=rf"{victim} ~ {target} of .*@{V3}") as err:
        check_disjointness(examples, statements, [f"{built}@{V3}"], max_overlap=0.2)
    (found,) = err.value.report.near_duplicates
    assert found["overlap"] > 0.8


def test_the_shipped_paper_config_passes_its_data_checks_on_the_real_releases(built, tmp_path):
    import yaml

    from trainers.coreb_reranker_config import CorebRerankerConfig
    from trainers.coreb_reranker_trainer import build_training_data

    shipped = Path(__file__).resolve().parents[2] / "trainers" / "configs"
    body = yaml.safe_load((shipped / "coreb_reranker_qwen3_4b.yaml").read_text())
    body.update(
        train_sources=[f"coreb:{built}@{V2}"], eval_sources=[f"{built}@{V3}"],
        output_dir=str(tmp_path / "out"), bf16=False,
    )  # fmt: skip
    config = CorebRerankerConfig(**{k: v for k, v in body.items() if k != "attn_implementation"})
    data = build_training_data(config)  # raises ContaminationError on any near duplicate
    assert data.disjointness["near_duplicates"] == [] and data.disjointness["shared_problems"] == []
    assert data.disjointness["max_overlap"] == 0.2 and data.disjointness["template"]["enabled"]
    assert data.train and data.validation
