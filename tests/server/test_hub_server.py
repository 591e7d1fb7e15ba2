"""A real `kvplan serve` reading Hub models from a Hub-compatible server on loopback: a burst of
requests for one uncached repo fetches it once, and a Hub that hangs holds neither the probes nor
other requests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.hub.fakehub import NO_PROXIES, FakeHub, serve_hub
from tests.hub.repos import ALL_REPOS, QWEN3_8B_BASE, SLOW
from tests.live import Server, start_server


@pytest.fixture(scope="module")
def hub_and_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeHub, Server]]:
    home: Path = tmp_path_factory.mktemp("hf-home")
    with serve_hub(ALL_REPOS) as hub:
        env = {
            "HF_ENDPOINT": hub.url,
            "HF_HOME": str(home),
            "HF_HUB_CACHE": str(home / "hub"),
            "HF_TOKEN": "",
            "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
            "HF_HUB_OFFLINE": "0",
            "KVPLAN_HUB_TIMEOUT_SECONDS": "2",
            **NO_PROXIES,
        }
        server = start_server(env=env)
        try:
            yield hub, server
        finally:
            server.stop()


def test_a_burst_of_50_requests_for_one_uncached_repo_makes_one_fetch(hub_and_server):
    hub, server = hub_and_server
    hub.reset()
    body = {"model": QWEN3_8B_BASE.repo_id, "gpu": "h100-sxm-80gb"}

    def ask(_: int) -> int:
        return httpx.post(f"{server.url}/v1/budget", json=body, timeout=30).status_code

    with ThreadPoolExecutor(50) as pool:
        statuses = list(pool.map(ask, range(50)))
    assert statuses == [200] * 50
    assert hub.count(QWEN3_8B_BASE.repo_id, "model_info") == 1
    assert hub.count(QWEN3_8B_BASE.repo_id, "config.json", method="GET") <= 1


def test_a_hanging_hub_holds_neither_the_probes_nor_other_requests(hub_and_server):
    hub, server = hub_and_server
    hub.update(SLOW.repo_id, slow=5.0)  # longer than the server's 2 s timeout
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(
            httpx.post,
            f"{server.url}/v1/budget",
            json={"model": SLOW.repo_id, "gpu": "h100-sxm-80gb"},
            timeout=30,
        )
        time.sleep(0.3)  # the fetch is waiting on the Hub now
        probes = []
        for _ in range(5):
            t0 = time.perf_counter()
            assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
            probes.append(time.perf_counter() - t0)
        other = httpx.post(
            f"{server.url}/v1/budget", json={"model": "qwen3-8b", "gpu": "h100-sxm-80gb"}, timeout=5
        )
        assert other.status_code == 200
        assert not pending.done(), "the Hub request should still be waiting"
        answer = pending.result()
    assert max(probes) < 0.5, probes
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "30"
