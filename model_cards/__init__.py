"""Cards: the dataset cards of the CoREB and QualCode Hub folders (:mod:`.dataset_card`, from
the Markdown templates in ``templates/``). Model cards, Hub and leaderboard I/O come with the
model-card issue.
"""
