"""BM25 over code and text with a code-aware tokenizer, on ``bm25s``.

Identifiers are split on camelCase and snake_case and kept whole as well (``hasCloseElements``
gives ``hascloseelements``, ``has``, ``close``, ``elements``), so a query's words meet the code's
identifiers; everything is lowercased; single characters and English stopwords are dropped.

Code (documents of a code corpus, code queries of code-to-code and code-to-text) also keeps
its operators and integer literals as tokens (:data:`CODE_OPERATORS`; ``and`` / ``or`` /
``not`` as ``&&`` / ``||`` / ``!``). Without them a solution and a mutant that flips ``<`` to
``<=``, ``+`` to ``-``, ``and`` to ``or`` or ``0`` to ``1`` are the same bag of words: BM25
gives them exactly the same score for every query, and the ranking between them is decided by
whatever breaks ties (trec_eval: the doc id). Prose keeps today's tokens: a statement's
hyphens, ``>>>`` doctest prompts and ``1 <= n`` constraints say nothing about the operators of
its solution. Which tokenizer applies is the ``kind`` of :meth:`BM25Retriever.index` /
:meth:`BM25Retriever.search` (``"code"``, ``"text"``, or ``"auto"``: decided once per corpus
or query batch by :func:`looks_like_code`).

A limit that remains: a prose query names no operator, so for a text-to-code query a solution
and a mutant that only swaps one operator for another of the same length still tie (a
bag-of-words model cannot tell them apart); mutants that add or remove tokens (``range(n)`` ->
``range(n + 1)``, a dropped ``not``, a dropped statement) no longer do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from coreb_toolkit.libraries import import_bm25s
from coreb_toolkit.retrieval.base import Retriever, Run, check_text_type, corpus_fingerprint

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
    ]
)


#: Operators kept as tokens in code, longest first (a scanner takes the longest that matches):
#: the arithmetic, comparison, logical, bitwise, assignment, increment and range operators of
#: the five CoREB languages -- every token a mutation of :mod:`coreb_toolkit.releases.mutate`
#: flips. Arrows,
#: scope and hash punctuation (``->``, ``=>``, ``::``, ``<-``) are read and dropped, so that
#: ``->`` is not taken for ``-`` and ``>``; the brackets of a generic or template argument list
#: (``List<Integer>``, ``vector<pair<int,int>>``) and of ``#include <...>`` are not comparisons
#: and are dropped too.
CODE_OPERATORS: tuple[str, ...] = (
    ">>>=", "<<=", ">>=", "**=", "//=", "&&=", "||=", "&^=", "<=>", "===", ">>>", "...",
    "**", "//", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "%=",
    "&=", "|=", "^=", "++", "--", "..", ":=", "&^", "=~", "!~",
    "+", "-", "*", "/", "%", "<", ">", "!", "&", "|", "^", "~", "=",
)  # fmt: skip
# Python's and Ruby's (and C++'s alternative) logical keywords: the same operator as the symbol,
# so a Python anchor's ``and`` meets a Java solution's ``&&``.
_WORD_OPERATORS = {"and": "&&", "or": "||", "not": "!"}
_SKIPPED = ("->", "=>", "::", "<-")
_CODE_SCAN = re.compile(
    r"(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>\d+)|(?P<skip>"
    + "|".join(re.escape(o) for o in _SKIPPED)
    + r")|(?P<op>"
    + "|".join(re.escape(o) for o in sorted(CODE_OPERATORS, key=len, reverse=True))
    + ")"
)
# Heads of generic / template argument lists: a capitalised type (Java, C++ classes, Go) or one
# of the C++ standard templates and casts, written right before its ``<``.
_TEMPLATE_HEADS = frozenset((
    "vector", "map", "set", "pair", "unordered_map", "unordered_set", "multiset", "multimap",
    "priority_queue", "queue", "stack", "deque", "list", "array", "tuple", "function", "greater",
    "less", "static_cast", "dynamic_cast", "reinterpret_cast", "const_cast", "numeric_limits",
    "optional", "bitset", "make_pair", "min", "max", "shared_ptr", "unique_ptr", "basic_string",
))  # fmt: skip
_GENERIC_HEAD = re.compile(r"(?<!\w)([A-Za-z_]\w*)<")
_GENERIC_INSIDE = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ ,.:?*[]"
)
_INCLUDE = re.compile(r"#[ \t]*include[ \t]*<[^>\n]*>")
_GENERIC_SPAN = 200  # an argument list longer than this is not a type


def _blank_brackets(text: str) -> str:
    """``text`` with the ``<`` / ``>`` of generic argument lists and ``#include <...>`` blanked."""
    chars: list[str] | None = None
    for m in _INCLUDE.finditer(text):
        chars = chars if chars is not None else list(text)
        for k in range(m.start(), m.end()):
            if not (chars[k].isalnum() or chars[k] == "_"):
                chars[k] = " "
    scanned = 0  # heads inside a list already scanned are not scanned again: linear time
    for m in _GENERIC_HEAD.finditer(text):
        head = m.group(1)
        if m.end() <= scanned or not (head[0].isupper() or head in _TEMPLATE_HEADS):
            continue
        depth, k, end = 0, m.end() - 1, min(len(text), m.end() + _GENERIC_SPAN)
        marks: list[int] = []
        while k < end:
            c = text[k]
            if c == "<":
                depth += 1
                marks.append(k)
            elif c == ">":
                depth -= 1
                marks.append(k)
                if depth == 0:
                    break
            elif c not in _GENERIC_INSIDE:
                break
            k += 1
        scanned = k + 1
        if depth == 0 and marks:
            chars = chars if chars is not None else list(text)
            for j in marks:
                chars[j] = " "
    return text if chars is None else "".join(chars)


def _identifier_tokens(token: str) -> list[str]:
    parts = [p.lower() for piece in token.split("_") for p in _CAMEL.findall(piece)]
    whole = token.lower().strip("_")
    out = [whole] if len(parts) > 1 and len(whole) > 1 else []
    return out + [p for p in parts if len(p) > 1 and p not in _STOP]


def code_tokens(text: str, *, operators: bool = False) -> list[str]:
    """Lowercased tokens of code or prose, identifiers split on camelCase and snake_case.

    Args:
        text: the code or prose.
        operators: also keep :data:`CODE_OPERATORS` and integer literals (single digits
            included) as tokens, in the order they come: the tokens of code. ``False`` gives
            the tokens of prose.
    """
    if not operators:
        return [t for token in _TOKEN.findall(text) for t in _identifier_tokens(token)]
    out: list[str] = []
    for m in _CODE_SCAN.finditer(_blank_brackets(text)):
        kind, token = m.lastgroup, m.group()
        if kind == "word":
            if token in _WORD_OPERATORS:
                out.append(_WORD_OPERATORS[token])
            else:
                out += _identifier_tokens(token)
        elif kind == "num":
            out.append(token.lstrip("0") or "0")  # 007 and 7 are the same literal
        elif kind == "op":
            out.append(token)
    return out


# A line of code ends a statement or opens a block, starts with a keyword, or assigns; prose
# lines rarely do. Doctest lines (``>>> f(1)``) are examples inside prose, not code; comment
# lines are neither.
_CODE_LINE = re.compile(
    r"[;{}:)]\s*$|^\s*(?:def|class|return|import|from|func|package|public|private|protected|"
    r"static|int|long|void|bool|boolean|auto|const|end|elif|else|for|while|if|using|require|"
    r"let|var|struct|template|#include|@\w+)\b|^\s*[A-Za-z_][\w.\[\]]*\s*"
    r"(?:=|\+=|-=|\*=|/=|:=|<<)\s*\S|^\s*['\"\w]+['\"]?\s*(?::|=>)\s*\S+,\s*$"
)
_COMMENT_LINE = re.compile(r"^\s*(?://|/\*|\*|#(?!\s*include))")
KINDS = ("auto", "code", "text")


def looks_like_code(text: str) -> bool:
    """Whether at least half of the non-blank, non-comment lines of ``text`` read as code."""
    lines = [line for line in text.splitlines() if line.strip() and not _COMMENT_LINE.match(line)]
    if not lines:
        return False
    code, example = 0, False
    for line in lines:
        # a doctest prompt and the result under it are a statement's examples, not code
        prompt = line.lstrip().startswith((">>>", "..."))
        if not prompt and not example and _CODE_LINE.search(line):
            code += 1
        example = prompt
    return 2 * code >= len(lines)


def _is_code(texts: Iterable[str], kind: str, where: str) -> bool:
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    if kind != "auto":
        return kind == "code"
    votes = [looks_like_code(t) for t in texts]
    return 2 * sum(votes) > len(votes)


class BM25Retriever:
    """BM25 (Lucene variant, ``bm25s``) over one corpus, searched by many queries.

    Args:
        k1, b: the BM25 parameters (``bm25s`` defaults).

    ``index`` and ``search`` take a ``kind``: ``"code"`` tokenizes with operators
    (:func:`code_tokens` ``operators=True``), ``"text"`` without, ``"auto"`` (the default)
    decides once for the whole corpus / query batch: code when most of its items
    :func:`looks_like_code`. A caller that knows (the CoREB runner: the code corpus, code
    queries of c2c and c2t) should say so.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self._ids: list[str] = []
        self._model = None
        self.corpus_is_code: bool | None = None

    def index(self, corpus: Mapping[str, str], *, kind: str = "auto") -> BM25Retriever:
        bm25s = import_bm25s()
        if not corpus:
            raise ValueError("BM25Retriever.index: the corpus is empty")
        self._ids = list(corpus)
        code = _is_code(corpus.values(), kind, "BM25Retriever.index")
        self.corpus_is_code = code
        self._model = bm25s.BM25(k1=self.k1, b=self.b)
        self._model.index([code_tokens(corpus[d], operators=code) or ["<empty>"]
                           for d in self._ids], show_progress=False)  # fmt: skip
        return self

    def scores(self, query: str, *, kind: str = "auto") -> Any:
        """The BM25 score of ``query`` against every document, in the corpus's order (numpy)."""
        if self._model is None:
            raise ValueError("BM25Retriever.scores: call index(corpus) first")
        code = _is_code([query], kind, "BM25Retriever.scores")
        return self._model.get_scores(code_tokens(query, operators=code) or ["<empty>"])

    @property
    def ids(self) -> list[str]:
        """The document ids, in index order."""
        return list(self._ids)

    def search(
        self, queries: Mapping[str, str], top_k: int = 100, *, kind: str = "auto"
    ) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` with the ``top_k`` best documents of each query."""
        if self._model is None:
            raise ValueError("BM25Retriever.search: call index(corpus) first")
        qids = list(queries)
        if not qids:
            return {}
        code = _is_code(queries.values(), kind, "BM25Retriever.search")
        k = min(top_k, len(self._ids))
        tokens = [code_tokens(queries[q], operators=code) or ["<empty>"] for q in qids]
        docs, scores = self._model.retrieve(tokens, k=k, show_progress=False)
        return {
            q: {
                self._ids[j]: float(s)
                for j, s in zip(docs[i].tolist(), scores[i].tolist(), strict=True)
            }
            for i, q in enumerate(qids)
        }


class BM25FirstStage(Retriever):
    """:class:`BM25Retriever` behind the :class:`~coreb_toolkit.retrieval.base.Retriever`
    contract: the corpus indexed once per content and document type, then searched by every
    query set that ranks it.

    ``document_type`` / ``query_type`` pick the tokenizer (``"code"`` with operators,
    ``"text"`` without, ``"auto"``: :func:`looks_like_code` decides once per corpus / query
    set), as the ``kind`` of :meth:`BM25Retriever.index` / :meth:`BM25Retriever.search`.

    Args:
        k1, b: the BM25 parameters (``bm25s`` defaults).
        progress: accepted so that one switch drives every stage; BM25 shows no bar.
    """

    name = "BM25"

    def __init__(self, k1: float = 1.5, b: float = 0.75, *, progress: bool = True):
        self.k1, self.b = k1, b
        self.progress = progress
        self._key: tuple[str, str] | None = None
        self._index: BM25Retriever | None = None

    def search(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        *,
        top_k: int,
        query_type: str = "auto",
        document_type: str = "auto",
    ) -> Run:
        check_text_type(query_type, "query_type")
        return self._indexed(corpus, document_type).search(queries, top_k=top_k, kind=query_type)

    def score(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        candidates: Mapping[str, Sequence[str]],
        *,
        query_type: str = "auto",
        document_type: str = "auto",
    ) -> Run:
        """The BM25 score of each listed (query, document) pair in ``corpus`` (its statistics
        are the whole corpus's, as :meth:`search` ranks it)."""
        check_text_type(query_type, "query_type")
        index = self._indexed(corpus, document_type)
        row = {d: i for i, d in enumerate(index.ids)}
        out: Run = {}
        for q, docs in candidates.items():
            values = index.scores(queries[q], kind=query_type)
            out[q] = {d: float(values[row[d]]) for d in docs}
        return out

    def _indexed(self, corpus: Mapping[str, str], document_type: str) -> BM25Retriever:
        key = (corpus_fingerprint(corpus), check_text_type(document_type, "document_type"))
        if self._index is None or key != self._key:
            # one index at a time: the runner ranks a release's corpora one after another
            self._index = BM25Retriever(self.k1, self.b).index(corpus, kind=document_type)
            self._key = key
        return self._index

    def metadata(self) -> dict[str, Any]:
        return {
            "name": "BM25",
            "implementation": "bm25s",
            "tokenizer": "code-aware (coreb_toolkit.retrieval.bm25): identifiers split; "
            "operators and integer literals kept for code",
            "k1": self.k1,
            "b": self.b,
        }
