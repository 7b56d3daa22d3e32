"""``eval_metrics.membership``: a run's queries, documents and depth checked against its subtask."""

from __future__ import annotations

import pytest

from eval_metrics.membership import check_run_membership

QUERIES = {"q1", "q2"}
CORPUS = {"d1", "d2", "d3"}


def test_a_run_of_the_subtask_passes():
    run = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 0.5}}
    assert check_run_membership("t.trec", run, QUERIES, CORPUS, "corpus_code", top_k=2) is None


@pytest.mark.parametrize(
    ("run", "top_k", "message"),
    [
        ({"q9": {"d1": 1.0}}, None, r"t\.trec: query 'q9' is not a query of this subtask"),
        ({"q1": {"d1": 1.0, "dX": 0.5}}, None,
         r"t\.trec: query 'q1' ranks 'dX', which is not in corpus_code"),
        ({"q1": {"d1": 1.0, "d2": 0.5}}, 1, r"query 'q1' ranks 2 documents, more than the 1"),
    ],
)  # fmt: skip
def test_a_foreign_query_or_document_or_a_deeper_run_is_named(run, top_k, message):
    with pytest.raises(ValueError, match=message):
        check_run_membership("t.trec", run, QUERIES, CORPUS, "corpus_code", top_k=top_k)
