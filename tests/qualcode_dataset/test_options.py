"""``QualcodeOptions``, the one place of the construction options: their help, their checks,
the builder config that embeds them and ``build`` of prepared data."""

from __future__ import annotations

import dataclasses

import pytest

import qualcode_dataset as q
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet


def test_every_field_has_help():
    for f in dataclasses.fields(q.QualcodeOptions):
        assert f.metadata.get("help"), f.name


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"margin": 0.5}, "margin"),
        ({"retrieval_negatives": 0}, "retrieval_negatives"),
        ({"mc_per_k": True}, "mc_per_k"),
        ({"mc_balance": "even"}, "mc_balance"),
        ({"labels": "guess"}, "labels"),
        ({"template": "fast code"}, "template"),
    ],
)
def test_a_bad_option_names_its_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field} must"):
        q.QualcodeOptions(**kwargs)


def test_the_builder_config_embeds_the_options():
    config = q.QualcodeConfig(name="qualcode_speed")
    assert config.options == q.QualcodeOptions()
    assert not any(f.name == "retrieval_negatives" for f in dataclasses.fields(config))
    config.retrieval_negatives = 5  # what datasets does with load_dataset(..., kwarg=value)
    assert config.options == q.QualcodeOptions(retrieval_negatives=5)
    with pytest.raises(ValueError, match="mc_balance"):
        config.mc_balance = "even"


def test_builder_keyword_arguments_reach_the_options(tmp_path):
    builder = q.Qualcode(
        config_name="qualcode_speed",
        cache_dir=str(tmp_path),
        sources=("somewhere",),
        retrieval_negatives=5,
        seed=7,
    )
    assert builder.config.options == q.QualcodeOptions(retrieval_negatives=5, seed=7)


def test_build_of_prepared_data_refuses_other_options(tmp_path):
    codenet = write_codenet(tmp_path / "codenet")
    options = q.QualcodeOptions(retrieval_negatives=5)
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    with pytest.raises(ValueError, match="prepare it again"):
        q.build(data, tmp_path / "out", options=dataclasses.replace(options, seed=1))
    assert not (tmp_path / "out").exists()
    q.build(data, tmp_path / "out", options=options, progress=False)
    assert (tmp_path / "out" / "README.md").is_file()
