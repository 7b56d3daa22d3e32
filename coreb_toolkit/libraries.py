"""Third-party libraries imported the way the toolkit needs them, in one place for every layer
that uses them (the release pipeline and the retrievers both index with ``bm25s``).

Standard library only at import time; each library is imported when its function is called.
"""

from __future__ import annotations

import logging
from typing import Any


def import_bm25s() -> Any:
    """``bm25s``, its logger made to follow the application's logging level.

    ``bm25s`` sets its own logger to DEBUG when imported; a logger's own level wins over the
    root's, so its ``Building index from ...`` debug lines reached the CLI's WARNING handler
    (the stray ``DEBUG bm25s: Building index from IDs objects``). Its level is reset to NOTSET,
    so the root level decides (``coreb -v`` shows its INFO, nothing shows its DEBUG by
    default); a level set by the user (anything but bm25s's DEBUG) is left alone.
    """
    import bm25s

    log = logging.getLogger("bm25s")
    if log.level == logging.DEBUG:
        log.setLevel(logging.NOTSET)
    return bm25s


__all__ = ["import_bm25s"]
