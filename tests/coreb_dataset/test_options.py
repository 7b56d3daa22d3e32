"""``QrelsOptions``, the one place of the qrels options: their help, their checks, the builder
config that embeds them (``load_dataset`` keyword arguments) and ``build`` of a read release."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import coreb_dataset
from coreb_dataset import QrelsOptions
from tests.coreb_dataset import release as R


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory) -> Path:
    return R.write_release(tmp_path_factory.mktemp("options") / "release")


def test_every_field_has_help():
    for f in dataclasses.fields(QrelsOptions):
        assert f.metadata.get("help"), f.name


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"scheme": "v3"}, "scheme"),
        ({"min_hard_negatives": -1}, "min_hard_negatives"),
        ({"c2t_hard_negatives": True}, "c2t_hard_negatives"),
        ({"original_text_style": ""}, "original_text_style"),
        ({"original_text_style": 1}, "original_text_style"),
    ],
)
def test_a_bad_option_names_its_field(kwargs, field):
    with pytest.raises(ValueError, match=re.escape(f"QrelsOptions.{field} must be")):
        QrelsOptions(**kwargs)


def test_the_builder_config_embeds_the_options():
    config = coreb_dataset.CorebConfig(name="t2c_search_go")
    assert config.options == QrelsOptions()
    assert not any(f.name == "min_hard_negatives" for f in dataclasses.fields(config))
    config.min_hard_negatives = 3  # what datasets does with load_dataset(..., kwarg=value)
    config.qrels_scheme = "v1"  # the former name of scheme
    assert config.options == QrelsOptions(scheme="v1", min_hard_negatives=3)
    assert (config.min_hard_negatives, config.qrels_scheme) == (3, "v1")
    with pytest.raises(ValueError, match=r"QrelsOptions\.min_hard_negatives"):
        config.min_hard_negatives = -2
    with pytest.raises(AttributeError):
        config.no_such_option  # noqa: B018


def test_load_dataset_keyword_arguments_reach_the_options(release_dir, tmp_path):
    # P8 has no failed solution: with min_hard_negatives=1 (default) the wrong-language correct
    # solution fills in as a hard negative; with 0 it does not
    builder = coreb_dataset.Coreb(
        config_name="t2c_full_retro_go",
        data_dir=str(release_dir),
        cache_dir=str(tmp_path),
        min_hard_negatives=0,
    )
    assert builder.config.options == QrelsOptions(min_hard_negatives=0)
    builder.download_and_prepare()
    (row,) = builder.as_dataset(split=R.V2).to_list()
    assert (row["positive_ids"], row["hard_negative_ids"]) == ([R.c2(6)], [])


def test_load_config_passes_its_options(release_dir, tmp_path):
    ds = coreb_dataset.load_config(
        release_dir,
        "t2c_full_retro_go",
        cache_dir=str(tmp_path),
        options=QrelsOptions(min_hard_negatives=0),
    )
    assert ds[R.V2][0]["hard_negative_ids"] == []


def test_build_of_a_read_release_refuses_other_options(release_dir, tmp_path):
    release = coreb_dataset.read_release(release_dir)
    with pytest.raises(ValueError, match="read it again with read_release"):
        coreb_dataset.build(
            release, tmp_path / "out", options=QrelsOptions(scheme="v1"), progress=False
        )
    assert not (tmp_path / "out").exists()
    # its own options (or none) are fine
    coreb_dataset.build(release, tmp_path / "out", options=QrelsOptions(), progress=False)
    assert (tmp_path / "out" / "README.md").is_file()


def test_cached_release_is_read_once_until_cleared(release_dir):
    first = coreb_dataset.cached_release(release_dir, QrelsOptions())
    assert coreb_dataset.cached_release(str(release_dir), QrelsOptions()) is first
    assert coreb_dataset.cached_release(release_dir, QrelsOptions("v1")) is not first
    again = coreb_dataset.cached_release(release_dir, QrelsOptions())
    coreb_dataset.clear_release_cache()
    assert coreb_dataset.cached_release(release_dir, QrelsOptions()) is not again


def test_config_name_pattern():
    ok = ("t2c_full_retro_any", "c2t_match", "x.y-z")
    assert all(coreb_dataset.CONFIG_NAME_PATTERN.fullmatch(n) for n in ok)
    assert not any(coreb_dataset.CONFIG_NAME_PATTERN.fullmatch(n) for n in ("_x", "a b", "a/b"))
