"""Releases in the shapes users have them, on the synthetic fixture (runs without the real data):
``meta`` flattened into ``meta_<key>`` columns (the Hub's Parquet), one folder per release
holding ``<config>.jsonl``, and a release built once into a cache keyed by its fingerprint."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import coreb_dataset
from coreb_dataset import ReleaseError
from coreb_toolkit.cli.main import main
from tests.coreb_dataset import release as R


def _meta(row: dict) -> dict:
    """The fixture's meta: a dict, a JSON string or a Python literal."""
    meta = row.get("meta")
    if isinstance(meta, str):
        try:
            return json.loads(meta)
        except json.JSONDecodeError:
            return ast.literal_eval(meta)
    return dict(meta or {})


def _flat(row: dict, keys: set[str]) -> dict:
    """``row`` as the Hub serves it: every meta key a ``meta_<key>`` column, null where the
    row does not use it."""
    meta = _meta(row)
    out = {k: v for k, v in row.items() if k != "meta"}
    out.update({f"meta_{k}": meta.get(k) for k in keys})
    return out


def served_release(hub_layout: Path, out: Path, parquet: bool = False) -> Path:
    """The fixture rearranged as the official runner's layout (``<release>/<config>.jsonl``)
    with flattened meta."""
    for config_dir in sorted(p for p in hub_layout.iterdir() if p.is_dir()):
        for path in sorted(config_dir.iterdir()):
            if path.suffix == ".parquet":
                rows = pq.read_table(path).to_pylist()
            else:
                rows = [json.loads(line) for line in path.read_text().splitlines() if line]
            keys: set[str] = set()
            for row in rows:
                keys |= set(_meta(row))
            split = path.stem.split("-00000-of-")[0]
            target = out / split / f"{config_dir.name}{'.parquet' if parquet else '.jsonl'}"
            target.parent.mkdir(parents=True, exist_ok=True)
            flat = [_flat(r, keys) for r in rows]
            columns = list(dict.fromkeys(k for r in flat for k in r))  # every row, every column
            flat = [{k: r.get(k) for k in columns} for r in flat]
            if parquet:
                pq.write_table(pa.Table.from_pylist(flat), target)
            else:
                target.write_text("".join(json.dumps(r) + "\n" for r in flat))
    return out


@pytest.fixture(scope="module")
def hub_layout(tmp_path_factory) -> Path:
    return R.write_release(tmp_path_factory.mktemp("hub") / "release")


def _records(release: coreb_dataset.Release) -> dict:
    return {
        name: (
            {k: (r.fields, r.meta) for k, r in d.code.items()},
            {k: (r.fields, r.meta) for k, r in d.texts.items()},
            {k: (s.name, r.fields, r.meta) for k, (s, r) in d.queries.items()},
            d.qrels,
            d.qrels_source,
        )
        for name, d in release.releases.items()
    }


@pytest.mark.parametrize("parquet", [False, True], ids=["jsonl", "parquet"])
def test_flattened_meta_in_release_folders_reads_like_the_hub_layout(hub_layout, tmp_path, parquet):
    served = served_release(hub_layout, tmp_path / "served", parquet)
    assert sorted(p.name for p in served.iterdir()) == [R.V2, R.V3]
    ours, theirs = coreb_dataset.read_release(hub_layout), coreb_dataset.read_release(served)
    assert _records(theirs) == _records(ours)
    # nothing of the flattened meta is left over as an unknown field
    code = next(iter(theirs.releases[R.V3].code.values()))
    assert not [k for k in code.extra if k.startswith("meta_")]
    # one release folder alone is that release
    alone = coreb_dataset.read_release(served / R.V3)
    assert list(alone.releases) == [R.V3]


def test_a_meta_key_given_twice_must_agree(hub_layout, tmp_path):
    served = served_release(hub_layout, tmp_path / "served")
    path = served / R.V3 / "code_corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["meta"] = {"passed": not rows[0]["meta_passed"]}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ReleaseError, match=r"code_corpus.jsonl:1: meta.passed is .* but column "):
        coreb_dataset.read_release(served)


def test_a_release_folder_without_its_corpus_is_named(hub_layout, tmp_path):
    served = served_release(hub_layout, tmp_path / "served")
    (served / R.V2 / "code_corpus.jsonl").unlink()
    with pytest.raises(ReleaseError, match=f"{R.V2}/code_corpus.jsonl: missing"):
        coreb_dataset.read_release(served)


def test_qrels_derived_replaces_the_shipped_ones(hub_layout):
    shipped = coreb_dataset.read_release(hub_layout).releases[R.V3]
    derived = coreb_dataset.read_release(
        hub_layout, coreb_dataset.QrelsOptions(qrels="derived")
    ).releases[R.V3]
    assert set(shipped.qrels_source.values()) == {"shipped"}
    assert set(derived.qrels_source.values()) == {"derived-v2"}
    # the shipped qrels grade this search query's c3(5) 1; by the rules, a failed solution of
    # the query's problem is a hard negative too, and no failed solution is a positive
    assert shipped.qrels["q_t2c_search_go_0001"] == {R.c3(5): 1}
    assert derived.qrels["q_t2c_search_go_0001"][R.c3(5)] == 1
    for qid, judged in derived.qrels.items():
        if derived.queries[qid][0].family == "t2c":
            assert all(derived.code[d].meta["passed"] for d, rel in judged.items() if rel == 2)
    # the audit of the shipped qrels is there either way
    assert derived.qrels_audit.keys() == shipped.qrels_audit.keys() == {"t2c", "c2c", "c2t"}
    with pytest.raises(ValueError, match="a qrels file scores a run file"):
        coreb_dataset.QrelsOptions(qrels="my.qrels")


def test_a_release_is_built_once_into_the_cache(hub_layout, tmp_path, monkeypatch):
    served = served_release(hub_layout, tmp_path / "served")
    builds = []
    real = coreb_dataset.build

    def counting(*args, **kwargs):
        builds.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(coreb_dataset, "build", counting)
    cache = tmp_path / "cache"
    first = coreb_dataset.prepare_dataset(served, cache, progress=False)
    again = coreb_dataset.prepare_dataset(served, cache, progress=False)
    assert first == again and len(builds) == 1
    assert coreb_dataset.is_hub_folder(first)
    # another qrels option, or a changed file, is another build
    other = coreb_dataset.prepare_dataset(
        served, cache, options=coreb_dataset.QrelsOptions(min_hard_negatives=1), progress=False
    )
    assert other != first and len(builds) == 2
    path = served / R.V3 / "text_corpus.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["text"] += " (edited)"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    changed = coreb_dataset.prepare_dataset(served, cache, progress=False)
    assert changed not in (first, other) and len(builds) == 3
    # a built folder is used as it is, and without a cache a release is read where it is
    assert coreb_dataset.prepare_dataset(first, cache) == first
    assert coreb_dataset.prepare_dataset(served, None) == str(served)


def test_coreb_evaluate_builds_a_release_folder_once(hub_layout, tmp_path, capsys):
    served = served_release(hub_layout, tmp_path / "served")
    argv = ["evaluate", "--dataset", str(served), "--model", "bm25", "--releases", R.V3,
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "built dataset" in out
    written = json.loads((tmp_path / "out" / "BM25" / R.V3 / "results.json").read_text())
    assert written["dataset"]["source"] == str(served)
    assert written["dataset"]["revision"] == coreb_dataset.source_fingerprint(served)
    # the fixture's release is named like a published one: the paper's rows come beside ours
    assert "== beside the paper on release_v2603 ==" in out
    assert "| GemEmb-2 | 0.434 | 0.749 |" in out and "| **BM25** |" in out
    assert (tmp_path / "out" / "comparison" / R.V3 / "published.md").is_file()
    assert main([*argv, "--no-compare-published"]) == 0
    assert "beside the paper" not in capsys.readouterr().out
    assert len(list((tmp_path / "cache" / "datasets").glob("*/README.md"))) == 1
