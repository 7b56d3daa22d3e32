"""CoREB-Reranker training data from the published v2602, checked against the published v2603
(``../shared/data/coreb``): the paper's protocol trains on one release and tests on the next,
problem-disjoint."""

from __future__ import annotations

import pytest

import coreb_dataset
from tests.conftest import SHARED_DATA
from trainers.decontamination import check_disjointness
from trainers.examples import coreb_examples, problem_statements

REAL = SHARED_DATA / "coreb"
V2, V3 = "release_v2602", "release_v2603"

pytestmark = [
    pytest.mark.needs_shared_data,
    pytest.mark.skipif(not REAL.is_dir(), reason=f"needs the published CoREB releases at {REAL}"),
]


def test_a_v2602_training_set_is_problem_disjoint_from_v2603(tmp_path):
    built = tmp_path / "coreb"
    coreb_dataset.build(REAL, built, progress=False)
    examples = coreb_examples(built, V2)
    assert {e["answer"] for e in examples} == {"yes", "no"}
    statements = problem_statements(built, V2)
    # a noise description is its original problem's: 167 problems, not 835 text "problems"
    assert len(statements) == 167
    _, report = check_disjointness(
        examples, statements, [f"{built}@{V3}"], near_duplicate_action="report"
    )
    assert report.shared_problems == []
    assert report.train_problems == 167
    assert report.eval_problems == 175
