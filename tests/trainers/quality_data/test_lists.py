"""The hierarchical lists: counts, labels, irrelevant docs, shuffling, drops, determinism, I/O."""

from __future__ import annotations

import dataclasses
import json
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
    summary,
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
        assert r["query_id"] == f"{r['dimension']}/{r['task_id']}/0"  # one high: one list
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
    t05 = next(r for r in rows if r["query_id"] == "speed/t05/0")
    low_docs = sorted(d for d, lab in zip(t05["docs"], t05["labels"], strict=True) if lab == 1)
    assert low_docs == [f"# t05 slow {j}\n" for j in range(4)]


def test_every_drop_is_counted(made):
    _, _, result = made
    reasons = Counter((d.reason, d.item) for d in result.drops)
    lows = {f"t{i:02d}": i % 6 for i in range(N_TASKS)}
    for t, n in lows.items():
        # memory: a high and no low; speed of tasks without lows: a high only
        assert reasons[("fewer than 1 low-quality variants", f"memory/{t}/0")] == 1
        assert reasons[("fewer than 1 low-quality variants", f"speed/{t}/0")] == (n == 0)
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


def many_highs(n_high: int = 4, n_low: int = 4, others: int = 6):
    """Task "a" on speed: ``n_high`` guideline highs (one per Table 2 group, in group order)
    and ``n_low`` lows; ``others`` tasks "o0".. with one unlabelled variant each (the
    irrelevant pool)."""
    tasks = [SeedTask("a", "Print the sum."), *(SeedTask(f"o{i}", f"Other {i}.") for i in
                                                 range(others))]  # fmt: skip
    highs = [
        Variant("a", f"print(sum(x{k}))\n", "guideline", "speed", "high", category=f"G{k}")
        for k in range(n_high)
    ]
    lows = [
        Variant("a", f"s = 0\nfor v in x{k}: s += v\n", "guideline", "speed", "low",
                category=f"G{k}")
        for k in range(n_low)
    ]  # fmt: skip
    plain = [Variant(f"o{i}", f"print({i})\n", "plain") for i in range(others)]
    return tasks, highs, lows, plain


def by_label(row, label):
    return [d for d, lab in zip(row["doc_ids"], row["labels"], strict=True) if lab == label]


def test_every_high_variant_heads_a_list():
    """The paper's 4 positive variants per query each head a list: one list per passing high
    variant, in the order given, each with the same 4 lows and its own irrelevant draw."""
    tasks, highs, lows, plain = many_highs()
    result = make_lists(tasks, [*highs, *lows, *plain], progress=False)
    rows = result.dataset.to_list()
    assert [r["query_id"] for r in rows] == [f"speed/a/{k}" for k in range(4)]
    assert [by_label(r, 2) for r in rows] == [[h.variant_id] for h in highs]
    for r in rows:
        assert sorted(r["labels"], reverse=True) == [2, 1, 1, 1, 1, 0]
        assert sorted(by_label(r, 1)) == sorted(v.variant_id for v in lows)
    irrelevant = [d for r in rows for d in by_label(r, 0)]
    assert len(set(irrelevant)) == 4  # 6 other codes: no irrelevant doc twice
    report = result.report
    assert report["high_variants"] == {"distinct": 4, "label_2_of_a_list": 4}
    assert report["list_shapes"] == {"1+4+1": 4} and report["full_lists"] == 4
    assert report["short_lists"] == {} and report["lists_not_built"] == {}
    assert result.shortfalls == []
    # seeded and order-free: the same lists from the tasks and claims in another order
    again = make_lists(
        list(reversed(tasks)), [*plain, *lows, *highs], ListOptions(seed=0), progress=False
    )
    assert again.dataset.to_list() == rows
    # a repeated high code heads no second list, and is counted
    twin = dataclasses.replace(highs[0], category="G9")
    more = make_lists(tasks, [*highs, twin, *lows, *plain], progress=False)
    assert len(more.dataset) == 4
    assert (
        "the same code as another high-quality variant of its task and dimension",
        twin.variant_id,
    ) in {(d.reason, d.item) for d in more.drops}


def test_exactly_enough_members_gives_one_four_one_lists():
    """3 tasks x 3 dimensions, each with 4 highs and 4 lows: 36 lists, all [2, 1, 1, 1, 1, 0]
    (the other tasks' variants are the irrelevant pool)."""
    tasks = [SeedTask(f"t{i}", f"Task {i}.") for i in range(3)]
    variants = [
        Variant(t.task_id, f"# {t.task_id} {dim} {level} {k}\n", "guideline", dim, level)
        for t in tasks
        for dim in ("speed", "memory", "maintainability")
        for level in ("high", "low")
        for k in range(4)
    ]
    result = make_lists(tasks, variants, progress=False)
    rows = result.dataset.to_list()
    assert len(rows) == 3 * 3 * 4
    for r in rows:
        assert sorted(r["labels"], reverse=True) == [2, 1, 1, 1, 1, 0], r["query_id"]
    highs = {v.variant_id for v in variants if v.level == "high"}
    assert sorted(d for r in rows for d in by_label(r, 2)) == sorted(highs)
    report = result.report
    assert report["list_shapes"] == {"1+4+1": 36} and report["full_lists"] == 36
    assert report["short_lists"] == {} and report["short_lists_total"] == 0
    assert report["missing_docs_per_label"] == {"2": 0, "1": 0, "0": 0}
    assert report["lists_per_dimension"] == {"speed": 12, "memory": 12, "maintainability": 12}
    assert report["docs_per_label"] == {"2": 36, "1": 144, "0": 36}
    assert summary(report).startswith("36 lists, 36 of them 1+4+1;")


def test_too_few_lows_is_counted_never_silent(tmp_path):
    """4 highs and 2 lows: 4 lists of 1 + 2 + 1, each a counted shortfall of 2 label-1 docs;
    memory with 3 highs and no low: 3 lists not built, counted; everything in report.json."""
    tasks, highs, lows, plain = many_highs(n_high=4, n_low=2)
    no_lows = [Variant("a", f"print(len(x{k}))\n", "guideline", "memory", "high") for k in range(3)]
    result = make_lists(tasks, [*highs, *lows, *no_lows, *plain], progress=False)
    rows = result.dataset.to_list()
    assert [sorted(r["labels"], reverse=True) for r in rows] == [[2, 1, 1, 0]] * 4
    assert [(s.item, s.label, s.have, s.want, s.reason) for s in result.shortfalls] == [
        (f"speed/a/{k}", 1, 2, 4, "fewer than 4 low-quality variants") for k in range(4)
    ]
    report = result.report
    assert report["list_shapes"] == {"1+2+1": 4} and report["full_lists"] == 0
    assert report["short_lists"] == {"fewer than 4 low-quality variants": 4}
    assert report["short_lists_total"] == 4
    assert report["missing_docs_per_label"] == {"2": 0, "1": 8, "0": 0}
    assert report["lists_not_built"] == {"fewer than 1 low-quality variants": 3}
    assert report["high_variants"] == {"distinct": 7, "label_2_of_a_list": 4}
    lost = [d for d in result.drops if d.reason == "fewer than 1 low-quality variants"]
    assert [d.item for d in lost] == [f"memory/a/{k}" for k in range(3)]
    assert [d.where for d in lost] == [v.variant_id for v in no_lows]
    line = summary(report)
    assert (
        "4 built short (fewer than 4 low-quality variants: 4; docs missing: 8 of label 1)" in line
    )
    assert "3 not built (fewer than 1 low-quality variants: 3)" in line
    out = write_lists(tmp_path / "lists", result)
    written = json.loads((out / "report.json").read_text())
    assert written["short_lists"] == report["short_lists"]
    assert len(written["shortfalls"]) == 4
    assert "4 built short" in (out / "README.md").read_text()


def test_groups_of_n_high_and_few_irrelevant_codes_are_counted():
    """n_high=2 over 5 highs: 3 lists, the last with one label-2 doc, counted; 2 other codes
    for 3 lists: each list still has its irrelevant doc, never its own task's."""
    tasks, highs, lows, plain = many_highs(n_high=5, n_low=4, others=2)
    result = make_lists(tasks, [*highs, *lows, *plain], ListOptions(n_high=2), progress=False)
    rows = result.dataset.to_list()
    assert [r["labels"].count(2) for r in rows] == [2, 2, 1]
    assert [d for r in rows for d in by_label(r, 2)] == [h.variant_id for h in highs]
    assert all(r["labels"].count(0) == 1 for r in rows)
    assert {d for r in rows for d in by_label(r, 0)} == {v.variant_id for v in plain}
    assert result.report["short_lists"] == {"fewer than 2 high-quality variants": 1}
    assert result.report["missing_docs_per_label"] == {"2": 1, "1": 0, "0": 0}
    assert result.report["list_shapes"] == {"2+4+1": 2, "1+4+1": 1}


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
