"""QualCode and MC-QualCode dataset builder (issue: `qualcode_dataset.py`).

Data only, no model imports. Empty until that issue lands; nothing here pretends to work yet.
"""
