"""The toolkit's one test of a Hub repo id and one test of offline mode
(:mod:`coreb_toolkit.hub_access`), and the places that ask them: a push's ``--repo``,
the first stage's and the reranker's model names, the reranker's Hub loader."""

from __future__ import annotations

import pytest
from huggingface_hub import constants

from coreb_toolkit.hub_access import (
    hub_id_problem,
    hub_offline,
    hub_unreachable_errors,
    is_hub_id,
)
from coreb_toolkit.retrieval import registry as retrieval_registry
from model_cards.hub import HubPushError, push_folder
from reranker.registry import check_hub_name


@pytest.mark.parametrize(
    ("name", "valid", "owned"),
    [
        ("hq-bench/coreb", True, True),
        ("sentence-transformers/all-MiniLM-L6-v2", True, True),
        ("gpt2", True, False),  # a bare name: valid, but no owner/name
        ("a--b/c", False, False),
        ("org/name.git", False, False),
        ("../data", False, False),  # a relative path, never a Hub id
        ("x/y/z", False, False),
        ("/tmp/model", False, False),
    ],
)
def test_one_hub_id_rule_in_huggingface_hubs_words(name, valid, owned):
    assert (hub_id_problem(name) is None) is valid
    assert is_hub_id(name) is owned


def test_every_place_refuses_a_bad_id_with_the_same_words(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no folder of that name
    problem = hub_id_problem("a--b/c")
    assert problem is not None and "Cannot have -- or .." in problem
    with pytest.raises(HubPushError, match="is not a Hub repo id") as pushed:
        push_folder(tmp_path, "a--b/c")
    with pytest.raises(ValueError, match="nor a valid Hub id") as reranked:
        check_hub_name("a--b/c")
    assert problem in str(pushed.value) and problem in str(reranked.value)
    with pytest.raises(ValueError, match="neither a folder nor a valid Hub id"):
        retrieval_registry.check_model_name("a--b/c", "model", ("minilm",), None)


@pytest.mark.parametrize(
    ("env", "flag", "offline"),
    [
        ({}, False, False),
        ({"HF_HUB_OFFLINE": "1"}, False, True),  # set after huggingface_hub read it
        ({"TRANSFORMERS_OFFLINE": "yes"}, False, True),
        ({"HF_HUB_OFFLINE": "0"}, False, False),
        ({}, True, True),  # huggingface_hub's own flag (constants.is_offline_mode())
    ],
)
def test_one_offline_switch_asked_everywhere(env, flag, offline, monkeypatch):
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", flag)
    assert hub_offline() is offline


def test_one_list_of_the_errors_of_an_unreachable_hub():
    import httpx2
    from huggingface_hub.errors import OfflineModeIsEnabled

    errors = hub_unreachable_errors()  # the reranker's loader falls back on them, a push retries
    assert issubclass(OfflineModeIsEnabled, errors) and issubclass(httpx2.ConnectError, errors)
    assert issubclass(httpx2.RemoteProtocolError, errors)  # a dropped connection
