"""The names a candidate's code declares, in the five languages."""

from __future__ import annotations

import pytest

from coreb_toolkit.releases.identifiers import (
    banned_query_words,
    declared_names,
    name_parts,
    normalise,
)

PYTHON = """
from typing import List


def has_close_elements(numbers: List[float], threshold: float, *rest, key=None, **kw) -> bool:
    def helper(x, y=lambda z: z):
        return x
    f = lambda q: q
    class Acc:
        def __init__(self, total):
            self.total = total
    return helper(numbers)
"""

JAVA = """
import java.util.*;
class Solution {
    public boolean hasCloseElements(List<Double> numbers, double threshold) throws IOException {
        Collections.sort(numbers);
        for (int i = 0; i < numbers.size(); i++) { if (ok(i)) { foo(i); } }
        return false;
    }
    private static Map<String, List<Integer>> group(final Map<String, Integer> m, int... rest) {
        return null;
    }
}
"""

CPP = """
#include <bits/stdc++.h>
using namespace std;
struct Node { int val; Node* next; Node(int v) : val(v), next(nullptr) {} };
bool has_close_elements(vector<float> numbers, float threshold = 0.5, const pair<int,int>& p){
    sort(numbers.begin(), numbers.end());
    auto cmp = [](int a, int b) { return a < b; };
    return false;
}
int Solution::count(int n) const { return n; }
"""

GO = """
package main
import "sort"
type Pair struct { a, b int }
func (p *Pair) Sum(scale int) (total int, err error) { return 0, nil }
func HasCloseElements(numbers []float64, threshold float64) bool {
    sort.Slice(numbers, func(i, j int) bool { return numbers[i] < numbers[j] })
    return false
}
func Apply[T any](xs []T, f func(T) T) []T { return xs }
"""

RUBY = """
module Util
  class Counter < Base
    def self.create(name, *args, &blk)
      args.each { |x| puts x }
    end
    def empty?
    end
    def add a, b = 1
    end
  end
end
"""


@pytest.mark.parametrize(
    ("code", "language", "expected"),
    [
        (PYTHON, "python", {"has_close_elements", "numbers", "threshold", "rest", "key", "kw",
                            "helper", "x", "y", "Acc", "total"}),
        (JAVA, "java", {"Solution", "hasCloseElements", "numbers", "threshold", "group", "m",
                        "rest"}),
        (CPP, "cpp", {"Node", "v", "has_close_elements", "numbers", "threshold", "p", "count",
                      "n"}),
        (GO, "go", {"Pair", "p", "Sum", "scale", "total", "err", "HasCloseElements", "numbers",
                    "threshold", "Apply", "xs", "f"}),
        (RUBY, "ruby", {"Util", "Counter", "create", "name", "args", "blk", "empty?", "add", "a",
                        "b"}),
    ],
)  # fmt: skip
def test_declared_names(code, language, expected):
    # locals (f, i, cmp), lambda / block / literal parameters (z, q, a, b of a lambda, i, j),
    # calls (sort, foo, helper's call) and members (val, next) are not declared names
    assert declared_names(code, language) == expected


def test_python_that_does_not_parse_is_read_from_its_tokens():
    assert declared_names("def broken(a, b):\n    return a +\n", "python") == {"broken", "a", "b"}


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="language must be one of"):
        declared_names("x", "rust")
    with pytest.raises(ValueError, match="code must be a string"):
        declared_names(None, "python")


def test_names_match_in_any_case_and_convention():
    assert normalise("has_close_elements") == normalise("HasCloseElements") == "hascloseelements"
    assert name_parts("hasCloseElements") == name_parts("has_close_elements") == [
        "has", "close", "elements",
    ]  # fmt: skip


def test_banned_query_words():
    python = "def mean_absolute_deviation(numbers):\n    mean = sum(numbers) / len(numbers)\n"
    java = "class S { double meanAbsoluteDeviation(List<Double> values) { return 0; } }"
    banned = banned_query_words([(python, "python"), (java, "java")], ["mean_absolute_deviation"])
    # every declared name of every language, whole
    assert {"meanabsolutedeviation", "numbers", "values", "s"} <= banned
    # a word of a name that the code also uses on its own ("mean", a variable), not the others
    assert "mean" in banned
    assert "absolute" not in banned and "deviation" not in banned
    assert "sum" not in banned  # called, but no part of a declared name
