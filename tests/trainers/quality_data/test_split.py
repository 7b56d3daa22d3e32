"""The seeded problem split: determinism, order independence, the fraction, the file."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from trainers.quality_data.split import (
    SPLIT_FILE,
    ProblemSplit,
    problem_split,
    read_split,
    write_split,
)

IDS = [f"p{i:05d}" for i in range(1000)]


def test_each_side_follows_the_sha256_of_seed_and_id():
    split = problem_split(IDS[:50], eval_fraction=0.3, seed=7)
    for p in IDS[:50]:
        # recomputed here from the rule, not from the code under test
        u = int(hashlib.sha256(f"7:{p}".encode()).hexdigest()[:16], 16) / 2**64
        assert split.side(p) == ("eval" if u < 0.3 else "train"), p
    assert split.side("p99999") is None
    assert split.train == tuple(sorted(split.train))
    assert set(split.train) | set(split.eval) == set(IDS[:50])
    assert not set(split.train) & set(split.eval)


def test_order_repeats_and_other_problems_do_not_change_a_problem_side():
    shuffled = IDS[:]
    random.Random(3).shuffle(shuffled)
    a = problem_split(IDS, seed=1)
    b = problem_split(shuffled + IDS[:10], seed=1)
    assert a == b
    small = problem_split(IDS[:100], seed=1)
    assert set(small.eval) == set(a.eval) & set(IDS[:100])


def test_the_seed_changes_the_split():
    assert problem_split(IDS, seed=0).eval != problem_split(IDS, seed=1).eval


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_the_fraction_is_roughly_honoured(fraction):
    share = len(problem_split(IDS, eval_fraction=fraction).eval) / len(IDS)
    # binomial(1000, f): 5 standard deviations is at most 0.08
    assert abs(share - fraction) < 0.08


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eval_fraction": 0}, "eval_fraction"),
        ({"eval_fraction": 1.0}, "eval_fraction"),
        ({"eval_fraction": float("nan")}, "eval_fraction"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        problem_split(IDS, **kwargs)


def test_bad_ids_are_refused():
    with pytest.raises(ValueError, match="no problem ids"):
        problem_split([])
    with pytest.raises(ValueError, match="non-empty strings"):
        problem_split(["p1", ""])
    with pytest.raises(TypeError, match="single string"):
        problem_split("p00001")


def test_a_problem_on_both_sides_is_refused():
    with pytest.raises(ValueError, match="both sides"):
        ProblemSplit(("p1",), ("p1",), 0, 0.5)


def test_write_read_round_trip_and_same_bytes(tmp_path):
    split = problem_split(IDS[:40], seed=5, source="fixture")
    path = write_split(tmp_path / SPLIT_FILE, split)
    assert read_split(path) == split
    assert read_split(tmp_path) == split  # a folder: its problem_split.json
    record = json.loads(path.read_text())
    assert record["train"] == list(split.train) and record["seed"] == 5
    first = path.read_bytes()
    write_split(path, problem_split(list(reversed(IDS[:40])), seed=5, source="fixture"))
    assert path.read_bytes() == first


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r.pop("train"), "'train'"),
        (lambda r: r.update(eval="p1"), "'eval'"),
        (lambda r: r.update(train=[1, 2]), "'train'"),
        (lambda r: r.update(seed="0"), "'seed'"),
        (lambda r: r.update(eval_fraction=2), "'eval_fraction'"),
        (lambda r: r.update(format="other"), "'format'"),
        (lambda r: r.update(source=3), "'source'"),
    ],
)
def test_a_malformed_file_error_names_the_file_and_the_field(tmp_path, edit, field):
    path = write_split(tmp_path / SPLIT_FILE, problem_split(IDS[:20]))
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=f"{path}.*field {field}"):
        read_split(path)


def test_not_json_overlap_and_missing_file(tmp_path):
    path = tmp_path / SPLIT_FILE
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"{path}: not a JSON"):
        read_split(path)
    path.write_text(json.dumps([1]))
    with pytest.raises(ValueError, match="JSON object"):
        read_split(path)
    record = json.loads(write_split(path, problem_split(IDS[:20])).read_text())
    record["eval"].append(record["train"][0])
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=f"{path}: .*both sides"):
        read_split(path)
    with pytest.raises(FileNotFoundError, match="no problem split"):
        read_split(tmp_path / "nowhere.json")
