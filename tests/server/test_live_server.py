"""The service as it runs in production: uvicorn, a real socket, httpx."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from tests.live import start_server
from tests.metrics import sample
from tests.seed import CONCURRENCY, TABLE_1, A, B, C

pytestmark = pytest.mark.server


@pytest.mark.parametrize(("scenario", "n"), CONCURRENCY)
def test_seed_concurrency_by_get_and_post(http, scenario, n):
    post = http.post("/v1/budget", json=scenario)
    get = http.get("/v1/budget", params=scenario)
    assert post.status_code == get.status_code == 200
    assert post.json()["concurrency"]["guaranteed"] == n == get.json()["concurrency"]["guaranteed"]


@pytest.mark.parametrize("row", TABLE_1, ids=[row.model for row in TABLE_1])
def test_seed_per_token_by_get_and_post(http, row):
    for r in (
        http.post("/v1/per-token", json={"model": row.model}),
        http.get("/v1/per-token", params={"model": row.model}),
    ):
        assert r.json()["bytes_per_token"] == row.bf16_kib * 1024


def test_group_a_text_answer_shows_880_blocks_and_6(http):
    text = http.get("/v1/budget", params={**A, "format": "text"}).text
    assert "880 (879 usable" in text
    assert "concurrency (guaranteed)  6 " in text


def test_group_b_pooled_figure_is_flagged(http):
    body = http.post("/v1/budget", json=B).json()
    assert body["pooled"]["concurrency"] == 192
    assert "pooled_not_deployable" in {w["code"] for w in body["warnings"]}


def test_hostile_bodies_get_4xx_from_the_real_server(http):
    assert (
        http.post(
            "/v1/budget", content=b"x" * (2 * 1024 * 1024), headers={"content-type": "application/json"}
        ).status_code
        == 413
    )
    deep = b'{"model": {"hf_config": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
    assert (
        http.post("/v1/budget", content=deep, headers={"content-type": "application/json"}).status_code == 400
    )
    assert http.post("/v1/budget", content=b'{"model": NaN}').status_code == 400
    assert http.get("/healthz").status_code == 200  # still serving


def test_metrics_and_request_ids_on_the_real_server(http):
    def healthz_count() -> float:
        return sample(http.get("/metrics").text, "kvplan_http_requests_total", path="/healthz")

    before = healthz_count()
    r = http.get("/healthz", headers={"X-Request-ID": "live-1"})
    assert r.headers["x-request-id"] == "live-1"
    assert healthz_count() == before + 1


def test_sigterm_lets_in_flight_requests_finish():
    server = start_server()
    statuses: list[int] = []
    errors: list[str] = []
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            while not stop.is_set():
                try:
                    statuses.append(
                        c.post("/v1/budget/batch", json={"scenarios": [A, B, C] * 100}).status_code
                    )
                except httpx.TransportError as e:  # refused once the listener has closed: not in flight
                    errors.append(type(e).__name__)
                    return

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    code = server.stop()  # one SIGTERM while the load runs
    stop.set()
    for t in threads:
        t.join(timeout=10)
    # uvicorn drains, then re-raises the signal it caught: -SIGTERM is a clean, drained exit.
    assert code in (0, -signal.SIGTERM)
    assert statuses and all(s == 200 for s in statuses), statuses
    assert all(e in ("ConnectError", "RemoteProtocolError", "ReadError") for e in errors), errors


def test_metrics_aggregate_across_worker_processes():
    server = start_server(workers=2)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            for i in range(30):
                assert c.get("/v1/budget", params={**A, "context_tokens": 4000 + i}).status_code == 200
            text = c.get("/metrics").text
    finally:
        server.stop()
    assert sample(text, "kvplan_calculations_total", endpoint="budget", outcome="ok") == 30


def test_a_malformed_extra_preset_stops_start_up_naming_the_file_and_field(tmp_path):
    (tmp_path / "gpus.toml").write_text('[[gpu]]\nid = "broken"\nname = "Broken"\nmemory_bytes = "lots"\n')
    with pytest.raises(RuntimeError) as e:
        start_server(env={"KVPLAN_EXTRA_PRESETS": str(tmp_path)})
    assert "gpus.toml" in str(e.value) and "gpu[0].memory_bytes" in str(e.value)
