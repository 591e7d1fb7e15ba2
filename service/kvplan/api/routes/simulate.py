"""Block-pool simulation (/v1/simulate)."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from litestar import Request, Response, post
from litestar.params import RawBody

from kvplan.core.simulate import simulate
from kvplan.presets import Registry

from .. import metrics
from ..errors import ApiError
from ..http import answer, decoder, text_wanted
from ..openapi import doc
from ..render import simulation_text
from ..resolve import simulation_input
from ..schemas import SimulateRequest

_core_sim = metrics.CORE_SECONDS.labels("simulate")


@post("/v1/simulate", status_code=200, sync_to_thread=True, **doc("simulate", SimulateRequest, "post"))
def simulate_post(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """What a workload does to vLLM's block pool: preemptions and recomputation, prefix-cache hits,
    blocks in use over time, and how far real traffic sits from the worst-case formula. Runs in a
    worker thread; the workload's size is bounded (see the 400 answers)."""
    if not body.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", title="Empty body")
    req = decoder(SimulateRequest).decode(body)
    reg: Registry = request.app.state.registry
    cfg, reqs, gen, pool, engine = simulation_input(reg, req)
    t0 = time.perf_counter()
    result = simulate(cfg, reqs, gen, req.snapshot_steps)
    _core_sim.observe(time.perf_counter() - t0)
    metrics.CALCULATIONS.labels("simulate", "ok").inc()
    if text_wanted(request.query_params.get("format"), request.headers.get("accept", "")):
        return answer(simulation_text(result, pool, engine, reg.version), True)
    head = {"engine": engine, "registry_version": reg.version, "pool": pool}
    return answer(b"%s,%s" % (msgspec.json.encode(head)[:-1], msgspec.json.encode(result)[1:]), False)
