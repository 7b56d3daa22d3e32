"""The CoREB leaderboard page: a Gradio 6 Blocks app over a precomputed, validated board.

Self-contained on purpose: it imports gradio and pandas only and reads ``leaderboard.json``
(and the plot PNGs) from one folder, so the very same file is a Hugging Face Space's
``app.py`` (:func:`model_cards.leaderboard.app.write_space` copies it there) and the page
``coreb leaderboard serve`` runs locally. Nothing is computed here: the validator and the table
did that before the data was written.

Strangers' strings: table cells are shown as text (``gr.Dataframe`` with ``str`` columns); the
data's ``notes`` and ``plot_note`` are Markdown whose submitted strings the board escaped when it
composed them (:mod:`model_cards.leaderboard.table`, :mod:`~model_cards.leaderboard.plots`);
what this page puts into Markdown itself (the header: title, dataset name and revision, release,
protocol) it escapes with :func:`_markdown_text`, a copy of
:func:`coreb_toolkit.untrusted.markdown_text` (a test keeps the two alike), because a Space
installs gradio and pandas only.

Tables are ``gr.Dataframe`` with the built-in search and column filters
(``show_search="filter"``, as MTEB's own leaderboard uses it; the ``gradio_leaderboard``
component pins gradio < 6). The model type and size checkboxes filter every tab.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

# a Space or a closed network: no telemetry call when the page starts
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

DATA_FILE = "leaderboard.json"
PLOT_FILES = {
    "parameter_efficiency": "parameter_efficiency.png",
    "ndcg_per_billion": "ndcg_per_billion.png",
}


_MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>|~:&$]|(?<![^\W_])_|_(?![^\W_])")


def _markdown_text(text: Any) -> str:
    """``text`` safe in Markdown and in the HTML a Markdown renderer emits (the rules of
    :func:`coreb_toolkit.untrusted.markdown_text`, copied: see the module docstring)."""
    return _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), " ".join(str(text).split()))


def load_data(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The board data ``leaderboard.json`` in ``folder`` holds (written by ``board_data``)."""
    path = Path(folder) / DATA_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"{path}: no board data; write it with `coreb leaderboard build`"
        ) from None


def frame(table: dict[str, Any]) -> Any:
    """A pandas DataFrame from a ``{"columns": [...], "data": [[...], ...]}`` table."""
    import pandas as pd

    return pd.DataFrame(table["data"], columns=table["columns"])


def select(data: dict[str, Any], types: list[str], sizes: list[str]) -> list[Any]:
    """The four tables restricted to the models of the chosen types and size buckets."""
    overall = frame(data["tables"]["overall"])
    keep = overall[overall["Type"].isin(types) & overall["Size"].isin(sizes)]
    models = set(keep["Model"])
    out = [keep]
    for name in ("subtasks", "languages", "stages"):
        table = frame(data["tables"][name])
        out.append(table[table["Model"].isin(models)])
    return out


def _table(value: Any, label: str) -> Any:
    import gradio as gr

    return gr.Dataframe(
        value=value,
        label=label,
        interactive=False,
        show_search="filter",
        pinned_columns=2 if "Rank" in value.columns else 1,
        wrap=True,
        max_height=700,
    )


def _header(data: dict[str, Any]) -> str:
    ds, protocol = data["dataset"], data["protocol"]
    md = _markdown_text
    name = ds.get("name", ds.get("source"))  # "source": a board written before names
    lines = [
        f"# {md(data.get('title', 'CoREB leaderboard'))}",
        f"Dataset {md(name)} at revision {md(ds['revision'])}, release "
        f"{md(protocol['release'])}; protocol: relevance level "
        f"{md(protocol['relevance_level'])}, c2t_match negatives "
        f"{md(protocol['no_positive_policy'])}, c2t canonical corpus "
        f"{md(protocol['c2t_canonical_corpus'])}. Every number was recomputed from the "
        "submitted runs before it was put here.",
    ]
    lines += [f"- {note}" for note in data.get("notes", [])]
    return "\n\n".join(lines[:2]) + ("\n\n" + "\n".join(lines[2:]) if lines[2:] else "")


def build_page(data: dict[str, Any], folder: str | os.PathLike[str] | None = None) -> Any:
    """The ``gr.Blocks`` of the board ``data``; plots are read from ``folder`` when given."""
    try:
        import gradio as gr
    except ImportError as err:
        raise ImportError(
            "the leaderboard page needs gradio: pip install 'coreb-toolkit[leaderboard]'"
        ) from err
    overall = frame(data["tables"]["overall"])
    types = sorted(set(overall["Type"]))
    sizes = [s for s in data.get("size_buckets", []) if s in set(overall["Size"])]
    sizes += sorted(set(overall["Size"]) - set(sizes))
    with gr.Blocks(title=data.get("title", "CoREB leaderboard"), analytics_enabled=False) as page:
        gr.Markdown(_header(data))
        with gr.Row():
            type_box = gr.CheckboxGroup(types, value=types, label="Model type", elem_id="types")
            size_box = gr.CheckboxGroup(sizes, value=sizes, label="Size", elem_id="sizes")
        tables = select(data, types, sizes)
        with gr.Tabs():
            with gr.Tab("Overall", elem_id="tab-overall"):
                views = [_table(tables[0], "Overall and per task nDCG@10")]
            with gr.Tab("Per subtask", elem_id="tab-subtasks"):
                views.append(_table(tables[1], "nDCG@10 per subtask"))
            with gr.Tab("Per language", elem_id="tab-languages"):
                gr.Markdown(
                    "nDCG@10 pooled over the subtasks of each language suffix: the target "
                    "code's language for T2C, the query code's for C2T (c2c and c2t_match "
                    "have none)."
                )
                views.append(_table(tables[2], "nDCG@10 per language"))
            with gr.Tab("First stage vs reranked", elem_id="tab-stages"):
                views.append(_table(tables[3], "Reranked entries against their first stage"))
            with gr.Tab("Parameter efficiency", elem_id="tab-plots"):
                plots = [
                    Path(folder) / name
                    for name in PLOT_FILES.values()
                    if folder is not None and (Path(folder) / name).is_file()
                ]
                for path in plots:
                    gr.Image(str(path), label=path.stem.replace("_", " "), show_label=True)
                gr.Markdown(data.get("plot_note") or ("" if plots else "No plot: no model "
                                                      "states its parameter count."))  # fmt: skip

        def update(chosen_types: list[str], chosen_sizes: list[str]) -> list[Any]:
            return select(data, chosen_types, chosen_sizes)

        for box in (type_box, size_box):
            box.change(update, inputs=[type_box, size_box], outputs=views)
    return page


def main() -> None:
    """Serve the board of this file's folder (a Space runs this)."""
    here = Path(__file__).resolve().parent
    build_page(load_data(here), here).launch()


if __name__ == "__main__":
    main()
