"""Throughput and overhead of the sandbox, against a typical unsandboxed harness.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_sandbox.py                  # all 164 problems per language
    .venv/bin/python benchmarks/bench_sandbox.py --per-language 20 # quicker

1. Throughput (candidates per second) on HumanEval-X's canonical solutions in Python, C++,
   Java and Go, plus MBXP's Ruby ones (the fifth language), against a baseline harness that does
   what common harnesses (LiveCodeBench, evaluate's code_eval, CodeGeeX) do: a fresh temporary
   directory per candidate, the plain toolchain commands (``javac``, ``g++ -O2``, ``go test
   -c``), then one unsandboxed process per test through ``subprocess.run`` with a timeout, the
   same number of parallel workers, and a warm, shared Go build cache (as a developer's
   ``~/.cache/go-build`` would be). Target: sandboxed throughput at least the baseline's.
2. Overhead of the sandbox itself: the same already-built test program run bare
   (``subprocess.run``) and sandboxed (bubblewrap, unprivileged user, cgroups, rlimits),
   interleaved, median per run. Sandboxed as the executor runs a candidate's tests: in one
   session per candidate (``SandboxSession.run``; its start-up, paid once per candidate, is
   reported apart), and, for comparison, in a fresh sandbox per run (``run_command``,
   ``sandbox_scope="run"``). Target: under 1.5x.

Both are ratios measured in the same run. Results: stdout and ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from coreb_toolkit.sandbox import ExecutionConfig, Executor, Limits, run_command  # noqa: E402
from coreb_toolkit.sandbox.harness import program_source  # noqa: E402
from coreb_toolkit.sandbox.isolation import SandboxSession, give_to_sandbox, zygote_binary  # noqa: E402
from coreb_toolkit.sandbox.languages import get_language  # noqa: E402
from coreb_toolkit.sources import humaneval_x, mbxp  # noqa: E402

DATA = Path(os.environ.get("COREB_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"
LIMITS = Limits(wall_time_s=20, cpu_time_s=10, memory_mb=512)


def load(per_language: int) -> dict[str, list[dict]]:
    sets = {lang: humaneval_x.candidates(DATA / "humaneval_x", lang)[:per_language]
            for lang in humaneval_x.LANGUAGES}  # fmt: skip
    sets["ruby"] = mbxp.candidates(DATA / "mbxp", "ruby")[:per_language]
    return sets


def _write_sources(cand: dict, app: Path) -> tuple[tuple, tuple]:
    lang = get_language(cand["language"])
    if lang.test_source is not None:
        (app / lang.test_source).write_text(
            lang.merge_unit_test(cand["code"], cand["test_program"])
        )
        return lang.test_compile, lang.test_run
    (app / lang.source).write_text(
        program_source(lang, cand["code"], "unittest", None, cand["test_program"])
    )
    return lang.compile, lang.run_argv(LIMITS.memory_mb)


def _host_argv(argv: tuple, app: Path) -> list[str]:
    return [str(app) + a[4:] if a == "/app" or a.startswith("/app/") else a for a in argv]


# What common harnesses run (CodeGeeX's HumanEval-X harness, LiveCodeBench, code_eval): the
# plain toolchain commands, no tuned flags, no sandbox.
BASELINE_COMMANDS = {
    "python": (None, ("python3", "main.py")),
    "cpp": (("g++", "-std=c++17", "-O2", "-o", "main", "main.cpp", "-lcrypto"), ("./main",)),
    "java": (("javac", "Main.java"), ("java", "-cp", ".", "Main")),
    "go": (("go", "test", "-c", "-o", "main.test"), ("./main.test",)),
    "ruby": (None, ("ruby", "-rset", "main.rb")),
}


class Baseline:
    """The common unsandboxed harness: temp dir, compile, one subprocess per test."""

    def __init__(self) -> None:
        self.gocache = Path(tempfile.mkdtemp(prefix="bench-gocache-"))

    def run(self, cand: dict) -> bool:
        lang = get_language(cand["language"])
        build, run = BASELINE_COMMANDS[lang.name]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", **lang.env}
        if "GOCACHE" in env:
            env["GOCACHE"] = str(self.gocache)  # shared and warm, like ~/.cache/go-build
        with tempfile.TemporaryDirectory(prefix="bench-baseline-") as tmp:
            app = Path(tmp)
            _write_sources(cand, app)
            if build is not None:
                done = subprocess.run(build, cwd=app, env=env, capture_output=True,
                                      timeout=60, check=False)  # fmt: skip
                if done.returncode != 0:
                    return False
            done = subprocess.run(run, cwd=app, env=env, capture_output=True,
                                  timeout=LIMITS.wall_time_s, check=False)  # fmt: skip
            return done.returncode == 0


def throughput(
    sets: dict[str, list[dict]], workers: int | None, baseline_workers: int
) -> dict[str, dict]:
    out = {}
    executor = Executor(ExecutionConfig(limits=LIMITS, workers=workers))
    baseline = Baseline()
    # Warm both Go caches outside the timing (the sandbox warms its own once per executor).
    for name in ("go", "java"):
        executor._warm_cache(get_language(name))
    baseline.run(sets["go"][0])
    for lang, cands in sets.items():
        row = {"candidates": len(cands)}
        for name in ("baseline", "sandbox"):  # baseline first: it warms the page cache
            start = time.perf_counter()
            if name == "sandbox":
                passed = sum(r["passed"] for r in executor.run_many(cands))
            else:
                with ThreadPoolExecutor(baseline_workers) as pool:
                    passed = sum(pool.map(baseline.run, cands))
            seconds = time.perf_counter() - start
            row[name] = {"seconds": seconds, "per_s": len(cands) / seconds, "passed": passed}
        row["ratio"] = row["sandbox"]["per_s"] / row["baseline"]["per_s"]
        out[lang] = row
        print(
            f"  {lang:<7} {len(cands):>4} cands  baseline {row['baseline']['per_s']:6.2f}/s "
            f"({row['baseline']['passed']} pass)  sandbox {row['sandbox']['per_s']:6.2f}/s "
            f"({row['sandbox']['passed']} pass)  throughput ratio {row['ratio']:.2f}x",
            flush=True,
        )
    shutil.rmtree(baseline.gocache, ignore_errors=True)
    return out


def overhead(sets: dict[str, list[dict]], programs: int, repeats: int) -> dict[str, dict]:
    """Bare vs sandboxed runs of the same built test programs, interleaved.

    Sandboxed two ways: in one session per program (what the executor does for every test of a
    candidate: ``SandboxSession.run``; the session's start-up is timed apart) and in a fresh
    sandbox per run (``run_command``, the executor's ``sandbox_scope="run"``).
    """
    out = {}
    gocache = Path(tempfile.mkdtemp(prefix="bench-gocache-"))
    zygote = zygote_binary()
    if zygote is None:
        raise SystemExit(
            "the resident runner (coreb_toolkit/sandbox/zygote.c) did not build: see the log"
        )
    for lang_name, cands in sets.items():
        lang = get_language(lang_name)
        times: dict[str, list[float]] = {"bare": [], "session": [], "fresh": [], "start": []}
        for cand in cands[:programs]:
            with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
                root = Path(tmp)
                root.chmod(0o711)
                app = root / "app"
                app.mkdir()
                _, run = _write_sources(cand, app)
                env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", **lang.env}
                if "GOCACHE" in env:
                    env["GOCACHE"] = str(gocache)
                plain_build = BASELINE_COMMANDS[lang_name][0]
                if lang.test_source is not None:
                    plain_build = lang.test_compile
                if plain_build is not None:
                    subprocess.run(plain_build, cwd=app, env=env, check=True, capture_output=True)
                give_to_sandbox(app)
                start = time.perf_counter()
                session = SandboxSession(
                    run,
                    zygote=zygote,
                    app_dir=app,
                    limits=LIMITS,
                    env=lang.env,
                    memory_overhead_mb=lang.memory_overhead_mb,
                )
                times["start"].append(time.perf_counter() - start)
                with session:
                    for _ in range(repeats):
                        start = time.perf_counter()
                        subprocess.run(_host_argv(run, app), cwd=app, env=env, check=True,
                                       capture_output=True)  # fmt: skip
                        times["bare"].append(time.perf_counter() - start)
                        start = time.perf_counter()
                        outcome = session.run(None, root / "o", root / "e")
                        times["session"].append(time.perf_counter() - start)
                        assert outcome.exit_code == 0, (root / "e").read_text()
                        start = time.perf_counter()
                        outcome = run_command(
                            run, app_dir=app, limits=LIMITS, stdin_path=None,
                            stdout_path=root / "o", stderr_path=root / "e", env=lang.env,
                            memory_overhead_mb=lang.memory_overhead_mb,
                        )  # fmt: skip
                        times["fresh"].append(time.perf_counter() - start)
                        assert outcome.exit_code == 0, (root / "e").read_text()
                    assert session.starts == 1
        med = {k: statistics.median(v) for k, v in times.items()}
        bare = med["bare"]
        out[lang_name] = {
            "runs": len(times["bare"]),
            "bare_s": bare,
            "sandboxed_s": med["session"],
            "ratio": med["session"] / bare,
            "added_ms": 1000 * (med["session"] - bare),
            "session_start_s": med["start"],
            "fresh_sandbox_s": med["fresh"],
            "fresh_ratio": med["fresh"] / bare,
        }
        print(
            f"  {lang_name:<7} {len(times['bare']):>4} runs  bare {1000 * bare:7.1f} ms  "
            f"sandboxed {1000 * med['session']:7.1f} ms ({med['session'] / bare:.2f}x)  "
            f"fresh sandbox per run {1000 * med['fresh']:7.1f} ms ({med['fresh'] / bare:.2f}x)  "
            f"session start {1000 * med['start']:.1f} ms once per candidate",
            flush=True,
        )
    shutil.rmtree(gocache, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--per-language", type=int, default=164, help="candidates per language (164)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="sandbox workers (default: the executor's, 2 per core)",
    )
    p.add_argument(
        "--baseline-workers",
        type=int,
        default=None,
        help="baseline workers (default: as many as the sandbox's, for equal parallelism)",
    )
    p.add_argument("--overhead-programs", type=int, default=10, help="programs per language")
    p.add_argument("--overhead-repeats", type=int, default=5, help="runs of each program")
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    args.workers = args.workers or 2 * (os.cpu_count() or 1)
    args.baseline_workers = args.baseline_workers or args.workers
    if not DATA.is_dir():
        p.error(f"needs the real source data at {DATA} (set COREB_SHARED_DATA)")
    print(f"machine: python {platform.python_version()}, {os.cpu_count()} cpus, "
          f"sandbox workers {args.workers or 'default'}, baseline workers "
          f"{args.baseline_workers}, load {os.getloadavg()}")  # fmt: skip
    sets = load(args.per_language)
    print("throughput (candidates/s, HumanEval-X canonical + MBXP Ruby):")
    tput = throughput(sets, args.workers, args.baseline_workers)
    total_base = sum(r["candidates"] for r in tput.values()) / sum(
        r["baseline"]["seconds"] for r in tput.values()
    )
    total_box = sum(r["candidates"] for r in tput.values()) / sum(
        r["sandbox"]["seconds"] for r in tput.values()
    )
    print(f"  all     baseline {total_base:.2f}/s  sandbox {total_box:.2f}/s  "
          f"ratio {total_box / total_base:.2f}x")  # fmt: skip
    print("overhead (same built program, median per run):")
    over = overhead(sets, args.overhead_programs, args.overhead_repeats)
    verdict = "PASS" if total_box >= total_base else "FAIL"
    print(f"target: sandboxed throughput >= baseline: {verdict} ({total_box / total_base:.2f}x)")
    worst = max(over.values(), key=lambda r: r["ratio"])
    print("target: sandbox overhead (per run, in the candidate's session) < 1.5x: "
          + ", ".join(f"{k} {v['ratio']:.2f}x" for k, v in over.items())
          + f" -> {'PASS' if worst['ratio'] < 1.5 else 'FAIL'}")  # fmt: skip
    args.out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"throughput": tput, "throughput_all": {"baseline_per_s": total_base,
               "sandbox_per_s": total_box, "ratio": total_box / total_base},
               "overhead": over, "workers": args.workers, "load": os.getloadavg()}  # fmt: skip
    (args.out_dir / "bench_sandbox.json").write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
