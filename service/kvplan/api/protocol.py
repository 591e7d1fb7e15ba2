"""uvicorn's httptools protocol, with bounds on request heads, request bodies and connections.

Why a subclass: with httptools, uvicorn bounds neither the size nor the arrival time of a request
head. `h11_max_incomplete_event_size` only applies to the h11 protocol; httptools buffers a header
value whole (re-concatenating it on every read: a 64 MiB header cost 5 s of CPU and its size in
memory), and a connection that opens and sends nothing is never closed (uvicorn's keep-alive timer
is armed only after a response). h11 bounds the head's size but not its time, and costs about a
third of the throughput on these machines (GET /v1/budget: 4,760 req/s against 6,820 with
httptools), so kvplan keeps httptools and adds the bounds here, at the one place that sees bytes
before they are parsed:

- head size: the request line and headers may take at most `header_max_bytes`
  (KVPLAN_HEADER_MAX_BYTES); past that the answer is 431 and the connection closes. Bytes are
  counted as they arrive, and a read that crosses the limit is parsed only up to it, so the bound is
  exact for a head that starts a read (every head but one pipelined behind a body in the same read;
  those are off by less than one read).
- head time: a head must be complete within `header_timeout_seconds` of the connection opening, or
  of the first byte of a later request on a kept-alive connection; else 408 (a connection that sent
  nothing just closes). Idle kept-alive connections close after uvicorn's `timeout_keep_alive`.
- body time: a body must be whole within its route's total time of its head, and, once its grace
  has passed, must have arrived at least at the minimum rate on average (`BodyBound`; a small table
  by path gives routes whose bodies are large by design their own). Else 408, counted as
  `body_timeout` or `body_too_slow`.
- bytes in flight: the body bytes of requests still arriving count against one budget a worker
  (`body_budget_bytes`): a declared Content-Length is reserved whole when its head completes (a body
  past the route's size limit is not held, it is answered 413 and discarded), a chunked body counts
  as it arrives, as read off the wire (framing, chunk extensions and trailers too: uvicorn keeps
  every trailer; the bytes of the read that completes its head are not counted). A body that
  would exceed the budget gets 503 with Retry-After at once.
- connections: past `max_connections` open at once, a new connection is refused at once: 503 with
  Retry-After to its first request, or closed if nothing comes within OVER_BOUND_HEAD_SECONDS;
  /healthz, /readyz and /metrics are answered on it (then it closes), so probes and scrapes hold
  under a flood.

Every refusal is counted in kvplan_http_connections_rejected_total{reason}. A connection has at most
one timer, re-armed lazily for whichever bound is next (head or body): a keep-alive connection under
load would otherwise arm and cancel a timer for every request (about 2 µs each), and a body that
arrives in the same read as its head never touches the timer at all.

A refusal answered here closes the connection: it is half-closed and what the client still sends is
read and discarded for a moment (up to LINGER_BYTES or LINGER_SECONDS), so a client still writing
reads the answer instead of a connection reset. When a body is refused while its request is already
with the app, the answer is written here and the app's next read of the body sees the refusal
(`hygiene.REFUSED`), so the app answers the same status into the closed cycle and counts it.
"""

from __future__ import annotations

import asyncio
import http
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kvplan.core.limits import MAX_LOG_BYTES, MAX_TRACE_BYTES

from . import metrics
from .hygiene import REFUSED
from .settings import Settings

MiB = 1 << 20
LINGER_SECONDS = 2.0
# uvloop's clock and timers tick in milliseconds: a bound within this of its deadline has reached
# it (re-arming for less would fire at once, again and again, until the millisecond turns).
_TIMER_SLACK = 0.002
LINGER_BYTES = 1024 * 1024
OVER_BOUND_HEAD_SECONDS = 1.0
"""A connection past the connection bound must send its head within this long (or its own head
timeout, if shorter): it is only ever answered a 503 or a probe."""
PROBE_PATHS = frozenset({b"/healthz", b"/readyz", b"/metrics"})
"""Answered even past the connection bound: kubelet probes and Prometheus scrapes come on new
connections, and a flood is when they matter most. Each is cheap and answered from memory."""
BUDGET_RETRY_SECONDS = 1
CONNECTIONS_RETRY_SECONDS = 1


@dataclass(frozen=True)
class BodyBound:
    """How a route's request body must arrive: whole within `seconds` of its head, at `min_rate`
    bytes a second on average once `grace` seconds have passed (0: no rate bound). `max_bytes` is
    the route's body size limit (Litestar's request_max_body_size for it): a declared body above it
    is answered 413 and discarded, so it is not held and not counted against the budget. `holds` is
    the most of a body the worker holds at once, counted against the budget: the whole body, but for
    a route that reads its body as it streams (READ_AS_IT_STREAMS)."""

    seconds: float
    min_rate: int
    grace: float
    max_bytes: int
    holds: int


@dataclass(frozen=True)
class Limits:
    head_bytes: int
    head_seconds: float
    body: BodyBound
    routes: dict[bytes, BodyBound]
    budget: int
    connections: int


STREAMED_ROUTES: dict[bytes, int] = {
    # A pasted vLLM start-up log: routes/reconcile.py takes MAX_LOG_BYTES + 4 MiB of body
    # (tests/server/test_body_bounds.py checks the two agree).
    b"/v1/reconcile": MAX_LOG_BYTES + 4 * MiB,
    # A recorded trace: routes/simulate.py takes MAX_TRACE_BYTES of body.
    b"/v1/simulate": MAX_TRACE_BYTES,
}
"""Routes whose bodies are large or streamed by design, with their body size limit: they get
`streamed_body_timeout_seconds` instead of `body_timeout_seconds`."""
READ_AS_IT_STREAMS = frozenset({b"/v1/simulate"})
"""Routes that read a large body as it streams, a line at a time, and keep none of it (a trace):
uvicorn stops reading the socket while 64 KiB wait for the app, so such a body holds at most
`max_body_bytes` (the JSON body the route also takes, which it holds whole) of the budget. Counting
it whole refused a 40 MB trace, chunked, with a 503 "retry shortly" that never succeeds."""


@cache
def _limits() -> Limits:
    """The bounds, read from the environment once per worker process."""
    s = Settings()
    body = BodyBound(
        s.body_timeout_seconds, s.body_min_rate, s.body_rate_grace_seconds, s.max_body_bytes, s.max_body_bytes
    )
    routes = {
        path: BodyBound(
            s.streamed_body_timeout_seconds,
            s.body_min_rate,
            s.body_rate_grace_seconds,
            size,
            min(size, s.max_body_bytes) if path in READ_AS_IT_STREAMS else size,
        )
        for path, size in STREAMED_ROUTES.items()
    }
    return Limits(
        s.header_max_bytes, s.header_timeout_seconds, body, routes, s.body_budget_bytes, s.max_connections
    )


class _Budget:
    """The body bytes this worker holds for requests still arriving (one event loop: no lock)."""

    held = 0


def _problem(status: int, detail: str, retry_after: int | None = None) -> bytes:
    phrase = http.HTTPStatus(status).phrase
    body = msgspec.json.encode({"title": phrase, "status": status, "detail": detail})
    retry = f"retry-after: {retry_after}\r\n" if retry_after is not None else ""
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/problem+json\r\n{retry}"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with bounds on each request head and body, on the body bytes a worker holds
    and on its open connections (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = _limits()
        self.max_head_bytes, self.head_timeout = self.limits.head_bytes, self.limits.head_seconds
        self._in_head = True  # the next bytes belong to a request line or headers
        self._head_bytes = 0
        self._heads = 0  # heads completed on this connection
        self._head_deadline: float | None = None  # loop time the current head must be complete by
        # One timer at a time per connection, re-armed lazily (see the module).
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._rejected = False  # answered here: what follows is discarded, then the connection closes
        self._discarded = 0
        self._over_bound = False  # opened past the connection bound
        # The body now arriving, if any.
        self._body: BodyBound | None = None
        self._body_start = 0.0
        self._body_bytes = 0
        self._body_armed = False
        self._chunked = False
        self._held = 0  # bytes of the budget this connection's body holds

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.connections:
            self._over_bound = True
            self.head_timeout = min(self.head_timeout, OVER_BOUND_HEAD_SECONDS)
        self._start_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._release()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed bytes to the HTTP parser while bounding the request head: past its size the connection gets
        a 431 and what follows is discarded (up to a limit, then closed); the head timer runs only while
        a head is arriving, the body timer only while a body is."""
        if self._rejected:
            self._discarded += len(data)
            if self._discarded > LINGER_BYTES:
                self.transport.close()
            return
        if not self._in_head:
            if self._chunked and self._body is not None and self._charge(len(data)):
                return
            super().data_received(data)
        else:
            if self._head_deadline is None:  # the first byte of a request after a kept-alive idle time
                self._start_head()
            room = self.max_head_bytes - self._head_bytes
            if len(data) <= room:
                self._head_bytes += len(data)
                super().data_received(data)
            else:
                # This read crosses the limit: parse only up to it; the head must end within that part.
                self._head_bytes = self.max_head_bytes
                heads = self._heads
                if room > 0:
                    super().data_received(data[:room])
                    if self.transport.is_closing() or self.parser is None:  # a parse error, answered 400
                        return
                if self._heads == heads:
                    self._reject(
                        431,
                        f"The request line and headers are larger than {self.max_head_bytes} bytes.",
                        "header_too_large",
                    )
                    return
                super().data_received(data[room:])
        body = self._body
        if body is not None and not self._body_armed and not self._rejected:
            # A body still arriving after this read: from now on its bound needs the timer.
            self._body_armed = True
            self._arm(self._body_start + min(body.seconds, body.grace))

    # httptools callbacks

    def on_headers_complete(self) -> None:
        """A head has arrived: past the connection bound only a probe is served; a body to come is reserved
        against the worker's byte budget (a declared length whole, 503 at once when it does not fit) and
        its clock starts, with the route's bound; then the request goes to uvicorn."""
        if self._rejected:  # a request pipelined behind a refused one
            return
        self._head_deadline = None  # the pending timer, if any, finds no head and lapses
        self._in_head = False
        self._heads += 1
        length = -1
        chunked = False
        for name, value in self.headers:
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = -1
            elif name == b"transfer-encoding":
                chunked = True
        path = self.url.partition(b"?")[0]
        if self._over_bound and not (path in PROBE_PATHS and length <= 0 and not chunked):
            self._refuse_connection()
            return
        bound = self.limits.routes.get(path, self.limits.body)
        # A declared body past the route's size limit is neither held nor timed here: the app answers
        # it 413 at once and reads what comes for at most `unread_body_seconds` (hygiene's drain), so
        # the answer on the wire is that 413, never a 408 of a body nobody wants.
        if chunked or 0 < length <= bound.max_bytes:
            if not chunked:
                held = min(length, bound.holds)
                if _Budget.held + held > self.limits.budget:
                    self._reject(503, self._budget_detail(length), "body_budget", BUDGET_RETRY_SECONDS)
                    return
                _Budget.held += held
                self._held = held
            self._body = bound
            self._body_start = self.loop.time()
            self._body_bytes = 0
            self._body_armed = False
            self._chunked = chunked
        super().on_headers_complete()
        if self._over_bound and self.cycle is not None:
            self.cycle.keep_alive = False  # a probe answered past the bound: then the connection closes

    def on_body(self, body: bytes) -> None:
        if self._rejected:
            return
        if self._body is not None:
            self._body_bytes += len(body)
            body_bound = self._body
            if (
                self._chunked
                and body_bound.holds < body_bound.max_bytes
                and self._body_bytes > body_bound.holds
            ):
                # A body read as it streams: its bytes past what it holds are not held (framing and
                # trailers stay charged).
                back = min(len(body), self._body_bytes - body_bound.holds, self._held)
                _Budget.held -= back
                self._held -= back
        super().on_body(body)

    def _charge(self, n: int) -> bool:
        """Count `n` bytes of a chunked body as they come off the wire, framing, chunk extensions and
        trailers included (uvicorn keeps every trailer, appended to the request's headers: 2.7 GB of
        them took the worker to 3.4 GB of memory), against the worker's budget; True when refused.
        Of the body's own bytes, on_body gives back what passes BodyBound.holds."""
        _Budget.held += n
        self._held += n
        if _Budget.held > self.limits.budget:
            self._refuse_body(503, self._budget_detail(None), "body_budget", BUDGET_RETRY_SECONDS)
            return True
        return False

    def on_message_complete(self) -> None:
        if self._rejected:
            return
        if self._body is not None:
            self._body = None  # the pending timer, if any, finds no body and lapses
            self._release()
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0

    # the bounds

    def _start_head(self) -> None:
        self._head_deadline = self.loop.time() + self.head_timeout
        self._arm(self._head_deadline)

    def _arm(self, when: float) -> None:
        """Make sure the timer fires by `when`: a pending one due sooner is kept (it re-arms itself)."""
        if self._timer is not None:
            if self._timer_at <= when + _TIMER_SLACK:
                return
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.loop.call_at(when, self._timed_out)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _release(self) -> None:
        if self._held:
            _Budget.held -= self._held
            self._held = 0

    def _timed_out(self) -> None:
        """The connection's one timer fired: answer 408 to a head or a body past its bound (a body also
        when, after its grace, it averages under the minimum rate), close a connection that never sent a
        byte, or re-arm for the next bound that is still ahead."""
        self._timer = None
        if self._rejected or self.transport.is_closing():
            return
        now = self.loop.time()
        if self._in_head:
            deadline = self._head_deadline
            if deadline is None:  # between requests: the keep-alive timer bounds that
                return
            if deadline - now > _TIMER_SLACK:  # armed for an earlier head or body: time is left
                self._arm(deadline)
                return
            if self._head_bytes == 0 and self._heads == 0:
                # A connection that never sent a byte: nothing to answer.
                reason = "connection_limit" if self._over_bound else "header_timeout"
                metrics.CONNECTIONS_REJECTED.labels(reason).inc()
                self.transport.close()
                return
            if self._over_bound:
                self._refuse_connection()
                return
            self._reject(
                408,
                f"The request line and headers did not arrive within {self.head_timeout:g} seconds.",
                "header_timeout",
            )
            return
        body = self._body
        if body is None:
            return
        elapsed = now - self._body_start
        if elapsed >= body.seconds - _TIMER_SLACK:
            self._refuse_body(
                408,
                f"The request body did not arrive within {body.seconds:g} seconds "
                f"({self._body_bytes} bytes came).",
                "body_timeout",
            )
            return
        rate_due = body.seconds  # the elapsed time at which the rate bound could next be passed
        if body.min_rate > 0:
            rate_due = max(body.grace, self._body_bytes / body.min_rate)
            if elapsed >= rate_due - _TIMER_SLACK:
                self._refuse_body(
                    408,
                    f"The request body is arriving at {self._body_bytes / elapsed:,.0f} bytes a second; "
                    f"after its first {body.grace:g} seconds at least {body.min_rate:,} are needed.",
                    "body_too_slow",
                )
                return
        self._arm(self._body_start + min(body.seconds, rate_due))

    def _refuse_connection(self) -> None:
        self._reject(
            503,
            f"This worker holds {self.limits.connections} connections, its bound: retry shortly.",
            "connection_limit",
            CONNECTIONS_RETRY_SECONDS,
        )

    def _budget_detail(self, declared: int | None) -> str:
        what = f"A body of {declared:,} bytes" if declared is not None else "This body"
        return (
            f"{what} would exceed the {self.limits.budget:,} bytes of request bodies this worker holds "
            "for requests still arriving: retry shortly."
        )

    def _refuse_body(self, status: int, detail: str, reason: str, retry_after: int | None = None) -> None:
        """Refuse the body now arriving: answer `status` and close. Its request is with the app
        already (its head was let through): the app's next read sees REFUSED, and its own answer
        goes nowhere (the one on the wire is this one) but is counted and logged as usual."""
        self._body = None
        self._release()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.scope[REFUSED] = (status, detail, retry_after)  # type: ignore[literal-required]
        if self.pipeline or (cycle is not None and cycle.response_started):
            # An answer is on the wire already (an early one, or an earlier pipelined request's):
            # no second one; the connection closes when it ends.
            metrics.CONNECTIONS_REJECTED.labels(reason).inc()
            self._cancel_timer()
            self._rejected = True
            if cycle is not None and not cycle.response_complete:
                cycle.keep_alive = False
            else:
                self.transport.close()
            return
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's reads now end, its writes go nowhere
            cycle.message_event.set()
        self._reject(status, detail, reason, retry_after, force=True)

    def _reject(
        self, status: int, detail: str, reason: str, retry_after: int | None = None, force: bool = False
    ) -> None:
        metrics.CONNECTIONS_REJECTED.labels(reason).inc()
        self._cancel_timer()
        self._rejected = True
        self._release()
        if not force and self.cycle is not None and not self.cycle.response_complete:
            # A request is still being answered on this connection: let it finish, then close.
            self.cycle.keep_alive = False
            return
        self._unset_keepalive_if_required()
        self.transport.write(_problem(status, detail, retry_after))
        self.flow.resume_reading()
        try:
            self.transport.write_eof()
        except (NotImplementedError, RuntimeError, OSError):
            self.transport.close()
            return
        self.loop.call_later(LINGER_SECONDS, self.transport.close)
