"""A local, Hub-compatible HTTP server that the real ``huggingface_hub`` client (2.4.0) talks to.

Usage::

    from tests.hub.fakehub import serve_hub
    from tests.hub.repos import ALL_REPOS

    with serve_hub(ALL_REPOS) as hub:
        api = HfApi(endpoint=hub.url, token=False)
        api.model_info("Qwen/Qwen3-8B-Base")
        hub.count("Qwen/Qwen3-8B-Base", "config.json", method="GET")

Endpoints served (``{rev}`` is ``main``, any extra branch of the repo, or its 40-hex commit sha; it arrives
percent-encoded and is decoded):

- ``GET /api/models/{repo_id}`` and ``GET /api/models/{repo_id}/revision/{rev}`` (``HfApi.model_info``);
  query ``blobs=true`` adds sizes/LFS to ``siblings``; ``expand=...`` keeps only the listed keys.
- ``GET /api/models/{repo_id}/tree/{rev}`` (``HfApi.list_repo_tree`` / ``list_repo_files``).
- ``GET /api/models/{repo_id}/safetensors-metadata/{filename}`` (``HfApi.get_sharded_safetensors_metadata``).
- ``HEAD``/``GET /{repo_id}/resolve/{rev}/{filename}`` (``hf_hub_download``, ``file_exists``,
  ``parse_safetensors_file_metadata``), with ``Range: bytes=a-b`` → 206 + ``Content-Range``.

Files are virtual: a known prefix (config JSON, index JSON, safetensors header) followed by filler bytes up to
the declared size, so a shard reports its true size (header + tensor data) while only the header is real.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.hub import safetensors_header as sth

#: The one token the fake Hub accepts for gated/private repos (``Authorization: Bearer <TOKEN>``).
TOKEN = "hf_fakehub_0123456789abcdefghijklmnopqrstuv"

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
LFS_THRESHOLD = 10 * 1024 * 1024  # files at least this big (or *.safetensors) are served as LFS files
_CHUNK = 1 << 20


# ------------------------------------------------------------------------------------------ data model


@dataclass(frozen=True)
class Shard:
    """One safetensors file: its name and its tensors ``name -> (dtype, shape)``."""

    filename: str
    tensors: Mapping[str, tuple[str, tuple[int, ...]]]

    def header(self) -> bytes:
        return sth.header_bytes(self.tensors)

    @property
    def data_size(self) -> int:
        return sth.data_size(self.tensors)


@dataclass(frozen=True)
class VFile:
    """A served file: ``prefix`` then ``fill`` bytes up to ``size``."""

    prefix: bytes
    size: int
    fill: bytes = b"\0"
    lfs: bool = False

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        end = min(end, self.size)
        if start >= end:
            return b""
        head = self.prefix[start:end]
        rest = end - max(start, len(self.prefix))
        return head + self.fill * max(rest, 0)

    @property
    def git_sha1(self) -> str:
        # git blob id; for big virtual files a stand-in derived from prefix and size (never the real content)
        if self.size <= LFS_THRESHOLD:
            data = self.read(0, self.size)
            return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        return hashlib.sha1(b"fakeblob %d\0" % self.size + self.prefix).hexdigest()

    @property
    def sha256(self) -> str:
        # LFS oid; a stand-in for virtual files (hashing gigabytes of zeros would be pointless)
        return hashlib.sha256(b"fakelfs %d\0" % self.size + self.prefix).hexdigest()

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.git_sha1


@dataclass(frozen=True)
class FakeRepo:
    """One model repo of the fake Hub and how it behaves.

    ``shards``: one shard named ``model.safetensors`` → single-file repo; otherwise an index
    ``model.safetensors.index.json`` is generated (``weight_map`` sorted by name,
    ``metadata.total_size`` = Σ tensor bytes).
    ``gated``: ``False``, ``"auto"`` or ``"manual"``; metadata (model_info, tree) stays public as on the
    Hub, files need ``Authorization: Bearer TOKEN`` (401 ``GatedRepo`` without, 403 with another token).
    ``private``: without the token the repo does not exist (404 ``RepoNotFound``).
    ``slow``: seconds slept before answering any request of this repo.
    ``oversized_config_bytes``: config.json declared (and served) that big, spaces after the JSON.
    ``oversized_header_bytes``: every shard declares a safetensors header that long (first 8 bytes) and is
    served as 8 + that many bytes of spaces.
    """

    repo_id: str
    sha: str
    config: Mapping[str, Any] | None = None
    shards: Sequence[Shard] = ()
    gated: bool | str = False
    private: bool = False
    slow: float = 0.0
    trickle: float = 0.0  # > 0: answer 200 and send one byte every `trickle` seconds, never finishing
    trickle_head: bool = False  # with trickle: the status line and headers come a byte at a time too
    ignore_range: bool = False  # answer range requests with the whole file (200), as some servers do
    oversized_config_bytes: int | None = None
    oversized_header_bytes: int | None = None
    branches: Mapping[str, str] = field(default_factory=dict)  # extra refs: name -> sha (same files)
    extra_files: Mapping[str, bytes] = field(default_factory=dict)
    pipeline_tag: str = "text-generation"
    tags: Sequence[str] = ("transformers", "safetensors")
    last_modified: str = "2025-05-01T12:00:00.000Z"

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{40}", self.sha):
            raise ValueError(f"{self.repo_id}: sha must be 40 lowercase hex")

    # ------------------------------------------------------------------ derived content

    @property
    def sharded(self) -> bool:
        return not (len(self.shards) == 1 and self.shards[0].filename == SINGLE_FILE)

    @property
    def tensors(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        out: dict[str, tuple[str, tuple[int, ...]]] = {}
        for shard in self.shards:
            out.update(shard.tensors)
        return out

    def weight_map(self) -> dict[str, str]:
        return {name: s.filename for s in self.shards for name in sorted(s.tensors)}

    def index(self) -> dict[str, Any]:
        total = sum(s.data_size for s in self.shards)
        return {"metadata": {"total_size": total}, "weight_map": dict(sorted(self.weight_map().items()))}

    def revisions(self) -> dict[str, str]:
        return {"main": self.sha, **self.branches}

    def resolve(self, revision: str) -> str | None:
        """Commit sha for a branch name or a full sha, else None."""
        refs = self.revisions()
        if revision in refs:
            return refs[revision]
        if revision in refs.values():
            return revision
        return None

    def files(self) -> dict[str, VFile]:
        files: dict[str, VFile] = {}
        if self.config is not None:
            body = (json.dumps(self.config, indent=2) + "\n").encode()
            if self.oversized_config_bytes is not None:
                size = max(self.oversized_config_bytes, len(body))
                files["config.json"] = VFile(body, size, fill=b" ", lfs=size >= LFS_THRESHOLD)
            else:
                files["config.json"] = VFile(body, len(body))
        if self.shards and self.sharded:
            body = (json.dumps(self.index(), indent=2) + "\n").encode()
            files[INDEX_FILE] = VFile(body, len(body))
        for shard in self.shards:
            if self.oversized_header_bytes is not None:
                n = self.oversized_header_bytes
                files[shard.filename] = VFile(n.to_bytes(8, "little"), 8 + n, fill=b" ", lfs=True)
            else:
                prefix = shard.header()
                files[shard.filename] = VFile(prefix, len(prefix) + shard.data_size, lfs=True)
        for name, data in self.extra_files.items():
            files[name] = VFile(data, len(data), lfs=len(data) >= LFS_THRESHOLD)
        return dict(sorted(files.items()))

    def parameters_by_dtype(self) -> dict[str, int]:
        """The Hub's ``safetensors.parameters``: Σ numel per dtype (packed tensors as stored)."""
        out: Counter[str] = Counter()
        for dtype, shape in self.tensors.values():
            out[dtype] += sth.numel(shape)
        return dict(sorted(out.items()))


def expected_bytes_by_dtype(repo: FakeRepo) -> dict[str, int]:
    """Σ numel × dtype size per dtype over the repo's tensors (I32/U8 packed tensors count as stored)."""
    out: Counter[str] = Counter()
    for dtype, shape in repo.tensors.values():
        out[dtype] += sth.nbytes(dtype, shape)
    return dict(sorted(out.items()))


def expected_total_bytes(repo: FakeRepo) -> int:
    return sum(expected_bytes_by_dtype(repo).values())


# ------------------------------------------------------------------------------------------ the server


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    repo_id: str | None
    key: str  # "model_info", "tree", "safetensors-metadata", a filename, or "?" for unroutable paths
    revision: str | None
    range: str | None
    authorized: bool
    status: int
    time: float


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    # ------------------------------------------------------------------ plumbing

    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        split = urlsplit(self.path)
        query = {k: v for k, v in parse_qs(split.query).items()}
        route = _route(split.path)
        repo_id, key, revision, rest = route
        auth = self.headers.get("Authorization", "")
        self._authorized = auth == f"Bearer {TOKEN}"
        self._token_sent = bool(auth)
        self._status = 0
        self._recorded = False
        self._request = (method, repo_id, key, revision)
        try:
            repo = hub.repo(repo_id) if repo_id else None
            if repo is not None and repo.slow:
                hub._stopping.wait(repo.slow)
            if repo is not None and repo.trickle:
                self._trickle(repo.trickle, repo.trickle_head)
                return
            self._serve(method, repo_id, repo, key, revision, rest, query)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self._record()

    def _trickle(self, every: float, head: bool) -> None:
        """A byte at a time (the headers at once, or they too): every read succeeds, the answer
        never ends."""
        self._status = 200
        self._record()
        start = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        if not head:
            self.wfile.write(start)
        stream = (start if head else b"") + b" " * (1 << 20)
        deadline = time.monotonic() + 60
        for i in range(len(stream)):
            if self.server.hub._stopping.is_set() or time.monotonic() > deadline:
                break
            self.wfile.write(stream[i : i + 1])
            self.wfile.flush()
            self.server.hub._stopping.wait(every)
        self.close_connection = True

    def _record(self) -> None:
        """Once a request, before its answer is sent: a client that has its answer sees it counted."""
        if self._recorded:
            return
        self._recorded = True
        method, repo_id, key, revision = self._request
        self.server.hub._record(
            RequestRecord(
                method=method,
                path=self.path,
                repo_id=repo_id,
                key=key,
                revision=revision,
                range=self.headers.get("Range"),
                authorized=self._authorized,
                status=self._status,
                time=time.monotonic(),
            )
        )

    def _send(
        self, method: str, status: int, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> None:
        self._status = status
        self._record()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD" and body:
            self.wfile.write(body)

    def _json(self, method: str, status: int, doc: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(doc).encode()
        self._send(
            method, status, body, {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        )

    def _error(
        self,
        method: str,
        status: int,
        code: str | None,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        h = {"X-Error-Message": message, **(headers or {})}
        if code:
            h["X-Error-Code"] = code
        self._json(method, status, {"error": message}, h)

    # ------------------------------------------------------------------ routes

    def _serve(
        self,
        method: str,
        repo_id: str | None,
        repo: FakeRepo | None,
        key: str,
        revision: str | None,
        rest: str | None,
        query: dict[str, list[str]],
    ) -> None:
        if repo_id is None:
            self._error(method, 404, None, "Not Found")
            return
        if repo is None or (repo.private and not self._authorized):
            self._error(method, 404, "RepoNotFound", "Repository not found")
            return
        api = key in ("model_info", "tree", "safetensors-metadata")
        if api and method != "GET":
            self._error(method, 405, None, "Method not allowed")
            return
        sha = repo.resolve(revision or "main")
        if sha is None:
            self._error(method, 404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return
        if key == "model_info":
            self._json(method, 200, _model_info(repo, sha, query))
        elif key == "tree":
            self._json(method, 200, _tree(repo))
        elif key == "safetensors-metadata":
            self._sharded_metadata(method, repo, rest or INDEX_FILE)
        else:
            self._resolve(method, repo, sha, key)

    def _gate(self, method: str, repo: FakeRepo, extra: Mapping[str, str]) -> bool:
        """Answer as the Hub does for a gated repo; True if the request was refused."""
        if not repo.gated or self._authorized:
            return False
        if self._token_sent:
            msg = (
                f"Access to model {repo.repo_id} is restricted and you are not in the authorized list. "
                f"Visit https://huggingface.co/{repo.repo_id} to ask for access."
            )
            self._error(method, 403, "GatedRepo", msg, extra)
        else:
            msg = (
                f"Access to model {repo.repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in."
            )
            self._error(method, 401, "GatedRepo", msg, extra)
        return True

    def _sharded_metadata(self, method: str, repo: FakeRepo, filename: str) -> None:
        if self._gate(method, repo, {}):
            return
        if filename != INDEX_FILE or not repo.sharded:
            self._error(method, 404, "EntryNotFound", f"{filename} not found")
            return
        headers = {s.filename: json.loads(sth.header_json(s.tensors)) for s in repo.shards}
        self._json(method, 200, {"index": repo.index(), "headers": headers})

    def _resolve(self, method: str, repo: FakeRepo, sha: str, filename: str) -> None:
        commit = {"X-Repo-Commit": sha}
        if self._gate(method, repo, commit):
            return
        vfile = self.server.hub.files(repo.repo_id).get(filename)
        if vfile is None:
            self._error(method, 404, "EntryNotFound", "Entry not found", commit)
            return
        etag = vfile.etag
        headers = {
            **commit,
            "ETag": f'"{etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/json" if filename.endswith(".json") else "application/octet-stream",
        }
        if vfile.lfs:
            headers["X-Linked-Etag"] = f'"{etag}"'
            headers["X-Linked-Size"] = str(vfile.size)
        start, end = 0, vfile.size  # [start, end)
        status = 200
        rng = None if repo.ignore_range else self.headers.get("Range")
        if rng:
            parsed = _parse_range(rng, vfile.size)
            if parsed is None:
                self._error(
                    method,
                    416,
                    None,
                    "Range Not Satisfiable",
                    {**headers, "Content-Range": f"bytes */{vfile.size}"},
                )
                return
            start, end = parsed
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{vfile.size}"
        self._status = status
        self._record()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(end - start))
        self.end_headers()
        if method == "HEAD":
            return
        pos = start
        while pos < end:
            nxt = min(pos + _CHUNK, end)
            self.wfile.write(vfile.read(pos, nxt))
            pos = nxt


_API = re.compile(r"^/api/models/(?P<rest>.+)$")


def _route(path: str) -> tuple[str | None, str, str | None, str | None]:
    """(repo_id, key, revision, rest) for a request path; revision is percent-decoded."""
    m = _API.match(path)
    if m:
        rest = m.group("rest")
        for marker, key in (("/revision/", "model_info"), ("/tree/", "tree")):
            if marker in rest:
                repo_id, tail = rest.split(marker, 1)
                revision = unquote(tail.split("/", 1)[0])
                return repo_id, key, revision, None
        if "/safetensors-metadata/" in rest:
            repo_id, tail = rest.split("/safetensors-metadata/", 1)
            return repo_id, "safetensors-metadata", None, unquote(tail)
        return rest.rstrip("/"), "model_info", None, None
    parts = path.lstrip("/").split("/")
    for n in (2, 1):  # "org/name/resolve/..." or "name/resolve/..."
        if len(parts) > n + 2 and parts[n] == "resolve":
            return "/".join(parts[:n]), unquote("/".join(parts[n + 2 :])), unquote(parts[n + 1]), None
    return None, "?", None, None


def _parse_range(value: str, size: int) -> tuple[int, int] | None:
    """One ``bytes=`` range → [start, end), or None if unsatisfiable/unsupported."""
    m = re.fullmatch(r"\s*bytes=(\d*)-(\d*)\s*", value)
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):  # suffix: last N bytes
        n = int(m.group(2))
        return (max(size - n, 0), size) if n > 0 and size > 0 else None
    start = int(m.group(1))
    end = int(m.group(2)) + 1 if m.group(2) else size
    if start >= size or end <= start:
        return None
    return start, min(end, size)


def _model_info(repo: FakeRepo, sha: str, query: dict[str, list[str]]) -> dict[str, Any]:
    files = repo.files()
    blobs = query.get("blobs", ["false"])[0].lower() == "true"
    siblings: list[dict[str, Any]] = []
    for name, vf in files.items():
        sib: dict[str, Any] = {"rfilename": name}
        if blobs:
            sib["size"] = vf.size
            sib["blobId"] = vf.git_sha1
            if vf.lfs:
                sib["lfs"] = {"size": vf.size, "sha256": vf.sha256, "pointerSize": 134}
        siblings.append(sib)
    org = repo.repo_id.split("/")[0] if "/" in repo.repo_id else None
    cfg = dict(repo.config or {})
    info: dict[str, Any] = {
        "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
        "id": repo.repo_id,
        "modelId": repo.repo_id,
        "author": org,
        "sha": sha,
        "lastModified": repo.last_modified,
        "createdAt": "2025-04-28T00:00:00.000Z",
        "private": repo.private,
        "gated": repo.gated,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "library_name": "transformers",
        "pipeline_tag": repo.pipeline_tag,
        "tags": list(repo.tags),
        "config": {k: cfg[k] for k in ("architectures", "model_type", "quantization_config") if k in cfg},
        "cardData": None,
        "siblings": siblings,
        "spaces": [],
        "usedStorage": sum(vf.size for vf in files.values()),
    }
    if repo.shards:
        params = repo.parameters_by_dtype()
        info["safetensors"] = {"parameters": params, "total": sum(params.values())}
    expand = query.get("expand")
    if expand:
        wanted = {"_id", "id", *expand}
        info = {k: v for k, v in info.items() if k in wanted}
    return info


def _tree(repo: FakeRepo) -> list[dict[str, Any]]:
    out = []
    for name, vf in repo.files().items():
        entry: dict[str, Any] = {"type": "file", "oid": vf.git_sha1, "size": vf.size, "path": name}
        if vf.lfs:
            entry["lfs"] = {"oid": vf.sha256, "size": vf.size, "pointerSize": 134}
        out.append(entry)
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    hub: FakeHub


class FakeHub:
    """A running fake Hub. ``url`` is its endpoint; ``requests`` counts requests per ``(repo_id, key)``
    where key is ``"model_info"``, ``"tree"``, ``"safetensors-metadata"`` or the requested filename (all
    methods); ``log`` keeps every request as a ``RequestRecord``."""

    def __init__(self, repos: Iterable[FakeRepo] = ()) -> None:
        self._lock = threading.Lock()
        self._repos: dict[str, FakeRepo] = {}
        self._files: dict[str, dict[str, VFile]] = {}
        self._stopping = threading.Event()
        self.requests: Counter[tuple[str | None, str]] = Counter()
        self.log: list[RequestRecord] = []
        for repo in repos:
            self.add(repo)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.hub = self
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token(self) -> str:
        return TOKEN

    def start(self) -> FakeHub:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fakehub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wake handlers sleeping for `slow`
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ------------------------------------------------------------------ repos

    def add(self, repo: FakeRepo) -> None:
        files = repo.files()
        with self._lock:
            self._repos[repo.repo_id] = repo
            self._files[repo.repo_id] = files

    def remove(self, repo_id: str) -> None:
        with self._lock:
            self._repos.pop(repo_id, None)
            self._files.pop(repo_id, None)

    def update(self, repo_id: str, **changes: Any) -> FakeRepo:
        """Replace fields of a repo (e.g. ``slow=0``, ``sha=...`` to simulate a push to main)."""
        repo = dataclasses.replace(self.repo_or_raise(repo_id), **changes)
        self.add(repo)
        return repo

    def repo(self, repo_id: str) -> FakeRepo | None:
        with self._lock:
            return self._repos.get(repo_id)

    def repo_or_raise(self, repo_id: str) -> FakeRepo:
        repo = self.repo(repo_id)
        if repo is None:
            raise KeyError(repo_id)
        return repo

    def files(self, repo_id: str) -> dict[str, VFile]:
        with self._lock:
            return self._files.get(repo_id, {})

    # ------------------------------------------------------------------ observation

    def _record(self, rec: RequestRecord) -> None:
        with self._lock:
            self.requests[(rec.repo_id, rec.key)] += 1
            self.log.append(rec)

    def count(self, repo_id: str | None = None, key: str | None = None, method: str | None = None) -> int:
        """Requests matching every given filter (repo, key as in ``requests``, HTTP method)."""
        with self._lock:
            return sum(
                1
                for r in self.log
                if (repo_id is None or r.repo_id == repo_id)
                and (key is None or r.key == key)
                and (method is None or r.method == method)
            )

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.log.clear()


@contextlib.contextmanager
def serve_hub(repos: Iterable[FakeRepo] = ()) -> Iterator[FakeHub]:
    """Run a fake Hub on 127.0.0.1 (free port) serving ``repos`` for the duration of the block."""
    hub = FakeHub(repos).start()
    try:
        yield hub
    finally:
        hub.stop()


#: The environment's proxy settings (httpx reads both spellings): empty, the Hub is asked directly.
PROXY_VARIABLES = tuple(
    v for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY") for v in (name, name.lower())
)
NO_PROXIES = dict.fromkeys(PROXY_VARIABLES, "")


def isolate_hf_client(monkeypatch: Any, cache_dir: Any, endpoint: str | None = None) -> None:
    """Point the process-wide huggingface_hub settings away from the user's machine, for one test.

    ``endpoint=`` arguments reach HfApi/hf_hub_download, but some settings are read from module constants at
    import time (so env vars set later do nothing): the default cache (used by ``get_safetensors_metadata``'s
    internal download of the index), the token file, offline mode. This patches them with ``monkeypatch``.
    """
    from huggingface_hub import close_session, constants

    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    # The loopback Hub is reached directly: a proxy of the machine's (read when the HTTP client is
    # made) would not reach it.
    if any(os.environ.get(var) for var in PROXY_VARIABLES):
        for var in PROXY_VARIABLES:
            monkeypatch.delenv(var, raising=False)
        close_session()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(cache_dir) + "/no-token")
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(cache_dir) + "/no-stored-tokens")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", True)
    if endpoint is not None:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        monkeypatch.setattr(
            constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        )
