"""A real `kvplan serve` process on a free loopback port, for the server, browser and contract tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: IO[bytes]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
            finally:
                self.log.close()
        self.log.close()
        return self.proc.returncode


def start_server(workers: int = 1, env: dict[str, str] | None = None) -> Server:
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - owned by Server, closed in stop()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kvplan",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        env={**os.environ, "KVPLAN_DRAIN_SECONDS": "10", **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            message = log.read().decode()[-2000:]
            log.close()
            raise RuntimeError(f"server exited: {message}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return Server(proc, url, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    log.close()
    raise RuntimeError("server did not become ready in 60 s")


def read_until_closed(s: socket.socket) -> bytes:
    """Everything until the server closes (a reset after the answer counts as the end)."""
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            raise
        except OSError:
            return out
        if not chunk:
            return out
        out += chunk


def connect(server: Server) -> socket.socket:
    """A raw socket to the server, Nagle off, for tests that write HTTP byte by byte."""
    host, port = server.url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
