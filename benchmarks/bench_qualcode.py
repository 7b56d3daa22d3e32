"""Build time of QualCode / MC-QualCode on the real CodeNet data and on 1x, 10x, 100x copies of it.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_qualcode.py --scales 1 10 100 --repeats 1
    .venv/bin/python benchmarks/bench_qualcode.py --scales 0.05 --repeats 1 --skip-real \
        --retrieval-negatives 5   # smoke: below 1x there are not 99 other submissions

The real data is ``../shared/data/codenet`` (``COREB_SHARED_DATA`` overrides ``../shared/data``):
PIE pairs, 1,989 accepted Python submissions on 213 problems (1,959 on 202 problems survive
the build's selection: 11 statements exist only in Japanese).

The synthetic inputs are full Project CodeNet roots generated (untimed) from that real data:
``metadata/pNNNNN.csv`` (the 12 CodeNet columns), ``data/pNNNNN/Python/sNNNNNNNNN.py``,
``problem_descriptions/pNNNNN.html`` and ``metadata/problem_list.csv``. At scale ``s`` every
real problem is copied ``s`` times under new problem ids (a fractional scale takes the first
``round(213 * s)`` problems), each copy with the real statement HTML (from the descriptions
archive), the real limits, and the real accepted submissions under new submission ids: the real
code with one comment line naming the new id appended (so no two files are alike; the comment is
prose, so ruff's ERA001 does not count it), and the real CPU time and memory with a seeded +-5 %
jitter (which breaks the real data's many tied figures, so the synthetic 1x yields more
MC-QualCode triplets than the real data: 1,011 against 555 for k=1). About a fifth of the
submissions also get a non-accepted row (Wrong Answer, Time Limit Exceeded, Runtime Error) with
its code file, which the reader must filter out.

Reported, per input (medians over ``--repeats``; every measurement in a fresh subprocess):

* ``total_s``: ``qualcode_dataset.build([input], out)`` end to end, in a process of its own;
  ``build_peak_rss_mb`` is that process's peak RSS, ``ruff_peak_rss_mb`` the ruff child's.
* the breakdown, in another process: ``read_s`` = ``coreb_toolkit.sources.codenet.load``;
  ``smells_s`` =
  ``get_analyser("ruff")`` + its ``analyse`` on every candidate (timed inside ``prepare``
  through a proxy analyser); ``construct_s`` = the rest of ``prepare`` (pairs, retrieval
  negatives, MC labels and triplets, build report); ``write_s`` = ``build`` of the prepared
  data (Parquet files, card, build report).
* ``baseline_s``: reading the same input's files with plain Python and nothing else (every CSV
  parsed with ``csv.reader``, every code and HTML file read as text; for the real data, every
  jsonl line ``json.loads``-ed and every archive member read), in the breakdown's process.
  ``ratio_to_baseline`` = ``total_s / baseline_s``.

Linear scaling shows as ``t(10x)/t(1x)`` near 10 and ``t(100x)/t(1x)`` near 100 (``scaling``
in the JSON, for the total and for each part). Every part is also given in CPU seconds (the
process's and ruff's, user + system: ``*_cpu_s``), which a busy machine inflates less than wall
time. MC-QualCode stops at ``mc_per_k`` (3,000) triplets per k, reached from 10x on, so the
rows written grow slower than the input; the fixed costs (ruff's start, ``ruff rule --all``,
seven Parquet files) make 1x look slow per submission.

The smell step writes the submissions to scratch folders, 5,000 at a time (196k files at 100x),
on ``/dev/shm`` when it has room and in the default temporary folder otherwise
(:func:`coreb_toolkit.quality.smells._scratch_root`): on this machine's disk, writing and deleting
them there
took longer than the analysis itself (499 s wall for 89 s of CPU at 100x, before the change).
``TMPDIR`` decides where the synthetic inputs go (about 1 GB at 100x).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from coreb_toolkit.sources import codenet  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
SHARED = Path(os.environ.get("COREB_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
CODENET_DIR = SHARED / "codenet"
COLUMNS = (
    "submission_id", "problem_id", "user_id", "date", "language", "original_language",
    "filename_ext", "status", "cpu_time", "memory", "code_size", "accuracy",
)  # fmt: skip
NON_ACCEPTED = ("Wrong Answer", "Time Limit Exceeded", "Runtime Error")
NON_ACCEPTED_RATE = 0.2
JITTER = 0.05
PARTS = ("baseline_s", "read_s", "smells_s", "construct_s", "write_s", "total_s")
CPU_PARTS = tuple(p.replace("_s", "_cpu_s") for p in PARTS)


# --------------------------------------------------------------------------------------------
# The synthetic CodeNet roots (untimed)
# --------------------------------------------------------------------------------------------


def load_real(codenet_dir: Path) -> dict[str, Any]:
    """The real problems with their submissions, raw statement HTML and problem-list rows."""
    data = codenet.load([codenet_dir], progress=False)
    wanted = set(data.submissions)
    html: dict[str, bytes] = {}
    limits: dict[str, dict[str, str]] = {}
    header: list[str] = ["id", "name", "dataset", "time_limit", "memory_limit"]
    for path in sorted(codenet_dir.iterdir()):
        if path.name.endswith((".tar.gz", ".tgz", ".tar")):
            with tarfile.open(path) as tar:
                for member in tar:
                    pid = Path(member.name).stem
                    if member.isfile() and member.name.endswith(".html") and pid in wanted:
                        html.setdefault(pid, tar.extractfile(member).read())  # type: ignore[union-attr]
        elif path.suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as fh:
                reader = csv.DictReader(fh)
                if "time_limit" not in (reader.fieldnames or []):
                    continue
                header = list(reader.fieldnames or header)
                for row in reader:
                    if row["id"] in wanted:
                        limits.setdefault(row["id"], row)
    return {
        "problems": sorted(data.submissions.items()),
        "html": html,
        "limits": limits,
        "list_header": header,
    }


def make_input(root: Path, real: dict[str, Any], scale: float, seed: int = 0) -> dict[str, int]:
    """Write a Project CodeNet root holding ``scale`` times the real problems and submissions."""
    rng = random.Random(seed)
    problems = real["problems"]
    n_out = max(1, round(len(problems) * scale))
    (root / "metadata").mkdir(parents=True)
    (root / "problem_descriptions").mkdir()
    list_rows = []
    next_id = 0
    sizes = {"problems": n_out, "accepted": 0, "not_accepted": 0, "files": 0, "bytes": 0}
    for i in range(n_out):
        real_pid, subs = problems[i % len(problems)]
        pid = f"p{i:05d}"
        if real_pid in real["html"]:
            (root / "problem_descriptions" / f"{pid}.html").write_bytes(real["html"][real_pid])
        if real_pid in real["limits"]:
            list_rows.append({**real["limits"][real_pid], "id": pid})
        code_dir = root / "data" / pid / "Python"
        code_dir.mkdir(parents=True)
        rows = []
        for s in subs:
            statuses = ["Accepted"]
            if rng.random() < NON_ACCEPTED_RATE:
                statuses.append(rng.choice(NON_ACCEPTED))
            for status in statuses:
                sid = f"s{next_id:09d}"
                next_id += 1
                code = s.code if s.code.endswith("\n") else s.code + "\n"
                raw = (code + f"# benchmark copy {sid} of {s.submission_id}\n").encode("utf-8")
                (code_dir / f"{sid}.py").write_bytes(raw)
                cpu = round(s.cpu_time_ms * rng.uniform(1 - JITTER, 1 + JITTER))
                memory = (
                    ""
                    if s.memory_kb is None
                    else round(s.memory_kb * rng.uniform(1 - JITTER, 1 + JITTER))
                )
                accepted = status == "Accepted"
                rows.append((
                    sid, pid, s.user_id or "", 1_500_000_000 + next_id, "Python",
                    "Python (3.8.2)", "py", status, cpu, memory, len(raw),
                    "1/1" if accepted else "0/1",
                ))  # fmt: skip
                sizes["accepted" if accepted else "not_accepted"] += 1
                sizes["files"] += 1
                sizes["bytes"] += len(raw)
        with (root / "metadata" / f"{pid}.csv").open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(COLUMNS)
            writer.writerows(rows)
    with (root / "metadata" / "problem_list.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=real["list_header"])
        writer.writeheader()
        writer.writerows(list_rows)
    return sizes


# --------------------------------------------------------------------------------------------
# Measurements (each in a subprocess: clean peak RSS, nothing cached between them)
# --------------------------------------------------------------------------------------------


def baseline(root: Path) -> int:
    """Read every file of the input with plain Python; returns how many were read."""
    n = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            n += 1
            if name.endswith(".csv"):
                with path.open(encoding="utf-8", newline="") as fh:
                    list(csv.reader(fh))
            elif name.endswith(".jsonl"):
                with path.open(encoding="utf-8") as fh:
                    for line in fh:
                        json.loads(line)
            elif name.endswith((".tar.gz", ".tgz", ".tar")):
                with tarfile.open(path) as tar:
                    for member in tar:
                        if member.isfile():
                            tar.extractfile(member).read()  # type: ignore[union-attr]
            else:
                path.read_text(encoding="utf-8", errors="replace")
    return n


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (ruff), user + system."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _peak_rss_mb(who: int) -> float:
    peak = resource.getrusage(who).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


class _TimedAnalyser:
    """The analyser's contract, passed through, with the seconds ``analyse`` took."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.seconds = 0.0
        self.cpu_seconds = 0.0

    def version(self) -> str:
        return self.inner.version()

    def rules(self) -> dict[str, str]:
        return self.inner.rules()

    def analyse(self, codes: Any) -> Any:
        t0, c0 = time.perf_counter(), _cpu()
        try:
            return self.inner.analyse(codes)
        finally:
            self.seconds += time.perf_counter() - t0
            self.cpu_seconds += _cpu() - c0


def worker_parts(source: Path, out: Path, negatives: int) -> dict[str, Any]:
    """Baseline, then the build in its phases: read, smells, construction, writing."""
    import qualcode_dataset
    from coreb_toolkit.quality.smells import get_analyser

    options = qualcode_dataset.QualcodeOptions(retrieval_negatives=negatives)
    t0, c0 = time.perf_counter(), _cpu()
    files = baseline(source)
    t1, c1 = time.perf_counter(), _cpu()
    data = codenet.load([source], progress=False)
    t2, c2 = time.perf_counter(), _cpu()
    analyser = _TimedAnalyser(get_analyser("ruff"))
    t3, c3 = time.perf_counter(), _cpu()
    prepared = qualcode_dataset.prepare(data, options, analyser=analyser, progress=False)
    t4, c4 = time.perf_counter(), _cpu()
    built = qualcode_dataset.build(prepared, out, progress=False)
    t5, c5 = time.perf_counter(), _cpu()
    shutil.rmtree(out)
    report = built.report
    return {
        "baseline_files": files,
        "baseline_s": t1 - t0,
        "read_s": t2 - t1,
        "smells_s": (t3 - t2) + analyser.seconds,
        "construct_s": (t4 - t3) - analyser.seconds,
        "write_s": t5 - t4,
        "baseline_cpu_s": c1 - c0,
        "read_cpu_s": c2 - c1,
        "smells_cpu_s": (c3 - c2) + analyser.cpu_seconds,
        "construct_cpu_s": (c4 - c3) - analyser.cpu_seconds,
        "write_cpu_s": c5 - c4,
        "built": {
            "problems": report["problems"],
            "submissions": report["submissions"],
            "pairs": report["pairs"],
            "triplets": report["triplets"],
            "corpus_rows": built.rows.get(qualcode_dataset.CORPUS_CONFIG, {}).get("test", 0),
        },
    }


def worker_total(source: Path, out: Path, negatives: int) -> dict[str, Any]:
    """``qualcode_dataset.build`` end to end, with this process's and ruff's peak RSS."""
    import qualcode_dataset

    options = qualcode_dataset.QualcodeOptions(retrieval_negatives=negatives)
    t0, c0 = time.perf_counter(), _cpu()
    qualcode_dataset.build([source], out, options=options, progress=False)
    total, total_cpu = time.perf_counter() - t0, _cpu() - c0
    shutil.rmtree(out)
    return {
        "total_s": total,
        "total_cpu_s": total_cpu,
        "build_peak_rss_mb": _peak_rss_mb(resource.RUSAGE_SELF),
        "ruff_peak_rss_mb": _peak_rss_mb(resource.RUSAGE_CHILDREN),
    }


def run_worker(kind: str, source: Path, out: Path, negatives: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", kind, "--source", str(source), "--out", str(out),
         "--retrieval-negatives", str(negatives)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"the {kind} worker on {source} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(source: Path, work: Path, repeats: int, negatives: int) -> dict[str, Any]:
    """Medians over ``repeats`` of the breakdown and of the end-to-end build."""
    runs = []
    for r in range(repeats):
        parts = run_worker("parts", source, work / f"out_parts_{r}", negatives)
        total = run_worker("total", source, work / f"out_total_{r}", negatives)
        runs.append({**parts, **total})
    result = {
        key: statistics.median(run[key] for run in runs)
        for key in (*PARTS, *CPU_PARTS, "build_peak_rss_mb", "ruff_peak_rss_mb")
    }
    # the rest of the build, from the same process as read and smells
    result["rest_s"] = result["construct_s"] + result["write_s"]
    result["rest_cpu_s"] = result["construct_cpu_s"] + result["write_cpu_s"]
    # the end-to-end build runs in another process: what it took beyond the sum of the parts
    parts = ("read_s", "smells_s", "construct_s", "write_s")
    result["unaccounted_s"] = result["total_s"] - sum(result[p] for p in parts)
    result["load_average"] = os.getloadavg()
    result["ratio_to_baseline"] = result["total_s"] / result["baseline_s"]
    result["baseline_files"] = runs[0]["baseline_files"]
    result["built"] = runs[0]["built"]
    result["runs"] = runs
    return result


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def scaling(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every scale against the first: how much more data, how much more time per part."""
    if not results:
        return []
    base = results[0]
    out = []
    for r in results[1:]:
        out.append({
            "scale": r["scale"],
            "vs_scale": base["scale"],
            "data_ratio": r["sizes"]["accepted"] / base["sizes"]["accepted"],
            **{
                f"{p}_ratio": r[p] / base[p]
                for p in (*PARTS, "rest_s", *CPU_PARTS, "rest_cpu_s")
            },
        })  # fmt: skip
    return out


def print_table(rows: list[tuple[str, dict[str, Any]]], cpu: bool = False) -> None:
    """One line per input: seconds per part (wall clock, or CPU of the process + ruff)."""
    unit = "_cpu_s" if cpu else "_s"
    print("CPU seconds (process + ruff)" if cpu else "wall-clock seconds")
    head = (
        f"{'input':>8} {'subs':>8} {'baseline':>8} {'read':>7} {'smells':>7} {'construct':>9} "
        f"{'write':>7} {'total':>8} {'x base':>6} {'rss MB':>6} {'ruff MB':>7}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows:
        print(
            f"{name:>8} {r['built']['submissions']:>8,} {r['baseline' + unit]:>8.2f} "
            f"{r['read' + unit]:>7.2f} {r['smells' + unit]:>7.2f} {r['construct' + unit]:>9.2f} "
            f"{r['write' + unit]:>7.2f} {r['total' + unit]:>8.2f} "
            f"{r['total' + unit] / r['baseline' + unit]:>6.1f} "
            f"{r['build_peak_rss_mb']:>6.0f} {r['ruff_peak_rss_mb']:>7.0f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0, 100.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where results go")
    parser.add_argument("--skip-real", action="store_true", help="no build on the real data")
    parser.add_argument("--seed", type=int, default=0, help="seeds the synthetic inputs")
    parser.add_argument(
        "--retrieval-negatives",
        type=int,
        default=99,
        help="QualcodeOptions.retrieval_negatives (99, the paper's; lower it for scales < 1)",
    )
    parser.add_argument("--worker", choices=("parts", "total"), help=argparse.SUPPRESS)
    parser.add_argument("--source", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work = worker_parts if args.worker == "parts" else worker_total
        print(json.dumps(work(args.source, args.out, args.retrieval_negatives)))
        return 0
    if not CODENET_DIR.is_dir():
        parser.error(f"needs the real CodeNet data at {CODENET_DIR} (set COREB_SHARED_DATA)")
    if args.repeats < 1 or any(s <= 0 for s in args.scales):
        parser.error("--repeats must be >= 1 and every scale > 0")

    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "tmp_dir": tempfile.gettempdir(),
        "repeats": args.repeats,
        "retrieval_negatives": args.retrieval_negatives,
        "real": None,
        "synthetic": [],
    }
    table: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-qualcode-") as tmp:
        work = Path(tmp)
        if not args.skip_real:
            real_result = {
                "source": str(CODENET_DIR),
                **measure(CODENET_DIR, work, args.repeats, args.retrieval_negatives),
            }
            results["real"] = real_result
            table.append(("real", real_result))
            print(f"real: {real_result['total_s']:.2f} s", file=sys.stderr)
        real = load_real(CODENET_DIR)
        for scale in args.scales:
            root = work / f"codenet_{scale:g}x"
            t0 = time.perf_counter()
            sizes = make_input(root, real, scale, seed=args.seed)
            made = time.perf_counter() - t0
            result = {"scale": scale, "sizes": sizes, "generate_s": made}
            result.update(measure(root, work, args.repeats, args.retrieval_negatives))
            results["synthetic"].append(result)
            table.append((f"{scale:g}x", result))
            print(
                f"{scale:g}x: {sizes['accepted']:,} accepted rows -> {result['total_s']:.2f} s",
                file=sys.stderr,
            )
            shutil.rmtree(root)
    results["scaling"] = scaling(results["synthetic"])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "bench_qualcode.json").write_text(json.dumps(results, indent=2) + "\n")

    print_table(table)
    print()
    print_table(table, cpu=True)
    print()
    for s in results["scaling"]:
        print(
            f"{s['scale']:g}x vs {s['vs_scale']:g}x: {s['data_ratio']:.1f}x the data took "
            f"{s['total_s_ratio']:.1f}x the wall time, {s['total_cpu_s_ratio']:.1f}x the CPU "
            f"(CPU: read {s['read_cpu_s_ratio']:.1f}x, smells {s['smells_cpu_s_ratio']:.1f}x, "
            f"construction {s['construct_cpu_s_ratio']:.1f}x, writing "
            f"{s['write_cpu_s_ratio']:.1f}x; baseline {s['baseline_cpu_s_ratio']:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
