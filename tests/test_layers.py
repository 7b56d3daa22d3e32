"""The house's promises about imports and room sizes (issue 14's "done when")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The chain imports run along: a module may import its own layer and the layers before it.
# The entry points coreb_dataset.py / qualcode_dataset.py belong to the builders; the one place
# they reach further is their build(), which hands model_cards' renderer to the builder.
LAYERS: tuple[tuple[str, int], ...] = (
    ("coreb_toolkit.vocabulary", 0),
    ("coreb_toolkit.owners", 0),
    ("coreb_toolkit.libraries", 0),
    ("coreb_toolkit.untrusted", 0),
    ("coreb_toolkit.hub_access", 0),
    ("coreb_toolkit.sources", 1),
    ("coreb_toolkit.sandbox", 2),
    ("coreb_toolkit.builders", 3),
    ("coreb_dataset", 3),
    ("qualcode_dataset", 3),
    ("coreb_toolkit.releases", 3),
    ("coreb_toolkit.quality", 3),
    ("eval_metrics", 4),
    ("coreb_toolkit.retrieval", 5),
    ("reranker", 5),
    ("coreb_toolkit.benchmark", 6),
    ("model_cards", 7),
    ("trainers", 7),
    ("coreb_toolkit.cli", 8),
)
ALLOWED_UPWARD = {("coreb_dataset", "model_cards.dataset_card"),
                  ("qualcode_dataset", "model_cards.dataset_card")}  # fmt: skip
MODEL_LIBRARIES = {"torch", "transformers", "sentence_transformers", "peft", "trl", "accelerate"}
NO_MODEL_LIBRARIES = ("coreb_toolkit.sources", "coreb_toolkit.sandbox", "coreb_toolkit.builders",
                      "coreb_dataset", "qualcode_dataset", "coreb_toolkit.quality", "eval_metrics",
                      "coreb_toolkit.vocabulary", "coreb_toolkit.owners", "coreb_toolkit.untrusted",
                      "coreb_toolkit.hub_access",
                      "coreb_toolkit.libraries")  # fmt: skip


def _layer(module: str) -> tuple[str | None, int | None]:
    for prefix, level in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix, level
    return None, None


def _library_files() -> list[tuple[Path, str]]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", "benchmarks", "examples", "demo") or rel.parts[0].startswith(
            "."
        ):
            continue
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        if _layer(module)[0] is not None:
            out.append((path, module))
    return out


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
    return found


def test_imports_run_one_way():
    wrong = []
    for path, module in _library_files():
        own, level = _layer(module)
        for line, target, names in _imports(path):
            theirs, their_level = _layer(target)
            where = f"{path.relative_to(ROOT)}:{line}"
            upward = their_level is not None and their_level > level
            if upward and (module, target) not in ALLOWED_UPWARD:
                wrong.append(f"{where}: {module} imports {target}, later in the chain")
            if theirs is not None and theirs != own:
                wrong += [f"{where}: private {target}.{n}" for n in names if n.startswith("_")]
            if own.startswith(NO_MODEL_LIBRARIES) and target.split(".")[0] in MODEL_LIBRARIES:
                wrong.append(f"{where}: {module} imports the model library {target}")
    assert wrong == []


# The entry points are what users load (load_dataset, the CLI): the package itself reads the
# builders they wrap, and the CLI is the one room that may import every other, them included.
ENTRY_POINTS = ("coreb_dataset", "qualcode_dataset")
MAY_IMPORT_ENTRY_POINTS = ("coreb_toolkit.cli", *ENTRY_POINTS)


def test_only_the_cli_imports_the_entry_points():
    wrong = []
    for path, module in _library_files():
        if _layer(module)[0] in MAY_IMPORT_ENTRY_POINTS:
            continue
        for line, target, _ in _imports(path):
            if target.split(".")[0] in ENTRY_POINTS:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}")
    assert wrong == []


def test_the_cli_is_the_last_room():
    assert LAYERS[-1][0] == "coreb_toolkit.cli"
    assert all(level < LAYERS[-1][1] for _, level in LAYERS[:-1])


@pytest.mark.parametrize("limit", [800])
def test_no_library_file_is_over_the_limit(limit):
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path, _ in _library_files()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit
    ]
    assert long == []
