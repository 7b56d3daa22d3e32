"""Training: the CoREB-Reranker (LoRA yes/no fine-tune with TRL, PEFT and Accelerate); the only
place that imports trl, peft and accelerate for training.

* :mod:`trainers.examples`: yes/no examples from a built CoREB dataset (and further sources),
  the problem-level validation split.
* :mod:`trainers.decontamination`: problem-level disjointness and 10-gram decontamination
  against every evaluation dataset.
* :mod:`trainers.config`: :class:`~trainers.config.CorebRerankerConfig`, the one config (a TRL
  ``SFTConfig``) of ``coreb train reranker``.
* :mod:`trainers.coreb_reranker`: the run (``train_coreb_reranker``).
* ``trainers/configs/``: the paper's run and the accelerate configs (one GPU, DDP, ZeRO-2).
"""
