"""Block-pool simulation (/v1/simulate)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import msgspec
from litestar import Request, Response, post
from litestar.params import RawBody

from kvplan.core.scheduler import SimulationStopped
from kvplan.core.simulate import simulate
from kvplan.presets import Registry

from .. import metrics
from ..errors import ApiError
from ..http import answer, text_wanted
from ..openapi import doc
from ..render import simulation_text
from ..resolve import simulation_input
from ..schemas import SimulateRequest
from ..schemas.simulate import decode_simulate_request

# Wall time one simulation may take. The work limits (core/scheduler.py) keep an idle server's
# largest accepted simulation near a few seconds; this catches a loaded one, so that a request
# never holds a worker thread for long.
SIMULATION_DEADLINE_SECONDS = 10.0

_core_sim = metrics.CORE_SECONDS.labels("simulate")


@post("/v1/simulate", status_code=200, **doc("simulate", SimulateRequest, "post"))
async def simulate_post(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """What a workload does to vLLM's block pool: preemptions and recomputation, prefix-cache hits,
    blocks in use over time, and how far real traffic sits from the worst-case formula. Runs in a
    worker thread; the workload's size is bounded (see the 400 answers), and the run stops (503)
    past its deadline or when the client goes away."""
    if not body.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", title="Empty body")
    text = text_wanted(request.query_params.get("format"), request.headers.get("accept", ""))
    registry: Registry = request.app.state.registry
    gone = threading.Event()
    deadline = time.monotonic() + SIMULATION_DEADLINE_SECONDS

    def should_stop() -> bool:
        return gone.is_set() or time.monotonic() > deadline

    try:
        content = await _while_connected(request, gone, lambda: _answer(registry, body, text, should_stop))
    except SimulationStopped as e:
        metrics.CALCULATIONS.labels("simulate", "stopped").inc()
        deadline_text = f"past its {SIMULATION_DEADLINE_SECONDS:g} s deadline"
        why = "the client went away" if gone.is_set() else deadline_text
        raise ApiError(
            503,
            f"The simulation stopped {why}: {e.reason}. Simulate fewer requests or a larger "
            "block size, or retry when the server is less busy.",
            field="workload",
            title="Simulation stopped",
        ) from None
    return answer(content, text)


def _answer(registry: Registry, body: bytes, text: bool, should_stop: Callable[[], bool]) -> bytes | str:
    """Decode, simulate and encode: all of it in the worker thread."""
    req = decode_simulate_request(body)
    cfg, reqs, gen, pool, engine = simulation_input(registry, req)
    t0 = time.perf_counter()
    result = simulate(cfg, reqs, gen, req.snapshot_steps, should_stop=should_stop)
    _core_sim.observe(time.perf_counter() - t0)
    metrics.CALCULATIONS.labels("simulate", "ok").inc()
    if text:
        return simulation_text(result, pool, engine, registry.version)
    head = {"engine": engine, "registry_version": registry.version, "pool": pool}
    return b"%s,%s" % (msgspec.json.encode(head)[:-1], msgspec.json.encode(result)[1:])


async def _while_connected(
    request: Request[Any, Any, Any], gone: threading.Event, work: Callable[[], bytes | str]
) -> bytes | str:
    """Run work in a worker thread while watching the connection: the body is read, so the next
    ASGI message is the client's disconnect (or comes after the answer is sent)."""

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        gone.set()

    outcome: list[bytes | str] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        try:
            outcome.append(await anyio.to_thread.run_sync(work))
        except Exception as e:  # raised below, outside the group, which would wrap it
            failure.append(e)
        tg.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome[0]
