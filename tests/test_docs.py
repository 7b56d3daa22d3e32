"""docs/protocol.md stays true to the registry, and every section the code cites exists."""

from __future__ import annotations

import re
from pathlib import Path

from coreb_toolkit.vocabulary import MAIN_SCORE, SUBTASKS

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "protocol.md"


def _subtask_rows() -> dict[str, list[str]]:
    rows = {}
    for line in PROTOCOL.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"`(t2c|c2c|c2t)_[a-z_]+`", cells[0]):
            rows[cells[0].strip("`")] = cells
    return rows


def test_protocol_subtask_table_is_the_registry():
    rows = _subtask_rows()
    assert list(rows) == list(SUBTASKS)
    for name, (_, family, corpus, _, score) in rows.items():
        meta = SUBTASKS[name]
        assert family == meta.family, name
        assert corpus.split()[0].strip("`") == meta.corpus, name
        assert score.strip("`") == meta.main_score == MAIN_SCORE, name


def test_every_cited_protocol_section_exists():
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", PROTOCOL.read_text(), re.M))
    cited = set()
    for path in ROOT.rglob("*.py"):
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue  # .venv, .venv-ds3, caches
        for group in re.findall(r"\[protocol (§[^\]]+)\]", path.read_text(encoding="utf-8")):
            cited |= set(re.findall(r"§(\d+(?:\.\d+)?)", group))
    assert cited <= headings, sorted(cited - headings)


def test_readme_points_at_the_protocol_not_spec():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "SPEC" not in readme
    assert "docs/protocol.md" in readme
