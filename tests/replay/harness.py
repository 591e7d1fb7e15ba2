"""What the recorder and the replay test share: the app under test, the loopback Hub it reads Hub
ids from, how one recorded request is sent, and how its answer is written down.

Both build the app as tests/api/conftest.py does (`TestClient(create_app(registry=...))` on the
built-in presets) with the fake Hub of tests/hub/fakehub.py serving tests/hub/repos.py, an empty
Hub cache in a temporary directory and no KVPLAN_* or HF_* setting from the caller's environment.
Requests are sent one at a time, in the recorded order: answers that depend on earlier ones (a
Hub model fetched once and then read from memory, a repeated scenario answered from the answer
cache) see the same history at replay as at recording.

What is normalised (it varies between two runs of the same code, nothing else does):
- the fake Hub's address (`http://127.0.0.1:<free port>`) in answer bodies, which Hub errors
  name, becomes HUB_URL (a Content-Length that counted the raw body counts the normalised one);
- answers whose content is a clock or a counter are not compared byte for byte: the record says
  which parts are `unchecked` (the body and length of /metrics; Last-Modified and ETag of static
  files, which Litestar derives from the file's mtime).
Request ids are not normalised: every request sends its own `X-Request-ID`, which problem bodies
echo, so they are the same at every run.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from kvplan.api.app import create_app
from kvplan.hub import reset_default_hub
from kvplan.presets import Registry, load_registry
from tests.hub.fakehub import TOKEN, FakeHub, isolate_hf_client, serve_hub
from tests.hub.repos import ALL_REPOS

HERE = Path(__file__).parent
RECORDING = HERE / "recording.jsonl.gz"
HUB_URL = "http://fakehub.invalid"
# Phases, in the order a recording walks them: the Hub answering without a token, with the token
# that opens gated repos, offline (the disk cache of what was fetched), and down (the server gone).
PHASES = ("online", "token", "offline", "down")
# Response headers never recorded: the request id echoes the X-Request-ID each request sends, and
# HTTP/1.1 plumbing the test client adds is not the service's answer.
IGNORED_HEADERS = frozenset({"x-request-id", "date", "server", "connection", "keep-alive"})


@dataclass
class Req:
    """One request as recorded: the path and query string exactly as sent, the headers set on it
    (besides those the test client always sends) and the body."""

    method: str
    path: str
    query: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None
    endpoint: str = ""  # the route template, for counting ("GET /v1/models/{model_id}")
    phase: str = "online"
    unchecked: tuple[str, ...] = ()  # "body" and/or header names not compared

    @property
    def url(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")


@dataclass
class Answer:
    status: int
    content_type: str
    headers: list[tuple[str, str]]
    body: bytes


def encode_bytes(data: bytes) -> dict[str, Any]:
    """Bytes as JSON: text when they are UTF-8, base64 otherwise; a long run of one repeated
    piece as the piece and its count."""
    if len(data) > 65536:
        for size in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
            piece = data[:size]
            if len(data) % size == 0 and piece * (len(data) // size) == data:
                return {**encode_bytes(piece), "repeat": len(data) // size}
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def decode_bytes(doc: dict[str, Any] | None) -> bytes | None:
    if doc is None:
        return None
    data = doc["text"].encode("utf-8") if "text" in doc else base64.b64decode(doc["b64"])
    return data * doc.get("repeat", 1)


def req_to_json(r: Req) -> dict[str, Any]:
    out: dict[str, Any] = {"endpoint": r.endpoint, "method": r.method, "path": r.path, "query": r.query}
    if r.headers:
        out["headers"] = [list(h) for h in r.headers]
    out["body"] = None if r.body is None else encode_bytes(r.body)
    if r.phase != "online":
        out["phase"] = r.phase
    if r.unchecked:
        out["unchecked"] = list(r.unchecked)
    return out


def req_from_json(doc: dict[str, Any]) -> Req:
    return Req(
        method=doc["method"],
        path=doc["path"],
        query=doc["query"],
        headers=[(k, v) for k, v in doc.get("headers", [])],
        body=decode_bytes(doc["body"]),
        endpoint=doc["endpoint"],
        phase=doc.get("phase", "online"),
        unchecked=tuple(doc.get("unchecked", ())),
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalise(
    raw_status: int, headers: Iterable[tuple[str, str]], body: bytes, hub_url: str, req: Req
) -> Answer:
    """The answer as recorded and compared: the Hub's address replaced, the headers that are not
    the service's answer dropped (see the module docstring), header names lower case and sorted."""
    clean = body.replace(hub_url.encode(), HUB_URL.encode()) if hub_url else body
    kept: list[tuple[str, str]] = []
    content_type = ""
    for name, value in headers:
        name = name.lower()
        if name in IGNORED_HEADERS or name in req.unchecked:
            continue
        if name == "content-type":
            content_type = value
        if name == "content-length" and clean is not body and value == str(len(body)):
            value = str(len(clean))
        kept.append((name, value))
    if "body" in req.unchecked:
        clean = b""
        kept = [(n, v) for n, v in kept if n != "content-length"]
    return Answer(raw_status, content_type, sorted(kept), clean)


def send(client: TestClient, req: Req, hub_url: str, request_id: str) -> Answer:
    headers = list(req.headers)
    if not any(name.lower() == "x-request-id" for name, _ in headers):
        headers.append(("x-request-id", request_id))
    r = client.request(req.method, req.url, content=req.body, headers=headers)
    return normalise(r.status_code, r.headers.multi_items(), r.content, hub_url, req)


def request_id(index: int) -> str:
    return f"replay-{index:05d}"


class Service:
    """The app under test and its Hub, walked through the phases in order."""

    def __init__(self, client: TestClient, hub: FakeHub, mp: pytest.MonkeyPatch, cache: Path) -> None:
        self.client = client
        self.hub = hub
        self.mp = mp
        self.cache = cache
        self.hub_url = hub.url
        self.phase = "online"

    def enter(self, phase: str) -> None:
        if phase == self.phase:
            return
        if PHASES.index(phase) < PHASES.index(self.phase):
            raise ValueError(f"phase {phase} after {self.phase}: a recording walks {PHASES} in order")
        while self.phase != phase:
            self.phase = PHASES[PHASES.index(self.phase) + 1]
            if self.phase == "token":
                self.mp.setenv("HF_TOKEN", TOKEN)
            elif self.phase == "offline":
                self.mp.delenv("HF_TOKEN", raising=False)
                self.mp.setenv("HF_HUB_OFFLINE", "1")
            elif self.phase == "down":
                self.mp.delenv("HF_HUB_OFFLINE", raising=False)
                self.hub.stop()
            reset_default_hub()

    def send(self, index: int, req: Req) -> Answer:
        self.enter(req.phase)
        return send(self.client, req, self.hub_url, request_id(index))


@contextlib.contextmanager
def service(registry: Registry | None = None) -> Iterator[Service]:
    """The app (built as tests/api/conftest.py builds it) with the fake Hub up and an empty Hub
    cache; the process's Hub settings are restored afterwards."""
    registry = registry or load_registry(extra_dir="")
    with (
        tempfile.TemporaryDirectory(prefix="kvplan-replay-") as tmp,
        pytest.MonkeyPatch.context() as mp,
        serve_hub(ALL_REPOS) as hub,
    ):
        cache = Path(tmp)
        for name in list(os.environ):
            if name.startswith(("KVPLAN_", "HF_", "HUGGING_FACE_")):
                mp.delenv(name)
        isolate_hf_client(mp, cache / "hub", endpoint=hub.url)
        mp.setenv("HF_HOME", str(cache))
        mp.setenv("HF_HUB_CACHE", str(cache / "hub"))
        reset_default_hub()
        try:
            with TestClient(create_app(registry=registry)) as client:
                yield Service(client, hub, mp, cache)
        finally:
            reset_default_hub()


def answer_to_json(a: Answer, full_body: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": a.status,
        "content_type": a.content_type,
        "response_headers": [list(h) for h in a.headers],
        "sha256": sha256(a.body),
        "length": len(a.body),
    }
    if full_body:
        out["response_body"] = encode_bytes(a.body)
    return out


def write_recording(path: Path, records: Iterable[dict[str, Any]]) -> None:
    # No file name and mtime 0 in the gzip header: the same recording is the same bytes.
    with path.open("wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")


def read_recording(path: Path = RECORDING) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]
