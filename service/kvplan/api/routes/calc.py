"""Calculations: /v1/per-token, /v1/budget (GET and POST) and /v1/budget/batch."""

from __future__ import annotations

import time
from typing import Any

import msgspec
from litestar import Request, Response, get, post

from kvplan.core.budget import Budget, compute_budget
from kvplan.core.errors import KvplanError
from kvplan.core.pertoken import per_token
from kvplan.core.profiles import DEFAULT_PROFILE_ID
from kvplan.presets import Registry

from .. import metrics
from ..errors import problem_for
from ..http import (
    answer,
    decode_body,
    decode_query,
    decoder,
    envelope,
    etag_for,
    not_modified,
    wants_explain,
    wants_text,
)
from ..openapi import doc
from ..render import budget_text, per_token_text
from ..resolve import budget_input, per_token_args, resolve_model
from ..schemas import BatchRequest, BudgetRequest, PerTokenRequest

_core_budget = metrics.CORE_SECONDS.labels("budget")
_core_batch = metrics.CORE_SECONDS.labels("budget_batch")
_core_pt = metrics.CORE_SECONDS.labels("per_token")
_ok = {e: metrics.CALCULATIONS.labels(e, "ok") for e in ("budget", "budget_batch", "per_token")}
_invalid = {e: metrics.CALCULATIONS.labels(e, "invalid") for e in ("budget", "budget_batch", "per_token")}
_warn_children: dict[str, Any] = {}


def _count_warnings(codes: Any) -> None:
    for w in codes:
        child = _warn_children.get(w.code)
        if child is None:
            child = _warn_children[w.code] = metrics.WARNINGS.labels(w.code)
        child.inc()


def _registry(request: Request[Any, Any, Any]) -> Registry:
    return request.app.state.registry  # type: ignore[no-any-return]


def _per_token(request: Request[Any, Any, Any], req: PerTokenRequest, etag: str | None) -> Response[bytes]:
    reg = _registry(request)
    text, explain = wants_text(request), wants_explain(request)
    try:
        model = resolve_model(reg, req.model)
        kv, skip, par = per_token_args(req)
        t0 = time.perf_counter()
        pt = per_token(model.geometry, kv, skip, par, req.context_tokens, explain=explain or text)
        _core_pt.observe(time.perf_counter() - t0)
    except KvplanError:
        _invalid["per_token"].inc()
        raise
    _ok["per_token"].inc()
    _count_warnings(pt.warnings)
    engine = req.engine or DEFAULT_PROFILE_ID
    if text:
        return answer(per_token_text(pt, model.label, engine, reg.version), True, etag)
    head = {"model": model.label, "engine": engine, "registry_version": reg.version}
    return answer(envelope(head, msgspec.json.encode(pt)), False, etag)


def _budget_bytes(reg: Registry, req: BudgetRequest, explain: bool) -> tuple[Budget, str, str | None, bytes]:
    inp, model, gpu = budget_input(reg, req)
    t0 = time.perf_counter()
    b = compute_budget(inp, explain)
    _core_budget.observe(time.perf_counter() - t0)
    head = {"model": model.label, "gpu": gpu, "registry_version": reg.version}
    return b, model.label, gpu, envelope(head, msgspec.json.encode(b))


def _budget(request: Request[Any, Any, Any], req: BudgetRequest, etag: str | None) -> Response[bytes]:
    reg = _registry(request)
    text, explain = wants_text(request), wants_explain(request)
    try:
        b, label, gpu, body = _budget_bytes(reg, req, explain or text)
    except KvplanError:
        _invalid["budget"].inc()
        raise
    _ok["budget"].inc()
    _count_warnings(b.warnings)
    if text:
        return answer(budget_text(b, label, gpu, reg.version), True, etag)
    return answer(body, False, etag)


@post("/v1/per-token", status_code=200, **doc("per_token", PerTokenRequest, "post"))
async def per_token_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Bytes one token of KV costs: per layer kind, on one GPU after TP/PP, and for the model."""
    return _per_token(request, await decode_body(request, PerTokenRequest), None)


@get("/v1/per-token", **doc("per_token", PerTokenRequest, "get"))
async def per_token_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The same as POST, with the fields as query parameters (nested ones dotted)."""
    req = decode_query(request.query_params, PerTokenRequest)
    etag = etag_for(
        req,
        _registry(request).version,
        "per-token",
        str(request.query_params.get("format")),
        str(request.query_params.get("explain")),
        request.headers.get("accept", ""),
    )
    return not_modified(request, etag) or _per_token(request, req, etag)


@post("/v1/budget", status_code=200, **doc("budget", BudgetRequest, "post"))
async def budget_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """How much of the GPU is left for KV, the blocks it makes and the requests they hold."""
    return _budget(request, await decode_body(request, BudgetRequest), None)


@get("/v1/budget", **doc("budget", BudgetRequest, "get"))
async def budget_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The same as POST, with the fields as query parameters (nested ones dotted)."""
    req = decode_query(request.query_params, BudgetRequest)
    etag = etag_for(
        req,
        _registry(request).version,
        "budget",
        str(request.query_params.get("format")),
        str(request.query_params.get("explain")),
        request.headers.get("accept", ""),
    )
    return not_modified(request, etag) or _budget(request, req, etag)


@post("/v1/budget/batch", status_code=200, **doc("batch", BatchRequest, "post"))
async def budget_batch(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Up to 1000 budget scenarios in one call (MAX_BATCH). Each gets a result or an error, in order;
    one bad scenario does not fail the others."""
    batch = await decode_body(request, BatchRequest)
    reg = _registry(request)
    explain = wants_explain(request)
    dec = decoder(BudgetRequest)
    parts = []
    ok = bad = 0
    t0 = time.perf_counter()
    for i, raw in enumerate(batch.scenarios):
        try:
            req = dec.decode(raw)
            b, _, _, body = _budget_bytes(reg, req, explain)
        except (KvplanError, msgspec.MsgspecError, RecursionError) as e:
            bad += 1
            problem = problem_for(e)
            if problem.field:
                problem = msgspec.structs.replace(problem, field=f"scenarios[{i}].{problem.field}")
            parts.append(b'{"index":%d,"error":%s}' % (i, msgspec.json.encode(problem)))
            continue
        ok += 1
        _count_warnings(b.warnings)
        parts.append(b'{"index":%d,"result":%s}' % (i, body))
    _core_batch.observe(time.perf_counter() - t0)
    _ok["budget_batch"].inc(ok)
    if bad:
        _invalid["budget_batch"].inc(bad)
    return answer(b'{"results":[' + b",".join(parts) + b"]}", False)
