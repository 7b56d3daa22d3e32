"""SynH-Rank's training data [SynH-Rank §4.1]: seed tasks, guideline-driven (or plain) synthesis
of high- and low-quality variants, LLM-free variants from real submissions and program
transformations, their verification in the sandbox, and the hierarchical lists
(``query``, ``docs``, ``labels``) the SynH-Rank trainer reads."""
