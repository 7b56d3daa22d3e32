"""Code hard negatives without an LLM: small, plausible edits ("mutants") of a correct solution.

A CoREB hard negative is code for the *same* problem that looks right and is wrong. An LLM can
write such code, but mutation testing gets it for free from a verified-correct solution: flip
``<`` to ``<=``, shift an integer literal by one, swap ``and`` for ``or``, drop one statement.
The release pipeline executes every mutant in the sandbox and keeps those that compile, run and
fail their tests (:func:`select_failing`): a mutant that still passes may be equivalent to the
original, and one that does not compile or only times out is not a plausible solution.

Nothing here parses the five languages fully. A small per-language lexer masks string, character
and regex literals, comments and (C++) preprocessor lines, so that no mutation ever lands inside
them; the mutation operators work on the token stream that is left (and, for statements and
if/else blocks, on whole lines). Each mutant is checked to re-tokenise to exactly the intended
tokens (``a+-b`` must not become ``a--b``), and Python mutants must still parse.

Operators, most plausible first (the order :func:`mutants` returns them in):

====  ===============  ===========================================================================
tier  operator         edit
====  ===============  ===========================================================================
0     boundary         ``<`` <-> ``<=``, ``>`` <-> ``>=`` (never a C++/Java template bracket, a
                       Ruby ``class A < B``, ``<<``, ``->``, ``<-`` or ``=>``)
0     range_bound      Python ``range(.., stop)`` -> ``stop +/- 1``; Ruby ``a..b`` <-> ``a...b``
0     off_by_one       a decimal integer literal +/- 1 (``0`` only goes up)
1     comparison       ``==`` <-> ``!=``; Python ``in`` <-> ``not in``, ``is`` <-> ``is not``
1     logical          ``&&`` <-> ``||``; ``and`` <-> ``or`` (Python, Ruby, C++ alternative tokens)
2     arithmetic       binary ``+`` <-> ``-`` and ``*`` <-> ``/`` (not next to a string literal),
                       ``+=`` <-> ``-=``, Python ``//`` -> ``/``
2     boolean          ``True`` <-> ``False`` (Python), ``true`` <-> ``false`` (the others)
2     min_max          a call of ``min`` <-> ``max`` (``Math.max``, ``.min_by``, ``max_element``)
3     negation         drop a unary ``!`` / ``not``; Ruby ``unless`` -> ``if``
3     swap_branches    swap the bodies of ``if .. else`` (braced in C++/Java/Go, by indentation in
                       Python and Ruby)
4     drop_statement   delete one simple statement line: ``x += ..``, ``i++``, a call statement,
                       ``break``/``continue``/``next``, a re-assignment of an existing variable
====  ===============  ===========================================================================
"""

from __future__ import annotations

import ast
import bisect
import random
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from coreb_toolkit.sources.base import LANGUAGES, SourceCandidate

#: Verdicts that make a mutant a hard negative: it ran and produced a wrong answer or crashed.
FAILING_VERDICTS = frozenset({"wrong_answer", "runtime_error"})

_C_LIKE = ("cpp", "java", "go")


@dataclass(frozen=True)
class Mutation:
    """What one mutant changed (kept in the mutant's metadata).

    Attributes:
        operator: the mutation operator (``boundary``, ``off_by_one``, ... see the module doc).
        line: 1-based line within the solution where the change starts.
        before: the changed snippet as it was (a token, a range stop, a line, an if/else).
        after: what replaced it (``""`` for a dropped statement).
    """

    operator: str
    line: int
    before: str
    after: str


# ---------------------------------------------------------------------------------------------
# Lexing: opaque spans (strings, comments), then tokens of the code in between.
# ---------------------------------------------------------------------------------------------

_OPERATORS: dict[str, tuple[str, ...]] = {
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

_NUMBER = (
    r"(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?|\.\d[\d_]*"
    r"(?:[eE][+-]?\d+)?)[A-Za-z]*"
)
_WORD = {
    # Ruby method names may end in ? or ! (empty?, sort!), instance/global variables start with
    # @ or $.
    "ruby": r"(?:@@?|\$)?[A-Za-z_]\w*(?:[?!](?![=~]))?",
}


def _token_pattern(language: str) -> re.Pattern[str]:
    ops = sorted(_OPERATORS[language], key=len, reverse=True)
    return re.compile(
        r"(?P<space>\s+)|(?P<num>"
        + _NUMBER
        + r")|(?P<word>"
        + _WORD.get(language, r"[A-Za-z_]\w*")
        + r")|(?P<op>"
        + "|".join(re.escape(o) for o in ops)
        + r"|.)",
        re.S,
    )


_TOKEN_RE = {language: _token_pattern(language) for language in LANGUAGES}


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_KEYWORDS: dict[str, frozenset[str]] = {
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

# Lines whose only effect is output: dropping them changes nothing a unit test sees.
_PRINT_CALL = re.compile(r"^(?:print|puts|p|pp|printf|System\.out\.\w+|fmt\.\w*Print\w*)\b")


@dataclass(frozen=True)
class _Token:
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


_RUBY_OPERAND_KEYWORDS = _KEYWORDS["ruby"] | {"return", "when", "if", "unless", "while", "until"}
_RUBY_HEREDOC = re.compile(r"<<([~-]?)([\"'`]?)([A-Za-z_]\w*)\2")
_RUBY_PERCENT = re.compile(r"%[qQwWiIrsx]?[^\w\s=]")
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}


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
            m = _RUBY_PERCENT.match(src, i)
            assert m is not None
            opener = src[m.end() - 1]
            closer = _PAIRS.get(opener, opener)
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
            i = add(i, min(n, j + 1), "str")
        elif c == "/" and _ruby_operand_expected(src, i, last_end):
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
            i = add(i, min(n, j), "str")
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


def _opaque_spans(src: str, language: str) -> list[tuple[int, int, str]]:
    if language == "python":
        return _spans_python(src)
    if language == "ruby":
        return _spans_ruby(src)
    return _spans_c_like(src, language)


@dataclass
class _Lexed:
    src: str
    language: str
    tokens: list[_Token]
    masked: str  # src with strings turned into "_" and comments into " " (newlines kept)
    line_starts: list[int]

    def line_of(self, pos: int) -> int:
        """0-based line of a character offset."""
        return bisect.bisect_right(self.line_starts, pos) - 1


def _lex(src: str, language: str) -> _Lexed:
    spans = _opaque_spans(src, language)
    pattern = _TOKEN_RE[language]
    tokens: list[_Token] = []
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
            tokens.append(_Token(kind, m.group(), m.start(), m.end(), newline))
            newline = False

    pos = 0
    for start, end, kind in spans:
        scan(pos, start)
        for k in range(start, end):
            if src[k] != "\n":
                masked[k] = "_" if kind == "str" else " "
        if kind == "str":
            tokens.append(_Token("str", src[start:end], start, end, newline))
            newline = False
        else:
            newline = newline or "\n" in src[start:end]
        pos = end
    scan(pos, len(src))
    line_starts = [0] + [m.end() for m in re.finditer("\n", src)]
    return _Lexed(src, language, tokens, "".join(masked), line_starts)


# ---------------------------------------------------------------------------------------------
# Mutation sites.
# ---------------------------------------------------------------------------------------------

#: Plausibility tier of each operator (lower first): mutants() returns mutants in this order. A
#: literal +/- 1 (often an initialiser) ranks just behind a boundary.
OPERATOR_TIERS: dict[str, float] = {
    "boundary": 0,
    "range_bound": 0,
    "off_by_one": 0.5,
    "comparison": 1,
    "logical": 1,
    "arithmetic": 2,
    "boolean": 2,
    "min_max": 2,
    "negation": 3,
    "swap_branches": 3,
    "drop_statement": 4,
}


@dataclass(frozen=True)
class _Site:
    operator: str
    start: int
    end: int
    replacement: str
    line: int  # 1-based
    before: str
    after: str
    # For token edits: tokens [first, last) become ``new_tokens``; the mutant must re-lex so.
    token_edit: tuple[int, int, tuple[str, ...]] | None = None

    @property
    def priority(self) -> float:
        return OPERATOR_TIERS[self.operator]

    def apply(self, src: str) -> str:
        return src[: self.start] + self.replacement + src[self.end :]


def _is_operand(tok: _Token, language: str) -> bool:
    if tok.kind in ("num", "str"):
        return True
    if tok.kind == "word":
        return tok.text not in _KEYWORDS[language]
    return tok.text in (")", "]") or (language == "ruby" and tok.text == "}")


def _is_text_literal(tok: _Token, language: str) -> bool:
    """A string literal (in C++, Java and Go a '...' literal is a character: arithmetic on it,
    such as ``c - 'a'``, is legitimate)."""
    return tok.kind == "str" and (language in ("python", "ruby") or not tok.text.startswith("'"))


def _generic_brackets(tokens: list[_Token], language: str) -> set[int]:
    """Indices of ``<``/``>`` tokens that delimit C++ template or Java generic arguments."""
    marked: set[int] = set()
    if language not in ("cpp", "java"):
        return marked
    cpp = language == "cpp"
    closes = {">": 1, ">>": 2, ">>>": 3}
    allowed = {",", "::", ".", "?", "*", "&", "[", "]"}
    for i, tok in enumerate(tokens):
        if tok.text != "<" or i in marked or i == 0:
            continue
        prev = tokens[i - 1]
        if not (prev.kind == "word" or (language == "java" and prev.text == ".")):
            continue
        depth, angles = 1, [i]
        for j in range(i + 1, len(tokens)):
            t = tokens[j]
            if t.text == "<":
                depth += 1
                angles.append(j)
            elif t.text in closes:
                depth -= closes[t.text]
                angles.append(j)
                if depth <= 0:
                    if depth == 0:
                        marked.update(angles)
                    break
            elif not (t.kind == "word" or t.text in allowed or (t.kind == "num" and cpp)):
                break
    return marked


def _matching(tokens: list[_Token], i: int) -> int | None:
    """Index of the bracket that closes the one at ``i``."""
    opener = tokens[i].text
    closer = _PAIRS[opener]
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].kind != "op":
            continue
        if tokens[j].text == opener:
            depth += 1
        elif tokens[j].text == closer:
            depth -= 1
            if depth == 0:
                return j
    return None


def _python_loop_ins(tokens: list[_Token]) -> set[int]:
    """Indices of the ``in`` of ``for x in ...`` (loops and comprehensions): not comparisons."""
    loop_ins: set[int] = set()
    pending: Counter[int] = Counter()
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.kind == "op" and tok.text in "([{":
            depth += 1
        elif tok.kind == "op" and tok.text in ")]}":
            depth = max(0, depth - 1)
        elif tok.kind == "word" and tok.text == "for":
            pending[depth] += 1
        elif tok.kind == "word" and tok.text == "in" and pending[depth]:
            pending[depth] -= 1
            loop_ins.add(i)
    return loop_ins


def _token_sites(lexed: _Lexed, rng: random.Random) -> list[_Site]:
    src, language, tokens = lexed.src, lexed.language, lexed.tokens
    generics = _generic_brackets(tokens, language)
    loop_ins = _python_loop_ins(tokens) if language == "python" else set()
    sites: list[_Site] = []

    def site(
        operator: str,
        first: int,
        last: int,
        new: tuple[str, ...],
        start: int | None = None,
        end: int | None = None,
        replacement: str | None = None,
    ) -> None:
        a = tokens[first].start if start is None else start
        b = tokens[last - 1].end if end is None else end
        text = " ".join(new) if replacement is None else replacement
        sites.append(
            _Site(operator, a, b, text, lexed.line_of(a) + 1, src[a:b], text, (first, last, new))
        )

    flips = {
        "boundary": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
        "comparison": {"==": "!=", "!=": "=="},
        "logical": {"&&": "||", "||": "&&"},
        "arithmetic": {"+=": "-=", "-=": "+="},
    }
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else None
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        text = tok.text
        if tok.kind == "op":
            if (
                text in flips["boundary"]
                and i not in generics
                and not (language == "ruby" and i >= 2 and tokens[i - 2].text == "class")
            ):
                site("boundary", i, i + 1, (flips["boundary"][text],))
            elif text in flips["comparison"]:
                site("comparison", i, i + 1, (flips["comparison"][text],))
            elif text in flips["logical"]:
                site("logical", i, i + 1, (flips["logical"][text],))
            elif text in flips["arithmetic"] and not (nxt and _is_text_literal(nxt, language)):
                site("arithmetic", i, i + 1, (flips["arithmetic"][text],))
            elif (
                text in ("+", "-")
                and prev is not None
                and nxt is not None
                and _is_operand(prev, language)
                and (language in ("cpp", "java") or not tok.nl_before)
                and not _is_text_literal(prev, language)
                and not _is_text_literal(nxt, language)
            ):
                site("arithmetic", i, i + 1, ("-" if text == "+" else "+",))
            elif (
                text in ("*", "/")
                and prev is not None
                and nxt is not None
                and _is_operand(prev, language)
                and (_is_operand(nxt, language) or nxt.text in ("(", "["))
                and not _is_text_literal(prev, language)
                and not _is_text_literal(nxt, language)
            ):
                site("arithmetic", i, i + 1, ("/" if text == "*" else "*",))
            elif text == "//" and language == "python":
                site("arithmetic", i, i + 1, ("/",))
            elif text == "!" and nxt is not None and language != "python":
                site("negation", i, i + 1, (), end=nxt.start, replacement="")
            elif text in ("..", "...") and language == "ruby":
                site("range_bound", i, i + 1, (".." if text == "..." else "...",))
        elif tok.kind == "word":
            if text in ("True", "False") and language == "python":
                site("boolean", i, i + 1, ("False" if text == "True" else "True",))
            elif text in ("true", "false") and language != "python":
                site("boolean", i, i + 1, ("false" if text == "true" else "true",))
            elif text in ("and", "or") and language in ("python", "ruby", "cpp"):
                site("logical", i, i + 1, ("or" if text == "and" else "and",))
            elif text in _MIN_MAX and (
                (nxt is not None and nxt.text == "(")
                or (prev is not None and prev.text in (".", "::", "&."))
            ):
                site("min_max", i, i + 1, (_MIN_MAX[text],))
            elif text == "unless" and language == "ruby":
                site("negation", i, i + 1, ("if",))
            elif text == "not" and language in ("python", "ruby", "cpp") and nxt is not None:
                if language == "python" and nxt.text == "in":
                    # not in -> in
                    site("comparison", i, i + 2, ("in",), end=nxt.end, replacement="in")
                elif not (language == "python" and prev is not None and prev.text == "is"):
                    site("negation", i, i + 1, (), end=nxt.start, replacement="")
            elif (
                text == "in"
                and language == "python"
                and i not in loop_ins
                and not (prev is not None and prev.text == "not")
            ):
                site("comparison", i, i + 1, ("not", "in"))
            elif text == "is" and language == "python" and nxt is not None:
                if nxt.text == "not":
                    site("comparison", i, i + 2, ("is",), end=nxt.end, replacement="is")
                else:
                    site("comparison", i, i + 1, ("is", "not"))
            elif (
                text == "range"
                and language == "python"
                and nxt is not None
                and (nxt.text == "(" and not (prev is not None and prev.text == "."))
            ):
                _range_site(lexed, i, rng, sites)
        elif tok.kind == "num":
            m = re.fullmatch(r"(0|[1-9][\d_]*)([lLuU]*)", text)
            if m is None:
                continue
            if _fixed_literal(tokens, i, language):
                continue
            value = int(m.group(1).replace("_", ""))
            unary_minus = (
                prev is not None
                and prev.text == "-"
                and (i < 2 or not _is_operand(tokens[i - 2], language))
            )
            step = 1 if value == 0 or (value == 1 and unary_minus) else rng.choice((1, -1))
            site("off_by_one", i, i + 1, (f"{value + step}{m.group(2)}",))
    return sites


def _fixed_literal(tokens: list[_Token], i: int, language: str) -> bool:
    """A literal whose +/- 1 mostly fails to compile: a ``case 3:`` / ``case 3 ->`` label or a
    map key (``{1: ..}``; duplicates are compile errors in Go, C++ and Java), a Go array length
    (``[2]int``)."""
    prev = tokens[i - 1].text if i > 0 else ""
    nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
    after = tokens[i + 2] if i + 2 < len(tokens) else None
    if prev == "case" or (nxt == ":" and prev in ("{", ",")):
        return True
    return (
        language == "go"
        and prev == "["
        and nxt == "]"
        and after is not None
        and (after.kind == "word" or after.text in ("[", "*"))
    )


# Called (``max(..)``, ``Math.max``, ``.min_by``), never a variable that happens to be named so.
_MIN_MAX = {
    "min": "max",
    "max": "min",
    "Min": "Max",
    "Max": "Min",
    "min_by": "max_by",
    "max_by": "min_by",
    "min_element": "max_element",
    "max_element": "min_element",
}

_PY_LOW_PRECEDENCE = {
    "if",
    "else",
    "lambda",
    "for",
    "and",
    "or",
    "not",
    "in",
    "is",
    "<",
    ">",
    "<=",
    ">=",
    "==",
    "!=",
    "|",
    "&",
    "^",
    "<<",
    ">>",
    ":=",
}


def _range_site(lexed: _Lexed, i: int, rng: random.Random, sites: list[_Site]) -> None:
    """Python ``range(stop)`` / ``range(start, stop[, step])``: ``stop`` -> ``stop +/- 1``."""
    tokens = lexed.tokens
    close = _matching(tokens, i + 1)
    if close is None or close == i + 2:
        return
    args: list[list[int]] = [[]]
    depth = 0
    for j in range(i + 2, close):
        t = tokens[j]
        if t.kind == "op" and t.text in "([{":
            depth += 1
        elif t.kind == "op" and t.text in ")]}":
            depth -= 1
        if depth == 0 and t.text == ",":
            args.append([])
        else:
            args[-1].append(j)
    args = [a for a in args if a]
    if not 1 <= len(args) <= 3:
        return
    stop = args[0] if len(args) == 1 else args[1]
    if len(stop) == 1 and tokens[stop[0]].kind == "num":
        return  # a literal stop is already an off_by_one site
    a, b = tokens[stop[0]].start, tokens[stop[-1]].end
    text = lexed.src[a:b]
    if any(tokens[j].text in _PY_LOW_PRECEDENCE for j in stop):
        text = f"({text})"
    new = f"{text} {rng.choice(('+', '-'))} 1"
    line = lexed.line_of(a) + 1
    sites.append(_Site("range_bound", a, b, new, line, lexed.src[a:b], new))


def _line_info(lexed: _Lexed) -> tuple[list[str], list[bool]]:
    """Masked lines (without newline) and whether each starts a logical line: it has code, and
    starts outside any string and outside any open bracket."""
    masked_lines = lexed.masked.split("\n")
    depth_at = [0] * len(masked_lines)
    in_literal = [False] * len(masked_lines)
    depth = 0
    line = 0
    for tok in lexed.tokens:
        tok_line = lexed.line_of(tok.start)
        while line < tok_line:
            line += 1
            depth_at[line] = depth
        if tok.kind == "op" and tok.text in "([{":
            depth += 1
        elif tok.kind == "op" and tok.text in ")]}":
            depth = max(0, depth - 1)
        elif tok.kind == "str":
            for k in range(tok_line + 1, lexed.line_of(tok.end - 1) + 1):
                in_literal[k] = True
    while line + 1 < len(masked_lines):
        line += 1
        depth_at[line] = depth
    brace_language = lexed.language in _C_LIKE
    starts = []
    for k, text in enumerate(masked_lines):
        continued = k > 0 and masked_lines[k - 1].rstrip().endswith("\\")
        open_bracket = depth_at[k] > 0 and not brace_language
        starts.append(
            bool(text.strip()) and not in_literal[k] and not open_bracket and not continued
        )
    return masked_lines, starts


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]


def _block(masked: list[str], starts: list[bool], first: int, indent: str) -> int:
    """Index of the first logical line at or after ``first`` indented no deeper than
    ``indent`` (the end of the block that starts at ``first``)."""
    k = first
    while k < len(masked) and not (starts[k] and len(_indent(masked[k])) <= len(indent)):
        k += 1
    return k


def _last_code_line(masked: list[str], first: int, stop: int) -> int | None:
    last = None
    for k in range(first, stop):
        if masked[k].strip():
            last = k
    return last


def _swap_sites_indented(lexed: _Lexed) -> list[_Site]:
    """``if c: A else: B`` -> ``if c: B else: A`` (Python) and ``if c; A; else; B; end``
    (Ruby), for blocks laid out one statement per line."""
    masked, starts = _line_info(lexed)
    lines = lexed.src.split("\n")
    if lexed.language == "python":
        header = re.compile(r"^([ \t]*)(?:if|elif)\b.*:\s*$")
        else_line = re.compile(r"^([ \t]*)else\s*:\s*$")
    else:
        header = re.compile(r"^([ \t]*)(?:if|unless|elsif)\b(?!.*\bthen\s*\S)")
        else_line = re.compile(r"^([ \t]*)else\s*$")
    sites: list[_Site] = []
    for i, text in enumerate(masked):
        m = header.match(text)
        if not (starts[i] and m):
            continue
        indent = m.group(1)
        j = _block(masked, starts, i + 1, indent)
        if j >= len(masked) or not (e := else_line.match(masked[j])) or e.group(1) != indent:
            continue
        k = _block(masked, starts, j + 1, indent)
        if lexed.language == "ruby" and not (
            k < len(masked) and masked[k].strip() == "end" and _indent(masked[k]) == indent
        ):
            continue
        last_a = _last_code_line(masked, i + 1, j)
        last_b = _last_code_line(masked, j + 1, k)
        if last_a is None or last_b is None:
            continue
        body_a, body_b = lines[i + 1 : last_a + 1], lines[j + 1 : last_b + 1]
        first_a = next(t for t in body_a if t.strip())
        first_b = next(t for t in body_b if t.strip())
        if _indent(first_a) != _indent(first_b) or len(_indent(first_a)) <= len(indent):
            continue
        if [t.strip() for t in body_a] == [t.strip() for t in body_b]:
            continue
        start = lexed.line_starts[i + 1]
        end = lexed.line_starts[last_b] + len(lines[last_b])
        between = lines[last_a + 1 : j + 1]
        new = "\n".join(body_b + between + body_a)
        before = lexed.src[start:end]
        sites.append(_Site("swap_branches", start, end, new, i + 1, before, new))
    return sites


def _swap_sites_braced(lexed: _Lexed) -> list[_Site]:
    """``if (c) { A } else { B }`` -> ``if (c) { B } else { A }`` (C++, Java, Go)."""
    tokens, src = lexed.tokens, lexed.src
    sites: list[_Site] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "word" or tok.text != "if":
            continue
        if lexed.language == "go":
            open_a, depth = None, 0
            for j in range(i + 1, len(tokens)):
                t = tokens[j].text
                if t in ("(", "["):
                    depth += 1
                elif t in (")", "]"):
                    depth -= 1
                elif t == "{" and depth == 0:
                    open_a = j
                    break
        else:
            if i + 1 >= len(tokens) or tokens[i + 1].text != "(":
                continue
            close = _matching(tokens, i + 1)
            open_a = close + 1 if close is not None else None
        if open_a is None or open_a >= len(tokens) or tokens[open_a].text != "{":
            continue
        close_a = _matching(tokens, open_a)
        if close_a is None or close_a + 2 >= len(tokens):
            continue
        if tokens[close_a + 1].text != "else" or tokens[close_a + 2].text != "{":
            continue
        open_b = close_a + 2
        close_b = _matching(tokens, open_b)
        if close_b is None:
            continue
        a0, a1 = tokens[open_a].end, tokens[close_a].start
        b0, b1 = tokens[open_b].end, tokens[close_b].start
        body_a, body_b = src[a0:a1], src[b0:b1]
        if body_a.split() == body_b.split():
            continue
        new = body_b + src[a1:b0] + body_a
        sites.append(
            _Site("swap_branches", a0, b1, new, lexed.line_of(tok.start) + 1, src[a0:b1], new)
        )
    return sites


_LVALUE = r"[A-Za-z_@][\w.]*(?:\[[^\]]*\]|->\w+|\.\w+)*"
_AUGMENTED = rf"{_LVALUE}\s*(?:\+|-|\*|/|//|%|\*\*|&|\||\^|<<|>>|&\^|\|\||&&)=(?!=)"
# A line that goes on on the next one (Python, Ruby, Go end a statement at a newline).
_CONTINUES = re.compile(r"(?:\\|,|\(|\[|(?<!\+)\+|(?<!-)-|\*|/|&|\||=|\b(?:and|or|do))\s*$")
_CALL = r"[A-Za-z_][\w.:]*(?:->\w+)*\s*\(.*\)"
_DROP_PATTERNS = {
    "python": re.compile(rf"(?:break|continue|{_AUGMENTED}.*|{_CALL})"),
    "ruby": re.compile(rf"(?:break|next|{_AUGMENTED}.*|{_CALL}|{_LVALUE}\s*<<\s*\S.*)"),
    "go": re.compile(
        rf"(?:break|continue|{_LVALUE}(?:\+\+|--)|{_AUGMENTED}.*|{_CALL}"
        rf"|{_LVALUE}(?:\s*,\s*{_LVALUE})*\s*=(?!=).*)"
    ),
    "cpp": re.compile(
        rf"(?:break|continue|(?:\+\+|--){_LVALUE}|{_LVALUE}(?:\+\+|--)"
        rf"|{_AUGMENTED}.*|{_CALL}|{_LVALUE}\s*=(?!=).*)\s*;"
    ),
}
_DROP_PATTERNS["java"] = _DROP_PATTERNS["cpp"]
# Python and Ruby create a variable by assigning it: dropping that line is a NameError, not a
# plausible bug; re-assignments of a variable seen before are fair game.
_REASSIGNMENT = re.compile(rf"({_LVALUE}(?:\s*,\s*{_LVALUE})*)\s*=(?![=~>])")
_GO_PREDECLARED = _words(
    "append bool break byte cap close complex continue copy delete false float32 float64 imag "
    "int int32 int64 len make new nil panic print println real recover rune string true uint "
    "uint8 uint32 uint64"
)
_NOT_A_STATEMENT = {
    "if",
    "for",
    "while",
    "return",
    "switch",
    "throw",
    "sizeof",
    "new",
    "delete",
    "elif",
    "else",
    "case",
    "yield",
    "assert",
    "def",
    "class",
    "until",
    "unless",
    "when",
    "defer",
    "go",
    "goto",
    "do",
    "raise",
    "print",
    "puts",
}


def _drop_sites(lexed: _Lexed) -> list[_Site]:
    """Deleting one simple statement line: an update, a call, a ``break``, a re-assignment."""
    language, src = lexed.language, lexed.src
    masked, starts = _line_info(lexed)
    lines = src.split("\n")
    words_before: set[str] = set()
    line_words: dict[int, set[str]] = {}
    for tok in lexed.tokens:
        if tok.kind == "word":
            line_words.setdefault(lexed.line_of(tok.start), set()).add(tok.text)
    # Go refuses an unused variable or import: a line that holds one of the last uses of a
    # name (it occurs fewer than three times in all) is not dropped.
    word_count = Counter(t.text for t in lexed.tokens if t.kind == "word")
    code_lines = [k for k, s in enumerate(starts) if s]
    sites: list[_Site] = []
    for pos, k in enumerate(code_lines):
        text = masked[k].strip()
        seen = set(words_before)
        words_before |= line_words.get(k, set())
        nxt = code_lines[pos + 1] if pos + 1 < len(code_lines) else None
        # One line, one statement: the next logical line starts right after it.
        if nxt is not None and any(masked[t].strip() for t in range(k + 1, nxt)):
            continue
        if any(c in text for c in "{};" if not (c == ";" and language in ("cpp", "java"))):
            continue
        if language in ("cpp", "java") and text.count(";") != 1:
            continue
        if language in ("python", "ruby", "go") and _CONTINUES.search(text):
            continue
        first_word = re.match(r"[A-Za-z_]\w*", text)
        if first_word and first_word.group() in _NOT_A_STATEMENT:
            continue
        if _PRINT_CALL.match(text) or (language == "ruby" and "|" in text):
            continue
        if nxt is not None and len(_indent(masked[nxt])) > len(_indent(masked[k])):
            continue  # it opens a block
        if language in ("cpp", "java"):
            prev = next((masked[t].rstrip() for t in range(k - 1, -1, -1) if masked[t].strip()), "")
            if prev and not prev.endswith((";", "{", "}", ":")):
                continue  # maybe the body of a brace-less if/for/while
        if not _DROP_PATTERNS[language].fullmatch(text):
            if language not in ("python", "ruby"):
                continue
            m = _REASSIGNMENT.match(text)
            if m is None:
                continue
            targets = [t.strip() for t in m.group(1).split(",")]
            plain = [t for t in targets if re.fullmatch(r"[A-Za-z_@]\w*", t)]
            rhs = text[m.end() :]
            if not all(t in seen or re.search(rf"(?<![\w@]){re.escape(t)}\b", rhs) for t in plain):
                continue
        if language == "go" and any(
            word_count[w] < 3 for w in line_words.get(k, set()) - _GO_PREDECLARED
        ):
            continue
        start = lexed.line_starts[k]
        end = lexed.line_starts[k + 1] if k + 1 < len(lexed.line_starts) else len(src)
        sites.append(_Site("drop_statement", start, end, "", k + 1, lines[k].strip(), ""))
    return sites


def _sites(lexed: _Lexed, rng: random.Random) -> list[_Site]:
    sites = _token_sites(lexed, rng)
    if lexed.language in ("python", "ruby"):
        sites += _swap_sites_indented(lexed)
    else:
        sites += _swap_sites_braced(lexed)
    return sites + _drop_sites(lexed)


def _python_parser(solution: str) -> str | None:
    """How to check that a Python mutant still parses: as a module, or as a function body (a
    HumanEval solution is an indented body); None when even the original does not parse."""
    for mode in ("module", "body"):
        try:
            ast.parse(solution if mode == "module" else "def _mutant():\n" + solution)
            return mode
        except (SyntaxError, ValueError):
            continue
    return None


def _parses(text: str, mode: str) -> bool:
    try:
        ast.parse(text if mode == "module" else "def _mutant():\n" + text)
    except (SyntaxError, ValueError):
        return False
    return True


def _relexes_as_intended(lexed: _Lexed, site: _Site, text: str) -> bool:
    """The mutant's tokens are the original's with the edit applied: ``a+-b`` -> ``a--b`` (a
    decrement) or ``x<=-1`` -> ``x<-1`` (a Go channel receive) are refused."""
    if site.token_edit is None:
        return True
    first, last, new = site.token_edit
    old = [t.text for t in lexed.tokens]
    got = [t.text for t in _lex(text, lexed.language).tokens]
    return got == old[:first] + list(new) + old[last:]


# Spread over the solution: each earlier pick on the same line costs this many tiers, each
# earlier pick of the same operator one more.
_SAME_LINE_PENALTY = 2
_SAME_OPERATOR_PENALTY = 1


def mutants(
    solution: str, language: str, *, seed: int, limit: int = 8
) -> list[tuple[str, Mutation]]:
    """Up to ``limit`` distinct mutants of ``solution``, most plausible operators first.

    Deterministic for a ``seed`` (it picks among equally ranked sites and the direction of each
    +/- 1). Sites are spread over the solution: a line or an operator that already has a mutant
    ranks lower, so eight mutants are not eight variants of one comparison. Every mutant differs
    from ``solution``; none is changed inside a string, character or regex literal or a comment.

    Raises:
        ValueError: unknown language, a negative limit or a non-string solution.
    """
    if language not in LANGUAGES:
        raise ValueError(f"cannot mutate {language!r}: language must be one of {LANGUAGES}")
    if not isinstance(solution, str):
        raise ValueError(f"solution must be a string, got {type(solution).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int, got {limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if limit == 0 or not solution.strip():
        return []
    rng = random.Random(seed)
    lexed = _lex(solution, language)
    sites = _sites(lexed, rng)
    order = {id(s): rng.random() for s in sites}
    parser = _python_parser(solution) if language == "python" else None
    chosen: list[tuple[float, int, str, Mutation]] = []
    seen = {solution}
    used_lines: Counter[int] = Counter()
    used_operators: Counter[str] = Counter()
    remaining = list(sites)
    while remaining and len(chosen) < limit:
        best = min(
            remaining,
            key=lambda s: (
                s.priority
                + _SAME_LINE_PENALTY * used_lines[s.line]
                + _SAME_OPERATOR_PENALTY * used_operators[s.operator],
                order[id(s)],
            ),
        )
        remaining.remove(best)
        text = best.apply(solution)
        if text in seen or not _relexes_as_intended(lexed, best, text):
            continue
        if parser is not None and not _parses(text, parser):
            continue
        seen.add(text)
        used_lines[best.line] += 1
        used_operators[best.operator] += 1
        mutation = Mutation(best.operator, best.line, best.before, best.after)
        chosen.append((best.priority, len(chosen), text, mutation))
    chosen.sort(key=lambda c: (c[0], c[1]))
    return [(text, mutation) for _, _, text, mutation in chosen]


# ---------------------------------------------------------------------------------------------
# Candidates.
# ---------------------------------------------------------------------------------------------


def _replace_last(text: str, old: str, new: str, where: str, candidate_id: str) -> str:
    at = text.rfind(old)
    if at < 0:
        raise ValueError(f"candidate {candidate_id!r}: its solution is not part of its {where}")
    return text[:at] + new + text[at + len(old) :]


def mutant_candidates(
    candidate: SourceCandidate, *, seed: int, limit: int = 8
) -> list[SourceCandidate]:
    """Mutants of a (verified-correct) candidate, ready for the sandbox.

    The solution is replaced at its last occurrence in ``code`` and in ``execution["code"]``
    (sources append it after the prompt, which may quote similar code). Each mutant is
    ``f"{candidate_id}/mutant-{k}"`` in :func:`mutants`' order, same problem, language and
    model, ``label=None`` (the sandbox decides), ``meta`` plus ``mutation`` and ``mutant_of``;
    its execution id is the original's plus ``__mutant-{k}``.

    Raises:
        ValueError: the candidate has no solution or execution, or its solution cannot be found
            in its code or its execution code.
    """
    cid = candidate.candidate_id
    if candidate.solution is None:
        raise ValueError(f"candidate {cid!r} has no solution to mutate (solution is None)")
    if not candidate.solution.strip():
        raise ValueError(f"candidate {cid!r} has an empty solution: nothing to mutate")
    if candidate.execution is None or not isinstance(candidate.execution.get("code"), str):
        raise ValueError(f"candidate {cid!r} has no execution code: its mutants could not run")
    solution = candidate.solution
    # Fail before mutating if either location is missing.
    _replace_last(candidate.code, solution, solution, "code", cid)
    _replace_last(candidate.execution["code"], solution, solution, "execution code", cid)
    exec_id = candidate.execution.get("id", cid)
    out: list[SourceCandidate] = []
    for k, (text, mutation) in enumerate(
        mutants(solution, candidate.language, seed=seed, limit=limit)
    ):
        record = asdict(mutation)
        execution = {
            **candidate.execution,
            "id": f"{exec_id}__mutant-{k}",
            "code": _replace_last(candidate.execution["code"], solution, text, "", cid),
        }
        if isinstance(execution.get("meta"), Mapping):
            execution["meta"] = {**execution["meta"], "mutant_of": exec_id, "mutation": record}
            if "variant" in execution["meta"]:
                execution["meta"]["variant"] = f"mutant-{k}"
        out.append(
            SourceCandidate(
                candidate_id=f"{cid}/mutant-{k}",
                problem_id=candidate.problem_id,
                language=candidate.language,
                model=candidate.model,
                code=_replace_last(candidate.code, solution, text, "", cid),
                execution=execution,
                solution=text,
                label=None,
                label_source="sandbox",
                meta={**candidate.meta, "mutation": record, "mutant_of": cid},
            )
        )
    return out


def is_failing(result: Mapping[str, Any]) -> bool:
    """Whether a sandbox result makes its mutant a hard negative.

    The rule: no test is a ``compile_error`` (code that does not build is not a plausible
    solution) and at least one test is a ``wrong_answer`` or ``runtime_error`` (it ran and was
    caught). A mutant that only times out or runs out of memory is not kept: such a verdict may
    depend on the machine, and an infinite loop is not a convincing near-miss.
    """
    verdicts = list(result.get("verdicts") or [])
    return (
        bool(verdicts)
        and "compile_error" not in verdicts
        and any(v in FAILING_VERDICTS for v in verdicts)
    )


def select_failing(
    mutants: Sequence[SourceCandidate],
    results_by_id: Mapping[str, Mapping[str, Any]],
    per_candidate: int = 1,
) -> list[SourceCandidate]:
    """The hard negatives among executed mutants: up to ``per_candidate`` per original.

    ``mutants`` are :func:`mutant_candidates`' output (for any number of originals, grouped by
    ``meta["mutant_of"]``); ``results_by_id`` maps a sandbox result's ``id`` (the mutant's
    ``execution["id"]``; its ``candidate_id`` is accepted too) to the result. A mutant is kept
    when :func:`is_failing` says so, the first ones in ``mutants`` order winning (the most
    plausible operators come first). A mutant without a result is skipped, so a pipeline may
    stop executing an original's mutants once enough have failed.

    Raises:
        ValueError: ``per_candidate`` < 1, or a candidate that is not a mutant.
    """
    if isinstance(per_candidate, bool) or not isinstance(per_candidate, int) or per_candidate < 1:
        raise ValueError(f"per_candidate must be a positive int, got {per_candidate!r}")
    kept: list[SourceCandidate] = []
    count: Counter[str] = Counter()
    for mutant in mutants:
        parent = mutant.meta.get("mutant_of")
        if parent is None or mutant.execution is None:
            raise ValueError(
                f"candidate {mutant.candidate_id!r} is not a mutant (no meta['mutant_of'] or no "
                "execution): select_failing takes mutant_candidates' output"
            )
        result = results_by_id.get(mutant.execution.get("id", ""))
        if result is None:
            result = results_by_id.get(mutant.candidate_id)
        if result is None or count[parent] >= per_candidate:
            continue
        if is_failing(result):
            kept.append(mutant)
            count[parent] += 1
    return kept
