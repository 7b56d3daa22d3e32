"""Load a `coreb build --mteb DIR` export with MTEB's own CoREB task classes, offline.

Only each stock task's dataset path and revision are replaced (``coreb_dataset.load_mteb_task``);
mteb's own loader reads the folder, so a layout it cannot read fails here. Prints what each task
read. Usage: ``python examples/mteb_export.py DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from coreb_dataset import load_mteb_task


def main(export: str) -> int:
    folders = sorted(p for p in Path(export).iterdir() if (p / "README.md").is_file())
    if not folders:
        print(f"{export}: no exported task folders (write them with coreb build --mteb DIR)")
        return 1
    for folder in folders:
        task = load_mteb_task(folder)
        task.load_data()
        split = task.dataset["default"]["test"]
        lists = split.get("top_ranked") or {}
        print(
            f"{task.metadata.name} ({folder.name}): {len(split['corpus']):,} documents, "
            f"{len(split['queries']):,} queries, "
            f"{sum(len(d) for d in split['relevant_docs'].values()):,} judged pairs"
            + (f", {len(lists):,} candidate lists" if lists else "")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "demo/mteb"))
