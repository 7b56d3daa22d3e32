"""Peak memory of ``coreb evaluate`` with MiniLM as the release grows: 0.5x, 1x and 2x v2603.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_memory.py                      # 0.5x, 1x, 2x at 256 tokens
    .venv/bin/python benchmarks/bench_memory.py --max-length 32      # the growth, in minutes
    .venv/bin/python benchmarks/bench_memory.py --factors 0.5,1,1.5,2,3

The sizes are synthetic scale-ups of the real rows (``--dataset``, default
``../shared/data/coreb``, the published release as served), made so that every text stays
distinct (the runner encodes each distinct text once, so plain duplicates would not grow the
work):

* below 1x: the rows of a fraction of the problems (every row's problem is its
  ``meta_source_problem_id``, a noise text's with its ``_noise<N>`` suffix dropped; problems
  are taken in sorted order), qrels kept where both their query and document are;
* above 1x: the release plus copies of it; in copy ``c`` every id (``code_id``, ``text_id``,
  ``query_id``, ``doc_id``, ``meta_anchor_code_id``, ``meta_original_text_id``) ends in
  ``~c<c>`` and every text (code, text, abbreviated text, query, a match pair's code) gets a
  last line naming the copy, so the copy is a release of the same shape and length whose texts
  are all new; a fractional factor adds a copy of that fraction of the problems.

Each size is built with ``coreb build`` (untimed), then ``coreb evaluate --model minilm
--max-length N`` (every subtask, plots included, a fresh embedding cache) runs in a child
process started cold; its peak RSS is ``ru_maxrss`` from ``os.wait4``. A child that only imports
the toolkit and loads MiniLM gives the floor. Linear growth: the peak above the floor, per 1x of
release, is the same between every pair of sizes (reported as the increments' slope, MB per 1x).

``--max-length`` shortens every text the model sees (default 256, MiniLM's own): the forward
pass's activations are per batch, not per release, so a short length changes the constant, not
the growth, and makes the 2x run take minutes instead of a quarter of an hour. Results go to
``benchmarks/results/bench_memory.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
for _path in (REPO_ROOT, Path(__file__).resolve().parent):  # the toolkit; bench_peers
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_DATASET = REPO_ROOT.parent / "shared" / "data" / "coreb"
RELEASE = "release_v2603"
ID_FIELDS = ("code_id", "text_id", "query_id", "doc_id", "meta_anchor_code_id",
             "meta_original_text_id")  # fmt: skip
TEXT_FIELDS = ("code", "text", "abbreviated_text", "query")
CORPORA = ("code_corpus", "text_corpus")
QUERIES = ("text2code_queries", "code2text_queries", "code2code_queries")
QRELS = {"text2code_qrels": "text2code_queries", "code2text_qrels": "code2text_queries",
         "code2code_qrels": "code2code_queries"}  # fmt: skip
NOISE = re.compile(r"_noise\d+$")


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def problem(row: dict) -> str:
    """The problem a corpus or query row belongs to."""
    return NOISE.sub("", str(row.get("meta_source_problem_id") or ""))


def copied(row: dict, copy: int) -> dict:
    """``row`` as it appears in copy ``copy`` (0: unchanged)."""
    if copy == 0:
        return row
    out = dict(row)
    for key in ID_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = f"{out[key]}~c{copy}"
    for key in TEXT_FIELDS:
        if isinstance(out.get(key), str):
            out[key] = f"{out[key]}\n(copy {copy})"
    return out


def names_kept_documents(query: dict, kept_ids: dict[str, set[str]]) -> bool:
    """Whether the documents a query row names (a c2t_match pair's text, possibly of another
    problem; a C2T / C2C anchor) are in the scaled corpora."""
    for corpus, field in (("text_corpus", "text_id"), ("code_corpus", "meta_anchor_code_id")):
        if query.get(field) is not None and query[field] not in kept_ids[corpus]:
            return False
    return True


def scaled_release(source: Path, out: Path, factor: float) -> dict[str, int]:
    """Write the served files of ``source`` scaled by ``factor`` into ``out``; row counts."""
    files = {name: read_jsonl(source / f"{name}.jsonl") for name in (*CORPORA, *QUERIES, *QRELS)}
    problems = sorted({problem(r) for name in (*CORPORA, *QUERIES) for r in files[name]})
    whole, part = int(factor), factor - int(factor)
    # (copy, the problems it holds): whole copies hold every problem, the last one a fraction
    plan = [(c, set(problems)) for c in range(whole)]
    if part > 1e-9:
        plan.append((whole, set(problems[: round(part * len(problems))])))
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    kept_ids: dict[str, set[str]] = {}
    refs = {"code_corpus": "code_id", "text_corpus": "text_id"}
    for name in (*CORPORA, *QUERIES):
        rows = [copied(r, c) for c, held in plan for r in files[name] if problem(r) in held]
        if name in QUERIES:  # a query naming a document left out goes with it
            rows = [r for r in rows if names_kept_documents(r, kept_ids)]
        kept_ids[name] = {r[refs.get(name, "query_id")] for r in rows}
        counts[name] = len(rows)
        write_jsonl(out / f"{name}.jsonl", rows)
    docs = kept_ids["code_corpus"] | kept_ids["text_corpus"]
    for name, queries in QRELS.items():
        rows = [copied(r, c) for c, _ in plan for r in files[name]]
        rows = [r for r in rows if r["query_id"] in kept_ids[queries] and r["doc_id"] in docs]
        counts[name] = len(rows)
        write_jsonl(out / f"{name}.jsonl", rows)
    return counts


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def child(spec: dict) -> int:
    """In the child: ``coreb evaluate`` (or, for the floor, only the model load)."""
    if spec["floor"]:
        import coreb_toolkit.benchmark.runner  # noqa: F401  (what evaluate imports)
        from coreb_toolkit.retrieval.registry import make_retriever

        retriever = make_retriever("minilm", max_length=spec["max_length"], progress=False)
        _ = retriever.encoder.model  # a DenseFirstStage around the DenseRetriever
        return 0
    from coreb_toolkit.cli.main import main

    return main(["evaluate", "--dataset", spec["build"], "--releases", spec["release"],
                 "--model", "minilm", "--max-length", str(spec["max_length"]), "--cache-dir",
                 spec["cache"], "--out", spec["out"]])  # fmt: skip


def run_child(spec: dict, folder: Path) -> dict:
    """``spec`` run by this script's ``--child`` in a cold process: wall seconds, peak RSS."""
    from bench_peers import run_cold

    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(spec_path)]
    return run_cold(cmd, folder, str(folder))


def plot(report: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = report["sizes"]
    xs = [s["factor"] for s in sizes]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(xs, [s["peak_rss_mb"] for s in sizes], "o-", label="coreb evaluate, peak RSS")
    ax.axhline(report["floor"]["peak_rss_mb"], color="grey", ls="--", label="imports + model")
    ax.set_xlabel(f"release size (x {report['release']})")
    ax.set_ylabel("MB")
    ax.set_title(f"all-MiniLM-L6-v2, --max-length {report['max_length']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET,
                        help="the published releases as served (default: %(default)s)")  # fmt: skip
    parser.add_argument("--release", default=RELEASE)
    parser.add_argument("--factors", default="0.5,1,2",
                        help="release sizes, comma-separated (default: %(default)s)")  # fmt: skip
    parser.add_argument("--max-length", type=int, default=256,
                        help="tokens per text MiniLM sees (default: %(default)s)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (kept if given)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "bench_memory.json")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(json.loads(args.child.read_text(encoding="utf-8")))
    try:
        factors = sorted({float(f) for f in args.factors.split(",") if f.strip()})
    except ValueError:
        parser.error(f"--factors: numbers separated by commas, got {args.factors!r}")
    if not factors or factors[0] <= 0:
        parser.error("--factors: at least one size, each > 0")
    source = args.dataset / args.release
    if not source.is_dir():
        raise SystemExit(f"{source}: no such release folder")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-memory-"))
    coreb = Path(sys.executable).parent / "coreb"

    floor = run_child({"floor": True, "max_length": args.max_length}, work / "floor")
    print(f"floor (imports + MiniLM): {floor['peak_rss_mb']:.0f} MB", flush=True)
    sizes = []
    for factor in factors:
        folder = work / f"x{factor:g}"
        served = folder / "served"
        counts = scaled_release(source, served / args.release, factor)
        built = subprocess.run([str(coreb), "build", str(served), "--out", str(folder / "coreb"),
                                "--force"], capture_output=True, text=True)  # fmt: skip
        if built.returncode:
            raise SystemExit(f"coreb build of x{factor:g} exited {built.returncode}:\n"
                             f"{built.stderr[-3000:]}")  # fmt: skip
        spec = {"floor": False, "build": str(folder / "coreb"), "release": args.release,
                "max_length": args.max_length, "cache": str(folder / "cache"),
                "out": str(folder / "results")}  # fmt: skip
        measured = run_child(spec, folder)
        sizes.append({"factor": factor, "rows": counts, **measured})
        print(f"x{factor:g}: {counts['code_corpus']:,} code, {counts['text_corpus']:,} texts, "
              f"{sum(counts[q] for q in QUERIES):,} queries: peak {measured['peak_rss_mb']:.0f} "
              f"MB, {measured['wall_s']:.0f} s", flush=True)  # fmt: skip

    slopes = [
        {"from": a["factor"], "to": b["factor"],
         "mb_per_1x": (b["peak_rss_mb"] - a["peak_rss_mb"]) / (b["factor"] - a["factor"])}
        for a, b in itertools.pairwise(sizes)
    ]  # fmt: skip
    report = {
        "benchmark": "bench_memory",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "dataset": str(args.dataset),
        "release": args.release,
        "max_length": args.max_length,
        "cpus": os.cpu_count(),
        "floor": floor,
        "sizes": sizes,
        "slopes": slopes,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    drew = plot(report, args.out.with_suffix(".png"))
    print("\n| size | code | texts | queries | qrels | peak RSS MB | above floor MB | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for s in sizes:
        c = s["rows"]
        print(f"| {s['factor']:g}x | {c['code_corpus']:,} | {c['text_corpus']:,} | "
              f"{sum(c[q] for q in QUERIES):,} | {sum(c[q] for q in QRELS):,} | "
              f"{s['peak_rss_mb']:.0f} | {s['peak_rss_mb'] - floor['peak_rss_mb']:.0f} | "
              f"{s['wall_s']:.0f} |")  # fmt: skip
    for s in slopes:
        print(f"growth {s['from']:g}x -> {s['to']:g}x: {s['mb_per_1x']:.0f} MB per 1x")
    print(f"written to {args.out}" + (" and its .png" if drew else ""))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
