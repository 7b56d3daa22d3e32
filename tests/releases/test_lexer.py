"""The lexer of the mutation operators and the declared-name reader: keyed on the vocabulary."""

from __future__ import annotations

import pytest

from coreb_toolkit.releases import lexer
from coreb_toolkit.releases.lexer import check_language_table, lex
from coreb_toolkit.vocabulary import LANGUAGE_NAMES


@pytest.mark.parametrize(
    "table",
    [lexer.OPERATORS, lexer.KEYWORDS, lexer.IDENTIFIER_PATTERNS],
    ids=["operators", "keywords", "identifiers"],
)
def test_every_per_language_table_has_exactly_the_vocabulary_languages(table):
    # the private tables (span scanners, drop patterns, type keywords) are checked at import
    # by check_language_table, whose refusals are tested below
    assert sorted(table) == sorted(LANGUAGE_NAMES)


def test_a_table_missing_a_language_is_refused_with_its_name():
    partial = {name: () for name in LANGUAGE_NAMES if name != "go"}
    with pytest.raises(ValueError, match=r"OPS must have one entry .*missing \['go'\]"):
        check_language_table(partial, "OPS")


def test_a_table_with_a_language_outside_the_vocabulary_is_refused():
    table = {name: () for name in (*LANGUAGE_NAMES, "rust")}
    with pytest.raises(ValueError, match=r"unknown \['rust'\]: add \(or rename\) the entries in T"):
        check_language_table(table, "T")


def test_a_complete_table_passes():
    check_language_table({name: 1 for name in LANGUAGE_NAMES}, "T")


def test_lex_refuses_a_language_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"cannot lex 'rust': language must be one of"):
        lex("fn main() {}", "rust")


@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("python", 'x = "a < b"  # c < d\nif x < 1: pass\n'),
        ("java", 'String x = "a < b"; // c < d\nif (y < 1) {}\n'),
        ("cpp", '#include <vector>\nauto x = "a < b"; /* c < d */ if (y < 1) {}\n'),
        ("ruby", 'x = "a < #{b}" # c < d\nputs 1 if y < 1\n'),
        ("go", "x := `a < b` // c < d\nif y < 1 {}\n"),
    ],
)
def test_literals_and_comments_are_opaque_in_every_language(language, code):
    tokens = lex(code, language).tokens
    # the only "<" token is the comparison outside the literal, the comment and the #include
    assert [t.text for t in tokens if t.text == "<"] == ["<"]
    assert sum(t.kind == "str" for t in tokens) == 1
