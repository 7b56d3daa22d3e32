"""Training: CoREB-Reranker (LoRA yes/no) and SynH-Rank (hierarchical ranking); the only place
that imports trl, peft and accelerate.

Empty until the training issues land; nothing here pretends to work yet.
"""
