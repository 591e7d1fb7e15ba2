"""Block-pool simulation (/v1/simulate)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post
from litestar.params import RawBody

from kvplan.render import simulation_text
from kvplan.schemas import SimulateRequest
from kvplan.schemas.simulate import decode_simulate_request
from kvplan.services.answers import encode_answer, simulate_answer
from kvplan.services.models import model_ref

from .. import metrics
from ..errors import ApiError
from ..http import answer, answer_format, registry_of
from ..hubfetch import prefetch
from ..metrics import count_warnings, counted
from ..offload import run_heavy
from ..openapi import doc

_core_sim = metrics.CORE_SECONDS.labels("simulate")


@post("/v1/simulate", status_code=200, **doc("simulate", SimulateRequest, "post"))
async def simulate_post(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """What a workload does to vLLM's block pool: preemptions and recomputation, prefix-cache hits,
    blocks in use over time, and how far real traffic sits from the worst-case formula. The
    workload's size is bounded before it runs (see the 400 answers); it runs off the event loop
    and stops (503) past its deadline or when the client goes away."""
    if not body.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", title="Empty body")
    fmt = answer_format(request)
    reg = registry_of(request)
    req = decode_simulate_request(body)
    ref = None if req.model is None else model_ref(reg, req.model)
    await prefetch(reg, [] if ref is None else [ref])
    result, labels = await run_heavy(
        request,
        "simulate",
        lambda stop: counted("simulate", lambda: simulate_answer(reg, req, stop, _core_sim.observe, ref)),
    )
    count_warnings(tuple(w.code for w in result.warnings))
    if fmt == "text":
        return answer(simulation_text(result, labels, reg.version), True)
    return answer(encode_answer(labels, result), False)
