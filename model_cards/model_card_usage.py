"""Two sections of a reranker's card: "How to use" (the exact prompt, the score formula and a
runnable snippet) and where its reranking gain stands against the CoREB paper's rerankers.

* :func:`usage_section`: for a generative yes/no reranker trained by ``coreb train reranker``
  (a checkpoint with ``coreb_reranker.json``), the prompt its base's tokenizer renders (read from
  the checkpoint's tokenizer files; the Qwen3-Reranker literals for a Qwen3 base), the task
  instructions, ``P(yes) = exp(l_yes) / (exp(l_yes) + exp(l_no))`` at the last prompt position,
  the truncation, and two snippets: coreb-toolkit's ``load_reranker(REPO)`` (an adapter repo
  loads its base from the manifest) and, where the base is a Hub id, plain ``transformers`` +
  ``peft``. Any other reranker gets the coreb-toolkit snippet.
* :func:`paper_standing`: for a reranked CoREB evaluation, the relative change of nDCG@10 per
  main task beside the deltas the paper's text states (:func:`coreb_toolkit.benchmark.
  published.published_reranking`), with the difference in first stage and depth spelled out.

Every string that comes from a run or a results file is escaped (:mod:`coreb_toolkit.untrusted`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coreb_toolkit.hub_access import is_hub_id
from coreb_toolkit.untrusted import markdown_code, markdown_fence, markdown_text
from model_cards.dataset_card import markdown_table

#: the instruction shown in the snippets (text-to-code, the paper's headline task)
SNIPPET_SUBTASK = "t2c_full_retro_any"
_QUERY = "Given a list of integers and a target, return the indices of two numbers summing to it."
_CODE = (
    "def two_sum(nums, target):\n    seen = {}\n    for i, x in enumerate(nums):\n"
    "        if target - x in seen:\n            return [seen[target - x], i]\n"
    "        seen[x] = i"
)


def _manifest(folder: str) -> dict[str, Any] | None:
    path = Path(folder) / "coreb_reranker.json"
    if not path.is_file():
        return None
    body = json.loads(path.read_text(encoding="utf-8"))
    return body if isinstance(body, dict) else None


def _prompt_text(folder: str, base: str) -> tuple[str, str] | None:
    """The prefix and suffix the checkpoint's tokenizer renders around the user message."""
    from reranker.prompt import chat_prefix_suffix

    try:
        import transformers

        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    except Exception:
        return None
    model_type = "qwen3" if "qwen3" in base.lower() else None
    return chat_prefix_suffix(tokenizer, model_type)


def _hub_id(name: str) -> bool:
    """An ``owner/name`` Hub id that is no local path."""
    return is_hub_id(name) and not Path(name).exists()


def _toolkit_snippet(repo: str) -> str:
    code = (
        '# pip install "coreb-toolkit[models,train]"\n'
        "from reranker.instructions import instruction_for\n"
        "from reranker.registry import load_reranker\n\n"
        f"reranker = load_reranker({repo!r})\n"
        f"query = {_QUERY!r}\n"
        f"code = {_CODE!r}\n"
        f"instruction = instruction_for({SNIPPET_SUBTASK!r})\n"
        "print(reranker.score([(query, code)], instruction=instruction))  # [P(yes)]"
    )
    return markdown_fence(code, "python")


def _transformers_snippet(repo: str, base: str, prefix: str, suffix: str) -> str:
    from reranker.instructions import instruction_for

    code = (
        "import torch\n"
        "from peft import PeftModel\n"
        "from transformers import AutoModelForCausalLM, AutoTokenizer\n\n"
        f"tokenizer = AutoTokenizer.from_pretrained({base!r})\n"
        f"model = AutoModelForCausalLM.from_pretrained({base!r})\n"
        f"model = PeftModel.from_pretrained(model, {repo!r}).eval()\n"
        f"prefix = {prefix!r}\n"
        f"suffix = {suffix!r}\n"
        "yes = tokenizer.convert_tokens_to_ids('yes')\n"
        "no = tokenizer.convert_tokens_to_ids('no')\n\n"
        "def score(instruction, query, document):\n"
        '    body = f"<Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {document}"\n'
        "    ids = tokenizer(prefix + body + suffix, add_special_tokens=False, "
        'return_tensors="pt")\n'
        "    with torch.no_grad():\n"
        "        logits = model(**ids).logits[0, -1]\n"
        "    return torch.softmax(logits[[yes, no]].float(), dim=0)[0].item()  # P(yes)\n\n"
        f"print(score({instruction_for(SNIPPET_SUBTASK)!r}, {_QUERY!r}, {_CODE!r}))"
    )
    return markdown_fence(code, "python")


def usage_section(info: Any) -> str:
    """The card's "How to use" section: a reranker's prompt, score and snippets, an embedder's
    sentence-transformers snippet, or (BM25) that there is nothing to load."""
    repo = info.model_id
    if info.kind == "embedder":
        code = (
            "from sentence_transformers import SentenceTransformer\n\n"
            f"model = SentenceTransformer({repo!r})\n"
            f"embeddings = model.encode([{_QUERY!r}, {_CODE!r}], normalize_embeddings=True)\n"
            "print(float(embeddings[0] @ embeddings[1]))  # cosine similarity"
        )
        return "With sentence-transformers:\n\n" + markdown_fence(code, "python")
    if info.kind != "reranker":
        return (
            "This card documents an evaluation of a model without weights to load (a lexical "
            "baseline such as BM25); the provenance below says how it was run."
        )
    training = info.training
    manifest = _manifest(training.folder) if training is not None else None
    if training is None or training.trainer != "coreb-reranker" or manifest is None:
        return (
            "With coreb-toolkit (`load_reranker` picks the backend from the model's files):\n\n"
            + _toolkit_snippet(repo)
        )
    from reranker.instructions import instruction_for
    from reranker.prompt import SYSTEM_PROMPT, THINK_BLOCK, USER_TEMPLATE

    base = str(manifest.get("base_model", training.base_model))
    options = manifest.get("options") or {}
    rendered = _prompt_text(training.folder, base)
    tasks = [("text-to-code", "t2c_full_retro_any"), ("code-to-text", "c2t_canonical_retro_any"),
             ("code-to-code", "c2c_cross_lang")]  # fmt: skip
    parts = [
        f"A generative yes/no reranker: a LoRA adapter on {markdown_code(base)} (named in "
        "`coreb_reranker.json`). Each (query, document) pair is one chat prompt; the score is "
        'the probability of the answer "yes" against "no" at the position after the prompt:',
        markdown_fence(
            "score = exp(logit[yes]) / (exp(logit[yes]) + exp(logit[no]))   "
            "# logits at the last prompt token"
        ),
        f"The system message is {markdown_code(SYSTEM_PROMPT)}; the user message is\n\n"
        + markdown_fence(USER_TEMPLATE)
        + f"\n\nand the assistant turn opens with an empty think block "
        f"({markdown_code(repr(THINK_BLOCK))}), after which the next token is the answer. "
        + (
            f"The user message is cut on the right to fit {int(options['max_length'])} tokens "
            "(the document first, as the Qwen3-Reranker usage truncates)."
            if isinstance(options.get("max_length"), int)
            else ""
        ),
        "The instructions it was trained with, one per task (`reranker/instructions.py`):\n\n"
        + markdown_table(
            ["task", "instruction"],
            [(t, markdown_code(instruction_for(s), table=True)) for t, s in tasks],
        ),
        "With coreb-toolkit (the adapter and its base, the prompt and truncation above):",
        _toolkit_snippet(repo),
    ]
    if rendered is not None:
        prefix, suffix = rendered
        parts[2:2] = [
            "The exact text around the user message, from this checkpoint's tokenizer:\n\n"
            + markdown_fence(prefix + "{user message}" + suffix)
        ]
        if _hub_id(base):
            parts += [
                "With `transformers` and `peft` alone (one pair at a time; batch with left "
                "padding and explicit position ids):",
                _transformers_snippet(repo, base, prefix, suffix),
            ]
    if not _hub_id(base):
        parts.append(
            f"The base {markdown_code(base)} is not a Hub id: coreb-toolkit resolves it (a "
            "bundled model or a local folder); elsewhere, load that base yourself."
        )
    return "\n\n".join(p for p in parts if p)


def _relative(delta: Any, first: Any) -> float | None:
    if not isinstance(delta, (int, float)) or not isinstance(first, (int, float)) or not first:
        return None
    return 100.0 * delta / first


def paper_standing(evaluations: list[Any]) -> str:
    """The reranking gain of every reranked CoREB evaluation beside the paper's (empty when
    there is none)."""
    from coreb_toolkit.benchmark.published import published_reranking

    reranked = [ev for ev in evaluations
                if ev.kind == "coreb" and ev.results.get("first_stage_rows")]  # fmt: skip
    if not reranked:
        return ""
    paper = published_reranking()
    labels = {"T2C": "t2c", "C2T": "c2t", "C2C": "c2c"}
    rows = []
    for ev in reranked:
        res = ev.results
        first = {r["name"]: r for r in res["first_stage_rows"]}
        delta: Mapping[str, Any] = {r["name"]: r for r in res.get("delta") or []}
        cells = []
        for label in labels:
            change = _relative(delta.get(label, {}).get("ndcg_at_10"),
                               first.get(label, {}).get("ndcg_at_10"))  # fmt: skip
            cells.append("-" if change is None else f"{change:+.1f}%")
        rows.append((f"this model on {markdown_text(ev.split)} (first stage "
                     f"{markdown_text(res['model'].get('first_stage', {}).get('name', '?'))}, "
                     f"top {res['rerank_top_k']})", *cells))  # fmt: skip
    for row in paper["rows"]:
        cells = ["-" if row.get(t) is None else f"{row[t]:+.1f}%" for t in labels.values()]
        rows.append((f"{markdown_text(row['model'])} (paper: {paper['first_stage']}, top "
                     f"{paper['rerank_top_k']}, {paper['release']})", *cells))  # fmt: skip
    return "\n\n".join([
        "Relative change of nDCG@10 after reranking, per main task, beside the rerankers of the "
        f"CoREB paper ({markdown_text(paper['source'])}). The paper reranks another first stage "
        "at another depth, so the rows are not a like-for-like comparison; they show the scale "
        "of gains and losses reranking brings on this benchmark. Of its own CoREB-Reranker the "
        f"paper says: {markdown_text(paper['coreb_reranker'])}.",
        markdown_table(["", "T2C", "C2T", "C2C"], rows),
    ])  # fmt: skip


__all__ = ["SNIPPET_SUBTASK", "paper_standing", "usage_section"]
