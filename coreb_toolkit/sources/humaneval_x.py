"""HumanEval-X (THUDM/CodeGeeX): the 164 HumanEval problems in Python, C++, Java and Go, with
canonical solutions and unit-test programs, as unit-test-style execution candidates.

The files are read in place (``../shared/data/humaneval_x/humaneval_<lang>.jsonl.gz``).

Known defect of the data: Go/95's canonical solution iterates a map (random order in Go) and
stops after the second key, so it fails its own test in about one run in five; a label derived
from one execution of it is nondeterministic.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

LANGUAGES = ("python", "cpp", "java", "go")

# A statement that makes any solution fail, inserted as the first line of the function body
# (before the canonical body, so imports stay used and the code still compiles).
BREAK_STATEMENT = {
    "python": '    raise RuntimeError("deliberately broken")\n',
    "cpp": "    abort();\n",
    "java": '        if (true) throw new RuntimeException("deliberately broken");\n',
    "go": '    panic("deliberately broken")\n',
    "ruby": '  raise "deliberately broken"\n',
}


def read_rows(data_dir: str | Path, language: str) -> list[dict[str, Any]]:
    if language not in LANGUAGES:
        raise ValueError(f"HumanEval-X has no {language!r}; choose one of {LANGUAGES}")
    path = Path(data_dir) / f"humaneval_{language}.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"HumanEval-X file not found: {path}")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# Standard-library packages HumanEval-X's Go solutions and tests use, by the name they are
# referred to in code.
_GO_STD = {
    "bytes": "bytes", "fmt": "fmt", "hex": "encoding/hex", "math": "math", "md5": "crypto/md5",
    "rand": "math/rand", "reflect": "reflect", "regexp": "regexp", "sort": "sort",
    "strconv": "strconv", "strings": "strings", "time": "time", "unicode": "unicode",
    "utf8": "unicode/utf8",
}  # fmt: skip
_GO_IMPORT_BLOCK = re.compile(r"^import\s*(\([^)]*\)|\"[^\"]*\")\s*", re.M)
_GO_COMMENT = re.compile(r"//[^\n]*")


def _go_source(row: dict[str, Any], body: str) -> str:
    """The Go solution file with an import list that matches what solution and test use.

    HumanEval-X's Go prompts do not always import what the canonical solution uses (Go/17
    needs strings, Go/20 math and sort) or import what it does not (Go/27), and Go refuses both;
    its own harness repairs imports with goimports. This does the same for the standard
    library: it imports exactly the packages that the solution or its test refer to.
    """
    solution = _GO_IMPORT_BLOCK.sub("", row["prompt"], count=1) + body
    used_text = _GO_COMMENT.sub("", solution + "\n" + row["test"])
    test_imports = set(re.findall(r'"([^"]+)"', row["test_setup"]))
    paths = sorted(
        path for name, path in _GO_STD.items()
        if re.search(rf"\b{name}\.", used_text) and path not in test_imports
    )  # fmt: skip
    imports = "import (\n" + "".join(f'    "{p}"\n' for p in paths) + ")\n" if paths else ""
    return "package main\n\n" + imports + "\n" + solution


def _python_entry_point(row: dict[str, Any]) -> str:
    names = re.findall(r"^def (\w+)\(", row["declaration"], flags=re.M)
    if not names:
        raise ValueError(f"{row['task_id']}: no function declaration found")
    return names[-1]


def candidate(row: dict[str, Any], language: str, broken: bool = False) -> dict[str, Any]:
    """One unit-test candidate: the canonical solution (or a broken variant) and its test."""
    body = (BREAK_STATEMENT[language] if broken else "") + row["canonical_solution"]
    if language == "python":
        code = row["prompt"] + body
        test = row["test"] + f"\n\ncheck({_python_entry_point(row)})\n"
    elif language == "go":
        code = _go_source(row, body)
        test = row["test_setup"] + "\n" + row["test"]
    elif language == "cpp":
        # The prompt, plus the headers that only the declaration includes (<algorithm>,
        # <stdlib.h>): CPP/38's declaration itself is malformed (it holds half a body).
        extra = [
            line for line in row["declaration"].splitlines()
            if line.startswith("#include") and line not in row["prompt"]
        ]  # fmt: skip
        code = "".join(line + "\n" for line in extra) + row["prompt"] + body
        test = row["test"]
    else:  # java: the declaration carries the imports the solution needs
        code = row["declaration"] + body
        test = row["test"]
    suffix = "broken" if broken else "canonical"
    return {
        "id": f"{row['task_id']}/{suffix}".replace("/", "__"),
        "language": language,
        "code": code,
        "test_program": test,
        "test_style": "unittest",
        "meta": {"source": "humaneval_x", "task_id": row["task_id"], "variant": suffix},
    }


def candidates(data_dir: str | Path, language: str, broken: bool = False) -> list[dict[str, Any]]:
    return [candidate(row, language, broken) for row in read_rows(data_dir, language)]
