"""The dataset builders: CoREB (:mod:`.coreb`) and QualCode (:mod:`.qualcode`), and what they
share, the Hub folder (:mod:`.hub_folder`), scratch folders (:mod:`.scratch`) and builder
configs that embed an options dataclass (:mod:`.config`).

The top-level ``coreb_dataset.py`` and ``qualcode_dataset.py`` hold the ``datasets`` builder
classes and re-export the public API of these modules. Data only: no model library is imported.
"""
