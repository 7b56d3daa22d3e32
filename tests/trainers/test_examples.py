"""Yes/no training examples (protocol §5.1): counts from the fixture's own qrels, negatives
that are never judged, excluded or of the query's problem, seeds, generators, the split."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.vocabulary import MAIN_TASKS
from tests.coreb_dataset import release as R
from trainers.examples import (
    EXAMPLE_FEATURES,
    EXAMPLE_GENERATORS,
    ExampleOptions,
    coreb_examples,
    example_counts,
    example_statements,
    examples_dataset,
    generate_examples,
    problem_ids,
    problem_statements,
    split_release,
    split_validation,
)
from trainers.pairs_jsonl import pairs_jsonl_examples

COLUMNS = set(EXAMPLE_FEATURES)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("examples")
    release = R.write_release(root / "release")
    coreb_dataset.build(release, root / "hub", progress=False)
    return {"release": release, "hub": root / "hub"}


def _records(hub: Path, release: str) -> dict[str, list[dict]]:
    """Every subtask's rows of ``release`` as the built folder holds them."""
    out = {}
    for name, splits in coreb_dataset.hub_folder_configs(hub).items():
        if name.split("_")[0] in MAIN_TASKS and release in splits:
            out[name] = coreb_dataset.read_hub_config(hub, name, release)
    return out


def _corpus(hub: Path, release: str, corpus: str) -> dict[str, dict]:
    return {r["doc_id"]: r for r in coreb_dataset.read_hub_config(hub, corpus, release)}


def _run(corpus: dict[str, dict], qids) -> dict[str, dict[str, float]]:
    """A hand-made run: the lower a document's number, the higher its score."""
    return {q: {d: -float(d[-5:]) for d in corpus} for q in qids}


@pytest.mark.parametrize("where", ["hub", "release"])
def test_counts_and_kinds_follow_the_qrels(data, where):
    options = ExampleOptions(positive_copies=2, easy_negatives=1, hard_negatives=2)
    records = _records(data["hub"], R.V2)
    corpora = {
        name: _corpus(data["hub"], R.V2, rows[0]["corpus"]) for name, rows in records.items()
    }
    runs = {name: _run(corpora[name], [r["query_id"] for r in rows])
            for name, rows in records.items()}  # fmt: skip
    got = coreb_examples(data[where], R.V2, options, runs=runs)
    assert got and all(set(e) == COLUMNS for e in got)
    by_record: dict[tuple[str, str], list[dict]] = {}
    for e in got:
        by_record.setdefault((e["subtask"], e["query_id"]), []).append(e)
    assert set(by_record) == {(n, r["query_id"]) for n, rows in records.items() for r in rows}
    for name, rows in records.items():
        corpus = corpora[name]
        for row in rows:
            mine = by_record[(name, row["query_id"])]
            kinds = Counter(e["kind"] for e in mine)
            positives, hard = row["positive_ids"], row["hard_negative_ids"]
            blocked = {*positives, *hard, *row["exclude_ids"]} | {
                d for d, c in corpus.items() if c["source_problem_id"] == row["source_problem_id"]
            }
            free = sorted(d for d in corpus if d not in blocked)  # ascending = best in _run
            n_mined = min(2 - min(2, len(hard)), len(free))
            assert kinds["positive"] == 2 * len(positives), (name, row["query_id"])
            assert kinds["hard_negative"] == min(2, len(hard))
            assert kinds["mined_negative"] == n_mined
            assert kinds["easy_negative"] == min(1, len(free) - n_mined)
            assert Counter(e["doc_id"] for e in mine if e["kind"] == "positive") == {
                d: 2 for d in positives
            }
            assert {e["doc_id"] for e in mine if e["kind"] == "mined_negative"} == set(
                free[:n_mined]
            )
            for e in mine:
                assert e["answer"] == ("yes" if e["kind"] == "positive" else "no")
                assert e["query"] == row["query"] and e["document"] == corpus[e["doc_id"]]["text"]
                assert e["instruction"] == MAIN_TASKS[row["main_task"]].instruction
                assert e["source_problem_id"] == row["source_problem_id"]
                assert e["doc_problem_id"] == corpus[e["doc_id"]]["source_problem_id"]
                assert (e["main_task"], e["release"], e["source"]) == (
                    row["main_task"], R.V2, "coreb",
                )  # fmt: skip
                if e["kind"] == "hard_negative":
                    assert e["doc_id"] in hard
                elif e["kind"] != "positive":  # easy and mined: unjudged, not excluded
                    assert e["doc_id"] in free
    # records without a positive (no ruby solution; a c2t_match negative pair) still count
    for key in [("t2c_full_retro_ruby", "q_t2c_full_retro_ruby_0101"),
                ("c2t_match", "q_c2t_match_0101")]:  # fmt: skip
        assert {e["kind"] for e in by_record[key]} >= {"hard_negative"}
        assert all(e["answer"] == "no" for e in by_record[key])


def test_bm25_mined_negatives_are_unjudged_non_positives(data):
    options = ExampleOptions(hard_negatives=3, easy_negatives=0)
    got = coreb_examples(data["release"], R.V3, options)
    records = _records(data["hub"], R.V3)
    rows = {(n, r["query_id"]): r for n, rs in records.items() for r in rs}
    mined = [e for e in got if e["kind"] == "mined_negative"]
    assert mined
    for e in mined:
        row = rows[(e["subtask"], e["query_id"])]
        judged = {*row["positive_ids"], *row["hard_negative_ids"], *row["exclude_ids"]}
        assert e["doc_id"] not in judged
        assert e["doc_problem_id"] != e["source_problem_id"]
    for key, row in rows.items():
        n = sum(e["kind"] in ("hard_negative", "mined_negative")
                for e in got if (e["subtask"], e["query_id"]) == key)  # fmt: skip
        assert n <= 3 and n >= min(3, len(row["hard_negative_ids"]))


def test_seed_fixes_examples_and_order(data):
    a = coreb_examples(data["hub"], R.V2, ExampleOptions(seed=3))
    b = coreb_examples(data["hub"], R.V2, ExampleOptions(seed=3))
    c = coreb_examples(data["hub"], R.V2, ExampleOptions(seed=4))
    assert a == b
    assert example_counts(a)["by_kind"] == example_counts(c)["by_kind"]

    # the positives do not depend on the seed; their order does (the shuffle)
    def positives(examples):
        return [(e["query_id"], e["doc_id"]) for e in examples if e["kind"] == "positive"]

    assert sorted(positives(a)) == sorted(positives(c)) and positives(a) != positives(c)
    # shuffled across tasks: a subtask's examples are not one block
    switches = sum(x["subtask"] != y["subtask"] for x, y in itertools.pairwise(a))
    assert switches > len({e["subtask"] for e in a})


def test_selection_and_release_errors(data):
    only_c2t = coreb_examples(data["hub"], R.V2, ExampleOptions(main_tasks=["c2t"]))
    assert {e["main_task"] for e in only_c2t} == {"c2t"}
    assert {e["subtask"] for e in only_c2t} == {"c2t_full_retro_any", "c2t_match"}
    one = coreb_examples(data["hub"], R.V2, ExampleOptions(subtasks=["c2c_cross_lang"]))
    assert {e["subtask"] for e in one} == {"c2c_cross_lang"}
    with pytest.raises(ValueError, match=f"several releases.*{R.V2}.*{R.V3}"):
        coreb_examples(data["hub"])
    with pytest.raises(ValueError, match="release 'release_v9999' is not in"):
        coreb_examples(data["hub"], "release_v9999")
    with pytest.raises(ValueError, match=r"ExampleOptions\.subtasks: 't2c_nope'"):
        coreb_examples(data["hub"], R.V2, ExampleOptions(subtasks=["t2c_nope"]))
    with pytest.raises(ValueError, match="no subtask of release"):
        coreb_examples(data["hub"], R.V2, ExampleOptions(subtasks=["c2c_cross_lang"],
                                                         main_tasks=["t2c"]))  # fmt: skip
    runs = {"t2c_full_retro_python": {}}
    with pytest.raises(ValueError, match=r"runs\['t2c_full_retro_python'\] has no ranking"):
        coreb_examples(data["hub"], R.V2, ExampleOptions(hard_negatives=4), runs=runs)


@pytest.mark.parametrize(
    ("field", "value"),
    [("positive_copies", 0), ("easy_negatives", -1), ("hard_negatives", 1.5),
     ("mine_top_k", 0), ("miner", ""), ("seed", "x"), ("validation_fraction", 1.0),
     ("subtasks", "t2c_full_retro_any"), ("subtasks", []), ("main_tasks", ["x2y"])],
)  # fmt: skip
def test_options_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=f"ExampleOptions.{field}"):
        ExampleOptions(**{field: value})


def test_options_are_frozen_and_normalised():
    options = ExampleOptions(subtasks=["c2c_cross_lang"], main_tasks=["c2c"])
    assert options.subtasks == ("c2c_cross_lang",) and options.main_tasks == ("c2c",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1  # type: ignore[misc]


def _pairs(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_pairs_jsonl(tmp_path):
    rows = [
        {"query": "sort a list", "positives": ["sorted(x)", "x.sort()"], "negatives": ["x[0]"],
         "source_problem_id": "u1"},
        "",
        {"query": "add two ints", "positive": "a + b", "instruction": "Find code.",
         "source_problem_id": "u2", "id": "mine-2"},
    ]  # fmt: skip
    got = pairs_jsonl_examples(_pairs(tmp_path / "pairs.jsonl", rows), ExampleOptions())
    assert all(set(e) == COLUMNS for e in got)
    first = [e for e in got if e["query_id"] == "pairs:1"]
    second = [e for e in got if e["query_id"] == "mine-2"]
    assert Counter(e["kind"] for e in first) == {"positive": 4, "hard_negative": 1,
                                                 "easy_negative": 1}  # fmt: skip
    # no negative given: topped up with a mined one (as a CoREB record short of hard negatives)
    assert Counter(e["kind"] for e in second) == {"positive": 2, "mined_negative": 1,
                                                  "easy_negative": 1}  # fmt: skip
    assert {e["instruction"] for e in first} == {MAIN_TASKS["t2c"].instruction}
    assert {e["instruction"] for e in second} == {"Find code."}
    # mined and easy negatives are the other problem's positives, two different ones
    others = [e for e in second if e["kind"] in ("mined_negative", "easy_negative")]
    assert {e["document"] for e in others} == {"sorted(x)", "x.sort()"}
    assert {e["doc_problem_id"] for e in others} == {"u1"}
    assert {e["document"] for e in first if e["kind"] == "hard_negative"} == {"x[0]"}
    assert {(e["source"], e["subtask"], e["main_task"]) for e in got} == {
        ("pairs_jsonl", "pairs_jsonl", "t2c")
    }


def test_pairs_jsonl_keeps_each_main_task_to_itself(tmp_path):
    # a c2t row's text is never a t2c query's negative, nor the other way round
    rows = [
        {"query": "sort a list", "positive": "sorted(x)", "source_problem_id": "u1"},
        {"query": "add two ints", "positive": "a + b", "source_problem_id": "u2"},
        {"query": "sorted(x)", "positive": "Sort the list.", "negatives": ["Reverse it."],
         "source_problem_id": "u1", "main_task": "c2t"},
        {"query": "a + b", "positive": "Add two integers.", "negatives": ["Subtract."],
         "source_problem_id": "u2", "main_task": "c2t"},
    ]  # fmt: skip
    got = pairs_jsonl_examples(_pairs(tmp_path / "p.jsonl", rows), ExampleOptions())
    for e in got:
        texts = e["main_task"] == "c2t"
        assert e["document"].endswith(".") == texts, e
    c2t = [e for e in got if e["main_task"] == "c2t"]
    assert {e["instruction"] for e in c2t} == {MAIN_TASKS["c2t"].instruction}


@pytest.mark.parametrize(("hard", "given", "mined"), [(0, 0, 0), (1, 1, 0), (2, 2, 0), (4, 3, 1)])
def test_pairs_jsonl_honours_hard_negatives_like_a_coreb_record(tmp_path, hard, given, mined):
    rows = [
        {"query": "sort a list of numbers", "positive": "sorted(xs)",
         "negatives": ["xs[0]", "len(xs)", "max(xs)"], "source_problem_id": "u1"},
        {"query": "add two numbers", "positive": "a + b", "source_problem_id": "u2"},
        {"query": "reverse a list", "positive": "xs[::-1]", "source_problem_id": "u3"},
    ]  # fmt: skip
    options = ExampleOptions(hard_negatives=hard, easy_negatives=0)
    got = pairs_jsonl_examples(_pairs(tmp_path / "p.jsonl", rows), options)
    first = Counter(e["kind"] for e in got if e["source_problem_id"] == "u1")
    assert first["hard_negative"] == given and first["mined_negative"] == mined
    # seeded: the same draw every time
    assert got == pairs_jsonl_examples(_pairs(tmp_path / "p.jsonl", rows), options)


@pytest.mark.parametrize(
    ("line", "message"),
    [("{not json", "not a JSON object"),
     ('["a"]', "expected a JSON object"),
     ('{"positive": "p", "source_problem_id": "x"}', "'query'"),
     ('{"query": "q", "positive": "p"}', "'source_problem_id' is required"),
     ('{"query": "q", "source_problem_id": "x"}', "exactly one of 'positive'"),
     ('{"query": "q", "positive": "p", "positives": ["p"], "source_problem_id": "x"}',
      "exactly one of 'positive'"),
     ('{"query": "q", "positives": [], "source_problem_id": "x"}', "'positives' is empty"),
     ('{"query": "q", "positive": "p", "negatives": [1], "source_problem_id": "x"}',
      "'negatives' must be"),
     ('{"query": "q", "positive": "p", "source_problem_id": "x", "label": 1}',
      r"unknown field\(s\) \['label'\]"),
     ('{"query": "q", "positive": "p", "source_problem_id": "x", "main_task": "x2y"}',
      "'main_task' must be one of t2c, c2t, c2c")],
)  # fmt: skip
def test_pairs_jsonl_errors_name_file_line_and_field(tmp_path, line, message):
    good = {"query": "q0", "positive": "p0", "source_problem_id": "x0"}
    path = _pairs(tmp_path / "bad.jsonl", [good, line])
    with pytest.raises(ValueError, match=f"bad.jsonl:2: .*{message}"):
        pairs_jsonl_examples(path)


def test_pairs_jsonl_repeated_id(tmp_path):
    rows = [{"query": "q", "positive": "p", "source_problem_id": "x", "id": "a"}] * 2
    with pytest.raises(ValueError, match=r"dup\.jsonl:2: id 'a' repeats the row at .*dup\.jsonl:1"):
        pairs_jsonl_examples(_pairs(tmp_path / "dup.jsonl", rows))


def test_generate_examples_specs(data, tmp_path):
    pairs = _pairs(
        tmp_path / "p.jsonl", [{"query": "q", "positive": "p", "source_problem_id": "u"}]
    )
    options = ExampleOptions(easy_negatives=0)
    coreb = coreb_examples(data["hub"], R.V2, options)
    got = generate_examples([f"coreb:{data['hub']}@{R.V2}", f"pairs_jsonl:{pairs}"], options)
    assert Counter(e["source"] for e in got) == {"coreb": len(coreb), "pairs_jsonl": 2}
    plain = generate_examples([f"{data['release']}@{R.V2}"], options)
    assert sorted(map(json.dumps, plain)) == sorted(map(json.dumps, coreb))
    with pytest.raises(ValueError, match="unknown generator 'nope'; known: coreb, pairs_jsonl"):
        generate_examples(["nope:somewhere"], options)
    with pytest.raises(ValueError, match="non-empty list"):
        generate_examples(f"coreb:{data['hub']}", options)  # type: ignore[arg-type]
    assert set(EXAMPLE_GENERATORS) == {"coreb", "pairs_jsonl"}
    assert split_release("org/name@release_v2602") == ("org/name", "release_v2602")
    assert split_release("a@b/c") == ("a@b/c", None)


def _toy(problems) -> list[dict]:
    return [{c: "" for c in COLUMNS} | {"source_problem_id": p, "query_id": f"{p}-{i}",
                                          "kind": "positive", "answer": "yes"}
            for p in problems for i in range(3)]  # fmt: skip


def test_split_validation_keeps_problems_apart():
    examples = _toy([f"P{i}" for i in range(20)])
    train, val = split_validation(examples, 0.1, seed=0)
    train_p = {e["source_problem_id"] for e in train}
    val_p = {e["source_problem_id"] for e in val}
    assert len(val_p) == 2 and not train_p & val_p and len(train) + len(val) == len(examples)
    assert split_validation(examples, 0.1, seed=0) == (train, val)
    assert {e["source_problem_id"] for e in split_validation(examples, 0.1, seed=1)[1]} != val_p
    # a tiny fraction still holds one problem out
    assert len({e["source_problem_id"] for e in split_validation(examples, 0.001)[1]}) == 1
    assert split_validation(examples, 0.0) == (examples, [])
    with pytest.raises(ValueError, match=r"at least 2 problems.*P0"):
        split_validation(_toy(["P0"]), 0.05)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        split_validation(examples, 1.0)


def test_examples_dataset_and_counts(data):
    got = coreb_examples(data["hub"], R.V2)
    ds = examples_dataset(got)
    assert ds.features == EXAMPLE_FEATURES and ds.num_rows == len(got) and ds[0] == got[0]
    with pytest.raises(ValueError, match=r"example 0 has columns missing \['source'\]"):
        examples_dataset([{k: v for k, v in got[0].items() if k != "source"}])
    counts = example_counts(got)
    assert counts["total"] == len(got) and counts["problems"] == 2
    assert sum(counts["by_kind"].values()) == sum(counts["by_subtask"].values()) == len(got)
    assert counts["by_main_task"]["t2c"] == sum(e["main_task"] == "t2c" for e in got)


@pytest.mark.parametrize("where", ["hub", "release"])
def test_problem_statements_and_ids(data, where):
    statements = problem_statements(data[where], R.V2)
    expected: dict[str, set[str]] = {}
    for row in R.V2_TEXT:
        expected.setdefault(row["meta"]["source_problem_id"], set()).add(row["text"])
    for row in R.V2_T2C:  # meta: a dict, or a Python literal written as a string
        meta = row["meta"] if isinstance(row["meta"], dict) else ast.literal_eval(row["meta"])
        expected.setdefault(meta["source_problem_id"], set()).add(row["query"])
    assert {p: set(t) for p, t in statements.items()} == expected
    assert problem_ids(data[where], R.V2) == {"P8", "P9"}
    assert problem_ids(data[where]) == {"P1", "P2", "P8", "P9"}
    assert set(problem_statements(data[where])) == {"P1", "P2", "P8", "P9"}


def test_example_statements():
    rows = [*_toy(["A"]), {**_toy(["B"])[0], "main_task": "c2t", "query": "code"}]
    rows[0] |= {"main_task": "t2c", "query": "statement of A"}
    assert example_statements(rows) == {"A": ["statement of A"]}
