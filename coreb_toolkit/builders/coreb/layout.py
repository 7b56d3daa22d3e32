"""The official CoREB layout: its 8 configs, their fields, and the names a built folder reserves.

A release is published as ``code_corpus``, ``text_corpus`` and ``{text2code,code2code,
code2text}_{queries,qrels}``, one split per release [CoREB A.4; ``docs/protocol.md`` §1]. Standard
library only.
"""

from __future__ import annotations

import re

from coreb_toolkit.vocabulary import COREB_CITATION, CORPUS_CONFIGS

# --------------------------------------------------------------------------------------------
# The official layout [CoREB A.4]
# --------------------------------------------------------------------------------------------

FAMILIES: dict[str, dict[str, str]] = {
    # family: its queries config, its qrels config, the id field and corpus it ranks
    "t2c": {"queries": "text2code_queries", "qrels": "text2code_qrels", "split": "text2code"},
    "c2c": {"queries": "code2code_queries", "qrels": "code2code_qrels", "split": "code2code"},
    "c2t": {"queries": "code2text_queries", "qrels": "code2text_qrels", "split": "code2text"},
}

# Field name -> (type, required). "meta" is parsed from a dict, a JSON string or a Python
# literal string; every other field must already have its type.
STRING, INT64, FLOAT64, BOOL = "string", "int64", "float64", "bool"
OFFICIAL_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "code_corpus": {
        "code_id": (STRING, True),
        "code": (STRING, True),
        "language": (STRING, True),
        "model": (STRING, False),
        "code_length": (INT64, False),
    },
    "text_corpus": {
        "text_id": (STRING, True),
        "text_style": (STRING, False),
        "text": (STRING, True),
        "text_length": (INT64, False),
        "abbreviated_text": (STRING, False),
        "abbreviated_text_length": (INT64, False),
    },
    "text2code_queries": {
        "query_id": (STRING, True),
        "query": (STRING, True),
        "split": (STRING, False),
        "subtask": (STRING, True),
        "query_type": (STRING, False),
        "sub_query_type": (STRING, False),
        "language_constraint": (STRING, False),
    },
    "code2code_queries": {
        "query_id": (STRING, True),
        "query": (STRING, True),
        "split": (STRING, False),
        "subtask": (STRING, True),
        "anchor_language": (STRING, False),
        "anchor_model": (STRING, False),
    },
    "code2text_queries": {
        # retrieval queries carry the code in "query", c2t_match instances in "code"
        "query_id": (STRING, True),
        "query": (STRING, False),
        "code": (STRING, False),
        "text_id": (STRING, False),
        "split": (STRING, False),
        "subtask": (STRING, True),
        "label": (INT64, False),
        "text_type": (STRING, False),
        "anchor_language": (STRING, False),
        "anchor_model": (STRING, False),
    },
}
for _family in FAMILIES.values():
    OFFICIAL_FIELDS[_family["qrels"]] = {
        "query_id": (STRING, True),
        "doc_id": (STRING, True),
        "relevance": (INT64, True),
    }
OFFICIAL_CONFIGS: tuple[str, ...] = (
    "code_corpus",
    "text_corpus",
    "text2code_queries",
    "text2code_qrels",
    "code2code_queries",
    "code2code_qrels",
    "code2text_queries",
    "code2text_qrels",
)
# every official record may carry meta; fields outside the schema are kept in "extra"
META_FIELD, EXTRA_FIELD = "meta", "extra"

CONFIG_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""What a subtask (= config) name may look like: a folder name on every disk, a Hub config."""
# A subtask config is a folder beside these in the built folder: one of these names would
# replace that config (or the card); compared casefolded, as a case-insensitive disk does.
RESERVED_CONFIG_NAMES: frozenset[str] = frozenset(
    name.casefold() for name in (*CORPUS_CONFIGS, *OFFICIAL_CONFIGS, "README.md")
)


CITATION = COREB_CITATION
DESCRIPTION = (
    "CoREB: text-to-code, code-to-text and code-to-code retrieval over execution-verified "
    "solutions in five languages, with graded qrels (relevance 2 = positive, 1 = hard negative)."
)
