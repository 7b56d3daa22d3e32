"""Python: parsed on the host (never compiled or run there) as its build step; functional
(LeetCode-style) tests call the candidate's function through a harness appended to it."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys
import threading

from coreb_toolkit.sandbox.languages.base import Language

# CPython before 3.11.9 / 3.12.1 keeps the AST validator's recursion depth in shared state, so
# two threads parsing at once can fail with "SystemError: AST constructor recursion depth
# mismatch" (python/cpython#106905). The executor builds candidates on a thread pool: serialise.
_AST_LOCK = threading.Lock()
# Parsing takes ~500 bytes of memory and ~4 us per byte of source ('x=1\n' * 1_500_000: 3.7 GB,
# 32 s). Up to this size the host parses in process (at most ~30 MB, ~0.3 s); a bigger source
# (the executor caps sources at max_code_bytes) is parsed by a child process with a memory and a
# CPU cap, so no candidate can take the host's memory or stall it.
IN_PROCESS_PARSE_CHARS = 64 * 1024
PARSE_MEMORY_MB = 1024
PARSE_CPU_S = 20.0
_CHILD_PARSER = """
import ast, json, sys
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
try:
    ast.parse(source, filename="main.py")
except SyntaxError as err:
    print(json.dumps(f"main.py:{err.lineno}:{err.offset}: SyntaxError: {err.msg}"))
except MemoryError:
    print(json.dumps({"memory": True}))
except (ValueError, RecursionError) as err:
    print(json.dumps(f"main.py: {type(err).__name__}: {err}"))
else:
    print("null")
"""


def python_syntax_error(
    source: str, *, memory_mb: int = PARSE_MEMORY_MB, cpu_time_s: float = PARSE_CPU_S
) -> str | None:
    """Parse (never compile or run) Python source; the error message if it does not parse.

    The parser alone is safe on untrusted input: no code runs and no constant is folded. A
    source over ``IN_PROCESS_PARSE_CHARS`` is parsed by a child process capped at
    ``memory_mb`` of address space and ``cpu_time_s`` of CPU; one it cannot parse within them
    gets a message saying which limit it hit.
    """
    if len(source) > IN_PROCESS_PARSE_CHARS:
        return _syntax_error_in_child(source, memory_mb, cpu_time_s)
    try:
        with _AST_LOCK:
            ast.parse(source, filename="main.py")
    except SyntaxError as err:
        return f"main.py:{err.lineno}:{err.offset}: SyntaxError: {err.msg}"
    except (ValueError, RecursionError, MemoryError) as err:
        return f"main.py: {type(err).__name__}: {err}"
    return None


def _syntax_error_in_child(source: str, memory_mb: int, cpu_time_s: float) -> str | None:
    # prlimit, not preexec_fn: the executor's threads make Python code after fork unsafe.
    argv = [
        "/usr/bin/prlimit", f"--as={memory_mb * 1024 * 1024}",
        # soft:hard, so that SIGXCPU (not SIGKILL) says the CPU cap was hit
        f"--cpu={math.ceil(cpu_time_s)}:{math.ceil(cpu_time_s) + 1}", "--core=0", "--",
        sys.executable, "-I", "-S", "-c", _CHILD_PARSER,
    ]  # fmt: skip
    what = f"the syntax check (a child capped at {memory_mb} MB and {cpu_time_s:g} s of CPU)"
    try:
        done = subprocess.run(
            argv,
            input=source.encode("utf-8", "surrogatepass"),
            capture_output=True,
            timeout=2 * cpu_time_s + 5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"main.py: {what} ran out of time"
    answer: object = None
    if done.returncode == 0:
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            answer = {}
        if answer is None or isinstance(answer, str):
            return answer
    err = done.stderr.decode("utf-8", errors="replace")
    if answer == {"memory": True}:
        return f"main.py: {what} ran out of memory"
    if done.returncode in (-24, -9):  # SIGXCPU, then SIGKILL at the hard CPU cap
        return f"main.py: {what} ran out of time"
    if "MemoryError" in err or "Cannot allocate memory" in err:  # before the parse started
        return f"main.py: {what} ran out of memory"
    return f"main.py: {what} failed (exit {done.returncode}): {err.strip()[-300:]}"


# The functional style (``class Solution`` with method ``fn_name``, or a top-level function):
# each test's input holds one JSON value per line, the arguments; the result is printed as JSON.
FUNCTIONAL_HARNESS = """

# ---- coreb functional-test harness ----
def __coreb_run():
    import json as _json
    import sys as _sys

    _args = [_json.loads(_l) for _l in _sys.stdin.read().splitlines() if _l.strip()]
    _target = globals().get("Solution")
    _fn = getattr(_target(), {fn!r}) if _target is not None else globals()[{fn!r}]
    _result = _fn(*_args)
    if isinstance(_result, tuple):
        _result = list(_result)
    _sys.stdout.write(_json.dumps(_result))


__coreb_run()
"""


PYTHON = Language(
    name="python",
    source="main.py",
    compile=None,
    syntax_check=python_syntax_error,
    run=("/usr/bin/python3", "/app/main.py"),
    binaries=("/usr/bin/python3",),
    debian_package="python3",
    # CodeNet submissions import them (QualCode's measured mode re-runs those)
    debian_extras=("python3-numpy", "python3-scipy"),
    env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"},
    functional_harness=FUNCTIONAL_HARNESS,
    assertion_failure=r"(?m)^AssertionError\b[^\n]*\s*\Z",
)
