"""BM25 over code and text with a code-aware tokenizer, on ``bm25s``.

Identifiers are split on camelCase and snake_case and kept whole as well (``hasCloseElements``
gives ``hascloseelements``, ``has``, ``close``, ``elements``), so a query's words meet the code's
identifiers; everything is lowercased; single characters and English stopwords are dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

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


def code_tokens(text: str) -> list[str]:
    """Lowercased tokens of code or prose, identifiers split on camelCase and snake_case."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        parts = [p.lower() for piece in token.split("_") for p in _CAMEL.findall(piece)]
        whole = token.lower().strip("_")
        if len(parts) > 1 and len(whole) > 1:
            out.append(whole)
        out += [p for p in parts if len(p) > 1 and p not in _STOP]
    return out


class BM25Retriever:
    """BM25 (Lucene variant, ``bm25s``) over one corpus, searched by many queries.

    Args:
        k1, b: the BM25 parameters (``bm25s`` defaults).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self._ids: list[str] = []
        self._model = None

    def index(self, corpus: Mapping[str, str]) -> BM25Retriever:
        import bm25s

        # bm25s sets its logger to DEBUG on import; its per-index messages are noise in a CLI
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        if not corpus:
            raise ValueError("BM25Retriever.index: the corpus is empty")
        self._ids = list(corpus)
        self._model = bm25s.BM25(k1=self.k1, b=self.b)
        self._model.index([code_tokens(corpus[d]) or ["<empty>"] for d in self._ids],
                          show_progress=False)  # fmt: skip
        return self

    def scores(self, query: str) -> Any:
        """The BM25 score of ``query`` against every document, in the corpus's order (numpy)."""
        if self._model is None:
            raise ValueError("BM25Retriever.scores: call index(corpus) first")
        return self._model.get_scores(code_tokens(query) or ["<empty>"])

    @property
    def ids(self) -> list[str]:
        """The document ids, in index order."""
        return list(self._ids)

    def search(self, queries: Mapping[str, str], top_k: int = 100) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` with the ``top_k`` best documents of each query."""
        if self._model is None:
            raise ValueError("BM25Retriever.search: call index(corpus) first")
        qids = list(queries)
        if not qids:
            return {}
        k = min(top_k, len(self._ids))
        tokens = [code_tokens(queries[q]) or ["<empty>"] for q in qids]
        docs, scores = self._model.retrieve(tokens, k=k, show_progress=False)
        return {
            q: {
                self._ids[j]: float(s)
                for j, s in zip(docs[i].tolist(), scores[i].tolist(), strict=True)
            }
            for i, q in enumerate(qids)
        }
