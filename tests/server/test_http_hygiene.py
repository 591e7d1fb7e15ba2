"""Hostile HTTP against the real server (uvicorn, httptools, a socket): oversized and slow request
heads, idle connections, early answers to large bodies, HEAD framing (issue 11). After each test
/healthz still answers promptly. The server here runs with 1-second header and keep-alive
timeouts so the suite stays short; the size bound is the default (32 KiB)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from kvplan.api.settings import Settings
from tests.live import Server, connect, read_until_closed, start_server

pytestmark = pytest.mark.server

TIMEOUT = 1.0  # KVPLAN_HEADER_TIMEOUT_SECONDS and KVPLAN_KEEP_ALIVE_SECONDS of this server
HEAD_LIMIT = Settings().header_max_bytes
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def live() -> Iterator[Server]:
    s = start_server(
        env={"KVPLAN_HEADER_TIMEOUT_SECONDS": str(TIMEOUT), "KVPLAN_KEEP_ALIVE_SECONDS": str(TIMEOUT)}
    )
    yield s
    s.stop()


@pytest.fixture(autouse=True)
def _healthz_prompt_afterwards(live: Server) -> Iterator[None]:
    yield
    start = time.monotonic()
    assert httpx.get(f"{live.url}/healthz", timeout=2).status_code == 200
    assert time.monotonic() - start < 0.5


def _send(s: socket.socket, data: bytes) -> None:
    """Send all of it; the server may answer and close before the end (a broken pipe here)."""
    with contextlib.suppress(OSError):
        s.sendall(data)


def _read_response(s: socket.socket) -> bytes:
    """One response with a Content-Length, read whole."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = s.recv(65536)
        assert chunk
        body += chunk
    return head + b"\r\n\r\n" + body


def _rss_mib(server: Server) -> float:
    with open(f"/proc/{server.proc.pid}/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0


def _get_healthz(s: socket.socket) -> None:
    """One whole request on the connection, answered 200: the connection is now kept alive."""
    _send(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _status(_read_response(s)) == 200


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (HEAD_LIMIT + 1) + b"\r\n\r\n",
            id="one-header-over",
        ),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * MiB + b"\r\n\r\n", id="1MiB-header"
        ),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 64 * MiB + b"\r\n\r\n", id="64MiB-header"
        ),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
            + b"".join(b"X-H%d: v\r\n" % i for i in range(5000))
            + b"\r\n",
            id="5000-small-headers",
        ),
        pytest.param(b"GET /v1/models?" + b"q=1&" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", id="80KiB-url"),
        pytest.param(b"GET /v1/models/" + b"m" * MiB + b" HTTP/1.1\r\nHost: x\r\n\r\n", id="1MiB-model-id"),
        pytest.param(
            b"POST /v1/budget HTTP/1.1\r\nHost: x\r\nCookie: " + b"c" * 4 * MiB + b"\r\n\r\n",
            id="4MiB-cookie-post",
        ),
    ],
)
def test_an_oversized_request_head_gets_431_at_once(live, head):
    start = time.monotonic()
    with connect(live) as s:
        _send(s, head)
        answer = read_until_closed(s)
    assert _status(answer) == 431
    assert b"application/problem+json" in answer
    assert time.monotonic() - start < 1.5


@pytest.mark.parametrize("size", [1024, 16 * 1024, HEAD_LIMIT - 200])
def test_a_head_within_the_limit_is_answered(live, size):
    with connect(live) as s:
        _send(
            s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"p" * size + b"\r\n\r\n"
        )
        answer = read_until_closed(s)
    assert _status(answer) == 200
    assert answer.endswith(b'{"status":"ok"}')


def test_many_connections_of_unfinished_heads_cost_no_memory(live):
    before = _rss_mib(live)
    conns = []
    try:
        for _ in range(100):
            s = connect(live)
            _send(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 4 * MiB)
            conns.append(s)
        assert httpx.get(f"{live.url}/healthz", timeout=2).status_code == 200
        assert _rss_mib(live) - before < 20  # before the bound: +415 MB
    finally:
        for s in conns:
            s.close()


@pytest.mark.parametrize(
    "partial",
    [
        pytest.param(b"GE", id="half-a-method"),
        pytest.param(b"GET /healthz HTTP/1.1\r\n", id="request-line-only"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1", id="unfinished-header"),
        pytest.param(b"\r\n\r\n\r\n", id="blank-lines-only"),
    ],
)
def test_a_head_that_stops_arriving_gets_408_after_the_timeout(live, partial):
    start = time.monotonic()
    with connect(live) as s:
        _send(s, partial)
        answer = read_until_closed(s)
    elapsed = time.monotonic() - start
    assert TIMEOUT * 0.9 < elapsed < TIMEOUT + 2.5  # answered, then a moment to read it
    assert _status(answer) == 408


def test_a_head_trickled_a_byte_at_a_time_is_cut_off_at_the_timeout(live):
    start = time.monotonic()
    answer = b""
    with connect(live) as s:
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 100:
            try:
                s.send(bytes([byte]))
            except OSError:
                break
            time.sleep(0.05)
            if time.monotonic() - start > TIMEOUT + 0.3:
                break
        s.settimeout(5)
        answer = read_until_closed(s)
    assert _status(answer) == 408


def test_a_connection_that_sends_nothing_is_closed(live):
    start = time.monotonic()
    with connect(live) as s:
        assert read_until_closed(s) == b""
    assert TIMEOUT * 0.9 < time.monotonic() - start < TIMEOUT + 1


def test_an_idle_kept_alive_connection_is_closed(live):
    with connect(live) as s:
        _get_healthz(s)
        start = time.monotonic()
        assert read_until_closed(s) == b""
    assert TIMEOUT * 0.8 < time.monotonic() - start < TIMEOUT + 1


def test_a_later_head_on_a_kept_alive_connection_gets_its_own_timeout(live):
    # The connection's timer was armed when it opened; the second head starts halfway through
    # that and must still get a whole timeout of its own, then a 408.
    with connect(live) as s:
        _get_healthz(s)
        time.sleep(TIMEOUT / 2)
        start = time.monotonic()
        _send(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1")
        answer = read_until_closed(s)
    assert TIMEOUT * 0.9 < time.monotonic() - start < TIMEOUT + 2.5
    assert _status(answer) == 408


def test_a_kept_alive_connection_serves_requests_sent_in_time(live):
    with connect(live) as s:
        for _ in range(3):
            _get_healthz(s)
            time.sleep(TIMEOUT / 2)


def test_head_and_get_pipelined_on_one_connection_stay_framed(live):
    with connect(live) as s:
        _send(
            s,
            b"HEAD /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
            b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        answer = read_until_closed(s)
    parts = answer.split(b"HTTP/1.1 ")
    assert [p[:3] for p in parts[1:]] == [b"200", b"200", b"200"]
    assert answer.endswith(b'{"status":"ok"}')  # the HEADs carried no body


def _post_2mib(live: Server, how: str) -> bytes:
    body = b"x" * 2 * MiB
    head = b"POST /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if how == "http1.0":
        head = head.replace(b"HTTP/1.1", b"HTTP/1.0")
    if how == "close":
        head += b"Connection: close\r\n"
    with connect(live) as s:
        if how == "chunked":
            _send(s, head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
            for i in range(0, len(body), 65536):
                _send(s, b"10000\r\n" + body[i : i + 65536] + b"\r\n")
            _send(s, b"0\r\n\r\n")
        else:
            _send(s, head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        s.settimeout(10)
        try:
            return s.recv(65536)
        except OSError as e:
            return repr(e).encode()


@pytest.mark.parametrize("how", ["keep-alive", "close", "http1.0", "chunked"])
def test_a_2mib_post_reads_its_413_every_time(live, how):
    answers = [_post_2mib(live, how) for _ in range(20)]
    assert [_status(a) for a in answers] == [413] * 20, {a[:80] for a in answers}


def test_a_body_past_the_drain_bound_still_gets_its_413_said_with_close(live):
    # 16 MiB: more than KVPLAN_UNREAD_BODY_BYTES (8 MiB) is not read; the answer says so.
    with connect(live) as s:
        body = b"x" * 16 * MiB
        result: list[bytes] = []

        def read() -> None:
            s.settimeout(10)
            result.append(read_until_closed(s))

        reader = threading.Thread(target=read)
        reader.start()
        _send(s, b"POST /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        reader.join(15)
    answer = result[0]
    assert _status(answer) == 413
    assert b"connection: close" in answer.lower()
