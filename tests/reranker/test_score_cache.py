"""The score cache: flushed after every batch, so a killed run resumes where it stopped."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reranker.base import BaseReranker, ScoreCache, ScoreCacheError

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [(f"query {i % 3}", f"document number {i} " + "x" * i) for i in range(20)]


class BatchedReranker(BaseReranker):
    """Scores pairs three at a time, reporting each batch; records the pairs it scores and can
    SIGKILL its own process after ``kill_after`` batches (a run killed mid-subtask)."""

    name = "batched"
    max_length = 64

    def __init__(self, cache_dir=None, kill_after: int | None = None):
        self.cache_dir = cache_dir
        self.kill_after = kill_after
        self.scored: list[tuple[str, str]] = []

    def fingerprint(self) -> str:
        return "batched-1"

    def _score_batch(self, pairs, instruction):
        scores = [0.0] * len(pairs)
        for n, start in enumerate(range(0, len(pairs), 3)):
            if self.kill_after is not None and n == self.kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            rows = list(range(start, min(start + 3, len(pairs))))
            for i in rows:
                q, d = pairs[i]
                scores[i] = len(d) / (1.0 + len(q)) + (0.25 if instruction else 0.0)
                self.scored.append(pairs[i])
            self._report(rows, [scores[i] for i in rows])
        return scores


def test_killed_run_resumes_with_the_missing_pairs_only(tmp_path):
    script = (
        "import sys; from tests.reranker.test_score_cache import BatchedReranker, PAIRS; "
        "BatchedReranker(sys.argv[1], kill_after=4).score(PAIRS, instruction='i')"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, check=False)
    assert done.returncode == -signal.SIGKILL
    resumed = BatchedReranker(tmp_path)
    scores = resumed.score(PAIRS, instruction="i")
    assert len(resumed.scored) == len(PAIRS) - 4 * 3  # the 4 finished batches are not redone
    assert scores == BatchedReranker().score(PAIRS, instruction="i")  # as an uninterrupted run
    again = BatchedReranker(tmp_path)
    assert again.score(PAIRS, instruction="i") == scores and again.scored == []


def test_backend_without_reports_is_cached_when_it_returns(tmp_path):
    class Silent(BatchedReranker):
        def _report(self, rows, scores):  # a backend that never tells score()
            pass

    first = Silent(tmp_path)
    assert first.score(PAIRS) == BatchedReranker().score(PAIRS)
    second = BatchedReranker(tmp_path)
    second.score(PAIRS)
    assert second.scored == []


def _cache_file(tmp_path) -> Path:
    BatchedReranker(tmp_path).score(PAIRS[:5])
    (path,) = tmp_path.glob("scores-*.jsonl")
    return path


def test_torn_last_line_is_ignored_with_a_warning_and_cut_by_the_next_writer(tmp_path, caplog):
    path = _cache_file(tmp_path)
    with open(path, "a") as f:
        f.write('["abc", 0.')  # a writer killed mid-line
    rr = BatchedReranker(tmp_path)
    with caplog.at_level(logging.WARNING, logger="reranker.base"):
        rr.score(PAIRS[:8])
    assert "torn last line" in caplog.text
    assert len(rr.scored) == 3  # the 5 whole lines were read
    lines = path.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # the half line is gone
    fresh = BatchedReranker(tmp_path)
    fresh.score(PAIRS[:8])
    assert fresh.scored == []


@pytest.mark.parametrize(
    "damage", ["not json\n", '["key"]\n', '["key", "0.5"]\n', '["key", true]\n']
)
def test_an_unreadable_whole_line_is_an_error_not_data(tmp_path, damage):
    path = _cache_file(tmp_path)
    with open(path, "a") as f:
        f.write(damage)
    with pytest.raises(ScoreCacheError, match=r"line 7 .*delete it"):
        BatchedReranker(tmp_path).score(PAIRS[:8])


def test_a_file_of_another_format_or_fingerprint_is_an_error(tmp_path):
    path = _cache_file(tmp_path)
    other = ScoreCache(tmp_path, "another-fingerprint")
    path.rename(other.path)
    with pytest.raises(ScoreCacheError, match="line 1 is not the header"):
        other.get(["k"])


def test_appends_of_another_process_are_read(tmp_path):
    one, two = ScoreCache(tmp_path, "fp"), ScoreCache(tmp_path, "fp")
    assert two.get(["a"]) == {}
    one.put({"a": 0.5})
    assert two.get(["a", "b"]) == {"a": 0.5}
    two.put({"b": 1.0})
    assert one.get(["a", "b"]) == {"a": 0.5, "b": 1.0}


def test_progress_bar_counts_the_pairs_to_score(tmp_path, monkeypatch):
    import tqdm.auto

    seen: list[dict] = []
    real = tqdm.auto.tqdm

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **{**kwargs, "disable": True})

    monkeypatch.setattr(tqdm.auto, "tqdm", spy)
    BatchedReranker(tmp_path).score(PAIRS[:4])
    BatchedReranker(tmp_path).score(PAIRS[:10], progress="c2c")
    assert seen[-1]["total"] == 6 and seen[-1]["desc"] == "c2c"
    assert seen[-1]["disable"] is None and seen[-1]["leave"] is False
