"""Block-pool simulation (/v1/simulate): a workload as JSON, or a recorded trace as the body."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_TRACE_BYTES
from kvplan.render import simulation_text
from kvplan.schemas import SimulateRequest
from kvplan.schemas.simulate import SimulateTraceQuery, SimWorkload, decode_simulate_request
from kvplan.services.answers import encode_answer, is_timed, simulate_answer
from kvplan.services.models import model_ref
from kvplan.services.timing import require_model_and_gpu
from kvplan.services.vllm_bench import UNTIMED, vllm_bench_json

from .. import metrics
from ..bodies import MEDIA_TYPES, json_or_trace
from ..http import answer, answer_format, registry_of
from ..hubfetch import prefetch
from ..hygiene import BODY_MEDIA_TYPES
from ..metrics import count_warnings, counted
from ..offload import run_heavy
from ..openapi import doc

_core_sim = metrics.CORE_SECONDS.labels("simulate")
FORMATS = ("json", "text", "vllm-bench")


@post(
    "/v1/simulate",
    status_code=200,
    request_max_body_size=MAX_TRACE_BYTES,
    opt={BODY_MEDIA_TYPES: MEDIA_TYPES},
    **doc("simulate", SimulateRequest, "post"),
)
async def simulate_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """What a workload does to vLLM's block pool: preemptions and recomputation, prefix-cache hits,
    blocks in use over time, and how far real traffic sits from the worst-case formula. Arrivals in
    seconds make it timed: latency (queue, TTFT, TPOT, ITL, end-to-end) and throughput from a
    step-time model. A trace may be the body (text/csv: Azure's; application/x-ndjson: Mooncake's
    or the simulator's requests), with the pool in query parameters. The workload's size is
    bounded before it runs (see the 400 answers); it runs off the event loop and stops (503) past
    its deadline or when the client goes away."""
    fmt = answer_format(request, FORMATS)
    reg = registry_of(request)
    body = await json_or_trace(
        request,
        request.app.state.settings.max_body_bytes,
        SimulateTraceQuery,
        lambda q: require_model_and_gpu(q.model, q.gpu),  # a trace is timed: refused before it is read
    )
    trace = body.trace
    if body.json is not None:
        req = decode_simulate_request(body.json)
    else:
        assert trace is not None and body.query is not None
        q = body.query
        req = SimulateRequest(
            workload=SimWorkload(requests=trace.requests, concurrency=q.concurrency),
            **{f: getattr(q, f) for f in SimulateRequest.__struct_fields__ if f != "workload"},
        )
    if fmt == "vllm-bench" and not is_timed(req):  # refused before any work
        raise InvalidInput("format", UNTIMED)
    ref = None if req.model is None else model_ref(reg, req.model)
    await prefetch(reg, [] if ref is None else [ref])
    result, labels = await run_heavy(
        request,
        "simulate",
        lambda stop: counted(
            "simulate", lambda: simulate_answer(reg, req, stop, _core_sim.observe, ref, trace)
        ),
    )
    count_warnings(tuple(w.code for w in result.warnings))
    if fmt == "text":
        return answer(simulation_text(result, labels, reg.version), True)
    if fmt == "vllm-bench":
        return answer(vllm_bench_json(result, labels), False)
    return answer(encode_answer(labels, result), False)
