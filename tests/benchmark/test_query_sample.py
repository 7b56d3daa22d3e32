"""``evaluate_model(query_sample=N)`` / ``coreb evaluate --query-sample N``: a seeded sample of N
queries of every subtask, recorded in results.json and summary.md, refused by publishing."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.benchmark import results as res
from coreb_toolkit.benchmark.runner import (
    ReleaseInput,
    discover,
    evaluate_model,
    sample_queries,
    summary_table,
)
from coreb_toolkit.cli.main import main
from eval_metrics import read_run
from reranker.base import BaseReranker
from reranker.instructions import instruction_for
from tests.coreb_dataset import release as R

SAMPLE_NOTE = "**Query sample**: these figures are on a seeded sample of at most"
#: the one subtask of the fixture's release_v2603 with more than one query (two)
TWO = "c2t_match"


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("query_sample")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    return root / "hub"


def _data(subtask: str, n: int) -> coreb_dataset.SubtaskData:
    ids = [f"{subtask}_q{i:03d}" for i in range(n)]
    return coreb_dataset.SubtaskData(
        subtask=subtask,
        release="r1",
        corpus_name="corpus_code",
        queries={q: f"text of {q}" for q in reversed(ids)},  # not in sorted order
        corpus={"d1": "one", "d2": "two", "d3": "three"},
        qrels={q: {"d1": 2, "d2": 1} for q in reversed(ids)},
        exclude={q: ["d3"] for q in ids[::2]},
    )


def _item(**sizes: int) -> ReleaseInput:
    item = ReleaseInput("r1", {name: _data(name, n) for name, n in sizes.items()})
    item.corpora["corpus_code"] = next(iter(item.subtasks.values())).corpus
    return item


# -- sample_queries --------------------------------------------------------------------------


def test_a_sample_is_n_queries_per_subtask_with_their_qrels_and_exclusions():
    item = _item(c2c_cross_lang=50, t2c_search_go=3)
    sampled = sample_queries(item, 5, seed=0)
    big, small = sampled.subtasks["c2c_cross_lang"], sampled.subtasks["t2c_search_go"]
    full = item.subtasks["c2c_cross_lang"]
    assert len(big.queries) == 5 and set(big.queries) < set(full.queries)
    # in the subtask's own order, with its texts
    assert list(big.queries) == [q for q in full.queries if q in big.queries]
    assert big.queries == {q: full.queries[q] for q in big.queries}
    # qrels and exclusions of those queries only, unchanged; the corpus is the whole one
    assert big.qrels == {q: full.qrels[q] for q in big.queries}
    assert big.exclude == {q: d for q, d in full.exclude.items() if q in big.queries}
    assert big.corpus is full.corpus and sampled.corpora is item.corpora
    assert (big.subtask, big.corpus_name, sampled.name) == ("c2c_cross_lang", "corpus_code", "r1")
    # fewer queries than N: all of them
    assert small.queries == item.subtasks["t2c_search_go"].queries
    assert small.qrels == item.subtasks["t2c_search_go"].qrels
    # the input is not changed
    assert len(item.subtasks["c2c_cross_lang"].queries) == 50
    assert len(item.subtasks["c2c_cross_lang"].exclude) == 25


def test_a_sample_is_seeded():
    item = _item(c2c_cross_lang=50)

    def ids(seed: int, source: ReleaseInput = item, name: str = "c2c_cross_lang") -> list[str]:
        return list(sample_queries(source, 5, seed).subtasks[name].queries)

    assert ids(0) == ids(0) and ids(7) == ids(7)
    assert len({tuple(ids(seed)) for seed in range(6)}) > 1  # other seeds, other queries
    # a subtask's sample does not depend on the other subtasks selected
    assert ids(0, _item(c2c_cross_lang=50, t2c_search_go=9)) == ids(0)
    # nor on the order of its queries: drawn from the sorted ids
    shuffled = _item(c2c_cross_lang=50)
    data = shuffled.subtasks["c2c_cross_lang"]
    data.queries = dict(sorted(data.queries.items()))
    assert sorted(ids(3, shuffled)) == sorted(ids(3))
    # the documented draw (a string seed: the same ids on every machine and Python run)
    ten = _item(c2c_cross_lang=10)
    every = sorted(ten.subtasks["c2c_cross_lang"].queries)
    drawn = random.Random("0:r1:c2c_cross_lang").sample(every, 3)
    assert set(sample_queries(ten, 3, 0).subtasks["c2c_cross_lang"].queries) == set(drawn)


@pytest.mark.parametrize("n", [0, -1, True, 1.5, "3", None])
def test_a_bad_sample_size_is_a_clear_error(n, hub, tmp_path):
    with pytest.raises(ValueError, match=r"query_sample must be an integer of at least 1"):
        sample_queries(_item(c2c_cross_lang=3), n)
    if n is not None:
        with pytest.raises(ValueError, match=r"query_sample must be an integer of at least 1"):
            evaluate_model(str(hub), "bm25", tmp_path, query_sample=n, plots=False)
        assert not any(tmp_path.iterdir())  # refused before anything ran
    with pytest.raises(ValueError, match=r"query_seed must be an integer, got 'x'"):
        sample_queries(_item(c2c_cross_lang=3), 2, "x")  # type: ignore[arg-type]


# -- evaluate_model --------------------------------------------------------------------------


def _per_query(folder: Path) -> list[tuple[str, str]]:
    lines = (folder / "per_query.jsonl").read_text().splitlines()
    return [(r["subtask"], r["query_id"]) for r in map(json.loads, lines)]


def test_evaluate_model_scores_only_the_sample(hub, tmp_path):
    (item,) = discover(str(hub), None, [R.V3])
    assert len(item.subtasks[TWO].queries) == 2  # the fixture's one subtask that is sampled
    results = evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], query_sample=1,
                             query_seed=4, plots=False)  # fmt: skip
    expected = sample_queries(item, 1, 4)
    target = tmp_path / "BM25" / R.V3
    pairs = [(name, q) for name, data in expected.subtasks.items() for q in data.queries]
    assert sorted(_per_query(target)) == sorted(pairs)
    assert len(pairs) == len(item.subtasks)  # one query of each subtask
    rows = {r["name"]: r for r in results[0]["rows"]}
    assert rows[TWO]["n_queries"] == 1 and rows["Overall"]["n_queries"] == len(pairs)
    # the runs hold the sampled queries only, over the full corpus
    run = read_run(target / "runs" / f"{TWO}.trec")
    assert set(run) == set(expected.subtasks[TWO].queries)
    # results.json records it, valid under the schema, and so does the returned dict
    saved = json.loads((target / "results.json").read_text())
    assert saved["query_sample"] == results[0]["query_sample"] == {"per_subtask": 1, "seed": 4}
    back = res.read_results(target)
    assert isinstance(back, res.CorebResults) and back.sampled
    assert back.query_sample == {"per_subtask": 1, "seed": 4}
    summary = (target / "summary.md").read_text()
    assert f"{SAMPLE_NOTE} 1 query per subtask (seed 4)" in summary
    assert "not comparable with published CoREB figures" in summary


def test_a_sample_larger_than_every_subtask_keeps_every_query(hub, tmp_path):
    full = evaluate_model(str(hub), "bm25", tmp_path / "full", releases=[R.V3], plots=False)
    big = evaluate_model(str(hub), "bm25", tmp_path / "big", releases=[R.V3], plots=False,
                         query_sample=1000)  # fmt: skip
    assert big[0]["rows"] == full[0]["rows"]
    assert _per_query(tmp_path / "big" / "BM25" / R.V3) == _per_query(
        tmp_path / "full" / "BM25" / R.V3
    )
    assert big[0]["query_sample"] == {"per_subtask": 1000, "seed": 0}
    # without a sample nothing is recorded: results files stay as they were
    assert "query_sample" not in full[0]
    assert "query_sample" not in json.loads(
        (tmp_path / "full" / "BM25" / R.V3 / "results.json").read_text()
    )
    assert SAMPLE_NOTE not in (tmp_path / "full" / "BM25" / R.V3 / "summary.md").read_text()
    assert not res.read_results(tmp_path / "full" / "BM25" / R.V3).sampled


class Recording(BaseReranker):
    """A reranker that scores by length and records the queries it saw."""

    name = "recording"
    max_length = 64

    def __init__(self) -> None:
        self.cache_dir = None
        self.queries: set[tuple[str | None, str]] = set()

    def fingerprint(self) -> str:
        return "recording-1"

    def _score_batch(self, pairs, instruction):
        self.queries |= {(instruction, q) for q, _ in pairs}
        return [float(len(d)) for _, d in pairs]


def test_both_stages_see_the_same_sample(hub, tmp_path):
    (item,) = discover(str(hub), None, [R.V3])
    first_id = next(iter(item.subtasks[TWO].queries))
    # a seed that leaves the subtask's first query out (whatever order the stages use)
    seed = next(
        s for s in range(50) if first_id not in sample_queries(item, 1, s).subtasks[TWO].queries
    )
    sampled = sample_queries(item, 1, seed)
    reranker = Recording()
    results = evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False,
                             reranker=reranker, rerank_top_k=5, query_sample=1,
                             query_seed=seed)  # fmt: skip
    first, reranked = results
    assert reranked["query_sample"] == first["query_sample"] == {"per_subtask": 1, "seed": seed}
    # the reranker scored the sampled queries of every subtask (told apart by its instruction)
    assert reranker.queries == {
        (instruction_for(name), text)
        for name, data in sampled.subtasks.items()
        for text in data.queries.values()
    }
    left_out = set(item.subtasks[TWO].queries.values()) - set(
        sampled.subtasks[TWO].queries.values()
    )
    assert len(left_out) == 1 and (instruction_for(TWO), left_out.pop()) not in reranker.queries
    target = tmp_path / "BM25+recording" / R.V3
    assert sorted(_per_query(target)) == sorted(_per_query(tmp_path / "BM25" / R.V3))
    assert res.read_results(target).query_sample == {"per_subtask": 1, "seed": seed}
    assert f"{SAMPLE_NOTE} 1 query per subtask (seed {seed})" in (target / "summary.md").read_text()


def test_results_of_other_queries_are_not_compared(hub, tmp_path):
    full = evaluate_model(str(hub), "bm25", tmp_path / "a", releases=[R.V3], plots=False,
                          subtasks=[TWO])  # fmt: skip
    sampled = evaluate_model(str(hub), "bm25", tmp_path / "b", releases=[R.V3], plots=False,
                             subtasks=[TWO], query_sample=1)  # fmt: skip
    other_seed = json.loads(json.dumps(sampled[0]))
    other_seed["query_sample"]["seed"] = 1
    for pair in ([full[0], sampled[0]], [sampled[0], other_seed]):
        with pytest.raises(ValueError, match=r"evaluated on different queries.*--query-sample"):
            summary_table(pair)
    assert SAMPLE_NOTE in summary_table([sampled[0], sampled[0]])


# -- results.json ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"per_subtask": 0, "seed": 0}, r"query_sample\.per_subtask: 0 is less than"),
        ({"per_subtask": 2}, r"query_sample: 'seed' is a required property"),
        ({"per_subtask": 2, "seed": "x"}, r"query_sample\.seed: expected an integer"),
        ({"per_subtask": 2, "seed": 0, "all": 1}, r"query_sample: Additional properties"),
    ],
)
def test_the_schema_checks_query_sample(hub, tmp_path, value, message):
    evaluate_model(str(hub), "bm25", tmp_path, releases=[R.V3], plots=False, subtasks=[TWO],
                   query_sample=1)  # fmt: skip
    data = json.loads((tmp_path / "BM25" / R.V3 / "results.json").read_text())
    assert res.validate(data)["query_sample"] == {"per_subtask": 1, "seed": 0}
    data["query_sample"] = value
    with pytest.raises(ValueError, match=message):
        res.validate(data, "results.json")


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_query_sample_end_to_end(hub, tmp_path, capsys):
    argv = ["evaluate", "--dataset", str(hub), "--releases", R.V3, "--model", "bm25"]
    picked = {}
    for seed in range(8):
        out = tmp_path / f"seed{seed}"
        assert main([*argv, "--query-sample", "1", "--query-seed", str(seed),
                     "--out", str(out)]) == 0  # fmt: skip
        text = capsys.readouterr().out
        assert "not compared with the paper's published rows" in text
        assert "== beside the paper" not in text and f"{SAMPLE_NOTE} 1 query" in text
        assert not (out / "comparison").exists()
        target = out / "BM25" / R.V3
        saved = json.loads((target / "results.json").read_text())
        assert saved["query_sample"] == {"per_subtask": 1, "seed": seed}
        pairs = _per_query(target)
        assert len(pairs) == len(saved["corpora"])  # one query per subtask
        picked[seed] = next(q for s, q in pairs if s == TWO)
    assert len(set(picked.values())) == 2  # the seed picks the query
    # the same seed again: the same query
    assert main([*argv, "--query-sample", "1", "--query-seed", "5",
                 "--out", str(tmp_path / "again")]) == 0  # fmt: skip
    again = _per_query(tmp_path / "again" / "BM25" / R.V3)
    assert next(q for s, q in again if s == TWO) == picked[5]
    # the seed defaults to 0
    assert main([*argv, "--query-sample", "1", "--out", str(tmp_path / "default")]) == 0
    saved = json.loads((tmp_path / "default" / "BM25" / R.V3 / "results.json").read_text())
    assert saved["query_sample"] == {"per_subtask": 1, "seed": 0}
    # without a sample, the fixture's release (an official name) is set beside the paper
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "full")]) == 0
    text = capsys.readouterr().out
    assert "== beside the paper" in text and "not compared with the paper's" not in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--query-sample", "0"], "--query-sample must be at least 1"),
        (["--query-sample", "-2"], "--query-sample must be at least 1"),
        (["--query-sample", "many"], "invalid int value: 'many'"),
        (["--query-seed", "3"], "--query-seed only applies with --query-sample N"),
    ],
)
def test_cli_bad_query_sample(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["evaluate", "--dataset", "some/coreb", "--out", str(tmp_path), *flags])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_cli_help_explains_the_flags(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--query-sample N" in text and "--query-seed S" in text
    assert "a seeded sample of N queries of every subtask" in text
    assert "--query-sample 4 --query-seed 0" in text


# -- publishing refuses a sampled result ----------------------------------------------------


@pytest.fixture(scope="module")
def evaluated(hub, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("publish")
    evaluate_model(str(hub), "bm25", root / "full", releases=[R.V3], plots=False)
    evaluate_model(str(hub), "bm25", root / "sampled", releases=[R.V3], plots=False,
                   query_sample=1, query_seed=2)  # fmt: skip
    return {"full": root / "full" / "BM25" / R.V3, "sampled": root / "sampled" / "BM25" / R.V3}


def _refused(where: Path) -> str:
    return re.escape(f"{where}: evaluated on a query sample (1 query per subtask, seed 2;")


def test_a_leaderboard_submission_refuses_a_sampled_result(evaluated, tmp_path):
    from model_cards.leaderboard.submission import make_submission, read_submission

    full = make_submission(evaluated["full"], tmp_path / "full")  # the control
    assert full.results.query_sample is None
    with pytest.raises(ValueError, match=_refused(evaluated["sampled"] / "results.json")):
        make_submission(evaluated["sampled"], tmp_path / "sampled")
    assert not (tmp_path / "sampled").exists()
    # a submission folder whose results.json was made from a sample is refused when read
    edited = tmp_path / "edited"
    shutil.copytree(tmp_path / "full", edited)
    data = json.loads((edited / "results.json").read_text())
    data["query_sample"] = {"per_subtask": 1, "seed": 2}
    (edited / "results.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=_refused(edited / "results.json")):
        read_submission(edited)


def test_a_model_card_refuses_a_sampled_result(evaluated, tmp_path):
    from model_cards.model_card import model_card_info
    from model_cards.model_card_eval import check_card

    info = model_card_info([evaluated["full"]], dataset_id="me/coreb")  # the control
    check_card(info)
    with pytest.raises(ValueError, match=_refused(evaluated["sampled"] / "results.json")):
        model_card_info([evaluated["sampled"]], dataset_id="me/coreb")
    # a card built in code from a sampled result is refused before it is written
    info.evaluations[0].results["query_sample"] = {"per_subtask": 1, "seed": 2}
    with pytest.raises(ValueError, match=r"evaluated on a query sample"):
        check_card(info)


def test_the_mteb_export_refuses_a_sampled_result(evaluated, hub, tmp_path):
    pytest.importorskip("mteb", reason="needs pip install coreb-toolkit[mteb]")
    from model_cards.mteb_results import write_mteb_submission

    write_mteb_submission([evaluated["full"]], tmp_path / "full", model_name="org/bm25",
                          revision="v1", dataset=hub)  # fmt: skip  # the control
    with pytest.raises(ValueError, match=_refused(evaluated["sampled"] / "results.json")):
        write_mteb_submission([evaluated["sampled"]], tmp_path / "sampled",
                              model_name="org/bm25", revision="v1", dataset=hub)  # fmt: skip
    assert not (tmp_path / "sampled").exists()


def test_check_publishable_takes_objects_and_dicts(evaluated):
    sampled = res.read_results(evaluated["sampled"])
    with pytest.raises(ValueError, match=r"^here: evaluated on a query sample"):
        res.check_publishable(sampled, "here")
    with pytest.raises(ValueError, match=r"^there: evaluated on a query sample"):
        res.check_publishable(sampled.to_dict(), "there")
    full = res.read_results(evaluated["full"])
    assert res.check_publishable(full, "x") is full
