"""CodeNet reader: layouts, selection, merging, errors, and HTML statements to text."""

from __future__ import annotations

import csv
import json
import logging
import re
import tarfile
from pathlib import Path

import lxml.html
import pytest

from coreb_toolkit.sources import codenet, codenet_records
from coreb_toolkit.sources.codenet import Dropped, Submission, html_to_text, load
from tests.conftest import SHARED_DATA

CODENET_DIR = SHARED_DATA / "codenet"
NOFUNEVAL_DIR = SHARED_DATA / "nofuneval"

METADATA_HEADER = (
    "submission_id,problem_id,user_id,date,language,original_language,filename_ext,status,"
    "cpu_time,memory,code_size,accuracy"
)

# -- fixtures written by the tests ----------------------------------------------------------------


def write_codenet_root(root: Path) -> Path:
    """A tiny full Project CodeNet layout: two problems, every kind of row."""
    (root / "metadata").mkdir(parents=True)
    (root / "metadata" / "p00001.csv").write_text(
        "\n".join(
            [
                METADATA_HEADER,
                "s000000006,p00001,u2,1,Python,Python (3.4.3),py,Accepted,20,4000,30,1/1",
                "s000000001,p00001,u1,1,Python,Python (3.4.3),py,Accepted,10,3000,20,1/1",
                "s000000002,p00001,u1,1,Python,Python (3.4.3),py,Wrong Answer,10,3000,20,0/1",
                "s000000003,p00001,u3,1,C++,C++14 (GCC 5.4.1),cpp,Accepted,0,640,90,1/1",
                "s000000004,p00001,u4,1,Python,Python (3.4.3),py,Accepted,30,3100,25,1/1",
                "s000000005,p00001,u5,1,Python,Python (3.4.3),py,Accepted,,,25,1/1",
            ]
        )
        + "\n"
    )
    (root / "metadata" / "p00002.csv").write_text(
        METADATA_HEADER
        + "\ns000000010,p00002,u1,1,Python,Python (2.7.6),py,Accepted,50,5000,10,1/1\n"
    )
    (root / "metadata" / "problem_list.csv").write_text(
        "id,name,dataset,time_limit,memory_limit,rating,tags,complexity\n"
        "p00001,Sum,AIZU,1000,131072,,,\n"
        "p00002,Echo,AtCoder,2000,1048576,,,\n"
    )
    python = root / "data" / "p00001" / "Python"
    python.mkdir(parents=True)
    (python / "s000000001.py").write_text("print(sum(map(int, input().split())))\n")
    # Windows line endings, as many CodeNet files have them; s000000004 has no file.
    (python / "s000000006.py").write_bytes(b"a, b = map(int, input().split())\r\nprint(a + b)\r\n")
    (root / "data" / "p00001" / "C++").mkdir()
    (root / "data" / "p00001" / "C++" / "s000000003.cpp").write_text("int main() {}\n")
    (root / "data" / "p00002" / "Python").mkdir(parents=True)
    (root / "data" / "p00002" / "Python" / "s000000010.py").write_text("print(input())\n")
    (root / "problem_descriptions").mkdir()
    (root / "problem_descriptions" / "p00001.html").write_text(
        "<H1>Sum</H1>\n<p>Print $a + b$.</p>\n<H2>Sample Input</H2>\n<pre>\n1 2\n</pre>\n"
    )
    tests = root / "derived" / "input_output" / "data" / "p00001"
    tests.mkdir(parents=True)
    (tests / "input.txt").write_text("1 2\n")
    (tests / "output.txt").write_text("3\n")
    return root


def pie_row(**fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "user_id": "u1",
        "problem_id": "p00001",
        "language": "python",
        "submission_id_v0": "s000000001",
        "submission_id_v1": "s000000007",
        "cpu_time_v0": 10,
        "cpu_time_v1": 5,
        "memory_v0": 3000,
        "memory_v1": 2900,
        "status_v0": "Accepted",
        "status_v1": "Accepted",
        "input": "print(sum(map(int, input().split())))\n",
        "target": "import sys\n\n\n\nprint(sum(map(int, sys.stdin.read().split())))",
    }
    row.update(fields)
    return row


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_codenet_root(tmp_path / "codenet")


# -- full CodeNet layout ---------------------------------------------------------------------------


def test_full_codenet_keeps_accepted_python_only(root: Path) -> None:
    data = load([root], progress=False)

    assert {pid: [s.submission_id for s in subs] for pid, subs in data.submissions.items()} == {
        "p00001": ["s000000001", "s000000006"],  # sorted by id, not file order
        "p00002": ["s000000010"],
    }
    first, second = data.submissions["p00001"]
    assert first == Submission(
        problem_id="p00001",
        submission_id="s000000001",
        language="Python",
        code="print(sum(map(int, input().split())))\n",
        cpu_time_ms=10.0,
        memory_kb=3000.0,
        status="Accepted",
        user_id="u1",
        origin="data/p00001/Python/s000000001.py (metadata/p00001.csv:3)",
    )
    assert second.code == "a, b = map(int, input().split())\nprint(a + b)\n"
    # 7 rows: 3 kept, 1 wrong answer, 1 C++, 1 without a code file, 1 without cpu_time.
    assert data.filtered == {"not accepted": 1, "other language": 1}
    assert data.dropped == [
        Dropped("read", "no code file", "s000000004", f"{root}/metadata/p00001.csv:6"),
        Dropped("read", "missing cpu_time", "s000000005", f"{root}/metadata/p00001.csv:7"),
    ]
    assert data.drop_counts() == {
        "missing cpu_time": 1,
        "no code file": 1,
        "not accepted": 1,
        "other language": 1,
    }


def test_full_codenet_problems_get_limits_statement_and_tests(root: Path) -> None:
    problems = load([root], progress=False).problems

    assert list(problems) == ["p00001", "p00002"]
    p1, p2 = problems["p00001"], problems["p00002"]
    assert (p1.name, p1.time_limit_ms, p1.memory_limit_kb) == ("Sum", 1000.0, 131072.0)
    assert p1.statement == "Sum\n\nPrint a + b.\n\nSample Input\n\n1 2"
    assert p1.statement_language == "en"
    assert p1.tests == (("1 2\n", "3\n"),)
    # No statement file: the builder decides; 1024 MB is written 1048576 (KB).
    assert (p2.statement, p2.statement_language, p2.tests) == (None, None, ())
    assert p2.memory_limit_kb == 1024 * 1024


def test_language_filter(root: Path) -> None:
    data = load([root], language="C++", progress=False)
    assert [s.submission_id for subs in data.submissions.values() for s in subs] == ["s000000003"]
    assert data.submissions["p00001"][0].language == "C++"
    assert data.filtered == {"other language": 6}
    # Compared without regard to case, written as CodeNet writes it.
    lower = load([root], language="python", progress=False)
    assert lower.submissions["p00002"][0].language == "Python"


# -- PIE and NoFunEval jsonl -----------------------------------------------------------------------


def test_pie_pairs_give_both_sides(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            pie_row(),
            pie_row(submission_id_v0="s000000020", submission_id_v1="s000000021",
                    status_v1="Time Limit Exceeded"),
            pie_row(submission_id_v0="s000000030", submission_id_v1="s000000031",
                    cpu_time_v0=None, language="C++"),
        ],
    )  # fmt: skip
    data = load([path], progress=False)

    kept = {s.submission_id: s for subs in data.submissions.values() for s in subs}
    assert sorted(kept) == ["s000000001", "s000000007", "s000000020"]
    assert kept["s000000007"].origin == "pairs.jsonl:1 (v1)"
    assert (kept["s000000007"].cpu_time_ms, kept["s000000007"].memory_kb) == (5.0, 2900.0)
    assert kept["s000000007"].language == "Python"
    # PIE doubles every line break ("\r\n" stored as "\n\n"): undone.
    assert kept["s000000007"].code == "import sys\n\nprint(sum(map(int, sys.stdin.read().split())))"
    assert data.filtered == {"not accepted": 1, "other language": 2}
    assert data.problems["p00001"].statement is None


def test_nofuneval_reads_sources_and_drops_unidentified_targets(tmp_path: Path) -> None:
    row = {
        "problem_id": "p00001",
        "submission_id_v0": "s000000001",
        "cpu_time_v0": "12",
        "cpu_time_v1": "3",
        "source_code": "x = 1\n\nprint(x)",
        "target_code": "print(1)",
        "pl": "python",
    }
    path = write_jsonl(tmp_path / "runtime_efficiency.jsonl", [row])
    data = load([path], progress=False)

    (submission,) = data.submissions["p00001"]
    assert (submission.cpu_time_ms, submission.memory_kb, submission.status) == (
        12.0,
        None,
        "Accepted",
    )
    assert submission.code == "x = 1\nprint(x)"
    assert data.dropped == [
        Dropped("read", "no submission id", "target of s000000001", f"{path}:1")
    ]


def test_duplicate_kept_once_and_conflict_keeps_first(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pie = write_jsonl(
        tmp_path / "pairs.jsonl",
        [
            pie_row(),  # s000000001 as in the CodeNet root: a plain duplicate
            pie_row(submission_id_v0="s000000006", submission_id_v1="s000000008",
                    cpu_time_v0=20, memory_v0=4000, input="print(a + b)"),  # other code
        ],
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="coreb_toolkit.sources.codenet"):
        data = load([root, pie], progress=False)

    kept = {s.submission_id: s for subs in data.submissions.values() for s in subs}
    assert kept["s000000006"].code.startswith("a, b = map")  # the first one read
    assert kept["s000000001"].origin.startswith("data/p00001/Python/")
    assert data.drop_counts()["duplicate submission"] == 1
    assert data.drop_counts()["conflicting duplicate"] == 1
    conflict = next(d for d in data.dropped if d.reason == "conflicting duplicate")
    assert (conflict.item, conflict.where) == ("s000000006", f"{pie}:2")
    assert "s000000006" in caplog.text and "code" in caplog.text


def test_duplicate_fills_figures_the_first_lacked(tmp_path: Path) -> None:
    nofuneval = write_jsonl(
        tmp_path / "runtime_efficiency.jsonl",
        [
            {
                "problem_id": "p00001",
                "submission_id_v0": "s000000001",
                "cpu_time_v0": "10",
                "source_code": "print(sum(map(int, input().split())))\n",
                "pl": "python",
            }
        ],
    )
    pie = write_jsonl(tmp_path / "pairs.jsonl", [pie_row()])
    data = load([nofuneval, pie], progress=False)

    first = data.submissions["p00001"][0]
    assert (first.submission_id, first.memory_kb, first.user_id) == ("s000000001", 3000.0, "u1")
    assert first.origin == "runtime_efficiency.jsonl:1 (source)"
    assert data.drop_counts() == {"duplicate submission": 1}


# -- errors ----------------------------------------------------------------------------------------


def test_malformed_lines_are_all_named_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        json.dumps(pie_row())
        + "\n{not json\n"
        + json.dumps(pie_row(cpu_time_v1="fast"))
        + "\n\n"
        + json.dumps(pie_row(submission_id_v0=7))
        + "\n"
    )
    with pytest.raises(ValueError) as info:
        load([path], progress=False)
    message = str(info.value)
    assert message.startswith("3 malformed record(s)")
    assert f"{path}:2: not valid JSON" in message
    assert f"{path}:3: cpu_time_v1 must be a non-negative number, got 'fast'" in message
    assert f"{path}:5: field 'submission_id_v0' must be a string, got int 7" in message


def test_malformed_metadata_row(root: Path) -> None:
    with (root / "metadata" / "p00002.csv").open("a") as fh:
        fh.write("s000000011,p00002,u1,1,Python,Python3,py,Accepted\n")
        fh.write("s000000012,p00002,u1,1,Python,Python3,py,Accepted,-5,100,10,1/1\n")
    with pytest.raises(ValueError) as info:
        load([root], progress=False)
    message = str(info.value)
    assert f"{root}/metadata/p00002.csv:3: 8 fields where the header has 12" in message
    assert f"{root}/metadata/p00002.csv:4: cpu_time must be a non-negative number" in message


def test_missing_and_unrecognised_sources(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no-such-dir does not exist; accepted layouts: .*PIE"):
        load([tmp_path / "no-such-dir"], progress=False)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.txt").write_text("hello")
    with pytest.raises(ValueError, match=r"notes: layout not recognised .*accepted layouts"):
        load([tmp_path / "notes"], progress=False)
    other = write_jsonl(tmp_path / "other.jsonl", [{"task_id": 1, "prompt": "x"}])
    with pytest.raises(ValueError, match=r"other\.jsonl: layout not recognised \(a jsonl file"):
        load([other], progress=False)
    with pytest.raises(TypeError, match="pass \\["):
        load(str(other), progress=False)  # type: ignore[arg-type]


def test_statements_only_source_lists_problems_with_statements(tmp_path: Path) -> None:
    folder = tmp_path / "problem_descriptions"
    folder.mkdir()
    (folder / "p00005.html").write_text("<h1>Five</h1><p>文字列 <var>S</var> を出力せよ。</p>")
    (folder / "p00006.html").write_text("<h1>Six</h1><p>Print <var>S</var>.</p>")
    data = load([folder], progress=False)
    assert {pid: p.statement_language for pid, p in data.problems.items()} == {
        "p00005": "ja",
        "p00006": "en",
    }
    assert data.submissions == {}


def test_undouble_newlines() -> None:
    undouble = codenet_records.undouble_newlines
    assert undouble("a = 1\n\nb = 2\n\n\n\nprint(a)\n\n") == "a = 1\nb = 2\n\nprint(a)\n"
    # Mixed "\n" and "\r\n" lines: the single breaks stay.
    assert undouble("import x\ny = 1\n\nz = 2\n\nw = 3") == "import x\ny = 1\nz = 2\nw = 3"
    assert undouble("a = 1\nb = 2\n\nc = 3\n") == "a = 1\nb = 2\n\nc = 3\n"  # not doubled
    assert undouble("print(1)") == "print(1)"


# -- HTML statements -------------------------------------------------------------------------------

ATCODER_HTML = r"""<span class="lang">
<span class="lang-ja">
<p>配点 : <var>100</var> 点</p>
<div class="part"><section><h3>問題文</h3>
<p>整数 <var>A</var> と <var>B</var> の和を出力せよ。</p></section></div>
</span>
<span class="lang-en">
<p>Score : <var>100</var> points</p>
<div class="part"><section>
<h3>Problem Statement</h3><p>Print the sum of <var>A</var> and <var>B</var>.</p>
</section></div>
<div class="part"><section>
<h3>Constraints</h3><ul>
<li><var>1 \leq A, B \leq 10^9</var></li>
<li>All values in input are integers.</li>
</ul>
</section></div>
<hr/>
<div class="io-style"><div class="part"><section>
<h3>Input</h3><p>Input is given from Standard Input in the following format:</p>
<pre><var>A</var> <var>B</var>
</pre>
</section></div></div>
<div class="part"><section>
<h3>Sample Input 1</h3><pre>3  4
</pre>
</section></div>
<div class="part"><section>
<h3>Sample Output 1</h3><pre>7
</pre>
<p><var>3 + 4 = 7</var>.</p>
</section></div>
</span>
</span>"""

ATCODER_TEXT = """Score : 100 points

Problem Statement

Print the sum of A and B.

Constraints

- 1 ≤ A, B ≤ 10^9
- All values in input are integers.

Input

Input is given from Standard Input in the following format:

A B

Sample Input 1

3  4

Sample Output 1

7

3 + 4 = 7."""

AIZU_HTML = r"""<script type="text/x-mathjax-config">
MathJax.Hub.Config({ tex2jax: { inlineMath: [["$","$"], ["\\(","\\)"]], processEscapes: true }});
</script>
<H1>Sum &amp; Product</H1>
<!-- a comment -->
<p>
Given $n$ integers $a_1, a_2, \ldots, a_n$, print
their sum and the product $\prod_{i=1}^{n} a_i$ modulo $10^9+7$.<br>
The answer costs \$5 &lt;= nothing.
</p>
<H2>Input</H2>
<pre>
$n$
$a_1$ $a_2$ ... $a_n$
</pre>
<H2>Constraints</H2>
<ol>
<li>\(1 \leq n \leq 10^{5}\)</li>
<li>$|a_i| \lt 2^{31}$, x<sub>i</sub> and 10<sup>9</sup></li>
</ol>
<table>
<tr><th>n</th><th>answer</th></tr>
<tr><td>1</td><td>&nbsp;2</td></tr>
</table>
<H2>Sample Input</H2>
<pre>
3
1 2 3
</pre>
<img src="x.png" alt="figure">
<p>See the <code>$PATH</code> variable, $\frac{a+1}{2}$ and $\sqrt{x}$.</p>
"""

AIZU_TEXT = """Sum & Product

Given n integers a_1, a_2, …, a_n, print their sum and the product ∏_{i=1}^n a_i modulo 10^9+7.
The answer costs $5 <= nothing.

Input

$n$
$a_1$ $a_2$ ... $a_n$

Constraints

1. 1 ≤ n ≤ 10^5
2. |a_i| < 2^31, x_i and 10^9

n | answer
1 | 2

Sample Input

3
1 2 3

See the $PATH variable, (a+1)/2 and √x."""


def test_html_to_text_atcoder_keeps_the_english_part() -> None:
    assert html_to_text(ATCODER_HTML) == ATCODER_TEXT


def test_html_to_text_aizu_math_lists_tables_pre() -> None:
    # <pre> stays verbatim, "$" in it included; MathJax skips <code>, so "$PATH" is no math.
    assert html_to_text(AIZU_HTML) == AIZU_TEXT


def test_html_to_text_edge_cases() -> None:
    assert html_to_text("") == html_to_text("<!-- only a comment -->") == ""
    assert html_to_text("<p>  a\u3000b\x08 </p><p></p>") == "a b"
    layout = (
        "<table><tr><td><table><tr><td>x</td><td>1</td></tr><tr><td>y</td><td>2</td></tr>"
        "</table></td><td><p>right</p></td></tr></table>"
    )
    assert html_to_text(layout) == "x | 1\ny | 2\n\nright"
    assert html_to_text("<dl><dt>'+'</dt><dd>all</dd></dl>") == "'+'\n  all"
    assert html_to_text(r"<p>\begin{cases} 1 & x \geq 0 \\ 0 \end{cases}</p>") == "1 x ≥ 0 ; 0"


# -- the real data ---------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def real_codenet() -> codenet.CodenetData:
    return load([CODENET_DIR], progress=False)


@pytest.mark.needs_shared_data
def test_real_codenet_folder_counts(real_codenet: codenet.CodenetData) -> None:
    rows = read_jsonl(CODENET_DIR / "pie_py_reference.jsonl")
    seen: dict[str, tuple[str, int, int]] = {}
    for row in rows:
        for v in ("v0", "v1"):
            seen.setdefault(
                row[f"submission_id_{v}"],
                (row["problem_id"], row[f"cpu_time_{v}"], row[f"memory_{v}"]),
            )
    kept = {s.submission_id: s for subs in real_codenet.submissions.values() for s in subs}

    assert len(rows) == 1000 and len(kept) == len(seen) == 1989
    assert real_codenet.drop_counts() == {"duplicate submission": 2 * len(rows) - len(seen)}
    assert {sid: (s.problem_id, s.cpu_time_ms, s.memory_kb) for sid, s in kept.items()} == seen
    assert set(real_codenet.problems) == {r["problem_id"] for r in rows}
    assert len(real_codenet.problems) == 213
    assert all(p.statement for p in real_codenet.problems.values())
    assert all(s.language == "Python" for s in kept.values())


@pytest.mark.needs_shared_data
def test_real_limits_match_the_problem_list(real_codenet: codenet.CodenetData) -> None:
    with (CODENET_DIR / "codenet_problem_list.csv").open(newline="") as fh:
        listed = {row["id"]: row for row in csv.DictReader(fh)}
    for pid, problem in real_codenet.problems.items():
        assert problem.name == listed[pid]["name"]
        assert problem.time_limit_ms == float(listed[pid]["time_limit"])
        assert problem.memory_limit_kb == float(listed[pid]["memory_limit"])
    # ABC 173 (p02612) has 2 sec and 1024 MB; ABC 095 (p03371) 2 sec and 256 MB.
    assert real_codenet.problems["p02612"].memory_limit_kb == 1024 * 1024
    assert real_codenet.problems["p03371"].memory_limit_kb == 256 * 1024
    assert real_codenet.problems["p03371"].time_limit_ms == 2000


# Ten AIZU and ten AtCoder statements of the PIE problems, English and Japanese.
REAL_STATEMENTS = [
    "p00053", "p00122", "p00134", "p00500", "p00713", "p00827", "p01138", "p01438",
    "p02248", "p02414",
    "p02537", "p02649", "p02758", "p02850", "p02952", "p03060", "p03250", "p03371",
    "p03579", "p03988",
]  # fmt: skip


def real_html(problem_ids: list[str]) -> dict[str, str]:
    with tarfile.open(CODENET_DIR / "codenet_problem_descriptions.tar.gz") as tar:
        return {
            Path(member.name).stem: tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
            for member in tar
            if Path(member.name).stem in problem_ids
        }


@pytest.mark.needs_shared_data
def test_real_statements_are_clean_text(real_codenet: codenet.CodenetData) -> None:
    html = real_html(REAL_STATEMENTS)
    assert sorted(html) == sorted(REAL_STATEMENTS)
    for pid in REAL_STATEMENTS:
        statement = real_codenet.problems[pid].statement
        assert statement is not None, pid
        assert not re.search(r"</?(p|var|pre|div|span|h\d|li|ul|br|sub|sup)\b", statement), pid
        assert not re.search(r"&(lt|gt|amp|nbsp);|\\(leq|le|times|ldots)\b", statement), pid
        document = lxml.html.document_fromstring(html[pid])
        # Every sample <pre> is there verbatim (less the blank lines around it).
        for pre in document.iter("pre"):
            heading = pre.getprevious()
            if heading is not None and re.match(r"(Sample|入力例|出力例)", heading.text_content()):
                sample = pre.text_content().strip("\n").rstrip()
                assert sample in statement, (pid, sample)
        # Headings stand alone, between blank lines.
        for heading in document.iter("h2", "h3"):
            title = " ".join(heading.text_content().split())
            if title:
                assert f"\n\n{title}\n\n" in f"\n\n{statement}\n\n", (pid, title)
    p03371 = real_codenet.problems["p03371"].statement
    assert "Constraints\n\n- 1 ≤ A, B, C ≤ 5000\n- 1 ≤ X, Y ≤ 10^5\n" in p03371
    assert "Sample Input 1\n\n1500 2000 1600 3 2\n\nSample Output 1\n\n7900" in p03371
    languages = {pid: real_codenet.problems[pid].statement_language for pid in REAL_STATEMENTS}
    assert [pid for pid, lang in languages.items() if lang == "ja"] == [
        "p00053", "p00122", "p00134", "p00500", "p01138",
    ]  # fmt: skip


@pytest.mark.needs_shared_data
def test_real_nofuneval_tests_attach_and_merge(real_codenet: codenet.CodenetData) -> None:
    data = load([CODENET_DIR, NOFUNEVAL_DIR], progress=False)
    cases = NOFUNEVAL_DIR / "codenet_public_test_cases"
    nfe = read_jsonl(NOFUNEVAL_DIR / "runtime_efficiency.jsonl")
    pie_code = {}
    for row in read_jsonl(CODENET_DIR / "pie_py_reference.jsonl"):
        pie_code.setdefault(row["submission_id_v0"], row["input"])
        pie_code.setdefault(row["submission_id_v1"], row["target"])
    differing = sum(pie_code[row["submission_id_v0"]] != row["source_code"] for row in nfe)

    with_tests = {pid for pid, p in data.problems.items() if p.tests}
    assert with_tests == {p.name for p in cases.iterdir()} and len(with_tests) == 113
    assert sum(len(p.tests) for p in data.problems.values()) == len(list(cases.glob("*/input.*")))
    assert data.problems["p02248"].tests[0] == (
        (cases / "p02248" / "input.0.txt").read_text(),
        (cases / "p02248" / "output.0.txt").read_text(),
    )
    assert data.submissions == real_codenet.submissions  # PIE read first: its records are kept
    assert data.drop_counts() == {
        "conflicting duplicate": differing,
        "duplicate submission": 11 + len(nfe) - differing,
        "no submission id": len(nfe),
    }
    assert differing == 17


@pytest.mark.needs_shared_data
def test_real_nofuneval_alone() -> None:
    data = load([NOFUNEVAL_DIR], progress=False)
    assert len(data.problems) == 113
    assert sum(len(subs) for subs in data.submissions.values()) == 113
    assert all(p.statement is None and p.tests for p in data.problems.values())
    assert all(
        s.memory_kb is None and s.cpu_time_ms is not None
        for subs in data.submissions.values()
        for s in subs
    )
