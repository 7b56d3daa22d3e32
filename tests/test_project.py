"""Project layout promises: requested top-level names, metadata in one place, CI = README."""

from __future__ import annotations

import configparser

import tomllib


def test_requested_top_level_names_exist(repo_root):
    for name in ("coreb_dataset.py", "qualcode_dataset.py", "reranker", "trainers",
                 "eval_metrics", "model_cards", "tests", "setup.cfg", "README.md"):  # fmt: skip
        assert (repo_root / name).exists(), name


def test_metadata_lives_in_pyproject_only(repo_root):
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    assert project["name"] and project["dependencies"]
    extras = project["optional-dependencies"]
    # transformers is a base dependency since the CLI's parser is its HfArgumentParser (issue 14:
    # one config dataclass per command); it is pure Python and pulls no torch. What pulls torch
    # stays in extras.
    heavy = {"torch", "sentence-transformers", "trl", "peft", "accelerate"}
    base = {dep.split(">")[0].split("=")[0].split("[")[0] for dep in project["dependencies"]}
    assert not base & heavy, "heavy dependencies belong in extras"
    assert {"models", "train", "dev"} <= set(extras)
    cfg = configparser.ConfigParser()
    cfg.read(repo_root / "setup.cfg")
    assert not {"metadata", "options"} & set(cfg.sections())


def test_ci_runs_the_readme_test_command(repo_root):
    readme = (repo_root / "README.md").read_text()
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    commands = [c for c in commands if c]
    assert commands == ["make demo", "make test"]
    ci = (repo_root / ".ci" / "run").read_text()
    assert "make test" in ci


def test_eval_metrics_does_not_import_torch(repo_root):
    import subprocess
    import sys

    code = "import sys, eval_metrics, eval_metrics.significance; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
