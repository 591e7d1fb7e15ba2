"""A whole-fetch deadline for huggingface_hub's HTTP client. httpx bounds each connect and read,
not a response: a Hub that trickles one byte a second (in its headers or its body) never trips a
read timeout and would hold a fetch thread for ever. Every socket read and write of a fetching
thread is bounded by what is left of its deadline, and none starts after it has passed: through a
proxy the environment names too (its CONNECT tunnel or forwarded request), so a proxy that stalls
holds a thread no longer than the Hub could."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2
from huggingface_hub import set_client_factory
from huggingface_hub.utils import disable_progress_bars

from .errors import HubUnavailable

_local = threading.local()


def _left(timeout: float | None) -> float | None:
    """The timeout for one socket operation: the caller's, cut to what the deadline leaves."""
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore2.ReadTimeout("the Hub fetch ran past its deadline")
    return left if timeout is None else min(timeout, left)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every Hub request this thread makes inside the block ends by then."""
    _local.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.deadline = None


class _Stream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        return _Stream(self.inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        return _Stream(self.inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _bounded(transport: httpx2.BaseTransport) -> httpx2.BaseTransport:
    """The transport with its connection pool on our network backend. httpx's transport takes no
    backend as an argument; every pool httpcore builds for it (direct, HTTP proxy: CONNECT
    tunnels and forwarding, SOCKS) opens and uses its sockets through `_network_backend`."""
    pool = getattr(transport, "_pool", None)
    assert isinstance(pool, httpcore2.ConnectionPool), transport  # HTTPProxy and SOCKSProxy are ones
    pool._network_backend = _Backend()
    return transport


class _Client(httpx2.Client):
    """httpx's client as it builds itself (limits, TLS settings and proxies from the environment:
    HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY, read when the client is made), every
    transport it makes, the proxies' too, on the deadline-bounded backend."""

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.BaseTransport:
        return _bounded(super()._init_transport(*args, **kwargs))

    def _init_proxy_transport(self, *args: Any, **kwargs: Any) -> httpx2.BaseTransport:
        return _bounded(super()._init_proxy_transport(*args, **kwargs))


def _client() -> httpx2.Client:
    # huggingface_hub's default client (utils/_http.py default_client_factory), on our backend.
    from huggingface_hub.utils._http import hf_request_event_hook

    try:
        return _Client(event_hooks={"request": [hf_request_event_hook]}, follow_redirects=True, timeout=None)
    except (ImportError, ValueError) as e:  # a SOCKS proxy (socksio is not installed), an odd scheme
        # Not the Hub asked directly instead: the operator named a proxy. huggingface_hub makes
        # the client again on the next fetch.
        raise HubUnavailable(f"the proxy the environment names cannot be used: {e}") from None


_installed = False
_lock = threading.Lock()


def install() -> None:
    """Once a process: huggingface_hub's client gets the deadline, and no progress bars (they
    would interleave with the service's JSON log lines)."""
    global _installed
    with _lock:
        if not _installed:
            set_client_factory(_client)
            disable_progress_bars()
            _installed = True
