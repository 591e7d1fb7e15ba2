"""Fleet planning (/v1/fleet) and series for dashboards (/v1/sweep)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, post

from kvplan.render import fleet_text, sweep_csv, sweep_text
from kvplan.schemas import BudgetRequest, FleetQuery, FleetRequest, SweepQuery
from kvplan.services.answers import encode_answer, fleet_answer, sweep_answer
from kvplan.services.models import model_ref
from kvplan.services.query import decode_pairs, integer_text
from kvplan.services.scenarios import fleet_request_from_query

from .. import metrics
from ..http import answer, answer_format, decode_body, query_pairs, registry_of
from ..hubfetch import prefetch
from ..metrics import count_warnings, counted
from ..offload import run_heavy
from ..openapi import doc

_core_fleet = metrics.CORE_SECONDS.labels("fleet")
_core_sweep = metrics.CORE_SECONDS.labels("sweep")


async def _fleet(request: Request[Any, Any, Any], req: FleetRequest) -> Response[bytes]:
    reg = registry_of(request)
    fmt = answer_format(request)
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    # Sizing for a request rate searches each layout's sustainable rate: its own deadline.
    heavy = "fleet" if req.target_rate is None else "fleet_traffic"
    plan, labels = await run_heavy(
        request,
        heavy,
        lambda stop: counted("fleet", lambda: fleet_answer(reg, req, _core_fleet.observe, ref, stop)),
    )
    count_warnings(tuple(w.code for w in plan.warnings))
    if fmt == "text":
        return answer(fleet_text(plan, labels["model"], reg.version), True)
    return answer(encode_answer(labels, plan), False)


@post("/v1/fleet", status_code=200, **doc("fleet", FleetRequest, "post"))
async def fleet_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Per GPU type and layout: feasible or why not, replicas, concurrency per replica and in total,
    idle GPUs and cost; the best layout per type; for a target, the replicas it takes and the
    cheapest mix."""
    return await _fleet(request, await decode_body(request, FleetRequest))


@get("/v1/fleet", **doc("fleet", FleetQuery, "get"))
async def fleet_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The simple case as a GET: one GPU type (gpu, count) and one context length."""
    q = decode_pairs(query_pairs(request.scope["query_string"]), FleetQuery)
    return await _fleet(request, fleet_request_from_query(q))


@get("/v1/sweep", **doc("sweep", SweepQuery, "get"))
async def sweep_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """A series of the budget along one axis — context_tokens, gpu_memory_utilization,
    kv_cache_dtype or tensor_parallel_size — for one model and GPU. JSON, or CSV with
    ?format=csv (Grafana's JSON/CSV data sources read either), or text."""
    pairs = query_pairs(request.scope["query_string"])
    own = [(k, v) for k, v in pairs if k in ("vary", "values")]
    rest = [(k, v) for k, v in pairs if k not in ("vary", "values")]
    q = decode_pairs(own, SweepQuery)
    fmt = answer_format(request, ("json", "text", "csv"))
    reg = registry_of(request)
    req = decode_pairs(rest, BudgetRequest)
    values = None
    if q.values is not None:
        values = [v.strip() for v in q.values.split(",") if v.strip()]
        if q.vary in ("context_tokens", "tensor_parallel_size"):  # sizes as vLLM reads them (32k)
            values = [integer_text(v, f"values[{i}]") for i, v in enumerate(values)]
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    series, labels = await run_heavy(
        request,
        "sweep",
        lambda stop: counted(
            "sweep", lambda: sweep_answer(reg, req, q.vary, values, _core_sweep.observe, ref, stop)
        ),
    )
    if fmt == "csv":
        return Response(sweep_csv(series).encode(), media_type="text/csv", headers={"Vary": "Accept"})
    if fmt == "text":
        return answer(sweep_text(series, labels["model"], reg.version), True)
    return answer(encode_answer(labels, series), False)
