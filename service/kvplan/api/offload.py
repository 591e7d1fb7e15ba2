"""CPU-heavy answers (batches, fleets, sweeps, simulations) run off the event loop, in a small
pool per worker with a bounded queue and a deadline, so probes and light requests stay prompt.
The work is told to stop (a `should_stop` callable it polls) when the deadline passes or the
client hangs up; a full queue answers 503 with Retry-After at once instead of piling up."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from litestar import Request

from kvplan.core.errors import WorkStopped

from . import metrics
from .errors import ApiError
from .settings import Settings

T = TypeVar("T")
ShouldStop = Callable[[], bool]


class _Pool:
    def __init__(self, threads: int, queue: int, deadline_seconds: float) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kvplan-heavy")
        self.capacity = threads + queue
        self.in_flight = 0
        self.deadline_seconds = deadline_seconds


_pool: _Pool | None = None


def _get_pool() -> _Pool:
    global _pool
    if _pool is None:
        s = Settings()
        _pool = _Pool(s.heavy_threads, s.heavy_queue, s.heavy_deadline_seconds)
    return _pool


async def _client_gone(request: Request[Any, Any, Any]) -> None:
    """Returns when the client disconnects: with the body read, the next ASGI message is that."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def run_heavy(request: Request[Any, Any, Any], endpoint: str, work: Callable[[ShouldStop], T]) -> T:
    """Run work(should_stop) in the pool; 503 when the pool is full or the deadline passed."""
    pool = _get_pool()
    if pool.in_flight >= pool.capacity:
        raise ApiError(
            503,
            f"{pool.in_flight} heavy requests are already running or queued on this worker; retry shortly.",
            title="Busy",
            headers={"Retry-After": "1"},
        )
    pool.in_flight += 1
    stop = threading.Event()
    deadline = time.monotonic() + pool.deadline_seconds

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    loop = asyncio.get_running_loop()
    # In the request's context: the work sees what the request set (Hub lookups cache-only).
    future = loop.run_in_executor(pool.executor, contextvars.copy_context().run, work, should_stop)
    watcher = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait(
            {future, watcher}, timeout=pool.deadline_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        if not future.done():
            stop.set()  # the client left or time is up: the work stops at its next check
        try:
            return await future
        except WorkStopped as e:
            metrics.count(endpoint, "stopped")
            if watcher.done():
                raise ApiError(
                    499, "The client closed the connection.", title="Client closed request"
                ) from None
            raise ApiError(
                503,
                f"The answer took longer than {pool.deadline_seconds:g} s and was stopped ({e.reason}); "
                "ask for fewer scenarios, layouts, values or requests.",
                title="Deadline exceeded",
                headers={"Retry-After": "5"},
            ) from None
    finally:
        watcher.cancel()
        pool.in_flight -= 1
