"""MkDocs hook: the reference pages' generated parts, written from the code at build time.

A page holds a marker (``<!-- coreb:cli-reference -->``, ``<!-- coreb:subtasks -->``) where the
generated Markdown goes (:mod:`coreb_toolkit.cli.reference`); a marker the hook does not know
fails the build, so a renamed generator cannot leave a page silently empty.
"""

from __future__ import annotations

import re

from coreb_toolkit.cli.reference import cli_reference, subtask_reference

GENERATORS = {"cli-reference": cli_reference, "subtasks": subtask_reference}
MARKER = re.compile(r"<!-- coreb:([a-z-]+) -->")


def on_page_markdown(markdown, page, config, files):
    def generated(match):
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_path}: unknown generated section {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)
