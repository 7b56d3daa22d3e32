"""Build time of the CoREB Hub folder for a v202603-sized release and for 10x that.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_dataset.py              # 1x and 10x, 3 repeats
    .venv/bin/python benchmarks/bench_dataset.py --scales 0.1 --repeats 1   # smoke

The release is synthetic (generated here, in the official layout, JSONL): at scale 1 it has the
shape of v202603 -- 175 problems, 1,750 code documents (2 models x 5 languages, about a third
passing), 875 texts (1 original + 4 noise per problem), 2,483 queries split over the subtask
variants as in the paper's Table 11, and about 12,000 qrels. Qrels are shipped, as in a real
release (they are derived once, untimed, with the v2 scheme, then written as files).

Reported, per scale: the median seconds of ``coreb_dataset.build`` (read + validate + write
every config + card), and the ratio to a baseline measured in the same run: reading the same
JSONL files with ``json.loads`` line by line and nothing else. Linear scaling shows as the
10x/1x build-time ratio staying near 10. Target: under 30 s at scale 1 on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import coreb_dataset  # noqa: E402
from coreb_toolkit.vocabulary import LANGUAGE_NAMES, LANGUAGE_SUFFIXES  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
LANGS = LANGUAGE_NAMES
MODELS = ("model-a", "model-b")
# v202603 query counts per variant (Table 11), split between t2c and c2t where both have it
VARIANTS = {
    ("t2c", "canonical_retro"): 419,
    ("c2t", "canonical_retro"): 419,
    ("t2c", "full_retro"): 419,
    ("c2t", "full_retro"): 419,
    ("t2c", "search"): 261,
    ("c2c", "cross_lang"): 166,
    ("c2t", "match"): 380,
}
SPLIT = "release_v2603"


def _write(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def make_release(root: Path, scale: float, seed: int = 0) -> dict[str, int]:
    rng = random.Random(seed)
    n_problems = max(2, round(175 * scale))
    code, texts = [], []
    by_problem: dict[int, list[dict]] = {}
    for p in range(n_problems):
        pid = f"lcb_{p:05d}"
        for model in MODELS:
            for lang in LANGS:
                cid = f"code_{len(code):07d}"
                body = f"// {pid} {lang} {model}\n" + "x = 1\n" * rng.randint(20, 80)
                row = {
                    "code_id": cid, "code": body, "language": lang, "model": model,
                    "code_length": len(body),
                    "meta": {"source_problem_id": pid, "solution_key": f"{model}_{lang}",
                             "passed": rng.random() < 0.31, "pass_rate": 0.5,
                             "test_passed": 1, "test_total": 2},
                }  # fmt: skip
                code.append(row)
                by_problem.setdefault(p, []).append(row)
        for k, style in enumerate(("original", "noise", "noise", "noise", "noise")):
            text = f"Problem {pid} statement {k}. " * rng.randint(20, 60)
            texts.append({
                "text_id": f"text_{len(texts):07d}", "text_style": style, "text": text,
                "text_length": len(text), "abbreviated_text": text[:200],
                "abbreviated_text_length": 200, "meta": {"source_problem_id": pid},
            })  # fmt: skip
    queries = {"t2c": [], "c2c": [], "c2t": []}
    for (family, variant), count in VARIANTS.items():
        for i in range(max(1, round(count * scale))):
            p = rng.randrange(n_problems)
            pid = f"lcb_{p:05d}"
            anchor = rng.choice(by_problem[p])
            if variant == "match":
                subtask, suffix = "c2t_match", ""
            elif family == "c2c":
                subtask, suffix = "c2c_cross_lang", ""
            else:
                suffix = rng.choice(LANGUAGE_SUFFIXES)
                subtask = f"{family}_{variant}_{suffix}"
            qid = f"q_{subtask}_{i:05d}"
            if family == "t2c":
                queries["t2c"].append({
                    "query_id": qid, "query": f"Solve {pid} " * 30, "split": "text2code",
                    "subtask": subtask, "query_type": "language_specific",
                    "sub_query_type": "full_description",
                    "language_constraint": "none" if suffix == "any" else suffix,
                    "meta": {"source_problem_id": pid},
                })  # fmt: skip
            elif family == "c2c":
                queries["c2c"].append({
                    "query_id": qid, "query": anchor["code"], "split": "code2code",
                    "subtask": subtask, "anchor_language": anchor["language"],
                    "anchor_model": anchor["model"],
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor["code_id"]},
                })  # fmt: skip
            elif variant == "match":
                label = i % 2
                text_id = f"text_{p * 5 + (0 if label else 1):07d}"
                queries["c2t"].append({
                    "query_id": qid, "code": anchor["code"], "text_id": text_id,
                    "split": "code2text", "subtask": subtask, "label": label, "text_type": "full",
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor["code_id"]},
                })  # fmt: skip
            else:
                queries["c2t"].append({
                    "query_id": qid, "query": anchor["code"], "split": "code2text",
                    "subtask": subtask, "anchor_language": anchor["language"],
                    "anchor_model": anchor["model"],
                    "meta": {"source_problem_id": pid, "anchor_code_id": anchor["code_id"]},
                })  # fmt: skip
    _write(root / "code_corpus" / f"{SPLIT}.jsonl", code)
    _write(root / "text_corpus" / f"{SPLIT}.jsonl", texts)
    for family, spec in coreb_dataset.FAMILIES.items():
        _write(root / spec["queries"] / f"{SPLIT}.jsonl", queries[family])
    # derive the qrels once (untimed) and ship them, as a real release does
    data = coreb_dataset.read_release(root).releases[SPLIT]
    n_qrels = 0
    for family, spec in coreb_dataset.FAMILIES.items():
        rows = [
            {"query_id": q, "doc_id": d, "relevance": r}
            for q, judged in sorted(data.qrels.items())
            if data.queries[q][0].family == family
            for d, r in sorted(judged.items())
        ]
        n_qrels += len(rows)
        _write(root / spec["qrels"] / f"{SPLIT}.jsonl", rows)
    return {
        "code": len(code),
        "texts": len(texts),
        "queries": sum(map(len, queries.values())),
        "qrels": n_qrels,
    }


def baseline(root: Path) -> None:
    for path in sorted(root.rglob("*.jsonl")):
        with path.open("rb") as fh:
            for line in fh:
                json.loads(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR, help="where results go")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            root = Path(tmp) / f"release_{scale}"
            sizes = make_release(root, scale)
            builds, bases = [], []
            for r in range(args.repeats):
                out = Path(tmp) / f"out_{scale}_{r}"
                t0 = time.perf_counter()
                baseline(root)
                t1 = time.perf_counter()
                coreb_dataset.clear_release_cache()
                coreb_dataset.build(root, out, progress=False)
                t2 = time.perf_counter()
                bases.append(t1 - t0)
                builds.append(t2 - t1)
                shutil.rmtree(out)
            build_s, base_s = statistics.median(builds), statistics.median(bases)
            results.append({"scale": scale, **sizes, "build_s": build_s, "baseline_s": base_s,
                            "ratio_to_baseline": build_s / base_s})  # fmt: skip
            print(
                f"scale {scale:g}: {sizes['code']:,} code, {sizes['texts']:,} texts, "
                f"{sizes['queries']:,} queries, {sizes['qrels']:,} qrels -> build "
                f"{build_s:.2f} s (median of {args.repeats}), json.loads baseline {base_s:.3f} s, "
                f"ratio {build_s / base_s:.1f}x"
            )
    if len(results) > 1:
        a, b = results[0], results[-1]
        print(
            f"scaling: {b['scale'] / a['scale']:g}x the data took "
            f"{b['build_s'] / a['build_s']:.2f}x the time"
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "bench_dataset.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
