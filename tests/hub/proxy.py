"""An HTTP proxy on loopback for tests, of the kind HTTPS_PROXY / HTTP_PROXY name.

Usage::

    with serve_proxy() as proxy:                  # forwards: plain HTTP and CONNECT tunnels
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        ...
        proxy.seen  # every request line it was sent, e.g. "CONNECT 127.0.0.1:4431 HTTP/1.1"

Modes: ``forward`` answers as a proxy does (origins on 127.0.0.1 only); ``silent`` accepts and
reads the request, then says nothing; ``trickle`` answers one byte every ``every`` seconds and
never ends its head (each read succeeds, so only a deadline ends the wait). With ``tls``, a CONNECT
tunnel's TLS ends at the proxy (that context's certificate) and goes on to the origin in plain HTTP:
an https endpoint in front of the plain fake Hub.
"""

from __future__ import annotations

import contextlib
import select
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

_STALL = b"HTTP/1.1 200 OK\r\nX-Stall: " + b"." * 100_000


class LoopbackProxy:
    def __init__(self, mode: str = "forward", every: float = 0.05, tls: ssl.SSLContext | None = None) -> None:
        assert mode in ("forward", "silent", "trickle"), mode
        self.mode, self.every, self.tls = mode, every, tls
        self.seen: list[str] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def start(self) -> LoopbackProxy:
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wakes a handler blocked reading its client or the origin
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for t in list(self._threads):
            t.join(timeout=5)
        self._listener.close()

    # ---------------------------------------------------------------------------------- plumbing

    def _spawn(self, target: object, *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True, name="loopback-proxy")  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(t)
        t.start()

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.append(conn)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._track(conn)
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError), conn, conn.makefile("rb") as reader:
            conn.settimeout(30)
            while not self._stopping.is_set():
                head = _read_head(reader)
                if not head:
                    return
                line = head[0].decode("latin-1").rstrip("\r\n")
                with self._lock:
                    self.seen.append(line)
                if self.mode == "silent":
                    self._stopping.wait(60)
                    return
                if self.mode == "trickle":
                    for i in range(len(_STALL)):
                        if self._stopping.wait(self.every):
                            return
                        conn.sendall(_STALL[i : i + 1])
                    return
                method, target, _ = line.split(" ", 2)
                if method == "CONNECT":
                    self._tunnel(conn, target)
                    return
                self._forward(conn, reader, method, target, head[1:])

    def _forward(
        self, conn: socket.socket, reader: BinaryIO, method: str, target: str, headers: list[bytes]
    ) -> None:
        """One request to its origin (one connection each, closed by it), the whole answer back."""
        url = urlsplit(target)
        assert url.scheme == "http" and url.hostname == "127.0.0.1", target  # loopback only
        length = 0
        kept = []
        for h in headers[:-1]:  # the last is the blank line
            name = h.split(b":", 1)[0].strip().lower()
            if name == b"content-length":
                length = int(h.split(b":", 1)[1])
            if name not in (b"connection", b"proxy-connection", b"proxy-authorization", b"keep-alive"):
                kept.append(h)
        body = reader.read(length) if length else b""
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        request = (
            f"{method} {path} HTTP/1.1\r\n".encode() + b"".join(kept) + b"Connection: close\r\n\r\n" + body
        )
        with socket.create_connection(("127.0.0.1", url.port or 80), timeout=30) as origin:
            self._track(origin)
            origin.sendall(request)
            answer = b""
            while chunk := origin.recv(1 << 16):
                answer += chunk
        conn.sendall(answer)

    def _tunnel(self, conn: socket.socket, target: str) -> None:
        host, _, port = target.rpartition(":")
        assert host == "127.0.0.1", target  # loopback only
        with socket.create_connection((host, int(port)), timeout=30) as origin:
            self._track(origin)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if self.tls is None:
                self._relay(conn, origin)
                return
            with self.tls.wrap_socket(conn, server_side=True) as client:
                self._track(client)
                self._relay(client, origin)

    def _relay(self, a: socket.socket, b: socket.socket) -> None:
        while not self._stopping.is_set():
            ready = [a] if isinstance(a, ssl.SSLSocket) and a.pending() else []
            if not ready:
                ready, _, _ = select.select([a, b], [], [], 0.05)
            for s in ready:
                data = s.recv(1 << 16)
                if not data:
                    return
                (b if s is a else a).sendall(data)


def _read_head(reader: BinaryIO) -> list[bytes]:
    lines: list[bytes] = []
    while True:
        line = reader.readline(1 << 16)
        if not line:
            return []
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return lines


@contextlib.contextmanager
def serve_proxy(
    mode: str = "forward", every: float = 0.05, tls: ssl.SSLContext | None = None
) -> Iterator[LoopbackProxy]:
    """A proxy on 127.0.0.1 (free port) for the duration of the block."""
    proxy = LoopbackProxy(mode, every, tls).start()
    try:
        yield proxy
    finally:
        proxy.stop()


def loopback_tls(directory: Path) -> tuple[ssl.SSLContext, Path] | None:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and the file a client
    trusts it by (SSL_CERT_FILE); None without the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = directory / "loopback.pem", directory / "loopback.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, cert
