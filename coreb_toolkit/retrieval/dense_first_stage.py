"""The dense first stage: a :class:`~coreb_toolkit.retrieval.dense.DenseRetriever` behind the
:class:`~coreb_toolkit.retrieval.base.Retriever` contract the runner drives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coreb_toolkit.retrieval.base import Retriever, Run, check_text_type


class DenseFirstStage(Retriever):
    """A :class:`DenseRetriever` (or any encoder with its ``encode_corpus``, ``encode_queries``,
    ``search`` and ``metadata``) behind the :class:`~coreb_toolkit.retrieval.base.Retriever`
    contract: each corpus encoded once per content, first (``prepare``), then each query text
    once; ``query_type`` / ``document_type`` do not matter to an embedder.

    Args:
        encoder: the retriever doing the work.
        name: the name to report, if not the encoder's (``minilm`` reports its Hub id).
    """

    def __init__(self, encoder: Any, name: str | None = None):
        for method in ("encode_corpus", "encode_queries", "search"):
            if not callable(getattr(encoder, method, None)):
                raise TypeError(
                    f"DenseFirstStage expects an encoder with encode_corpus, encode_queries and "
                    f"search (a DenseRetriever), got {type(encoder).__name__} without {method}"
                )
        self.encoder = encoder
        self._reported = name
        self.name = name or str(getattr(encoder, "model_name_or_path", type(encoder).__name__))

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
        check_text_type(document_type, "document_type")
        documents = self.encoder.encode_corpus(corpus)
        return self.encoder.search(self.encoder.encode_queries(queries), documents, top_k)

    def prepare(self, corpora: Sequence[Mapping[str, str]]) -> None:
        for corpus in filter(None, corpora):  # an empty corpus is refused by encode_corpus
            self.encoder.encode_corpus(corpus)

    def score(
        self,
        queries: Mapping[str, str],
        corpus: Mapping[str, str],
        candidates: Mapping[str, Sequence[str]],
        *,
        query_type: str = "auto",
        document_type: str = "auto",
    ) -> Run:
        """The cosine of each listed (query, document) pair, from the vectors :meth:`search`
        uses (each text encoded once), clamped to [-1, 1] as :func:`cosine_search` does."""
        import torch

        check_text_type(query_type, "query_type")
        check_text_type(document_type, "document_type")
        documents = self.encoder.encode_corpus(corpus)
        wanted = {q: queries[q] for q in candidates}
        encoded = self.encoder.encode_queries(wanted)
        row = {d: i for i, d in enumerate(documents.ids)}
        out: Run = {}
        with torch.inference_mode():
            for i, q in enumerate(encoded.ids):
                docs = list(candidates[q])
                index = torch.tensor([row[d] for d in docs], dtype=torch.long)
                sims = documents.vectors.index_select(0, index) @ encoded.vectors[i]
                out[q] = {d: min(1.0, max(-1.0, s)) for d, s in zip(docs, sims.tolist(),
                                                                    strict=True)}  # fmt: skip
        return out

    def metadata(self) -> dict[str, Any]:
        meta = dict(self.encoder.metadata)
        if self._reported is not None and self._reported != meta.get("name"):
            meta["loaded_from"], meta["name"] = meta.get("name"), self._reported
        return meta


__all__ = ["DenseFirstStage"]
