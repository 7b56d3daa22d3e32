"""The CoREB leaderboard: submissions, their validator, the table, the plots and the page.

* :mod:`~model_cards.leaderboard.submission`: a submission folder and how to make one;
* :mod:`~model_cards.leaderboard.validate`: every number recomputed from the submitted runs;
* :mod:`~model_cards.leaderboard.table`: the ranked table, its views and the significance of
  each gap to the leader;
* :mod:`~model_cards.leaderboard.plots`: the parameter-efficiency plots (CoREB Figures 9-10);
* :mod:`~model_cards.leaderboard.page`: the Gradio page (self-contained: it is the Space's app);
* :mod:`~model_cards.leaderboard.app`: the page from submissions, served locally, and the Space.
"""
