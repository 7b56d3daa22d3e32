"""``coreb_toolkit.vocabulary``: every subtask of the registry, end to end (mteb's habit), and the
vocabulary's own functions.

Each registry entry present in the fixture release (``tests/coreb_dataset/release.py``) is built
into a Hub folder and its config checked against the entry: the corpus view it ranks, its family,
its query and document types, and its language constraint. The entries the fixture does not hold
are listed in ``ABSENT`` with the reason; a new fixture row must move its entry out of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit import vocabulary as V
from coreb_toolkit.builders.hub_folder import hub_folder_configs, read_hub_config
from tests.coreb_dataset import release as R

# Why each registry entry has no query in the fixture release. The fixture holds one subtask per
# (family, variant) rule it exercises; these share that rule with a present sibling.
_SIBLING = "same rule as {sibling}, which the fixture holds; only the language suffix differs"
ABSENT: dict[str, str] = {
    **{
        f"t2c_canonical_retro_{lang}": _SIBLING.format(sibling="t2c_canonical_retro_python")
        for lang in ("any", "java", "cpp", "ruby", "go")
    },
    **{
        f"t2c_full_retro_{lang}": _SIBLING.format(sibling="t2c_full_retro_{any,python,ruby,go}")
        for lang in ("java", "cpp")
    },
    **{
        f"t2c_search_{lang}": _SIBLING.format(sibling="t2c_search_go")
        for lang in ("any", "python", "java", "cpp", "ruby")
    },
    "c2c_cross_model": "a v202603 subtask the fixture release (v202602/v202603 excerpts) "
    "does not ship; no test exercises its qrels rule yet",
    "c2c_mono_lang": "a v202603 subtask the fixture release (v202602/v202603 excerpts) "
    "does not ship; no test exercises its qrels rule yet",
    **{
        f"c2t_canonical_retro_{lang}": _SIBLING.format(sibling="c2t_canonical_retro_any")
        for lang in ("python", "java", "cpp", "ruby", "go")
    },
    **{
        f"c2t_full_retro_{lang}": _SIBLING.format(sibling="c2t_full_retro_{any,java}")
        for lang in ("python", "cpp", "ruby", "go")
    },
}
_DOCUMENT_TYPE = {V.CORPUS_CODE: "code", V.CORPUS_TEXT: "text", V.CORPUS_TEXT_ABBREVIATED: "text"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    release = R.write_release(tmp_path_factory.mktemp("vocab") / "release")
    out = release.parent / "coreb"
    coreb_dataset.build(release, out, progress=False)
    return out


@pytest.fixture(scope="module")
def configs(built) -> dict[str, list[str]]:
    return hub_folder_configs(built)


def _registry_params() -> list:
    return [
        pytest.param(name, marks=pytest.mark.skip(reason=f"not in the fixture: {ABSENT[name]}"))
        if name in ABSENT
        else name
        for name in V.SUBTASKS
    ]


def test_absent_list_is_exactly_what_the_fixture_lacks():
    present = {name for name in R.EXPECTED if name in V.SUBTASKS}
    assert set(ABSENT) == set(V.SUBTASKS) - present
    assert not set(ABSENT) & present


@pytest.mark.parametrize("name", _registry_params())
def test_registry_entry_holds_in_the_built_folder(name, built, configs):
    entry = V.SUBTASKS[name]
    assert entry.name == name and entry.known
    assert name.startswith(f"{entry.family}_{entry.variant}")
    assert entry.query_type == V.MAIN_TASKS[entry.family].query_type
    assert _DOCUMENT_TYPE[entry.corpus] == entry.document_type
    assert sorted(configs[name]) == sorted(R.EXPECTED[name])
    for split in configs[name]:
        rows = read_hub_config(built, name, split)
        docs = {r["doc_id"]: r for r in read_hub_config(built, entry.corpus, split)}
        code = {r["doc_id"]: r for r in read_hub_config(built, V.CORPUS_CODE, split)}
        assert rows, (name, split)
        for row in rows:
            assert row["subtask"] == name
            assert row["main_task"] == entry.family
            assert row["corpus"] == entry.corpus
            # every judged document is a document of the view the entry ranks
            assert set(row["positive_ids"]) | set(row["hard_negative_ids"]) <= set(docs)
            # a code query is a document of the code corpus (its anchor); a text query is not
            if entry.query_type == "code":
                assert row["anchor_code_id"] in code, row["query_id"]
            else:
                assert row["anchor_code_id"] is None
            if entry.language in (None, V.ANY_LANGUAGE):
                continue
            if entry.language_role == "target":  # t2c: the code to retrieve
                assert row["language_constraint"] == entry.language
                langs = {code[d]["language"] for d in row["positive_ids"]}
                assert langs <= {entry.language}, (row["query_id"], langs)
            else:  # c2t: the query code
                assert code[row["anchor_code_id"]]["language"] == entry.language
                assert row["anchor_language"] == entry.language


def test_a_language_constraint_is_tested_with_positives():
    # the constraint checks above are not vacuous: some constrained t2c subtask has positives
    constrained = [
        n
        for n, s in V.SUBTASKS.items()
        if n not in ABSENT and s.language_role == "target" and s.language != V.ANY_LANGUAGE
    ]
    assert any(pos for n in constrained for q in R.EXPECTED[n].values() for pos, _, _ in q.values())


def test_the_registry_counts_the_paper_subtasks():
    families = [s.family for s in V.SUBTASKS.values()]
    assert (families.count("t2c"), families.count("c2c"), families.count("c2t")) == (18, 3, 13)
    assert list(dict.fromkeys(families)) == ["t2c", "c2c", "c2t"]
    corpora = {n: s.corpus for n, s in V.SUBTASKS.items()}
    assert corpora["c2t_canonical_retro_go"] == V.CORPUS_TEXT_ABBREVIATED
    assert corpora["c2t_full_retro_go"] == corpora["c2t_match"] == V.CORPUS_TEXT
    assert {corpora[n] for n in corpora if n[:3] in ("t2c", "c2c")} == {V.CORPUS_CODE}


# --------------------------------------------------------------------------------------------
# The vocabulary's functions
# --------------------------------------------------------------------------------------------


def test_classify_subtask_returns_the_registry_entry():
    assert V.classify_subtask("t2c_search_go", "t2c") is V.SUBTASKS["t2c_search_go"]


def test_classify_subtask_keeps_an_unknown_name_as_its_own():
    s = V.classify_subtask("t2c_weird_variant_ruby", "t2c")
    assert (s.family, s.variant, s.language, s.corpus, s.known) == (
        "t2c",
        "weird_variant",
        "ruby",
        V.CORPUS_CODE,
        False,
    )
    # a c2t name outside the registry ranks the full text corpus
    s = V.classify_subtask("c2t_new", "c2t")
    assert (s.variant, s.language, s.corpus, s.known) == ("new", None, V.CORPUS_TEXT, False)


def test_classify_subtask_of_another_family_is_not_the_registry_entry():
    # a t2c name filed under c2c keeps the family of its file and is unknown
    s = V.classify_subtask("t2c_search_go", "c2c")
    assert (s.family, s.known, s.corpus) == ("c2c", False, V.CORPUS_CODE)


@pytest.mark.parametrize(
    ("subtask", "key"),
    [
        ("t2c_full_retro_any", "t2c"),
        ("C2T_match", "c2t"),
        ("c2c_cross_lang", "c2c"),
        ("qualcode_speed", "qualcode"),
        ("mc_2cond", None),
        ("t2cfull", None),
        ("", None),
    ],
)
def test_main_task_key(subtask, key):
    assert V.main_task_key(subtask) == key


def test_language_labels_cover_every_suffix_in_order():
    assert tuple(V.LANGUAGE_LABELS) == V.LANGUAGE_SUFFIXES == ("any", *V.LANGUAGE_NAMES)
    assert V.LANGUAGE_LABELS["cpp"] == "C++" and V.LANGUAGE_LABELS["any"] == "Any"
    assert V.LANGUAGE_NAMES == ("python", "java", "cpp", "ruby", "go")
