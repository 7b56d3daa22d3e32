"""The leaderboard page in a real browser: Debian's chromium driven by playwright.

The page is served by gradio on 127.0.0.1 from submissions the real runner made on the fixture
release (BM25, MiniLM, BM25 reranked); the expected ranking is computed here from the results
files alone. A second page serves the same runs under hostile names (an image, a link, bold
text, a heading, mathtext) and a hostile dataset name: every element that shows a name must
show it as text. Screenshots are saved under the test's tmp_path (printed with ``-s``) and copied to
``$COREB_SCREENSHOT_DIR`` when it is set.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# without the background-networking flags chromium's own connections are refused on a closed
# network and the launch stalls; --headless and --no-sandbox: no display, running as root
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]  # fmt: skip

pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.is_file(),
        reason="needs Debian's chromium at /usr/bin/chromium (`make system-deps`)",
    ),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the dev extra)")
pytest.importorskip("gradio", reason="needs gradio (the leaderboard extra)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from tests.model_cards.leaderboard_data import make_board_data

    return make_board_data(tmp_path_factory.mktemp("board"))


@pytest.fixture(scope="module")
def served(data):
    from model_cards.leaderboard.app import serve

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_ANALYTICS_ENABLED", "False")
        # port None: gradio takes the first free port from 7860 on
        page = serve(data.submissions, data.dataset, "127.0.0.1", None, prevent_thread_lock=True,
                     n_resamples=2000)  # fmt: skip
        yield data, page.local_url
        page.close()


def _expected_order(submissions: Path) -> list[str]:
    """Model names by Overall nDCG@10 from the results files (names break ties)."""
    scores = {}
    for path in submissions.glob("*/results.json"):
        res = json.loads(path.read_text())
        overall = next(r for r in res["rows"] if r["level"] == "overall")
        scores[res["model"]["name"]] = overall["ndcg_at_10"]
    return sorted(scores, key=lambda n: (-scores[n], n))


def _rows(tab) -> list[list[str]]:
    return [
        row.locator("div[role=gridcell]").all_inner_texts()
        for row in tab.locator("div[role=row].virtual-row").all()
    ]


def test_page_ranks_searches_filters_sorts(served, tmp_path):
    data, url = served
    expected = _expected_order(data.submissions)
    assert len(expected) == 3
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        outside = []
        page.on("request", lambda r: outside.append(r.url) if "127.0.0.1" not in r.url else None)
        page.goto(url)
        tab = page.locator("#tab-overall")
        tab.locator("div[role=row].virtual-row").first.wait_for()
        headers = tab.locator("th[role=columnheader]").evaluate_all(
            "ths => ths.map(t => t.getAttribute('title'))"
        )
        col = {name: i for i, name in enumerate(headers[: len(set(headers))])}
        # the fixture's release is named release_v2603: the paper's 11 reported rows are shown
        # among the submissions, unranked; unticking their type leaves the recomputed ones
        assert len(_rows(tab)) == 3 + 11
        reported = [r for r in _rows(tab) if r[col["Type"]] == "reported by the paper"]
        assert len(reported) == 11 and {r[col["Rank"]] for r in reported} <= {"", "NaN", "null"}
        page.locator("#types").get_by_text("reported by the paper", exact=True).click()
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 3"
        )
        rows = _rows(tab)
        # the rendered ranking is the one the results files give
        assert [r[col["Model"]] for r in rows] == expected
        assert [r[col["Rank"]] for r in rows] == ["1", "2", "3"]
        assert rows[0][col["vs leader"]] == "leader"
        for r in rows[1:]:  # every other entry carries a significance marker with its p-value
            assert r[col["vs leader"]].split()[0] in ("≈", "*")
            assert r[col["vs leader"]].split()[1].startswith("p=")
        page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)

        # search: the built-in filter box keeps the matching rows only
        tab.locator("input.search-input").fill("bm25")
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 2"
        )
        assert {r[col["Model"]] for r in _rows(tab)} == {"BM25", "BM25 + minilm"}
        tab.locator("input.search-input").fill("")
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 3"
        )

        # filter: unticking "lexical" removes BM25 from the table
        page.locator("#types").get_by_text("lexical", exact=True).click()
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 2"
        )
        assert "BM25" not in {r[col["Model"]] for r in _rows(tab)}
        page.locator("#types").get_by_text("lexical", exact=True).click()
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 3"
        )

        # sort: T2C descending, as the results files order their T2C rows
        t2c = {}
        for path in data.submissions.glob("*/results.json"):
            res = json.loads(path.read_text())
            row = next(r for r in res["rows"] if r["level"] == "task" and r["name"] == "T2C")
            t2c[res["model"]["name"]] = row["ndcg_at_10"]
        header = tab.locator("th[title=T2C]").first
        header.hover()
        header.locator("button.cell-menu-button").click()
        page.locator("[role=menu]").get_by_text("Sort descending").first.click()
        page.wait_for_function(
            "(name) => document.querySelector('#tab-overall div[role=row].virtual-row "
            'div[role=gridcell][data-col="1"]\').innerText == name',
            arg=max(t2c, key=t2c.get),
        )
        assert [r[col["Model"]] for r in _rows(tab)] == sorted(t2c, key=lambda n: -t2c[n])
        page.screenshot(path=str(tmp_path / "leaderboard_sorted.png"), full_page=True)

        # the first-stage vs reranked view: the reranked entry beside its first stage
        page.get_by_role("tab", name="First stage vs reranked").click()
        stages = page.locator("#tab-stages")
        stages.locator("div[role=row].virtual-row").first.wait_for()
        (row,) = _rows(stages)
        assert row[:3] == ["BM25 + minilm", "BM25", "minilm"]
        # the parameter-efficiency plot is an image served by the page itself
        page.get_by_role("tab", name="Parameter efficiency").click()
        page.locator("#tab-plots img").first.wait_for()
        assert page.locator("#tab-plots img").count() == 2
        assert "BM25" in page.locator("#tab-plots").inner_text()  # the left-out note
        browser.close()
    # the page rendered with no request leaving the machine (analytics, fonts, version check)
    assert outside == []
    keep = os.environ.get("COREB_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for name in ("leaderboard.png", "leaderboard_sorted.png"):
            shutil.copyfile(tmp_path / name, Path(keep) / name)
    print(f"screenshots: {tmp_path}")


@pytest.fixture(scope="module")
def hostile(data, tmp_path_factory):
    from model_cards.leaderboard.app import serve
    from tests.model_cards.leaderboard_data import HOSTILE_DATASET, make_hostile_submissions

    subs = make_hostile_submissions(data.submissions, tmp_path_factory.mktemp("hostile"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_ANALYTICS_ENABLED", "False")
        page = serve(subs, data.dataset, "127.0.0.1", None, prevent_thread_lock=True,
                     n_resamples=200, dataset_name=HOSTILE_DATASET)  # fmt: skip
        yield page.local_url
        page.close()


def _column(tab, name: str) -> list[str]:
    headers = tab.locator("th[role=columnheader]").evaluate_all(
        "ths => ths.map(t => t.getAttribute('title'))"
    )
    index = headers.index(name)
    return [row[index] for row in _rows(tab)]


def test_hostile_names_are_shown_as_text_everywhere(hostile, tmp_path):
    from tests.model_cards.leaderboard_data import (
        HOSTILE_DATASET,
        HOSTILE_NAMES,
        HOSTILE_RERANKER,
    )

    bm25, minilm, reranked = (HOSTILE_NAMES[k] for k in ("bm25", "minilm", "bm25-minilm"))
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        outside = []
        page.on("request", lambda r: outside.append(r.url) if "127.0.0.1" not in r.url else None)
        page.goto(hostile)
        tab = page.locator("#tab-overall")
        tab.locator("div[role=row].virtual-row").first.wait_for()
        # checkboxes: only the board's own labels, whatever the names are
        assert page.locator("#types label").all_inner_texts() == [
            "embedder", "lexical", "reported by the paper", "reranked"]  # fmt: skip
        assert set(page.locator("#sizes label").all_inner_texts()) <= {
            "<100M", "100M-1B", "1B-10B", ">=10B", "unknown"}  # fmt: skip
        page.locator("#types").get_by_text("reported by the paper", exact=True).click()
        page.wait_for_function(
            "() => document.querySelectorAll('#tab-overall div[role=row].virtual-row').length == 3"
        )
        # tables: each name in its cell, character for character
        assert sorted(_column(tab, "Model")) == sorted(HOSTILE_NAMES.values())
        # header and notes: the dataset name and the untrained reranker's name, as text
        header = page.locator(".prose").first.inner_text()
        assert f"Dataset {HOSTILE_DATASET} at revision" in header
        assert f"Untrained reranker head (plumbing, not relevance): {reranked}." in header
        for tab_name, elem in (("Per subtask", "#tab-subtasks"),
                               ("Per language", "#tab-languages")):  # fmt: skip
            page.get_by_role("tab", name=tab_name).click()
            view = page.locator(elem)
            view.locator("div[role=row].virtual-row").first.wait_for()
            assert sorted(_column(view, "Model")) == sorted(HOSTILE_NAMES.values())
        page.get_by_role("tab", name="First stage vs reranked").click()
        stages = page.locator("#tab-stages")
        stages.locator("div[role=row].virtual-row").first.wait_for()
        (row,) = _rows(stages)
        assert row[:3] == [reranked, bm25, HOSTILE_RERANKER]
        # plots: drawn (a `$` in a name is no mathtext) and the note names the left-out models
        page.get_by_role("tab", name="Parameter efficiency").click()
        plots = page.locator("#tab-plots")
        plots.locator("img").first.wait_for()
        assert plots.locator("img").evaluate_all("is => is.map(i => i.naturalWidth > 0)") == [
            True, True]  # fmt: skip
        note = plots.inner_text()
        assert "Left out of the parameter-efficiency plots (no parameter count): " in note
        assert reranked in note and bm25 in note and minilm not in note
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)

        # nothing of the names became an element: no image, link, heading or bold text
        assert page.evaluate("() => window.pwned") is None
        sources = page.evaluate("() => [...document.querySelectorAll('img')].map(i => i.src)")
        assert not [s for s in sources if "evil" in s]
        links = page.evaluate("() => [...document.querySelectorAll('a')].map(a => a.href)")
        assert not [h for h in links if "evil" in h]
        headings = page.evaluate(
            "() => [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => h.innerText)"
        )
        assert headings == ["CoREB leaderboard"]
        marked = page.evaluate(
            "() => [...document.querySelectorAll('b,strong,em')].map(e => e.innerText)"
        )
        assert not {"BM25", "rr", "re"} & set(marked)
        browser.close()
    assert outside == []  # no image fetched from the names' host
