"""A tiny CoREB release in the official layout, written by the tests, with hand-made expectations.

Two releases:

* ``release_v2603`` ships its qrels (used as given). Problems P1, P2.
* ``release_v2602`` ships none: its qrels are derived (v2 scheme) from the execution metadata.
  Problems P8, P9. Its code corpus is Parquet, its text corpus a Hub-style shard.

``meta`` arrives as a dict, a JSON string and a Python-literal string.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

V3, V2 = "release_v2603", "release_v2602"


def _code(cid, pid, lang, model, passed, encoding="dict"):
    meta = {
        "source_problem_id": pid,
        "solution_key": f"{model}_{lang}",
        "passed": passed,
        "pass_rate": 1.0 if passed else 0.0,
        "test_passed": 3 if passed else 0,
        "test_total": 3,
    }
    if encoding == "json":
        meta = json.dumps(meta)
    elif encoding == "literal":
        meta = repr(meta)  # {'passed': True, ...}: a Python literal, not JSON
    code = f"// {cid} solves {pid} in {lang}\n"
    return {
        "code_id": cid,
        "code": code,
        "language": lang,
        "model": model,
        "code_length": len(code),
        "meta": meta,
    }


def _text(tid, pid, style, abbreviated=True):
    text = f"Full statement of {pid} ({style}, {tid})."
    row = {
        "text_id": tid,
        "text_style": style,
        "text": text,
        "text_length": len(text),
        "abbreviated_text": f"Short {pid} ({style})" if abbreviated else None,
        "abbreviated_text_length": 20 if abbreviated else None,
        "meta": {"source_problem_id": pid},
    }
    return row


def c3(n):
    return f"code_v202603_{n:05d}"


def t3(n):
    return f"text_v202603_{n:05d}"


def c2(n):
    return f"code_v202602_{n:05d}"


def t2(n):
    return f"text_v202602_{n:05d}"


V3_CODE = [
    _code(c3(1), "P1", "python", "model-a", True),
    _code(c3(2), "P1", "java", "model-a", True, "json"),
    _code(c3(3), "P1", "python", "model-b", False, "literal"),
    _code(c3(4), "P1", "go", "model-a", False),
    _code(c3(5), "P2", "python", "model-a", True),
    _code(c3(6), "P2", "ruby", "model-a", True),
]
V3_TEXT = [
    _text(t3(1), "P1", "original"),
    _text(t3(2), "P1", "noise", abbreviated=False),
    _text(t3(3), "P2", "original"),
    _text(t3(4), "P2", "noise"),
]


def _t2c(qid, subtask, pid, constraint, query, meta_encoding="dict"):
    meta = {"source_problem_id": pid}
    if meta_encoding == "json":
        meta = json.dumps(meta)
    elif meta_encoding == "literal":
        meta = repr(meta)
    return {
        "query_id": qid,
        "query": query,
        "split": "text2code",
        "subtask": subtask,
        "query_type": "language_agnostic" if constraint == "none" else "language_specific",
        "sub_query_type": "full_description",
        "language_constraint": constraint,
        "meta": meta,
    }


def _c2c(qid, anchor, pid, lang, model, targets=None):
    meta = {"source_problem_id": pid, "anchor_code_id": anchor}
    if targets is not None:
        meta["target_languages"] = targets
        meta["num_target_solutions"] = len(targets)
    return {
        "query_id": qid,
        "query": f"anchor code {anchor}",
        "split": "code2code",
        "subtask": "c2c_cross_lang",
        "anchor_language": lang,
        "anchor_model": model,
        "meta": meta,
    }


def _c2t(qid, subtask, anchor, pid, lang="python"):
    return {
        "query_id": qid,
        "query": f"anchor code {anchor}",
        "split": "code2text",
        "subtask": subtask,
        "anchor_language": lang,
        "anchor_model": "model-a",
        "meta": {
            "source_problem_id": pid,
            "anchor_code_id": anchor,
            "task_type": "description_retrieval",
        },
    }


def _match(qid, anchor, text_id, label, pid):
    return {
        "query_id": qid,
        "code": f"anchor code {anchor}",
        "text_id": text_id,
        "split": "code2text",
        "subtask": "c2t_match",
        "label": label,
        "text_type": "full",
        "anchor_language": "python",
        "anchor_model": "model-a",
        "meta": json.dumps(
            {
                "source_problem_id": pid,
                "anchor_code_id": anchor,
                "pair_type": "positive" if label else "negative",
            }
        ),
    }


V3_T2C = [
    _t2c("q_t2c_full_retro_any_0001", "t2c_full_retro_any", "P1", "none", "Solve P1 fully."),
    _t2c(
        "q_t2c_canonical_retro_python_0001",
        "t2c_canonical_retro_python",
        "P1",
        "python",
        "P1 short.",
        "json",
    ),
    _t2c("q_t2c_search_go_0001", "t2c_search_go", "P2", "go", "p2 search words", "literal"),
    # a subtask outside the paper's patterns: kept as its own config, with a warning
    _t2c("q_t2c_weird_variant_0001", "t2c_weird_variant", "P2", "none", "odd one"),
]
V3_C2C = [_c2c("q_c2c_cross_lang_0001", c3(1), "P1", "python", "model-a", ["java"])]
V3_C2T = [
    _c2t("q_c2t_canonical_retro_any_0001", "c2t_canonical_retro_any", c3(5), "P2"),
    _c2t("q_c2t_full_retro_java_0001", "c2t_full_retro_java", c3(2), "P1", "java"),
    _match("q_c2t_match_0001", c3(1), t3(1), 1, "P1"),
    _match("q_c2t_match_0002", c3(5), t3(4), 0, "P2"),
]
V3_QRELS = {
    "text2code_qrels": [
        ("q_t2c_full_retro_any_0001", c3(1), 2),
        ("q_t2c_full_retro_any_0001", c3(2), 2),
        ("q_t2c_full_retro_any_0001", c3(3), 1),
        ("q_t2c_full_retro_any_0001", c3(4), 1),
        ("q_t2c_canonical_retro_python_0001", c3(1), 2),
        ("q_t2c_canonical_retro_python_0001", c3(3), 1),
        ("q_t2c_search_go_0001", c3(5), 1),
        ("q_t2c_weird_variant_0001", c3(6), 2),
    ],
    "code2code_qrels": [
        ("q_c2c_cross_lang_0001", c3(2), 2),
        ("q_c2c_cross_lang_0001", c3(3), 1),
        ("q_c2c_cross_lang_0001", c3(4), 1),
    ],
    "code2text_qrels": [
        ("q_c2t_canonical_retro_any_0001", t3(3), 2),
        ("q_c2t_canonical_retro_any_0001", t3(4), 1),
        ("q_c2t_full_retro_java_0001", t3(1), 2),
        ("q_c2t_full_retro_java_0001", t3(2), 1),
        ("q_c2t_match_0001", t3(1), 2),
        ("q_c2t_match_0002", t3(4), 1),
    ],
}

V2_CODE = [
    _code(c2(1), "P9", "python", "model-a", True),
    _code(c2(2), "P9", "java", "model-a", True, "literal"),
    _code(c2(3), "P9", "cpp", "model-a", False),
    _code(c2(4), "P9", "python", "model-b", True),
    _code(c2(5), "P8", "python", "model-a", True),
    _code(c2(6), "P8", "go", "model-a", True),
]
V2_TEXT = [
    _text(t2(1), "P9", "original"),
    _text(t2(2), "P9", "noise"),
    _text(t2(3), "P8", "noise"),
    _text(t2(4), "P8", "original"),
]
V2_T2C = [
    _t2c("q_t2c_full_retro_python_0101", "t2c_full_retro_python", "P9", "python", "P9 py"),
    _t2c("q_t2c_full_retro_ruby_0101", "t2c_full_retro_ruby", "P9", "ruby", "P9 rb"),
    _t2c("q_t2c_full_retro_go_0102", "t2c_full_retro_go", "P8", "go", "P8 go", "literal"),
]
V2_C2C = [_c2c("q_c2c_cross_lang_0101", c2(1), "P9", "python", "model-a")]
V2_C2T = [
    _c2t("q_c2t_full_retro_any_0101", "c2t_full_retro_any", c2(1), "P9"),
    _match("q_c2t_match_0101", c2(5), t2(4), 0, "P8"),
]


def drawn(qid: str, pool: list[str], k: int) -> list[str]:
    """The documented draw of ``QrelsOptions.max_hard_negatives``, written out here: the ``k``
    documents of ``pool`` with the smallest sha256 of ``"{qid}\\0{doc id}"``."""
    return sorted(pool, key=lambda d: hashlib.sha256(f"{qid}\0{d}".encode()).hexdigest())[:k]


# What every subtask config must hold: {release: {query_id: (positives, hard negatives, excluded)}}
EXPECTED: dict[str, dict[str, dict[str, tuple[list[str], list[str], list[str]]]]] = {
    "t2c_full_retro_any": {V3: {"q_t2c_full_retro_any_0001": ([c3(1), c3(2)], [c3(3), c3(4)], [])}},
    "t2c_canonical_retro_python": {
        V3: {"q_t2c_canonical_retro_python_0001": ([c3(1)], [c3(3)], [])}
    },
    "t2c_search_go": {V3: {"q_t2c_search_go_0001": ([], [c3(5)], [])}},
    "t2c_weird_variant": {V3: {"q_t2c_weird_variant_0001": ([c3(6)], [], [])}},
    # derived, v2 (min 3, max 3 hard negatives): passed python solutions of P9; the failed cpp
    # one, then (fewer than 3) the correct one outside the constraint, java
    "t2c_full_retro_python": {
        V2: {"q_t2c_full_retro_python_0101": ([c2(1), c2(4)], [c2(2), c2(3)], [])}
    },
    # no ruby solution: no positive; the failed cpp one, then 2 of the 3 correct ones, drawn
    "t2c_full_retro_ruby": {
        V2: {
            "q_t2c_full_retro_ruby_0101": (
                [],
                sorted([c2(3), *drawn("q_t2c_full_retro_ruby_0101", [c2(1), c2(2), c2(4)], 2)]),
                [],
            )
        }
    },
    # P8 has no failed solution: the wrong-language correct one fills in
    "t2c_full_retro_go": {V2: {"q_t2c_full_retro_go_0102": ([c2(6)], [c2(5)], [])}},
    "c2c_cross_lang": {
        V3: {"q_c2c_cross_lang_0001": ([c3(2)], [c3(3), c3(4)], [c3(1)])},
        # derived: same model (a), other language, passed -> java; failed cpp (another
        # language), then the correct python one of model b; anchor excluded
        V2: {"q_c2c_cross_lang_0101": ([c2(2)], [c2(3), c2(4)], [c2(1)])},
    },
    "c2t_canonical_retro_any": {V3: {"q_c2t_canonical_retro_any_0001": ([t3(3)], [t3(4)], [])}},
    "c2t_full_retro_java": {V3: {"q_c2t_full_retro_java_0001": ([t3(1)], [t3(2)], [])}},
    # derived: the original is positive; P9's one noise text, then other problems' noise fills
    "c2t_full_retro_any": {V2: {"q_c2t_full_retro_any_0101": ([t2(1)], [t2(2), t2(3)], [])}},
    "c2t_match": {
        V3: {
            "q_c2t_match_0001": ([t3(1)], [], []),
            "q_c2t_match_0002": ([], [t3(4)], []),
        },
        V2: {"q_c2t_match_0101": ([], [t2(4)], [])},
    },
}


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _parquet(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Hub datasets store meta as a string column
    rows = [
        {**r, "meta": r["meta"] if isinstance(r["meta"], str) else json.dumps(r["meta"])}
        for r in rows
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)


def write_release(root: Path) -> Path:
    """Write both releases under ``root`` in the official layout; return ``root``."""
    _jsonl(root / "code_corpus" / f"{V3}.jsonl", V3_CODE)
    _jsonl(root / "text_corpus" / f"{V3}.jsonl", V3_TEXT)
    _jsonl(root / "text2code_queries" / f"{V3}.jsonl", V3_T2C)
    _jsonl(root / "code2code_queries" / f"{V3}.jsonl", V3_C2C)
    _jsonl(root / "code2text_queries" / f"{V3}.jsonl", V3_C2T)
    for config, triples in V3_QRELS.items():
        _jsonl(
            root / config / f"{V3}.jsonl",
            [{"query_id": q, "doc_id": d, "relevance": r} for q, d, r in triples],
        )
    _parquet(root / "code_corpus" / f"{V2}.parquet", V2_CODE)
    _parquet(root / "text_corpus" / f"{V2}-00000-of-00001.parquet", V2_TEXT)
    _jsonl(root / "text2code_queries" / f"{V2}.jsonl", V2_T2C)
    _jsonl(root / "code2code_queries" / f"{V2}.jsonl", V2_C2C)
    _jsonl(root / "code2text_queries" / f"{V2}.jsonl", V2_C2T)
    return root
