"""Code hard negatives without an LLM: small, plausible edits ("mutants") of a correct solution.

A CoREB hard negative is code for the *same* problem that looks right and is wrong. An LLM can
write such code, but mutation testing gets it for free from a verified-correct solution: flip
``<`` to ``<=``, shift an integer literal by one, swap ``and`` for ``or``, drop one statement.
The release pipeline executes every mutant in the sandbox and keeps those that compile, run and
fail their tests (:func:`select_failing`): a mutant that still passes may be equivalent to the
original, and one that does not compile or only times out is not a plausible solution.

Nothing here parses the five languages fully. A small per-language lexer
(:mod:`coreb_toolkit.releases.lexer`) masks string, character and regex literals, comments and
(C++) preprocessor lines, so that no mutation ever lands inside them; the mutation operators
(:mod:`coreb_toolkit.releases.mutation_sites`) work on the token stream that is left (and, for
statements and if/else blocks, on whole lines). Each mutant is checked to re-tokenise to exactly
the intended tokens (``a+-b`` must not become ``a--b``), and Python mutants must still parse.

Operators, most plausible first (the order :func:`mutants` returns them in):

====  ===============  ===========================================================================
tier  operator         edit
====  ===============  ===========================================================================
0     boundary         ``<`` <-> ``<=``, ``>`` <-> ``>=`` (never a C++/Java template bracket, a
                       Ruby ``class A < B``, ``<<``, ``->``, ``<-`` or ``=>``)
0     range_bound      Python ``range(.., stop)`` -> ``stop +/- 1``; Ruby ``a..b`` <-> ``a...b``
0     off_by_one       a decimal integer literal +/- 1 (``0`` only goes up)
1     comparison       ``==`` <-> ``!=``; Python ``in`` <-> ``not in``, ``is`` <-> ``is not``
1     logical          ``&&`` <-> ``||``; ``and`` <-> ``or`` (Python, Ruby, C++ alternative tokens)
2     arithmetic       binary ``+`` <-> ``-`` and ``*`` <-> ``/`` (not next to a string literal),
                       ``+=`` <-> ``-=``, Python ``//`` -> ``/``
2     boolean          ``True`` <-> ``False`` (Python), ``true`` <-> ``false`` (the others)
2     min_max          a call of ``min`` <-> ``max`` (``Math.max``, ``.min_by``, ``max_element``)
3     negation         drop a unary ``!`` / ``not``; Ruby ``unless`` -> ``if``
3     swap_branches    swap the bodies of ``if .. else`` (braced in C++/Java/Go, by indentation in
                       Python and Ruby)
4     drop_statement   delete one simple statement line: ``x += ..``, ``i++``, a call statement,
                       ``break``/``continue``/``next``, a re-assignment of an existing variable
====  ===============  ===========================================================================
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from coreb_toolkit.releases.lexer import Lexed, lex
from coreb_toolkit.releases.mutation_sites import OPERATOR_TIERS, Site, mutation_sites
from coreb_toolkit.sources.base import SourceCandidate
from coreb_toolkit.vocabulary import LANGUAGE_NAMES

__all__ = [
    "FAILING_VERDICTS",
    "OPERATOR_TIERS",
    "Mutation",
    "is_failing",
    "mutant_candidates",
    "mutants",
    "select_failing",
]

#: Verdicts that make a mutant a hard negative: it ran and produced a wrong answer or crashed.
FAILING_VERDICTS = frozenset({"wrong_answer", "runtime_error"})


@dataclass(frozen=True)
class Mutation:
    """What one mutant changed (kept in the mutant's metadata).

    Attributes:
        operator: the mutation operator (``boundary``, ``off_by_one``, ... see the module doc).
        line: 1-based line within the solution where the change starts.
        before: the changed snippet as it was (a token, a range stop, a line, an if/else).
        after: what replaced it (``""`` for a dropped statement).
    """

    operator: str
    line: int
    before: str
    after: str


def _python_parser(solution: str) -> str | None:
    """How to check that a Python mutant still parses: as a module, or as a function body (a
    HumanEval solution is an indented body); None when even the original does not parse."""
    for mode in ("module", "body"):
        try:
            ast.parse(solution if mode == "module" else "def _mutant():\n" + solution)
            return mode
        except (SyntaxError, ValueError):
            continue
    return None


def _parses(text: str, mode: str) -> bool:
    try:
        ast.parse(text if mode == "module" else "def _mutant():\n" + text)
    except (SyntaxError, ValueError):
        return False
    return True


def _relexes_as_intended(lexed: Lexed, site: Site, text: str) -> bool:
    """The mutant's tokens are the original's with the edit applied: ``a+-b`` -> ``a--b`` (a
    decrement) or ``x<=-1`` -> ``x<-1`` (a Go channel receive) are refused."""
    if site.token_edit is None:
        return True
    first, last, new = site.token_edit
    old = [t.text for t in lexed.tokens]
    got = [t.text for t in lex(text, lexed.language).tokens]
    return got == old[:first] + list(new) + old[last:]


# Spread over the solution: each earlier pick on the same line costs this many tiers, each
# earlier pick of the same operator one more.
_SAME_LINE_PENALTY = 2
_SAME_OPERATOR_PENALTY = 1


def mutants(
    solution: str, language: str, *, seed: int, limit: int = 8
) -> list[tuple[str, Mutation]]:
    """Up to ``limit`` distinct mutants of ``solution``, most plausible operators first.

    Deterministic for a ``seed`` (it picks among equally ranked sites and the direction of each
    +/- 1). Sites are spread over the solution: a line or an operator that already has a mutant
    ranks lower, so eight mutants are not eight variants of one comparison. Every mutant differs
    from ``solution``; none is changed inside a string, character or regex literal or a comment.

    Raises:
        ValueError: unknown language, a negative limit or a non-string solution.
    """
    if language not in LANGUAGE_NAMES:
        raise ValueError(f"cannot mutate {language!r}: language must be one of {LANGUAGE_NAMES}")
    if not isinstance(solution, str):
        raise ValueError(f"solution must be a string, got {type(solution).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int, got {limit!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    if limit == 0 or not solution.strip():
        return []
    rng = random.Random(seed)
    lexed = lex(solution, language)
    sites = mutation_sites(lexed, rng)
    order = {id(s): rng.random() for s in sites}
    parser = _python_parser(solution) if language == "python" else None
    chosen: list[tuple[float, int, str, Mutation]] = []
    seen = {solution}
    used_lines: Counter[int] = Counter()
    used_operators: Counter[str] = Counter()
    remaining = list(sites)
    while remaining and len(chosen) < limit:
        best = min(
            remaining,
            key=lambda s: (
                s.priority
                + _SAME_LINE_PENALTY * used_lines[s.line]
                + _SAME_OPERATOR_PENALTY * used_operators[s.operator],
                order[id(s)],
            ),
        )
        remaining.remove(best)
        text = best.apply(solution)
        if text in seen or not _relexes_as_intended(lexed, best, text):
            continue
        if parser is not None and not _parses(text, parser):
            continue
        seen.add(text)
        used_lines[best.line] += 1
        used_operators[best.operator] += 1
        mutation = Mutation(best.operator, best.line, best.before, best.after)
        chosen.append((best.priority, len(chosen), text, mutation))
    chosen.sort(key=lambda c: (c[0], c[1]))
    return [(text, mutation) for _, _, text, mutation in chosen]


# ---------------------------------------------------------------------------------------------
# Candidates.
# ---------------------------------------------------------------------------------------------


def _replace_last(text: str, old: str, new: str, where: str, candidate_id: str) -> str:
    at = text.rfind(old)
    if at < 0:
        raise ValueError(f"candidate {candidate_id!r}: its solution is not part of its {where}")
    return text[:at] + new + text[at + len(old) :]


def mutant_candidates(
    candidate: SourceCandidate, *, seed: int, limit: int = 8
) -> list[SourceCandidate]:
    """Mutants of a (verified-correct) candidate, ready for the sandbox.

    The solution is replaced at its last occurrence in ``code`` and in ``execution["code"]``
    (sources append it after the prompt, which may quote similar code). Each mutant is
    ``f"{candidate_id}/mutant-{k}"`` in :func:`mutants`' order, same problem, language and
    model, ``label=None`` (the sandbox decides), ``meta`` plus ``mutation`` and ``mutant_of``;
    its execution id is the original's plus ``__mutant-{k}``.

    Raises:
        ValueError: the candidate has no solution or execution, or its solution cannot be found
            in its code or its execution code.
    """
    cid = candidate.candidate_id
    if candidate.solution is None:
        raise ValueError(f"candidate {cid!r} has no solution to mutate (solution is None)")
    if not candidate.solution.strip():
        raise ValueError(f"candidate {cid!r} has an empty solution: nothing to mutate")
    if candidate.execution is None or not isinstance(candidate.execution.get("code"), str):
        raise ValueError(f"candidate {cid!r} has no execution code: its mutants could not run")
    solution = candidate.solution
    # Fail before mutating if either location is missing.
    _replace_last(candidate.code, solution, solution, "code", cid)
    _replace_last(candidate.execution["code"], solution, solution, "execution code", cid)
    exec_id = candidate.execution.get("id", cid)
    out: list[SourceCandidate] = []
    for k, (text, mutation) in enumerate(
        mutants(solution, candidate.language, seed=seed, limit=limit)
    ):
        record = asdict(mutation)
        execution = {
            **candidate.execution,
            "id": f"{exec_id}__mutant-{k}",
            "code": _replace_last(candidate.execution["code"], solution, text, "", cid),
        }
        if isinstance(execution.get("meta"), Mapping):
            execution["meta"] = {**execution["meta"], "mutant_of": exec_id, "mutation": record}
            if "variant" in execution["meta"]:
                execution["meta"]["variant"] = f"mutant-{k}"
        out.append(
            SourceCandidate(
                candidate_id=f"{cid}/mutant-{k}",
                problem_id=candidate.problem_id,
                language=candidate.language,
                model=candidate.model,
                code=_replace_last(candidate.code, solution, text, "", cid),
                execution=execution,
                solution=text,
                label=None,
                label_source="sandbox",
                meta={**candidate.meta, "mutation": record, "mutant_of": cid},
            )
        )
    return out


def is_failing(result: Mapping[str, Any]) -> bool:
    """Whether a sandbox result makes its mutant a hard negative.

    The rule: no test is a ``compile_error`` (code that does not build is not a plausible
    solution) and at least one test is a ``wrong_answer`` or ``runtime_error`` (it ran and was
    caught). A mutant that only times out or runs out of memory is not kept: such a verdict may
    depend on the machine, and an infinite loop is not a convincing near-miss.
    """
    verdicts = list(result.get("verdicts") or [])
    return (
        bool(verdicts)
        and "compile_error" not in verdicts
        and any(v in FAILING_VERDICTS for v in verdicts)
    )


def select_failing(
    mutants: Sequence[SourceCandidate],
    results_by_id: Mapping[str, Mapping[str, Any]],
    per_candidate: int = 1,
) -> list[SourceCandidate]:
    """The hard negatives among executed mutants: up to ``per_candidate`` per original.

    ``mutants`` are :func:`mutant_candidates`' output (for any number of originals, grouped by
    ``meta["mutant_of"]``); ``results_by_id`` maps a sandbox result's ``id`` (the mutant's
    ``execution["id"]``; its ``candidate_id`` is accepted too) to the result. A mutant is kept
    when :func:`is_failing` says so, the first ones in ``mutants`` order winning (the most
    plausible operators come first). A mutant without a result is skipped, so a pipeline may
    stop executing an original's mutants once enough have failed.

    Raises:
        ValueError: ``per_candidate`` < 1, or a candidate that is not a mutant.
    """
    if isinstance(per_candidate, bool) or not isinstance(per_candidate, int) or per_candidate < 1:
        raise ValueError(f"per_candidate must be a positive int, got {per_candidate!r}")
    kept: list[SourceCandidate] = []
    count: Counter[str] = Counter()
    for mutant in mutants:
        parent = mutant.meta.get("mutant_of")
        if parent is None or mutant.execution is None:
            raise ValueError(
                f"candidate {mutant.candidate_id!r} is not a mutant (no meta['mutant_of'] or no "
                "execution): select_failing takes mutant_candidates' output"
            )
        result = results_by_id.get(mutant.execution.get("id", ""))
        if result is None:
            result = results_by_id.get(mutant.candidate_id)
        if result is None or count[parent] >= per_candidate:
            continue
        if is_failing(result):
            kept.append(mutant)
            count[parent] += 1
    return kept
