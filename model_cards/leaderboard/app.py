"""The leaderboard from a folder of submissions: validated, written, served, or made a Space.

* :func:`load_board`: every submission under a folder validated against the dataset
  (:func:`~model_cards.leaderboard.validate.validate_submission`), then the table
  (:func:`~model_cards.leaderboard.table.build_leaderboard`);
* :func:`write_board`: the board's data (``leaderboard.json``) and plots into a folder, all the
  page (:mod:`model_cards.leaderboard.page`) needs;
* :func:`write_build`: what ``coreb leaderboard build`` writes (the board and its Space folder),
  atomically: into a scratch folder beside the output, moved in with one rename, so that a
  failure leaves no half-written folder (and a rebuild's failure keeps the previous board);
* :func:`build_app` / :func:`serve`: the Gradio page of a board, and running it locally;
* :func:`write_space`: a Hugging Face Space folder that serves the precomputed, validated board
  with gradio and pandas only (``app.py`` is ``page.py`` itself, ``requirements.txt`` pinned to
  the versions the page was tested with, ``README.md`` with the Space metadata written by
  ``huggingface_hub.SpaceCard``), for ``coreb push space DIR --repo ...`` to upload.

What strangers wrote reaches others here: the notes are Markdown with every submitted string
escaped (:func:`coreb_toolkit.untrusted.markdown_text`), every string cell of
``leaderboard.csv`` is neutralised for spreadsheets (:func:`~coreb_toolkit.untrusted.csv_cell`),
and the published dataset is its name and revision, never a path of this machine.

Decided: the Space does not install coreb-toolkit. Validation needs the dataset's qrels and
every run (tens of MB per model) and would rerun at every Space restart; the board is validated
here, once, and the Space only shows it. The data file records the dataset revision and the
protocol, so anyone can revalidate the same submissions with ``coreb leaderboard validate``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from coreb_toolkit.untrusted import csv_cell, markdown_text
from model_cards.leaderboard import page as page_module
from model_cards.leaderboard.plots import (
    plot_ndcg_per_billion,
    plot_note,
    plot_parameter_efficiency,
)
from model_cards.leaderboard.submission import find_submissions
from model_cards.leaderboard.table import SIZE_BUCKETS, UNKNOWN_SIZE, Leaderboard, build_leaderboard
from model_cards.leaderboard.validate import BoardDataset, validate_submission

logger = logging.getLogger(__name__)

TITLE = "CoREB leaderboard"
SPACE_PACKAGES = ("gradio", "pandas")
CSV_FILE = "leaderboard.csv"
SPACE_DIR = "space"
SPACE_FILES = ("app.py", "requirements.txt", "README.md")


def load_board(
    submissions: str | os.PathLike[str],
    dataset: str | os.PathLike[str],
    *,
    dataset_name: str | None = None,
    **options: Any,
) -> Leaderboard:
    """Validate every submission under ``submissions`` against ``dataset``; the board.

    ``dataset_name`` is what the board publishes of the dataset (default: the folder's name);
    ``options`` go to :func:`~model_cards.leaderboard.table.build_leaderboard` (``alpha``,
    ``n_resamples``, ``seed``). The first rejected submission stops the build (a
    :class:`~model_cards.leaderboard.validate.SubmissionRejected` naming it and its file).
    """
    board_dataset = BoardDataset.open(dataset, dataset_name)
    entries = [validate_submission(p, board_dataset) for p in find_submissions(submissions)]
    return build_leaderboard(entries, **options)


def _table(df: Any) -> dict[str, Any]:
    def plain(v: Any) -> Any:  # JSON has no NaN: a missing figure is null
        if isinstance(v, float) and math.isnan(v):
            return None
        return v.item() if hasattr(v, "item") else v

    return {
        "columns": [str(c) for c in df.columns],
        "data": [[plain(v) for v in row] for row in df.itertuples(index=False)],
    }


def board_data(board: Leaderboard, title: str = TITLE) -> dict[str, Any]:
    """The JSON-ready data of the page: tables, dataset, protocol, notes."""
    untrained = [e.name for e in board.entries if (e.results.reranker or {}).get("untrained_head")]
    notes = list(board.notes)
    if untrained:
        names = ", ".join(markdown_text(name) for name in untrained)
        notes.append(f"Untrained reranker head (plumbing, not relevance): {names}.")
    return {
        "title": title,
        "dataset": board.dataset,
        "protocol": board.protocol,
        "notes": notes,
        "plot_note": plot_note(board),
        "size_buckets": [label for label, _ in SIZE_BUCKETS] + [UNKNOWN_SIZE],
        "tables": {
            "overall": _table(board.overall),
            "subtasks": _table(board.subtasks),
            "languages": _table(board.languages),
            "stages": _table(board.stages),
        },
    }


def write_board(
    board: Leaderboard, folder: str | os.PathLike[str], title: str = TITLE
) -> dict[str, Path]:
    """Write ``leaderboard.json``, the table as CSV and the plots into ``folder``; the paths."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    data = board_data(board, title)
    out = {"data": root / page_module.DATA_FILE, "csv": root / CSV_FILE}
    out["data"].write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
    # a spreadsheet runs a cell starting with = + - @ as a formula: names are shown as text
    board.overall.apply(lambda column: column.map(csv_cell)).to_csv(out["csv"], index=False)
    files = page_module.PLOT_FILES
    for key, plot in (("parameter_efficiency", plot_parameter_efficiency),
                      ("ndcg_per_billion", plot_ndcg_per_billion)):  # fmt: skip
        path = plot(board, root / files[key])
        if path is not None:
            out[key] = path
    return out


def write_build(
    board: Leaderboard,
    out: str | os.PathLike[str],
    *,
    title: str = TITLE,
    force: bool = False,
    inputs: Sequence[str | os.PathLike[str]] = (),
) -> dict[str, Path]:
    """The board (:func:`write_board`) and its Space folder (``space/``, :func:`write_space`)
    in ``out``, which appears (or is replaced, with ``force``) in one rename.

    Refused before anything is written: an ``out`` that is, holds or lies inside one of
    ``inputs`` (the submissions, the dataset), and an existing ``out`` without ``force`` or
    holding files a build does not write. Returns the paths written (``space``: the folder).
    """
    from coreb_toolkit.builders.hub_folder import check_destination, replace_folder
    from coreb_toolkit.builders.scratch import scratch_folder

    board_files = [page_module.DATA_FILE, CSV_FILE, *page_module.PLOT_FILES.values()]
    keep = [*board_files, *(f"{SPACE_DIR}/{n}" for n in (*board_files, *SPACE_FILES))]
    try:
        target = check_destination(out, overwrite=force, inputs=inputs, keep=keep,
                                   label="the board folder")  # fmt: skip
    except FileExistsError as err:
        raise ValueError(str(err)) from None
    tmp = scratch_folder(target)
    try:
        written = write_board(board, tmp, title)
        write_space(board, tmp / SPACE_DIR, title=title)
        replace_folder(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    out_paths = {key: target / path.relative_to(tmp) for key, path in written.items()}
    return {**out_paths, "space": target / SPACE_DIR}


def build_app(board: Leaderboard, folder: str | os.PathLike[str] | None = None) -> Any:
    """The page (``gr.Blocks``) of ``board``; its data and plots go to ``folder`` (default: a
    new temporary folder)."""
    root = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="coreb-board-"))
    write_board(board, root)
    return page_module.build_page(page_module.load_data(root), root)


def serve(
    submissions: str | os.PathLike[str],
    dataset: str | os.PathLike[str],
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    prevent_thread_lock: bool = False,
    **options: Any,
) -> Any:
    """Validate, build and launch the page on ``host:port`` (``port=None``: gradio picks one).

    ``options`` go to :func:`load_board` (``dataset_name``, ``alpha``, ``n_resamples``, ``seed``).
    Returns the launched ``gr.Blocks`` (with ``prevent_thread_lock`` the call returns at once;
    ``page.local_url`` says where it runs, ``page.close()`` stops it).
    """
    board = load_board(submissions, dataset, **options)
    page = build_app(board)
    page.launch(server_name=host, server_port=port, prevent_thread_lock=prevent_thread_lock,
                quiet=True, show_error=True)  # fmt: skip
    return page


def _pinned(package: str) -> str:
    try:
        return f"{package}=={version(package)}"
    except PackageNotFoundError:
        raise ImportError(
            f"writing a Space pins {package} to the installed version, and it is not installed: "
            "pip install 'coreb-toolkit[leaderboard]'"
        ) from None


def write_space(
    board: Leaderboard,
    out: str | os.PathLike[str],
    *,
    title: str = TITLE,
    license: str = "apache-2.0",
    force: bool = False,
) -> list[Path]:
    """A Space folder serving ``board``: ``app.py``, ``requirements.txt``, ``README.md``,
    ``leaderboard.json``, ``leaderboard.csv`` and the plots. Returns the files written."""
    from huggingface_hub import SpaceCard, SpaceCardData

    target = Path(out)
    if target.exists():
        if not force:
            raise ValueError(f"{target} exists; give force=True (--force) to replace it")
        if not (target / "app.py").is_file() and any(target.iterdir()):
            raise ValueError(
                f"{target} exists and is not a Space folder (no app.py); not replacing"
            )
        shutil.rmtree(target)
    target.mkdir(parents=True)
    write_board(board, target, title)
    shutil.copyfile(page_module.__file__, target / "app.py")
    pins = [_pinned(p) for p in SPACE_PACKAGES]
    (target / "requirements.txt").write_text("\n".join(pins) + "\n", encoding="utf-8")
    card_data = SpaceCardData(
        title=title, sdk="gradio", sdk_version=version("gradio"), app_file="app.py",
        license=license, tags=["leaderboard", "code-search", "coreb"],
        emoji="🏆", colorFrom="blue", colorTo="indigo", pinned=False,
    )  # fmt: skip
    body = (
        f"# {title}\n\nThe CoREB code-retrieval leaderboard, dataset "
        f"{markdown_text(board.dataset['name'])} at revision "
        f"{markdown_text(board.dataset['revision'])}, release "
        f"{markdown_text(board.protocol['release'])}. Every entry was "
        "validated by coreb-toolkit (`coreb leaderboard validate`): its metrics were recomputed "
        "from its submitted runs. This Space only shows the validated table "
        "(`leaderboard.json`).\n"
    )
    card = SpaceCard.from_template(card_data, template_str="---\n{{ card_data }}\n---\n\n" + body)
    card.save(target / "README.md")
    return sorted(p for p in target.iterdir() if p.is_file())


__all__ = [
    "TITLE",
    "board_data",
    "build_app",
    "load_board",
    "serve",
    "write_board",
    "write_build",
    "write_space",
]
