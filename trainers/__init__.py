"""Training: the CoREB-Reranker (LoRA yes/no fine-tune with TRL, PEFT and Accelerate) and the
SynH-Rank quality-aware reranker (sentence-transformers); the only place that imports trl,
peft and accelerate for training. Laid out as TRL lays its trainers out: one
``<name>_config.py`` and one ``<name>_trainer.py`` per trainer, what they share written once.

* :mod:`trainers.base_config`: :class:`~trainers.base_config.TrainerConventions`, the base of
  every trainer config (checks, bf16, the CPU process group, the base model and LoRA fields,
  what ``max_length`` means).
* :mod:`trainers.common`: what both runs share (the data and result, the base model and LoRA,
  the run records, the checkpoint callback, the curves, the end of a run).
* :mod:`trainers.coreb_reranker_config` / :mod:`trainers.coreb_reranker_trainer`:
  :class:`~trainers.coreb_reranker_config.CorebRerankerConfig` (a TRL ``SFTConfig``) and the
  run of ``coreb train reranker`` (``train_coreb_reranker``).
* :mod:`trainers.synh_rank_config` / :mod:`trainers.synh_rank_trainer`:
  :class:`~trainers.synh_rank_config.SynhRankConfig` (sentence-transformers'
  ``CrossEncoderTrainingArguments``) and the run of ``coreb train synh-rank``
  (``train_synh_rank``); its losses in :mod:`trainers.synh_rank_losses`, its lists in
  :mod:`trainers.quality_data`.
* :mod:`trainers.examples`: yes/no examples from a built CoREB dataset (and further sources),
  the problem-level validation split.
* :mod:`trainers.decontamination`: problem-level disjointness and 10-gram decontamination
  against every evaluation dataset.
* :mod:`trainers.run_checks`: what keeps a run honest (resumes, finite numbers, steps).
* ``trainers/configs/``: the paper's runs and the accelerate configs (one GPU, DDP, ZeRO-2).
"""
