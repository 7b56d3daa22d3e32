"""MBXP (amazon-science/mbxp-exec-eval): MBPP's problems in several languages; here the Ruby
set (``mbrbp``), whose canonical solutions come with unit-test programs.

Read in place from ``../shared/data/mbxp/mbxp/mbrbp_release_v1.2.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sources.humaneval_x import BREAK_STATEMENT

FILES = {"ruby": "mbrbp_release_v1.2.jsonl"}


def candidates(data_dir: str | Path, language: str = "ruby", broken: bool = False) -> list[dict]:
    """Unit-test candidates for every problem that has a canonical solution."""
    if language not in FILES:
        raise ValueError(f"only {sorted(FILES)} are adapted from MBXP so far, got {language!r}")
    path = Path(data_dir) / "mbxp" / FILES[language]
    if not path.is_file():
        raise FileNotFoundError(f"MBXP file not found: {path}")
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if not row.get("canonical_solution"):
                continue
            body = (BREAK_STATEMENT[language] if broken else "") + row["canonical_solution"]
            suffix = "broken" if broken else "canonical"
            out.append(
                {
                    "id": f"{row['task_id']}__{suffix}".replace("/", "__"),
                    "language": language,
                    "code": row["prompt"] + body,
                    "test_program": row["test"],
                    "test_style": "unittest",
                    "meta": {"source": "mbxp", "task_id": row["task_id"], "variant": suffix},
                }
            )
    return out
