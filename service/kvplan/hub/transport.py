"""A whole-fetch deadline for huggingface_hub's HTTP client. httpx bounds each connect and read,
not a response: a Hub that trickles one byte a second never trips a read timeout and would hold a
fetch thread for ever. The transport checks the calling thread's deadline before each request
and between the chunks of each body."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from huggingface_hub import set_client_factory
from huggingface_hub.utils import disable_progress_bars

_local = threading.local()


class DeadlinePassed(httpx2.ReadTimeout):
    """The fetch as a whole ran out of time (a read timeout to huggingface_hub's callers)."""


def _check() -> None:
    deadline = getattr(_local, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlinePassed("the Hub fetch ran past its deadline")


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every Hub request this thread makes inside the block ends by then."""
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = None


class _Body(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            _check()
            yield chunk

    def close(self) -> None:
        self.inner.close()


class DeadlineTransport(httpx2.BaseTransport):
    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        _check()
        response = self.inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            response.stream = _Body(response.stream)
        return response

    def close(self) -> None:
        self.inner.close()


def _client() -> httpx2.Client:
    # huggingface_hub's default client (utils/_http.py default_client_factory) over our transport.
    from huggingface_hub.utils._http import hf_request_event_hook

    return httpx2.Client(
        event_hooks={"request": [hf_request_event_hook]},
        follow_redirects=True,
        timeout=None,
        transport=DeadlineTransport(httpx2.HTTPTransport()),
    )


_installed = False
_lock = threading.Lock()


def install() -> None:
    """Once a process: huggingface_hub's client gets the deadline transport, and no progress
    bars (they would interleave with the service's JSON log lines)."""
    global _installed
    with _lock:
        if not _installed:
            set_client_factory(_client)
            disable_progress_bars()
            _installed = True
