"""A local HTTP server that speaks the part of the Hub's API ``huggingface_hub`` 2.x calls to
create a repo, commit a folder (through Git LFS for binary and large files) and download it
again, for :mod:`model_cards.hub`'s tests and the Hub round trips of the rerankers.

A real server (``ThreadingHTTPServer`` on 127.0.0.1, a free port, in a thread): ``huggingface_hub``
2.x speaks ``httpx2``, which a ``requests`` mock would not see. The routes, read from
``hf_api.py`` (``create_repo``, ``_validate_yaml``, ``repo_info``) and ``_commit_api.py``
(``_fetch_upload_modes``, ``_send_commit``):

* ``POST /api/repos/create`` ``{name, organization, type, visibility, sdk}``;
* ``POST /api/validate-yaml`` ``{content, repoType}``;
* ``POST /api/{type}s/{id}/preupload/{rev}``: ``uploadMode: lfs`` for a file with an LFS name
  (``lfs_suffixes``: ``.safetensors``, ``.bin``...), of ``lfs_min_size`` bytes or more, or
  binary (a NUL byte in its sample); ``regular`` for the rest, which travel base64 inside the
  commit's NDJSON. ``oid`` is what the branch already holds at that path (a regular file's git
  blob SHA-1, an LFS file's sha256: what ``huggingface_hub`` compares), so that it leaves
  unchanged files out of a commit; ``shouldIgnore`` is true for a path that a line of the
  commit's ``.gitignore`` names exactly;
* the LFS batch, upload and verify routes (:mod:`tests.model_cards.fake_hub_files`);
* ``POST /api/{type}s/{id}/commit/{rev}`` (NDJSON: a header line, then a ``file`` line per
  regular file and an ``lfsFile`` line per LFS file, which names an uploaded object by its
  sha256);
* ``GET /api/{type}s/{id}`` and ``/api/{type}s/{id}/revision/{rev}`` (``repo_info``,
  ``model_info``: ``sha`` and ``siblings``), and the download routes ``resolve`` and ``tree``
  (:mod:`tests.model_cards.fake_hub_files`). ``{rev}`` of a read is a branch or a commit oid.

A public repo can be read without a token, a private one only with it (else 404
``RepoNotFound``, as the Hub hides it); a repo marked :attr:`Repo.gated` refuses its files (403
``GatedRepo``). The server speaks LFS, not Xet: while it runs, ``huggingface_hub``'s
``constants.HF_HUB_DISABLE_XET`` is true (a client in a subprocess needs
``HF_HUB_DISABLE_XET=1``).

Every request is recorded (:attr:`FakeHub.requests`); :meth:`FakeHub.fail` makes a route
answer an error status a number of times (or always), :meth:`FakeHub.drop` close the connection
without an answer (a network failure: ``httpx2`` raises ``RemoteProtocolError``). Errors carry
the Hub's own shapes: a JSON ``{"error": ...}`` body, ``X-Error-Message`` and, for missing
repos, revisions and files, the ``X-Error-Code`` that ``huggingface_hub`` maps to
``RepositoryNotFoundError`` / ``RevisionNotFoundError`` / ``RemoteEntryNotFoundError``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from huggingface_hub import constants

from tests.model_cards import fake_hub_files as files
from tests.model_cards.fake_hub_files import LFS_MIN_SIZE, LFS_SUFFIXES, git_blob_sha1

_REPO_ROUTE = re.compile(
    r"^/api/(?P<type>models|datasets|spaces)/(?P<id>[^/]+/[^/]+)"
    r"(?:/(?P<action>preupload|commit|revision)/(?P<rev>[^/]+))?$"
)


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)

    def ndjson(self) -> list[dict]:
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


@dataclass
class Repo:
    """A repo: each branch's files and head commit; each commit's tree (for reads at a commit
    oid) and which of its paths are LFS files; the LFS objects uploaded, by sha256."""

    repo_type: str
    repo_id: str
    private: bool
    sdk: str | None = None
    branches: dict[str, dict[str, bytes]] = field(default_factory=lambda: {"main": {}})
    heads: dict[str, str] = field(default_factory=lambda: {"main": "0" * 40})
    gated: bool = False
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)
    lfs: dict[str, set[str]] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)

    def tree(self, revision: str) -> files.Tree | None:
        """(commit oid, files, LFS paths) at a branch or commit oid; ``None``: no such one."""
        if revision in self.branches:
            commit, held = self.heads[revision], self.branches[revision]
        elif revision in self.snapshots:
            commit, held = revision, self.snapshots[revision]
        else:
            return None
        return commit, held, self.lfs.get(commit, set())


@dataclass
class Commit:
    """A commit the server accepted: the decoded files of its NDJSON body."""

    repo_type: str
    repo_id: str
    revision: str
    create_pr: bool
    summary: str
    files: dict[str, bytes]
    oid: str
    lfs_files: tuple[str, ...] = ()  # the paths of ``files`` that came as ``lfsFile`` lines


class FakeHub:
    """The server. Use as a context manager; :attr:`url` is its endpoint.

    Args:
        token: the one token it accepts (``Authorization: Bearer <token>``).
        user: the token's user; it may write to its own namespace and to ``orgs``.
        orgs: further namespaces the token may write to.
        lfs_suffixes: the file names preupload sends to LFS (beside large and binary files).
        lfs_min_size: from this size on, every file goes to LFS.
        lfs_verify: whether the LFS batch answer asks for the verify call after an upload.
    """

    def __init__(
        self,
        token: str,
        user: str = "coreb-user",
        orgs: tuple[str, ...] = (),
        *,
        lfs_suffixes: tuple[str, ...] = LFS_SUFFIXES,
        lfs_min_size: int = LFS_MIN_SIZE,
        lfs_verify: bool = True,
    ) -> None:
        self.token = token
        self.user = user
        self.namespaces = {user, *orgs}
        self.lfs_suffixes, self.lfs_min_size = lfs_suffixes, lfs_min_size
        self.lfs_verify = lfs_verify
        self.requests: list[Request] = []
        self.repos: dict[tuple[str, str], Repo] = {}
        self.commits: list[Commit] = []
        self.lfs_tickets: dict[str, tuple[Repo, str, int]] = {}  # upload URL -> its object
        self._xet: bool | None = None
        self._failures: dict[str, list] = {}
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as httpx2 expects

            def log_message(self, format: str, *args: object) -> None:
                pass  # the recorded requests are the log

            def do_GET(self) -> None:
                hub._handle(self)

            def do_POST(self) -> None:
                hub._handle(self)

            def do_HEAD(self) -> None:
                hub._handle(self)

            def do_PUT(self) -> None:
                hub._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # a short poll: shutdown() waits for the loop to notice (0.5 s by default)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeHub:
        # the server speaks LFS, not Xet: huggingface_hub must not take the Xet path
        self._xet, constants.HF_HUB_DISABLE_XET = constants.HF_HUB_DISABLE_XET, True
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        constants.HF_HUB_DISABLE_XET = bool(self._xet)

    # -- test controls ---------------------------------------------------------------------

    def fail(
        self,
        route: str,
        status: int,
        times: int | None = None,
        *,
        code: str | None = None,
        after: bool = False,
    ) -> None:
        """Answer ``status`` on ``route`` (create, validate, preupload, lfs-batch, lfs-upload,
        lfs-verify, commit, info, tree, resolve) the next ``times`` times (``None``: always),
        with ``X-Error-Code: code`` if given. ``after``: do the work first and then answer the
        error (an answer lost on the way back)."""
        self._failures[route] = [status, times, code, after]

    def drop(self, route: str, times: int | None = None, *, after: bool = False) -> None:
        """Close the connection on ``route`` without answering, the next ``times`` times
        (``None``: always): the network failing mid-request. ``after``: do the work first."""
        self._failures[route] = [None, times, None, after]

    def client_constants(self) -> dict[str, str]:
        """The ``huggingface_hub.constants`` that point a client in this process here (set them
        with ``monkeypatch.setattr``): ``ENDPOINT``, read when an ``HfApi`` is built, and the
        download URL template ``hf_hub_download`` fills in, which ``huggingface_hub`` derives
        from ``HF_ENDPOINT`` once, at import."""
        template = f"{self.url}/{{repo_id}}/resolve/{{revision}}/{{filename}}"
        return {"ENDPOINT": self.url, "HUGGINGFACE_CO_URL_TEMPLATE": template}

    def add_repo(self, repo_type: str, repo_id: str, *, private: bool = False) -> Repo:
        repo = Repo(repo_type, repo_id, private)
        self.repos[(repo_type, repo_id)] = repo
        return repo

    def calls(self, route: str) -> list[Request]:
        """The recorded requests of one route."""
        return [r for r in self.requests if self._route(r.method, r.path)[0] == route]

    # -- the server ------------------------------------------------------------------------

    @staticmethod
    def _route(method: str, path: str) -> tuple[str, re.Match | None]:
        if method == "POST" and path == "/api/repos/create":
            return "create", None
        if method == "POST" and path == "/api/validate-yaml":
            return "validate", None
        match = _REPO_ROUTE.match(path)
        if match is None:
            return files.route(method, path)
        action = match["action"]
        if method == "POST" and action in ("preupload", "commit"):
            return action, match
        if method == "GET" and action in (None, "revision"):
            return "info", match
        return "unknown", match

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        split = urlsplit(handler.path)
        request = Request(
            method=handler.command,
            path=unquote(split.path),
            query=parse_qs(split.query),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=_read_body(handler),
        )
        with self._lock:
            self.requests.append(request)
            route, match = self._route(request.method, request.path)
            status, payload, headers = self._answer(route, match, request)
        if status is None:  # dropped: no status line, no body, the connection closed
            handler.close_connection = True
            return
        raw = isinstance(payload, bytes)  # a file's bytes, else a JSON answer
        body = payload if raw else json.dumps(payload).encode()
        handler.send_response(status)
        kind = "application/octet-stream" if raw else "application/json"
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        if request.method != "HEAD":
            handler.wfile.write(body)

    _error = staticmethod(files.error)

    def _answer(self, route: str, match: re.Match | None, request: Request) -> tuple:
        """The failure set for ``route``, if any, else the route's work."""
        failure = self._failures.get(route)
        if failure is not None and failure[1] != 0:
            if failure[1] is not None:
                failure[1] -= 1
            status, _, code, after = failure
            if after:
                self._work(route, match, request)
            if status is None:
                return None, None, {}
            return self._error(status, f"fake Hub error {status}", code)
        return self._work(route, match, request)

    def _work(self, route: str, match: re.Match | None, request: Request) -> tuple:
        if route == "lfs-upload":  # a signed storage URL stand-in: the ticket is the key
            return files.lfs_upload(self, match["ticket"], request)
        auth = request.headers.get("authorization")
        anonymous_read = auth is None and route in files.READ_ROUTES
        if auth != f"Bearer {self.token}" and not anonymous_read:
            return self._error(401, "Invalid credentials in Authorization header")
        if route == "create":
            return self._create(request.json())
        if route == "validate":
            return 200, {"errors": [], "warnings": []}, {}
        if match is None:
            return self._error(404, f"no route {request.method} {request.path}")
        repo_type = {"models": "model", "datasets": "dataset", "spaces": "space", None: "model"}
        repo = self.repos.get((repo_type[match["type"]], match["id"]))
        if repo is None or (repo.private and anonymous_read):
            return self._error(404, "Repository not found", "RepoNotFound")
        if route == "unknown":
            return self._error(404, f"no route {request.method} {request.path}")
        if route in files.READ_ROUTES:
            return self._read(route, repo, match, request)
        revision = match["rev"] if "rev" in match.groupdict() and match["rev"] else "main"
        if revision not in repo.branches:
            return self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        if match["id"].split("/")[0] not in self.namespaces:
            return self._error(403, f"You don't have the rights to write to {match['id']}")
        if route == "lfs-batch":
            return files.lfs_batch(self, repo, request.json())
        if route == "lfs-verify":
            return files.lfs_verify(repo, request.json())
        if route == "preupload":
            return self._preupload(repo, revision, request.json())
        return self._commit(repo, revision, request)

    def _read(self, route: str, repo: Repo, match: re.Match, request: Request) -> tuple:
        revision = match["rev"] or "main"
        tree = repo.tree(revision)
        if tree is None:
            return self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        if route == "resolve":
            return files.resolve(repo, tree, match["path"])
        if route == "tree":
            recursive = request.query.get("recursive", ["false"])[0].lower() == "true"
            return files.listing(tree, match["path"], recursive)
        blobs = request.query.get("blobs", ["false"])[0].lower() == "true"
        siblings = files.siblings(tree, blobs)
        answer = {"id": repo.repo_id, "private": repo.private, "sha": tree[0],
                  "gated": "manual" if repo.gated else False, "siblings": siblings}  # fmt: skip
        return 200, answer, {}

    def _create(self, payload: dict) -> tuple:
        namespace = payload.get("organization") or self.user
        repo_type = payload.get("type") or "model"
        repo_id = f"{namespace}/{payload['name']}"
        if namespace not in self.namespaces:
            message = f"You don't have the rights to create a {repo_type} under {namespace}"
            return self._error(403, message)
        prefix = files.URL_PREFIX[repo_type]
        url = f"{self.url}/{prefix}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return 409, {"error": f"You already created this {repo_type} repo", "url": url}, {}
        repo = self.add_repo(repo_type, repo_id, private=payload.get("visibility") == "private")
        repo.sdk = payload.get("sdk")
        return 200, {"url": url, "name": repo_id}, {}

    def _preupload(self, repo: Repo, revision: str, payload: dict) -> tuple:
        _, held, held_lfs = repo.tree(revision)
        ignored = set((payload.get("gitIgnore") or "").split("\n")) - {""}
        answer = []
        for f in payload["files"]:
            path, sample = f["path"], base64.b64decode(f.get("sample") or "")
            lfs = files.is_lfs(self, path, f["size"], sample)
            oid = None
            if path in held:
                oid = (files.sha256 if path in held_lfs else git_blob_sha1)(held[path])
            answer.append({"path": path, "uploadMode": "lfs" if lfs else "regular",
                           "shouldIgnore": path in ignored, "oid": oid})  # fmt: skip
        return 200, {"files": answer, "commitOid": repo.heads[revision]}, {}

    def _commit(self, repo: Repo, revision: str, request: Request) -> tuple:
        lines = request.ndjson()
        if not lines or lines[0].get("key") != "header":
            return self._error(400, "the commit's first NDJSON line must be its header")
        sent: dict[str, bytes] = {}
        lfs: list[str] = []
        for line in lines[1:]:
            key, value = line.get("key"), line.get("value") or {}
            if key == "file" and value.get("encoding") == "base64":
                sent[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile" and value.get("algo") == "sha256":
                data = repo.lfs_objects.get(value["oid"])
                if data is None or len(data) != value.get("size", len(data)):
                    message = f"LFS pointer of {value['path']} names an object never uploaded"
                    return self._error(400, f"Your push was rejected: {message}")
                sent[value["path"]] = data
                lfs.append(value["path"])
            else:
                return self._error(400, f"fake Hub: unsupported commit line {key}")
        create_pr = request.query.get("create_pr") == ["1"]
        oid = hashlib.sha1(request.body).hexdigest()
        summary = lines[0]["value"]["summary"]
        commit = Commit(repo.repo_type, repo.repo_id, revision, create_pr, summary, sent, oid,
                        tuple(lfs))  # fmt: skip
        self.commits.append(commit)
        prefix = files.URL_PREFIX[repo.repo_type]
        base = f"{self.url}/{prefix}{repo.repo_id}"
        answer = {"commitUrl": f"{base}/commit/{oid}", "commitOid": oid, "success": True}
        if create_pr:
            answer["pullRequestUrl"] = f"{base}/discussions/{len(self.commits)}"
        else:
            before = repo.lfs.get(repo.heads[revision], set())
            repo.branches[revision].update(sent)
            repo.heads[revision] = oid
            repo.snapshots[oid] = dict(repo.branches[revision])
            repo.lfs[oid] = (before - set(sent)) | set(lfs)
        return 200, answer, {}


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request's body, sent with a Content-Length or in chunks (a streamed upload)."""
    if "chunked" not in (handler.headers.get("Transfer-Encoding") or "").lower():
        return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    chunks = []
    while size := int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16):
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()  # the CRLF after each chunk
    while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
        pass  # trailers
    return b"".join(chunks)
