"""Executing candidates: compile once, run every test against that build, judge, measure.

The unit of work is a *candidate* (one solution with its tests); see :func:`check_candidate` for
the record fields. Results are plain dicts ready for JSONL (:func:`execute_file` streams them and
resumes an interrupted run).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import statistics
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from coreb_toolkit.sandbox.compare import FLOAT_TOLERANCE, outputs_match
from coreb_toolkit.sandbox.harness import STYLES, json_results_match, program_source
from coreb_toolkit.sandbox.isolation import (
    IsolationUnavailable,
    Limits,
    RunOutcome,
    SandboxSession,
    Stopper,
    bubblewrap_path,
    cgroups_available,
    give_to_sandbox,
    make_temp_dir,
    reclaim_leftovers,
    run_command,
    temp_root,
    zygote_binary,
)
from coreb_toolkit.sandbox.languages import Language, functional_languages, get_language

logger = logging.getLogger(__name__)

VERDICTS = (
    "pass",
    "wrong_answer",
    "runtime_error",
    "time_limit",
    "memory_limit",
    "process_limit",
    "output_limit",
    "compile_error",
)
MAX_CODE_BYTES = 1024 * 1024
_TAIL = 2000  # characters of stderr kept per test


@dataclass(frozen=True)
class ExecutionConfig:
    """How candidates are executed.

    Attributes:
        limits: limits of each test run (a candidate may override time and memory).
        compile_limits: limits of the build step.
        isolation: ``"bubblewrap"`` (default) or ``"none"``, an explicit opt-out recorded in
            every result; untrusted code is refused when bubblewrap is missing.
        repeats: runs per test; above 1 the timings are reported as median with min and max
            (timing-grade measurements for QualCode speed/memory labels).
        workers: candidates executed in parallel (default: two per core). Much of a sandboxed
            run's fixed cost is waiting, not computing (moving a process into a cgroup v1 waits
            for an RCU grace period, ~10 ms), so two runs per core keep the cores busy; CPU time
            and peak memory come from per-run cgroups and are not skewed by it. For
            timing-grade wall-clock figures use ``workers=1``.
        float_tolerance: absolute/relative tolerance for float tokens in stdio tests.
        work_root: where the per-candidate build directories are created (removed after use;
            default: ``TMPDIR``, or ``/tmp`` when the sandbox user cannot traverse ``TMPDIR``).
        max_code_bytes: the largest source file (UTF-8 bytes, the test program included) that
            is built or parsed; a bigger candidate gets ``compile_error`` for every test without
            anything of it being parsed or run on the host. The default, 1 MiB, is twice the
            largest source a judge accepts (AtCoder: 512 KiB; Codeforces: 64 KiB).
        sandbox_scope: ``"candidate"`` (default): one sandbox, with its cgroups, runs all the
            tests of a candidate, each test a fresh process of its own, with nothing of the
            previous test left (processes, files at any depth in ``/work``, ``/tmp``,
            ``/dev/shm``, SysV and POSIX IPC objects);
            see :class:`coreb_toolkit.sandbox.isolation.SandboxSession`. ``"run"``: a fresh sandbox
            for
            every test run (slower by the sandbox's start-up, ~10-30 ms a run). Without
            bubblewrap (``isolation="none"``) or a C compiler to build the resident runner,
            every run is a fresh process of its own.
    """

    limits: Limits = field(default_factory=Limits)
    compile_limits: Limits = field(
        default_factory=lambda: Limits(
            wall_time_s=60, cpu_time_s=60, memory_mb=2048, max_processes=256, tmpfs_mb=512
        )
    )
    isolation: str = "bubblewrap"
    repeats: int = 1
    workers: int | None = None
    float_tolerance: float = FLOAT_TOLERANCE
    work_root: str | None = None
    sandbox_scope: str = "candidate"
    max_code_bytes: int = MAX_CODE_BYTES

    def __post_init__(self) -> None:
        if self.isolation not in ("bubblewrap", "none"):
            raise ValueError(f"isolation must be 'bubblewrap' or 'none', got {self.isolation!r}")
        if self.sandbox_scope not in ("candidate", "run"):
            raise ValueError(
                f"sandbox_scope must be 'candidate' or 'run', got {self.sandbox_scope!r}"
            )
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise ValueError(f"repeats must be a positive int, got {self.repeats!r}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if (isinstance(self.max_code_bytes, bool) or not isinstance(self.max_code_bytes, int)
                or self.max_code_bytes < 1):  # fmt: skip
            raise ValueError(
                f"max_code_bytes must be a positive int (bytes), got {self.max_code_bytes!r}"
            )


def check_candidate(record: object, where: str = "candidate") -> dict[str, Any]:
    """Validate one candidate record and return it normalised.

    Fields: ``id`` (str), ``language`` (python, cpp, java, go, ruby), ``code`` (str), and
    either ``tests`` (a list of ``{"input": str, "output": str}``) or ``test_program`` (str, the
    unit-test program). Optional: ``test_style`` (stdio, functional, unittest; inferred),
    ``fn_name`` (functional tests), ``time_limit_s`` and ``memory_mb`` (per-candidate limits).
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"{where}: expected a JSON object, got {type(record).__name__}")
    for key in ("id", "language", "code"):
        if not isinstance(record.get(key), str) or (key != "code" and not record[key]):
            raise ValueError(f"{where}: field {key!r} must be a non-empty string")
    cid = record["id"]
    try:
        lang = get_language(record["language"])
    except ValueError as err:
        raise ValueError(f"{where} ({cid}): {err}") from None
    tests = record.get("tests", [])
    test_program = record.get("test_program")
    style = record.get("test_style") or (
        "unittest"
        if test_program is not None
        else "functional"
        if record.get("fn_name")
        else "stdio"
    )
    if style not in STYLES:
        raise ValueError(f"{where} ({cid}): test_style must be one of {STYLES}, got {style!r}")
    if style == "unittest":
        if not isinstance(test_program, str) or not test_program.strip():
            raise ValueError(f"{where} ({cid}): unittest style needs a 'test_program' string")
    else:
        if not isinstance(tests, list) or not tests:
            raise ValueError(f"{where} ({cid}): 'tests' must be a non-empty list of test cases")
        for i, test in enumerate(tests):
            if not (
                isinstance(test, Mapping)
                and isinstance(test.get("input"), str)
                and isinstance(test.get("output"), str)
            ):
                raise ValueError(
                    f"{where} ({cid}): tests[{i}] must be {{'input': str, 'output': str}}"
                )
    # Everything is written to files as UTF-8: a lone surrogate (valid JSON, "\ud800") is bad
    # input here, not a crash in the middle of a run.
    texts = [("code", record["code"])]
    if isinstance(test_program, str):
        texts.append(("test_program", test_program))
    if style != "unittest":
        for i, test in enumerate(tests):
            texts += [(f"tests[{i}].input", test["input"]), (f"tests[{i}].output", test["output"])]
    for name, text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ValueError(
                f"{where} ({cid}): {name} holds a lone surrogate {text[err.start]!r} at character "
                f"{err.start}, which no UTF-8 file can: fix the text's encoding"
            ) from None
    if style == "functional":
        if lang.functional_harness is None:
            raise ValueError(
                f"{where} ({cid}): functional tests are supported for "
                f"{', '.join(functional_languages())} only"
            )
        if not isinstance(record.get("fn_name"), str) or not record["fn_name"].isidentifier():
            raise ValueError(f"{where} ({cid}): functional tests need 'fn_name', an identifier")
    for key in ("time_limit_s", "memory_mb"):
        value = record.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value <= 0):  # fmt: skip
            raise ValueError(f"{where} ({cid}): {key} must be a positive number, got {value!r}")
    return {**record, "test_style": style, "tests": list(tests) if style != "unittest" else []}


def _tail(path: Path) -> str:
    data = path.read_bytes()
    return data[-_TAIL:].decode("utf-8", errors="replace")


def _verdict(outcome: RunOutcome, stdout: Path, stderr: Path, expected: str | None,
             style: str, tolerance: float, lang: Language) -> str:  # fmt: skip
    if outcome.timed_out:
        return "time_limit"
    if outcome.memory_exceeded:
        return "memory_limit"
    failed = outcome.exit_code not in (0, None)
    if failed and outcome.process_limit:
        # A fork or thread refused at the process cap, then a failure: the cap is the cause,
        # even where the runtime words it as memory (Java: "OutOfMemoryError: unable to create
        # native thread"). A program that copes with the refusal is judged as usual.
        return "process_limit"
    err = _tail(stderr)
    if re.search(lang.out_of_memory_any_exit, err) or (
        failed and re.search(lang.out_of_memory, err)
    ):
        return "memory_limit"
    if outcome.output_exceeded:
        return "output_limit"
    if outcome.exit_code != 0:
        if re.search(lang.syntax_error, err):
            return "compile_error"
        if style == "unittest" and re.search(lang.assertion_failure, err + "\n" + _tail(stdout)):
            return "wrong_answer"
        return "runtime_error"
    if style == "unittest":
        return "pass"
    actual = stdout.read_text(encoding="utf-8", errors="replace")
    if style == "functional":
        return "pass" if json_results_match(expected or "", actual, tolerance) else "wrong_answer"
    return "pass" if outputs_match(expected or "", actual, tolerance) else "wrong_answer"


def _measure(outcomes: list[RunOutcome]) -> dict[str, Any]:
    first = outcomes[0]
    out: dict[str, Any] = {"exit_code": first.exit_code}
    for key in ("wall_time_s", "cpu_time_s", "peak_memory_bytes"):
        values = [getattr(o, key) for o in outcomes if getattr(o, key) is not None]
        if not values:
            out[key] = None
            continue
        out[key] = statistics.median(values) if len(values) > 1 else values[0]
        if len(outcomes) > 1:
            out[f"{key}_min"] = min(values)
            out[f"{key}_max"] = max(values)
    return out


class Executor:
    """Runs candidates under one :class:`ExecutionConfig`."""

    def __init__(self, config: ExecutionConfig | None = None) -> None:
        self.config = config or ExecutionConfig()
        self.isolate = self.config.isolation == "bubblewrap"
        if self.isolate and bubblewrap_path() is None:
            raise IsolationUnavailable(
                "bubblewrap (bwrap) is not installed: refusing to run untrusted code without "
                "isolation. Install the Debian package bubblewrap (`make system-deps`), or opt "
                "out explicitly with isolation='none' (CLI: --no-isolation)."
            )
        # Build folders go where the sandbox user can reach them (a private TMPDIR is left
        # alone); what killed runs left there, and their cgroups, is reclaimed first.
        self.temp_root = temp_root(self.config.work_root)
        reclaim_leftovers({self.temp_root, Path(tempfile.gettempdir())})
        self._stopper = Stopper()
        self._caches: dict[str, Path] = {}
        self._cache_lock = threading.Lock()
        self.use_cgroups = cgroups_available()
        self.zygote = (
            zygote_binary() if self.isolate and self.config.sandbox_scope == "candidate" else None
        )
        if not self.use_cgroups:
            logger.warning(
                "cgroup v1 memory/pids/cpuacct are not writable here: memory is capped with "
                "RLIMIT_DATA only, and CPU time and peak memory are not measured"
            )

    def _build(
        self,
        lang: Language,
        argv: Sequence[str],
        app: Path,
        log_prefix: Path,
        binds: Sequence[tuple[Path, str, bool]],
    ) -> RunOutcome:
        """A sandboxed build in ``app`` (writable), output in ``<log_prefix>.out``/``.err``."""
        return run_command(
            argv,
            app_dir=app,
            limits=self.config.compile_limits,
            stdin_path=None,
            stdout_path=log_prefix.with_suffix(".out"),
            stderr_path=log_prefix.with_suffix(".err"),
            env=lang.env,
            app_writable=True,
            isolate=self.isolate,
            memory_overhead_mb=lang.memory_overhead_mb,
            use_cgroups=self.use_cgroups,
            binds=binds,
            stopper=self._stopper,
        )

    def _warm_cache(self, lang: Language) -> Path:
        """A build cache warmed once per executor by building ``lang.warmup`` (sandboxed)."""
        with self._cache_lock:
            if lang.name in self._caches:
                return self._caches[lang.name]
            root = make_temp_dir(f"{lang.name}-cache", self.temp_root)
            weakref.finalize(self, shutil.rmtree, root, True)
            app, cache = root / "app", root / "cache"
            app.mkdir()
            cache.mkdir()
            for name, text in (lang.warmup or {}).items():
                (app / name).write_text(text, encoding="utf-8")
            root.chmod(0o711)
            give_to_sandbox(app)
            give_to_sandbox(cache)
            if lang.warmup:
                outcome = self._build(
                    lang,
                    lang.warmup_compile or lang.test_compile or lang.compile or (),
                    app,
                    root / "warmup",
                    [(cache, lang.build_cache or "", True)],
                )
                if outcome.exit_code != 0:  # builds still work, only slower
                    logger.warning(
                        "warming the %s build cache failed: %s",
                        lang.name,
                        _tail(root / "warmup.err"),
                    )
            self._caches[lang.name] = cache
            return cache

    # -- one candidate -------------------------------------------------------------------
    def run_candidate(self, candidate: Mapping[str, Any]) -> dict[str, Any]:
        cand = check_candidate(candidate)
        lang = get_language(cand["language"])
        lang.check_toolchain()
        limits = self.config.limits
        if cand.get("time_limit_s") is not None:
            t = float(cand["time_limit_s"])
            limits = replace(limits, wall_time_s=max(t * 2, t + 1), cpu_time_s=t)
        if cand.get("memory_mb") is not None:
            limits = replace(limits, memory_mb=int(cand["memory_mb"]))
        self._stopper.check()
        build = make_temp_dir("sandbox", self.temp_root)
        try:
            return self._run_in(build, cand, lang, limits)
        finally:
            shutil.rmtree(build, ignore_errors=True)

    def _run_in(self, build: Path, cand: dict, lang: Language, limits: Limits) -> dict[str, Any]:
        app = build / "app"
        io_dir = build / "io"
        app.mkdir()
        io_dir.mkdir()
        style = cand["test_style"]
        # a language may build its unit tests as a separate program (Go's _test.go file)
        unit_file = style == "unittest" and lang.test_source is not None
        source = program_source(
            lang, cand["code"], style, cand.get("fn_name"), cand.get("test_program")
        )
        size = len(source.encode("utf-8"))
        if size > self.config.max_code_bytes:
            return self._refused(cand, lang, style, limits, size)
        (app / (lang.test_source if unit_file else lang.source)).write_text(source, "utf-8")
        build_argv = lang.test_compile if unit_file else lang.compile
        run_argv = lang.test_run if unit_file else lang.run_argv(limits.memory_mb)
        binds: list[tuple[Path, str, bool]] = []
        if lang.build_cache is not None:
            cache = self._warm_cache(lang)
            if lang.build_cache_writable:  # a private copy: builds never share what they write
                cache = build / "cache"
                shutil.copytree(self._warm_cache(lang), cache, symlinks=True)
                give_to_sandbox(cache)
            binds = [(cache, lang.build_cache, lang.build_cache_writable)]
        # The sandbox user may traverse the build directory and write only the build itself;
        # stdin/stdout/stderr files stay root's (passed as descriptors, not writable by path).
        build.chmod(0o711)
        give_to_sandbox(app)

        result = self._header(cand, lang, style)
        compile_info: dict[str, Any] = {"ok": True, "time_s": 0.0}
        if lang.syntax_check is not None and not unit_file:
            start = time.perf_counter()
            error = lang.syntax_check(source)
            compile_info = {"ok": error is None, "time_s": time.perf_counter() - start}
            if error is not None:
                compile_info["stderr"] = error
        if build_argv is not None:
            outcome = self._build(lang, build_argv, app, io_dir / "compile", binds)
            ok = outcome.exit_code == 0 and not outcome.timed_out
            compile_info = {
                "ok": ok,
                "time_s": outcome.wall_time_s,
                "stderr": ""
                if ok
                else _tail(io_dir / "compile.err") + _tail(io_dir / "compile.out"),
            }
        result["compile"] = compile_info
        n_tests = len(cand["tests"]) if style != "unittest" else 1
        tests: list[dict[str, Any]] = []
        if not compile_info["ok"]:
            tests = [{"verdict": "compile_error"} for _ in range(n_tests)]
        else:
            cases = cand["tests"] if style != "unittest" else [{"input": "", "output": None}]
            session = contextlib.nullcontext()
            if self.zygote is not None:
                session = SandboxSession(
                    run_argv,
                    zygote=self.zygote,
                    app_dir=app,
                    limits=limits,
                    env=lang.env,
                    memory_overhead_mb=lang.memory_overhead_mb,
                    use_cgroups=self.use_cgroups,
                    stopper=self._stopper,
                )
            with session as open_session:
                tests = self._run_tests(
                    open_session, cases, run_argv, app, io_dir, lang, limits, style
                )
        if compile_info["ok"] and any(t["verdict"] == "compile_error" for t in tests):
            # Found at run time (Ruby parses before running): report it as the build's failure.
            first = next(t for t in tests if t["verdict"] == "compile_error")
            compile_info = {**compile_info, "ok": False, "stderr": first.get("stderr_tail", "")}
            result["compile"] = compile_info
        return self._finish(result, tests, n_tests, limits)

    def _finish(
        self, result: dict[str, Any], tests: list[dict[str, Any]], n_tests: int, limits: Limits
    ) -> dict[str, Any]:
        passed_n = sum(t["verdict"] == "pass" for t in tests)
        result.update(
            {
                "passed": passed_n == n_tests,
                "pass_rate": passed_n / n_tests,
                "test_passed": passed_n,
                "test_total": n_tests,
                "verdicts": [t["verdict"] for t in tests],
                "tests": tests,
                "limits": asdict(limits),
                "repeats": self.config.repeats,
            }
        )
        return result

    def _refused(
        self, cand: dict, lang: Language, style: str, limits: Limits, size: int
    ) -> dict[str, Any]:
        """The result of a candidate over ``max_code_bytes``: nothing of it was parsed or run."""
        cap = self.config.max_code_bytes
        result = self._header(cand, lang, style)
        result["compile"] = {
            "ok": False,
            "time_s": 0.0,
            "stderr": f"refused: the source is {size:,} bytes, over the cap of {cap:,} bytes "
            "(ExecutionConfig.max_code_bytes, coreb execute --max-code-bytes); nothing of it "
            "was parsed, built or run",
        }
        n_tests = len(cand["tests"]) if style != "unittest" else 1
        tests = [{"verdict": "compile_error"} for _ in range(n_tests)]
        return self._finish(result, tests, n_tests, limits)

    def _header(self, cand: dict, lang: Language, style: str) -> dict[str, Any]:
        return {
            "id": cand["id"],
            "language": lang.name,
            "test_style": style,
            "isolation": "bubblewrap" if self.isolate else "none",
            "accounting": "cgroup" if self.use_cgroups else "rlimit",
            "sandbox_scope": "candidate" if self.zygote is not None else "run",
        }

    def _run_tests(
        self,
        session: SandboxSession | None,
        cases: list[dict],
        run_argv: Sequence[str],
        app: Path,
        io_dir: Path,
        lang: Language,
        limits: Limits,
        style: str,
    ) -> list[dict[str, Any]]:
        """Run every test case (``repeats`` times each) against the build in ``app``, in
        ``session`` or, without one, each run in a fresh sandbox."""
        tests: list[dict[str, Any]] = []
        for i, case in enumerate(cases):
            stdin = io_dir / f"{i}.in"
            stdin.write_text(case["input"], encoding="utf-8")
            outcomes, verdicts = [], []
            for r in range(self.config.repeats):
                out, err = io_dir / f"{i}.{r}.out", io_dir / f"{i}.{r}.err"
                if session is not None:
                    outcome = session.run(stdin, out, err)
                else:
                    outcome = run_command(
                        run_argv,
                        app_dir=app,
                        limits=limits,
                        stdin_path=stdin,
                        stdout_path=out,
                        stderr_path=err,
                        env=lang.env,
                        isolate=self.isolate,
                        memory_overhead_mb=lang.memory_overhead_mb,
                        use_cgroups=self.use_cgroups,
                        stopper=self._stopper,
                    )
                outcomes.append(outcome)
                verdicts.append(
                    _verdict(
                        outcome, out, err, case["output"], style, self.config.float_tolerance, lang
                    )
                )
                if verdicts[-1] in ("time_limit", "memory_limit", "process_limit", "output_limit"):
                    break  # no point re-running a program that blew a limit
            test = {"verdict": verdicts[0], **_measure(outcomes)}
            if len(set(verdicts)) > 1:
                test["verdicts_across_repeats"] = verdicts
            if verdicts[0] != "pass":
                test["stderr_tail"] = _tail(io_dir / f"{i}.0.err")
            tests.append(test)
        return tests

    # -- many candidates -------------------------------------------------------------------
    def run_many(
        self, candidates: Iterable[Mapping[str, Any]], progress: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Execute candidates in parallel; yields results as they complete (any order).

        When the caller stops early (an exception, ``KeyboardInterrupt``, closing the
        generator), the runs in flight are killed at once and their candidates' results, which
        they would falsify, are never yielded; their folders and cgroups are removed.
        """
        cands = list(candidates)
        for i, cand in enumerate(cands):
            check_candidate(cand, f"candidate {i}")
        for name in sorted({c["language"] for c in cands}):
            get_language(name).check_toolchain()
        workers = self.config.workers or 2 * (os.cpu_count() or 1)
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(cands), desc="executing", unit="cand", disable=None if progress else True
        )
        finished = False
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                pending = set()
                queue = iter(cands)
                try:
                    for cand in queue:
                        pending.add(pool.submit(self.run_candidate, cand))
                        if len(pending) >= 2 * workers:
                            break
                    while pending:
                        done, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for fut in done:
                            bar.update(1)
                            yield fut.result()
                            nxt = next(queue, None)
                            if nxt is not None:
                                pending.add(pool.submit(self.run_candidate, nxt))
                    finished = True
                finally:
                    for fut in pending:
                        fut.cancel()
                    if not finished:  # the pool's exit then waits only for killed runs
                        self._stopper.stop()
        finally:
            bar.close()
            if not finished:  # this executor may run candidates again
                self._stopper = Stopper()


def execute(
    candidates: Iterable[Mapping[str, Any]], config: ExecutionConfig | None = None
) -> list[dict[str, Any]]:
    """Execute candidates and return their results in input order."""
    cands = list(candidates)
    by_id = {r["id"]: r for r in Executor(config).run_many(cands)}
    return [by_id[c["id"]] for c in cands]


def read_candidates(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read and validate a candidates JSONL file (errors name the line)."""
    out, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{where}: not valid JSON ({err.msg})") from None
            record = check_candidate(record, where)
            if record["id"] in seen:
                raise ValueError(f"{where}: duplicate candidate id {record['id']!r}")
            seen.add(record["id"])
            out.append(record)
    if not out:
        raise ValueError(f"{path}: no candidate in the file")
    return out


def _completed_ids(out_path: Path) -> set[str]:
    """Ids already in a results file; a torn last line (interrupted write) is cut off.

    An id with more than one result (two runs that wrote the same file before it was locked)
    is an error naming the ids and their lines: the lines may disagree (a flaky candidate), and
    which one is right is not ours to guess; resuming would keep both.
    """
    if not out_path.exists():
        return set()
    data = out_path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        logger.warning("%s: dropping an unfinished last line left by an interrupted run", out_path)
        with open(out_path, "r+b") as handle:
            handle.truncate(keep)
    lines: dict[str, list[int]] = {}
    for number, line in enumerate(data[:keep].splitlines(), start=1):
        if line.strip():
            try:
                lines.setdefault(json.loads(line)["id"], []).append(number)
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ValueError(
                    f"{out_path}:{number}: not a result line; is this the right --out file?"
                ) from None
    repeated = {i: n for i, n in lines.items() if len(n) > 1}
    if repeated:
        shown = ", ".join(
            f"{i!r} (lines {', '.join(map(str, n))})" for i, n in list(repeated.items())[:5]
        )
        raise ValueError(
            f"{out_path}: {len(repeated)} ids have more than one result: {shown}"
            f"{', ...' if len(repeated) > 5 else ''}; keep one line per id (or delete those "
            "ids' lines to run them again), then resume"
        )
    return set(lines)


def _lock_holder(path: Path) -> str:
    """Who holds the lock on ``path``, from ``/proc/locks`` (Linux), as ``pid N``."""
    with contextlib.suppress(OSError, ValueError):
        info = path.stat()
        inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if "->" not in fields and len(fields) > 5 and fields[5] == inode:
                return f"pid {int(fields[4])}"
    return "another process"


@contextlib.contextmanager
def _locked_for_append(out_path: Path) -> Iterator[Any]:
    """``out_path`` opened for appending, with an exclusive lock held until the block ends:
    two runs writing one results file would run every candidate twice."""
    with open(out_path, "a", encoding="utf-8") as out:
        try:
            fcntl.flock(out, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(
                f"{out_path} is being written by another run ({_lock_holder(out_path)}): wait "
                "for it to end, or give this run another --out"
            ) from None
        yield out


def execute_file(
    in_path: str | os.PathLike,
    out_path: str | os.PathLike,
    config: ExecutionConfig | None = None,
    progress: bool = True,
) -> dict[str, int]:
    """Execute a candidates JSONL file, streaming results to ``out_path`` (JSONL).

    An interrupted run resumes: candidates whose result is already in ``out_path`` are skipped,
    so nothing is recomputed or lost. ``out_path`` is locked while the run writes it: a second
    run on the same file fails at once (:class:`ValueError` naming the lock holder). Returns
    counts of skipped and executed candidates.
    """
    out_path = Path(out_path)
    candidates = read_candidates(in_path)
    with _locked_for_append(out_path) as out:
        done = _completed_ids(out_path)
        unknown = done - {c["id"] for c in candidates}
        if unknown:
            raise ValueError(
                f"{out_path} holds results for {len(unknown)} ids that are not in {in_path} "
                f"(e.g. {sorted(unknown)[0]!r}): is this the right --out file?"
            )
        todo = [c for c in candidates if c["id"] not in done]
        executed = 0
        with contextlib.closing(Executor(config).run_many(todo, progress=progress)) as results:
            for result in results:
                out.write(json.dumps(result) + "\n")
                out.flush()
                os.fsync(out.fileno())
                executed += 1
    return {"skipped": len(done), "executed": executed, "total": len(candidates)}
