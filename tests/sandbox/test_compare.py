"""Output judging: token-wise stdout, float tolerance, functional JSON results."""

from __future__ import annotations

import pytest

from coreb_toolkit.sandbox.compare import outputs_match
from coreb_toolkit.sandbox.harness import json_results_match


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("3\n", "3", True),  # trailing newline
        ("1 2 3\n", "1  2\t3   \r\n", True),  # whitespace and line endings between tokens
        ("1 2\n3", "1\n2 3\n", True),  # token-wise: line structure does not matter
        ("3", "4", False),
        ("3", "3 3", False),
        ("", "", True),
        ("", "x", False),
        ("Yes", "yes", False),  # words are exact
        ("10", "10.0", False),  # integers are exact
        ("0.5", "0.5000001", True),  # floats within 1e-6
        ("0.5", "0.50001", False),
        ("1e9", "1000000000.5", True),  # relative tolerance for large values
        ("1.000000", "1", True),
        ("2.5", "nan", False),
        ("2.5", "abc", False),
    ],
)
def test_outputs_match(expected, actual, same):
    assert outputs_match(expected, actual) is same


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        ("[1, 2]", "[1,2]", True),
        ("3", "3.0000000001", True),
        ("3", "4", False),
        ('{"a": [true]}', '{"a": [true]}', True),
        ("true", "1", False),  # bool is not int
        ("[1, 2]", "[2, 1]", False),
        ("1", "not json", False),
    ],
)
def test_json_results_match(expected, actual, same):
    assert json_results_match(expected, actual) is same
