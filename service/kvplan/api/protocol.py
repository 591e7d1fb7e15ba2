"""uvicorn's httptools protocol, with bounds on the request head and on connections that send nothing.

Why a subclass: with httptools, uvicorn bounds neither the size nor the arrival time of a request
head. `h11_max_incomplete_event_size` only applies to the h11 protocol; httptools buffers a header
value whole (re-concatenating it on every read: a 64 MiB header cost 5 s of CPU and its size in
memory), and a connection that opens and sends nothing is never closed (uvicorn's keep-alive timer
is armed only after a response). h11 bounds the head's size but not its time, and costs about a
third of the throughput on these machines (GET /v1/budget: 4,760 req/s against 6,820 with
httptools), so kvplan keeps httptools and adds the bounds here, at the one place that sees bytes
before they are parsed:

- size: the request line and headers may take at most `header_max_bytes` (KVPLAN_HEADER_MAX_BYTES);
  past that the answer is 431 and the connection closes. Bytes are counted as they arrive, and a
  read that crosses the limit is parsed only up to it, so the bound is exact for a head that starts
  a read (every head but one pipelined behind a body in the same read; those are off by less than
  one read).
- time: a head must be complete within `header_timeout_seconds` of the connection opening, or of
  the first byte of a later request on a kept-alive connection; else 408 (a connection that sent
  nothing just closes). Idle kept-alive connections close after uvicorn's `timeout_keep_alive`.

After a 431 or 408 the connection is half-closed and what the client still sends is read and
discarded for a moment (up to LINGER_BYTES or LINGER_SECONDS), so a client still writing its
oversized head reads the answer instead of a connection reset.
"""

from __future__ import annotations

import asyncio
import http
from functools import cache
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from . import metrics
from .settings import Settings

LINGER_SECONDS = 2.0
# uvloop's clock and timers tick in milliseconds: a head within this of its deadline has reached
# it (re-arming for less would fire at once, again and again, until the millisecond turns).
_TIMER_SLACK = 0.002
LINGER_BYTES = 1024 * 1024


@cache
def _limits() -> tuple[int, float]:
    """The bounds, read from the environment once per worker process."""
    settings = Settings()
    return settings.header_max_bytes, settings.header_timeout_seconds


def _problem(status: int, detail: str) -> bytes:
    phrase = http.HTTPStatus(status).phrase
    body = msgspec.json.encode({"title": phrase, "status": status, "detail": detail})
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a size and a time bound on each request head (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_head_bytes, self.head_timeout = _limits()
        self._in_head = True  # the next bytes belong to a request line or headers
        self._head_bytes = 0
        self._heads = 0  # heads completed on this connection
        # One timer at a time per connection, re-armed lazily: a keep-alive connection under load
        # would otherwise arm and cancel a timer for every request (about 2 µs each).
        self._head_deadline: float | None = None  # loop time the current head must be complete by
        self._head_timer: asyncio.TimerHandle | None = None
        self._rejected = False  # answered 431/408: what follows is discarded, then the connection closes
        self._discarded = 0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Feed bytes to the HTTP parser while bounding the request head: past its size the connection gets
        a 431 and what follows is discarded (up to a limit, then closed); the head timer runs only while
        a head is arriving."""
        if self._rejected:
            self._discarded += len(data)
            if self._discarded > LINGER_BYTES:
                self.transport.close()
            return
        if not self._in_head:
            super().data_received(data)
            return
        if self._head_deadline is None:  # the first byte of a request after a kept-alive idle time
            self._start_head()
        room = self.max_head_bytes - self._head_bytes
        if len(data) <= room:
            self._head_bytes += len(data)
            super().data_received(data)
            return
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

    # httptools callbacks

    def on_headers_complete(self) -> None:
        self._head_deadline = None  # the pending timer, if any, finds no head and lapses
        self._in_head = False
        self._heads += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._head_bytes = 0

    # the bounds

    def _start_head(self) -> None:
        self._head_deadline = self.loop.time() + self.head_timeout
        if self._head_timer is None:
            self._head_timer = self.loop.call_at(self._head_deadline, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        deadline = self._head_deadline
        if deadline is None or self._rejected or not self._in_head or self.transport.is_closing():
            return
        if deadline - self.loop.time() > _TIMER_SLACK:  # armed for an earlier head: time is left
            self._head_timer = self.loop.call_at(deadline, self._head_timed_out)
            return
        if self._head_bytes == 0 and self._heads == 0:
            # A connection that never sent a byte: nothing to answer.
            metrics.CONNECTIONS_REJECTED.labels("header_timeout").inc()
            self.transport.close()
            return
        self._reject(
            408,
            f"The request line and headers did not arrive within {self.head_timeout:g} seconds.",
            "header_timeout",
        )

    def _reject(self, status: int, detail: str, reason: str) -> None:
        metrics.CONNECTIONS_REJECTED.labels(reason).inc()
        self._cancel_head_timer()
        self._rejected = True
        if self.cycle is not None and not self.cycle.response_complete:
            # A request is still being answered on this connection: let it finish, then close.
            self.cycle.keep_alive = False
            return
        self._unset_keepalive_if_required()
        self.transport.write(_problem(status, detail))
        self.flow.resume_reading()
        try:
            self.transport.write_eof()
        except (NotImplementedError, RuntimeError, OSError):
            self.transport.close()
            return
        self.loop.call_later(LINGER_SECONDS, self.transport.close)
