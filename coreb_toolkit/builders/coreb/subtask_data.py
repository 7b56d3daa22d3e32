"""One subtask of one release in the shapes ``eval_metrics`` takes (queries, corpus, qrels,
exclusions), from a built folder, its Hub id, or a release folder in the official layout."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import datasets

from coreb_toolkit.builders.coreb.qrels import QrelsOptions
from coreb_toolkit.builders.coreb.release import cached_release
from coreb_toolkit.builders.coreb.rows import corpus_rows, subtask_rows
from coreb_toolkit.builders.hub_folder import hub_folder_configs, is_hub_folder
from coreb_toolkit.hub_access import is_hub_id
from coreb_toolkit.vocabulary import MAIN_TASKS, main_task_key


@dataclass
class SubtaskData:
    """One subtask of one release in the shapes ``eval_metrics`` takes.

    ``evaluate_retrieval(data.qrels, run, exclude=data.exclude)`` scores a run over
    ``data.corpus`` for ``data.queries``.
    """

    subtask: str
    release: str
    corpus_name: str
    queries: dict[str, str]  # query_id -> query text
    corpus: dict[str, str]  # doc_id -> text
    qrels: dict[str, dict[str, int]]  # query_id -> {doc_id: 2 | 1}; every query present
    exclude: dict[str, list[str]]  # query_id -> doc ids to drop (only queries with some)


def subtasks_by_release(
    source: str | os.PathLike[str], options: QrelsOptions | None = None
) -> dict[str, list[str]]:
    """``{release: [subtask, ...]}`` (both sorted) of a built folder, its Hub id or a release
    folder: the CoREB subtasks (a main task's prefix) each release holds queries for.
    ``options`` derive the qrels of a release folder that ships none."""
    out: dict[str, set[str]] = {}
    if is_hub_folder(source):
        for name, splits in hub_folder_configs(source).items():
            if main_task_key(name) in MAIN_TASKS:
                for split in splits:
                    out.setdefault(split, set()).add(name)
    else:
        release = cached_release(str(source), options or QrelsOptions())
        for split, data in release.releases.items():
            out[split] = {s.name for s, _ in data.queries.values()}
    return {split: sorted(names) for split, names in sorted(out.items())}


def subtask_data(
    subtask: str,
    release: str,
    q_rows: Iterable[Mapping],
    c_rows: Iterable[Mapping] | Mapping[str, str],
) -> SubtaskData:
    """:class:`SubtaskData` from a subtask config's rows and its corpus (rows, or a ready
    ``{doc_id: text}`` shared by the subtasks that rank it)."""
    q_rows = list(q_rows)
    if not q_rows:
        raise ValueError(f"subtask {subtask!r} has no query in release {release!r}")
    corpus_name = q_rows[0]["corpus"]
    qrels = {
        r["query_id"]: {
            **dict.fromkeys(r["hard_negative_ids"], 1),
            **dict.fromkeys(r["positive_ids"], 2),
        }
        for r in q_rows
    }
    return SubtaskData(
        subtask=subtask,
        release=release,
        corpus_name=corpus_name,
        queries={r["query_id"]: r["query"] for r in q_rows},
        corpus=c_rows if isinstance(c_rows, Mapping) else {r["doc_id"]: r["text"] for r in c_rows},
        qrels=qrels,
        exclude={r["query_id"]: list(r["exclude_ids"]) for r in q_rows if r["exclude_ids"]},
    )


def load_subtask(
    source: str | os.PathLike[str],
    subtask: str,
    release: str | None = None,
    *,
    options: QrelsOptions | None = None,
) -> SubtaskData:
    """Queries, corpus, qrels and exclusions of one subtask, ready for ``eval_metrics``.

    ``source`` is a folder written by :func:`build` (or its Hub id), or a release folder in the
    official layout. ``release`` is the split (default: the only one, else an error naming them).
    """
    path = Path(source)
    built = (path / "README.md").is_file() and (path / subtask).is_dir()
    if not built and (path.is_dir() or not is_hub_id(source)):
        data = cached_release(str(source), options or QrelsOptions())
        names = [
            n
            for n, d in data.releases.items()
            if any(s.name == subtask for s, _ in d.queries.values())
        ]
        release = _pick_release(release, names, subtask)
        rel = data.releases[release]
        spec = next(s for s, _ in rel.queries.values() if s.name == subtask)
        return subtask_data(
            subtask, release, subtask_rows(rel, subtask), corpus_rows(rel, spec.corpus)
        )
    queries = datasets.load_dataset(str(source), subtask)
    release = _pick_release(release, list(queries), subtask)
    q_rows = queries[release]
    corpus = datasets.load_dataset(str(source), q_rows[0]["corpus"], split=release)
    return subtask_data(subtask, release, q_rows, corpus)


def _pick_release(release: str | None, names: Sequence[str], subtask: str) -> str:
    if not names:
        raise ValueError(f"no release holds subtask {subtask!r}")
    if release is None:
        if len(names) > 1:
            raise ValueError(
                f"subtask {subtask!r} is in several releases ({', '.join(names)}); pick one"
            )
        return names[0]
    if release not in names:
        raise ValueError(
            f"subtask {subtask!r} is not in release {release!r}; it is in {', '.join(names)}"
        )
    return release
