"""The names a problem's code declares: what an offline search query must not contain.

A search query that names the function (``has close elements`` for ``has_close_elements``) is
string matching, not retrieval: every candidate of the problem is written under the name and the
parameters the problem fixed. :func:`declared_names` reads them from a candidate's code -- its
function and method names, their parameter names, and its class / struct / interface / enum /
module / type names -- and :func:`banned_query_words` turns the names of all candidates of a
problem into the words its search query may not use.

Python is read with :mod:`ast` (falling back to the tokens when the code does not parse); the
other languages from the token stream of :mod:`coreb_toolkit.releases.lexer` (strings and
comments masked), by the shape of a declaration: ``def name(...)``, ``func (recv) Name(...)``,
``type name(...) {``, ``class Name``. Local variables, lambda and block parameters are not
declared names: nothing outside the function sees them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from coreb_toolkit.releases.lexer import KEYWORDS, Token, check_language_table, lex
from coreb_toolkit.vocabulary import LANGUAGE_NAMES

#: Python code longer than this is read from its tokens, not parsed: the host does not parse an
#: unbounded candidate (a source's code is data, not ours).
MAX_PARSED_CHARS = 200_000

_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "python": frozenset({"class"}),
    "ruby": frozenset({"class", "module"}),
    "java": frozenset({"class", "interface", "enum", "record"}),
    "cpp": frozenset({"class", "struct", "enum", "union"}),
    "go": frozenset({"type"}),
}
check_language_table(_TYPE_KEYWORDS, "coreb_toolkit.releases.identifiers._TYPE_KEYWORDS")
# Words that take a parenthesised operand and a block in C++ / Java: never a function name.
_NOT_A_FUNCTION = frozenset((
    "if", "for", "while", "switch", "catch", "return", "sizeof", "new", "delete", "throw",
    "else", "do", "case", "synchronized", "try", "assert", "typeid", "decltype", "alignof",
    "static_assert", "using", "operator", "foreach",
))  # fmt: skip
# Tokens that may sit between a C++ / Java parameter list and the body.
_QUALIFIERS = frozenset(("const", "override", "noexcept", "final", "volatile", "mutable"))
_RECEIVERS = frozenset({"self", "cls"})
_OPEN = {"(": ")", "[": "]", "{": "}"}


def normalise(name: str) -> str:
    """``has_close_elements``, ``hasCloseElements``, ``HasCloseElements?``: ``hascloseelements``."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def name_parts(name: str) -> list[str]:
    """The words of an identifier: ``hasCloseElements`` / ``has_close_elements`` -> has, close,
    elements (lowercased, empty parts dropped)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [p for p in (normalise(w) for w in re.split(r"[_\s]+", spaced)) if p]


def _python_names(code: str) -> frozenset[str] | None:
    if len(code) > MAX_PARSED_CHARS:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    try:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if not (node.name.startswith("__") and node.name.endswith("__")):
                    names.add(node.name)
                a = node.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
                names.update(p.arg for p in params if p is not None)
    except RecursionError:
        return None
    return frozenset(names - _RECEIVERS)


def _matching(tokens: list[Token], i: int) -> int:
    """Index of the bracket closing the one at ``i`` (``len(tokens)`` when it never closes)."""
    close, depth = _OPEN[tokens[i].text], 0
    for j in range(i, len(tokens)):
        text = tokens[j].text
        if tokens[j].kind != "op":
            continue
        if text == tokens[i].text:
            depth += 1
        elif text == close:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


def _split_top(tokens: list[Token], angle: bool) -> list[list[Token]]:
    """``tokens`` split at the commas outside brackets (``<>`` too when ``angle``)."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.kind != "op":
            pass
        elif t.text in ("(", "[", "{") or (angle and t.text == "<"):
            depth += 1
        elif t.text in (")", "]", "}") or (angle and t.text in (">", ">>")):
            depth -= len(t.text) if t.text.startswith(">") else 1
        elif t.text == "," and depth <= 0:
            parts.append([])
            continue
        parts[-1].append(t)
    return [p for p in parts if p]


def _script_params(tokens: list[Token]) -> set[str]:
    """Python / Ruby parameters: the words a ``(``, ``,``, ``*``, ``**`` or ``&`` leads."""
    out = set()
    for part in _split_top(tokens, angle=False):
        words = [t for t in part if t.kind == "word"]
        lead = [t for t in part[: part.index(words[0])]] if words else []
        if words and all(t.text in ("*", "**", "&") for t in lead):
            out.add(words[0].text)
    return out


def _typed_params(tokens: list[Token]) -> set[str]:
    """C++ / Java parameters: the last word of ``type name`` (before a default or ``[]``)."""
    out = set()
    for part in _split_top(tokens, angle=True):
        cut = next((k for k, t in enumerate(part) if t.text == "="), len(part))
        part = [t for t in part[:cut] if t.text not in ("[", "]")]
        if len(part) >= 2 and part[-1].kind == "word":
            out.add(part[-1].text)
    return out


def _go_params(tokens: list[Token]) -> set[str]:
    """Go parameters: ``a, b int, s string`` names a, b, s; ``(int, string)`` names none."""
    parts = _split_top(tokens, angle=False)
    if not any(len(p) >= 2 for p in parts):
        return set()
    return {p[0].text for p in parts if p[0].kind == "word"}


def _inside(tokens: list[Token], i: int) -> tuple[list[Token], int]:
    """The tokens inside the bracket at ``i`` and the index after its closing bracket."""
    j = _matching(tokens, i)
    return tokens[i + 1 : j], j + 1


def _is(tokens: list[Token], i: int, text: str) -> bool:
    return i < len(tokens) and tokens[i].kind == "op" and tokens[i].text == text


def _word(tokens: list[Token], i: int) -> bool:
    return i < len(tokens) and tokens[i].kind == "word"


def _declared_from_tokens(code: str, language: str) -> set[str]:
    tokens = lex(code, language).tokens
    names: set[str] = set()
    for i, t in enumerate(tokens):
        if t.kind != "word":
            continue
        if t.text in _TYPE_KEYWORDS[language] and _word(tokens, i + 1):
            j = i + 2 if tokens[i + 1].text in ("class", "struct") else i + 1  # enum class X
            if _word(tokens, j):
                names.add(tokens[j].text)
        if language in ("python", "ruby") and t.text == "def":
            j = i + 1
            if _word(tokens, j) and _is(tokens, j + 1, "."):  # Ruby: def self.name
                j += 2
            if not _word(tokens, j):
                continue
            names.add(tokens[j].text)
            if _is(tokens, j + 1, "("):
                names |= _script_params(_inside(tokens, j + 1)[0])
            elif language == "ruby":  # def name a, b: the rest of the line
                k = j + 1
                while k < len(tokens) and not tokens[k].nl_before:
                    k += 1
                names |= _script_params(tokens[j + 1 : k])
        elif language == "go" and t.text == "func":
            j, receiver = i + 1, set()
            if _is(tokens, j, "("):
                inner, after = _inside(tokens, j)
                if not (_word(tokens, after) and _is(tokens, after + 1, "(")):
                    continue  # a function literal: its parameters are local
                receiver, j = _go_params(inner), after
            if not _word(tokens, j):
                continue
            names |= receiver | {tokens[j].text}
            j += 1
            if _is(tokens, j, "["):  # type parameters
                j = _inside(tokens, j)[1]
            if _is(tokens, j, "("):
                inner, j = _inside(tokens, j)
                names |= _go_params(inner)
                if _is(tokens, j, "("):  # named results
                    names |= _go_params(_inside(tokens, j)[0])
        elif language in ("java", "cpp") and _is(tokens, i + 1, "("):
            if t.text in _NOT_A_FUNCTION or t.text in KEYWORDS[language]:
                continue
            prev = tokens[i - 1].text if i > 0 else ""
            if prev in (".", "->", "new", "=", "return", ","):
                continue  # a call, or a member initialiser of a constructor (", next(n) {}")
            if prev == ":" and i > 1 and tokens[i - 2].text == ")":
                continue  # Node(int v) : val(v) {}

            inner, k = _inside(tokens, i + 1)
            while k < len(tokens) and tokens[k].text in _QUALIFIERS:
                k += 1
            if _word(tokens, k) and tokens[k].text == "throws":  # Java: throws A, B
                k += 1
                while k < len(tokens) and (tokens[k].kind == "word" or tokens[k].text in ",."):
                    k += 1
            if _is(tokens, k, "{") or (language == "cpp" and _is(tokens, k, ":")):
                names.add(t.text)
                names |= _typed_params(inner)
    return names


def declared_names(code: str, language: str) -> frozenset[str]:
    """Function / method, parameter and class-like names that ``code`` declares.

    Args:
        code: one candidate's code (its corpus form).
        language: python, java, cpp, ruby or go.

    Raises:
        ValueError: an unknown language or a non-string ``code``.
    """
    if language not in LANGUAGE_NAMES:
        raise ValueError(
            f"declared_names: language must be one of {LANGUAGE_NAMES}, got {language!r}"
        )
    if not isinstance(code, str):
        raise ValueError(f"declared_names: code must be a string, got {type(code).__name__}")
    if language == "python":
        names = _python_names(code)
        if names is not None:
            return names
    return frozenset(n for n in _declared_from_tokens(code, language) if normalise(n))


def code_identifiers(code: str, language: str) -> frozenset[str]:
    """Every identifier ``code`` uses outside strings and comments (keywords excluded)."""
    if language not in LANGUAGE_NAMES:
        raise ValueError(
            f"code_identifiers: language must be one of {LANGUAGE_NAMES}, got {language!r}"
        )
    words = (t.text for t in lex(code, language).tokens if t.kind == "word")
    return frozenset(w for w in words if w not in KEYWORDS[language])


def banned_query_words(
    codes: Iterable[tuple[str, str]], extra_names: Iterable[str] = ()
) -> frozenset[str]:
    """The (normalised) words a search query of a problem with these candidates may not use.

    A query word is banned when it is, in any case and naming convention,

    1. a declared name (:func:`declared_names`) of any of ``codes`` (``(code, language)``
       pairs: every candidate of the problem, in every language) or one of ``extra_names`` (the
       problem's entry point): ``numbers``, ``hascloseelements``;
    2. a word of a multi-word declared name that the code also uses as an identifier on its own
       (``sort`` of ``sort_array`` when a candidate calls ``Arrays.sort``; ``mean`` of
       ``mean_absolute_deviation`` when a candidate has a variable ``mean``): such a word meets
       the code verbatim, not only through the name.

    Other words of a name stay: ``absolute`` and ``deviation`` are how the statement says what
    to compute, and a query without the words of its task would say nothing.
    """
    declared: set[str] = set(extra_names)
    used: set[str] = set()
    for code, language in codes:
        declared |= declared_names(code, language)
        used |= {normalise(w) for w in code_identifiers(code, language)}
    banned = {normalise(n) for n in declared}
    for name in declared:
        parts = name_parts(name)
        if len(parts) > 1:
            banned |= {p for p in parts if p in used}
    return frozenset(b for b in banned if b)
