"""LLM-free low-quality variants by program transformations [SynH-Rank §4.1, Table 2].

Behaviour is checked by running the original and the transformed program on the same stdin in
the sandbox, as the pipeline runs variants (same stdout, same exit status; bubblewrap, a memory
cap and time limits: a variant that blows up is stopped, not the machine); maintainability by
the ruff smell analyser; speed and memory by the sandbox measurement with the QualCode 2x
margin.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from coreb_toolkit.quality.measure import MeasurementUnavailable, margin_label, measure
from coreb_toolkit.sandbox import LANGUAGES, Limits, ToolchainMissing, run_command
from coreb_toolkit.sandbox.isolation import cgroups_available, give_to_sandbox, make_temp_dir
from coreb_toolkit.vocabulary import QUALCODE_DIMENSIONS
from tests.conftest import SHARED_DATA
from trainers.quality_data import transforms
from trainers.quality_data.records import Variant
from trainers.quality_data.transforms import (
    TRANSFORMATIONS,
    TransformRefused,
    transform_variants,
)

REPO = Path(__file__).resolve().parents[3]
MAINTAINABILITY = ["cryptic_names", "deep_nesting", "bare_except", "global_state", "dead_code"]
sandboxed = pytest.mark.needs_toolchain("bwrap", "python3")

# Table 2 of the paper, low-quality column, typed from the paper (not from the code).
TABLE2_LOW = {
    ("speed", "Algorithm"): "Brute-force, exhaustive search",
    ("speed", "Data Structure"): "Mismatched types, inefficient idioms",
    ("speed", "Patterns"): "Redundant objects, deep copies",
    ("speed", "Implementation"): "Recursion without memoization",
    ("memory", "Algorithm"): "Combinatorial blow-up, deep recursion",
    ("memory", "Data Structure"): "Large temp lists, deep nesting",
    ("memory", "Patterns"): "Heavy intermediate materialization",
    ("memory", "Implementation"): "Buffering entire inputs, duplicates",
    ("maintainability", "Structure"): "Deep hierarchies, inconsistent layering",
    ("maintainability", "Readability"): "Cryptic names, deeply nested logic",
    ("maintainability", "Robustness"): "Bare except, hidden root causes",
    ("maintainability", "Modernity"): "Deprecated patterns, global variables",
}

# -- programs: (code, stdins) ------------------------------------------------------------------

FUNCTIONS = '''\
"""The k largest values, and a Fibonacci number."""
import sys
from functools import lru_cache

input = sys.stdin.readline


def read_ints():
    """One line of ints."""
    return list(map(int, input().split()))


@lru_cache(maxsize=None)
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


n, k = read_ints()
values = read_ints()  # the values
values.sort(reverse=True)
total = 0
for i in range(k):
    total += values[i]
banner = """totals
follow"""
print(banner)
print(f"{total} {fib(n)}", [v * 2 for v in values if v % 2 == 0])
'''

SCRIPT = """\
n = int(eval(input()))
rows = []
for _ in range(n):
    a, b = map(int, input().split())
    rows.append((a, b))
best = None
for a, b in sorted(rows, key=lambda r: (r[1], -r[0])):
    if best is None or a > best:
        best = a
    else:
        continue
try:
    extra = int(input())
except (EOFError, ValueError) as err:
    extra = 0
print(best + extra, end="\\n")
exit()  # a discarded rerun ending by exit() must still count as a run
"""

NESTED = """\
import sys

sys.setrecursionlimit(10000)
calls = 0


def depth(tree, node):
    global calls
    calls += 1
    if not tree[node]:
        return 1
    return 1 + max(depth(tree, child) for child in tree[node])


def pairs(items):
    for i, x in enumerate(items):
        for y in items[i + 1:]:
            yield x, y


def main():
    data = sys.stdin.read().split()
    n = int(data[0])
    tree = [[] for _ in range(n)]
    for j in range(1, n):
        tree[int(data[j])].append(j)
    seen = 0

    def bump(amount):
        nonlocal seen
        seen += amount

    for p, q in pairs(list(range(n))):
        bump(p * q)
    if (m := depth(tree, 0)) > 2:
        print("deep", m)
    print(seen, calls)


if __name__ == "__main__":
    main()
"""

EXITS = """\
import sys


def check(x):
\tif x < 0:
\t\tprint("negative")
\t\tsys.exit(3)
\treturn x * x


x = int(input())
print("square", check(x))
if x == 0:
\traise ValueError("zero")
print("done")
"""

BINDINGS = """\
import os.path
import sys as system


def report():
    return f"{big} {first} {sq} {type(exc).__name__}"


data = system.stdin.read().split()
vals = [int(v) for v in data]
if any((big := v) > 5 for v in vals):
    print("big", big)
with open(os.devnull) as fh:
    pass
try:
    1 / 0
except ZeroDivisionError as err:
    exc = err
match vals:
    case [first, *rest]:
        print(first, len(rest))
    case _:
        first = None
tmp = 3
del tmp
print([w for w in vals if (sq := w * w) > 3], report())
"""

PROGRAMS = {
    "functions": (FUNCTIONS, ["5 3\n4 1 9 2 8\n", "10 1\n7\n"]),
    "script": (SCRIPT, ["3\n1 2\n5 1\n4 1\n", "2\n1 1\n2 2\n7\n"]),
    "nested": (NESTED, ["4\n0 0 1\n", "6\n0 1 2 3 4\n"]),
    "exits": (EXITS, ["4\n", "-2\n", "0\n", "\r\n"]),
    "bindings": (BINDINGS.replace("\n", "\r\n"), ["1 9 3\n", "7\r\n"]),  # CRLF source
}
HANDLED = {  # which programs each transformation must handle (by its documented rules)
    "cryptic_names": set(PROGRAMS),  # script: its lambda's parameter is in function scope
    "deep_nesting": set(PROGRAMS),
    "bare_except": set(PROGRAMS),
    "global_state": set(PROGRAMS),
    "dead_code": set(PROGRAMS),
    "redundant_recomputation": set(PROGRAMS),
    "buffer_duplicates": set(PROGRAMS),
}


#: each run's limits (the programs here need < 150 MB and well under a second)
LIMITS = Limits(wall_time_s=30, cpu_time_s=15, memory_mb=512, max_processes=16, tmpfs_mb=16)


def run_program(code: str, stdin: str) -> tuple[str, int]:
    """stdout and exit status of ``code`` run on ``stdin`` as the sandbox runs a Python
    candidate (its python3, /app/main.py, bubblewrap, :data:`LIMITS`: a memory cap and CPU and
    wall-clock limits, cgroup-accounted where cgroups are writable); skipped where there is no
    sandbox. A run that hits a limit fails the test: no verdict of a stopped run is compared."""
    python = LANGUAGES["python"]
    if shutil.which("bwrap") is None:
        pytest.skip("needs the 'bwrap' toolchain on PATH (see `make system-deps`): programs "
                    "run only in the sandbox")  # fmt: skip
    try:
        python.check_toolchain()
    except ToolchainMissing as err:
        pytest.skip(str(err))
    root = make_temp_dir("transforms-test")  # where the sandbox user can reach the program
    try:
        root.chmod(0o711)
        app = root / "app"
        app.mkdir()
        (app / python.source).write_text(code, encoding="utf-8")
        give_to_sandbox(app)
        (root / "stdin").write_text(stdin, encoding="utf-8")
        outcome = run_command(
            python.run_argv(LIMITS.memory_mb), app_dir=app, limits=LIMITS,
            stdin_path=root / "stdin", stdout_path=root / "stdout", stderr_path=root / "stderr",
            env=python.env, memory_overhead_mb=python.memory_overhead_mb,
            use_cgroups=cgroups_available(),
        )  # fmt: skip
        stopped = [k for k in ("timed_out", "memory_exceeded", "output_exceeded")
                   if getattr(outcome, k)]  # fmt: skip
        assert not stopped, f"the run hit a limit ({', '.join(stopped)}) on {stdin!r}:\n{code}"
        return (root / "stdout").read_text(encoding="utf-8", errors="replace"), outcome.exit_code
    finally:
        shutil.rmtree(root, ignore_errors=True)


def apply(name: str, code: str, seed: int = 0) -> str:
    return TRANSFORMATIONS[name].apply(code, random.Random(seed))


@pytest.fixture(scope="module")
def ruff():
    pytest.importorskip("ruff", reason="the ruff analyser needs ruff (pip install ruff)")
    from coreb_toolkit.quality.smells import get_analyser

    return get_analyser("ruff")


# -- registry ----------------------------------------------------------------------------------


def test_registry_entries_name_a_table2_low_phrase():
    assert set(TRANSFORMATIONS) == set(HANDLED)
    for name, t in TRANSFORMATIONS.items():
        assert dataclasses.is_dataclass(t) and t.name == name
        assert t.dimension in QUALCODE_DIMENSIONS and t.level == "low"
        assert TABLE2_LOW[t.dimension, t.category] == t.guideline
        assert len(t.description) > 40 and callable(t.apply)
    with pytest.raises(dataclasses.FrozenInstanceError):
        TRANSFORMATIONS["dead_code"].name = "x"
    dims = Counter(t.dimension for t in TRANSFORMATIONS.values())
    assert dims["speed"] >= 1 and dims["memory"] >= 1 and dims["maintainability"] == 5


def test_registry_phrases_match_the_guideline_file():
    from trainers.quality_data.guidelines import load_guidelines

    guidelines = load_guidelines()
    for t in TRANSFORMATIONS.values():
        groups = {g.category: g.low for g in guidelines.groups(t.dimension)}
        assert groups[t.category] == t.guideline


# -- behaviour ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(HANDLED))
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_transformation_keeps_stdout_and_exit_status(name, program):
    code, stdins = PROGRAMS[program]
    try:
        new = apply(name, code)
    except TransformRefused as err:
        assert program not in HANDLED[name], f"{name} refused {program}: {err}"
        return
    assert program in HANDLED[name], f"{name} should refuse {program}"
    assert new != code
    compile(new, "<new>", "exec")
    for stdin in stdins:
        assert run_program(new, stdin) == run_program(code, stdin), stdin


def test_the_programs_exercise_exit_status_and_crashes():
    code = PROGRAMS["exits"][0]
    assert run_program(code, "-2\n") == ("negative\n", 3)
    assert run_program(code, "0\n") == ("square 0\n", 1)
    assert run_program(code, "\r\n")[1] == 1


@pytest.mark.parametrize("name", MAINTAINABILITY)
def test_maintainability_transformations_add_the_smells_they_aim_at(name, ruff):
    aimed = {
        "cryptic_names": {"N802", "N803", "N806"},
        "deep_nesting": {"SIM102"},
        "bare_except": {"TRY203"},
        "global_state": {"PLW0603"},
        "dead_code": {"ARG001", "PLR1711", "ERA001"},
    }[name]
    for program in sorted(HANDLED[name]):
        code = PROGRAMS[program][0]
        before, after = ruff.analyse({"a": code, "b": apply(name, code)}).values()
        assert after.count > before.count, (name, program)
        assert set(after.kinds) & aimed, (name, program, after.kinds)


def test_deep_nesting_depth_gives_depth_minus_one_mergeable_ifs_per_body(ruff):
    code = "def f(x):\n    return x + 1\n\n\nprint(f(int(input())))\n"  # 2 bodies
    for depth in (2, 4):
        new = transforms.deep_nesting(code, random.Random(0), depth=depth)
        kinds = Counter(f.rule for f in ruff.analyse({"a": new})["a"].findings)
        assert kinds["SIM102"] == 2 * (depth - 1)
    with pytest.raises(ValueError, match="depth"):
        transforms.deep_nesting(code, random.Random(0), depth=1)


def test_programs_run_in_the_sandbox_under_its_memory_cap():
    """A program sees none of the host (not this repository) and cannot take the machine's
    memory: the run is stopped at the cap (or, without cgroups, the allocation fails)."""
    assert run_program(f"import os\nprint(os.path.exists({str(REPO)!r}))\n", "") == ("False\n", 0)
    try:
        out, status = run_program("x = bytearray(1 << 30)\nprint('allocated')\n", "")
    except AssertionError as err:
        assert "hit a limit (memory_exceeded)" in str(err)
    else:
        assert (out, status) == ("", 1)  # RLIMIT_DATA where cgroups are not writable


def test_cryptic_names_is_scope_correct_and_leaves_library_names():
    code = (
        "import math\n"
        "key = 3\n"
        "class Box:\n"
        "    size = 2\n"
        "    def area(self, scale):\n"
        "        return self.size * scale\n"
        "def area(side, key=1):\n"
        "    total = side * side\n"
        "    max_ = max(total, key)\n"
        "    return max_\n"
        "def outer(v):\n"
        "    count = 0\n"
        "    def inner():\n"
        "        nonlocal count\n"
        "        count += v\n"
        "    inner()\n"
        "    return count\n"
        "b = Box()\n"
        "side = int(input())\n"
        "print(area(side, key=key), b.area(side), sorted([3, 1], key=abs), math.sqrt(side))\n"
        "print(outer(side), end='!\\n')\n"
    )
    new = apply("cryptic_names", code)
    for kept in ("math", "Box", ".size *", "def area(", "key=", "abs", "max(", "sqrt", "end="):
        assert kept in new
    for gone in ("def area(side", "total", "max_", "outer", "inner", "count"):
        assert gone not in new
    assert run_program(new, "4\n") == run_program(code, "4\n")


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("def f(x):\n    return globals()['x']\nx = 1\nprint(f(2))\n", "globals"),
        ("def f(y):\n    return eval('y + 1')\nprint(f(1))\n", "eval"),
        ("def f(y):\n    print(f'{y=}')\nf(1)\n", "'='"),
        ("def f(y):\n    return y\nprint(f(**{'y': 1}))\n", "unpacking"),
        ("x = 1\nprint(x)\n", "function scope"),
        ("def f(y):\n    return y\nprint(f.__name__)\n", "introspects"),
    ],
)
def test_cryptic_names_refuses_what_it_cannot_rename_safely(code, reason):
    with pytest.raises(TransformRefused, match=reason):
        apply("cryptic_names", code)


def test_cryptic_names_allows_eval_of_stdin():
    code = "def f(y):\n    return y * 2\nprint(f(eval(input())))\n"
    new = apply("cryptic_names", code)
    assert "eval(input())" in new and "def f(" not in new
    assert run_program(new, "21\n") == ("42\n", 0)


@pytest.mark.parametrize(
    ("name", "code", "reason"),
    [
        ("redundant_recomputation", "print(open(0).read())\n", "file descriptor"),
        ("buffer_duplicates", "import os\nprint(os.read(0, 9))\n", "file descriptor"),
        ("redundant_recomputation", "import atexit\natexit.register(print, 1)\n", "process"),
        ("redundant_recomputation", "class A:\n    pass\nprint(A())\n", "classes"),
        ("buffer_duplicates", "print(sorted(globals()))\n", "namespace"),
        ("global_state", "print(1)\n", "no function"),
        ("bare_except", '"""Doc."""; print(1)\n', "share lines"),
    ],
)
def test_refusals_name_their_reason(name, code, reason):
    with pytest.raises(TransformRefused, match=reason):
        apply(name, code)


def test_edits_keep_comments_layout_and_string_contents():
    code = PROGRAMS["functions"][0]
    for name in ("deep_nesting", "bare_except", "global_state", "dead_code",
                 "redundant_recomputation"):  # fmt: skip
        new = apply(name, code)
        assert "# the values" in new and '"""totals\nfollow"""' in new, name
        assert '"""One line of ints."""' in new, name


# -- speed and memory, measured ----------------------------------------------------------------


def _measure_or_skip(*args, **kwargs):
    try:
        return measure(*args, **kwargs)
    except MeasurementUnavailable as err:
        pytest.skip(f"the sandbox cannot measure here: {err}")


@sandboxed
@pytest.mark.parametrize(("name", "figure"), [("redundant_recomputation", "cpu_time_ms"),
                                              ("buffer_duplicates", "memory_kb")])  # fmt: skip
def test_speed_and_memory_transformations_pass_the_margin(name, figure):
    subs = []
    for program in ("functions", "script"):
        code, stdins = PROGRAMS[program]
        tests = [(s, run_program(code, s)[0]) for s in stdins]
        subs += [(program, code, tests), (f"{program}+", apply(name, code), tests)]
    measured = _measure_or_skip(subs, repeats=3, progress=False)
    for program in ("functions", "script"):
        before, after = measured[program], measured[f"{program}+"]
        assert before.passed and after.passed
        fast, slow = getattr(before, figure), getattr(after, figure)
        assert margin_label(fast, slow) == 1, (program, fast, slow)


# -- the batch ---------------------------------------------------------------------------------


def _variants():
    return [Variant(f"t{i}", code, "real", source_id=f"s{i}")
            for i, (code, _) in enumerate(PROGRAMS.values())]  # fmt: skip


def test_transform_variants_makes_low_variants_and_counts_drops():
    variants = [*_variants(), Variant("t9", "print(1\n", "real")]
    out, drops = transform_variants(variants, seed=3)
    n_handled = sum(len(v) for v in HANDLED.values())
    assert len(out) == n_handled
    assert len(drops) == len(variants) * len(TRANSFORMATIONS) - n_handled
    by_id = {v.variant_id: v for v in variants}
    for v in out:
        t = TRANSFORMATIONS[v.category]
        assert (v.origin, v.level, v.dimension, v.guideline) == (
            "transform",
            "low",
            t.dimension,
            t.guideline,
        )
        assert by_id[v.parent].task_id == v.task_id and by_id[v.parent].code != v.code
    counts = Counter((d.stage, d.reason) for d in drops)
    assert counts["transform", "does not parse as Python 3"] == len(TRANSFORMATIONS)
    assert {d.where for d in drops} <= set(TRANSFORMATIONS)
    assert all(d.item in by_id for d in drops)


def test_transform_variants_is_seeded_and_order_independent():
    variants = _variants()
    a, drops_a = transform_variants(variants, seed=1)
    b, drops_b = transform_variants(variants[::-1], seed=1)
    key = lambda v: (v.parent, v.category)  # noqa: E731
    assert sorted((key(v), v.code) for v in a) == sorted((key(v), v.code) for v in b)
    assert sorted(drops_a) == sorted(drops_b)
    c, _ = transform_variants(variants, ["cryptic_names"], seed=2)
    same = {key(v): v.code for v in a if v.category == "cryptic_names"}
    assert any(same[key(v)] != v.code for v in c)  # another seed, other names


def test_transform_variants_rejects_bad_arguments_and_surfaces_bugs():
    with pytest.raises(ValueError, match="unknown transformations"):
        transform_variants(_variants(), ["nope"])
    with pytest.raises(TypeError, match="string"):
        transform_variants(_variants(), "dead_code")

    def broken(code, rng):
        raise KeyError("bug")

    registry = {"broken": dataclasses.replace(TRANSFORMATIONS["dead_code"], apply=broken)}
    with pytest.raises(RuntimeError, match="broken"):
        transform_variants(_variants(), registry=registry)


# -- real submissions --------------------------------------------------------------------------


@pytest.mark.needs_shared_data
def test_real_codenet_submissions_keep_their_behaviour():
    from coreb_toolkit.sources import codenet

    data = codenet.load([SHARED_DATA / "codenet", SHARED_DATA / "nofuneval"], progress=False)
    picked = []
    for pid in sorted(data.problems):
        tests = data.problems[pid].tests
        if tests and data.submissions.get(pid) and "numpy" not in data.submissions[pid][0].code:
            picked.append((data.submissions[pid][0].code, tests[0]))
        if len(picked) == 20:
            break
    handled = Counter()
    for code, (stdin, _) in picked:
        expected = run_program(code, stdin)
        for name in TRANSFORMATIONS:
            try:
                new = apply(name, code)
            except TransformRefused:
                continue
            handled[name] += 1
            assert run_program(new, stdin) == expected, (name, code)
    assert all(handled[name] >= 3 for name in TRANSFORMATIONS), handled
