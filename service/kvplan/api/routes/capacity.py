"""Capacity under latency targets (/v1/capacity): the highest rate one replica sustains."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post

from kvplan.render_traffic import capacity_text
from kvplan.schemas.capacity import CapacityRequest
from kvplan.services.answers import encode_answer
from kvplan.services.capacity import capacity_answer
from kvplan.services.models import model_ref

from ..errors import ApiError
from ..http import answer, answer_format, decoder, registry_of
from ..hubfetch import prefetch
from ..metrics import counted
from ..offload import run_heavy
from ..openapi import doc


@post("/v1/capacity", status_code=200, **doc("capacity", CapacityRequest, "post"))
async def capacity_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The highest arrival rate (requests/s) one replica of this model, GPU, layout and settings
    sustains while meeting every latency target, found by simulating the workload's shape at
    searched rates: the rate, the latency there, what binds first, and the latency–rate curve. The
    search's work is bounded before it starts (a 400 names the limit); it runs off the event loop."""
    body = await request.body()
    if not body.strip():
        raise ApiError(400, "The request body is empty; send a JSON object.", title="Empty body")
    fmt = answer_format(request)
    reg = registry_of(request)
    req = decoder(CapacityRequest).decode(body)
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    heavy = "capacity" if req.vary is None else "capacity_sweep"  # a search a combination: its own deadline
    search, labels = await run_heavy(
        request, heavy, lambda stop: counted("capacity", lambda: capacity_answer(reg, req, stop, ref))
    )
    if fmt == "text":
        return answer(capacity_text(search, labels), True)
    return answer(encode_answer(labels, search), False)
