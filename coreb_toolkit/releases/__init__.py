"""Cutting CoREB releases: from source problems to an execution-verified release."""
