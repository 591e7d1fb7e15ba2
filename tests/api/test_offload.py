"""Heavy answers run in a bounded pool off the event loop: a full pool answers 503 at once, work
past its deadline is stopped and answered 503, and light routes answer meanwhile."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from litestar import Request, get
from litestar.testing import create_test_client

from kvplan.api import offload
from kvplan.api.errors import EXCEPTION_HANDLERS
from kvplan.api.offload import run_heavy
from kvplan.core.errors import WorkStopped

release = threading.Event()


def _spin(should_stop: Any) -> str:
    while not release.is_set():
        if should_stop():
            raise WorkStopped
        time.sleep(0.005)
    return "done"


@get("/heavy")
async def heavy(request: Request[Any, Any, Any]) -> str:
    return await run_heavy(request, "test", _spin)


@get("/light")
async def light() -> str:
    return "ok"


@pytest.fixture
def small_pool(monkeypatch):
    def use(threads: int, queue: int, deadline: float) -> None:
        monkeypatch.setattr(offload, "_pool", offload._Pool(threads, queue, deadline))

    release.clear()
    yield use
    release.set()


def test_work_past_its_deadline_is_stopped_and_answered_503(small_pool):
    small_pool(1, 0, 0.2)
    with create_test_client([heavy], exception_handlers=EXCEPTION_HANDLERS) as client:
        t0 = time.monotonic()
        r = client.get("/heavy")
        assert r.status_code == 503
        assert "longer than 0.2 s" in r.json()["detail"]
        assert r.headers["retry-after"] == "5"
        assert time.monotonic() - t0 < 2


def test_work_that_finishes_in_time_is_answered(small_pool):
    small_pool(1, 0, 5)
    release.set()
    with create_test_client([heavy], exception_handlers=EXCEPTION_HANDLERS) as client:
        assert client.get("/heavy").text == "done"


def test_a_full_pool_answers_503_at_once_and_light_routes_still_answer(small_pool):
    small_pool(1, 0, 5)
    with create_test_client([heavy, light], exception_handlers=EXCEPTION_HANDLERS) as client:
        results: list[int] = []
        first = threading.Thread(target=lambda: results.append(client.get("/heavy").status_code))
        first.start()
        deadline = time.monotonic() + 2
        while offload._pool.in_flight == 0 and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.01)
        second = client.get("/heavy")
        assert second.status_code == 503 and second.headers["retry-after"] == "1"
        assert client.get("/light").text == "ok"
        release.set()
        first.join(5)
        assert results == [200]


def _hog(should_stop: Any) -> str:
    time.sleep(1.5)  # work between two should_stop() checks: the pool's one thread is taken
    return "done"


@get("/hog")
async def hog(request: Request[Any, Any, Any]) -> str:
    return await run_heavy(request, "test", _hog)


def test_work_still_queued_at_its_deadline_is_answered_then_not_when_its_turn_comes(small_pool):
    # One thread, taken for 1.5 s: a request queued behind it is answered 503 at its own 0.3 s
    # deadline, and its place in the queue is held until its work has ended (the pool stays bounded).
    small_pool(1, 2, 0.3)
    with create_test_client([hog, heavy], exception_handlers=EXCEPTION_HANDLERS) as client:
        first = threading.Thread(target=client.get, args=("/hog",))
        first.start()
        time.sleep(0.1)
        t0 = time.monotonic()
        r = client.get("/heavy")
        took = time.monotonic() - t0
        assert r.status_code == 503, r.text
        assert "not started" in r.json()["detail"]
        assert took < 1.0, took
        assert offload._pool is not None and offload._pool.in_flight == 2  # both still in the pool
        first.join(5)
        time.sleep(0.1)
        assert offload._pool.in_flight == 0
