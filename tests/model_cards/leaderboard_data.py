"""Submissions for the leaderboard tests, made by the real runner on the fixture release.

BM25, MiniLM (the bundled embedder) and BM25 reranked by the bundled ``minilm`` reranker alias
(an untrained head: plumbing, its scores are not relevance) on ``release_v2603`` of the tiny
fixture release; each evaluation folder turned into a submission by ``make_submission``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import coreb_dataset
from coreb_toolkit.benchmark.runner import evaluate_model
from model_cards.leaderboard.submission import make_submission
from tests.coreb_dataset import release as R

RELEASE = R.V3


@dataclass(frozen=True)
class BoardData:
    dataset: Path  # the built CoREB folder
    evaluations: Path  # coreb evaluate's --out
    submissions: Path  # one folder per model


def make_board_data(root: Path, *, bm25_only: bool = False) -> BoardData:
    """The three submissions (only BM25's with ``bm25_only``: no torch, about a second)."""
    release = R.write_release(root / "release")
    hub = root / "hub"
    coreb_dataset.build(release, hub, progress=False)
    out = root / "results"
    subs = root / "submissions"
    if bm25_only:
        evaluate_model(str(hub), "bm25", out, releases=[RELEASE], plots=False, progress=False)
        make_submission(out / "BM25" / RELEASE, subs / "bm25")
        return BoardData(hub, out, subs)
    evaluate_model(str(hub), "bm25", out, releases=[RELEASE], plots=False, reranker="minilm",
                   rerank_top_k=8, progress=False)  # fmt: skip
    evaluate_model(str(hub), "minilm", out, releases=[RELEASE], plots=False, progress=False)
    make_submission(out / "BM25" / RELEASE, subs / "bm25")
    make_submission(out / "all-MiniLM-L6-v2" / RELEASE, subs / "minilm")
    make_submission(out / "BM25+minilm" / RELEASE, subs / "bm25-minilm")
    return BoardData(hub, out, subs)


#: names a stranger may choose, each trying one way into the page: an image the browser would
#: fetch (and a script in its onerror), a phishing link, bold text, a heading, mathtext
HOSTILE_NAMES = {
    "bm25": '<img src="http://evil.example/a.png" onerror="window.pwned=1">'
    "[phish](http://evil.example/a) **BM25**",
    "minilm": '$\\foo$ <img src="http://evil.example/b.png" onerror="window.pwned=2"> '
    "[phish](http://evil.example/b) # org/coder",
    "bm25-minilm": '<img src="http://evil.example/c.png" onerror="window.pwned=3"> '
    "[phish](http://evil.example/c) _re_",
}
HOSTILE_RERANKER = "<b>rr</b>[x](http://evil.example/r)"
HOSTILE_DATASET = '<img src="http://evil.example/d.png">[ds](http://evil.example/d)'


def make_hostile_submissions(submissions: Path, out: Path) -> Path:
    """The three submissions renamed with :data:`HOSTILE_NAMES` (the reranked one's first stage
    and reranker too), in ``out``: honest runs under names that attack the page."""
    for folder, name in HOSTILE_NAMES.items():
        target = out / folder
        shutil.copytree(submissions / folder, target)
        res = json.loads((target / "results.json").read_text())
        meta = json.loads((target / "model_meta.json").read_text())
        res["model"]["name"] = meta["name"] = name
        if folder == "bm25-minilm":
            res["first_stage"]["model"] = meta["first_stage"] = HOSTILE_NAMES["bm25"]
            res["reranker"]["name"] = meta["reranker"] = HOSTILE_RERANKER
        (target / "results.json").write_text(json.dumps(res))
        (target / "model_meta.json").write_text(json.dumps(meta))
    return out
