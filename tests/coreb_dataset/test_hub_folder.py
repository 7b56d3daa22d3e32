"""Reading a built folder back (``is_hub_folder``, ``hub_folder_configs``, ``read_hub_config``)
and the names of the scratch folders a build leaves while it writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard

import coreb_dataset
from coreb_toolkit.builders import scratch
from coreb_toolkit.owners import owner_of, owner_tag
from tests.conftest import REPO_ROOT
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory) -> Path:
    return R.write_release(tmp_path_factory.mktemp("hubread") / "release")


@pytest.fixture(scope="module")
def built(release_dir) -> Path:
    out = release_dir.parent / "coreb"
    coreb_dataset.build(release_dir, out, progress=False)
    return out


def test_is_hub_folder(built, release_dir, tmp_path):
    assert coreb_dataset.is_hub_folder(built)
    assert coreb_dataset.is_hub_folder(str(built))
    assert not coreb_dataset.is_hub_folder(release_dir)  # a release, not a build
    assert coreb_dataset.is_hub_folder("someone/coreb")  # a Hub id (no such local path)
    (tmp_path / "someone" / "coreb").mkdir(parents=True)
    assert not coreb_dataset.is_hub_folder(tmp_path / "someone" / "coreb")


def test_hub_folder_configs_are_the_cards(built):
    configs = coreb_dataset.hub_folder_configs(built)
    card = DatasetCard.load(built / "README.md").data["configs"]
    assert list(configs) == [c["config_name"] for c in card]
    assert configs["c2c_cross_lang"] == [R.V2, R.V3]
    assert configs["t2c_search_go"] == [R.V3]
    assert set(R.EXPECTED) | set(coreb_dataset.CORPUS_CONFIGS) <= set(configs)


def test_hub_folder_configs_of_an_unreadable_dataset(tmp_path):
    with pytest.raises(ValueError, match="cannot read the dataset"):
        coreb_dataset.hub_folder_configs(tmp_path / "nothing-here")


def test_read_hub_config(built):
    rows = coreb_dataset.read_hub_config(built, "c2c_cross_lang", R.V3)
    assert [(r["query_id"], r["positive_ids"]) for r in rows] == [
        ("q_c2c_cross_lang_0001", [R.c3(2)])
    ]
    docs = coreb_dataset.read_hub_config(built, "corpus_code", R.V2, columns=["doc_id", "text"])
    assert {tuple(r) for r in docs} == {("doc_id", "text")}
    assert len(docs) == len(R.V2_CODE)


def test_scratch_folders_carry_the_owner_tag_and_host(tmp_path):
    out = tmp_path / "coreb"
    folder = coreb_dataset.scratch_folder(out)
    prefix = f".coreb.coreb-tmp-{scratch.host_token()}-"
    assert folder.name.startswith(prefix)
    assert owner_of(folder.name[len(".coreb.") :]) == owner_tag()
    with pytest.raises(ValueError, match="scratch kind"):
        scratch.scratch_prefix(out, "new")


def test_reclaim_judges_only_this_hosts_dead_owners(tmp_path):
    out = tmp_path / "coreb"
    code = "from coreb_toolkit.owners import owner_tag; print(owner_tag())"
    dead = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    host = scratch.host_token()
    other_host = "0" * 8 if host != "0" * 8 else "1" * 8
    ours_dead = tmp_path / f".coreb.coreb-tmp-{host}-{dead}-abc"
    theirs = tmp_path / f".coreb.coreb-tmp-{other_host}-{dead}-abc"  # another host's build
    alive = tmp_path / f".coreb.coreb-tmp-{host}-{owner_tag()}-abc"
    for p in (ours_dead, theirs, alive):
        p.mkdir()
    assert coreb_dataset.reclaim_leftovers(out) == [ours_dead]
    assert not ours_dead.exists() and theirs.is_dir() and alive.is_dir()
