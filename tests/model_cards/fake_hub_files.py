"""The fake Hub's file routes (:mod:`tests.model_cards.fake_hub`): the Git LFS upload path a
commit of a binary or large file takes, and the download path of ``hf_hub_download`` /
``snapshot_download`` / ``list_repo_files``.

The shapes are those ``huggingface_hub`` 2.x reads or sends, from ``lfs.py``
(``post_lfs_batch_info``, ``lfs_upload``), ``_commit_api.py`` (``_upload_files``, the
``lfsFile`` commit line), ``file_download.py`` (``get_hf_file_metadata``,
``_get_metadata_or_catch_error``), ``_snapshot_download.py`` and ``hf_api.py`` (``RepoFile``,
``ModelInfo.siblings``):

* ``POST /{prefix}{id}.git/info/lfs/objects/batch`` (``lfs-batch``): per object, an ``upload``
  action whose ``href`` is a one-use URL of this server (``/lfs-storage/{ticket}``, the stand-in
  for a signed storage URL: it takes no token) and a ``verify`` action, or no actions for an
  object the repo already holds;
* ``PUT /lfs-storage/{ticket}`` (``lfs-upload``): the bytes, checked against the announced
  sha256 and size, kept in :attr:`Repo.lfs_objects` under their sha256;
* ``POST /{prefix}{id}.git/info/lfs/objects/verify`` (``lfs-verify``): ``{oid, size}``;
* ``GET`` / ``HEAD /{prefix}{id}/resolve/{rev}/{path}`` (``resolve``): the bytes with
  ``X-Repo-Commit`` and ``ETag`` (a regular file's git blob SHA-1), and for an LFS file
  ``X-Linked-Etag`` (its sha256) and ``X-Linked-Size``; a missing file is a 404 with
  ``X-Error-Code: EntryNotFound`` (and ``X-Repo-Commit``, as the Hub sends it); a gated repo
  answers 403 ``GatedRepo``;
* ``GET /api/{type}s/{id}/tree/{rev}[/{path}]`` (``tree``, ``?recursive=``): ``RepoFile`` /
  ``RepoFolder`` entries, one page (no ``Link`` header).

``{prefix}`` is ``""``, ``datasets/`` or ``spaces/``; ``{rev}`` a branch or a commit oid.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.model_cards.fake_hub import FakeHub, Repo, Request

#: the paths a fresh Hub repo's ``.gitattributes`` sends to LFS (a selection)
LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5",
                ".msgpack", ".npy", ".npz", ".pkl", ".parquet", ".zip", ".tar.gz")  # fmt: skip
#: above this size a file goes to LFS whatever its name (the Hub's 10 MB)
LFS_MIN_SIZE = 10 * 1024 * 1024
POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"

_PREFIX = r"^/(?:(?P<type>datasets|spaces)/)?(?P<id>[^/]+/[^/]+?)"
ROUTES = (
    ("lfs-batch", "POST", re.compile(_PREFIX + r"\.git/info/lfs/objects/batch$")),
    ("lfs-verify", "POST", re.compile(_PREFIX + r"\.git/info/lfs/objects/verify$")),
    ("lfs-upload", "PUT", re.compile(r"^/lfs-storage/(?P<ticket>[0-9a-f]+)$")),
    ("resolve", "GET HEAD", re.compile(_PREFIX + r"/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")),
    ("tree", "GET", re.compile(
        r"^/api/(?P<type>models|datasets|spaces)/(?P<id>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)"
        r"(?:/(?P<path>.+))?$"
    )),
)  # fmt: skip
#: the routes anyone may call on a public repo (a private one needs the token)
READ_ROUTES = ("info", "tree", "resolve")
URL_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}

#: a commit's tree at a revision: (commit oid, {path: bytes}, paths stored through LFS)
Tree = tuple[str, dict[str, bytes], set[str]]


def route(method: str, path: str) -> tuple[str, re.Match | None]:
    for name, methods, pattern in ROUTES:
        match = pattern.match(path)
        if match is not None and method in methods.split():
            return name, match
    return "unknown", None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1(data: bytes) -> str:
    """The oid git (and the Hub's preupload answer) gives a regular file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def error(status: int, message: str, code: str | None = None) -> tuple[int, dict, dict]:
    """An error in the Hub's shape: a JSON body, ``X-Error-Message`` and maybe
    ``X-Error-Code`` (which ``huggingface_hub`` maps to its error classes)."""
    headers = {"X-Error-Message": message}
    if code:
        headers["X-Error-Code"] = code
    return status, {"error": message}, headers


def is_lfs(hub: FakeHub, path: str, size: int, sample: bytes) -> bool:
    """The preupload rule: an LFS name, a large file, or a binary one (a NUL byte in its first
    512 bytes; the Hub refuses binaries as regular files)."""
    return path.endswith(hub.lfs_suffixes) or size >= hub.lfs_min_size or b"\0" in sample


def pointer(data: bytes) -> bytes:
    """The LFS pointer file git holds for ``data``."""
    return POINTER.format(oid=sha256(data), size=len(data)).encode()


def file_entry(path: str, data: bytes, lfs: bool) -> dict:
    """A ``RepoFile`` of the tree endpoint (the size is the file's, the oid git's blob id)."""
    entry: dict = {"type": "file", "path": path, "size": len(data)}
    entry["oid"] = git_blob_sha1(pointer(data) if lfs else data)
    if lfs:
        entry["lfs"] = {"oid": sha256(data), "size": len(data), "pointerSize": len(pointer(data))}
    return entry


def siblings(tree: Tree, blobs: bool) -> list[dict]:
    """``ModelInfo.siblings``: the file names, with sizes and blob ids when ``blobs``."""
    _, held, lfs = tree
    out = []
    for path in sorted(held):
        sibling: dict = {"rfilename": path}
        if blobs:
            entry = file_entry(path, held[path], path in lfs)
            sibling.update(size=entry["size"], blobId=entry["oid"])
            if path in lfs:
                sibling["lfs"] = {**entry["lfs"], "sha256": entry["lfs"]["oid"]}
        out.append(sibling)
    return out


def listing(tree: Tree, path: str | None, recursive: bool) -> tuple:
    """The tree endpoint's answer for the folder ``path`` (the root when ``None``)."""
    _, held, lfs = tree
    prefix = f"{path.strip('/')}/" if path else ""
    under = sorted(p for p in held if p.startswith(prefix))
    if path and not under:
        return error(404, f"{path} does not exist in this revision", "EntryNotFound")
    folders: set[str] = set()
    files = []
    for name in under:
        parts = name[len(prefix) :].split("/")
        depth = len(parts) if recursive else 2
        folders.update(prefix + "/".join(parts[:i]) for i in range(1, min(len(parts), depth)))
        if recursive or len(parts) == 1:
            files.append(file_entry(name, held[name], name in lfs))
    dirs = [{"type": "directory", "path": d, "oid": git_blob_sha1(d.encode())} for d in folders]
    return 200, sorted(dirs, key=lambda d: d["path"]) + files, {}


def resolve(repo: Repo, tree: Tree, path: str) -> tuple:
    """A file's bytes and the headers ``hf_hub_download`` checks."""
    commit, held, lfs = tree
    if repo.gated:
        message = f"Access to model {repo.repo_id} is restricted. You must have access to it."
        return error(403, message, "GatedRepo")
    if path not in held:
        status, body, headers = error(404, "Entry not found", "EntryNotFound")
        return status, body, {**headers, "X-Repo-Commit": commit}
    data = held[path]
    headers = {"X-Repo-Commit": commit}
    if path in lfs:
        oid = sha256(data)
        headers.update({"ETag": f'"{oid}"', "X-Linked-Etag": f'"{oid}"',
                        "X-Linked-Size": str(len(data))})  # fmt: skip
    else:
        headers["ETag"] = f'"{git_blob_sha1(data)}"'
    return 200, data, headers


def lfs_batch(hub: FakeHub, repo: Repo, payload: dict) -> tuple:
    """Upload actions for the objects the repo does not hold yet."""
    if payload.get("operation") != "upload" or payload.get("hash_algo", "sha256") != "sha256":
        return error(422, f"fake Hub: unsupported LFS batch {payload.get('operation')!r}")
    base = f"{hub.url}/{URL_PREFIX[repo.repo_type]}{repo.repo_id}.git/info/lfs/objects"
    objects = []
    for obj in payload["objects"]:
        entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
        if obj["oid"] not in repo.lfs_objects:
            ticket = secrets.token_hex(8)
            hub.lfs_tickets[ticket] = (repo, obj["oid"], obj["size"])
            entry["actions"] = {"upload": {"href": f"{hub.url}/lfs-storage/{ticket}"}}
            if hub.lfs_verify:
                entry["actions"]["verify"] = {"href": f"{base}/verify"}
        objects.append(entry)
    return 200, {"transfer": "basic", "objects": objects}, {}


def lfs_upload(hub: FakeHub, ticket: str, request: Request) -> tuple:
    """The PUT of one object to the URL the batch answer gave."""
    pending = hub.lfs_tickets.get(ticket)
    if pending is None:
        return error(403, "fake Hub: unknown or used LFS upload URL")
    repo, oid, size = pending
    if sha256(request.body) != oid or len(request.body) != size:
        return error(400, f"fake Hub: the bytes sent are not object {oid} of {size} bytes")
    del hub.lfs_tickets[ticket]
    repo.lfs_objects[oid] = request.body
    return 200, b"", {}


def lfs_verify(repo: Repo, payload: dict) -> tuple:
    data = repo.lfs_objects.get(payload.get("oid", ""))
    if data is None or len(data) != payload.get("size"):
        return error(404, f"fake Hub: LFS object {payload.get('oid')} was not uploaded")
    return 200, {}, {}
