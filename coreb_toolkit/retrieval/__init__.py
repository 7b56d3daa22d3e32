"""First-stage retrieval over CoREB corpora: BM25 (``bm25``) and dense embedders (``dense``)."""
