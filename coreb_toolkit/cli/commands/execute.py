"""``coreb execute``: run untrusted candidates in the sandbox and stream verdicts to JSONL."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from coreb_toolkit.sandbox.runner import MAX_CODE_BYTES

NAME = "execute"
HELP = "run code candidates against their tests in the sandbox (results streamed to JSONL)"
DESCRIPTION = """\
Run each candidate (Python, C++, Java, Go or Ruby) against its tests inside a bubblewrap
sandbox (no network, nothing writable but a private tmpfs, no secrets, cgroup limits on
memory, processes and CPU), compiling once per candidate. Results are appended to --out as
they complete; re-running the same command resumes where an interrupted run stopped (Ctrl-C
or SIGTERM stop it cleanly; after a SIGKILL the next run removes what it left). --out is
locked: a second run on the same file stops with an error. A sandbox that cannot start is an
error of the run, never a verdict.

input lines (JSONL):
  {"id": "c1", "language": "python", "code": "...",
   "tests": [{"input": "1 2\\n", "output": "3\\n"}]}
  optional: "test_style" (stdio | functional | unittest), "fn_name" (functional),
  "test_program" (unittest), "time_limit_s", "memory_mb"

output lines: id, passed, pass_rate, test_passed, test_total, verdicts (pass, wrong_answer,
  runtime_error, time_limit, memory_limit, process_limit, output_limit, compile_error),
  per-test wall time, CPU time and peak memory of the whole process tree, compile time.

example:
  coreb execute candidates.jsonl --out results.jsonl --time-limit 2 --memory-mb 256"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("candidates", type=Path, help="candidates JSONL file")
    parser.add_argument("--out", type=Path, required=True, help="results JSONL (appended)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="CPU seconds per test")
    parser.add_argument(
        "--wall-limit", type=float, help="wall seconds per test (default: 2x --time-limit)"
    )
    parser.add_argument("--memory-mb", type=int, default=512, help="memory per test (512)")
    parser.add_argument("--max-processes", type=int, default=64, help="processes+threads (64)")
    parser.add_argument(
        "--output-limit", type=int, default=16 * 1024 * 1024, help="stdout bytes (16 MiB)"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs per test; >1 reports median, min, max"
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="parallel candidates (default: 2 per core; 1 for wall-clock timing)",
    )
    parser.add_argument(
        "--max-code-bytes",
        type=int,
        default=MAX_CODE_BYTES,
        help="largest source (UTF-8 bytes) built or parsed; bigger ones get compile_error "
        f"unparsed ({MAX_CODE_BYTES:,})",
    )
    parser.add_argument(
        "--work-root",
        type=Path,
        help="folder for the build folders (default: TMPDIR, or /tmp when TMPDIR is private)",
    )
    parser.add_argument(
        "--fresh-sandbox-per-run",
        action="store_true",
        help="start a new sandbox for every test run instead of one per candidate whose tests "
        "each run as a fresh process (slower; the same isolation and verdicts)",
    )
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="run WITHOUT the bubblewrap sandbox (only for trusted code; recorded in results)",
    )


def run(args: argparse.Namespace) -> int:
    from coreb_toolkit.sandbox import ExecutionConfig, Limits, execute_file

    limits = Limits(
        wall_time_s=args.wall_limit or max(2 * args.time_limit, args.time_limit + 1),
        cpu_time_s=args.time_limit,
        memory_mb=args.memory_mb,
        max_processes=args.max_processes,
        output_bytes=args.output_limit,
    )
    config = ExecutionConfig(
        limits=limits,
        isolation="none" if args.no_isolation else "bubblewrap",
        repeats=args.repeats,
        sandbox_scope="run" if args.fresh_sandbox_per_run else "candidate",
        workers=args.workers,
        max_code_bytes=args.max_code_bytes,
        work_root=str(args.work_root) if args.work_root is not None else None,
    )
    counts = execute_file(args.candidates, args.out, config)
    verdicts: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    with open(args.out, encoding="utf-8") as handle:
        for line in handle:
            result = json.loads(line)
            verdicts.update(result["verdicts"])
            total[result["language"]] += 1
            passed[result["language"]] += result["passed"]
    print(
        f"{counts['executed']} executed, {counts['skipped']} already in {args.out} "
        f"(resumed), {counts['total']} candidates"
    )
    for language in sorted(total):
        print(f"  {language:<7} {passed[language]:>6} / {total[language]:<6} candidates passed")
    print("  verdicts: " + ", ".join(f"{v}={n}" for v, n in verdicts.most_common()))
    return 0
