"""Judging stdout against the expected output of a stdin/stdout test.

Token-wise, as competitive-programming judges (AtCoder, CodeNet) compare: both outputs are split
on whitespace, so trailing spaces, trailing newlines and line-ending style never matter, while
the tokens and their order do. A token of the expected output that is a decimal number with a
fractional part or an exponent (``0.5``, ``1e-9``) accepts any number within an absolute or
relative error of ``FLOAT_TOLERANCE`` (1e-6, AtCoder's usual bound); integer tokens and words
must match exactly.
"""

from __future__ import annotations

import math
import re

FLOAT_TOLERANCE = 1e-6
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)$")


def _float_close(expected: str, actual: str, tolerance: float) -> bool:
    if not _FLOAT.match(expected):
        return False
    try:
        a = float(actual)
    except ValueError:
        return False
    e = float(expected)
    return math.isfinite(a) and math.isclose(a, e, rel_tol=tolerance, abs_tol=tolerance)


def outputs_match(expected: str, actual: str, tolerance: float = FLOAT_TOLERANCE) -> bool:
    """Whether ``actual`` stdout matches ``expected`` token by token (floats within tolerance)."""
    want, got = expected.split(), actual.split()
    if len(want) != len(got):
        return False
    return all(w == g or _float_close(w, g, tolerance) for w, g in zip(want, got, strict=True))
