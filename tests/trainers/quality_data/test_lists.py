"""The hierarchical lists: counts, labels, irrelevant docs, shuffling, drops, determinism, I/O."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import SHARED_DATA
from trainers.quality_data.lists import (
    ListOptions,
    list_features,
    make_lists,
    read_lists,
    write_lists,
)
from trainers.quality_data.records import LIST_COLUMNS, LISTS_FILE, SeedTask, Variant
from trainers.quality_data.split import SPLIT_FILE, problem_split, read_split

N_TASKS = 12


def fixture():
    """Per task t: speed 1 high + (t % 6) lows; maintainability 1 high + 2 lows; memory a high
    and no low; every third task also one unlabelled variant. Task "tX" has no claim at all."""
    tasks = [SeedTask(f"t{i:02d}", f"Task {i}: print {i}.") for i in range(N_TASKS)]
    tasks.append(SeedTask("tX", "A task without labelled variants."))
    variants = []
    for i in range(N_TASKS):
        t = f"t{i:02d}"
        variants.append(Variant(t, f"# {t} fast\n", "real", "speed", "high"))
        variants += [Variant(t, f"# {t} slow {j}\n", "real", "speed", "low") for j in range(i % 6)]
        variants.append(Variant(t, f"# {t} clean\n", "guideline", "maintainability", "high"))
        variants += [
            Variant(t, f"# {t} smelly {j}\n", "transform", "maintainability", "low")
            for j in range(2)
        ]
        variants.append(Variant(t, f"# {t} lean\n", "real", "memory", "high"))
        if i % 3 == 0:
            variants.append(Variant(t, f"# {t} plain\n", "plain"))
    variants.append(Variant("tX", "# tX plain\n", "plain"))
    variants.append(Variant("t99", "# a task nobody gave\n", "real", "speed", "high"))
    return tasks, variants


@pytest.fixture(scope="module")
def made():
    tasks, variants = fixture()
    return tasks, variants, make_lists(tasks, variants, ListOptions(), progress=False)


def test_columns_and_features():
    assert list(list_features()) == list(LIST_COLUMNS)
    tasks, variants = fixture()
    ds = make_lists(tasks, variants, progress=False).dataset
    assert ds.column_names == list(LIST_COLUMNS)


def test_counts_and_labels(made):
    tasks, _, result = made
    rows = result.dataset.to_list()
    lows = {f"t{i:02d}": i % 6 for i in range(N_TASKS)}
    speed = sorted(t for t, n in lows.items() if n >= 1)  # min_low 1
    assert sorted(r["task_id"] for r in rows if r["dimension"] == "speed") == speed
    assert sorted(r["task_id"] for r in rows if r["dimension"] == "maintainability") == sorted(lows)
    assert not [r for r in rows if r["dimension"] == "memory"]
    for r in rows:
        n_low = min(4, lows[r["task_id"]]) if r["dimension"] == "speed" else 2
        assert Counter(r["labels"]) == {2: 1, 1: n_low, 0: 1}, r["query_id"]
        assert (
            r["instruction"]
            == {
                "speed": "Retrieve code that is fast",
                "maintainability": "Retrieve code that is maintainable",
            }[r["dimension"]]
        )
        statement = next(t.statement for t in tasks if t.task_id == r["task_id"])
        assert r["statement"] == statement
        assert r["query"] == f"{r['instruction']}\n{statement}"
        assert r["query_id"] == f"{r['dimension']}/{r['task_id']}"
    report = result.report
    assert report["lists_per_dimension"] == {
        "speed": len(speed),
        "memory": 0,
        "maintainability": N_TASKS,
    }
    assert report["docs_per_label"] == {
        "2": len(rows),
        "1": sum(min(4, n) for n in lows.values()) + 2 * N_TASKS,
        "0": len(rows),
    }
    lengths = Counter([2 + min(4, lows[t]) for t in speed] + [4] * N_TASKS)
    assert report["list_lengths"] == {str(n): c for n, c in sorted(lengths.items())}
    # the first n_low lows in the order given: t05 has five
    t05 = next(r for r in rows if r["query_id"] == "speed/t05")
    low_docs = sorted(d for d, lab in zip(t05["docs"], t05["labels"], strict=True) if lab == 1)
    assert low_docs == [f"# t05 slow {j}\n" for j in range(4)]


def test_every_drop_is_counted(made):
    _, _, result = made
    reasons = Counter((d.reason, d.item) for d in result.drops)
    lows = {f"t{i:02d}": i % 6 for i in range(N_TASKS)}
    for t, n in lows.items():
        # memory: a high and no low; speed of tasks without lows: a high only
        assert reasons[("fewer than 1 low-quality variants", f"memory/{t}")] == 1
        assert reasons[("fewer than 1 low-quality variants", f"speed/{t}")] == (n == 0)
    more = [d for d in result.drops if d.reason == "more than 4 low-quality variants"]
    assert len(more) == sum(max(0, n - 4) for n in lows.values())
    assert ("no labelled variant", "tX") in reasons
    assert any(d.reason == "no seed task" and d.where == "t99" for d in result.drops)
    counted = result.report["dropped"]["lists"]
    assert sum(counted.values()) == len(result.drops)


def test_docs_ids_labels_and_origins_stay_aligned(made):
    _, variants, result = made
    by_id = {v.variant_id: v for v in variants}
    for r in result.dataset.to_list():
        assert len(r["docs"]) == len(r["labels"]) == len(r["doc_ids"]) == len(r["origins"])
        for doc, label, doc_id, origin in zip(
            r["docs"], r["labels"], r["doc_ids"], r["origins"], strict=True
        ):
            v = by_id[doc_id]
            assert (v.code, v.origin) == (doc, origin)
            if label == 0:
                # an irrelevant doc is never of the list's own task, whatever its claim
                assert v.task_id != r["task_id"]
            else:
                assert v.task_id == r["task_id"] and v.dimension == r["dimension"]
                assert v.level == ("high" if label == 2 else "low")
        own = {v.code for v in variants if v.task_id == r["task_id"]}
        assert not [
            d for d, lab in zip(r["docs"], r["labels"], strict=True) if lab == 0 and d in own
        ]
        assert len(set(r["docs"])) == len(r["docs"])


def test_the_order_inside_a_list_is_shuffled(made):
    _, _, result = made
    positions = Counter(r["labels"].index(2) for r in result.dataset.to_list())
    # 21 lists of 4-6 docs: unshuffled, label 2 would always come first
    assert len(positions) >= 3, positions
    sorted_lists = sum(
        1 for r in result.dataset.to_list() if r["labels"] == sorted(r["labels"], reverse=True)
    )
    assert sorted_lists < len(result.dataset) / 2


def test_min_low_and_counts_are_options():
    tasks, variants = fixture()
    result = make_lists(tasks, variants, ListOptions(min_low=3, n_low=3), progress=False)
    lows = {f"t{i:02d}": i % 6 for i in range(N_TASKS)}
    speed = sorted(t for t, n in lows.items() if n >= 3)
    rows = result.dataset.to_list()
    assert sorted(r["task_id"] for r in rows if r["dimension"] == "speed") == speed
    assert not [r for r in rows if r["dimension"] == "maintainability"]  # 2 lows < 3
    dropped = Counter(d.reason for d in result.drops)
    assert dropped["fewer than 3 low-quality variants"] == (N_TASKS - len(speed)) + 2 * N_TASKS
    assert all(Counter(r["labels"])[1] == 3 for r in rows)
    more = make_lists(tasks, variants, ListOptions(n_irrelevant=3), progress=False)
    assert all(Counter(r["labels"])[0] == 3 for r in more.dataset.to_list())
    none = make_lists(tasks, variants, ListOptions(n_irrelevant=0), progress=False)
    assert all(0 not in r["labels"] for r in none.dataset.to_list())


def test_too_few_other_tasks_is_a_drop():
    tasks = [SeedTask("a", "A.")]
    variants = [
        Variant("a", "x = 1\n", "real", "speed", "high"),
        Variant("a", "x = 2\n", "real", "speed", "low"),
    ]
    result = make_lists(tasks, variants, progress=False)
    assert len(result.dataset) == 0
    assert [d.reason for d in result.drops] == ["fewer than 1 irrelevant variants"]


def test_a_list_never_holds_the_same_code_twice():
    tasks = [SeedTask("a", "A."), SeedTask("b", "B.")]
    variants = [
        Variant("a", "x = 1\n", "guideline", "speed", "high"),
        Variant("a", "x = 1\n", "guideline", "speed", "low", category="Algorithm"),
        Variant("a", "x = 2\n", "guideline", "speed", "low"),
        Variant("b", "y = 1\n", "plain"),
    ]
    result = make_lists(tasks, variants, ListOptions(n_low=1), progress=False)
    [row] = result.dataset.to_list()
    assert sorted(zip(row["docs"], row["labels"], strict=True)) == [
        ("x = 1\n", 2),
        ("x = 2\n", 1),
        ("y = 1\n", 0),
    ]
    assert [(d.reason, d.item) for d in result.drops] == [
        ("the same code as another doc of its list", variants[1].variant_id),
        ("no labelled variant", "b"),
    ]


def test_a_failing_variant_is_never_a_doc():
    tasks, variants = fixture()
    failing = dataclasses.replace(variants[1], passed=False)  # t00's only... speed high
    result = make_lists(tasks, [failing, *variants[2:]], progress=False)
    assert failing.variant_id not in {i for r in result.dataset.to_list() for i in r["doc_ids"]}
    assert ("fails its tests", failing.variant_id) in {(d.reason, d.item) for d in result.drops}


def test_same_inputs_and_seed_give_the_same_lists_and_bytes(tmp_path):
    tasks, variants = fixture()
    a = make_lists(tasks, variants, ListOptions(seed=3), progress=False)
    # another order of the claims and tasks; inside a claim the order is kept (it ranks the
    # lows), which a stable sort does even in reverse
    shuffled = sorted(
        variants, key=lambda v: (v.task_id, v.dimension or "", v.level or ""), reverse=True
    )
    assert shuffled != variants
    b = make_lists(list(reversed(tasks)), shuffled, ListOptions(seed=3), progress=False)
    assert a.dataset.to_list() == b.dataset.to_list()
    write_lists(tmp_path / "a", a)
    write_lists(tmp_path / "b", b)
    assert (tmp_path / "a" / LISTS_FILE).read_bytes() == (tmp_path / "b" / LISTS_FILE).read_bytes()
    c = make_lists(tasks, variants, ListOptions(seed=4), progress=False)
    assert a.dataset["labels"] != c.dataset["labels"] or a.dataset["docs"] != c.dataset["docs"]


def test_write_and_read(tmp_path):
    tasks, variants = fixture()
    result = make_lists(tasks, variants, progress=False)
    split = problem_split([t.task_id for t in tasks], seed=2)
    out = write_lists(tmp_path / "lists", result, split=split, sources=["somewhere/codenet"])
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [LISTS_FILE, "README.md", "report.json", SPLIT_FILE]
    )
    assert read_lists(out).to_list() == result.dataset.to_list()
    assert read_lists(out / LISTS_FILE).features == list_features()
    assert read_split(out) == split
    readme = (out / "README.md").read_text()
    assert f"{len(result.dataset)} lists" in readme
    assert f"--exclude-problems-from {out / SPLIT_FILE}" in readme
    assert f"its {len(split.train)} training problems only" in readme
    with pytest.raises(FileExistsError, match="overwrite"):
        write_lists(out, result)
    write_lists(out, result, overwrite=True)
    assert not (out / SPLIT_FILE).exists()
    assert "exclude-problems-from" not in (out / "README.md").read_text()


def test_read_lists_errors_name_the_file_and_column(tmp_path):
    tasks, variants = fixture()
    table = make_lists(tasks, variants, progress=False).dataset.data.table
    path = tmp_path / LISTS_FILE
    pq.write_table(table.drop_columns(["labels"]), path)
    with pytest.raises(ValueError, match=rf"{path}: .*missing \['labels'\]"):
        read_lists(path)
    pq.write_table(table.append_column("score", pa.array([1.0] * len(table))), path)
    with pytest.raises(ValueError, match=rf"{path}: .*unexpected \['score'\]"):
        read_lists(tmp_path)
    path.write_text("not parquet")
    with pytest.raises(ValueError, match="not a parquet file"):
        read_lists(path)
    with pytest.raises(FileNotFoundError, match="no lists"):
        read_lists(tmp_path / "nowhere")


def test_options_are_checked_and_documented():
    for f in dataclasses.fields(ListOptions):
        assert f.metadata.get("help"), f.name
    assert (ListOptions().n_high, ListOptions().n_low, ListOptions().n_irrelevant) == (1, 4, 1)
    for kwargs, name in (
        ({"n_high": 0}, "n_high"),
        ({"n_low": True}, "n_low"),
        ({"n_irrelevant": -1}, "n_irrelevant"),
        ({"min_low": 5}, "min_low"),
        ({"template": "fast"}, "template"),
        ({"seed": "0"}, "seed"),
    ):
        with pytest.raises(ValueError, match=f"^{name} must"):
            ListOptions(**kwargs)
    with pytest.raises(ValueError, match="share the id"):
        make_lists([SeedTask("a", "A"), SeedTask("a", "B")], [], progress=False)


@pytest.mark.needs_shared_data
def test_real_lists_on_the_training_problems_only(tmp_path):
    from coreb_toolkit.sources import codenet
    from trainers.quality_data.real_data import label_real, real_tasks, real_variants

    data = codenet.load([SHARED_DATA / "codenet", SHARED_DATA / "nofuneval"], progress=False)
    split = problem_split(data.submissions, eval_fraction=0.5, seed=0)
    drops = []
    tasks = real_tasks(data, split.train, drops=drops)
    variants = real_variants(data, [t.task_id for t in tasks], drops=drops)
    labelled, _ = label_real(variants, seed=0)
    result = make_lists(tasks, labelled, progress=False)
    rows = result.dataset.to_list()
    assert rows
    assert not {r["task_id"] for r in rows} & set(split.eval)
    by_id = {v.variant_id: v for v in labelled}
    assert all(by_id[i].task_id in split.train for r in rows for i in r["doc_ids"])
    assert all(r["labels"].count(2) == 1 and r["labels"].count(0) == 1 for r in rows)
    out = write_lists(tmp_path / "lists", result, split=split)
    assert read_split(out).train == split.train
