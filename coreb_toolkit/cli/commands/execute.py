"""``coreb execute``: run untrusted candidates in the sandbox and stream verdicts to JSONL."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from coreb_toolkit.cli.parsing import Command
from coreb_toolkit.sandbox.runner import MAX_CODE_BYTES

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


@dataclass
class ExecuteArguments:
    """``coreb execute CANDIDATES --out FILE``: the limits of every test run and the runner."""

    candidates: Path = field(metadata={"positional": True, "help": "candidates JSONL file"})
    out: Path = field(metadata={"help": "results JSONL (appended)"})
    time_limit: float = field(default=10.0, metadata={"help": "CPU seconds per test"})
    wall_limit: float | None = field(
        default=None, metadata={"help": "wall seconds per test (default: 2x --time-limit)"}
    )
    memory_mb: int = field(default=512, metadata={"help": "memory per test (MB)"})
    max_processes: int = field(default=64, metadata={"help": "processes+threads per test"})
    output_limit: int = field(default=16 * 1024 * 1024, metadata={"help": "stdout bytes"})
    repeats: int = field(default=1, metadata={"help": "runs per test; >1 reports median, min, max"})
    workers: int | None = field(
        default=None,
        metadata={"help": "parallel candidates (default: 2 per core; 1 for wall-clock timing)"},
    )
    max_code_bytes: int = field(
        default=MAX_CODE_BYTES,
        metadata={
            "help": "largest source (UTF-8 bytes) built or parsed; bigger ones get compile_error "
            "unparsed"
        },
    )
    work_root: Path | None = field(
        default=None,
        metadata={
            "help": "folder for the build folders (default: TMPDIR, or /tmp when TMPDIR is private)"
        },
    )
    fresh_sandbox_per_run: bool = field(
        default=False,
        metadata={
            "help": "start a new sandbox for every test run instead of one per candidate whose "
            "tests each run as a fresh process (slower; the same isolation and verdicts)"
        },
    )
    no_isolation: bool = field(
        default=False,
        metadata={
            "help": "run WITHOUT the bubblewrap sandbox (only for trusted code; recorded in "
            "results)"
        },
    )

    def __post_init__(self) -> None:
        self.candidates, self.out = Path(self.candidates), Path(self.out)


def run(args: ExecuteArguments) -> int:
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


COMMANDS = (
    Command(
        name="execute",
        help="run code candidates against their tests in the sandbox (results to JSONL)",
        description=DESCRIPTION,
        arguments=(ExecuteArguments,),
        run=run,
        mode="`coreb execute`",
    ),
)
