"""LLM-free low-quality variants: program transformations a SynH-Rank guideline names.

Without a generator strong enough for guideline-driven synthesis [SynH-Rank §4.1], a low-quality
variant of a correct Python 3 stdin/stdout program is made by a *semantics-preserving*
transformation enacting one low-quality phrase of Table 2: the same stdout and exit status for
every stdin, one quality dimension worse. Each is one :class:`Transformation` in
:data:`TRANSFORMATIONS` (a new one is one entry). The maintainability ones aim at rules the ruff
analyser counts (:data:`coreb_toolkit.quality.smells.RUFF_SONAR`); the speed and memory claims
must be confirmed by measurement (:mod:`trainers.quality_data.verify`). On CodeNet's small
tests the interpreter dominates (~13 ms CPU, 8 MB resident before a program's first line), so
those two size their extra work against what the process has already used.

Edits are made to the source text (``cryptic_names`` changes identifier tokens only), so comments,
layout and strings stay: a variant differs from its parent by the transformation, not by a
reformatting a reranker could learn instead. Every edit is checked (the result compiles; moved
statements parse to the same tree). A program a transformation cannot handle safely raises
:class:`TransformRefused` with a short reason, a :class:`~trainers.quality_data.records.Drop` in
:func:`transform_variants`.
"""

from __future__ import annotations

import ast
import builtins
import copy
import keyword
import logging
import random
import re
import symtable
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from trainers.quality_data.records import Drop, Variant

logger = logging.getLogger(__name__)

STAGE = "transform"  # the Drop.stage of a program a transformation refused


class TransformRefused(ValueError):
    """A transformation cannot handle this program; ``reason`` says why (one short category)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason, self.detail = reason, detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


@dataclass(frozen=True)
class Transformation:
    """One semantics-preserving transformation that enacts a Table 2 low-quality guideline.

    Attributes:
        name: the registry key, and the ``category`` of the variants it makes.
        dimension, level: the claim of its variants (``level`` is always ``"low"``).
        category, guideline: the Table 2 category and low-quality phrase (verbatim) it enacts.
        description: what it does; apply: ``apply(code, rng) -> code`` or TransformRefused.
    """

    name: str
    dimension: str
    level: str
    category: str
    guideline: str
    description: str
    apply: Callable[[str, random.Random], str]


_BUILTINS = frozenset(dir(builtins))
_KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.ClassDef, ast.Lambda)
_SHARED_LINE = "statements share lines (';' or one-line blocks)"
_MISMATCH = "renamed source does not match the renamed tree"
_Rows = Sequence[tuple[int, str]]  # new lines: (extra indentation levels, text)


class _Source:
    """A parsed program with its lines, as the textual edits need them."""

    def __init__(self, code: str) -> None:
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        if re.search(r"\r(?!\n)|\x0c", code):
            raise TransformRefused("unsupported layout (bare carriage returns or form feeds)")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
            raise TransformRefused("does not parse as Python 3", str(err)) from None
        self.code = code
        # not splitlines(): it also breaks at \x0b, \x1c..., which Python's tokenizer does not
        parts = code.split("\n")
        self.lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        self.newline = "\r\n" if "\r\n" in code else "\n"
        indents = [self.indent_of(n) for n, line in enumerate(self.lines, 1) if line.strip()]
        # one more level that keeps tab/space use consistent (a tab keeps any mix consistent)
        self.unit = "\t" if any("\t" in i for i in indents) else next(filter(None, indents), "    ")
        self.interior = set()  # lines starting inside a multi-line string: never re-indented
        for node in ast.walk(self.tree):
            text = isinstance(node, ast.JoinedStr) or (
                isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
            )
            if text and node.end_lineno != node.lineno:
                self.interior.update(range(node.lineno + 1, node.end_lineno + 1))

    def indent_of(self, line: int) -> str:
        return re.match(r"[ \t]*", self.lines[line - 1]).group()

    def starts_line(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` (with its decorators) is the first thing on its line."""
        if getattr(stmt, "decorator_list", None):
            return self.lines[_first_line(stmt) - 1].lstrip().startswith("@")
        return not self.lines[stmt.lineno - 1].encode("utf-8")[: stmt.col_offset].strip()

    def line_run(self, body: Sequence[ast.stmt], i: int, j: int) -> tuple[int, int]:
        """(first, last) 1-based lines of ``body[i:j]``, which must own whole lines."""
        if not self.starts_line(body[i]) or (j < len(body) and body[j].lineno
                                              == body[j - 1].end_lineno):  # fmt: skip
            raise TransformRefused(_SHARED_LINE)
        return _first_line(body[i]), body[j - 1].end_lineno

    def closed_lines(self) -> list[str]:
        """The lines, the last one with a newline too."""
        lines = list(self.lines)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += self.newline
        return lines

    def reindent(self, first: int, last: int) -> list[str]:
        """Lines ``first..last``, one level deeper (string interiors and blank lines kept)."""
        lines = self.closed_lines()[first - 1 : last]
        return [line if n in self.interior or not line.strip() else self.unit + line
                for n, line in enumerate(lines, first)]  # fmt: skip

    def block(self, indent: str, rows: _Rows) -> list[str]:
        return [(indent + self.unit * lvl + text).rstrip() + self.newline for lvl, text in rows]

    def splice(self, first: int, last: int, new: list[str]) -> str:
        """Lines ``first..last`` (1-based) replaced by ``new``; ``last = first - 1`` inserts."""
        lines = self.closed_lines()
        return "".join(lines[: first - 1] + new + lines[last:])


def _first_line(stmt: ast.stmt) -> int:
    """The first line of a statement, its decorators included."""
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))  # fmt: skip


def _module_start(tree: ast.Module) -> int:
    """Index of the first module statement after the docstring and ``__future__`` imports."""
    i = 1 if tree.body and _is_docstring(tree.body[0]) else 0
    while (i < len(tree.body) and isinstance(tree.body[i], ast.ImportFrom)
           and tree.body[i].module == "__future__"):  # fmt: skip
        i += 1
    return i


def _bodies(tree: ast.Module) -> list[tuple[list[ast.stmt], int]]:
    """The module and every function body (source order: stable under wrapping), each with
    its first index after a docstring."""
    functions = sorted((n for n in ast.walk(tree) if isinstance(n, _FUNCTIONS)),
                       key=lambda n: (n.lineno, n.col_offset))  # fmt: skip
    return [(tree.body, _module_start(tree))] + [
        (f.body, 1 if _is_docstring(f.body[0]) else 0) for f in functions
    ]


def _compiled(code: str, original: str) -> str:
    """``code`` if it compiles and differs from ``original``; else TransformRefused."""
    if code == original:
        raise TransformRefused("no effect")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<transformed>", "exec")
    except (SyntaxError, ValueError) as err:
        raise TransformRefused("the transformed program does not compile", str(err)) from None
    return code


def _wrap(code: str, pick: Callable[[ast.Module], tuple[list[ast.stmt], int, int]],
          header: _Rows, footer: _Rows) -> str:  # fmt: skip
    """Put the statements ``pick`` selects one level deeper, between ``header`` and
    ``footer`` rows; checked to keep their tree."""
    src = _Source(code)
    body, i, j = pick(src.tree)
    first, last = src.line_run(body, i, j)
    indent = src.indent_of(first)
    new = src.block(indent, header) + src.reindent(first, last) + src.block(indent, footer)
    out = src.splice(first, last, new)
    try:
        moved = _find_block(ast.parse(out), first + len(header), j - i)
    except SyntaxError as err:
        raise TransformRefused("the transformed program does not compile", str(err)) from None
    if [ast.dump(s) for s in moved] != [ast.dump(s) for s in body[i:j]]:
        raise TransformRefused("re-indenting changed the program", f"line {first}")
    return out


def _find_block(tree: ast.Module, line: int, n: int) -> list[ast.stmt]:
    """The ``n`` statements from the first (shallowest) one starting on ``line``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                for k, stmt in enumerate(stmts):
                    if _first_line(stmt) == line:
                        return stmts[k : k + n]
    return []


def _insert_at_module_start(code: str, rows: _Rows, imports_first: bool = True) -> str:
    """Insert module-level ``rows`` before any statement but the docstring, ``__future__``
    and (``imports_first``) the leading imports."""
    src = _Source(code)
    body, start = src.tree.body, _module_start(src.tree)
    i = start
    while imports_first and i < len(body) and isinstance(body[i], ast.Import | ast.ImportFrom):
        i += 1
    if i < len(body) and not src.starts_line(body[i]):
        i = start  # the first statement after the imports shares their line
    if i < len(body) and not src.starts_line(body[i]):
        raise TransformRefused(_SHARED_LINE)
    at = _first_line(body[i]) if i < len(body) else len(src.lines) + 1
    return src.splice(at, at - 1, src.block("", rows))


def _identifiers(tree: ast.AST) -> set[str]:
    """Every identifier the program spells (names, attributes, keywords, imports...)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        for field in ("id", "arg", "attr", "name", "asname", "rest", "names", "kwd_attrs"):
            value = getattr(node, field, None)
            values = value if isinstance(value, list) else [value]
            found.update(p for v in values if isinstance(v, str) for p in v.split("."))
    return found


def _fresh(taken: set[str], *bases: str) -> str:
    """The first of ``bases`` (then ``base_2``, ``base_3``...) the program does not use."""
    for n in range(1, 1000):
        for name in (base if n == 1 else f"{base}_{n}" for base in bases):
            if name not in taken and name not in _BUILTINS and name not in _KEYWORDS:
                taken.add(name)
                return name
    raise TransformRefused("no fresh name available")


def _calls(tree: ast.AST, names: Iterable[str]) -> bool:
    """Whether the program calls one of ``names`` as a plain name."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
               for n in ast.walk(tree))  # fmt: skip


def _star_import(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
               for n in ast.walk(tree))  # fmt: skip


def _walk_scope(node: ast.AST) -> Iterable[ast.AST]:
    """``node`` and its descendants in its scope (a nested def, class, lambda: not entered)."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        if not isinstance(current, _SCOPES):
            todo.extend(ast.iter_child_nodes(current))


_REFLECTION = ("locals", "vars", "exec", "dir", "globals")
_FRAMES = r"import\s+__main__|sys\.modules|_getframe|\binspect\b|f_locals|f_globals"
_FD_IO = re.compile(r"\bopen\(\s*[01]\s*[,)]|fileno|__stdin__|__stdout__|\bos\.(read|write|"
                    r"fdopen|dup2?)\b|/dev/std(in|out)|\bfileinput\b|stdin\.buffer\.raw|"
                    r"from\s+os\s+import")  # fmt: skip
_PROCESS = re.compile(r"\b(threading|_thread|atexit|multiprocessing|concurrent|subprocess|"
                      r"signal|_exit|fork|exec[lv]p?e?)\b")  # fmt: skip


def _check_harness(src: _Source, *, in_function: bool) -> None:
    """Refuse what a harness (stdin replay, reruns, a function scope) would change."""
    if _FD_IO.search(src.code):
        raise TransformRefused("reads stdin or writes stdout by file descriptor")
    if _PROCESS.search(src.code):
        raise TransformRefused("process-wide side effects (threads, atexit, processes, signals)")
    frames = _FRAMES + ("|__qualname__" if in_function else "")
    if _calls(src.tree, _REFLECTION) or re.search(frames, src.code):
        raise TransformRefused("introspects its own namespace (locals, vars, exec, dir, frames)")
    if _star_import(src.tree):
        raise TransformRefused("star import")
    if in_function:
        _check_movable(src.tree.body)


def _check_movable(stmts: Sequence[ast.stmt]) -> None:
    """Refuse module statements that cannot run inside a function with global names."""
    for node in (n for stmt in stmts for n in _walk_scope(stmt)):
        if isinstance(node, ast.Global):
            raise TransformRefused("module-level global statement")
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            raise TransformRefused("module-level variable annotation (cannot be global)")
        if isinstance(node, ast.ClassDef):
            raise TransformRefused("defines classes (their __qualname__, reprs would change)")


def _bound_names(src: _Source, first: int, last: int) -> list[str]:
    """Names the module code on lines ``first..last`` binds, in order (symtable's, plus walrus
    targets in comprehensions, which it does not mark)."""
    text = "".join(src.lines[first - 1 : last])
    table = symtable.symtable(text, "<run>", "exec")
    names = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    for stmt in ast.parse(text).body:
        names.update(n.target.id for n in _walk_scope(stmt) if isinstance(n, ast.NamedExpr))
    order: dict[str, int] = {}
    for name in re.findall(r"[^\W\d]\w*", text):
        order.setdefault(name, len(order))
    return sorted(names, key=lambda n: order.get(n, len(order)))


# -- maintainability ---------------------------------------------------------------------------

_ALWAYS_TRUE = ("1", "not 0", "0 == 0", "1 > 0", "not False", "0 < 1")
"""Always-true conditions (``if True:`` is exempt from ruff's SIM102, these are not)."""


def _wrap_bodies(code: str, levels: int, header: Callable[[], _Rows], footer: _Rows) -> str:
    """Wrap the module and every function body ``levels`` times (one-line bodies skipped)."""
    done, reason = 0, "nothing to wrap"
    for b in range(len(_bodies(_Source(code).tree))):
        for _ in range(levels):
            body, start = _bodies(_Source(code).tree)[b]
            if start >= len(body):
                break
            try:
                code = _wrap(code, lambda t, b=b: (*_bodies(t)[b], len(_bodies(t)[b][0])),
                             header(), footer)  # fmt: skip
            except TransformRefused as err:
                reason = err.reason
                break
            done += 1
    if not done:
        raise TransformRefused(reason)
    return code


def deep_nesting(code: str, rng: random.Random, *, depth: int = 3) -> str:
    """Readability: "Cryptic names, deeply nested logic" [SynH-Rank Table 2].

    Puts the module's statements and every function body inside ``depth`` nested always-true
    ``if`` statements (``if 1:``, ``if not 0:``...): conditions that decide nothing, no new
    names. Each nested pair is a mergeable ``if`` (ruff SIM102): ``depth - 1`` per body.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
        raise ValueError(f"depth must be an int >= 2 (nested ifs make the smell), got {depth!r}")
    header = lambda: [(0, f"if {rng.choice(_ALWAYS_TRUE)}:")]  # noqa: E731
    return _compiled(_wrap_bodies(code, depth, header, []), code)


def bare_except(code: str, rng: random.Random) -> str:
    """Robustness: "Bare except, hidden root causes" [SynH-Rank Table 2].

    Wraps the module's statements and every function body in ``try: ... except: raise``: a
    bare ``except`` catching everything only to re-raise it (the same exception object, so the
    same exit status; the traceback is on stderr). ruff TRY203 per handler.
    """
    return _compiled(_wrap_bodies(code, 1, lambda: [(0, "try:")],
                                  [(0, "except:"), (1, "raise")]), code)  # fmt: skip


def global_state(code: str, rng: random.Random) -> str:
    """Modernity: "Deprecated patterns, global variables" [SynH-Rank Table 2].

    (1) The trailing top-level code (after the last ``def``/``class``), where it binds names,
    moves into a ``main``-like function that declares them ``global`` (the same globals, bound
    in the same order); (2) every function, that one included, increments a module counter
    through ``global``: state nothing reads. ruff PLW0603 per global a function assigns.
    """
    taken = _identifiers(_Source(code).tree)
    counter = _fresh(taken, rng.choice(("calls", "call_count", "counter", "steps")))
    out = _move_trailing_code(_Source(code), taken, rng) or code
    incremented = 0
    for b in range(1, len(_bodies(_Source(out).tree))):
        src = _Source(out)
        body, start = _bodies(src.tree)[b]
        stmt = body[min(start, len(body) - 1)]
        if not src.starts_line(stmt):
            continue  # a one-line function: nowhere to put a line
        at = _first_line(stmt) if start < len(body) else stmt.end_lineno + 1
        rows = [(0, f"global {counter}"), (0, f"{counter} += 1")]
        out = src.splice(at, at - 1, src.block(src.indent_of(stmt.lineno), rows))
        incremented += 1
    if not incremented:
        raise TransformRefused("no function and no trailing module code that binds names")
    return _compiled(_insert_at_module_start(out, [(0, f"{counter} = 0")]), code)


def _move_trailing_code(src: _Source, taken: set[str], rng: random.Random) -> str | None:
    """The trailing top-level code moved into a ``global``-declaring function, or None."""
    body = src.tree.body
    start = _module_start(src.tree)
    for i in range(len(body) - 1, start - 1, -1):
        if any(isinstance(n, (*_FUNCTIONS, ast.ClassDef)) for n in ast.walk(body[i])):
            start = i + 1
            break
    tail = ast.Module(body[start:], [])
    if start >= len(body) or _star_import(tail) or _calls(tail, _REFLECTION[:4]):
        return None
    try:
        _check_movable(body[start:])
        first, last = src.line_run(body, start, len(body))
    except TransformRefused:
        return None
    names = _bound_names(src, first, last)
    if not names:
        return None
    main = _fresh(taken, rng.choice(("main", "run", "solve_all")))
    header = [(0, f"def {main}():"), (1, f"global {', '.join(names)}")]
    return _wrap(src.code, lambda t: (t.body, start, len(t.body)), header,
                 [(0, ""), (0, ""), (0, f"{main}()")])  # fmt: skip


def dead_code(code: str, rng: random.Random) -> str:
    """Structure: "Deep hierarchies, inconsistent layering" [SynH-Rank Table 2].

    Table 2 has no dead-code phrase; this is the closest (a layer nobody calls). Adds a
    never-called helper (a fresh name) whose body copies a few top-level statements, with two
    unused parameters and a bare ``return``, and a commented-out copy of a one-line statement.
    ruff ARG001 (x2), PLR1711, ERA001, F841 for what the copy assigns.
    """
    src = _Source(code)
    body, start = src.tree.body, _module_start(src.tree)
    usable = [i for i in range(start, len(body)) if src.starts_line(body[i])
              and not (i + 1 < len(body) and body[i + 1].lineno == body[i].end_lineno)
              and not _star_import(body[i])
              and not any(isinstance(n, ast.Global) for n in ast.walk(body[i]))]  # fmt: skip
    if not usable:
        raise TransformRefused("no top-level statement to copy")
    taken = _identifiers(src.tree)
    helper = _fresh(taken, rng.choice(("helper", "process", "compute", "handle")))
    params = [_fresh(taken, p) for p in rng.sample(("data", "value", "items", "count"), 2)]
    i = j = rng.choice(usable)
    j += 1
    while j in usable and j - i < 3 and rng.random() < 0.5:
        j += 1
    lines = src.block("", [(0, ""), (0, f"def {helper}({', '.join(params)}):")])
    lines += src.reindent(_first_line(body[i]), body[j - 1].end_lineno)
    lines += src.block("", [(1, "return"), (0, "")])
    at = rng.choice([*usable, len(body)])
    where = _first_line(body[at]) if at < len(body) else len(src.lines) + 1
    out = src.splice(where, where - 1, lines)
    src = _Source(out)  # (2) a commented-out line, where a one-line statement starts its line
    one_liners = [s for s in ast.walk(src.tree) if isinstance(s, ast.stmt)
                  and s.lineno == s.end_lineno and src.starts_line(s)
                  and s.lineno not in src.interior and not _is_docstring(s)
                  and not isinstance(s, (ast.Pass, ast.Global, ast.Nonlocal))]  # fmt: skip
    if one_liners:
        stmt = rng.choice(one_liners)
        row = [(0, f"# {src.lines[stmt.lineno - 1].strip()}")]
        out = src.splice(stmt.lineno, stmt.lineno - 1, src.block(src.indent_of(stmt.lineno), row))
    return _compiled(out, code)


def cryptic_names(code: str, rng: random.Random) -> str:
    """Readability: "Cryptic names, deeply nested logic" [SynH-Rank Table 2].

    Renames the program's own variables, parameters and functions to 1-3 character names
    with a capital (``Q``, ``xB``), one per old name everywhere: a bijection on identifiers,
    so scoping is untouched. Never renamed: builtins, imports, class names and class-body
    names (attributes), keyword-argument names, dunders, ``match`` captures. The result must
    parse to exactly the renamed tree. ruff N802/N803/N806 per function, parameter, local.

    Refused: names reached through strings or frames (``globals``, ``locals``, ``vars``,
    ``exec``, ``dir``, ``eval`` of anything but stdin data, a renamed ``__name__``,
    ``inspect``), ``**`` into calls, star imports, ``f"{x=}"``, nothing to rename in a
    function (the analyser checks names there only). ``eval(input())`` (2to3's reading of
    numbers, half of CodeNet) is allowed: it breaks only if stdin spells a new name.
    """
    src = _Source(code)
    _refuse_name_reflection(src)
    mapping = _rename_plan(src.tree, rng)
    if not mapping:
        raise TransformRefused("nothing to rename in function scope (names checked there only)")
    if any(isinstance(n, ast.Attribute) and n.attr in ("__name__", "__qualname__", "__code__")
           and isinstance(n.value, ast.Name) and n.value.id in mapping
           for n in ast.walk(src.tree)):  # fmt: skip
        raise TransformRefused("introspects names (__name__, frames, inspect, __main__)")
    lines = [line.encode("utf-8") for line in src.lines]
    for line, start, end, new in sorted(_rename_edits(src, lines, mapping), reverse=True):
        lines[line - 1] = lines[line - 1][:start] + new.encode("utf-8") + lines[line - 1][end:]
    out = b"".join(lines).decode("utf-8")
    try:
        same = ast.dump(ast.parse(out)) == ast.dump(_renamed_tree(src.tree, mapping))
    except SyntaxError:
        same = False
    if not same:
        raise TransformRefused(_MISMATCH)
    return _compiled(out, code)


def _refuse_name_reflection(src: _Source) -> None:
    if _calls(src.tree, _REFLECTION):
        raise TransformRefused("reaches names through globals/locals/vars/exec/dir")
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            raise TransformRefused("** unpacking into a call (keywords by name)")
        stdin = ("input", "stdin", "readline")  # eval(input()) evaluates data, not our names
        if getattr(getattr(node, "func", None), "id", None) == "eval" and not any(
            getattr(n, "id", getattr(n, "attr", None)) in stdin for n in ast.walk(node)
        ):
            raise TransformRefused("eval of something other than stdin data")
        segment = ast.get_source_segment(src.code, node) if isinstance(node, ast.JoinedStr) else ""
        if re.search(r"=\s*(![rsa])?\s*(:[^{}]*)?}", segment or ""):
            raise TransformRefused("f-string '=' specifier prints the name")
    if re.search(_FRAMES, src.code):
        raise TransformRefused("introspects names (frames, inspect, __main__)")
    if _star_import(src.tree):
        raise TransformRefused("star import")


def _rename_plan(tree: ast.Module, rng: random.Random) -> dict[str, str]:
    """Old -> new name for every renamable name; empty if none is in a function scope."""
    bound, in_function, excluded = set(), set(), set()

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = "function" if isinstance(child, (*_FUNCTIONS, ast.Lambda)) else scope
            if isinstance(child, ast.ClassDef):
                inner = "class"
                excluded.add(child.name)
            names = {child.name} if isinstance(child, _FUNCTIONS) else _binds(child)
            if scope == "class" and not isinstance(child, ast.arg):
                excluded.update(names)  # attributes and methods
            bound.update(names)
            if scope == "function" or isinstance(child, (*_FUNCTIONS, ast.arg)):
                in_function.update(names)
            visit(child, inner)

    visit(tree, "module")
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            excluded.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.keyword | ast.MatchAs | ast.MatchStar | ast.MatchMapping):
            excluded.add(getattr(node, "arg", None) or getattr(node, "name", None)
                         or getattr(node, "rest", None))  # fmt: skip
    renamable = sorted(n for n in bound - excluded if n not in _BUILTINS
                       and n not in _KEYWORDS and not n.startswith("__"))  # fmt: skip
    if not set(renamable) & in_function:
        return {}
    taken = _identifiers(tree) | _BUILTINS | _KEYWORDS
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    mapping = {}
    for old in renamable:
        for tries in range(10_000):
            size = rng.choice((1, 2, 2, 3)) + tries // 1000
            new = rng.choice(letters) + "".join(rng.choices(letters + "0123456789", k=size - 1))
            if new not in taken and any(c.isupper() for c in new):
                break
        taken.add(new)
        mapping[old] = new
    return mapping


def _binds(node: ast.AST) -> set[str]:
    """The names one node binds in its scope (a def's own name is its parent's business)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    return set(node.names) if isinstance(node, (ast.Global, ast.Nonlocal)) else set()


def _renamed_tree(tree: ast.Module, mapping: Mapping[str, str]) -> ast.Module:
    """The renamed tree: the reference the renamed source must parse to."""
    tree = copy.deepcopy(tree)
    kept = (ast.ClassDef, ast.alias, ast.keyword, ast.MatchAs, ast.MatchStar)
    for node in (n for n in ast.walk(tree) if not isinstance(n, kept)):
        for field in ("id", "arg", "name"):
            if getattr(node, field, None) in mapping:
                setattr(node, field, mapping[getattr(node, field)])
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [mapping.get(n, n) for n in node.names]
    return tree


def _rename_edits(src: _Source, lines: list[bytes],
                  mapping: Mapping[str, str]) -> list[tuple[int, int, int, str]]:  # fmt: skip
    """(line, start byte, end byte, new name) of every occurrence to rename."""
    edits = []

    def at(line: int, start: int, old: str, pattern: bytes = b"") -> None:
        if pattern:  # the name is somewhere after ``start``: find it
            found = re.compile(pattern + rb"(" + re.escape(old.encode()) + rb")\b")
            match = found.search(lines[line - 1], start)
            start = match.start(1) if match else -1
        end = start + len(old.encode("utf-8"))
        if start < 0 or lines[line - 1][start:end] != old.encode("utf-8"):
            raise TransformRefused(_MISMATCH)
        edits.append((line, start, end, mapping[old]))

    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in mapping:
            at(node.lineno, node.col_offset, node.id)
        elif isinstance(node, ast.arg) and node.arg in mapping:
            at(node.lineno, node.col_offset, node.arg)
        elif isinstance(node, _FUNCTIONS) and node.name in mapping:
            at(node.lineno, node.col_offset, node.name, rb"\bdef\s+")
        elif isinstance(node, ast.ExceptHandler) and node.name in mapping:
            where = node.type or node
            at(where.end_lineno, where.end_col_offset, node.name, rb"\bas\s+")
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for old in (n for n in node.names if n in mapping):
                at(node.lineno, node.col_offset + 6, old, rb"\b")
    return edits


# -- speed and memory --------------------------------------------------------------------------

_RERUN = """\
def run_program(stdin_bytes, stdout):
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding=STDIN_ENCODING,
                                 errors=STDIN_ERRORS, newline="\\n")
    sys.stdout = stdout
    dunders = ("__name__", "__builtins__", "__file__", "__doc__", "__spec__", "__loader__")
    types.FunctionType(program.__code__, {k: v for k, v in globals().items() if k in dunders})()

STDIN_ENCODING, STDIN_ERRORS = sys.stdin.encoding, sys.stdin.errors
stdin_bytes, real_stdout, first_run_cpu = sys.stdin.buffer.read(), sys.stdout, None
for _ in range(MAX_RUNS):
    with open(os.devnull, "w", encoding=real_stdout.encoding, errors=real_stdout.errors) as sink:
        try:
            run_program(stdin_bytes, sink)
        except SystemExit:
            pass
        except BaseException:
            break
        finally:
            sys.stdout = real_stdout
    first_run_cpu = first_run_cpu or time.process_time()
    if time.process_time() >= FACTOR * first_run_cpu:
        break
run_program(stdin_bytes, real_stdout)
"""


def redundant_recomputation(
    code: str, rng: random.Random, *, factor: float = 4.0, max_runs: int = 100_000
) -> str:
    """Patterns: "Redundant objects, deep copies" [SynH-Rank Table 2].

    Reruns the whole program from scratch (a function ``program`` declaring its module names
    ``global``, called with fresh globals) on a replay of the buffered stdin, discarding all
    output but the last run's, until the process has used ``factor`` times the CPU it had
    after the first run (at most ``max_runs``): a fixed count is not measurable where the
    ~13 ms start-up dwarfs a program's work. A run ending by ``exit()`` counts; one raising
    ends the repetition (the real run raises the same). Refused: stdin/stdout by file
    descriptor, process-wide effects (threads, ``atexit``), introspection, star imports,
    classes (``__qualname__`` would change), module-level ``global`` and annotations.
    """
    if not factor > 1 or type(max_runs) is not int or max_runs < 1:
        raise ValueError(f"factor must be > 1 and max_runs >= 1, got {factor!r}, {max_runs!r}")
    src = _Source(code)
    _check_harness(src, in_function=True)
    start = _module_start(src.tree)
    if start >= len(src.tree.body):
        raise TransformRefused("no statements")
    names = _bound_names(src, *src.line_run(src.tree.body, start, len(src.tree.body)))
    header = [(0, f"import {m}") for m in ("io", "os", "sys", "time", "types")]
    header += [(0, ""), (0, ""), (0, "def program():")]
    header += [(1, f"global {', '.join(names)}")] if names else []
    tail = _RERUN.replace("MAX_RUNS", str(max_runs)).replace("FACTOR", repr(float(factor)))
    footer = [(0, ""), (0, "")] + [(0, line) for line in tail.splitlines()]
    return _compiled(_wrap(code, lambda t: (t.body, start, len(t.body)), header, footer), code)


def buffer_duplicates(code: str, rng: random.Random, *, factor: float = 3.0) -> str:
    """Implementation: "Buffering entire inputs, duplicates" [SynH-Rank Table 2].

    Reads all of stdin after the leading imports, holds duplicates of it to the end and lets
    the program read a replay (the same bytes, decoded as stdin decodes them). The duplicates
    total ``factor`` times the peak resident memory at that point (the interpreter's ~8 MB
    plus the imports'): a copy of a tiny input is not measurable next to the interpreter.
    Refused: stdin by file descriptor, introspection, star imports. Linux (``ru_maxrss``).
    """
    if not factor > 0:
        raise ValueError(f"factor must be > 0, got {factor!r}")
    src = _Source(code)
    _check_harness(src, in_function=False)
    taken = _identifiers(src.tree)
    io_, res, sys_ = (_fresh(taken, f"{m}_module") for m in ("io", "resource", "sys"))
    data, dups, peak = (_fresh(taken, n) for n in ("buffered_input", "input_duplicates",
                                                   "peak_bytes"))  # fmt: skip
    rows = [
        (0, f"import io as {io_}"), (0, f"import resource as {res}"), (0, f"import sys as {sys_}"),
        (0, ""), (0, f"{data} = {sys_}.stdin.buffer.read()"),
        (0, f"{peak} = 1024 * {res}.getrusage({res}.RUSAGE_SELF).ru_maxrss"),
        (0, f"{dups} = {data} * max(1, int({float(factor)!r} * {peak}) // max(1, len({data})))"),
        (0, f"{sys_}.stdin = {io_}.TextIOWrapper("),
        (1, f"{io_}.BytesIO({data}), encoding={sys_}.stdin.encoding,"),
        (1, f'errors={sys_}.stdin.errors, newline="\\n",'), (0, ")"), (0, ""),
    ]  # fmt: skip
    # after the imports, so that the peak includes what they load (numpy: ~25 MB), unless one
    # takes a name from sys (``from sys import stdin`` would keep the real, consumed stdin)
    from_sys = any(isinstance(n, ast.ImportFrom) and n.module == "sys" for n in src.tree.body)
    return _compiled(_insert_at_module_start(code, rows, imports_first=not from_sys), code)


def _entry(name: str, dimension: str, category: str, text: str, apply: Callable) -> Transformation:
    about = " ".join((apply.__doc__ or "").strip().split("\n\n")[1].split())  # 2nd paragraph
    return Transformation(name, dimension, "low", category, text, about, apply)


TRANSFORMATIONS: dict[str, Transformation] = {
    t.name: t
    for t in (
        _entry("cryptic_names", "maintainability", "Readability",
               "Cryptic names, deeply nested logic", cryptic_names),
        _entry("deep_nesting", "maintainability", "Readability",
               "Cryptic names, deeply nested logic", deep_nesting),
        _entry("bare_except", "maintainability", "Robustness",
               "Bare except, hidden root causes", bare_except),
        _entry("global_state", "maintainability", "Modernity",
               "Deprecated patterns, global variables", global_state),
        _entry("dead_code", "maintainability", "Structure",
               "Deep hierarchies, inconsistent layering", dead_code),
        _entry("redundant_recomputation", "speed", "Patterns",
               "Redundant objects, deep copies", redundant_recomputation),
        _entry("buffer_duplicates", "memory", "Implementation",
               "Buffering entire inputs, duplicates", buffer_duplicates),
    )
}  # fmt: skip
"""Every transformation by name [SynH-Rank §4.1, Table 2's low-quality phrases]."""


def transform_variants(
    variants: Iterable[Variant],
    names: Sequence[str] | None = None,
    *,
    seed: int = 0,
    registry: Mapping[str, Transformation] | None = None,
    progress: bool = False,
) -> tuple[list[Variant], list[Drop]]:
    """Low-quality variants of every input variant by every named transformation.

    Args:
        variants: the programs to degrade (usually a task's real high-quality submissions).
        names: transformations to apply (default: all of ``registry``), in this order.
        seed: each (variant, name) draws from a generator seeded by ``(seed, variant_id,
            name)``: outputs do not depend on input order.
        registry: where names are looked up (default :data:`TRANSFORMATIONS`); entries with
            another ``apply`` (``dataclasses.replace``) set other options.
        progress: show a progress bar.

    Returns:
        ``(new variants, drops)``: per input and name a ``Variant(origin="transform",
        dimension, level="low", category=name, guideline=phrase, parent=input.variant_id)``
        or a ``Drop("transform", reason, input.variant_id, name)``. An unknown name is a
        ValueError; a failure other than :class:`TransformRefused` (a bug) a RuntimeError.
    """
    registry = TRANSFORMATIONS if registry is None else registry
    if isinstance(names, str):
        raise TypeError(f"names must be a list of transformation names, got the string {names!r}")
    chosen = list(registry) if names is None else list(names)
    unknown = [n for n in chosen if n not in registry]
    if unknown:
        raise ValueError(f"unknown transformations {unknown}; known: {', '.join(registry)}")
    out, drops = [], []
    for variant in tqdm(list(variants), desc="transform", unit="variant", disable=not progress):
        if not isinstance(variant, Variant):
            raise TypeError(f"variants must be Variant records, got {type(variant).__name__}")
        vid = variant.variant_id
        for name in chosen:
            t = registry[name]
            try:
                code = t.apply(variant.code, random.Random(f"{seed}\x1f{vid}\x1f{name}"))
            except TransformRefused as err:
                drops.append(Drop(STAGE, err.reason, vid, name))
                logger.debug("%s refused %s: %s", name, vid, err)
                continue
            except Exception as err:
                raise RuntimeError(f"transformation {name!r} failed on {vid}: {err!r}") from err
            out.append(Variant(variant.task_id, code, "transform", t.dimension, t.level, name,
                               t.guideline, parent=vid))  # fmt: skip
    return out, drops


__all__ = ["STAGE", "TRANSFORMATIONS", "TransformRefused", "Transformation", "bare_except",
           "buffer_duplicates", "cryptic_names", "dead_code", "deep_nesting", "global_state",
           "redundant_recomputation", "transform_variants"]  # fmt: skip
