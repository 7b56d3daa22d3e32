"""How commands parse: --config YAML, help texts, the old spellings, logging, the comparison."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from coreb_toolkit.cli.main import COMMANDS, command_parser, configure_logging, main


def parse(name: str, argv: list[str]):
    parser = command_parser(name)
    args, extras = parser.parse_known_args([str(a) for a in argv])
    assert extras == []
    return args._parser.parse_dict(vars(args), allow_extra_keys=True)


# -- --config file.yaml ----------------------------------------------------------------------


def test_yaml_values_are_defaults_and_flags_override_them(tmp_path):
    config = tmp_path / "evaluate.yaml"
    config.write_text(
        "dataset: demo/coreb\nout: demo/results\nmodel: [bm25, minilm]\ntop_k: 100\n"
        "c2t_canonical_corpus: full\nmin_hard_negatives: 2\n"
    )
    args, options = parse("evaluate", ["--config", config])
    assert (args.dataset, str(args.out), args.model) == ("demo/coreb", "demo/results",
                                                         ["bm25", "minilm"])  # fmt: skip
    assert (args.top_k, args.c2t_canonical_corpus, options.min_hard_negatives) == (100, "full", 2)
    args, _ = parse("evaluate", ["--config", config, "--top-k", "50", "--model", "bm25"])
    assert (args.top_k, args.model, args.dataset) == (50, ["bm25"], "demo/coreb")


def test_yaml_gives_positionals_and_required_options(tmp_path, examples):
    config = tmp_path / "score.yaml"
    config.write_text(f"run: {examples / 'run.trec'}\nqrels: {examples / 'qrels.trec'}\nk: [5]\n")
    args, scoring = parse("score", ["--config", config])
    assert args.run == examples / "run.trec" and scoring.qrels == examples / "qrels.trec"
    assert scoring.k == [5]
    other = tmp_path / "other.trec"
    args, _ = parse("score", ["--config", config, other])
    assert args.run == other


def test_yaml_reaches_a_nested_command(tmp_path):
    config = tmp_path / "qc.yaml"
    config.write_text("out: res\nqualcode_tasks: [mc]\nmodel: [minilm]\n")
    [args] = parse("qualcode", ["evaluate", "QC", "--config", config])
    assert (args.qualcode, args.qualcode_tasks, args.model) == ("QC", ["mc"], ["minilm"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dataset: x\ntop_kk: 3\nbogus: 1\n", "unknown option(s) bogus, top_kk for coreb evaluate"),
        ("c2t_canonical_corpus: short\n", "c2t_canonical_corpus: 'short' is not one of"),
        ("- a\n- b\n", "expected a mapping of option: value"),
        ("k: 5\n", "unknown option(s) k"),  # a flag of `coreb score`, not of this command
        ("top_k: abc\n", "bad.yaml: top_k: expected an integer, got 'abc'"),
        ("top_k: 1.5\n", "bad.yaml: top_k: expected an integer, got 1.5"),
        ("top_k: true\n", "bad.yaml: top_k: expected an integer, got True"),
        ("top_k: [1, 2]\n", "bad.yaml: top_k: expected one value, got a list"),
        ("compare_published: maybe\n", "compare_published: expected true or false, got 'maybe'"),
        ("min_hard_negatives: {a: 1}\n", "min_hard_negatives: expected an integer, got {'a': 1}"),
        ("\xff: 1\n", "bad.yaml: cannot read it"),  # not UTF-8
    ],
)
def test_bad_yaml_is_an_error_naming_the_key(text, message, tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_bytes(text.encode("latin-1"))
    with pytest.raises(SystemExit) as info:
        main(["evaluate", "--config", str(config), "--out", "o"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_yaml_scalars_convert_as_their_command_line_spelling(tmp_path):
    # a YAML date or a lone word is what the same text on the command line gives
    config = tmp_path / "evaluate.yaml"
    config.write_text("dataset: demo/coreb\nout: o\nmodel: bm25\ntop_k: 7\n")
    args, _ = parse("evaluate", ["--config", config])
    assert (args.model, args.top_k) == (["bm25"], 7)
    card = tmp_path / "card.yaml"
    card.write_text("date: 2026-12-02\nout: cards\n")
    (tmp_path / "results.json").write_text("{}")
    [args] = parse("card", ["model", tmp_path / "results.json", "--config", card])
    assert args.date == "2026-12-02"  # YAML reads a datetime.date; the card wants the text


def test_a_config_that_is_not_a_regular_file_is_refused_unread(tmp_path, capsys):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    with pytest.raises(SystemExit) as info:
        main(["evaluate", "--config", str(fifo), "--out", "o"])
    assert info.value.code == 2
    assert "config.yaml: not a regular file (a FIFO)" in capsys.readouterr().err


def test_a_missing_yaml_file_is_an_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["score", "--config", str(tmp_path / "nope.yaml")])
    assert "nope.yaml: cannot read it" in capsys.readouterr().err


# -- help ------------------------------------------------------------------------------------


def test_main_help_lists_every_command_on_one_line_without_importing_them():
    code = (
        "import sys; from coreb_toolkit.cli.main import main\n"
        "try: main(['--help'])\n"
        "except SystemExit: pass\n"
        "assert 'transformers' not in sys.modules, 'coreb --help imported transformers'\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    for name, text, _ in COMMANDS:
        assert f"    {name}" in out.stdout and text.split()[0] in out.stdout
    assert "--config FILE.yaml" in out.stdout


LEAVES = ["release", "build", "qualcode build", "qualcode evaluate", "evaluate", "score",
          "compare", "execute", "train reranker", "train synh-rank"]  # fmt: skip


@pytest.mark.parametrize("name", LEAVES)
def test_every_command_help_has_an_example_and_its_defaults(name, capsys):
    with pytest.raises(SystemExit):
        main([*name.split(), "--help"])
    text = capsys.readouterr().out
    assert "example" in text and f"coreb {name}" in text
    assert "--config FILE.yaml" in text
    assert "(default: None)" not in text


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("compare", ["--method {randomization,bootstrap}", "(default: randomization)",
                     "(default: ndcg_at_10)"]),
        ("evaluate", ["--rerank-top-k K", "(default 128, as the paper)", "(default: 1000)",
                      "--qrels-scheme {v2,v1}", "--min-hard-negatives"]),
        ("qualcode build", ["--no-control", "(default: 99)", "(default: 3000)"]),
    ],
)  # fmt: skip
def test_help_shows_defaults(name, needles, capsys):
    with pytest.raises(SystemExit):
        main([*name.split(), "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for needle in needles:
        assert " ".join(needle.split()) in text


def test_compare_help_describes_no_dataset(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "--dataset" not in capsys.readouterr().out


# -- the old spellings of `coreb evaluate` ----------------------------------------------------


def test_evaluate_with_a_run_file_is_score(examples, tmp_path, capsys):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    run = [str(examples / "run.trec"), "--qrels", str(examples / "qrels.trec")]
    assert main(["evaluate", *run, "--json", str(old)]) == 0
    assert "`coreb evaluate RUN --qrels FILE` is now `coreb score" in capsys.readouterr().err
    assert main(["score", *run, "--json", str(new)]) == 0
    assert capsys.readouterr().err == ""
    assert json.loads(old.read_text()) == json.loads(new.read_text())


def test_evaluate_qualcode_is_qualcode_evaluate(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--qualcode", "QC", "--out", "o", "--rerank-top-k", "5"])
    err = capsys.readouterr().err
    assert "`coreb evaluate --qualcode DIR` is now `coreb qualcode evaluate DIR`" in err
    assert "coreb evaluate: error: --rerank-top-k has no meaning with --qualcode" in err


def test_evaluate_with_nothing_says_what_to_give(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate"])
    err = capsys.readouterr().err
    assert "give a run file and --qrels FILE, or --dataset DIR" in err and "coreb score" in err


# -- logging ---------------------------------------------------------------------------------


@pytest.mark.parametrize("verbose", [False, True])
def test_third_party_debug_logs_stay_quiet(verbose, monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    stream = io.StringIO()
    configure_logging(verbose, stream)
    noisy = logging.getLogger("bm25s-like")
    monkeypatch.setattr(noisy, "level", logging.DEBUG)  # as bm25s sets its own logger
    noisy.debug("Building index from IDs objects")
    noisy.info("an info line")
    noisy.warning("a warning")
    text = stream.getvalue()
    assert "Building index" not in text and "a warning" in text
    assert ("an info line" in text) is verbose


def test_release_stage_lines_show_without_verbose(monkeypatch):
    # coreb release's one-line-per-stage progress is the only INFO shown without -v
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    stage = logging.getLogger("coreb_toolkit.releases.pipeline")
    monkeypatch.setattr(stage, "level", stage.level)
    stream = io.StringIO()
    configure_logging(False, stream)
    stage.info("release_x: stage execution done in 1.0 s")
    logging.getLogger("coreb_toolkit.builders.coreb.release").info("not progress")
    # the evaluation runner's stage lines (written when no bar is shown) are progress too
    runner = logging.getLogger("coreb_toolkit.benchmark.runner")
    monkeypatch.setattr(runner, "level", runner.level)
    configure_logging(False, stream)  # a handler is already there: nothing changes
    runner.info("release_x [3/34] t2c_full_retro_go: 69 queries ranked in 0.1 s")
    text = stream.getvalue()
    assert "stage execution done" in text and "not progress" not in text
    assert "[3/34] t2c_full_retro_go" in text


# -- the side-by-side comparison ---------------------------------------------------------------


def test_side_by_side_puts_models_in_columns():
    from coreb_toolkit.cli.commands.evaluate import side_by_side

    def res(name, a, overall):
        rows = [
            {"level": "subtask", "name": "c2c_cross_lang", "n_queries": 3, "ndcg_at_10": a},
            {"level": "overall", "name": "Overall", "n_queries": 3, "ndcg_at_10": overall},
        ]
        return {"model": {"name": name}, "release": "release_v1", "rows": rows}

    table = side_by_side([res("BM25", 0.5, 0.25), res("minilm", 0.125, 1.0)])
    lines = table.splitlines()
    assert lines[0] == "ndcg_at_10, release release_v1:"
    assert lines[2] == "| | queries | BM25 | minilm |"
    assert lines[4] == "| c2c_cross_lang | 3 | 0.5000 | 0.1250 |"
    assert lines[5] == "| **Overall** | 3 | 0.2500 | 1.0000 |"
