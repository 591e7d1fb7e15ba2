"""Capacity under latency targets (/v1/capacity): the highest rate one replica sustains."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post

from kvplan.core.limits import MAX_TRACE_BYTES
from kvplan.core.traffic.shape import TraceLoad
from kvplan.render_traffic import capacity_text
from kvplan.schemas.capacity import CapacityRequest, CapacityTraceQuery
from kvplan.services.answers import encode_answer
from kvplan.services.capacity import capacity_answer
from kvplan.services.models import model_ref

from ..bodies import MEDIA_TYPES, json_or_trace
from ..http import answer, answer_format, decoder, registry_of
from ..hubfetch import prefetch
from ..hygiene import BODY_MEDIA_TYPES
from ..metrics import counted
from ..offload import run_heavy
from ..openapi import doc


@post(
    "/v1/capacity",
    status_code=200,
    request_max_body_size=MAX_TRACE_BYTES,
    opt={BODY_MEDIA_TYPES: MEDIA_TYPES},
    **doc("capacity", CapacityRequest, "post"),
)
async def capacity_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The highest arrival rate (requests/s) one replica of this model, GPU, layout and settings
    sustains while meeting every latency target, found by simulating the workload's shape at
    searched rates: the rate, the latency there, what binds first, and the latency–rate curve. The
    workload is a generator's shape (JSON), or a trace as the body (text/csv, application/x-ndjson,
    as /v1/simulate reads them) whose lengths and sharing are kept and whose rate is scaled, with the
    rest in query parameters (slo.ttft_p90_ms=500). The search's work is bounded before it starts
    (a 400 names the limit); it runs off the event loop."""
    fmt = answer_format(request)
    reg = registry_of(request)
    body = await json_or_trace(request, request.app.state.settings.max_body_bytes, CapacityTraceQuery)
    req: CapacityRequest | CapacityTraceQuery
    trace = None
    if body.json is not None:
        req = decoder(CapacityRequest).decode(body.json)
    else:
        assert body.trace is not None and body.query is not None
        req, t = body.query, body.trace
        trace = TraceLoad(tuple(t.requests), tuple(t.chains) if t.chains is not None else None, t.chain_block)
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    heavy = "capacity" if req.vary is None else "capacity_sweep"  # a search a combination: its own deadline
    search, labels = await run_heavy(
        request, heavy, lambda stop: counted("capacity", lambda: capacity_answer(reg, req, stop, ref, trace))
    )
    if fmt == "text":
        return answer(capacity_text(search, labels), True)
    return answer(encode_answer(labels, search), False)
