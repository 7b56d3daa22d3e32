"""Source adapters: real problem collections turned into execution candidates.

One module per source. Data flows one way: sources -> execution (``sandbox``) -> datasets.
"""
