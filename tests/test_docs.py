"""Every protocol section the code cites exists, and the README points at the protocol.

(The protocol's subtask table is generated from the registry by the documentation site:
tests/test_docs_site.py.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "protocol.md"


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


def test_the_readme_is_a_page():
    """Issue 29: a README a newcomer reads in five minutes, the rest on the site."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_every_readme_link_to_the_docs_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert targets and [t for t in targets if not (ROOT / t).is_file()] == []
