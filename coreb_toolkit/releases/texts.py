"""Texts of a release without an LLM: abbreviations, search queries, lexical hard negatives.

The CoREB paper writes its abbreviated descriptions, developer-style search queries and noise
descriptions with an LLM (Appendix A.1-A.2). When no generator is configured the release
pipeline uses these deterministic stand-ins instead, and labels every text it made this way
(``meta.generation``) so nobody mistakes them for the paper's:

* :func:`abbreviate`: extractive -- the statement without its examples, sample I/O and
  constraint lists, cut at a sentence boundary;
* :func:`search_queries`: a short keyword string (at most :data:`SEARCH_QUERY_WORDS` words,
  the paper's ~19 tokens) from the statement alone -- the words of its narrative in order, the
  most informative kept when there are more (content words first, then TF-IDF within the
  release), without any name the problem's code declares
  (:func:`coreb_toolkit.releases.identifiers.banned_query_words`): a query that names the function
  is string
  matching, not search;
* :func:`lexical_neighbours`: for each problem, the other problems whose statements BM25 ranks
  closest (the paper's fallback for text hard negatives, "texts of unrelated problems", chosen
  to be hard rather than random).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping

from coreb_toolkit.libraries import import_bm25s

logger = logging.getLogger(__name__)

ABBREVIATION_CHARS = 400
#: Words of an offline search query. The paper's search queries average ~19 cl100k tokens
#: (Tables 1 and 4); its one example (Listing 8, "Find the Kth character after repeatedly
#: inverting case and concatenating a string 10^100 times") has 14 words, and English runs at
#: ~1.3 cl100k tokens a word. The LLM prompt caps a query at 15 words.
SEARCH_QUERY_WORDS = 14

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
    narrative = " ".join(_clean(_narrative(statement)).split())
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


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _norm(word: str) -> str:
    return re.sub(r"[^a-z0-9]", "", word.lower())


def query_words(text: str, banned: Collection[str] = (), *, stopwords: bool = False) -> list[str]:
    """The words of ``text`` in order, lowercased, without ``banned`` (and stopwords unless
    ``stopwords``).

    ``text`` is read as identifiers first, so a name written in it (``has_close_elements(...)``
    in a doctest, ``hasCloseElements``) is matched against ``banned`` (normalised names, see
    :func:`coreb_toolkit.releases.identifiers.normalise`) as a whole before it is split into words.
    """
    # contractions: "don't" is "do not", "you're" is "you" (not "you" and "re")
    text = re.sub(r"(?i)n't\b", " not", text)
    text = re.sub(r"(?i)'(?:re|s|ll|ve|d|m)\b", "", text)
    out = []
    for token in _IDENTIFIER.findall(_clean(text)):
        if _norm(token) in banned:
            continue
        for word in split_identifier(token):
            usable = len(word) > 1 and word.isalpha() and word not in banned
            if usable and (stopwords or word not in _STOP):
                out.append(word)
    return out


def search_queries(
    statements: Mapping[str, str],
    banned: Mapping[str, Collection[str]] | None = None,
    n_words: int = SEARCH_QUERY_WORDS,
) -> dict[str, str]:
    """A keyword query per problem from its statement alone, at most ``n_words`` words.

    The query is the statement's narrative (the part before its examples, as
    :func:`abbreviate` cuts it) as distinct words in the statement's order, without any word of
    ``banned[pid]`` (normalised names,
    :func:`coreb_toolkit.releases.identifiers.banned_query_words`): it
    names no function, parameter or class of the problem's code. A narrative of more than
    ``n_words`` distinct words keeps the ``n_words`` most informative: content words before
    stopwords, then the most distinctive (TF-IDF over the release's statements), then the
    earliest.

    Raises:
        ValueError: ``n_words`` is not a positive int.
    """
    if isinstance(n_words, bool) or not isinstance(n_words, int) or n_words < 1:
        raise ValueError(f"search_queries: n_words must be a positive int, got {n_words!r}")
    banned = banned or {}
    narratives = {
        pid: list(
            dict.fromkeys(query_words(_narrative(text, 3), banned.get(pid, ()), stopwords=True))
        )
        for pid, text in statements.items()
    }
    content = {pid: query_words(text, banned.get(pid, ())) for pid, text in statements.items()}
    df: Counter[str] = Counter()
    for words in content.values():
        df.update(set(words))
    n = len(statements)
    out = {}
    for pid, words in narratives.items():
        tf = Counter(content[pid])
        score = {w: tf[w] * math.log((n + 1) / (df[w] + 0.5)) for w in tf}
        keep = _most_informative(words, score, n_words)
        query = " ".join(words[k] for k in keep)
        if not query:
            logger.warning("search query of %s: its statement has no word to use", pid)
            query = "solution"
        out[pid] = query
    return out


def code_words(code: str) -> frozenset[str]:
    """The words a query could meet in ``code``: every identifier lowercased, whole and split
    on camelCase / snake_case (``hasCloseElements``: ``hascloseelements``, ``has``, ``close``,
    ``elements``), strings and comments included."""
    out: set[str] = set()
    for token in _IDENTIFIER.findall(code):
        out.add(_norm(token))
        out.update(split_identifier(token))
    return frozenset(out)


def _most_informative(words: list[str], score: Mapping[str, float], n: int) -> list[int]:
    """Positions of the ``n`` most informative ``words``, in order (content words first)."""
    order = sorted(range(len(words)), key=lambda k: (words[k] in _STOP, -score.get(words[k], 0), k))
    return sorted(order[:n])


def _narrative(statement: str, min_words: int | None = None) -> str:
    """``statement`` before its first example / sample / constraints marker, if that leaves more
    than 40 characters (or at least ``min_words`` words)."""
    match = _CUT.search(statement)
    if match is None:
        return statement
    head = statement[: match.start()]
    long_enough = len(head.split()) >= min_words if min_words else match.start() > 40
    return head if long_enough else statement


def lexical_neighbours(statements: Mapping[str, str], k: int = 4) -> dict[str, list[str]]:
    """For every problem, the ``k`` other problems whose statements BM25 ranks highest."""
    bm25s = import_bm25s()

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
