"""model_cards.hub against a real local HTTP server that speaks the Hub's API
(tests/model_cards/fake_hub.py): repo creation, the one commit and its bytes, --revision and
--create-pr, the dry run, each error the Hub returns, retries, and the token never leaking."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import types
from pathlib import Path

import pytest
from huggingface_hub import constants
from huggingface_hub.utils import _http

import model_cards.hub as hub_module
from model_cards.hub import (
    DRY_RUN_MARKER,
    SECRET_PATTERNS,
    HubPushError,
    RetryPolicy,
    UploadPlan,
    _check_no_token,
    dry_run,
    plan_upload,
    push_folder,
    upload_files,
)
from tests.model_cards.fake_hub import FakeHub

TOKEN = "hf_fakeTestTokenNeverToBeSeen0123456789"
MODEL_CARD = "---\nlicense: apache-2.0\nlibrary_name: sentence-transformers\n---\n# A model\n"
SPACE_CARD = "---\ntitle: CoREB\nsdk: gradio\n---\n# The leaderboard\n"


def write(root, files: dict[str, bytes | str]):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
    return root


@pytest.fixture
def logged_in(monkeypatch, tmp_path):
    """HF_TOKEN holds a fake token; no token file of this machine is read."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return TOKEN


@pytest.fixture
def hub(logged_in):
    with FakeHub(token=TOKEN, user="coreb-user", orgs=("coreb-org",)) as server:
        yield server


@pytest.fixture
def waits():
    """A RetryPolicy that records its waits instead of sleeping."""
    recorded: list[float] = []
    return recorded, RetryPolicy(sleep=recorded.append)


@pytest.fixture
def model_dir(tmp_path):
    return write(
        tmp_path / "model",
        {
            "README.md": MODEL_CARD,
            "config.json": '{"hidden_size": 8}\n',
            "model.safetensors": bytes(range(256)) * 9,
            ".eval_results/coreb.yaml": "- task_id: t2c\n  value: 0.5\n",
            "tokenizer/vocab.txt": "[PAD]\n[CLS]\nhé\n",
            "checkpoint-500/optimizer.pt": b"\x00optimizer",
            "nested/checkpoint-1/kept.txt": "a nested folder of that name is not a Trainer's\n",
            "__pycache__/x.cpython-311.pyc": b"\x00",
            "helper.pyc": b"\x00",
            ".git/HEAD": "ref: refs/heads/main\n",
            ".cache/huggingface/download/x.metadata": "x\n",
            ".env": "SECRET=1\n",
        },
    )


def commit_of(hub: FakeHub):
    [commit] = hub.commits
    return commit


def folder_bytes(root, files):
    return {rel: (root / rel).read_bytes() for rel in files}


# -- what is uploaded ------------------------------------------------------------------------


def test_upload_files_keep_the_model_and_list_what_they_leave_out(model_dir):
    assert upload_files(model_dir, "model") == [
        ".eval_results/coreb.yaml",
        "README.md",
        "config.json",
        "model.safetensors",
        "nested/checkpoint-1/kept.txt",
        "tokenizer/vocab.txt",
    ]
    plan = plan_upload(model_dir, "model")
    assert sorted(plan.skipped) == [
        ".cache/", ".env", ".git/", "__pycache__/", "checkpoint-500/", "helper.pyc",
    ]  # fmt: skip
    assert "optimizer" in plan.skipped["checkpoint-500/"]
    # a dataset keeps a checkpoint-* folder: the rule is a model's
    write(model_dir, {"README.md": "---\nlicense: mit\n---\n# data\n"})
    assert "checkpoint-500/optimizer.pt" in upload_files(model_dir, "dataset")


def test_links_to_folders_and_dangling_links_are_errors(model_dir, tmp_path):
    (model_dir / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(HubPushError, match="elsewhere is a link to a folder"):
        upload_files(model_dir, "model")
    (model_dir / "elsewhere").unlink()
    (model_dir / "gone.bin").symlink_to("missing.bin")
    with pytest.raises(HubPushError, match=r"gone.bin is a link to nothing"):
        upload_files(model_dir, "model")
    (model_dir / "gone.bin").unlink()
    (model_dir / "gone.bin").symlink_to(tmp_path / "missing.bin")  # out, even to nothing
    with pytest.raises(HubPushError, match=r"gone.bin: leads outside"):
        upload_files(model_dir, "model")


SECRETS = {
    ".env.local": "HF_TOKEN=x\n",
    ".env.production": "DB=x\n",
    ".ENV": "SHOUTED=1\n",  # the same file as .env on a case-insensitive disk
    ".envrc": "export AWS_SECRET_ACCESS_KEY=x\n",
    ".netrc": "machine huggingface.co login u password hf_x\n",
    "_netrc": "machine x\n",
    ".git-credentials": "https://u:p@github.com\n",
    ".huggingface/token": "hf_x\n",
    ".cache/huggingface/token": "hf_x\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=x\n",
    ".pypirc": "[pypi]\npassword = x\n",
    "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\n",
    "tls.key": "-----BEGIN PRIVATE KEY-----\n",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    "keys/id_ed25519.pub": "ssh-ed25519 AAAA\n",
    ".ssh/config": "Host x\n",
    ".aws/credentials": "[default]\n",
    "gcp/credentials.json": "{}\n",
    ".streamlit/secrets.toml": "key = 'x'\n",
}


def test_secrets_are_left_out_by_the_documented_patterns(hub, model_dir, tmp_path):
    write(model_dir, SECRETS)
    write(model_dir, {"tools/.env/bin/activate": "a virtualenv named .env\n"})
    files = upload_files(model_dir, "model")
    assert not set(files) & set(SECRETS) and not [f for f in files if f.startswith("tools/")]
    skipped = plan_upload(model_dir, "model").skipped
    for rel in SECRETS:
        top = rel.split("/")[0]
        listed = rel if rel in skipped else f"{top}/"
        assert listed in skipped, rel
    assert "SECRET_PATTERNS" in skipped[".envrc"] and "'.envrc'" in skipped[".envrc"]
    assert "'*.pem'" in skipped["deploy/server.pem"] and "tools/.env/" in skipped
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert sorted(commit_of(hub).files) == files
    written = dry_run(model_dir, tmp_path / "dry", "model")
    assert sorted(p.relative_to(tmp_path / "dry").as_posix() for p in written) == files


def test_every_secret_pattern_is_documented():
    docs = (Path(__file__).parents[2] / "docs" / "publishing.md").read_text(encoding="utf-8")
    for pattern in SECRET_PATTERNS:
        assert f"`{pattern}`" in hub_module.__doc__, pattern
        assert f"`{pattern}`" in docs, pattern


def test_a_git_file_is_left_out_by_the_dry_run_and_the_push_alike(hub, model_dir, tmp_path):
    # a worktree's or submodule's .git is a file; the Hub refuses any path with a .git part
    shutil.rmtree(model_dir / ".git")
    write(model_dir, {".git": "gitdir: ../x\n", "sub/.git": "gitdir: ../.git/modules/sub\n"})
    write(model_dir, {"sub/.cache": "x\n", "sub/kept.txt": "x\n"})
    files = upload_files(model_dir, "model")
    assert "sub/kept.txt" in files and not [f for f in files if ".git" in f or ".cache" in f]
    assert {".git", "sub/.git", "sub/.cache"} <= set(plan_upload(model_dir, "model").skipped)
    written = dry_run(model_dir, tmp_path / "dry", "model")
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert sorted(commit_of(hub).files) == [p.relative_to(tmp_path / "dry").as_posix()
                                            for p in written]  # fmt: skip


def test_a_link_leading_out_of_the_folder_is_refused_without_naming_its_target(
    hub, model_dir, tmp_path
):
    secret = tmp_path / "elsewhere" / "hf_token_of_alice"
    write(secret.parent, {secret.name: "hf_private\n"})
    (model_dir / "weights.bin").symlink_to(secret)
    for call in (
        lambda: push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url),
        lambda: dry_run(model_dir, tmp_path / "dry", "model"),
    ):
        with pytest.raises(HubPushError, match=r"weights.bin: leads outside .*symlink") as info:
            call()
        assert "hf_token_of_alice" not in str(info.value)
    assert hub.requests == [] and not (tmp_path / "dry").exists()


def test_a_link_inside_the_folder_is_uploaded_unless_it_reaches_a_left_out_file(
    hub, model_dir, tmp_path
):
    (model_dir / "weights.bin").symlink_to("model.safetensors")
    assert "weights.bin" in upload_files(model_dir, "model")
    (model_dir / "settings.txt").symlink_to(".env")
    with pytest.raises(HubPushError, match=r"settings.txt is a link to .env, which a push leaves"):
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    (model_dir / "settings.txt").unlink()
    (model_dir / "old.pt").symlink_to("checkpoint-500/optimizer.pt")
    with pytest.raises(HubPushError, match=r"old.pt is a link to checkpoint-500/optimizer.pt"):
        dry_run(model_dir, tmp_path / "dry", "model")
    assert hub.requests == []


def _special_files(model_dir, tmp_path):
    fifo = model_dir / "pipe.bin"
    os.mkfifo(fifo)
    yield r"pipe.bin: not a regular file \(a FIFO\)"
    fifo.unlink()
    (model_dir / "zeros.bin").symlink_to("/dev/zero")
    yield "zeros.bin: leads outside"
    (model_dir / "zeros.bin").unlink()
    (model_dir / "data").mkdir()
    os.symlink("/dev/zero", model_dir / "data" / "inner")
    (model_dir / "zeros.bin").symlink_to("data/inner")  # inside, then out to the device
    yield "zeros.bin: leads outside"
    (model_dir / "zeros.bin").unlink()
    (model_dir / "data" / "inner").unlink()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(model_dir / "data" / "s.sock"))
        yield r"s.sock: not a regular file \(a socket\)"


def test_fifos_devices_and_sockets_are_refused_before_anything_is_read(hub, model_dir, tmp_path):
    # with HF_TOKEN set (the hub fixture), the token scan would block on the FIFO or read
    # /dev/zero forever; the dry run would copy until the disk fills
    for message in _special_files(model_dir, tmp_path):
        with pytest.raises(HubPushError, match=message):
            push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
        with pytest.raises(HubPushError, match=message):
            dry_run(model_dir, tmp_path / "dry", "model")
        assert hub.requests == [] and not (tmp_path / "dry").exists()


def test_the_token_scan_reads_only_regular_files_and_no_more_than_their_size(logged_in, model_dir):
    # a file swapped for a FIFO after the plan was made is refused by the scan itself
    plan = plan_upload(model_dir, "model")
    os.mkfifo(model_dir / "late.bin")
    late = UploadPlan(plan.folder, "model", (*plan.files, "late.bin"))
    with pytest.raises(HubPushError, match=r"late.bin: not a regular file"):
        _check_no_token(late)


@pytest.mark.parametrize(
    ("repo_type", "files", "message"),
    [
        ("model", {"config.json": "{}"}, "has no README.md: a model repo needs its model card"),
        ("model", {"README.md": "# no metadata\n"}, "has no YAML metadata block"),
        ("model", {"README.md": "---\nlicense: [mit\n---\n"}, "ModelCard cannot parse it"),
        ("dataset", {"data.parquet": b"PAR1"}, "a dataset repo needs its dataset card"),
        ("space", {"README.md": "---\ntitle: x\n---\n", "app.py": ""}, "needs `sdk:`"),
        ("space", {"README.md": SPACE_CARD}, "has no app.py, the file a gradio Space runs"),
        ("space", {"README.md": "---\nsdk: docker\n---\n"}, "has no Dockerfile"),
    ],
)
def test_a_folder_the_hub_would_take_badly_is_refused_before_any_request(
    repo_type, files, message, hub, tmp_path
):
    folder = write(tmp_path / "f", files)
    with pytest.raises(HubPushError, match=message):
        push_folder(folder, "coreb-user/x", repo_type=repo_type, endpoint=hub.url)
    with pytest.raises(HubPushError, match=message):
        dry_run(folder, tmp_path / "out", repo_type)
    assert hub.requests == []


def test_a_missing_folder_and_a_bad_repo_id_are_clear_errors(hub, tmp_path, model_dir):
    with pytest.raises(HubPushError, match="nowhere does not exist"):
        push_folder(tmp_path / "nowhere", "coreb-user/x", endpoint=hub.url)
    with pytest.raises(HubPushError, match="is not a Hub repo id"):
        push_folder(model_dir, "coreb-user/x/y", endpoint=hub.url)
    with pytest.raises(ValueError, match="repo_type must be one of model, dataset, space"):
        push_folder(model_dir, "coreb-user/x", repo_type="models", endpoint=hub.url)
    assert hub.requests == []


# -- the push --------------------------------------------------------------------------------


def test_push_creates_the_repo_and_sends_exactly_the_planned_files_in_one_commit(hub, model_dir):
    result = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, commit_message="m1")
    [create] = hub.calls("create")
    assert create.json() == {"name": "minilm", "organization": "coreb-user", "type": "model"}
    assert create.headers["authorization"] == f"Bearer {TOKEN}"  # the token did travel
    [validate] = hub.calls("validate")
    assert validate.json() == {"content": MODEL_CARD, "repoType": "model"}
    commit = commit_of(hub)
    files = upload_files(model_dir, "model")
    assert commit.files == folder_bytes(model_dir, files)
    assert (commit.repo_id, commit.revision, commit.create_pr, commit.summary) == (
        "coreb-user/minilm", "main", False, "m1",
    )  # fmt: skip
    assert [r.path for r in hub.calls("commit")] == ["/api/models/coreb-user/minilm/commit/main"]
    assert result.files == tuple(files) and result.unchanged == () and result.pr_url is None
    assert result.commit_url == f"{hub.url}/coreb-user/minilm/commit/{commit.oid}"
    assert result.repo_url == f"{hub.url}/coreb-user/minilm"
    assert "checkpoint-500/" in result.skipped


def test_a_second_push_of_the_same_folder_sends_no_commit(hub, model_dir):
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    again = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert len(hub.commits) == 1
    assert again.unchanged == again.files
    assert again.commit_url.endswith(hub.commits[0].oid)


def test_private_dataset_and_space_reach_create_with_their_type_and_flags(hub, tmp_path):
    data = write(tmp_path / "data", {"README.md": "---\nlicense: mit\n---\n", "a.jsonl": "{}\n"})
    push_folder(data, "coreb-org/coreb", repo_type="dataset", private=True, endpoint=hub.url)
    space = write(tmp_path / "space", {"README.md": SPACE_CARD, "app.py": "import gradio\n"})
    push_folder(space, "coreb-user/board", repo_type="space", endpoint=hub.url)
    assert [r.json() for r in hub.calls("create")] == [
        {"name": "coreb", "organization": "coreb-org", "type": "dataset", "visibility": "private"},
        {"name": "board", "organization": "coreb-user", "type": "space", "sdk": "gradio"},
    ]
    assert hub.repos[("dataset", "coreb-org/coreb")].private is True
    assert [r.path for r in hub.calls("commit")] == [
        "/api/datasets/coreb-org/coreb/commit/main",
        "/api/spaces/coreb-user/board/commit/main",
    ]
    assert hub.commits[1].files == folder_bytes(space, ["README.md", "app.py"])


def test_private_is_refused_for_an_existing_public_repo(hub, model_dir):
    hub.add_repo("model", "coreb-user/minilm", private=False)
    with pytest.raises(HubPushError, match=r"already exists and is public.*nothing was uploaded"):
        push_folder(model_dir, "coreb-user/minilm", private=True, endpoint=hub.url)
    assert hub.calls("preupload") == [] and hub.commits == []


def test_revision_and_create_pr_reach_the_commit_endpoint(hub, model_dir):
    repo = hub.add_repo("model", "coreb-user/minilm")
    repo.branches["dev"], repo.heads["dev"] = {}, "1" * 40
    result = push_folder(
        model_dir, "coreb-user/minilm", revision="dev", create_pr=True, endpoint=hub.url
    )
    [call] = hub.calls("commit")
    assert call.path == "/api/models/coreb-user/minilm/commit/dev"
    assert call.query == {"create_pr": ["1"]}
    assert hub.calls("preupload")[0].query == {"create_pr": ["1"]}
    assert commit_of(hub).create_pr is True
    assert result.pr_url == f"{hub.url}/coreb-user/minilm/discussions/1"
    assert repo.branches["dev"] == {}  # a pull request leaves the branch alone


def test_a_gitignore_on_the_hub_side_is_reported(hub, model_dir):
    write(model_dir, {".gitignore": "tokenizer/vocab.txt\n"})
    result = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert result.ignored_by_hub == ("tokenizer/vocab.txt",)
    assert "tokenizer/vocab.txt" not in commit_of(hub).files


# -- the dry run -----------------------------------------------------------------------------


def test_the_dry_run_writes_the_bytes_a_push_sends_and_contacts_nothing(hub, model_dir, tmp_path):
    out = tmp_path / "dry"
    written = dry_run(model_dir, out, "model")
    assert hub.requests == []
    on_disk = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert on_disk.pop(DRY_RUN_MARKER)  # the list of what it wrote, which --force reads
    assert sorted(on_disk) == [p.relative_to(out).as_posix() for p in written]
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert on_disk == commit_of(hub).files


def test_the_dry_run_refuses_a_used_or_nested_folder(model_dir, tmp_path):
    write(tmp_path / "used", {"x": "1"})
    with pytest.raises(HubPushError, match="exists and is not an empty folder"):
        dry_run(model_dir, tmp_path / "used", "model")
    with pytest.raises(HubPushError, match="lies inside"):
        dry_run(model_dir, model_dir / "upload", "model")
    with pytest.raises(HubPushError, match="or holds it"):  # --force must never remove the source
        dry_run(model_dir, tmp_path, "model", overwrite=True)
    assert (model_dir / "README.md").is_file()
    written = dry_run(model_dir, tmp_path / "empty", "model")
    again = dry_run(model_dir, tmp_path / "empty", "model", overwrite=True)  # a dry run's own
    assert again == written
    on_disk = sorted(p for p in (tmp_path / "empty").rglob("*") if p.is_file())
    assert on_disk == sorted([*written, tmp_path / "empty" / DRY_RUN_MARKER])


def test_force_replaces_only_a_folder_a_dry_run_wrote(model_dir, tmp_path):
    write(tmp_path / "thesis", {"thesis.tex": "years of work\n"})
    with pytest.raises(HubPushError, match=r"thesis exists and was not written by a dry run"):
        dry_run(model_dir, tmp_path / "thesis", "model", overwrite=True)
    assert (tmp_path / "thesis" / "thesis.tex").read_text() == "years of work\n"
    dry = tmp_path / "dry"
    dry_run(model_dir, dry, "model")
    write(dry, {"notes/mine.txt": "added after the dry run\n"})
    foreign = r"holds files a dry run did not write \(notes/mine.txt\)"
    with pytest.raises(HubPushError, match=foreign):
        dry_run(model_dir, dry, "model", overwrite=True)
    assert (dry / "notes" / "mine.txt").is_file()
    write(tmp_path, {"a-file": "not a folder\n"})
    with pytest.raises(HubPushError, match=r"a-file exists and is not a folder"):
        dry_run(model_dir, tmp_path / "a-file", "model", overwrite=True)
    assert (tmp_path / "a-file").read_text() == "not a folder\n"


def test_the_push_commits_the_operations_the_dry_run_writes(hub, model_dir, tmp_path, monkeypatch):
    # one function builds the commit: the dry run writes its operations, the push hands them to
    # HfApi.create_commit; they arrive on the Hub byte for byte, the weights through LFS
    built: list[list[str]] = []
    original = hub_module.commit_operations

    def recording(plan):
        operations = original(plan)
        built.append([op.path_in_repo for op in operations])
        return operations

    monkeypatch.setattr(hub_module, "commit_operations", recording)
    out = tmp_path / "dry"
    written = dry_run(model_dir, out, "model")
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    dry, pushed = built
    assert dry == pushed == upload_files(model_dir, "model")
    assert [p.relative_to(out).as_posix() for p in written] == dry
    marker = json.loads((out / DRY_RUN_MARKER).read_text(encoding="utf-8"))
    commit = commit_of(hub)
    assert marker["files"] == dry == sorted(commit.files)
    assert {rel: (out / rel).read_bytes() for rel in dry} == commit.files
    assert commit.lfs_files == ("model.safetensors",)  # huggingface_hub's LFS upload, not ours
    [upload] = hub.calls("lfs-upload")
    assert upload.body == (model_dir / "model.safetensors").read_bytes()


def test_a_dry_run_folder_pushed_itself_leaves_its_marker_out(hub, model_dir, tmp_path):
    dry_run(model_dir, tmp_path / "dry", "model")
    assert (tmp_path / "dry" / DRY_RUN_MARKER).is_file()
    push_folder(tmp_path / "dry", "coreb-user/minilm", endpoint=hub.url)
    assert DRY_RUN_MARKER not in commit_of(hub).files
    assert sorted(commit_of(hub).files) == upload_files(model_dir, "model")


# -- errors the Hub returns ------------------------------------------------------------------


def test_401_says_how_to_log_in(hub, model_dir, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_notTheRightOne")
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    text = str(info.value)
    assert "did not accept the credentials for model repo coreb-user/minilm" in text
    assert "401 on create" in text and "hf auth login" in text and "HF_TOKEN" in text


def test_no_token_at_all_stops_before_any_request(hub, model_dir, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(HubPushError, match=r"not logged in.*hf auth login"):
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert hub.requests == []


def test_403_names_the_namespace_and_the_pull_request_way(hub, model_dir):
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "someone-else/minilm", endpoint=hub.url)
    text = str(info.value)
    assert "no write access to model repo someone-else/minilm (revision main)" in text
    assert "403 on create" in text and "may not write to someone-else" in text
    assert "--create-pr" in text


def test_404_of_a_revision_says_how_to_create_the_branch(hub, model_dir):
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", revision="v2", endpoint=hub.url)
    assert "revision v2 does not exist in model repo coreb-user/minilm" in str(info.value)
    assert "hf repos branch create coreb-user/minilm v2" in str(info.value)
    assert hub.commits == []


def test_404_of_the_repo_says_to_check_id_and_type(hub, model_dir):
    hub.fail("preupload", 404, code="RepoNotFound")
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert "model repo coreb-user/minilm (revision main) was not found (404 on preupload)" in str(
        info.value
    )
    assert "`coreb push dataset` for a dataset" in str(info.value)


def test_409_on_commit_is_a_conflict_with_what_to_do(hub, model_dir, waits):
    hub.fail("commit", 409)
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    text = str(info.value)
    assert "conflict pushing model repo coreb-user/minilm (revision main) (409 on commit)" in text
    assert "nothing was committed" in text and "--create-pr" in text
    assert len(hub.calls("commit")) == 1 and waits[0] == []  # a conflict is not retried


def test_an_existing_repo_answering_409_on_create_is_pushed_to(hub, model_dir):
    hub.add_repo("model", "coreb-user/minilm")
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert len(hub.commits) == 1  # create's 409 "already created" is exist_ok's


# -- 5xx and retries -------------------------------------------------------------------------


def test_transient_5xx_on_create_and_commit_are_retried_with_backoff(hub, model_dir, waits):
    hub.fail("create", 500, times=1)
    hub.fail("commit", 503, times=2)
    result = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    assert waits[0] == [1.0, 1.0, 2.0]  # create once; commit twice, doubling
    assert len(hub.calls("create")) == 2 and len(hub.calls("commit")) == 3
    assert commit_of(hub).files == folder_bytes(model_dir, result.files)


def test_a_commit_whose_answer_was_lost_is_not_made_twice(hub, model_dir, waits):
    hub.fail("commit", 502, times=1, after=True)  # committed, then the answer lost
    result = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    assert len(hub.commits) == 1 and len(hub.calls("commit")) == 1
    assert result.unchanged == result.files  # the retry found every file there already
    assert result.commit_url.endswith(hub.commits[0].oid)


def test_transient_5xx_on_preupload_is_retried_by_huggingface_hub(hub, model_dir, monkeypatch):
    slept: list[float] = []
    # http_backoff's only use of `time` is time.sleep: record its waits instead
    monkeypatch.setattr(_http, "time", types.SimpleNamespace(sleep=slept.append))
    hub.fail("preupload", 502, times=2)
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert slept == [1, 2] and len(hub.calls("preupload")) == 3
    assert len(hub.commits) == 1


@pytest.mark.parametrize("route", ["create", "commit"])
def test_a_persistent_5xx_ends_with_a_clear_message(route, hub, model_dir, waits):
    hub.fail(route, 503)
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    text = str(info.value)
    assert f"kept failing (503 on {route}) for model repo coreb-user/minilm" in text
    assert "after 6 attempts; nothing was committed" in text and "status.huggingface.co" in text
    assert len(hub.calls(route)) == 6 and waits[0] == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert hub.commits == []


def test_a_persistent_5xx_on_preupload_ends_after_huggingface_hubs_retries(
    hub, model_dir, monkeypatch
):
    monkeypatch.setattr(_http, "time", types.SimpleNamespace(sleep=lambda s: None))
    hub.fail("preupload", 500)
    with pytest.raises(HubPushError, match=r"kept failing \(500 on preupload\).*5 retries"):
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert len(hub.calls("preupload")) == 6  # http_backoff's, not multiplied by ours


def test_a_5xx_on_a_pull_request_commit_is_not_retried(hub, model_dir, waits):
    hub.fail("commit", 503, times=1)
    with pytest.raises(HubPushError, match="could open a second pull request"):
        push_folder(
            model_dir, "coreb-user/minilm", create_pr=True, endpoint=hub.url, retry=waits[1]
        )
    assert len(hub.calls("commit")) == 1 and waits[0] == []


def test_a_connection_dropped_on_commit_is_retried_then_said_in_words(hub, model_dir, waits):
    hub.drop("commit", times=1)  # the network fails mid-request: no answer at all
    result = push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    assert waits[0] == [1.0] and len(hub.calls("commit")) == 2
    assert commit_of(hub).files == folder_bytes(model_dir, result.files)
    hub.drop("commit")
    waits[0].clear()
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/other", endpoint=hub.url, retry=waits[1])
    text = str(info.value)
    assert "pushing model repo coreb-user/other (revision main): cannot reach the Hub" in text
    assert "after 6 attempts (RemoteProtocolError" in text and "HF_ENDPOINT" in text
    assert waits[0] == [1.0, 2.0, 4.0, 8.0, 8.0] and len(hub.commits) == 1


def test_a_dropped_lfs_upload_is_retried_by_huggingface_hub(hub, model_dir, monkeypatch):
    monkeypatch.setattr(_http, "time", types.SimpleNamespace(sleep=lambda s: None))
    hub.drop("lfs-upload", times=1)
    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    first, second = hub.calls("lfs-upload")  # http_backoff's retry, not ours
    assert first.body == second.body == (model_dir / "model.safetensors").read_bytes()
    assert commit_of(hub).files["model.safetensors"] == second.body


def test_a_bad_retry_policy_is_refused():
    with pytest.raises(ValueError, match="max_retries must be 0 or more"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="base_wait <= max_wait"):
        RetryPolicy(base_wait=10, max_wait=1)


# -- the token -------------------------------------------------------------------------------


def test_a_folder_holding_the_token_is_refused_without_naming_it(hub, model_dir, tmp_path):
    write(model_dir, {"training_args.json": f'{{"hub_token": "{TOKEN}"}}\n'})
    with pytest.raises(HubPushError) as info:
        push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url)
    assert "training_args.json contains your Hugging Face token" in str(info.value)
    with pytest.raises(HubPushError, match=r"training_args.json contains"):
        dry_run(model_dir, tmp_path / "dry", "model")
    assert TOKEN not in str(info.value) and hub.requests == []


def test_the_token_never_appears_in_output_logs_errors_or_files(
    hub, model_dir, tmp_path, caplog, capsys, monkeypatch, waits
):
    monkeypatch.setattr(_http, "time", types.SimpleNamespace(sleep=lambda s: None))
    caplog.set_level(logging.DEBUG)  # every logger, huggingface_hub's and httpx2's included
    seen: list[str] = []

    def failure(**kwargs) -> None:
        with pytest.raises(HubPushError) as info:
            push_folder(model_dir, endpoint=hub.url, retry=waits[1], **kwargs)
        err: BaseException | None = info.value
        while err is not None:  # the message and every cause chained to it
            seen.extend([str(err), repr(err)])
            err = err.__cause__ or err.__context__

    push_folder(model_dir, "coreb-user/minilm", endpoint=hub.url, retry=waits[1])
    dry_run(model_dir, tmp_path / "dry", "model")
    failure(repo_id="someone-else/x")  # 403
    failure(repo_id="coreb-user/minilm", revision="nope")  # 404
    hub.fail("commit", 503)
    failure(repo_id="coreb-user/other")  # 5xx to the end
    hub.fail("preupload", 502)
    failure(repo_id="coreb-user/other")
    monkeypatch.setenv("HF_TOKEN", "hf_wrongButAlsoSecret")
    failure(repo_id="coreb-user/minilm")  # 401
    captured = capsys.readouterr()
    seen += [captured.out, captured.err, caplog.text]
    seen += [r.getMessage() for r in caplog.records]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            seen.append(path.read_bytes().decode("utf-8", "replace"))
    assert len(hub.requests) > 20 and len(caplog.records) > 20  # there was plenty to leak into
    leaks = [text for text in seen if TOKEN in text or "hf_wrongButAlsoSecret" in text]
    assert leaks == []
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in hub.requests[:4])
    assert os.environ["HF_TOKEN"] == "hf_wrongButAlsoSecret"  # nothing rewrote the environment


def test_offline_mode_and_an_unreachable_hub_are_clear_errors(logged_in, model_dir, monkeypatch):
    with FakeHub(token=TOKEN) as gone:
        url = gone.url  # a port nothing listens on once the server is closed
    recorded: list[float] = []
    with pytest.raises(HubPushError, match=r"cannot reach the Hub after 3 attempts.*HF_ENDPOINT"):
        push_folder(
            model_dir, "coreb-user/x", endpoint=url, retry=RetryPolicy(2, sleep=recorded.append)
        )
    assert recorded == [1.0, 2.0]  # a refused connection is retried like a 5xx
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubPushError, match="HF_HUB_OFFLINE is set; unset it to publish"):
        push_folder(model_dir, "coreb-user/x", endpoint=url)
