"""The CoREB toolkit's own machinery under one import root.

``coreb_dataset``, ``qualcode_dataset``, ``reranker``, ``trainers``, ``eval_metrics`` and
``model_cards`` are the top-level names users know; everything else the toolkit adds lives here,
so that installing it never shadows a user's module of a common name (``sandbox``, ``sources``):

* :mod:`coreb_toolkit.vocabulary`: languages, main tasks, the subtask registry, QualCode
  dimensions (dependency-free);
* :mod:`coreb_toolkit.sources` -> :mod:`coreb_toolkit.sandbox` -> :mod:`coreb_toolkit.releases`,
  :mod:`coreb_toolkit.quality`: problems, execution, release cutting, quality labels;
* :mod:`coreb_toolkit.retrieval`: first-stage retrievers behind one contract;
* :mod:`coreb_toolkit.benchmark`: orchestration (first stage, reranking, QualCode), results,
  reports and plots;
* :mod:`coreb_toolkit.cli`: the ``coreb`` command.

Importing this package imports nothing else.
"""
