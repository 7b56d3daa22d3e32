"""First-stage retrieval over CoREB corpora (BM25 today; dense embedders with issue 6)."""
