"""Every flag of every command either reaches what the command calls or is refused.

The library functions a command calls are replaced by recorders: a flag shows it takes effect
when the value it carries arrives where it belongs (the library's own tests show what the value
then does). Flags that do not apply to the command are errors naming where they belong.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import coreb_dataset
from coreb_toolkit.cli.main import main


class Called(Exception):
    """Raised by a recorder: the command got as far as the library call."""


def recorder(monkeypatch, target: object, name: str, result=Called) -> list:
    calls: list = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        if result is Called:
            raise Called
        return result

    monkeypatch.setattr(target, name, fake)
    return calls


def error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 2
    return capsys.readouterr().err


# -- coreb evaluate --------------------------------------------------------------------------


@pytest.fixture
def evaluate_calls(monkeypatch):
    import coreb_toolkit.benchmark.runner as runner

    return recorder(monkeypatch, runner, "evaluate_model", result=[])


@pytest.fixture
def reranker_calls(monkeypatch):
    import coreb_toolkit.benchmark.rerank as rerank

    return recorder(monkeypatch, rerank, "resolve_reranker", result="the-reranker")


EVALUATE = ["evaluate", "--dataset", "some/coreb", "--out", "OUT"]


@pytest.mark.parametrize(
    ("flags", "key", "expected"),
    [
        ([], "top_k", 1000),
        (["--top-k", "50"], "top_k", 50),
        (["--releases", "r1", "r2"], "releases", ["r1", "r2"]),
        (["--subtasks", "c2c_cross_lang"], "subtasks", ["c2c_cross_lang"]),
        ([], "c2t_canonical_corpus", "abbreviated"),
        (["--c2t-canonical-corpus", "full"], "c2t_canonical_corpus", "full"),
        (["--no-positive-policy", "exclude"], "no_positive_policy", "exclude"),
        ([], "rerank_top_k", 128),
        (["--model", "minilm", "--batch-size", "8"], "batch_size", 8),
        (["--model", "minilm", "--max-length", "64"], "max_length", 64),
        (["--model", "minilm", "--cache-dir", "C"], "cache_dir", Path("C")),
        (["--reranker", "x", "--rerank-top-k", "5"], "rerank_top_k", 5),
        (["--reranker", "x"], "reranker", "the-reranker"),
        ([], "query_sample", None),
        ([], "query_seed", 0),
        (["--query-sample", "4"], "query_sample", 4),
        (["--query-sample", "4", "--query-seed", "7"], "query_seed", 7),
    ],
)
def test_evaluate_flags_reach_the_runner(
    flags, key, expected, evaluate_calls, reranker_calls, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main([*EVALUATE, *flags]) == 0
    [(args, kwargs)] = evaluate_calls
    assert (args[0], args[2]) == ("some/coreb", Path("OUT"))
    assert kwargs[key] == expected


@pytest.mark.parametrize(
    ("flags", "field", "expected"),
    [
        (["--scheme", "v1"], "scheme", "v1"),
        (["--qrels-scheme", "v1"], "scheme", "v1"),
        (["--min-hard-negatives", "3"], "min_hard_negatives", 3),
        (["--c2t-hard-negatives", "2"], "c2t_hard_negatives", 2),
        (["--original-text-style", "canon"], "original_text_style", "canon"),
    ],
)
def test_evaluate_passes_the_qrels_options(flags, field, expected, evaluate_calls, tmp_path):
    assert main([*EVALUATE[:-1], str(tmp_path), *flags]) == 0
    options = evaluate_calls[0][1]["options"]
    assert isinstance(options, coreb_dataset.QrelsOptions)
    assert getattr(options, field) == expected
    assert options == coreb_dataset.QrelsOptions(**{field: expected})


def test_evaluate_runs_every_model_once_and_writes_json(evaluate_calls, tmp_path, capsys):
    out = tmp_path / "all.json"
    argv = [*EVALUATE[:-1], str(tmp_path), "--model", "bm25", "minilm", "--json", str(out)]
    assert main(argv) == 0
    assert [args[1] for args, _ in evaluate_calls] == ["bm25", "minilm"]
    assert json.loads(out.read_text()) == []
    assert "total time" in capsys.readouterr().out


def test_dense_options_go_only_to_models_that_take_them(evaluate_calls, tmp_path):
    argv = [*EVALUATE[:-1], str(tmp_path), "--model", "bm25", "minilm", "--batch-size", "4"]
    assert main(argv) == 0
    bm25, minilm = (kwargs for _, kwargs in evaluate_calls)
    assert "batch_size" not in bm25 and minilm["batch_size"] == 4


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ([], {}),
        (["--rerank-batch-size", "4"], {"batch_size": 4}),
        (["--rerank-max-length", "64"], {"max_length": 64}),
        (["--cache-dir", "C"], {"cache_dir": Path("C") / "rerank"}),
        (["--rerank-trust-remote-code"], {"trust_remote_code": True}),
        (["--rerank-backend", "openvino"], {"inference_backend": "openvino"}),
        (
            ["--rerank-backend", "onnx", "--rerank-quantize", "int8"],
            {"inference_backend": "onnx", "quantize": "int8"},
        ),
    ],
)
def test_reranker_options_go_to_the_loader(
    flags, options, evaluate_calls, reranker_calls, tmp_path
):
    assert main([*EVALUATE[:-1], str(tmp_path), "--reranker", "some/reranker", *flags]) == 0
    assert reranker_calls == [(("some/reranker", options), {})]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--k", "5"], "--k only applies with a run file (`coreb score"),
        (["--relevance-level", "1"], "--relevance-level only applies with a run file"),
        (["--columns", "ndcg_at_5"], "--columns only applies with a run file"),
        (["--per-query", "p.jsonl"], "--per-query only applies with a run file"),
        (["--qrels", "q.trec"], "a qrels file scores a run file: `coreb score RUN --qrels"),
        (["--exclude", "x.json"], "--exclude comes from the dataset itself"),
        (["--qualcode-tasks", "mc"], "--qualcode-tasks only applies with --qualcode"),
        (["--metric", "ndcg_at_10"], "--metric only applies with two run files"),
        (["--batch-size", "8"], "--batch-size applies to dense models only"),
        (["--rerank-max-length", "64"], "--rerank-max-length only apply with --reranker"),
        (["--rerank-batch-size", "4"], "--rerank-batch-size only apply with --reranker"),
        (["--rerank-backend", "onnx"], "--rerank-backend only apply with --reranker"),
        (["--rerank-quantize", "int8"], "--rerank-quantize only apply with --reranker"),
        (
            ["--reranker", "x", "--rerank-quantize", "int8"],
            "quantize='int8' needs backend 'onnx' or 'openvino'",
        ),
        (["--reranker", "x", "--rerank-backend", "tensorrt"], "invalid choice: 'tensorrt'"),
        (["--top-k", "0"], "--top-k must be at least 1, got 0"),
        (["--reranker", "x", "--rerank-batch-size", "0"], "--rerank-batch-size must be at least"),
        (["--max-length", "0", "--model", "minilm"], "--max-length must be at least 1"),
        (["--c2t-canonical-corpus", "short"], "invalid choice: 'short'"),
        (["--query-sample", "0"], "--query-sample must be at least 1"),
        (["--query-seed", "3"], "--query-seed only applies with --query-sample N"),
        (["stray"], "unrecognized arguments: stray"),
    ],
)
def test_evaluate_refuses_what_does_not_apply(flags, message, evaluate_calls, capsys):
    assert message in error([*EVALUATE, *flags], capsys)
    assert evaluate_calls == []


def test_evaluate_without_out_says_what_to_type(capsys):
    err = error(["evaluate", "--dataset", "demo/coreb", "--model", "bm25"], capsys)
    assert "--dataset needs --out DIR" in err
    assert "coreb evaluate --dataset demo/coreb --model bm25 --out demo/results" in err


# -- coreb qualcode evaluate -----------------------------------------------------------------


@pytest.fixture
def qualcode_calls(monkeypatch):
    import coreb_toolkit.benchmark.qualcode_eval as qe

    calls = {"scorers": [], "evaluated": []}
    monkeypatch.setattr(qe, "load_qualcode", lambda source: f"data of {source}")

    def make_scorer(name, data, **options):
        calls["scorers"].append((name, data, options))
        return name

    def evaluate_qualcode(data, scorer, **kwargs):
        calls["evaluated"].append((scorer, kwargs))
        return {"scorer": scorer}

    monkeypatch.setattr(qe, "make_scorer", make_scorer)
    monkeypatch.setattr(qe, "evaluate_qualcode", evaluate_qualcode)
    monkeypatch.setattr(qe, "summary_table", lambda results: "TABLE")
    monkeypatch.setattr(qe, "plot_qualcode", lambda results, path: None)
    monkeypatch.setattr(qe, "RerankerScorer", lambda reranker: f"scorer of {reranker}")
    return calls


@pytest.mark.parametrize(
    ("flags", "scorers", "tasks"),
    [
        ([], [("bm25", {})], {"pairs", "retrieval", "mc"}),
        (["--qualcode-tasks", "mc"], [("bm25", {})], {"mc"}),
        (["--model", "minilm", "--batch-size", "4"], [("minilm", {"batch_size": 4})], None),
        (["--model", "minilm", "--max-length", "9"], [("minilm", {"max_length": 9})], None),
        (["--model", "minilm", "--cache-dir", "C"], [("minilm", {"cache_dir": Path("C")})], None),
        (["--reranker", "r"], [], None),  # only a reranker: no default bm25
    ],
)
def test_qualcode_evaluate_flags(
    flags, scorers, tasks, qualcode_calls, reranker_calls, tmp_path, capsys
):
    out = tmp_path / "res"
    assert main(["qualcode", "evaluate", "QC", "--out", str(out), *flags]) == 0
    assert [(n, o) for n, _, o in qualcode_calls["scorers"]] == scorers
    assert all(data == "data of QC" for _, data, _ in qualcode_calls["scorers"])
    evaluated = qualcode_calls["evaluated"]
    assert all(kwargs["out_dir"] == out for _, kwargs in evaluated)
    if tasks is not None:
        assert evaluated[0][1]["tasks"] == tasks
    if "--reranker" in flags:
        assert [s for s, _ in evaluated] == ["scorer of the-reranker"]
    assert "== QualCode (QC) ==" in capsys.readouterr().out


def test_qualcode_evaluate_json(qualcode_calls, tmp_path):
    out = tmp_path / "all.json"
    argv = ["qualcode", "evaluate", "QC", "--out", str(tmp_path), "--json", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text()) == [{"scorer": "bm25"}]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--out", "o", "--rerank-top-k", "5"], "--rerank-top-k has no meaning with --qualcode"),
        (["--out", "o", "--top-k", "5"], "--top-k only applies with --dataset DIR"),
        (["--out", "o", "--releases", "r"], "--releases only applies with --dataset DIR"),
        (["--out", "o", "--k", "5"], "--k only applies with a run file"),
        (["--out", "o", "--qualcode-tasks", "speed"], "invalid choice: 'speed'"),
        (["--out", "o", "--reranker", "r", "--batch-size", "4"], "applies to dense models only"),
        ([], "a QualCode evaluation needs --out DIR"),
    ],
)
def test_qualcode_evaluate_refuses(flags, message, qualcode_calls, capsys):
    assert message in error(["qualcode", "evaluate", "QC", *flags], capsys)
    assert qualcode_calls["evaluated"] == []


# -- coreb build, coreb qualcode build ---------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "field", "expected"),
    [
        ([], "scheme", "v2"),
        (["--qrels-scheme", "v1"], "scheme", "v1"),
        (["--min-hard-negatives", "0"], "min_hard_negatives", 0),
        (["--c2t-hard-negatives", "7"], "c2t_hard_negatives", 7),
        (["--original-text-style", "canon"], "original_text_style", "canon"),
    ],
)
def test_build_passes_the_qrels_options(flags, field, expected, monkeypatch, tmp_path):
    calls = recorder(monkeypatch, coreb_dataset, "read_release")
    monkeypatch.setattr(coreb_dataset, "local_inputs", lambda release: ())
    with pytest.raises(Called):
        main(["build", "REL", "--out", str(tmp_path / "o"), *flags])
    [(args, _)] = calls
    assert args[0] == "REL" and getattr(args[1], field) == expected


def test_build_passes_force_license_and_mteb(monkeypatch, tmp_path):
    release = type("Release", (), {"inputs": (), "path": tmp_path / "REL", "subtasks": {},
                                   "releases": ["r"]})()  # fmt: skip
    monkeypatch.setattr(coreb_dataset, "local_inputs", lambda release: ())
    monkeypatch.setattr(coreb_dataset, "read_release", lambda source, options: release)
    calls = recorder(monkeypatch, coreb_dataset, "build")
    (tmp_path / "o").mkdir()
    with pytest.raises(Called):
        main(["build", "REL", "--out", str(tmp_path / "o"), "--force", "--license", "mit",
              "--mteb", str(tmp_path / "m")])  # fmt: skip
    [(args, kwargs)] = calls
    assert args == (release, tmp_path / "o")
    assert kwargs["overwrite"] is True and kwargs["license"] == "mit"


QUALCODE_OPTIONS = [
    (["--seed", "3"], "seed", 3),
    (["--margin", "1.5"], "margin", 1.5),
    (["--retrieval-negatives", "5"], "retrieval_negatives", 5),
    (["--mc-per-k", "30"], "mc_per_k", 30),
    (["--mc-balance", "quota"], "mc_balance", "quota"),
    (["--no-control"], "control_unrequested", False),
    (["--no-control-unrequested"], "control_unrequested", False),
    ([], "control_unrequested", True),
    (["--analyser", "pylint"], "analyser", "pylint"),
    (["--labels", "measured"], "labels", "measured"),
    (["--repeats", "2"], "repeats", 2),
    (
        ["--template", "Find code that is {conditions}"],
        "template",
        "Find code that is {conditions}",
    ),
    (["--language", "C++"], "language", "C++"),
    (["--no-require-statement"], "require_statement", False),
    (["--no-english-only"], "english_only", False),
]


@pytest.mark.parametrize(("flags", "field", "expected"), QUALCODE_OPTIONS)
def test_qualcode_build_passes_its_options(flags, field, expected, monkeypatch, tmp_path):
    import qualcode_dataset

    calls = recorder(monkeypatch, qualcode_dataset, "build")
    with pytest.raises(Called):
        main(["qualcode", "build", "--source", str(tmp_path), "--out", str(tmp_path / "o"),
              *flags])  # fmt: skip
    [(_, kwargs)] = calls
    assert getattr(kwargs["options"], field) == expected


def test_qualcode_build_sources_force_and_license(monkeypatch, tmp_path):
    import qualcode_dataset

    calls = recorder(monkeypatch, qualcode_dataset, "build")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "o").mkdir()
    with pytest.raises(Called):
        main(["qualcode", "build", "--source", str(tmp_path / "a"), "--source", str(tmp_path / "b"),
              "--out", str(tmp_path / "o"), "--force", "--license", "mit"])  # fmt: skip
    [(args, kwargs)] = calls
    assert args == ([str(tmp_path / "a"), str(tmp_path / "b")], tmp_path / "o")
    assert kwargs["overwrite"] is True and kwargs["license"] == "mit"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--mc-balance", "even"], "mc_balance must be 'strict' or 'quota'"),
        (["--margin", "0.5"], "margin must be a number >= 1"),
        (["--top-k", "5"], "--top-k only applies with --dataset DIR"),
    ],
)
def test_qualcode_build_refuses(flags, message, tmp_path, capsys):
    argv = ["qualcode", "build", "--source", str(tmp_path), "--out", str(tmp_path / "o"), *flags]
    assert message in error(argv, capsys)


# -- coreb release, coreb execute --------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        (["--name", "release_vx"], lambda c: c.name == "release_vx"),
        (["--limit", "3"], lambda c: c.max_problems == 3),
        (["--seed", "4"], lambda c: c.seed == 4),
        (["--mutants", "2"], lambda c: c.mutants_per_solution == 2),
        (["--mutant-tries", "9"], lambda c: c.mutant_tries == 9),
        (["--workers", "3"], lambda c: c.execution.workers == 3),
        (["--window", "2025-01-01:2025-02-01"],
         lambda c: c.window == ("2025-01-01", "2025-02-01T23:59:59")),
    ],
)  # fmt: skip
def test_release_flags_reach_the_config(flags, check, monkeypatch, tmp_path):
    import coreb_toolkit.releases.pipeline as pipeline

    calls = recorder(monkeypatch, pipeline, "cut_release")
    with pytest.raises(Called):
        main(["release", "--source", "human-eval", "--out", str(tmp_path / "rel"), *flags])
    [(args, _)] = calls
    assert args[1] == tmp_path / "rel" and check(args[2])


def test_release_on_an_existing_folder_speaks_in_flags(tmp_path, capsys):
    (tmp_path / "rel").mkdir()
    err = error(["release", "--source", "human-eval", "--out", tmp_path / "rel"], capsys)
    assert f"--out {tmp_path / 'rel'} exists; add --force to replace it" in err
    assert "overwrite=True" not in err
    (tmp_path / "hub").mkdir()
    err = error(["release", "--source", "human-eval", "--out", tmp_path / "new",
                 "--build", tmp_path / "hub"], capsys)  # fmt: skip
    assert "--build" in err and "add --force" in err


def test_release_force_and_generator_reach_the_pipeline(monkeypatch, tmp_path):
    import coreb_toolkit.releases.generators as generators
    import coreb_toolkit.releases.pipeline as pipeline

    specs = recorder(monkeypatch, generators, "from_spec", result="GEN")
    calls = recorder(monkeypatch, pipeline, "cut_release")
    (tmp_path / "rel").mkdir()
    with pytest.raises(Called):
        main(["release", "--source", "human-eval", "--out", str(tmp_path / "rel"), "--force",
              "--generator", "openai:http://x#m"])  # fmt: skip
    assert specs[0][0] == ("openai:http://x#m",)
    assert calls[0][1]["overwrite"] is True and calls[0][0][2].generator == "GEN"


@pytest.mark.parametrize(
    ("flags", "check"),
    [
        (["--time-limit", "3"], lambda c: (c.limits.cpu_time_s, c.limits.wall_time_s) == (3, 6)),
        (["--wall-limit", "9"], lambda c: c.limits.wall_time_s == 9),
        (["--memory-mb", "128"], lambda c: c.limits.memory_mb == 128),
        (["--max-processes", "8"], lambda c: c.limits.max_processes == 8),
        (["--output-limit", "1000"], lambda c: c.limits.output_bytes == 1000),
        (["--repeats", "3"], lambda c: c.repeats == 3),
        (["--workers", "2"], lambda c: c.workers == 2),
        (["--max-code-bytes", "100"], lambda c: c.max_code_bytes == 100),
        (["--work-root", "/tmp/w"], lambda c: c.work_root == "/tmp/w"),
        (["--fresh-sandbox-per-run"], lambda c: c.sandbox_scope == "run"),
        (["--no-isolation"], lambda c: c.isolation == "none"),
        ([], lambda c: (c.isolation, c.sandbox_scope) == ("bubblewrap", "candidate")),
    ],
)
def test_execute_flags_reach_the_config(flags, check, monkeypatch, tmp_path):
    import coreb_toolkit.sandbox as sandbox

    calls = recorder(monkeypatch, sandbox, "execute_file")
    with pytest.raises(Called):
        main(["execute", "c.jsonl", "--out", str(tmp_path / "o.jsonl"), *flags])
    [(args, _)] = calls
    assert args[:2] == (Path("c.jsonl"), tmp_path / "o.jsonl") and check(args[2])


# -- coreb score, coreb compare ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--reranker", "minilm"], "--reranker reranks the first stage of a dataset run"),
        (["--model", "bm25"], "--model only applies with --qualcode DIR"),
        (["--top-k", "5"], "--top-k only applies with --dataset DIR"),
        (["--out", "o"], "--out only applies with"),
        (["--c2t-canonical-corpus", "full"], "--c2t-canonical-corpus only applies with --dataset"),
        (["--relevance-level", "0"], "--relevance-level must be at least 1, got 0"),
        (["--k", "0"], "--k must be at least 1, got 0"),
        (["--subtasks", "a.json", "b.json"], "unrecognized arguments: b.json"),
        (["--no-positive-policy", "drop"], "invalid choice: 'drop'"),
    ],
)
def test_score_refuses_what_does_not_apply(flags, message, examples, capsys):
    argv = ["score", examples / "run.trec", "--qrels", examples / "qrels.trec", *flags]
    assert message in error(argv, capsys)


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--relevance-level", "1"], {"relevance_level": 1}),
        (["--no-positive-policy", "exclude"], {"no_positive_policy": "exclude"}),
    ],
)
def test_score_protocol_flags_change_the_figures(flags, expected, examples, tmp_path):
    base, changed = tmp_path / "base.json", tmp_path / "changed.json"
    run = ["score", str(examples / "run.trec"), "--qrels", str(examples / "qrels.trec")]
    assert main([*run, "--json", str(base)]) == 0
    assert main([*run, "--json", str(changed), *flags]) == 0
    before, after = json.loads(base.read_text()), json.loads(changed.read_text())
    for key, value in expected.items():
        assert after[key] == value != before[key]
    assert after["rows"] != before["rows"]


def test_score_exclude_changes_the_figures(examples, tmp_path):
    base, changed = tmp_path / "base.json", tmp_path / "changed.json"
    run = ["score", str(examples / "run.trec"), "--qrels", str(examples / "qrels.trec")]
    assert main([*run, "--json", str(base)]) == 0
    assert (
        main([*run, "--json", str(changed), "--exclude", str(examples / "c2c_anchors.json")]) == 0
    )
    assert json.loads(base.read_text())["rows"] != json.loads(changed.read_text())["rows"]


@pytest.mark.parametrize(
    ("flags", "key", "expected"),
    [
        ([], "method", "randomization"),
        (["--method", "bootstrap"], "method", "bootstrap"),
        (["--n-resamples", "50"], "n_resamples", 50),
        (["--confidence", "0.9"], "confidence", 0.9),
        (["--seed", "7"], "seed", 7),
    ],
)
def test_compare_flags_reach_the_test(flags, key, expected, examples, monkeypatch):
    import coreb_toolkit.cli.commands.compare as compare

    calls = recorder(monkeypatch, compare, "paired_test")
    with pytest.raises(Called):
        main(["compare", str(examples / "run.trec"), str(examples / "run_b.trec"),
              "--qrels", str(examples / "qrels.trec"), *flags])  # fmt: skip
    assert calls[0][1][key] == expected


def test_compare_metric_and_k(examples, capsys):
    argv = ["compare", str(examples / "run.trec"), str(examples / "run_b.trec"),
            "--qrels", str(examples / "qrels.trec"), "--n-resamples", "50"]  # fmt: skip
    assert main([*argv, "--metric", "recall_at_5"]) == 0
    assert capsys.readouterr().out.startswith("recall_at_5 over ")
    err = error([*argv, "--metric", "recall_at_5", "--k", "10"], capsys)
    assert "metric 'recall_at_5' was not computed" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--confidence", "1.5"], "--confidence must be between 0 and 1"),
        (["--n-resamples", "0"], "--n-resamples must be at least 1"),
        (["--method", "t-test"], "invalid choice: 't-test'"),
        (["--dataset", "x"], "--dataset only applies with"),
    ],
)
def test_compare_refuses(flags, message, examples, capsys):
    argv = ["compare", examples / "run.trec", examples / "run_b.trec",
            "--qrels", examples / "qrels.trec", *flags]  # fmt: skip
    assert message in error(argv, capsys)
