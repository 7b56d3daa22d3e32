"""``model_cards.dataset_card``: the CoREB and QualCode dataset cards, from their templates.

The snapshots (``golden/*.snapshot.md``) are the cards the builders themselves wrote before the
cards moved to templates (issue 14), for the fixtures of ``tests/coreb_dataset`` and
``tests/qualcode_dataset``: the code's own earlier output, not independent truth; a rendering
change shows here as a diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import coreb_dataset
import qualcode_dataset as q
from model_cards.dataset_card import (
    COREB_TEMPLATE,
    QUALCODE_TEMPLATE,
    CorebCardData,
    CorebCardRelease,
    CorebCardSubtask,
    markdown_table,
    render_coreb_card,
    size_category,
)
from tests.conftest import REPO_ROOT
from tests.coreb_dataset import release as R
from tests.qualcode_dataset.fixture import MarkerAnalyser, write_codenet

#: the code's own earlier output (see golden/README.md), checked for unintended change
SNAPSHOTS = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory) -> Path:
    return R.write_release(tmp_path_factory.mktemp("card") / "release")


@pytest.mark.parametrize(
    ("options", "snapshot"),
    [
        (None, "coreb_fixture.snapshot.md"),
        (coreb_dataset.QrelsOptions("v1", 3), "coreb_fixture_v1.snapshot.md"),
    ],
)
def test_coreb_card_of_the_fixture_is_its_snapshot(release_dir, tmp_path, options, snapshot):
    coreb_dataset.build(release_dir, tmp_path / "coreb", options=options, progress=False)
    got = (tmp_path / "coreb" / "README.md").read_bytes()
    assert got == (SNAPSHOTS / snapshot).read_bytes()


@pytest.mark.parametrize(
    ("options", "snapshot"),
    [
        (q.QualcodeOptions(retrieval_negatives=5), "qualcode_fixture.snapshot.md"),
        (
            q.QualcodeOptions(
                retrieval_negatives=5,
                mc_balance="quota",
                control_unrequested=False,
                mc_per_k=7,
                seed=3,
            ),
            "qualcode_fixture_quota.snapshot.md",
        ),
    ],
)
def test_qualcode_card_of_the_fixture_is_its_snapshot(tmp_path, options, snapshot):
    codenet = write_codenet(tmp_path / "codenet")
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    q.build(data, tmp_path / "qualcode", progress=False)
    got = (tmp_path / "qualcode" / "README.md").read_text(encoding="utf-8")
    expected = (SNAPSHOTS / snapshot).read_text(encoding="utf-8")
    assert got.replace(str(tmp_path), "<tmp>") == expected


def test_build_takes_another_card_renderer(release_dir, tmp_path):
    seen: list[CorebCardData] = []

    def card(data: CorebCardData) -> str:
        seen.append(data)
        return "---\n" + "\n".join(data.configs_yaml) + "\n---\n# mine\n"

    coreb_dataset.build(release_dir, tmp_path / "coreb", progress=False, card=card)
    assert (tmp_path / "coreb" / "README.md").read_text().endswith("---\n# mine\n")
    (data,) = seen
    assert data.releases == [R.V2, R.V3] and data.families == ["t2c", "c2c", "c2t"]
    assert {s.name for s in data.subtasks} == set(R.EXPECTED)
    assert data.qrels_options == {
        "scheme": "v2",
        "min_hard_negatives": 3,
        "c2t_hard_negatives": 4,
        "max_hard_negatives": 3,
        "original_text_style": "auto",
        "qrels": "shipped",
    }


def _card_data(**changes) -> CorebCardData:
    stats = {
        "n_code": 3,
        "n_text": 2,
        "n_queries": 2,
        "code_by_language": {"python": 2, "go": 1},
        "code_passed_by_language": {"python": 1},  # no go solution passed: counted as 0
        "code_by_model": {"m": 3},
        "text_by_style": {"original": 2},
        "queries_by_language": {"t2c": {"go": 2}},  # c2c, c2t absent: 0
        "queries_by_variant": {("t2c", "search"): 2},
        "per_subtask": {"t2c_search_go": (2, 3, 1)},
        "qrels": {"t2c": {2: 3, 1: 1}},
    }
    fields = {
        "pretty_name": "Tiny",
        "license": "mit",
        "total_rows": 1500,
        "configs_yaml": ["configs:", "- config_name: t2c_search_go"],
        "releases": ["release_vx"],
        "families": ["t2c", "c2c", "c2t"],
        "subtasks": [CorebCardSubtask("t2c_search_go", True, "text-to-code", "corpus_code", [2])],
        "qrels_derived": True,
        "qrels_options": {
            "scheme": "v1",
            "min_hard_negatives": 2,
            "max_hard_negatives": 5,
            "c2t_hard_negatives": 4,
            "original_text_style": "orig",
        },
        "statistics": [CorebCardRelease("release_vx", {"t2c": "derived-v1"}, stats)],
        "citation": "@article{x}",
    }
    return CorebCardData(**{**fields, **changes})


def test_coreb_card_from_plain_data():
    text = render_coreb_card(_card_data())
    assert text.startswith("---\npretty_name: Tiny\nlicense: mit\n")
    assert "size_categories:\n- 1K<n<10K\n" in text
    assert "configs:\n- config_name: t2c_search_go\n---\n# Tiny\n" in text
    assert 'split="release_vx")' in text
    assert "| `t2c_search_go` | text-to-code | `corpus_code` | 2 |" in text
    assert (
        "(scheme `v1`, `min_hard_negatives=2`, `max_hard_negatives=5`, `c2t_hard_negatives=4`, "
        in text
    )
    assert "`original_text_style='orig'`)" in text
    assert "qrels t2c: derived-v1, c2c: none, c2t: none." in text
    assert "| go | 1 | 0 | 0.00 |" in text  # a plain dict without the count: 0
    assert "| c2c | 0 | 0 |" in text
    assert "| t2c_search_go | 2 | 1.50 | 0.50 |" in text
    assert "| all | 3 | 1 | 4 |" in text
    assert "nDCG@{1,3,5,10}" in text
    assert text.endswith("check it against the release you publish.\n")
    assert "$" not in text


def test_coreb_card_says_when_every_qrel_shipped():
    text = render_coreb_card(_card_data(qrels_derived=False))
    assert "Every release shipped its qrels; they are used as given." in text


def test_size_category_and_markdown_table():
    assert [size_category(n) for n in (0, 999, 1000, 99_999, 100_000, 10**6)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
        "1M<n<10M",
    ]
    assert markdown_table(["a", "b"], [(1234, True), ("x", 1.5)]) == (
        "| a | b |\n|---|---|\n| 1,234 | True |\n| x | 1.5 |"
    )


def test_templates_sit_beside_the_renderer():
    for template in (COREB_TEMPLATE, QUALCODE_TEMPLATE):
        assert template.parent.name == "templates" and template.is_file()
        assert template.read_text(encoding="utf-8").startswith("---\npretty_name: $pretty_name\n")


def _modules_after(statement: str, pick: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(sorted(m for m in sys.modules if {pick}))\n"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return eval(out.stdout.strip())


def test_imports_run_builders_to_cards():
    # the renderer takes the builders' card data (coreb_toolkit.builders.card_data) and nothing
    # else of theirs; the builders never import the cards (their entry points pass the renderer)
    assert (
        _modules_after(
            "import model_cards.dataset_card",
            "m in ('coreb_dataset', 'qualcode_dataset', 'datasets', 'torch') or "
            "(m.startswith('coreb_toolkit.builders.') and m != 'coreb_toolkit.builders.card_data')",
        )
        == []
    )
    assert (
        _modules_after(
            "import coreb_toolkit.builders.coreb.build, coreb_toolkit.builders.qualcode.build",
            "m.startswith('model_cards')",
        )
        == []
    )


@pytest.mark.parametrize("module", ["coreb", "qualcode"])
def test_the_builders_take_the_renderer_from_their_entry_point(module, tmp_path):
    import importlib

    build = importlib.import_module(f"coreb_toolkit.builders.{module}.build").build
    with pytest.raises(TypeError, match=r"needs card=.*_dataset\.build"):
        build(str(tmp_path / "no-such-release"), tmp_path / "out")


# -- eval.yaml: the Hub's benchmark registration ------------------------------------------
def _eval_yaml(folder: Path) -> dict:
    import yaml

    return yaml.safe_load((folder / "eval.yaml").read_text(encoding="utf-8"))


def test_a_coreb_build_writes_eval_yaml_with_a_task_per_subtask_and_release(release_dir, tmp_path):
    from coreb_toolkit.builders.hub_folder import hub_folder_configs
    from coreb_toolkit.vocabulary import CORPUS_CONFIGS
    from model_cards.dataset_card import render_coreb_eval_yaml

    out = tmp_path / "coreb"
    coreb_dataset.build(release_dir, out, progress=False, eval_card=render_coreb_eval_yaml)
    body = _eval_yaml(out)
    assert list(body) == ["name", "description", "evaluation_framework", "tasks"]
    assert body["name"] == "CoREB" and body["evaluation_framework"] == "coreb-toolkit"
    # every subtask config of the card's configs:, once per split it has (its releases)
    official = set(coreb_dataset.OFFICIAL_CONFIGS) | set(CORPUS_CONFIGS)
    want = [
        {"id": f"{config}-{split}", "config": config, "split": split}
        for config, splits in hub_folder_configs(out).items()
        if config not in official
        for split in splits
    ]
    assert sorted(body["tasks"], key=str) == sorted(want, key=str)
    assert {t["config"] for t in body["tasks"]} == set(R.EXPECTED)
    assert {"id": f"c2c_cross_lang-{R.V3}", "config": "c2c_cross_lang", "split": R.V3} in want
    # the README is the snapshot's: eval.yaml adds a file, not card content
    snapshot = (SNAPSHOTS / "coreb_fixture.snapshot.md").read_bytes()
    assert (out / "README.md").read_bytes() == snapshot
    # a rebuild over it is allowed (eval.yaml is one of the card files a build writes); the
    # builder without eval_card (its default) writes none, and leaves no stale one behind
    from coreb_toolkit.builders.coreb.build import build

    (out / "eval.yaml").write_text("stale\n")
    coreb_dataset.build(
        release_dir, out, progress=False, overwrite=True, eval_card=render_coreb_eval_yaml
    )
    assert _eval_yaml(out) == body
    build(release_dir, out, progress=False, overwrite=True, card=render_coreb_card)
    assert not (out / "eval.yaml").exists()
    assert (out / "README.md").read_bytes() == snapshot
    (out / "notes.txt").write_text("mine\n")  # a file no build writes is still refused
    with pytest.raises(ValueError, match=r"holds files a build does not write \(notes\.txt\)"):
        build(release_dir, out, progress=False, overwrite=True, card=render_coreb_card)
    build(release_dir, tmp_path / "plain", progress=False, card=render_coreb_card)
    assert not (tmp_path / "plain" / "eval.yaml").exists()


def test_a_qualcode_build_writes_eval_yaml_of_its_scored_configs(tmp_path):
    from model_cards.dataset_card import render_qualcode_eval_yaml

    codenet = write_codenet(tmp_path / "codenet")
    options = q.QualcodeOptions(retrieval_negatives=5)
    data = q.prepare([codenet], options, analyser=MarkerAnalyser(), progress=False)
    out = tmp_path / "qualcode"
    report = q.build(data, out, progress=False, eval_card=render_qualcode_eval_yaml)
    body = _eval_yaml(out)
    assert body["evaluation_framework"] == "coreb-toolkit"
    scored = [
        name
        for name in ("qualcode_speed", "qualcode_memory", "qualcode_maintainability",
                     "mc_1cond", "mc_2cond", "mc_3cond")
        if report.rows.get(name, {}).get("test", 0)
    ]  # fmt: skip
    assert scored  # the fixture gives some
    assert body["tasks"] == [{"id": n, "config": n, "split": "test"} for n in scored]


def test_eval_yaml_from_plain_data_skips_empty_splits():
    import yaml

    from model_cards.dataset_card import coreb_task_id, render_coreb_eval_yaml

    data = _card_data(
        releases=["release_va", "release_vb"],
        subtasks=[CorebCardSubtask("t2c_search_go", True, "text-to-code", "corpus_code", [0, 3])],
    )
    body = yaml.safe_load(render_coreb_eval_yaml(data))
    assert body["tasks"] == [
        {"id": "t2c_search_go-release_vb", "config": "t2c_search_go", "split": "release_vb"}
    ]
    assert coreb_task_id("t2c_search_go", "release_vb") == "t2c_search_go-release_vb"
