"""A small lexer for the five CoREB languages: opaque spans (strings, comments), then tokens.

Nothing here parses a language fully. Per language, :func:`lex` masks string, character and
regex literals, comments and (C++) preprocessor lines as opaque spans, and splits the code in
between into words, numbers and operators (longest operator first). The mutation operators
(:mod:`coreb_toolkit.releases.mutate`) work on this token stream, so that no mutation lands inside
a literal or a comment; :mod:`coreb_toolkit.releases.identifiers` reads declared names from it.

The per-language tables (:data:`OPERATORS`, :data:`KEYWORDS`, :data:`IDENTIFIER_PATTERNS` and the
span scanners) are keyed by :data:`coreb_toolkit.vocabulary.LANGUAGE_NAMES`; importing this module
checks that each of them has exactly one entry per vocabulary language
(:func:`check_language_table`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from coreb_toolkit.vocabulary import LANGUAGE_NAMES


def check_language_table(table: Mapping[str, object], name: str) -> None:
    """Raise unless ``table`` has an entry for exactly the vocabulary's languages.

    A per-language table (operators, keywords, drop-statement patterns, ...) keyed by anything
    else would silently lex or mutate a new language as some other one, or not at all.

    Raises:
        ValueError: ``table`` lacks a vocabulary language or holds a name outside it.
    """
    missing = [x for x in LANGUAGE_NAMES if x not in table]
    unknown = sorted(set(table) - set(LANGUAGE_NAMES))
    if missing or unknown:
        raise ValueError(
            f"{name} must have one entry per language of coreb_toolkit.vocabulary.LANGUAGE_NAMES "
            f"{LANGUAGE_NAMES}; missing {missing}, unknown {unknown}: add (or rename) the entries "
            f"in {name}"
        )


OPERATORS: dict[str, tuple[str, ...]] = {
    "python": ("**=", "//=", ">>=", "<<=", "**", "//", "->", ":=", "==", "!=", "<=", ">=", "<<",
               ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="),
    "cpp": (">>=", "<<=", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
            "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="),
    "java": (">>>=", ">>=", "<<=", ">>>", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=",
             "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="),
    "go": ("<<=", ">>=", "&^=", "...", ":=", "<-", "++", "--", "<<", ">>", "&^", "<=", ">=",
           "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="),
    "ruby": ("**=", "<<=", ">>=", "&&=", "||=", "<=>", "===", "...", "**", "=~", "!~", "..",
             "::", "->", "=>", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=",
             "/=", "%=", "&=", "|=", "^=", "&."),
}  # fmt: skip
"""Per language, its multi-character operators (any other character is a one-character one)."""

_NUMBER = (
    r"(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?|\.\d[\d_]*"
    r"(?:[eE][+-]?\d+)?)[A-Za-z]*"
)
_IDENTIFIER = r"[A-Za-z_]\w*"
IDENTIFIER_PATTERNS: dict[str, str] = {
    "python": _IDENTIFIER,
    "java": _IDENTIFIER,
    "cpp": _IDENTIFIER,
    # Ruby method names may end in ? or ! (empty?, sort!), instance/global variables start with
    # @ or $.
    "ruby": r"(?:@@?|\$)?[A-Za-z_]\w*(?:[?!](?![=~]))?",
    "go": _IDENTIFIER,
}
"""Per language, the regular expression of a word (an identifier or a keyword)."""


def _token_pattern(language: str) -> re.Pattern[str]:
    ops = sorted(OPERATORS[language], key=len, reverse=True)
    return re.compile(
        r"(?P<space>\s+)|(?P<num>"
        + _NUMBER
        + r")|(?P<word>"
        + IDENTIFIER_PATTERNS[language]
        + r")|(?P<op>"
        + "|".join(re.escape(o) for o in ops)
        + r"|.)",
        re.S,
    )


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


KEYWORDS: dict[str, frozenset[str]] = {
    "python": _words(
        "and as assert async await break class continue def del elif else except finally for "
        "from global if import in is lambda nonlocal not or pass raise return try while with "
        "yield"
    ),
    "cpp": _words(
        "and break case co_return continue delete do else goto new not or return sizeof switch "
        "throw"
    ),
    "java": _words("assert break case continue do else instanceof new return throw"),
    "go": _words("break case continue defer else go goto range return"),
    "ruby": _words(
        "and break case do else elsif if in next not or p print puts return then unless until "
        "when while yield"
    ),
}
"""Per language, the keywords that are never an operand or a declared name."""


@dataclass(frozen=True)
class Token:
    """One token: its kind, its text and where it lies in the source."""

    kind: str  # word, num, op, str (a string/char/regex literal, opaque)
    text: str
    start: int
    end: int
    nl_before: bool  # a newline separates it from the previous token


def _scan_quoted(src: str, i: int, quote: str, *, multiline: bool, interpolation: bool) -> int:
    """End (exclusive) of the literal whose opening quote ``quote`` ends just before ``i``."""
    n = len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if src.startswith(quote, i):
            return i + len(quote)
        if interpolation and src.startswith("#{", i):
            i = _skip_ruby_interpolation(src, i + 2)
            continue
        if c == "\n" and not multiline:
            return i  # unterminated on this line: stop, as the compiler would complain anyway
        i += 1
    return n


def _skip_ruby_interpolation(src: str, i: int) -> int:
    """Index after the ``}`` that closes a ``#{`` opened just before ``i``."""
    depth = 1
    n = len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            i = _scan_quoted(src, i + 1, c, multiline=False, interpolation=c == '"')
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


_PY_PREFIXES = {"r", "u", "f", "b", "br", "rb", "fr", "rf"}


def _spans_python(src: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "#":
            j = src.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j, "comment"))
            i = j
        elif c in "\"'":
            start = i
            k = i
            while k > 0 and src[k - 1].isalpha():
                k -= 1
            if src[k:i].lower() in _PY_PREFIXES and not _word_char_before(src, k):
                start = k
            quote = src[i : i + 3] if src[i : i + 3] in ('"""', "'''") else c
            j = _scan_quoted(
                src, i + len(quote), quote, multiline=len(quote) == 3, interpolation=False
            )
            spans.append((start, j, "str"))
            i = j
        else:
            i += 1
    return spans


def _word_char_before(src: str, i: int) -> bool:
    return i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")


def _line_prefix_blank(src: str, i: int) -> bool:
    start = src.rfind("\n", 0, i) + 1
    return not src[start:i].strip()


def _spans_c_like(src: str, language: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if language == "cpp" and c == "#" and _line_prefix_blank(src, i):
            # A preprocessor line (with its backslash continuations) is never mutated.
            j = i
            while True:
                j = src.find("\n", j)
                if j < 0 or src[j - 1] != "\\":
                    break
                j += 1
            j = n if j < 0 else j
            spans.append((i, j, "comment"))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            spans.append((i, j, "comment"))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            spans.append((i, j, "comment"))
            i = j
        elif c == '"':
            raw = re.search(r"(?:u8|[uUL])?R$", src[max(0, i - 3) : i])
            start = i - len(raw.group()) if raw else i
            if language == "cpp" and raw and not _word_char_before(src, start):
                open_paren = src.find("(", i)
                delimiter = src[i + 1 : open_paren] if open_paren >= 0 else ""
                end = src.find(")" + delimiter + '"', i)
                j = n if open_paren < 0 or end < 0 else end + len(delimiter) + 2
                spans.append((start, j, "str"))
            elif language == "java" and src.startswith('"""', i):
                j = src.find('"""', i + 3)
                j = n if j < 0 else j + 3
                spans.append((i, j, "str"))
            else:
                j = _scan_quoted(src, i + 1, '"', multiline=False, interpolation=False)
                spans.append((i, j, "str"))
            i = j
        elif c == "'":
            k = i
            while k > 0 and (src[k - 1].isalnum() or src[k - 1] in "_'"):
                k -= 1
            if language == "cpp" and k < i and src[k].isdigit():
                i += 1  # a C++14 digit separator (1'000'000), not a character literal
                continue
            j = _scan_quoted(src, i + 1, "'", multiline=False, interpolation=False)
            spans.append((i, j, "str"))
            i = j
        elif c == "`" and language == "go":
            j = src.find("`", i + 1)
            j = n if j < 0 else j + 1
            spans.append((i, j, "str"))
            i = j
        else:
            i += 1
    return spans


_RUBY_OPERAND_KEYWORDS = KEYWORDS["ruby"] | {"return", "when", "if", "unless", "while", "until"}
_RUBY_HEREDOC = re.compile(r"<<([~-]?)([\"'`]?)([A-Za-z_]\w*)\2")
_RUBY_PERCENT = re.compile(r"%[qQwWiIrsx]?[^\w\s=]")
BRACKET_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _ruby_operand_expected(src: str, i: int, last_span_end: int) -> bool:
    """Whether a value (not an operator) may start at ``i``: decides ``/`` regex vs division,
    ``%w[..]`` vs modulo, ``?a`` vs ternary, ``<<HEREDOC`` vs append."""
    p = i - 1
    while p >= 0 and src[p] in " \t":
        p -= 1
    if p < 0 or src[p] == "\n":
        return True
    if p < last_span_end:
        return False  # just after a string or regex literal
    ch = src[p]
    if ch.isalnum() or ch in "_?!":
        k = p
        while k > 0 and (src[k - 1].isalnum() or src[k - 1] in "_@$"):
            k -= 1
        word = src[k : p + 1]
        if word in _RUBY_OPERAND_KEYWORDS:
            return True
        if word[0].isdigit():
            return False
        # `puts /x/`, `split %w[..]`: a command call's argument (space before, none after).
        return p < i - 1 and i + 1 < len(src) and not src[i + 1].isspace()
    return ch not in ")]}"


def _ruby_percent_end(src: str, i: int) -> int:
    """End (exclusive) of the ``%w[..]`` / ``%q(..)`` / ... literal that starts at ``i``."""
    n = len(src)
    m = _RUBY_PERCENT.match(src, i)
    if m is None:  # pragma: no cover - the caller matched it first
        raise ValueError(f"no Ruby percent literal at offset {i}")
    opener = src[m.end() - 1]
    closer = BRACKET_PAIRS.get(opener, opener)
    j, depth = m.end(), 1
    while j < n:
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == closer:
            depth -= 1
            if depth == 0:
                break
        elif src[j] == opener and closer != opener:
            depth += 1
        j += 1
    return min(n, j + 1)


def _ruby_regex_end(src: str, i: int) -> int:
    """End (exclusive) of the ``/regex/flags`` literal whose opening ``/`` is at ``i``."""
    n = len(src)
    j, in_class = i + 1, False
    while j < n:
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == "\n":
            break
        if src[j] == "[":
            in_class = True
        elif src[j] == "]":
            in_class = False
        elif src[j] == "/" and not in_class:
            j += 1
            while j < n and src[j] in "imxounse":
                j += 1
            break
        j += 1
    return min(n, j)


def _spans_ruby(src: str) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    i, n = 0, len(src)
    last_end = 0

    def add(start: int, end: int, kind: str) -> int:
        nonlocal last_end
        spans.append((start, end, kind))
        last_end = end
        return end

    while i < n:
        c = src[i]
        if (i == 0 or src[i - 1] == "\n") and src.startswith("=begin", i):
            m = re.compile(r"^=end\b[^\n]*", re.M).search(src, i)
            i = add(i, m.end() if m else n, "comment")
        elif c == "#":
            j = src.find("\n", i)
            i = add(i, n if j < 0 else j, "comment")
        elif c in "\"'`":
            j = _scan_quoted(src, i + 1, c, multiline=True, interpolation=c != "'")
            i = add(i, j, "str")
        elif c == "$" and i + 1 < n:
            i += 2  # $' $" $/ ... are global variables, not literals
        elif (
            c == "?"
            and i + 1 < n
            and _ruby_operand_expected(src, i, last_end)
            and not (
                src[i + 1].isspace()
                or (
                    i + 2 < n and (src[i + 2].isalnum() or src[i + 2] == "_") and src[i + 1] != "\\"
                )
            )
        ):
            i = add(i, min(n, i + (3 if src[i + 1] == "\\" else 2)), "str")  # ?a
        elif c == "%" and _RUBY_PERCENT.match(src, i) and _ruby_operand_expected(src, i, last_end):
            i = add(i, _ruby_percent_end(src, i), "str")
        elif c == "/" and _ruby_operand_expected(src, i, last_end):
            i = add(i, _ruby_regex_end(src, i), "str")
        elif (
            src.startswith("<<", i)
            and (m := _RUBY_HEREDOC.match(src, i))
            and (
                m.group(1)
                or m.group(2)
                or (m.group(3).isupper() and _ruby_operand_expected(src, i, last_end))
            )
        ):
            # Mask from the opener to the end of the terminator line (the rest of the opener's
            # line included: masking too much only forgoes mutation sites).
            ident = re.escape(m.group(3))
            indent = r"[ \t]*" if m.group(1) else ""
            term = re.compile(rf"^{indent}{ident}[ \t]*$", re.M).search(src, m.end())
            i = add(i, term.end() if term else n, "str")
        else:
            i += 1
    return spans


_SPAN_SCANNERS: dict[str, Callable[[str], list[tuple[int, int, str]]]] = {
    "python": _spans_python,
    "java": lambda src: _spans_c_like(src, "java"),
    "cpp": lambda src: _spans_c_like(src, "cpp"),
    "ruby": _spans_ruby,
    "go": lambda src: _spans_c_like(src, "go"),
}


@dataclass
class Lexed:
    """A lexed source: its tokens, the source with literals and comments masked, line starts."""

    src: str
    language: str
    tokens: list[Token]
    masked: str  # src with strings turned into "_" and comments into " " (newlines kept)
    line_starts: list[int]

    def line_of(self, pos: int) -> int:
        """0-based line of a character offset."""
        return bisect.bisect_right(self.line_starts, pos) - 1


def lex(src: str, language: str) -> Lexed:
    """The tokens of ``src`` in ``language`` (a name of the vocabulary), literals opaque.

    Raises:
        ValueError: ``language`` is not one of the vocabulary's languages.
    """
    if language not in _TOKEN_RE:
        raise ValueError(f"cannot lex {language!r}: language must be one of {LANGUAGE_NAMES}")
    spans = _SPAN_SCANNERS[language](src)
    pattern = _TOKEN_RE[language]
    tokens: list[Token] = []
    masked = list(src)
    newline = True

    def scan(a: int, b: int) -> None:
        nonlocal newline
        for m in pattern.finditer(src, a, b):
            kind = m.lastgroup
            assert kind is not None
            if kind == "space":
                newline = newline or "\n" in m.group()
                continue
            tokens.append(Token(kind, m.group(), m.start(), m.end(), newline))
            newline = False

    pos = 0
    for start, end, kind in spans:
        scan(pos, start)
        for k in range(start, end):
            if src[k] != "\n":
                masked[k] = "_" if kind == "str" else " "
        if kind == "str":
            tokens.append(Token("str", src[start:end], start, end, newline))
            newline = False
        else:
            newline = newline or "\n" in src[start:end]
        pos = end
    scan(pos, len(src))
    line_starts = [0] + [m.end() for m in re.finditer("\n", src)]
    return Lexed(src, language, tokens, "".join(masked), line_starts)


for _name, _table in (
    ("coreb_toolkit.releases.lexer.OPERATORS", OPERATORS),
    ("coreb_toolkit.releases.lexer.IDENTIFIER_PATTERNS", IDENTIFIER_PATTERNS),
    ("coreb_toolkit.releases.lexer.KEYWORDS", KEYWORDS),
    ("coreb_toolkit.releases.lexer._SPAN_SCANNERS", _SPAN_SCANNERS),
):
    check_language_table(_table, _name)
_TOKEN_RE = {language: _token_pattern(language) for language in LANGUAGE_NAMES}
