"""``coreb build --mteb``: the subtasks in MTEB's retrieval layout (corpus, queries, qrels)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import datasets

from coreb_toolkit.builders.coreb.build import release_inputs
from coreb_toolkit.builders.coreb.records import Release, ReleaseData
from coreb_toolkit.builders.coreb.rows import corpus_rows, subtask_rows
from coreb_toolkit.builders.hub_folder import configs_yaml, write_hub_folder

_S = datasets.Value("string")


def export_mteb(
    release: Release,
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, dict[str, int]]:
    """Write an MTEB-style folder: ``{subset}-corpus``, ``{subset}-queries``, ``{subset}-qrels``.

    Corpus rows are ``id, title, text``, queries ``id, text``, qrels ``query-id, corpus-id,
    score`` with positives as 1 and hard negatives as 0 (kept, so the judgments are not lost,
    and scored as non-relevant, which for CoREB's zeroed-gain nDCG gives the same numbers). One
    split per release. MTEB has no per-query exclusion, so on the ``c2c_*`` subsets the anchor
    stays in the corpus: scores there are not comparable with CoREB's unless the anchor is
    dropped from each ranking; the card says so.
    """
    corpus_f = datasets.Features({"id": _S, "title": _S, "text": _S})
    queries_f = datasets.Features({"id": _S, "text": _S})
    qrels_f = datasets.Features({"query-id": _S, "corpus-id": _S, "score": datasets.Value("int64")})
    files: dict[str, dict[str, tuple[Callable[[], Iterable[dict[str, Any]]], Any]]] = {}
    for subset, spec in release.subtasks.items():
        for split, data in release.releases.items():
            if not any(s.name == subset for s, _ in data.queries.values()):
                continue

            def docs(data: ReleaseData = data, corpus: str = spec.corpus) -> Iterator[dict]:
                for d in corpus_rows(data, corpus):
                    yield {"id": d["doc_id"], "title": "", "text": d["text"]}

            def queries(data: ReleaseData = data, subset: str = subset) -> Iterator[dict]:
                for r in subtask_rows(data, subset):
                    yield {"id": r["query_id"], "text": r["query"]}

            def qrels(data: ReleaseData = data, subset: str = subset) -> Iterator[dict]:
                for r in subtask_rows(data, subset):
                    for ids, score in ((r["positive_ids"], 1), (r["hard_negative_ids"], 0)):
                        for doc in ids:
                            yield {"query-id": r["query_id"], "corpus-id": doc, "score": score}

            for suffix, make, feats in (
                ("corpus", docs, corpus_f),
                ("queries", queries, queries_f),
                ("qrels", qrels, qrels_f),
            ):
                files.setdefault(f"{subset}-{suffix}", {})[split] = (make, feats)

    def card(rows: dict[str, dict[str, int]]) -> str:
        yaml = ["---", *configs_yaml({n: list(parts) for n, parts in rows.items()}, rows), "---"]
        return (
            "\n".join(yaml)
            + "\n\n# CoREB in the MTEB layout\n\nWritten by `coreb build --mteb`. Qrels: score 1 ="
            " relevance 2, score 0 = hard negative (relevance 1). MTEB cannot drop the code-to-code"
            " anchor from each ranking, so `c2c_*` scores differ from CoREB's protocol.\n"
        )

    written = write_hub_folder(
        out_dir,
        files,
        card,
        overwrite=overwrite,
        progress=progress,
        desc="mteb export",
        inputs=release_inputs(release),
    )
    return {name: {s: n for s, n in parts.items() if n} for name, parts in written.items()}
