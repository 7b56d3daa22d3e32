"""The prompts a release's generator answers, as chat ``messages``, and the parsers of its replies.

Every function returns ``[{"role": "system", ...}, {"role": "user", ...}]`` ready for any
:class:`coreb_toolkit.releases.generators.Generator`. Each asks for plain text (no JSON, no
Markdown), so the
pipeline only needs :func:`strip_artifacts` / :func:`parse_lines` / :func:`extract_code` on the
reply, whichever model wrote it.

Wording. Where the official CoREB runner ships a prompt for the task, its wording is reused
(``coreb_runner/prompts/annotate_prompt.py`` ``AnnotatePrompt``, ``query_gen_prompt.py``
``QuestionContentAbbreviatePrompt`` / ``QueryGenPrompt``, ``code_gen_prompt.py``
``CodeGenPrompt``; package ``coreb`` 0.1.0, Apache-2.0, reproduced in the paper as Listings 2
and 3). Departures from it, and why:

* no JSON envelope and no test cases: here only the statement is rewritten and the tests are
  never touched, so names the tests call (``keep_identifiers``) must survive the rewrite;
* search queries are short (the paper's Search subtask averages ~19 tokens, Table 4), whereas
  the runner's query prompt asks for 15-40 words and a list of similar problems;
* the four hard-negative prompts are written here from the paper's Appendix A.2 (the runner
  does not ship them).

References:
    CoREB paper (``shared/seeds/coreb-paper.txt``): §3 Step 2 (counterfactual rewriting),
    Appendix A.1 (Listings 2-3), A.2 (hard negatives), A.3 (``canonical_retro``, ``search``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence

logger = logging.getLogger(__name__)

Messages = list[dict[str, str]]

#: The paper's four perturbation strategies for text hard negatives (Appendix A.2), in order.
NOISE_STRATEGIES: tuple[str, ...] = (
    "operation_type",
    "optimization_objective",
    "algorithmic_approach",
    "problem_domain",
)

#: The paper samples each hard negative at a temperature in this range "to encourage
#: diversity" (Appendix A.2, with Qwen-32B); callers that want the paper's setting draw from it.
NOISE_TEMPERATURE_RANGE: tuple[float, float] = (0.85, 1.0)

#: The ``sub_query_type`` values of the Search subtask (Appendix A.3).
SEARCH_QUERY_KINDS: tuple[str, ...] = (
    "description_search",
    "algorithm_search",
    "language_agnostic",
)

_SYSTEM = (
    "You are an expert competitive programmer and technical writer who prepares problems for a "
    "code retrieval benchmark. Follow the instructions exactly and reply with plain text only: "
    "no Markdown headings, no labels, no preamble, no explanation."
)


def _check_statement(statement: str) -> str:
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"expected a non-empty problem statement (str), got {statement!r}")
    return statement.strip()


def _messages(user: str, system: str = _SYSTEM) -> Messages:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ---------------------------------------------------------------------------------------------
# Counterfactual rewriting (CoREB §3 Step 2, Appendix A.1 Listing 2)
# ---------------------------------------------------------------------------------------------


def rewrite_messages(statement: str, *, keep_identifiers: Sequence[str] = ()) -> Messages:
    """Counterfactual rewrite: same formal specification, different surface form.

    The rewrite changes names, story and wording so that a model which memorised the original
    cannot recognise it, while the input/output contract, constraints and examples' values stay
    the same, so the original tests still judge solutions of the rewritten problem.

    Args:
        statement: the problem statement to rewrite.
        keep_identifiers: names the tests depend on (the entry point, a class name) that must
            not be renamed; the runner's prompt renames them together with the starter code,
            which is not possible here because the tests are not rewritten.
    """
    statement = _check_statement(statement)
    keep = [k for k in keep_identifiers if k]
    keep_rule = (
        "- Keep these identifiers exactly as written, because the test cases call them: "
        + ", ".join(f"`{k}`" for k in keep)
        + "\n"
        if keep
        else "- Keep every function, method and class name that the tests would call unchanged\n"
    )
    # Transformations and guidelines: wording of coreb_runner AnnotatePrompt (Apache-2.0).
    user = f"""# Code Problem Annotation Task

## Task Description
You are tasked with transforming a coding problem into a counterfactual version to avoid data \
contamination. Your goal is to preserve the core algorithmic challenge without changing the output \
while changing superficial details.

## Transformation Instructions
Please create a counterfactual version of this problem by applying these transformations:
1. Named Entity Replacement: replace all proper nouns, character names, company names, etc.
   Example: "Alice wants to sort her books" -> "Marcus needs to organize his collection"
2. Domain/Context Shifting: change the problem domain while keeping the algorithmic challenge \
identical.
   Example: "Calculate profit from stock trades" -> "Determine score changes in a game tournament"
3. Noun Phrase Substitution: replace key objects/items with different but functionally \
equivalent ones.
   Example: "array of integers" can stay the same, but "list of books" -> "array of products"
4. Synonym Replacement: replace verbs and adjectives with synonyms.
   Example: "maximize profit" -> "optimize earnings"
5. Variable Name Changes: rename local variables and parameters in any text or example code.

## Important Guidelines
- Preserve the exact same algorithmic challenge and difficulty
- Maintain the same input/output structure and constraints
- Keep the same time/space complexity requirements
- Ensure the transformed problem requires the same solution approach
{keep_rule}- Keep every purely numerical example (numbers, operators, arrays) exactly as it is; in \
non-numerical examples make only the minimal changes needed to match the new context, with the \
same expected outputs
- Keep the input and output formats character for character (order, separators, casing of \
literal output words)

## Original Problem
{statement}

## Your Counterfactual Version
Reply with the complete transformed problem statement only, as plain text, without a title line \
such as "Modified Problem" and without any explanation."""
    return _messages(user)


# ---------------------------------------------------------------------------------------------
# Abbreviation (Appendix A.1 Listing 3, A.3 canonical_retro)
# ---------------------------------------------------------------------------------------------


def abbreviation_messages(statement: str) -> Messages:
    """A 50-150 word retrieval-oriented summary: core goal and key constraints, no narrative.

    This is the query of the ``canonical_retro`` subtasks and the ``abbreviated_text`` of the
    text corpus (Appendix A.3).
    """
    statement = _check_statement(statement)
    # Wording of coreb_runner QuestionContentAbbreviatePrompt (Apache-2.0), minus its JSON
    # envelope and with the statement (title included, if any) as a single input.
    user = f"""# Question Content Abbreviation Task

## Task Description
You are an expert at creating concise, retrieval-optimized summaries of coding problem \
descriptions. Your goal is to distill the essential information from a problem statement into a \
compact format that preserves key details while removing redundancy.

## Core Principles
Essential Information Preservation
- Retain the core problem goal, key constraints, and unique requirements
- Preserve specific numerical limits, data types, and optimization objectives
- Keep distinctive algorithmic concepts or problem-specific terminology
Conciseness Optimization
- Remove verbose explanations, examples, and repetitive content
- Eliminate unnecessary background information, story or motivational text
- Compress similar concepts into unified statements
Retrieval-Friendly Format
- Use clear, structured language that matches how developers search
- Include specific technical terms and constraints that distinguish this problem

## Abbreviation Guidelines
1. Problem Goal: start with a clear, concise statement of what needs to be accomplished
2. Key Constraints: include specific limits, ranges, and requirements (e.g., "array size <= 10^5")
3. Input/Output Format: specify data types and formats when critical to the problem
4. Unique Requirements: highlight distinctive aspects that differentiate this problem from \
similar ones

## Output Requirements
- Length: 50-150 words maximum
- Structure: clear, declarative sentences in one paragraph
- Clarity: avoid ambiguous pronouns or references

## Problem
{statement}

Reply with the abbreviated description only, as plain text."""
    return _messages(user)


# ---------------------------------------------------------------------------------------------
# Developer-style search queries (Appendix A.3 search)
# ---------------------------------------------------------------------------------------------

# Kind descriptions: coreb_runner QueryGenPrompt "Query Type Specifications" (Apache-2.0).
_KIND_RULES = {
    "description_search": "Extract requirements and functionality SPECIFIC to the target problem",
    "algorithm_search": (
        "Focus on algorithmic techniques SPECIFIC to the target problem's solution (name the "
        "algorithm or data structure)"
    ),
    "language_agnostic": (
        "Focus on algorithmic concepts SPECIFIC to the target problem without language specificity"
    ),
}


def search_query_messages(statement: str, n: int, *, kind: str | None = None) -> Messages:
    """``n`` short developer-style search queries, one per line.

    The Search subtask's queries average ~19 tokens (CoREB Table 4), e.g. "Find the Kth
    character after repeatedly inverting case and concatenating a string 10^100 times"
    (Listing 8), so the prompt caps them at 15 words.

    Args:
        statement: the (rewritten) problem statement.
        n: how many queries, >= 1.
        kind: one of :data:`SEARCH_QUERY_KINDS` to ask for that ``sub_query_type`` only; ``None``
            mixes the three kinds.
    """
    statement = _check_statement(statement)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (number of queries), got {n!r}")
    if kind is not None and kind not in _KIND_RULES:
        raise ValueError(f"kind must be None or one of {SEARCH_QUERY_KINDS}, got {kind!r}")
    kinds = [kind] if kind else list(SEARCH_QUERY_KINDS)
    kind_lines = "\n".join(f"- {k}: {_KIND_RULES[k]}" for k in kinds)
    mix = "" if kind else " Vary the query types across the queries."
    user = f"""# Code Retrieval Query Generation Task

You are an expert at generating developer-style search queries for a code embedding retrieval \
system. Write {n} search {"query" if n == 1 else "queries"} that a developer would type into a \
code search engine to find a solution to the problem below.

## Query types
{kind_lines}

## Requirements
- Natural Language Style: write queries like real developers searching online or in \
documentation
- Short: at most 15 words per query, like a search box query, not a full description
- Target-Specific Focus: use precise, problem-specific terminology, inputs, outputs, and \
constraints
- Avoid Placeholder Variables: never use symbols like m, t, n without describing their meaning
- Do not mention a programming language{mix}

## Problem
{statement}

## Output Format
Exactly {n} {"line" if n == 1 else "lines"}, one query per line, with no numbering, bullets, \
quotes or any other text."""
    return _messages(user)


# ---------------------------------------------------------------------------------------------
# Text hard negatives: the four perturbation strategies (Appendix A.2)
# ---------------------------------------------------------------------------------------------

_NOISE_RULES = {
    "operation_type": (
        "Operation-type change",
        "Alter the fundamental operation the algorithm must perform (e.g., replace a "
        '"remove / delete" goal with a "select / construct / merge" goal) so that the core '
        "algorithmic action is different, not merely renamed.",
    ),
    "optimization_objective": (
        "Optimization-objective change",
        'Invert or replace the optimization criterion (e.g., change "maximize" to "minimize" '
        'or "count distinct") so that what the algorithm optimizes for changes structurally.',
    ),
    "algorithmic_approach": (
        "Algorithmic-approach change",
        "Replace the algorithmic paradigm required to solve the problem (e.g., subsequence "
        "reasoning -> contiguous-array or graph problems; greedy -> dynamic programming; "
        "two-pointer -> binary search) so that the required solution strategy is "
        "qualitatively different.",
    ),
    "problem_domain": (
        "Problem-domain change",
        "Alter input data types and the problem context (e.g., strings -> graphs, arrays -> "
        "trees), producing a structurally distinct problem that shares no obvious surface "
        "mapping to the original.",
    ),
}


def noise_text_messages(statement: str, strategy: str) -> Messages:
    """A hard-negative problem description made with one of the paper's four strategies.

    A hard negative "shares surface-level vocabulary or structural similarity with the original
    but differs in its core algorithmic challenge" (Appendix A.2), so a solution of the original
    must not solve it; the strategy decides what is changed.

    Args:
        statement: the (rewritten) problem statement.
        strategy: one of :data:`NOISE_STRATEGIES`.
    """
    statement = _check_statement(statement)
    if strategy not in _NOISE_RULES:
        raise ValueError(f"strategy must be one of {NOISE_STRATEGIES}, got {strategy!r}")
    title, rule = _NOISE_RULES[strategy]
    user = f"""# Hard Negative Problem Generation Task

## Task Description
You write a new programming problem description that looks similar to the original problem \
below but is a different problem: it shares much of its vocabulary, setting and structure, yet a \
correct solution of the original problem must NOT solve the new one.

## Perturbation Strategy: {title}
{rule}

## Requirements
- Write a complete, self-contained and solvable problem statement: the task, the input, the \
output and the constraints
- Keep the style, tone and approximate length of the original
- The difference must be in the core algorithmic challenge, not only in names or wording
- Do not mention the original problem, the strategy, or that anything was changed

## Original Problem
{statement}

Reply with the new problem description only, as plain text, without a heading such as \
"Modified Problem Description:"."""
    return _messages(user)


# ---------------------------------------------------------------------------------------------
# Code generation (Appendix A.8; coreb_runner CodeGenPrompt)
# ---------------------------------------------------------------------------------------------


def code_generation_messages(
    statement: str,
    language: str,
    *,
    starter_code: str | None = None,
    entry_point: str | None = None,
) -> Messages:
    """A complete solution of ``statement`` in ``language``, between ``<code>`` tags.

    Without ``entry_point`` this is the runner's stdin/stdout program (LiveCodeBench standard
    input problems); with it, the problem is function-style (HumanEval, MBXP, LeetCode) and the
    tests call ``entry_point``, so no ``main`` reading stdin is asked for.
    Use :func:`extract_code` on the reply.
    """
    statement = _check_statement(statement)
    if not isinstance(language, str) or not language.strip():
        raise ValueError(f"expected a programming language name, got {language!r}")
    # Wording of coreb_runner CodeGenPrompt (Apache-2.0).
    if entry_point:
        shape = (
            f"2. Implement `{entry_point}` exactly as the tests call it (same name, parameters "
            "and return type); do not read from stdin or write to stdout.\n"
            "3. Add any helper functions you need (without comments)."
        )
    else:
        shape = (
            "2. Implement a `main()` function that:\n"
            "   - reads all input from **stdin**,\n"
            "   - computes the answer,\n"
            "   - writes the answer to **stdout**.\n"
            "3. Add any helper functions you need (without comments).\n"
            "4. **Call `main()` at the bottom** of the file, otherwise the solution will not be "
            "executed."
        )
    starter = (
        f"\nDo not modify the supplied starter skeleton:\n\n{starter_code.strip()}\n"
        if starter_code and starter_code.strip()
        else ""
    )
    user = f"""You are an expert competitive-programming assistant.

Task
----
Write an *entire*, *runnable* program in **{language}** that solves the problem below:

{statement}

Requirements
------------
1. Provide **ONLY executable source code**:
   - NO comments of any kind
   - NO explanations
   - NO markdown formatting except the <code> tags
{shape}
{starter}
Output Format
-------------
Surround the final code with

<code>
...your code...
</code>

CRITICAL: Generate the COMPLETE solution. Do NOT stop mid-function. Ensure all functions are \
complete and the program is fully executable.

Now produce the final program."""
    return _messages(user, system="You are an expert competitive-programming assistant.")


# ---------------------------------------------------------------------------------------------
# Reply parsers
# ---------------------------------------------------------------------------------------------

# A line that is only an LLM label ("**Modified Problem Description:**", "## Rewritten
# statement", "Abbreviated version:"): removed. Deliberately narrow, so that a statement's own
# "Input:", "Output:", "Constraints:" or "Example 1:" lines survive.
_LABEL_WORDS = (
    r"(?:modified|rewritten|new|transformed|counterfactual|abbreviated|perturbed|revised|"
    r"updated|altered|generated|hard[- ]negative|final|concise|short(?:ened)?)"
)
_LABEL_NOUNS = (
    r"(?:problem(?:\s+(?:description|statement))?|description|statement|version|summary|"
    r"abbreviation|quer(?:y|ies)|text)"
)
_LABEL_MIDDLE = r"(?:\s+(?:problem|coding|programming|search|counterfactual))?"
_LABEL = rf"{_LABEL_WORDS}{_LABEL_MIDDLE}\s+{_LABEL_NOUNS}"
_LABEL_LINE = re.compile(
    rf"^\s*(?:#{{1,6}}\s*)?[*_]*\s*{_LABEL}\s*[*_]*\s*:?\s*[*_]*\s*$", re.I | re.M
)
# The same label as the prefix of the first content line: "Modified Problem Description: Given"
_LABEL_PREFIX = re.compile(rf"^\s*(?:#{{1,6}}\s*)?[*_]*\s*{_LABEL}\s*[*_]*\s*:\s*[*_]*\s*", re.I)
# A chatty preamble: "Here is the rewritten problem:", "Sure! Here's a counterfactual version:"
_PREAMBLE = re.compile(
    r"^\s*(?:(?:sure|certainly|okay|ok)[!,.]?\s*)?here(?:'s| is| are)\b[^\n]*:\s*$", re.I
)
_HEADER = re.compile(r"^(\s*)#{1,6}\s+", re.M)
_LEADING_BOLD = re.compile(r"^(\s*)\*\*([^*\n]+?)\*\*", re.M)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*\n(.*?)\n\s*```\s*$", re.S)


def strip_artifacts(text: str) -> str:
    """Remove the Markdown headers and labels an LLM wraps around the text it was asked for.

    CoREB post-processes its generated texts "with a regular-expression pass to strip
    LLM-produced markdown headers and formatting artifacts (e.g., 'Modified Problem
    Description:')" (Appendix A.2). Removed: a chatty first line ("Here is ...:"), label lines
    and label prefixes ("**Modified Problem Description:**"), a code fence around the whole
    reply, quotes around the whole reply, ``#`` header markers (their text is kept) and bold
    markers at the start of a line; runs of blank lines are collapsed. The statement's own
    section labels ("Input:", "Example 1:") are kept.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected the generator's reply (str), got {type(text).__name__}")
    text = text.replace("\r\n", "\n").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    lines = text.split("\n")
    while lines and (not lines[0].strip() or _PREAMBLE.match(lines[0])):
        lines.pop(0)
    text = _LABEL_LINE.sub("", "\n".join(lines)).strip()
    text = _LABEL_PREFIX.sub("", text, count=1)
    text = _HEADER.sub(r"\1", text)
    text = _LEADING_BOLD.sub(r"\1\2", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and text.count(text[0]) == 2:
        text = text[1:-1].strip()
    return text


# "- ", "* ", "1. ", "(2) ", "Query 3: " at the start of a query line
_BULLET = re.compile(
    r"^\s*(?:[-*•+]\s+|\(?\d{1,3}[.)]\s+|query\s*\d{0,3}\s*:\s*|(?:query\s*|q)\d{1,3}\s*[.)-]\s*)",
    re.I,
)


def _json_queries(text: str) -> list[str] | None:
    """Queries from a JSON reply (``["..."]`` or the runner's ``{"queries": [{"query": ...}]}``)."""
    body = _FENCE.match(text)
    raw = body.group(1) if body else text
    if not raw.lstrip().startswith(("{", "[")):
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if isinstance(data, dict):
        data = data.get("queries")
    if not isinstance(data, list):
        return None
    out = [q.get("query") if isinstance(q, dict) else q for q in data]
    return [q for q in out if isinstance(q, str)]


def parse_lines(text: str, n: int) -> list[str]:
    """The first ``n`` distinct query lines of a reply, numbering, bullets and quotes removed.

    Lines that are labels or preambles ("Here are 3 queries:", "Search queries:") and code
    fences are skipped; duplicates (case-insensitive) are dropped. A JSON reply in the official
    runner's format is also accepted.

    Raises:
        ValueError: when ``n`` < 1 or the reply holds no query at all. A reply with fewer than
            ``n`` queries gives what it has, with a warning: one weak reply should not stop a
            release, and the release records how many queries each problem got.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (number of lines), got {n!r}")
    if not isinstance(text, str):
        raise ValueError(f"expected the generator's reply (str), got {type(text).__name__}")
    candidates = _json_queries(text.strip())
    if candidates is None:
        candidates = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    seen: set[str] = set()
    for raw in candidates:
        line = raw.strip()
        if not line or line.startswith("```") or _PREAMBLE.match(line) or _LABEL_LINE.match(line):
            continue
        line = _HEADER.sub("", line).strip().strip("*_").strip()
        if line.endswith(":"):  # "Search queries:", "**Description search:**"
            continue
        line = _BULLET.sub("", line).strip().strip("*_").strip()
        if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'`":
            line = line[1:-1].strip()
        key = line.casefold()
        if line and key not in seen:
            seen.add(key)
            out.append(line)
        if len(out) == n:
            break
    if not out:
        raise ValueError(f"no query line found in the generator's reply: {text[:200]!r}")
    if len(out) < n:
        logger.warning("expected %d query lines, the reply holds %d: %r", n, len(out), text[:200])
    return out


_CODE_TAG = re.compile(r"<code>\s*\n?(.*?)\s*</code>", re.S | re.I)
_ANY_FENCE = re.compile(r"```[\w+#-]*[ \t]*\n(.*?)```", re.S)


def extract_code(text: str) -> str:
    """The program in a code-generation reply: inside ``<code>`` tags, else the longest fence.

    A fence inside the ``<code>`` tags (models often add one) is removed too.

    Raises:
        ValueError: when the reply contains neither ``<code>`` tags nor a fenced block.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected the generator's reply (str), got {type(text).__name__}")
    tagged = _CODE_TAG.search(text)
    body = tagged.group(1) if tagged else None
    fences = _ANY_FENCE.findall(body if body is not None else text)
    if fences:
        body = max(fences, key=len)
    if body is None or not body.strip():
        raise ValueError(f"no <code> block or fenced code in the generator's reply: {text[:200]!r}")
    return body.strip("\n").rstrip() + "\n"
