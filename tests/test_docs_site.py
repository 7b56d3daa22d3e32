"""The documentation site: its Python examples run, its strict build catches what it promises to,
and its generated references say what the code says.

`make test` builds the site with ``mkdocs build --strict`` before pytest; here a copy of it with
a broken link and a reference to a name that does not exist must fail that build, naming both.

Every ```python block of the README and of ``docs/`` runs, page by page in one namespace, in a
folder that holds a built CoREB dataset named ``coreb`` (the tests' two-release fixture,
``tests/coreb_dataset/release.py``: ``release_v2603`` and ``release_v2602``). A block that
cannot run here is preceded by ``<!-- docs-test: skip REASON -->`` and is reported as skipped
with that reason; nothing else is left out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coreb_toolkit.vocabulary import SUBTASKS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
BLOCK = re.compile(
    r"(?:<!-- docs-test: skip (?P<skip>[^>]+?) -->\s*\n)?^(?P<indent>[ ]*)```python\n"
    r"(?P<code>.*?)^(?P=indent)```",
    re.M | re.S,
)
MKDOCS = Path(sys.executable).with_name("mkdocs")


def python_blocks(page: Path) -> list[tuple[int, str | None, str]]:
    """``(line, skip reason or None, code)`` of every ```python block of a page."""
    text = page.read_text(encoding="utf-8")
    out = []
    for match in BLOCK.finditer(text):
        indent = len(match.group("indent"))
        code = "".join(line[indent:] + "\n" for line in match.group("code").splitlines())
        out.append((text.count("\n", 0, match.start("code")), match.group("skip"), code))
    return out


def test_the_block_reader_sees_every_python_fence():
    fences = sum(p.read_text(encoding="utf-8").count("```python") for p in PAGES)
    assert fences == sum(len(python_blocks(p)) for p in PAGES) > 10


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with ``coreb``, the fixture releases built as `coreb build` builds them."""
    import coreb_dataset
    from tests.coreb_dataset.release import write_release

    root = tmp_path_factory.mktemp("docs")
    coreb_dataset.build(write_release(root / "release"), root / "coreb", progress=False)
    return root


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_python_examples_run(page, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    namespace: dict = {"__name__": "__docs__"}
    skipped = []
    for line, skip, code in python_blocks(page):
        if skip:
            skipped.append(f"line {line}: {skip}")
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as err:
            raise AssertionError(
                f"{page.relative_to(ROOT)}, block at line {line}: {err!r}"
            ) from err
    if skipped and len(skipped) == len(python_blocks(page)):
        pytest.skip("; ".join(skipped))


def _site_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    copy.mkdir(parents=True)
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copytree(DOCS, copy / "docs")
    return copy


def _build(project: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(project / "site")],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.skipif(not MKDOCS.exists(), reason="mkdocs is not installed (pip install -e .[docs])")
def test_the_strict_build_fails_on_a_broken_link_and_a_vanished_name(tmp_path):
    project = _site_copy(tmp_path)
    page = project / "docs" / "guides" / "scoring.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nSee [the metric](no-such-page.md).\n", "utf-8"
    )
    broken = _build(project)
    assert broken.returncode != 0
    assert "no-such-page.md" in broken.stdout + broken.stderr

    project = _site_copy(tmp_path / "again")
    api = project / "docs" / "reference" / "api" / "eval_metrics.md"
    api.write_text(api.read_text(encoding="utf-8") + "\n::: eval_metrics.no_such_function\n")
    vanished = _build(project)
    assert vanished.returncode != 0
    assert "eval_metrics.no_such_function" in vanished.stdout + vanished.stderr


def test_the_generated_subtask_table_has_every_registered_subtask():
    """The protocol's own count (34: 18 t2c, 3 c2c, 13 c2t), read from its text, against the
    rows the site's generated table holds."""
    from coreb_toolkit.cli.reference import subtask_reference

    protocol = (DOCS / "protocol.md").read_text(encoding="utf-8")
    total, t2c, c2c, c2t = map(
        int,
        re.search(r"holds (\d+) subtasks: (\d+) t2c, (\d+) c2c and (\d+)\s+c2t", protocol).groups(),
    )
    rows = re.findall(r"^\| `((t2c|c2c|c2t)_[a-z_]+)` \|", subtask_reference(), re.M)
    assert [name for name, _ in rows] == list(SUBTASKS)
    families = [family for _, family in rows]
    assert (len(rows), families.count("t2c"), families.count("c2c"), families.count("c2t")) == (
        total, t2c, c2c, c2t
    )  # fmt: skip
    assert "<!-- coreb:subtasks -->" in protocol


def test_the_cli_reference_documents_every_option_of_every_command():
    """Each option a command's parser takes appears on the page with its help text."""
    from coreb_toolkit.cli.main import COMMANDS, command_parser, leaves
    from coreb_toolkit.cli.reference import cli_reference

    page = cli_reference()
    for name, _, _ in COMMANDS:
        assert f"## coreb {name}\n" in page
        for leaf in leaves(command_parser(name)):
            for action in leaf._actions:
                flags = action.option_strings
                if flags and "--help" not in flags and flags != ["--config"]:
                    assert f"`{flags[0]}" in page, (leaf.prog, action.dest)
    # a hand-picked flag, its help and its default, as `coreb evaluate --help` prints them
    evaluate = page.split("## coreb evaluate\n", 1)[1].split("\n## coreb ", 1)[0]
    assert "| `--top-k TOP_K` | first-stage documents kept per query | `1000` |" in evaluate


def test_the_cli_reference_escapes_what_it_shows():
    from coreb_toolkit.cli.reference import _cell, _code

    assert _cell("a | b <script>") == "a \\| b &lt;script&gt;"
    assert _code("x|y") == "`x\\|y`"
    assert _code("`tick`") == "`` `tick` ``"
