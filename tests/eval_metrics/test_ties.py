"""The best-positive tie share, on cases whose answer is worked out by hand."""

from __future__ import annotations

import pytest

from eval_metrics.ties import positive_ties

QRELS = {
    "tied_hard": {"p": 2, "h": 1},
    "tied_positives_only": {"p": 2, "p2": 2},
    "tied_unjudged": {"p": 2},
    "no_positive": {"h": 1},
    "tied_anchor_excluded": {"p": 2},
    "tied_in_float32": {"p": 2, "a": 0},
    "positive_not_retrieved": {"p": 2},
    "lower_positive_tied": {"p": 2, "p2": 2},
    "not_in_run": {"p": 2},
}
RUN = {
    # the best positive p and the hard negative h have one score: decided by ids -> tied
    "tied_hard": {"p": 0.5, "h": 0.5, "x": 0.1},
    # two positives tie with each other, nothing non-relevant at 0.9 -> not tied
    "tied_positives_only": {"p": 0.9, "p2": 0.9, "x": 0.3},
    # an unjudged document is non-relevant too -> tied
    "tied_unjudged": {"p": 0.4, "x": 0.4},
    # no positive at all -> not eligible
    "no_positive": {"h": 0.8, "x": 0.8},
    # the tie is with the excluded anchor only -> not tied
    "tied_anchor_excluded": {"p": 0.7, "anchor": 0.7, "x": 0.2},
    # 0.3 and 0.3 + 1e-9 are one float32: trec_eval ties them -> tied (a judged grade 0)
    "tied_in_float32": {"p": 0.3, "a": 0.3 + 1e-9},
    # the positive is not retrieved -> not eligible
    "positive_not_retrieved": {"x": 0.9},
    # only the best positive (0.9) counts; the tie at 0.5 is below it -> not tied
    "lower_positive_tied": {"p": 0.9, "p2": 0.5, "x": 0.5},
}
EXCLUDE = {"tied_anchor_excluded": ["anchor"]}


def test_share_by_hand():
    ties = positive_ties(QRELS, RUN, exclude=EXCLUDE)
    assert ties.tied == {
        "tied_hard": True,
        "tied_positives_only": False,
        "tied_unjudged": True,
        "tied_anchor_excluded": False,
        "tied_in_float32": True,
        "lower_positive_tied": False,
    }
    assert (ties.n_tied, ties.n_eligible) == (3, 6)
    assert ties.share == 0.5


def test_excluded_anchor_would_tie_if_it_counted():
    ties = positive_ties(QRELS, RUN)
    assert ties.tied["tied_anchor_excluded"] is True
    assert ties.share == 4 / 6


def test_relevance_level_decides_what_is_non_relevant():
    # at level 1 the hard negative h is relevant: p and h tie with each other only
    ties = positive_ties({"q": {"p": 2, "h": 1}}, {"q": {"p": 0.5, "h": 0.5, "x": 0.1}},
                         relevance_level=1)  # fmt: skip
    assert ties.tied == {"q": False}


def test_no_eligible_query_has_no_share():
    ties = positive_ties({"q": {"h": 1}}, {"q": {"h": 0.5}})
    assert ties.tied == {} and ties.share is None and ties.n_eligible == 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match=r"qrels\['q'\]\['p'\].*1\.5"):
        positive_ties({"q": {"p": 1.5}}, {"q": {"p": 0.5}})
    with pytest.raises(ValueError, match="absent from the qrels"):
        positive_ties({"q": {"p": 2}}, {"z": {"p": 0.5}})
    with pytest.raises(ValueError, match="relevance_level must be >= 1"):
        positive_ties({"q": {"p": 2}}, {"q": {"p": 0.5}}, relevance_level=0)
