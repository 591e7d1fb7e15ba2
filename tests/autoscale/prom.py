"""Debian's `prometheus` and `promtool` for the tests that run them (`make prometheus-deps`
installs them): found on PATH, else the test is skipped, and fails under CI, which must run it.
A Prometheus server on a free loopback port with a config and a rules file the test writes."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.live import free_port


def binary(name: str) -> str:
    """The path of `name`, or skip the module (fail it under CI)."""
    path = shutil.which(name)
    if path is not None:
        return path
    if os.environ.get("CI"):
        pytest.fail(f"{name} is missing: `make test` installs it (make prometheus-deps: Debian's prometheus)")
    pytest.skip(
        f"{name} is not installed: the Prometheus tests need Debian's prometheus (make prometheus-deps)",
        allow_module_level=True,
    )


class Prometheus:
    """A real Prometheus: storage in `directory`, the web API on 127.0.0.1, ready when started."""

    def __init__(self, path: str, directory: Path, config: dict[str, Any], groups: list[dict[str, Any]]):
        rules = directory / "rules.yml"
        rules.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
        settings = directory / "prometheus.yml"
        settings.write_text(yaml.safe_dump({**config, "rule_files": [str(rules)]}, sort_keys=False))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log_path = directory / "prometheus.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    path,
                    f"--config.file={settings}",
                    f"--storage.tsdb.path={directory / 'data'}",
                    f"--web.listen-address={self.url.removeprefix('http://')}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(base_url=self.url, timeout=10)
        self._wait_ready()

    def _wait_ready(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited {self.proc.returncode}: {self.log()}")
            try:
                if self.client.get("/-/ready").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"prometheus was not ready in {seconds:g} s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector `expr` evaluates to now: [{"metric": {labels}, "value": [t, "v"]}]."""
        answer = self.client.get("/api/v1/query", params={"query": expr})
        body = answer.json()
        assert answer.status_code == 200 and body["status"] == "success", (expr, body)
        assert body["data"]["resultType"] == "vector", (expr, body)
        return list(body["data"]["result"])

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
