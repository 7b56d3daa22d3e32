"""Cards, Hub and leaderboard I/O: the last room of the house (results -> cards -> the Hub).

- :mod:`.dataset_card`: the dataset cards (README.md) and the Hub's ``eval.yaml`` of the CoREB and
  QualCode Hub folders, from the Markdown templates in ``templates/``;
- :mod:`.model_card` (with :mod:`.model_card_eval`, :mod:`.model_card_sections`,
  :mod:`.model_card_checkpoint`): model cards of evaluated and trained rerankers and embedders,
  ``model-index`` and ``.eval_results/*.yaml``;
- :mod:`.hub`: pushing a model, dataset or Space folder to the Hub in one ``create_commit``, or a
  dry run that writes the same commit operations;
- :mod:`.mteb_results`: MTEB submissions (``TaskResult`` files, ``model_meta.json``);
- :mod:`.leaderboard`: our own leaderboard: submissions, their validator, the table, the plots
  and the Gradio page.
"""
