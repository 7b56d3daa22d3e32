"""First-stage retrieval over CoREB corpora: BM25 (``bm25``), dense embedders (``dense``),
the benchmark runner (``runner``) and its plots (``plots``)."""
