"""The benchmark layer: first-stage and reranking runs over CoREB subtasks (``runner``,
``rerank``), QualCode evaluation (``qualcode_eval``), and the plots of a run (``plots``)."""
