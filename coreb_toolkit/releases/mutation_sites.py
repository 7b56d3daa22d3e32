"""Where a solution can be mutated: the sites of every mutation operator, per language.

:func:`mutation_sites` lists, for a lexed solution (:func:`coreb_toolkit.releases.lexer.lex`),
every edit the operators of :mod:`coreb_toolkit.releases.mutate` could make (the table of its
module docstring): token edits (a flipped comparison, a literal +/- 1, ...), swapped if/else
bodies and dropped statement lines. :func:`coreb_toolkit.releases.mutate.mutants` ranks and
checks them. Per-language data here (the drop-statement patterns) is keyed by the vocabulary's
language names and checked at import.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass

from coreb_toolkit.releases.lexer import (
    BRACKET_PAIRS,
    KEYWORDS,
    Lexed,
    Token,
    check_language_table,
)

_C_LIKE = ("cpp", "java", "go")

# Lines whose only effect is output: dropping them changes nothing a unit test sees.
_PRINT_CALL = re.compile(r"^(?:print|puts|p|pp|printf|System\.out\.\w+|fmt\.\w*Print\w*)\b")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


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
class Site:
    """One possible edit: ``src[start:end]`` becomes ``replacement``."""

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


def _is_operand(tok: Token, language: str) -> bool:
    if tok.kind in ("num", "str"):
        return True
    if tok.kind == "word":
        return tok.text not in KEYWORDS[language]
    return tok.text in (")", "]") or (language == "ruby" and tok.text == "}")


def _is_text_literal(tok: Token, language: str) -> bool:
    """A string literal (in C++, Java and Go a '...' literal is a character: arithmetic on it,
    such as ``c - 'a'``, is legitimate)."""
    return tok.kind == "str" and (language in ("python", "ruby") or not tok.text.startswith("'"))


def _generic_brackets(tokens: list[Token], language: str) -> set[int]:
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


def _matching(tokens: list[Token], i: int) -> int | None:
    """Index of the bracket that closes the one at ``i``."""
    opener = tokens[i].text
    closer = BRACKET_PAIRS[opener]
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


def _python_loop_ins(tokens: list[Token]) -> set[int]:
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


_FLIPS = {
    "boundary": {"<": "<=", "<=": "<", ">": ">=", ">=": ">"},
    "comparison": {"==": "!=", "!=": "=="},
    "logical": {"&&": "||", "||": "&&"},
    "arithmetic": {"+=": "-=", "-=": "+="},
}


@dataclass
class _TokenSites:
    """The token edits of one lexed solution, collected in scan order."""

    lexed: Lexed
    rng: random.Random
    sites: list[Site]
    generics: set[int]
    loop_ins: set[int]

    def add(
        self,
        operator: str,
        first: int,
        last: int,
        new: tuple[str, ...],
        start: int | None = None,
        end: int | None = None,
        replacement: str | None = None,
    ) -> None:
        """Tokens ``[first, last)`` become ``new`` (the text ``src[start:end]`` becomes
        ``replacement``, by default the tokens' own span and ``new`` joined by spaces)."""
        tokens, src = self.lexed.tokens, self.lexed.src
        a = tokens[first].start if start is None else start
        b = tokens[last - 1].end if end is None else end
        text = " ".join(new) if replacement is None else replacement
        self.sites.append(
            Site(
                operator, a, b, text, self.lexed.line_of(a) + 1, src[a:b], text, (first, last, new)
            )
        )


def _token_sites(lexed: Lexed, rng: random.Random) -> list[Site]:
    language, tokens = lexed.language, lexed.tokens
    found = _TokenSites(
        lexed,
        rng,
        [],
        _generic_brackets(tokens, language),
        _python_loop_ins(tokens) if language == "python" else set(),
    )
    for i, tok in enumerate(tokens):
        if tok.kind == "op":
            _operator_site(found, i)
        elif tok.kind == "word":
            _word_site(found, i)
        elif tok.kind == "num":
            _number_site(found, i)
    return found.sites


def _operator_site(found: _TokenSites, i: int) -> None:
    """boundary, comparison, logical, arithmetic, negation (``!``) and Ruby range sites."""
    language, tokens = found.lexed.language, found.lexed.tokens
    site = found.add
    tok = tokens[i]
    prev = tokens[i - 1] if i > 0 else None
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    text = tok.text
    if (
        text in _FLIPS["boundary"]
        and i not in found.generics
        and not (language == "ruby" and i >= 2 and tokens[i - 2].text == "class")
    ):
        site("boundary", i, i + 1, (_FLIPS["boundary"][text],))
    elif text in _FLIPS["comparison"]:
        site("comparison", i, i + 1, (_FLIPS["comparison"][text],))
    elif text in _FLIPS["logical"]:
        site("logical", i, i + 1, (_FLIPS["logical"][text],))
    elif text in _FLIPS["arithmetic"] and not (nxt and _is_text_literal(nxt, language)):
        site("arithmetic", i, i + 1, (_FLIPS["arithmetic"][text],))
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


def _word_site(found: _TokenSites, i: int) -> None:
    """boolean, logical (``and``/``or``), min_max, negation, Python ``in``/``is`` and range."""
    lexed = found.lexed
    language, tokens = lexed.language, lexed.tokens
    site = found.add
    prev = tokens[i - 1] if i > 0 else None
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    text = tokens[i].text
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
        and i not in found.loop_ins
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
        _range_site(lexed, i, found.rng, found.sites)


def _number_site(found: _TokenSites, i: int) -> None:
    """off_by_one: a decimal integer literal +/- 1 (``0``, and ``1`` after a unary minus, up)."""
    language, tokens = found.lexed.language, found.lexed.tokens
    prev = tokens[i - 1] if i > 0 else None
    m = re.fullmatch(r"(0|[1-9][\d_]*)([lLuU]*)", tokens[i].text)
    if m is None or _fixed_literal(tokens, i, language):
        return
    value = int(m.group(1).replace("_", ""))
    unary_minus = (
        prev is not None
        and prev.text == "-"
        and (i < 2 or not _is_operand(tokens[i - 2], language))
    )
    step = 1 if value == 0 or (value == 1 and unary_minus) else found.rng.choice((1, -1))
    found.add("off_by_one", i, i + 1, (f"{value + step}{m.group(2)}",))


def _fixed_literal(tokens: list[Token], i: int, language: str) -> bool:
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


def _range_site(lexed: Lexed, i: int, rng: random.Random, sites: list[Site]) -> None:
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
    sites.append(Site("range_bound", a, b, new, line, lexed.src[a:b], new))


def _line_info(lexed: Lexed) -> tuple[list[str], list[bool]]:
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


def _swap_sites_indented(lexed: Lexed) -> list[Site]:
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
    sites: list[Site] = []
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
        sites.append(Site("swap_branches", start, end, new, i + 1, before, new))
    return sites


def _swap_sites_braced(lexed: Lexed) -> list[Site]:
    """``if (c) { A } else { B }`` -> ``if (c) { B } else { A }`` (C++, Java, Go)."""
    tokens, src = lexed.tokens, lexed.src
    sites: list[Site] = []
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
            Site("swap_branches", a0, b1, new, lexed.line_of(tok.start) + 1, src[a0:b1], new)
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
check_language_table(_DROP_PATTERNS, "coreb_toolkit.releases.mutation_sites._DROP_PATTERNS")
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


def _drop_sites(lexed: Lexed) -> list[Site]:
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
    sites: list[Site] = []
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
        sites.append(Site("drop_statement", start, end, "", k + 1, lines[k].strip(), ""))
    return sites


def mutation_sites(lexed: Lexed, rng: random.Random) -> list[Site]:
    """Every mutation site of ``lexed``: token edits, if/else swaps, dropped statements.

    ``rng`` picks the direction of each +/- 1; the order is the operators' scan order.
    """
    sites = _token_sites(lexed, rng)
    if lexed.language in ("python", "ruby"):
        sites += _swap_sites_indented(lexed)
    else:
        sites += _swap_sites_braced(lexed)
    return sites + _drop_sites(lexed)
