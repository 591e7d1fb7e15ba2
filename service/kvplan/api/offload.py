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


# Each heavy route's deadline, set from its work bound (core/limits.py): the slowest input the
# bounds admit, measured on the reference machine (2 vCPU, CPython 3.12, one heavy thread, cold
# caches; tests/api/heavy_worst.py builds the inputs, `python -m tests.api.heavy_worst` measures
# them again), times a margin of at least 3 (a loaded or slower core, a GC pause), and never below
# 3 s. An admitted request is never stopped for its size; past its deadline the work stops at its
# next should_stop() check, and every heavy path checks at most ~60 ms apart (one 1 MiB /metrics
# parse, inside prometheus_client, is ~110 ms).
#
#   route          slowest admitted input (the bound it reaches)                     measured  deadline
#   simulate       100M blocks handed out (MAX_BLOCK_EVENTS) in blocks of 1             80 s    240 s
#                  (70,000 requests of 1,400 tokens); 20M steps run one by one
#                  (MAX_SIMULATED_STEPS) 69 s; a day of 1,000,000 requests (MAX_REQUESTS,
#                  benchmarks/speed_bench.py) 72 s; 1,000,000 arriving at once 15 s, 1 GB
#   capacity       MAX_SEARCH_STEPS (4,000,000) steps over at most MAX_SEARCH_POINTS    ~10 s    30 s
#                  simulations (measured: see benchmarks/README.md, capacity)
#   fleet_traffic  MAX_FLEET_SEARCH_STEPS (12,000,000) over a search a layout          ~30 s    60 s
#   capacity_sweep the same bound over a search a combination of settings (vary)      ~30 s    60 s
#   budget_batch   1,000 inline 596-layer configs (MAX_BATCH, MAX_BATCH_LAYER_PASSES)  1.0 s      5 s
#   sweep          200 points (MAX_SWEEP_POINTS) of a 4,096-layer model (MAX_LAYERS)   1.2 s      5 s
#   reconcile      an 8 MiB start-up log (MAX_LOG_BYTES) read; each of the route's     1.1 s      5 s
#                  two heavy calls (read the log, then plan) has the deadline
#   replicas       15 scrapes of 1 MiB, 20,000 samples each (the body limit: 16 MiB)  2.4 s      8 s
#   fleet          a 4,096-layer model on 6 GPU types (MAX_FLEET_LAYER_PASSES);        0.14 s     3 s
#                  16 types × 32 lengths with a target (MAX_FLEET_BUDGETS side) 0.04 s
#   plan           a 64 KiB command of 3,000 flags read (0.04 s), then the inline       0.1 s      3 s
#                  DeepSeek-V4.1 config below planned
#   budget         one inline DeepSeek-V4.1 config at 4,096 layers (MAX_LAYERS)        0.05 s     3 s
#   per_token      the same config                                                     0.01 s     3 s
#   resolve        the same config                                                     0.02 s     3 s
ROUTE_DEADLINES: dict[str, float] = {
    "simulate": 240.0,
    "capacity": 30.0,
    "fleet_traffic": 60.0,
    "capacity_sweep": 60.0,
    "budget_batch": 5.0,
    "sweep": 5.0,
    "reconcile": 5.0,
    "replicas": 8.0,
    "fleet": 3.0,
    "budget": 3.0,
    "plan": 3.0,
    "per_token": 3.0,
    "resolve": 3.0,
}


class _Pool:
    def __init__(
        self,
        threads: int,
        queue: int,
        deadline_seconds: float | None = None,
        scale: float = 1.0,
        other: float = 10.0,
    ) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kvplan-heavy")
        self.threads = threads
        self.running = 0  # jobs on a thread now (changed by the pool's threads, under `lock`)
        self.lock = threading.Lock()
        self.capacity = threads + queue
        self.in_flight = 0
        self.deadline_seconds = deadline_seconds  # one deadline for every route (tests); else the table
        self.scale = scale
        self.other = other  # a heavy endpoint without a row in ROUTE_DEADLINES

    def deadline(self, endpoint: str) -> float:
        """This endpoint's deadline in seconds: its row of ROUTE_DEADLINES × the scale setting."""
        if self.deadline_seconds is not None:
            return self.deadline_seconds
        return ROUTE_DEADLINES.get(endpoint, self.other) * self.scale


_pool: _Pool | None = None


def _get_pool() -> _Pool:
    global _pool
    if _pool is None:
        s = Settings()
        _pool = _Pool(s.heavy_threads, s.heavy_queue, s.heavy_deadline_seconds, scale=s.heavy_deadline_scale)
    return _pool


def _stop_signal(stop: threading.Event, deadline: float) -> ShouldStop:
    """The should_stop() the work polls: the client left (stop is set) or the deadline passed."""

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() > deadline

    return should_stop


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
    seconds = pool.deadline(endpoint)
    should_stop = _stop_signal(stop, time.monotonic() + seconds)
    started = threading.Event()

    def job() -> T:
        started.set()
        with pool.lock:
            pool.running += 1
        try:
            if should_stop():  # its deadline passed while it waited in the queue: nothing to do
                raise WorkStopped("not started: queued behind other heavy work")
            return work(should_stop)
        finally:
            with pool.lock:
                pool.running -= 1

    def finished(f: asyncio.Future[T]) -> None:
        # The work holds its place in the pool until it ends, even when its request was answered
        # before (at its deadline, while still queued): the queue stays bounded.
        pool.in_flight -= 1
        if not f.cancelled():
            f.exception()  # retrieved: an answer given without it logs no "never retrieved"

    loop = asyncio.get_running_loop()
    # In the request's context: the work sees what the request set (Hub lookups cache-only).
    future = loop.run_in_executor(pool.executor, contextvars.copy_context().run, job)
    future.add_done_callback(finished)
    watcher = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait({future, watcher}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        if not future.done():
            stop.set()  # the client left or time is up: the work stops at its next check
            if not started.is_set() and pool.running >= pool.threads:
                # Still queued behind other work: answer now, not when its turn comes (it then ends
                # at once, seeing the stop).
                raise _stopped(endpoint, seconds, "not started: queued behind other heavy work", watcher)
        try:
            return await future
        except WorkStopped as e:
            raise _stopped(endpoint, seconds, e.reason, watcher) from None
    finally:
        watcher.cancel()


def _stopped(endpoint: str, seconds: float, reason: str, watcher: asyncio.Future[None]) -> ApiError:
    metrics.count(endpoint, "stopped")
    if watcher.done():
        return ApiError(499, "The client closed the connection.", title="Client closed request")
    return ApiError(
        503,
        f"The answer took longer than {seconds:g} s and was stopped ({reason}); "
        "ask for fewer scenarios, layouts, values or requests.",
        title="Deadline exceeded",
        headers={"Retry-After": "5"},
    )
