"""``coreb build`` against hostile releases: values that escape validation, ids TREC cannot hold,
reserved config names, outputs that would delete an input, and what killed builds leave behind.

Each test writes the small release of :mod:`tests.coreb_dataset.release`, breaks one thing on
purpose, and checks that the problem is reported with its file and line, together with every
other problem, and that nothing is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import coreb_dataset
from coreb_dataset import ReleaseError
from coreb_toolkit.owners import owner_alive, owner_tag
from tests.conftest import REPO_ROOT
from tests.coreb_dataset import release as R


def _append(path: Path, *lines: str) -> list[int]:
    """Append raw JSONL lines to ``path``; return their 1-based line numbers."""
    first = len(path.read_text(encoding="utf-8").splitlines()) + 1
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
    return list(range(first, first + len(lines)))


def _code_row(cid: str, **changes) -> dict:
    row = R._code(cid, "P1", "python", "model-a", True)
    row.update(changes)
    return row


def _problems(root: Path) -> list[str]:
    with pytest.raises(ReleaseError) as info:
        coreb_dataset.read_release(root)
    return [str(p) for p in info.value.problems]


def _expect(problems: list[str], expected: list[str]) -> None:
    """Every expected needle in its own problem, and no other problem."""
    for needle in expected:
        assert any(needle in p for p in problems), f"{needle!r} not in:\n" + "\n".join(problems)
    assert len(problems) == len(expected), "\n".join(problems)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ------------------------------------------------------------------------------------------
# Item 7: values that escape validation
# ------------------------------------------------------------------------------------------


def test_out_of_range_and_unencodable_jsonl_values_are_problems_with_lines(tmp_path):
    root = R.write_release(tmp_path / "r")
    code = root / "code_corpus" / f"{R.V3}.jsonl"
    huge = "1" * 5000  # over Python's int digit limit (4300)
    deep = _nested(200_000)
    p1 = {"source_problem_id": "P1"}
    digits = json.dumps(_code_row("c_digits"))
    lines = _append(
        code,
        json.dumps(_code_row("c_big", code_length=2**64)),
        json.dumps(_code_row("c_float", code_length=1e300)),
        json.dumps(_code_row("c_neg", code_length=-(2**63) - 1)),
        digits.replace('"code_length": ', f'"code_length": {huge}, "x": '),
        json.dumps(_code_row("c_deep")).replace("{", '{"deep": ' + deep + ", ", 1),
        json.dumps(_code_row("c_surrogate", code="print('\ud800')")),
        json.dumps(_code_row("c_meta_digits", meta=json.dumps(p1)[:-1] + ', "n": ' + huge + "}")),
        json.dumps(_code_row("c_meta_hex", meta=repr(p1)[:-1] + ", 'n': 0x" + "f" * 5000 + "}")),
        json.dumps(_code_row("c_meta_deep", meta='{"x": ' + deep + "}")),
        json.dumps(_code_row("c_meta_int", meta={**p1, "test_passed": 2**64})),
        json.dumps(_code_row("c_meta_float", meta={**p1, "pass_rate": 10**400})),
        json.dumps(_code_row("c_meta_key", meta={**p1, "\udfff": 1})),
        json.dumps(_code_row("c_extra", note="bad \udc80 text")),
        json.dumps(_code_row("c_tuple_key", meta=repr(p1)[:-1] + ", (1, 2): 3}")),
        # deep enough to fail json.dumps at write time, deeper in the stack, but read fine
        json.dumps(_code_row("c_deep_ok_for_json", note=json.loads(_nested(900)))),
        json.dumps(_code_row("c_ok_after_all")),  # still read: every problem is collected
    )
    text = root / "text_corpus" / f"{R.V3}.jsonl"
    row = {**R.V3_TEXT[0], "text_id": "t_x", "abbreviated_text_length": 1e300}
    (tline,) = _append(text, json.dumps(row))
    at = [f"{code}:{n}:" for n in lines]
    _expect(
        _problems(root),
        [
            f"{at[0]} field 'code_length' must be an int64",
            f"{at[1]} field 'code_length' must be an int64",
            f"{at[2]} field 'code_length' must be an int64",
            f"{at[3]} unreadable JSON: a number with more than 4300 digits",
            f"{at[4]} unreadable JSON: nested too deeply",
            f"{at[5]} field 'code' is not valid Unicode",
            f"{at[6]} meta: a number with more than 4300 digits",
            f"{at[7]} meta",
            f"{at[8]} meta: nested too deeply",
            f"{at[9]} meta.test_passed must be an int64",
            f"{at[10]} meta.pass_rate",
            f"{at[11]} meta is not valid Unicode",
            f"{at[12]} extra fields are not valid Unicode",
            f"{at[13]} meta: cannot be stored as JSON",
            f"{at[14]} extra fields: nested too deeply (more than 100 levels)",
            f"{text}:{tline}: field 'abbreviated_text_length' must be an int64",
        ],
    )


def _bad_utf8_strings(values: list[bytes]) -> pa.Array:
    """A string column holding raw bytes that may be invalid UTF-8 (as a broken writer makes)."""
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    return pa.Array.from_buffers(
        pa.string(),
        len(values),
        [None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(b"".join(values))],
    )


def test_out_of_range_and_undecodable_parquet_values_are_problems_with_rows(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "code_corpus" / f"{R.V2}.parquet"
    rows = [
        {**r, "meta": r["meta"] if isinstance(r["meta"], str) else json.dumps(r["meta"])}
        for r in R.V2_CODE
    ]
    n = len(rows)
    bad = [
        {**rows[0], "code_id": "c_u64", "code_length": 2**64 - 1},  # row n
        {**rows[0], "code_id": "c_utf8"},  # row n+1: its code is invalid UTF-8 below
        {**rows[0], "code_id": "c_meta", "meta": '{"n": ' + "9" * 5000 + "}"},  # row n+2
    ]
    table = pa.Table.from_pylist(
        [{**r, "code_length": r["code_length"]} for r in rows + bad],
        schema=pa.schema(
            [
                ("code_id", pa.string()),
                ("code", pa.string()),
                ("language", pa.string()),
                ("model", pa.string()),
                ("code_length", pa.uint64()),
                ("meta", pa.string()),
            ]
        ),
    )
    codes = [r["code"].encode() for r in rows + bad]
    codes[n + 1] = b"bad \xed\xa0\x80"
    table = table.set_column(1, "code", _bad_utf8_strings(codes))
    pq.write_table(table, path)
    floats = root / "text_corpus" / f"{R.V2}-00000-of-00001.parquet"
    texts = pq.read_table(floats).to_pylist()
    texts.append({**texts[0], "text_id": "t_float", "text_length": 1e300})
    pq.write_table(
        pa.Table.from_pylist(
            texts,
            schema=pq.read_table(floats).schema.set(
                pq.read_table(floats).schema.get_field_index("text_length"),
                pa.field("text_length", pa.float64()),
            ),
        ),
        floats,
    )
    _expect(
        _problems(root),
        [
            f"{path}:row {n}: field 'code_length' must be an int64",
            f"{path}:row {n + 1}: column 'code' is not valid UTF-8",
            f"{path}:row {n + 2}: meta: a number with more than 4300 digits",
            f"{floats}:row {len(texts) - 1}: field 'text_length' must be an int64",
        ],
    )


def test_surrogates_in_queries_and_qrels_do_not_reach_the_writer(tmp_path):
    root = R.write_release(tmp_path / "r")
    t2c = root / "text2code_queries" / f"{R.V3}.jsonl"
    row = {**R.V3_T2C[0], "query_id": "q_surrogate", "query": "find \ud83d"}
    (line,) = _append(t2c, json.dumps(row))
    _expect(_problems(root), [f"{t2c}:{line}: field 'query' is not valid Unicode"])


# ------------------------------------------------------------------------------------------
# Item 8: ids TREC cannot hold
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id", ["", " ", "code x", "code\nx", "code\tx", "code\u00a0x", "code\u3000x", "code\x00x"]
)
def test_ids_must_be_non_empty_and_whitespace_free(tmp_path, bad_id):
    root = R.write_release(tmp_path / "r")
    code = root / "code_corpus" / f"{R.V3}.jsonl"
    (cline,) = _append(code, json.dumps(_code_row(bad_id)))
    t2c = root / "text2code_queries" / f"{R.V3}.jsonl"
    (qline,) = _append(t2c, json.dumps({**R.V3_T2C[0], "query_id": bad_id}))
    text = root / "text_corpus" / f"{R.V3}.jsonl"
    (tline,) = _append(text, json.dumps({**R.V3_TEXT[0], "text_id": bad_id}))
    qrels = root / "text2code_qrels" / f"{R.V3}.jsonl"
    (rline,) = _append(
        qrels, json.dumps({"query_id": R.V3_T2C[0]["query_id"], "doc_id": bad_id, "relevance": 1})
    )
    why = "must be a non-empty id without whitespace or control characters"
    _expect(
        _problems(root),
        [
            f"{code}:{cline}: field 'code_id' {why}",
            f"{t2c}:{qline}: field 'query_id' {why}",
            f"{text}:{tline}: field 'text_id' {why}",
            f"{qrels}:{rline}: field 'doc_id' {why}",
        ],
    )


def test_a_meta_anchor_id_with_whitespace_is_refused(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "code2code_queries" / f"{R.V3}.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row["query_id"], row["meta"]["anchor_code_id"] = "q_c2c_x", "code v1"
    (line,) = _append(path, json.dumps(row))
    _expect(_problems(root), [f"{path}:{line}: meta.anchor_code_id must be a non-empty id"])


# ------------------------------------------------------------------------------------------
# Item 9: reserved names
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "name"),
    [
        ("text2code_queries", "corpus_code"),
        ("text2code_queries", "corpus_text_abbreviated"),
        ("code2code_queries", "code_corpus"),
        ("code2text_queries", "text2code_qrels"),
        ("code2text_queries", "corpus_text"),
        ("text2code_queries", "README.md"),
        ("text2code_queries", "Corpus_Code"),  # the same folder on a case-insensitive disk
    ],
)
def test_reserved_subtask_names_are_errors(tmp_path, config, name):
    root = R.write_release(tmp_path / "r")
    path = root / config / f"{R.V3}.jsonl"
    row = json.loads(path.read_text().splitlines()[0])
    row.update(query_id="q_reserved", subtask=name)
    (line,) = _append(path, json.dumps(row))
    _expect(_problems(root), [f"{path}:{line}: subtask {name!r} is a reserved config name"])
    out = tmp_path / "out"
    with pytest.raises(ReleaseError):
        coreb_dataset.build(root, out, progress=False)
    assert not out.exists()


def test_one_unknown_subtask_name_in_two_families_is_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    t2c = root / "text2code_queries" / f"{R.V3}.jsonl"
    c2c = root / "code2code_queries" / f"{R.V3}.jsonl"
    row = json.loads(c2c.read_text().splitlines()[0])
    row.update(query_id="q_c2c_weird", subtask="t2c_weird_variant")
    (line,) = _append(c2c, json.dumps(row))
    _expect(
        _problems(root),
        [f"{c2c}:{line}: subtask 't2c_weird_variant' is also a t2c subtask (first at {t2c}:4)"],
    )


# ------------------------------------------------------------------------------------------
# Item 10: an output that is, contains or lies inside an input
# ------------------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("where", ["same", "parent", "inside", "symlink", "linked-file-folder"])
def test_out_over_an_input_is_refused_even_with_force(tmp_path, where):
    root = R.write_release(tmp_path / "data" / "release")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a split file that is a symlink to a file outside the release is an input too
    target = elsewhere / "qrels.jsonl"
    qrels = root / "code2code_qrels" / f"{R.V3}.jsonl"
    qrels.rename(target)
    qrels.symlink_to(target)
    link = tmp_path / "link"
    link.symlink_to(root)
    out = {
        "same": root,
        "parent": tmp_path / "data",
        "inside": root / "code_corpus" / "built",
        "symlink": link,
        "linked-file-folder": elsewhere,
    }[where]
    before = _snapshot(tmp_path)
    with pytest.raises(ValueError, match="input of this build") as info:
        coreb_dataset.build(root, out, overwrite=True, progress=False)
    assert str(out) in str(info.value)
    assert _snapshot(tmp_path) == before
    with pytest.raises(ValueError, match="input of this build"):
        coreb_dataset.export_mteb(coreb_dataset.read_release(root), out, overwrite=True)
    assert _snapshot(tmp_path) == before


def test_force_replaces_only_what_a_build_wrote(tmp_path):
    root = R.write_release(tmp_path / "release")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match=r"thesis\.tex"):
        coreb_dataset.build(root, out, overwrite=True, progress=False)
    assert (out / "thesis.tex").read_text() == "years of work"
    afile = tmp_path / "notes.txt"
    afile.write_text("keep")
    with pytest.raises(ValueError, match="not a folder"):
        coreb_dataset.build(root, afile, overwrite=True, progress=False)
    assert afile.read_text() == "keep"
    # a folder a build wrote is replaced
    built = tmp_path / "built"
    coreb_dataset.build(root, built, progress=False)
    coreb_dataset.build(root, built, overwrite=True, progress=False)
    assert (built / "README.md").is_file()


def test_a_symlinked_out_is_rebuilt_where_it_points(tmp_path):
    root = R.write_release(tmp_path / "release")
    target = tmp_path / "disk" / "coreb"
    coreb_dataset.build(root, target, progress=False)
    (target / "README.md").write_text("stale")
    link = tmp_path / "coreb"
    link.symlink_to(target)
    coreb_dataset.build(root, link, overwrite=True, progress=False)
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert (target / "README.md").read_text() != "stale"


# ------------------------------------------------------------------------------------------
# Item 11: empty qrels, unreadable config folders and split paths, anchors judged
# ------------------------------------------------------------------------------------------


def test_an_empty_qrels_file_is_refused_when_its_family_has_queries(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "text2code_qrels" / f"{R.V3}.jsonl"
    path.write_bytes(b"")
    _expect(_problems(root), [f"{path}: the qrels file holds no judgment"])
    path.write_text("\n\n")  # blank lines only: the same
    _expect(_problems(root), [f"{path}: the qrels file holds no judgment"])


def test_an_empty_qrels_file_of_a_family_without_queries_is_fine(tmp_path):
    # `coreb release` writes an empty code2code_qrels when no problem has a c2c anchor
    root = R.write_release(tmp_path / "r")
    (root / "code2code_queries" / f"{R.V3}.jsonl").write_bytes(b"")
    (root / "code2code_qrels" / f"{R.V3}.jsonl").write_bytes(b"")
    data = coreb_dataset.read_release(root).releases[R.V3]
    assert data.qrels_source["c2c"] == "shipped"
    assert not any(s.family == "c2c" for s, _ in data.queries.values())


def test_a_shipped_query_without_judgments_is_a_warning(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "text2code_qrels" / f"{R.V3}.jsonl"
    keep = [line for line in path.read_text().splitlines() if "q_t2c_search_go_0001" not in line]
    path.write_text("\n".join(keep) + "\n")
    warnings = [str(w) for w in coreb_dataset.read_release(root).warnings]
    assert any("'q_t2c_search_go_0001' has no judged document" in w for w in warnings)


def test_a_config_folder_that_is_a_symlink_loop_is_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    folder = root / "text2code_qrels"
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    folder.symlink_to(folder)  # a loop: is_dir() is False, so it looked absent
    _expect(_problems(root), [f"{folder}: cannot read the config folder"])


def test_a_config_that_is_a_file_is_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    folder = root / "code2text_qrels"
    for p in folder.iterdir():
        p.unlink()
    folder.rmdir()
    folder.write_text("")
    _expect(_problems(root), [f"{folder}: an official config must be a folder"])


def test_a_split_path_that_is_a_folder_or_a_dangling_link_is_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "text2code_qrels" / f"{R.V3}.jsonl"
    path.unlink()
    path.mkdir()
    dangling = root / "code2text_qrels" / f"{R.V3}.jsonl"
    dangling.unlink()
    dangling.symlink_to(tmp_path / "gone.jsonl")
    _expect(
        _problems(root),
        [f"{path}: a split must be a file, this is a folder", f"{dangling}: cannot read"],
    )


def test_missing_hub_shards_are_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    shard = root / "text_corpus" / f"{R.V2}-00000-of-00001.parquet"
    shard.rename(shard.with_name(f"{R.V2}-00000-of-00002.parquet"))
    _expect(
        _problems(root),
        [f"{root / 'text_corpus'}: split {R.V2!r} has shards 0 of 2; missing: 1"],
    )


def test_a_shipped_c2c_qrel_of_the_anchor_itself_is_an_error(tmp_path):
    root = R.write_release(tmp_path / "r")
    path = root / "code2code_qrels" / f"{R.V3}.jsonl"
    anchor = R.V3_C2C[0]["meta"]["anchor_code_id"]
    (line,) = _append(
        path,
        json.dumps({"query_id": R.V3_C2C[0]["query_id"], "doc_id": anchor, "relevance": 2}),
    )
    _expect(
        _problems(root),
        [f"{path}:{line}: the qrel judges the query's anchor {anchor!r}"],
    )


# ------------------------------------------------------------------------------------------
# Item 11: what a killed build leaves beside --out is reclaimed by the next build
# ------------------------------------------------------------------------------------------

_KILLED_BUILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import coreb_dataset
    from coreb_toolkit.builders import hub_folder  # where the build looks write_parquet up

    where = sys.argv[3]
    if where == "writing":
        real = hub_folder.write_parquet
        def write_parquet(*args, **kwargs):
            real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)  # mid-build, one file written
        hub_folder.write_parquet = write_parquet
    elif where == "swapping":
        real_rename = Path.rename
        calls = []
        def rename(self, target):
            out = real_rename(self, target)
            calls.append(target)
            if len(calls) == 1:  # the old folder moved aside, the new one not yet in place
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        Path.rename = rename
    elif where == "waiting":
        real = hub_folder.write_parquet
        def write_parquet(*args, **kwargs):
            n = real(*args, **kwargs)
            print("started", flush=True)
            sys.stdin.read()  # held until the test closes the pipe: a build still running
            return n
        hub_folder.write_parquet = write_parquet
    coreb_dataset.build(sys.argv[1], sys.argv[2], overwrite=True, progress=False)
    """
)


def _start_build(release: Path, out: Path, where: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD, str(release), str(out), where],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_a_killed_builds_temp_folder_is_reclaimed_by_the_next_build(tmp_path):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    child = _start_build(release, out, "writing")
    child.communicate()
    assert child.returncode == -9
    assert _hidden(out), "the killed build should have left its temp folder"
    assert not out.exists()
    coreb_dataset.build(release, out, progress=False)
    assert _hidden(out) == []
    assert (out / "README.md").is_file()


def test_a_build_killed_while_swapping_folders_gets_its_old_folder_back(tmp_path):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    coreb_dataset.build(release, out, progress=False)
    before = _snapshot(out)
    child = _start_build(release, out, "swapping")
    child.communicate()
    assert child.returncode == -9
    assert not out.exists()  # the old folder lies aside, hidden
    with pytest.raises(FileExistsError):  # the next build puts it back, then refuses to replace
        coreb_dataset.build(release, out, progress=False)
    assert _snapshot(out) == before
    assert _hidden(out) == []


def test_a_running_builds_temp_folder_is_left_alone(tmp_path):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    child = _start_build(release, out, "waiting")
    try:
        assert child.stdout.readline().strip() == "started"
        theirs = _hidden(out)
        assert theirs
        coreb_dataset.build(release, out, overwrite=True, progress=False)
        assert set(theirs) <= set(_hidden(out))  # still there: its owner is alive
    finally:
        child.communicate()  # closes stdin: the child finishes its build
    assert child.returncode == 0
    assert _hidden(out) == []
    assert (out / "README.md").is_file()


def test_reclaim_ignores_folders_it_did_not_name(tmp_path):
    release = R.write_release(tmp_path / "release")
    out = tmp_path / "coreb"
    foreign = [tmp_path / ".coreb.backup", tmp_path / ".coreb.tmp-zz-1-x"]
    for p in foreign:
        p.mkdir()
    coreb_dataset.build(release, out, progress=False)
    assert all(p.is_dir() for p in foreign)


def test_a_pid_owner_check_matches_the_process_table(tmp_path):
    # scratch folders are named with coreb_toolkit.owners' tags: pid, start time, namespace
    tag = "from coreb_toolkit.owners import owner_tag; print(owner_tag())"
    done = subprocess.run([sys.executable, "-c", tag], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert owner_alive(owner_tag())
    assert not owner_alive(done.stdout.strip())
