"""Rerankers (inference only): cross-encoder and generative yes/no backends.

Empty until the reranker issue lands; nothing here pretends to work yet.
"""
