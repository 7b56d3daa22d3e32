"""Texts of a release without an LLM: abbreviations, search queries, lexical hard negatives.

The CoREB paper writes its abbreviated descriptions, developer-style search queries and noise
descriptions with an LLM (Appendix A.1-A.2). When no generator is configured the release
pipeline uses these deterministic stand-ins instead, and labels every text it made this way
(``meta.generation``) so nobody mistakes them for the paper's:

* :func:`abbreviate`: extractive -- the statement without its examples, sample I/O and
  constraint lists, cut at a sentence boundary;
* :func:`search_queries`: the title or function name split into words plus the statement's most
  distinctive terms (highest TF-IDF within the release), a short keyword string;
* :func:`lexical_neighbours`: for each problem, the other problems whose statements BM25 ranks
  closest (the paper's fallback for text hard negatives, "texts of unrelated problems", chosen
  to be hard rather than random).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

ABBREVIATION_CHARS = 400
SEARCH_TERMS = 6

# where the narrative ends and examples / I/O specs / constraints begin
_CUT = re.compile(
    r"^\s*(?:Example\s*\d*\s*:?|Examples?:|Sample Input|Input\s*$|Input:|Output:|Constraints?:?"
    r"|Note:?|>>>|\w+\(.*\)\s*(?:==|➞)|For example|Notes?$)",
    re.I | re.M,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z]+")
_STOP = frozenset(
    re.split(
        r"\s+",
        """
a about above after again all also an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
given had has have having he her here hers how i if in into is it its itself just let me
more most must my no nor not now of off on once only or other our out over own same she
should so some such than that the their them then there these they this those through to
too under until up very was we were what when where which while who whom why will with
would you your return returns write function find print number numbers integer integers
value values list lists string strings array arrays element elements given output input
following contains containing each one two example examples sample test case cases
true false none null
""".strip(),
    )
)


def _clean(text: str) -> str:
    text = re.sub(r"\$([^$]*)\$", r"\1", text)  # inline LaTeX: keep its content
    text = re.sub(r"\\(?:leq|le)\b", "<=", text)
    text = re.sub(r"\\(?:geq|ge)\b", ">=", text)
    text = re.sub(r"\\(?:ldots|dots|cdots)", "...", text)
    text = re.sub(r"\\[,;!]|\\text\{([^}]*)\}", r"\1", text)
    return re.sub(r"[ \t]+", " ", text)


def abbreviate(statement: str, max_chars: int = ABBREVIATION_CHARS) -> str:
    """An extractive abbreviation: the narrative part of ``statement``, at most ``max_chars``.

    Cuts at the first example / sample / constraints marker, then keeps whole sentences while
    they fit (the first sentence is kept, truncated at a word, if it alone is too long).
    """
    match = _CUT.search(statement)
    narrative = statement[: match.start()] if match and match.start() > 40 else statement
    narrative = " ".join(_clean(narrative).split())
    out = ""
    for sentence in _SENTENCE.split(narrative):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > max_chars:
            break
        out = candidate
    if not out:
        out = narrative[:max_chars].rsplit(" ", 1)[0]
    return out


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def split_identifier(name: str) -> list[str]:
    """``hasCloseElements`` / ``has_close_elements`` -> ``["has", "close", "elements"]``."""
    parts = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ")
    return [p.lower() for p in parts.split() if p]


def search_queries(
    statements: Mapping[str, str],
    names: Mapping[str, str | None],
    n_terms: int = SEARCH_TERMS,
) -> dict[str, str]:
    """A short keyword query per problem: its name's words, then its most distinctive terms."""
    docs = {
        pid: [w for w in _words(_clean(text)) if w not in _STOP] for pid, text in statements.items()
    }
    df: Counter[str] = Counter()
    for words in docs.values():
        df.update(set(words))
    n = len(docs)
    out = {}
    for pid, words in docs.items():
        name = names.get(pid) or ""
        head = [w for w in split_identifier(name) if len(w) > 1]
        tf = Counter(words)
        ranked = sorted(tf, key=lambda w: (-tf[w] * math.log((n + 1) / (df[w] + 0.5)), w))
        terms = head + [w for w in ranked if w not in head][: max(0, n_terms - len(head) + 2)]
        out[pid] = " ".join(terms[: n_terms + 2]) or name or "function"
    return out


def lexical_neighbours(statements: Mapping[str, str], k: int = 4) -> dict[str, list[str]]:
    """For every problem, the ``k`` other problems whose statements BM25 ranks highest."""
    import bm25s

    ids = list(statements)
    if len(ids) < 2:
        return {pid: [] for pid in ids}
    texts = [_clean(statements[pid]) for pid in ids]
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    depth = min(len(ids), k + 1)
    results, _ = retriever.retrieve(tokens, k=depth, show_progress=False)
    out = {}
    for row, pid in enumerate(ids):
        others = [ids[j] for j in results[row].tolist() if ids[j] != pid]
        out[pid] = others[:k]
    return out


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (for titles of problems that have none)."""
    return _SENTENCE.split(" ".join(text.split()), 1)[0]
