"""A local HTTP server that speaks the part of the Hub's API ``huggingface_hub`` 2.4.0 calls to
create a repo and commit a folder, for :mod:`model_cards.hub`'s tests.

A real server (``ThreadingHTTPServer`` on 127.0.0.1, a free port, in a thread): ``huggingface_hub``
2.x speaks ``httpx2``, which a ``requests`` mock would not see. The routes, read from
``hf_api.py`` (``create_repo``, ``_validate_yaml``, ``repo_info``) and ``_commit_api.py``
(``_fetch_upload_modes``, ``_send_commit``):

* ``POST /api/repos/create`` ``{name, organization, type, visibility, sdk}``;
* ``POST /api/validate-yaml`` ``{content, repoType}``;
* ``POST /api/{type}s/{id}/preupload/{rev}``: answers ``uploadMode: regular`` for every file,
  so that every file travels base64 inside the commit's NDJSON and the tests can compare bytes
  (the LFS batch endpoints are not implemented: a real Hub sends binaries and large files
  there); ``oid`` is the git blob SHA-1 of the file the branch already holds, as the Hub gives
  it, so ``huggingface_hub`` leaves unchanged files out of a commit; ``shouldIgnore`` is true
  for a path that a line of the commit's ``.gitignore`` names exactly;
* ``POST /api/{type}s/{id}/commit/{rev}`` (NDJSON: a header line, then one line per file);
* ``GET /api/{type}s/{id}`` and ``/api/{type}s/{id}/revision/{rev}`` (``repo_info``).

Every request is recorded (:attr:`FakeHub.requests`); :meth:`FakeHub.fail` makes a route
answer an error status a number of times (or always). Errors carry the Hub's own shapes: a JSON
``{"error": ...}`` body, ``X-Error-Message`` and, for missing repos and revisions, the
``X-Error-Code`` that ``huggingface_hub`` maps to ``RepositoryNotFoundError`` /
``RevisionNotFoundError``.
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
    repo_type: str
    repo_id: str
    private: bool
    sdk: str | None = None
    branches: dict[str, dict[str, bytes]] = field(default_factory=lambda: {"main": {}})
    heads: dict[str, str] = field(default_factory=lambda: {"main": "0" * 40})


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


def git_blob_sha1(data: bytes) -> str:
    """The oid git (and the Hub's preupload answer) gives a regular file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    """The server. Use as a context manager; :attr:`url` is its endpoint.

    Args:
        token: the one token it accepts (``Authorization: Bearer <token>``).
        user: the token's user; it may write to its own namespace and to ``orgs``.
        orgs: further namespaces the token may write to.
    """

    def __init__(self, token: str, user: str = "coreb-user", orgs: tuple[str, ...] = ()) -> None:
        self.token = token
        self.user = user
        self.namespaces = {user, *orgs}
        self.requests: list[Request] = []
        self.repos: dict[tuple[str, str], Repo] = {}
        self.commits: list[Commit] = []
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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # a short poll: shutdown() waits for the loop to notice (0.5 s by default)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

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
        """Answer ``status`` on ``route`` (create, validate, preupload, commit, info) the next
        ``times`` times (``None``: always), with ``X-Error-Code: code`` if given. ``after``:
        do the work first and then answer the error (an answer lost on the way back)."""
        self._failures[route] = [status, times, code, after]

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
            return "unknown", None
        action = match["action"]
        if method == "POST" and action in ("preupload", "commit"):
            return action, match
        if method == "GET" and action in (None, "revision"):
            return "info", match
        return "unknown", match

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        request = Request(
            method=handler.command,
            path=unquote(split.path),
            query=parse_qs(split.query),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=handler.rfile.read(length),
        )
        with self._lock:
            self.requests.append(request)
            route, match = self._route(request.method, request.path)
            status, payload, headers = self._answer(route, match, request)
        body = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(body)

    @staticmethod
    def _error(status: int, message: str, code: str | None = None) -> tuple[int, dict, dict]:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        return status, {"error": message}, headers

    def _answer(self, route: str, match: re.Match | None, request: Request) -> tuple:
        """The failure set for ``route``, if any, else the route's work."""
        failure = self._failures.get(route)
        if failure is not None and failure[1] != 0:
            if failure[1] is not None:
                failure[1] -= 1
            status, _, code, after = failure
            if after:
                self._work(route, match, request)
            return self._error(status, f"fake Hub error {status}", code)
        return self._work(route, match, request)

    def _work(self, route: str, match: re.Match | None, request: Request) -> tuple:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return self._error(401, "Invalid credentials in Authorization header")
        if route == "create":
            return self._create(request.json())
        if route == "validate":
            return 200, {"errors": [], "warnings": []}, {}
        if match is None:
            return self._error(404, f"no route {request.method} {request.path}")
        repo_type = match["type"][:-1]
        repo = self.repos.get((repo_type, match["id"]))
        if repo is None:
            return self._error(404, "Repository not found", "RepoNotFound")
        revision = match["rev"] or "main"
        if route == "unknown":
            return self._error(404, f"no route {request.method} {request.path}")
        if revision not in repo.branches:
            return self._error(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        if route == "info":
            sha = repo.heads[revision]
            return 200, {"id": repo.repo_id, "private": repo.private, "sha": sha}, {}
        if match["id"].split("/")[0] not in self.namespaces:
            return self._error(403, f"You don't have the rights to write to {match['id']}")
        if route == "preupload":
            return self._preupload(repo, revision, request.json())
        return self._commit(repo, revision, request)

    def _create(self, payload: dict) -> tuple:
        namespace = payload.get("organization") or self.user
        repo_type = payload.get("type") or "model"
        repo_id = f"{namespace}/{payload['name']}"
        if namespace not in self.namespaces:
            message = f"You don't have the rights to create a {repo_type} under {namespace}"
            return self._error(403, message)
        prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[repo_type]
        url = f"{self.url}/{prefix}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return 409, {"error": f"You already created this {repo_type} repo", "url": url}, {}
        repo = self.add_repo(repo_type, repo_id, private=payload.get("visibility") == "private")
        repo.sdk = payload.get("sdk")
        return 200, {"url": url, "name": repo_id}, {}

    def _preupload(self, repo: Repo, revision: str, payload: dict) -> tuple:
        held = repo.branches[revision]
        ignored = set((payload.get("gitIgnore") or "").split("\n")) - {""}
        files = [
            {
                "path": f["path"],
                "uploadMode": "regular",
                "shouldIgnore": f["path"] in ignored,
                "oid": git_blob_sha1(held[f["path"]]) if f["path"] in held else None,
            }
            for f in payload["files"]
        ]
        return 200, {"files": files, "commitOid": repo.heads[revision]}, {}

    def _commit(self, repo: Repo, revision: str, request: Request) -> tuple:
        lines = request.ndjson()
        if not lines or lines[0].get("key") != "header":
            return self._error(400, "the commit's first NDJSON line must be its header")
        files = {}
        for line in lines[1:]:
            if line.get("key") != "file" or line["value"].get("encoding") != "base64":
                return self._error(400, f"fake Hub: unsupported commit line {line.get('key')}")
            files[line["value"]["path"]] = base64.b64decode(line["value"]["content"])
        create_pr = request.query.get("create_pr") == ["1"]
        oid = hashlib.sha1(request.body).hexdigest()
        summary = lines[0]["value"]["summary"]
        commit = Commit(repo.repo_type, repo.repo_id, revision, create_pr, summary, files, oid)
        self.commits.append(commit)
        prefix = {"model": "", "dataset": "datasets/", "space": "spaces/"}[repo.repo_type]
        base = f"{self.url}/{prefix}{repo.repo_id}"
        answer = {"commitUrl": f"{base}/commit/{oid}", "commitOid": oid, "success": True}
        if create_pr:
            answer["pullRequestUrl"] = f"{base}/discussions/{len(self.commits)}"
        else:
            repo.branches[revision].update(files)
            repo.heads[revision] = oid
        return 200, answer, {}
