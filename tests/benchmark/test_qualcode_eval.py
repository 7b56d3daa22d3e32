"""QualCode evaluation: QPA per dimension, the 1+99 retrieval task, MCA per k, the CLI."""

from __future__ import annotations

import json

import pytest

import qualcode_dataset as q
from coreb_toolkit.benchmark import qualcode_eval as qe
from coreb_toolkit.cli.main import main
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("qce")
    codenet = write_codenet(root / "codenet")
    options = q.QualcodeOptions(retrieval_negatives=5, control_unrequested=False)
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    q.build(data, root / "qualcode", progress=False)
    return root / "qualcode"


class ById:
    """Scores a document by minus the number in its id: lower ids are preferred."""

    name = "by-id"

    def __init__(self):
        self.calls = []
        self.metadata = {"name": "by-id"}

    def score(self, items):
        self.calls.append(list(items))
        return [-float(doc_id[1:]) for _, _, doc_id, _ in items]


def test_qpa_mca_and_retrieval_by_hand(folder, tmp_path):
    data = qe.load_qualcode(folder)
    scorer = ById()
    res = qe.evaluate_qualcode(data, scorer, tmp_path, progress=False)
    num = lambda s: int(s[1:])  # noqa: E731
    for dim, rows in data.pairs.items():
        wins = [num(r["chosen_id"]) < num(r["rejected_id"]) for r in rows]
        assert res["qualcode"][dim]["qpa"] == pytest.approx(sum(wins) / len(wins)), dim
        # reciprocal rank of chosen among itself + 5 negatives, cut at 10
        rr = [
            1 / (1 + sum(num(n) < num(r["chosen_id"]) for n in r["retrieval_negative_ids"]))
            for r in rows
        ]
        assert res["qualcode"][dim]["retrieval_mrr_at_10"] == pytest.approx(sum(rr) / len(rr))
        assert res["qualcode"][dim]["retrieval_candidates"] == 6
    # speed pairs: s11 < s14 and s41 < s46 -> both won
    assert res["qualcode"]["speed"]["qpa"] == 1.0
    for k, rows in data.triplets.items():
        wins = [num(r["chosen_id"]) < num(r["rejected_id"]) for r in rows]
        assert res["mc"][f"k={k}"]["mca"] == pytest.approx(sum(wins) / len(wins)), k
        assert res["mc"][f"k={k}"]["n_triplets"] == len(rows)
    target = tmp_path / "by-id" / "qualcode"
    saved = json.loads((target / "results.json").read_text())
    assert saved["qualcode"]["speed"]["qpa"] == 1.0
    assert (target / "qualcode.png").stat().st_size > 0
    assert "| by-id | 1.0000" in (target / "summary.md").read_text()
    lines = (target / "scores.jsonl").read_text().splitlines()
    assert len(lines) == sum(len(r) for r in data.pairs.values()) + sum(
        len(r) for r in data.triplets.values()
    )
    # the 1+99 task per query: the reciprocal ranks computed above, query by query
    per_query = [json.loads(x) for x in (target / qe.RETRIEVAL_PER_QUERY).read_text().splitlines()]
    for dim, rows in data.pairs.items():
        mine = {r["id"]: r["mrr_at_10"] for r in per_query if r["config"] == f"qualcode_{dim}"}
        expected = {
            r["pair_id"]: 1
            / (1 + sum(num(n) < num(r["chosen_id"]) for n in r["retrieval_negative_ids"]))
            for r in rows
        }
        assert mine == pytest.approx(expected), dim


def test_a_tie_is_a_loss(folder):
    class Flat(ById):
        def score(self, items):
            return [0.5] * len(items)

    res = qe.evaluate_qualcode(folder, Flat(), retrieval=False, progress=False)
    assert {d: v["qpa"] for d, v in res["qualcode"].items()} == {
        "speed": 0.0,
        "memory": 0.0,
        "maintainability": 0.0,
    }
    assert res["qualcode"]["speed"]["ties"] == 1.0


def test_bm25_scores_with_the_corpus_statistics(folder):
    data = qe.load_qualcode(folder)
    scorer = qe.BM25Scorer(data.corpus)
    rows = data.pairs["speed"]
    items = [(r["instruction"], r["query"], r["chosen_id"], r["chosen"]) for r in rows]
    direct = scorer._bm25.scores(f"{rows[0]['instruction']}\n{rows[0]['query']}")
    assert scorer.score(items[:1]) == [
        pytest.approx(float(direct[scorer._ids[rows[0]["chosen_id"]]]))
    ]
    with pytest.raises(ValueError, match="not in the corpus"):
        scorer.score([("i", "q", "nope", "x")])


def test_reranker_scorer_cuts_long_queries_to_its_budget():
    class Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": text.split()}

        def decode(self, ids):
            return " ".join(ids)

    class Fake:
        name = "fake"
        max_length = 8
        tokenizer = Tok()

        def __init__(self):
            self.seen = []

        def fingerprint(self):
            return "f"

        def score(self, pairs, instruction=None):
            self.seen += [(instruction, qq) for qq, _ in pairs]
            return [float(len(d)) for _, d in pairs]

    fake = Fake()
    scorer = qe.RerankerScorer(fake)
    out = scorer.score([("fast", "a b c d e f", "d1", "xx"), ("lean", "a b", "d2", "yyy")])
    assert out == [2.0, 3.0]
    assert fake.seen == [("fast", "a b c d"), ("lean", "a b")]
    assert scorer.metadata["queries_cut"] == 1 and scorer.metadata["query_budget_tokens"] == 4


def test_a_custom_template_is_the_instruction_the_reranker_sees(tmp_path):
    """A folder built with another instruction template is evaluated with that instruction
    (each row's), not the default one rebuilt."""
    codenet = write_codenet(tmp_path / "codenet")
    options = q.QualcodeOptions(
        retrieval_negatives=5, control_unrequested=False,
        template="Find a solution that is {conditions}.",
    )  # fmt: skip
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    q.build(data, tmp_path / "qualcode", progress=False)

    class Recording:
        name, max_length = "recording", None

        def __init__(self):
            self.instructions = []

        def fingerprint(self):
            return "f"

        def score(self, pairs, instruction=None):
            self.instructions.append(instruction)
            return [float(len(d)) for _, d in pairs]

    reranker = Recording()
    res = qe.evaluate_qualcode(
        tmp_path / "qualcode", qe.RerankerScorer(reranker), plots=False, progress=False
    )
    seen = set(reranker.instructions)
    pairs = {"Find a solution that is fast.", "Find a solution that is memory-efficient.",
             "Find a solution that is maintainable."}  # fmt: skip
    assert pairs <= seen  # the QPA and 1+99 pairs of every dimension
    assert "Find a solution that is fast and maintainable." in seen  # an MC triplet's (k=2)
    assert all(i.startswith("Find a solution that is ") and i.endswith(".") for i in seen)
    assert res["mc"] and set(res["qualcode"]) == {"speed", "memory", "maintainability"}


def test_cli_qualcode_bm25_and_reranker(folder, tmp_path, capsys):
    out = tmp_path / "res"
    rc = main(
        [
            "evaluate",
            "--qualcode",
            str(folder),
            "--model",
            "bm25",
            "--reranker",
            "minilm",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "| BM25 |" in text and "| minilm |" in text
    assert (out / "BM25" / "qualcode" / "results.json").is_file()
    assert (out / "minilm" / "qualcode" / "results.json").is_file()
    assert (out / "comparison" / "qualcode" / "qualcode.png").is_file()
    with pytest.raises(SystemExit):
        main(["evaluate", "--qualcode", str(folder)])
    assert "--qualcode needs --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "--qualcode", str(tmp_path), "--out", str(out)])
    assert "no QualCode configs" in capsys.readouterr().err


def test_tasks_select_what_is_scored(folder, capsys):
    scorer = ById()
    res = qe.evaluate_qualcode(folder, scorer, tasks=("mc",), progress=False)
    assert res["qualcode"] == {} and res["mc"]["k=1"]["n_triplets"] > 0
    data = qe.load_qualcode(folder)
    assert sum(len(c) for c in scorer.calls) == 2 * sum(len(r) for r in data.triplets.values())
    res = qe.evaluate_qualcode(folder, ById(), tasks=("pairs",), progress=False)
    assert "retrieval_mrr_at_10" not in res["qualcode"]["speed"] and res["mc"] == {}
    with pytest.raises(ValueError, match="tasks must be some of"):
        qe.evaluate_qualcode(folder, ById(), tasks=("speed",), progress=False)
    with pytest.raises(SystemExit):
        main(["evaluate", "--dataset", "x", "--qualcode-tasks", "mc", "--out", "y"])
    assert "--qualcode-tasks only applies with --qualcode" in capsys.readouterr().err


def test_results_record_the_folder_fingerprint(folder, tmp_path):
    from coreb_toolkit.benchmark.provenance import folder_fingerprint
    from coreb_toolkit.benchmark.results import read_results

    qe.evaluate_qualcode(folder, qe.make_scorer("bm25", qe.load_qualcode(folder)), tmp_path)
    [path] = tmp_path.glob("*/qualcode/results.json")
    revision = read_results(path).dataset["revision"]
    assert revision == folder_fingerprint(folder) and revision.startswith("sha256:")
