"""CoREB Hub dataset builder: one config per subtask (issue: `coreb_dataset.py`).

Data only, no model imports. Empty until that issue lands; nothing here pretends to work yet.
"""
