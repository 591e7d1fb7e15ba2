"""Request bodies and connections held to their bounds on a real server (uvicorn, httptools, a
loopback socket), issue 30 items 1 and 2: a body that arrives too slowly, in total or in rate, gets
408 and a closed connection; a body that would take a worker past its in-flight byte budget gets 503
with Retry-After at once; connections past the bound are refused at once (probes still answered);
every refusal is counted; full-speed bodies, large ones included, are answered as before; /healthz
stays prompt while 200 slow bodies are held. The servers run with short bounds so the suite stays
short (the defaults are in docs/operations.md)."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from kvplan.api.protocol import STREAMED_ROUTES
from kvplan.api.settings import Settings
from tests.live import Server, connect, read_until_closed, start_server

pytestmark = pytest.mark.server

KiB = 1024
MiB = 1024 * 1024
TOTAL = 2.5  # KVPLAN_BODY_TIMEOUT_SECONDS of the `live` server
GRACE = 1.0  # KVPLAN_BODY_RATE_GRACE_SECONDS
RATE = 4 * KiB  # KVPLAN_BODY_MIN_BYTES_PER_SECOND
BUDGET = 8 * MiB  # KVPLAN_BODY_BUDGET_BYTES
LOG = (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_bytes()
BUDGET_HEAD = b"POST /v1/budget HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
A = b'{"model":"llama-3-70b","gpu":"pool-160gib","weights_bytes":139586437120,"context_tokens":8192}'


@pytest.fixture(scope="module")
def live() -> Iterator[Server]:
    s = start_server(
        env={
            "KVPLAN_BODY_TIMEOUT_SECONDS": str(TOTAL),
            "KVPLAN_STREAMED_BODY_TIMEOUT_SECONDS": str(TOTAL * 2),
            "KVPLAN_BODY_RATE_GRACE_SECONDS": str(GRACE),
            "KVPLAN_BODY_MIN_BYTES_PER_SECOND": str(RATE),
            "KVPLAN_BODY_BUDGET_BYTES": str(BUDGET),
        }
    )
    yield s
    s.stop()


def _send(s: socket.socket, data: bytes) -> bool:
    """Send all of it; False once the server has closed (or answered and closed) the connection."""
    try:
        s.sendall(data)
    except OSError:
        return False
    return True


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.") else 0


def _rejected(server: Server, reason: str) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    m = re.search(rf'^kvplan_http_connections_rejected_total\{{reason="{reason}"\}} (\S+)$', text, re.M)
    return float(m.group(1)) if m else 0.0


def _requests(server: Server, path: str, status: int) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("kvplan_http_requests_total{") and f'path="{path}"' in line:
            total += float(line.split()[-1]) if f'status_code="{status}"' in line else 0.0
    return total


def _healthz_ms(server: Server) -> float:
    t0 = time.perf_counter()
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
    return (time.perf_counter() - t0) * 1000


def _trickle(
    s: socket.socket, piece: bytes, every: float, until: float, done: threading.Event | None = None
) -> None:
    """Send `piece` every `every` seconds until the server stops reading, `until` (monotonic) or
    `done` is set."""
    done = done or threading.Event()
    while time.monotonic() < until and not done.is_set():
        if not _send(s, piece):
            return
        done.wait(every)


def _trickle_then_read(s: socket.socket, piece: bytes, every: float, until: float) -> tuple[bytes, float]:
    """Trickle in a thread while reading the answer here: (everything read, when it started to come).
    The trickle goes on until the server has closed the connection, then stops (rather than
    sleeping out its interval until a send finds the connection gone)."""
    done = threading.Event()
    sender = threading.Thread(target=_trickle, args=(s, piece, every, until, done), daemon=True)
    sender.start()
    first = b""
    with contextlib.suppress(OSError):
        first = s.recv(65536)
    answered = time.monotonic()
    rest = read_until_closed(s) if first else b""
    done.set()
    sender.join(until - time.monotonic() + 5)
    return first + rest, answered


def test_the_streamed_routes_table_agrees_with_the_routes():
    from kvplan.api.routes.reconcile import reconcile_post
    from kvplan.api.routes.simulate import simulate_post

    assert STREAMED_ROUTES[b"/v1/reconcile"] == reconcile_post.request_max_body_size
    assert STREAMED_ROUTES[b"/v1/simulate"] == simulate_post.request_max_body_size


def test_a_body_past_its_total_time_gets_408_and_a_closed_connection(live):
    before = _rejected(live, "body_timeout")
    counted_before = _requests(live, "/v1/budget", 408)
    with connect(live) as s:
        start = time.monotonic()
        # 1 MiB declared, sent at 10 KiB/s: above the minimum rate, but 2.5 s give it 25 KiB.
        assert _send(s, BUDGET_HEAD + b"Content-Length: %d\r\n\r\n" % MiB)
        answer, answered = _trickle_then_read(s, b" " * KiB, 0.1, start + TOTAL + 5)
    assert _status(answer) == 408, answer[:200]
    assert b"within 2.5 seconds" in answer
    assert TOTAL - 0.1 < answered - start < TOTAL + 0.5
    assert b"connection: close" in answer.lower()
    assert _rejected(live, "body_timeout") == before + 1
    assert _requests(live, "/v1/budget", 408) == counted_before + 1  # the app counted it too
    assert _healthz_ms(live) < 100


@pytest.mark.parametrize("sent", [0, 1000, 3 * KiB])
def test_a_body_below_the_minimum_rate_after_the_grace_gets_408(live, sent):
    before = _rejected(live, "body_too_slow")
    with connect(live) as s:
        start = time.monotonic()
        assert _send(s, BUDGET_HEAD + b"Content-Length: %d\r\n\r\n" % MiB + b" " * sent)
        # Then one byte a second: the attack of issue 30, scaled to this server's bounds.
        answer, answered = _trickle_then_read(s, b" ", 1.0, start + TOTAL + 5)
    assert _status(answer) == 408, answer[:200]
    assert b"bytes a second" in answer
    # Cut when its average falls under RATE: at the end of the grace, or later if it sent more first.
    due = max(GRACE, sent / RATE)
    assert due - 0.1 < answered - start < due + 0.5
    assert _rejected(live, "body_too_slow") == before + 1


def test_a_slow_chunked_body_gets_408_too(live):
    with connect(live) as s:
        start = time.monotonic()
        assert _send(s, BUDGET_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + b"10\r\n" + b" " * 16 + b"\r\n")
        answer, answered = _trickle_then_read(s, b"1\r\n \r\n", 0.5, start + TOTAL + 5)
    assert _status(answer) == 408
    assert GRACE - 0.1 < answered - start < GRACE + 0.5


def test_a_body_that_keeps_the_rate_is_answered(live):
    # 60 KiB over 1.5 s (40 KiB/s, well above the minimum), past the grace: the body bounds allow it.
    body = A[:-1] + b" " * (60 * KiB) + b"}"
    with connect(live) as s:
        assert _send(s, BUDGET_HEAD + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        for i in range(0, len(body), 4 * KiB):
            assert _send(s, body[i : i + 4 * KiB])
            time.sleep(0.1)
        answer = read_until_closed(s)
    assert _status(answer) == 200, answer[:300]


def _padded_log(size: int) -> bytes:
    filler = b"2026-11-30T12:00:00.5Z INFO 11-30 12:00:00 [loader.py:42] loading shard, padding line\n"
    return LOG + filler * ((size - len(LOG)) // len(filler) + 1)


def _log_json(size: int) -> bytes:
    """A pasted log of about `size` bytes, planned from the preset (the tests have no Hub)."""
    return msgspec.json.encode({"log": _padded_log(size).decode(), "overrides": {"model": "llama-3.1-70b"}})


def test_a_5mb_pasted_log_at_full_speed_is_read_as_before(live):
    body = _log_json(5 * MiB)
    assert len(body) > 5 * MiB
    r = httpx.post(
        f"{live.url}/v1/reconcile", content=body, headers={"content-type": "application/json"}, timeout=60
    )
    assert r.status_code == 200, r.text[:300]
    assert r.json()["rows"]


def test_a_full_1mib_body_at_full_speed_is_answered(live):
    body = A[:-1] + b" " * (MiB - len(A) - 10) + b"}"
    assert len(body) < MiB
    r = httpx.post(f"{live.url}/v1/budget", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text[:300]


def _hold(server: Server, declared: int, n: int, path: bytes = b"/v1/budget") -> list[socket.socket]:
    """n connections, each declaring a body of `declared` bytes and sending 10 bytes of it."""
    held = []
    for _ in range(n):
        s = connect(server)
        assert _send(s, b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{   " % (path, declared))
        held.append(s)
    time.sleep(0.2)
    return held


def test_a_declared_body_beyond_the_byte_budget_gets_503_at_once(live):
    before = _rejected(live, "body_budget")
    held = _hold(live, MiB, 7)  # 7 MiB of the 8 held for bodies still arriving
    try:
        with connect(live) as s:
            t0 = time.monotonic()
            log = _log_json(2 * MiB)
            _send(s, b"POST /v1/reconcile HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(log))
            answer = read_until_closed(s)  # answered on the head alone: no body was sent
            elapsed = time.monotonic() - t0
        assert _status(answer) == 503, answer[:200]
        assert re.search(rb"(?i)\r\nretry-after: 1\r\n", answer)
        assert b"bytes of request bodies" in answer
        assert elapsed < 0.5
        assert _rejected(live, "body_budget") == before + 1
        # What is left (1 MiB) still takes a body that fits, and a body-less request is untouched.
        r = httpx.post(f"{live.url}/v1/budget", content=A, headers={"content-type": "application/json"})
        assert r.status_code == 200
        assert _healthz_ms(live) < 100
    finally:
        for s in held:
            s.close()
    time.sleep(0.2)  # the held bodies are released when their connections close
    r = httpx.post(
        f"{live.url}/v1/reconcile", content=_log_json(2 * MiB), headers={"content-type": "application/json"}
    )
    assert r.status_code == 200, r.text[:200]


def test_a_chunked_body_counts_as_it_arrives_and_is_refused_past_the_budget(live):
    before = _rejected(live, "body_budget")
    with connect(live) as s:
        _send(s, b"POST /v1/reconcile HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        result: list[bytes] = []
        reader = threading.Thread(target=lambda: result.append(read_until_closed(s)))
        reader.start()
        chunk = b"x" * 65536
        sent = 0
        while sent < BUDGET + 2 * MiB and _send(s, b"10000\r\n" + chunk + b"\r\n"):
            sent += len(chunk)
        reader.join(10)
    assert _status(result[0]) == 503, result[0][:200]
    assert re.search(rb"(?i)\r\nretry-after: 1\r\n", result[0])
    assert _rejected(live, "body_budget") == before + 1


def test_declared_bodies_over_the_size_limit_are_not_held(live):
    # 5 × 2 MiB declared (10 MiB, past the 8 MiB budget), each past /v1/budget's 1 MiB limit: the app
    # answers them 413 and discards what comes, so they hold nothing and a body that fits is taken.
    held = _hold(live, 2 * MiB, 5)
    try:
        r = httpx.post(f"{live.url}/v1/budget", content=A, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text[:200]
    finally:
        for s in held:
            s.close()


def test_healthz_stays_prompt_while_200_slow_bodies_are_held():
    server = start_server()  # the default body bounds: these 200 stay for the 5 s grace
    held: list[socket.socket] = []
    try:
        assert _rejected(server, "body_too_slow") == 0
        held = _hold(server, 100_000, 200)
        probes = []
        t_end = time.monotonic() + 3
        while time.monotonic() < t_end:
            for s in held[::10]:
                _send(s, b" ")
            probes.append(_healthz_ms(server))
            time.sleep(0.02)
        probes.sort()
        assert probes[int(len(probes) * 0.99) - 1] < 100, probes[-5:]
        # All 200 were held (none refused), and each is cut once its grace has passed.
        assert _rejected(server, "body_budget") == 0 and _rejected(server, "body_too_slow") == 0
        for s in held:
            s.settimeout(10)
        answers = [read_until_closed(s) for s in held]
        assert {_status(a) for a in answers} == {408}
        assert _rejected(server, "body_too_slow") == 200
    finally:
        for s in held:
            s.close()
        server.stop()


@pytest.fixture(scope="module")
def bounded() -> Iterator[Server]:
    s = start_server(env={"KVPLAN_MAX_CONNECTIONS": "20", "KVPLAN_HEADER_TIMEOUT_SECONDS": "10"})
    yield s
    s.stop()


def test_connections_past_the_bound_are_refused_at_once_and_counted(bounded):
    before = _rejected(bounded, "connection_limit")
    idle = [connect(bounded) for _ in range(20)]
    try:
        time.sleep(0.2)
        # A request on a connection past the bound: 503 at once, then closed.
        with connect(bounded) as s:
            t0 = time.monotonic()
            _send(s, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_until_closed(s)
            elapsed = time.monotonic() - t0
        assert _status(answer) == 503, answer[:200]
        assert re.search(rb"(?i)\r\nretry-after: 1\r\n", answer)
        assert elapsed < 0.5
        # One that sends nothing is closed within a second, not the 10 s head timeout.
        with connect(bounded) as s:
            t0 = time.monotonic()
            assert read_until_closed(s) == b""
            assert time.monotonic() - t0 < 1.5
        # One that trickles a head gets its 503 after that second.
        with connect(bounded) as s:
            t0 = time.monotonic()
            _send(s, b"GET /v1/mod")
            answer = read_until_closed(s)
            assert _status(answer) == 503
            assert 0.9 < time.monotonic() - t0 < 1.5
        # A probe past the bound is still answered (then the connection closes).
        with connect(bounded) as s:
            t0 = time.monotonic()
            _send(s, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_until_closed(s)
        assert _status(answer) == 200 and answer.endswith(b'{"status":"ok"}')
        assert time.monotonic() - t0 < 0.5
        assert _rejected(bounded, "connection_limit") == before + 3
    finally:
        for s in idle:
            s.close()
    time.sleep(0.2)
    # Under the bound again: served as usual, kept alive.
    with httpx.Client(base_url=bounded.url) as c:
        assert c.get("/v1/models").status_code == 200
        assert c.get("/v1/models").status_code == 200


def test_the_settings_have_their_documented_defaults():
    s = Settings()
    assert (s.body_timeout_seconds, s.streamed_body_timeout_seconds) == (30.0, 120.0)
    assert (s.body_min_rate, s.body_rate_grace_seconds) == (16 * KiB, 5.0)
    assert (s.body_budget_bytes, s.max_connections) == (32 * MiB, 2048)
    doc = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    for name in ("KVPLAN_BODY_TIMEOUT_SECONDS", "KVPLAN_STREAMED_BODY_TIMEOUT_SECONDS",
                 "KVPLAN_BODY_MIN_BYTES_PER_SECOND", "KVPLAN_BODY_RATE_GRACE_SECONDS",
                 "KVPLAN_BODY_BUDGET_BYTES", "KVPLAN_MAX_CONNECTIONS"):  # fmt: skip
        assert f"`{name}`" in doc, name


def test_a_stalled_body_declared_past_the_size_limit_gets_its_413_not_a_408():
    # Content-Length past the route's limit, then silence: the app answers 413 and drains for at most
    # the header timeout; the body's rate bound (0.5 s grace here) must not answer 408 over it.
    server = start_server(
        env={
            "KVPLAN_HEADER_TIMEOUT_SECONDS": "2",
            "KVPLAN_BODY_RATE_GRACE_SECONDS": "0.5",
            "KVPLAN_BODY_MIN_BYTES_PER_SECOND": str(RATE),
        }
    )
    try:
        for path, size in (
            (b"/v1/budget", 2 * MiB),
            (b"/v1/reconcile", 2 * STREAMED_ROUTES[b"/v1/reconcile"]),
        ):
            s = connect(server)
            head = BUDGET_HEAD.replace(b"/v1/budget", path)
            _send(s, head + f"Content-Length: {size}\r\n\r\n".encode() + b"{")
            t0 = time.monotonic()
            answer = read_until_closed(s)
            s.close()
            assert _status(answer) == 413, (path, answer[:200])
            assert time.monotonic() - t0 < 6
        assert _healthz_ms(server) < 1000
    finally:
        server.stop()


def test_chunked_trailers_count_against_the_budget(live):
    # uvicorn keeps every trailer of a chunked body (appended to the request's headers): a body of
    # 64 KiB then trailers at full speed took a worker to gigabytes. They now count against the
    # worker's byte budget: 503 at once past it, long before the body's time bound.
    s = connect(live)
    head = BUDGET_HEAD.replace(b"/v1/budget", b"/v1/reconcile") + b"Transfer-Encoding: chunked\r\n\r\n"
    t0 = time.monotonic()
    _send(s, head + b"10000\r\n" + b"a" * 0x10000 + b"\r\n0\r\n")
    trailer = (b"x-t: " + b"y" * 1000 + b"\r\n") * 1000
    sender = threading.Thread(target=_trickle, args=(s, trailer, 0, t0 + 4 * TOTAL), daemon=True)
    sender.start()
    answer = read_until_closed(s)
    answered = time.monotonic() - t0
    s.close()
    sender.join(4 * TOTAL + 5)
    assert _status(answer) == 503, answer[:200]
    assert answered < TOTAL, answered
    assert _healthz_ms(live) < 1000
