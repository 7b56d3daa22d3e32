"""The first-stage retriever contract: what the benchmark asks of every retriever.

A retriever ranks a corpus for a set of queries. The benchmark runner and the QualCode
evaluation talk to every first stage through this one contract, so that no caller tests a
retriever's name (BM25 and the dense retrievers used to differ in their ``search`` signatures).

``search`` carries what a lexical retriever needs and a dense one ignores: whether the queries
and the documents are code or prose (``query_type`` / ``document_type``, the terms of
:data:`coreb_toolkit.vocabulary.MAIN_TASKS`). The corpus is given with every call; an
implementation indexes / encodes a corpus once and reuses it for every query set that ranks
the same corpus (BM25 keeps its index, a dense retriever its embedding cache).

Adding a retriever: a class implementing :class:`Retriever` in its own file under
``coreb_toolkit/retrieval/`` and one :class:`~coreb_toolkit.retrieval.registry.RetrieverEntry`
in :data:`coreb_toolkit.retrieval.registry.REGISTRY`.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

#: What ``query_type`` / ``document_type`` may be: the types of :class:`vocabulary.MainTask`,
#: or ``"auto"`` (the retriever decides, if the distinction matters to it).
TEXT_TYPES = ("auto", "code", "text")

#: A run: ``{query_id: {doc_id: score}}``, the best documents of each query.
Run = dict[str, dict[str, float]]


def check_text_type(value: object, what: str) -> str:
    """``value`` if it is one of :data:`TEXT_TYPES`, else a ``ValueError`` naming ``what``."""
    if value not in TEXT_TYPES:
        raise ValueError(f"{what} must be one of {TEXT_TYPES}, got {value!r}")
    return str(value)


def corpus_fingerprint(corpus: Mapping[str, str]) -> str:
    """sha256 over the sorted ``(id, text)`` pairs: equal for equal content in any order.

    It keys the embedding cache and BM25's index, so one changed character or id gives a
    different key.
    """
    digest = hashlib.sha256()
    for doc_id in sorted(corpus):
        text = corpus[doc_id]
        if not isinstance(doc_id, str) or not isinstance(text, str):
            raise TypeError(
                f"corpus_fingerprint expects a mapping of str ids to str texts, but id {doc_id!r} "
                f"maps to {type(text).__name__}"
            )
        # JSON escapes separators, so no two different corpora serialise alike
        digest.update(json.dumps([doc_id, text], ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


class Retriever(ABC):
    """A first-stage retriever.

    Attributes:
        name: the name the retriever reports (results files, output folders): ``"BM25"``,
            ``"sentence-transformers/all-MiniLM-L6-v2"``.
    """

    name: str = ""

    @abstractmethod
    def search(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        *,
        top_k: int,
        query_type: str = "auto",
        document_type: str = "auto",
    ) -> Run:
        """``{query_id: {doc_id: score}}`` holding the ``top_k`` best documents per query.

        Args:
            queries: ``{query_id: text}``.
            corpus: ``{doc_id: text}``; the same corpus (same content) may be given many times
                and is indexed / encoded once.
            top_k: documents kept per query (capped at the corpus size).
            query_type, document_type: ``"code"``, ``"text"`` or ``"auto"``.
        """

    def prepare(self, corpora: Sequence[Mapping[str, str]]) -> None:
        """Index / encode every corpus a run will rank, before any query set is searched.

        The default does nothing: ``search`` indexes a corpus when it first meets it. A dense
        first stage encodes them all here, so that a query whose text is a document of any of
        them (the full-text T2C queries are text-corpus documents) reuses that vector instead
        of being encoded again as a query.
        """
        return None

    def score(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        candidates: Mapping[str, Sequence[str]],
        *,
        query_type: str = "auto",
        document_type: str = "auto",
    ) -> Run:
        """``{query_id: {doc_id: score}}`` for the documents ``candidates[query_id]`` of every
        query: the scores :meth:`search` gives them in ``corpus`` (a fixed candidate list, such
        as MTEB's reranking lists, scored by the first stage).

        The default ranks the whole corpus and keeps the candidates; the bundled retrievers
        score only the listed pairs (a dot product each, a BM25 score each).
        """
        ranked = self.search(
            queries, corpus, top_k=len(corpus), query_type=query_type, document_type=document_type
        )
        return {q: {d: ranked[q][d] for d in docs} for q, docs in candidates.items()}

    @abstractmethod
    def metadata(self) -> dict[str, Any]:
        """What identifies the retriever in a results file (JSON-serialisable), with ``name``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


__all__ = ["TEXT_TYPES", "Retriever", "Run", "check_text_type", "corpus_fingerprint"]
