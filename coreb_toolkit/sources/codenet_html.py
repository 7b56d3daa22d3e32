"""CodeNet's HTML problem statements (AIZU, AtCoder) as clean readable text.

:func:`html_to_text` keeps the English part of bilingual statements, turns blocks, lists,
tables and ``<pre>`` into plain text and MathJax / LaTeX into readable symbols;
:func:`statement_language` tells an English statement from a Japanese-only one.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import lxml.etree
import lxml.html

from coreb_toolkit.sources.codenet_records import unify_newlines

logger = logging.getLogger(__name__)


def decode_html(raw: bytes, where: str) -> str:
    """HTML file bytes as text: UTF-8, else UTF-8 with the undecodable bytes replaced (logged)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        logger.warning("%s: not UTF-8, undecodable bytes replaced", where)
        return raw.decode("utf-8", errors="replace")


_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f]")
_LATIN = re.compile(r"[A-Za-z]")


def statement_language(text: str) -> str:
    """``"ja"`` when Japanese script is a tenth or more of the letters, else ``"en"``."""
    japanese = len(_JAPANESE.findall(text))
    return "ja" if japanese and japanese >= 0.1 * (japanese + len(_LATIN.findall(text))) else "en"


# -- HTML statements to text ---------------------------------------------------------------------

_SKIP_TAGS = frozenset(
    {"script", "style", "head", "title", "meta", "link", "noscript", "iframe", "object", "img"}
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS = frozenset({"ul", "ol", "dir", "menu"})
_BLOCK_TAGS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "html",
        "li",
        "main",
        "nav",
        "p",
        "section",
        "summary",
        "td",
        "th",
        "tr",
    }
)
_BR = "\x00"  # a line break inside a paragraph, until whitespace is normalised
_LANG_EN = (
    './/*[contains(concat(" ", normalize-space(@class), " "), " lang-en ")]'
    '[not(ancestor::*[contains(concat(" ", normalize-space(@class), " "), " lang-en ")])]'
)


def html_to_text(html: str) -> str:
    """Convert a CodeNet HTML statement (AIZU or AtCoder) to clean readable text.

    * Where the HTML has ``<span class="lang-en">`` (AtCoder's Japanese + English statements),
      only the English part is kept.
    * Paragraphs, list items, table rows and headings become blocks separated by a blank line;
      headings stand on their own line; list items start with ``"- "`` (``"1. "`` in ``<ol>``),
      one per line; table cells are joined by ``" | "``, one row per line.
    * ``<pre>`` content is kept verbatim (line breaks and spaces), less blank lines around it.
    * Math is made readable: MathJax/LaTeX ``\\(...\\)``, ``\\[...\\]``, ``$...$`` and
      ``$$...$$`` lose their delimiters, and inside them and in ``<var>`` common macros become
      Unicode (``\\leq`` -> ``≤``, ``\\times`` -> ``×``, ``\\frac{a}{b}`` -> ``a/b``);
      ``x<sub>i</sub>`` and ``10<sup>5</sup>`` become ``x_i`` and ``10^5``.
    * Entities are decoded, scripts, styles, comments and images dropped, no tags remain, and
      whitespace outside ``<pre>`` is collapsed.
    """
    # Control characters go (some statements hold a stray backspace); \x00-\x05 also serve
    # as markers below.
    html = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f]", "", html)
    # lxml rejects str input that declares an encoding.
    html = re.sub(r"^\s*<\?xml[^>]*>", "", html)
    if not html.strip():
        return ""
    try:
        document = lxml.html.document_fromstring(html)
    except lxml.etree.ParserError:  # nothing but comments or whitespace
        return ""
    roots = document.xpath(_LANG_EN) or [document]
    blocks = [block for root in roots for block in _blocks(root)]
    return "\n\n".join(blocks)


def _tag(element: Any) -> str | None:
    """Lower-case tag name; ``None`` for comments and processing instructions."""
    return element.tag.lower() if isinstance(element.tag, str) else None


def _blocks(element: Any) -> list[str]:
    """The text blocks of an element's content."""
    blocks: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        text = _clean_paragraph("".join(paragraph))
        paragraph.clear()
        if text:
            blocks.append(text)

    if element.text:
        paragraph.append(element.text)
    for child in element:
        tag = _tag(child)
        if tag is None or tag in _SKIP_TAGS:
            pass
        elif tag == "br":
            paragraph.append(_BR)
        elif tag == "hr":
            flush()
        elif tag == "pre":
            flush()
            text = _pre_text(child)
            if text:
                blocks.append(text)
        elif tag in _HEADINGS:
            flush()
            blocks.extend(_blocks(child))
        elif tag in _LISTS:
            flush()
            text = _list_text(child)
            if text:
                blocks.append(text)
        elif tag == "table":
            flush()
            blocks.extend(_table_blocks(child))
        elif tag == "dl":
            flush()
            text = _definitions_text(child)
            if text:
                blocks.append(text)
        elif tag in _BLOCK_TAGS or _holds_blocks(child):
            flush()
            blocks.extend(_blocks(child))
        else:
            paragraph.append(_inline(child))
        if child.tail:
            paragraph.append(child.tail)
    flush()
    return blocks


def _holds_blocks(element: Any) -> bool:
    """Whether an inline element (e.g. a ``<span>`` or ``<font>``) wraps block content."""
    block_like = _BLOCK_TAGS | _HEADINGS | _LISTS | {"pre", "table", "dl", "hr"}
    return any(_tag(e) in block_like for e in element.iterdescendants())


def _inline(element: Any, *, verbatim: bool = False) -> str:
    """Text of an inline element, with ``<br>``, ``<sub>``, ``<sup>`` and ``<var>`` rendered."""
    tag = _tag(element)
    if tag is None or tag in _SKIP_TAGS:
        return ""
    if tag == "br":
        return "\n" if verbatim else _BR
    parts = [element.text or ""]
    for child in element:
        parts.append(_inline(child, verbatim=verbatim))
        parts.append(child.tail or "")
    text = "".join(parts)
    if tag in ("code", "kbd", "samp", "tt", "textarea"):
        # MathJax leaves code alone: a "$" in it is a dollar sign, not a math delimiter.
        return text.replace("$", _DOLLAR).replace("\\", _BACKSLASH)
    if tag == "var":
        return _latex_to_text(text) if "\\" in text or "{" in text else text
    if tag in ("sub", "sup"):
        mark = "_" if tag == "sub" else "^"
        inner = text.strip()
        if not inner:
            return ""
        return f"{mark}{inner}" if inner.isalnum() else f"{mark}{{{inner}}}"
    return text


def _pre_text(element: Any) -> str:
    text = "".join(
        [element.text or ""]
        + [_inline(child, verbatim=True) + (child.tail or "") for child in element]
    )
    text = unify_newlines(text)
    # HTML ignores the line break after <pre>; blank lines around samples carry nothing.
    return re.sub(r"^(?:[ \t]*\n)+", "", text).rstrip()


def _list_text(element: Any) -> str:
    ordered = _tag(element) == "ol"
    try:
        number = int(element.get("start", "1"))
    except ValueError:
        number = 1
    items = []
    for child in element:
        tag = _tag(child)
        if tag is None or tag in _SKIP_TAGS:
            continue
        text = "\n".join(_blocks(child))
        if not text:
            continue
        if tag != "li":
            items.append(text)
            continue
        marker = f"{number}. " if ordered else "- "
        number += 1
        indent = " " * len(marker)
        lines = text.split("\n")
        items.append(
            marker
            + lines[0]
            + "".join("\n" + (indent + line if line else "") for line in lines[1:])
        )
    return "\n".join(items)


def _table_blocks(element: Any) -> list[str]:
    """A data table as one block, a row per line and cells joined by ``" | "``.

    A row whose cells hold several blocks (AIZU lays figures and sub-tables out in tables) is
    not a data row: its cells' blocks are given one after the other.
    """
    blocks: list[str] = []
    lines: list[str] = []

    def flush() -> None:
        if lines:
            blocks.append("\n".join(lines))
            lines.clear()

    for part in element:
        tag = _tag(part)
        if tag == "caption":
            flush()
            blocks.extend(_blocks(part))
            continue
        rows = [part] if tag == "tr" else [r for r in part if _tag(r) == "tr"]
        if tag not in ("tr", "thead", "tbody", "tfoot"):
            continue
        for row in rows:
            cells = [_blocks(cell) for cell in row if _tag(cell) in ("td", "th")]
            if all(len(cell) <= 1 and "\n" not in "".join(cell) for cell in cells):
                if any(cells):
                    lines.append(" | ".join("".join(cell) for cell in cells))
            else:
                flush()
                blocks.extend(block for cell in cells for block in cell)
    flush()
    return blocks


def _definitions_text(element: Any) -> str:
    """A ``<dl>`` as one block: each term on its line, its definition indented below it."""
    lines = []
    for child in element:
        tag = _tag(child)
        if tag is None or tag in _SKIP_TAGS:
            continue
        text = "\n".join(_blocks(child))
        if text:
            indent = "  " if tag == "dd" else ""
            lines.extend(indent + line if line else "" for line in text.split("\n"))
    return "\n".join(lines)


def _clean_paragraph(text: str) -> str:
    """Math made readable, whitespace collapsed; ``<br>`` breaks kept, at most one blank line."""
    text = _math_to_text(text).replace(_DOLLAR, "$").replace(_BACKSLASH, "\\")
    lines = [" ".join(line.split()) for line in text.split(_BR)]
    text = "\n".join(lines).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


# Inline and display math as MathJax reads it in CodeNet (``processEscapes``: ``\$`` is "$").
_MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$|\\\[(?P<bracket>.+?)\\\]|\\\((?P<paren>.+?)\\\)"
    r"|\$(?P<inline>.+?)\$|(?P<environment>\\begin\{(?P<name>[A-Za-z]+\*?)\}.+?\\end\{(?P=name)\})",
    re.DOTALL,
)
_DOLLAR = "\x01"  # a "$" that is not a math delimiter, until the paragraph is clean
_BACKSLASH = "\x05"  # likewise for a backslash


def _math_to_text(text: str) -> str:
    if "$" not in text and "\\" not in text:
        return text
    text = text.replace("\\$", _DOLLAR)

    def convert(match: re.Match[str]) -> str:
        groups = ("display", "bracket", "paren", "inline", "environment")
        return _latex_to_text(next(match[g] for g in groups if match[g] is not None))

    return _MATH.sub(convert, text)


# Relations and operators are spaced (``2\times10^5`` -> ``2 × 10^5``); the rest is not.
_SPACED_MACROS = {
    "leq": "≤",
    "le": "≤",
    "leqq": "≤",
    "leqslant": "≤",
    "geq": "≥",
    "ge": "≥",
    "geqq": "≥",
    "geqslant": "≥",
    "neq": "≠",
    "ne": "≠",
    "lt": "<",
    "gt": ">",
    "times": "×",
    "div": "÷",
    "pm": "±",
    "equiv": "≡",
    "approx": "≈",
    "simeq": "≃",
    "sim": "∼",
    "in": "∈",
    "notin": "∉",
    "subset": "⊂",
    "subseteq": "⊆",
    "supset": "⊃",
    "supseteq": "⊇",
    "cup": "∪",
    "cap": "∩",
    "setminus": "∖",
    "oplus": "⊕",
    "otimes": "⊗",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "gets": "←",
    "leftrightarrow": "↔",
    "Rightarrow": "⇒",
    "Leftarrow": "⇐",
    "Leftrightarrow": "⇔",
    "iff": "⇔",
    "land": "∧",
    "wedge": "∧",
    "lor": "∨",
    "vee": "∨",
    "prec": "≺",
    "succ": "≻",
    "ll": "≪",
    "gg": "≫",
    "mid": "|",
    "bmod": "mod",
    "mod": "mod",
}
_PLAIN_MACROS = {
    "ldots": "…",
    "dots": "…",
    "cdots": "⋯",
    "dotsc": "…",
    "dotsb": "⋯",
    "vdots": "⋮",
    "ddots": "⋱",
    "cdot": "·",
    "infty": "∞",
    "sum": "∑",
    "prod": "∏",
    "forall": "∀",
    "exists": "∃",
    "neg": "¬",
    "lnot": "¬",
    "emptyset": "∅",
    "circ": "∘",
    "prime": "′",
    "triangle": "△",
    "lfloor": "⌊",
    "rfloor": "⌋",
    "lceil": "⌈",
    "rceil": "⌉",
    "langle": "⟨",
    "rangle": "⟩",
    "lvert": "|",
    "rvert": "|",
    "vert": "|",
    "ell": "ℓ",
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "epsilon": "ε",
    "varepsilon": "ε",
    "theta": "θ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
    "tau": "τ",
    "phi": "φ",
    "varphi": "φ",
    "omega": "ω",
    "Gamma": "Γ",
    "Delta": "Δ",
    "Theta": "Θ",
    "Lambda": "Λ",
    "Pi": "Π",
    "Sigma": "Σ",
    "Phi": "Φ",
    "Omega": "Ω",
    "max": "max",
    "min": "min",
    "gcd": "gcd",
    "lcm": "lcm",
    "log": "log",
    "ln": "ln",
    "exp": "exp",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "lim": "lim",
    "deg": "deg",
    "det": "det",
    "quad": " ",
    "qquad": " ",
    "left": "",
    "right": "",
    "displaystyle": "",
    "textstyle": "",
    "limits": "",
    "nolimits": "",
    "rm": "",
    "it": "",
    "tt": "",
    "bf": "",
}
# Macros whose (first) argument is kept as is.
_TEXT_MACROS = frozenset(
    {
        "text",
        "textrm",
        "textit",
        "textbf",
        "texttt",
        "mathrm",
        "mathit",
        "mathbf",
        "mathtt",
        "mathsf",
        "mathcal",
        "mathbb",
        "mbox",
        "operatorname",
        "bar",
        "overline",
        "hat",
        "tilde",
        "vec",
        "boldsymbol",
    }
)
_MACRO = re.compile(r"\\([A-Za-z]+)")
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\{[^{}]*\}(?:\{[^{}]*\})?")


def _group(text: str, start: int) -> tuple[str, int]:
    """The brace group (or single token) at ``text[start:]`` (spaces skipped), and its end."""
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return "", i
    if text[i] != "{":
        if text[i] == "\\":
            match = _MACRO.match(text, i)
            if match:
                return match[0], match.end()
        return text[i], i + 1
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{" and (j == 0 or text[j - 1] != "\\"):
            depth += 1
        elif text[j] == "}" and text[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
    return text[i + 1 :], len(text)


def _parenthesised(text: str) -> str:
    text = text.strip()
    return text if re.fullmatch(r"[\w.′]+|\(.*\)", text) else f"({text})"


def _latex_to_text(latex: str) -> str:
    """LaTeX math as readable text: macros to Unicode, groups unwrapped, spacing tidied."""
    text = latex.replace("\\{", "\x02").replace("\\}", "\x03")
    text = _ENVIRONMENT.sub(" ", text)
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        match = _MACRO.match(text, i)
        if match is None:  # \, \; \! \  \\ \% \# \_ \& \|
            symbol = text[i + 1 : i + 2]
            if symbol == "\\":
                out.append("; ")
            elif symbol in ",;: ":
                out.append(" ")
            elif symbol in "%#_&$|":
                out.append("\x04" if symbol == "&" else symbol)
            i += 2
            continue
        name, i = match[1], match.end()
        if name in ("frac", "dfrac", "tfrac", "cfrac"):
            numerator, i = _group(text, i)
            denominator, i = _group(text, i)
            out.append(
                f"{_parenthesised(_latex_to_text(numerator))}/"
                f"{_parenthesised(_latex_to_text(denominator))}"
            )
        elif name == "binom":
            n, i = _group(text, i)
            k, i = _group(text, i)
            out.append(f"C({_latex_to_text(n)}, {_latex_to_text(k)})")
        elif name == "sqrt":
            radicand, i = _group(text, i)
            out.append("√" + _parenthesised(_latex_to_text(radicand)))
        elif name == "tag":
            label, i = _group(text, i)
            out.append(f" ({_latex_to_text(label)})")
        elif name == "pmod":
            modulus, i = _group(text, i)
            out.append(f" (mod {_latex_to_text(modulus)})")
        elif name in _TEXT_MACROS:
            argument, i = _group(text, i)
            out.append(_latex_to_text(argument))
        elif name == "not":
            following, i = _group(text, i)
            out.append(" ≠ " if following in ("=", "\\equiv") else " not " + following)
        elif name in _SPACED_MACROS:
            out.append(f" {_SPACED_MACROS[name]} ")
        elif name in _PLAIN_MACROS:
            out.append(_PLAIN_MACROS[name])
        else:
            out.append(match[0])  # unknown: kept as written
    text = "".join(out)
    # Grouping braces go; sub/superscripts keep them unless around one character or a number.
    previous = None
    while previous != text:
        previous = text
        text = re.sub(r"(?<![_^])\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"([_^])\{(\d+|[^{}\s])\}", r"\1\2", text)
    text = text.replace("~", " ").replace("&", " ")
    text = text.replace("\x02", "{").replace("\x03", "}").replace("\x04", "&")
    return " ".join(text.split())
