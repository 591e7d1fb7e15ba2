"""Incident review (/v1/reconcile): a vLLM start-up log in, the plan beside it out."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, post

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_LOG_BYTES
from kvplan.core.logs.enginelog import read_log
from kvplan.hub import HubError
from kvplan.render import reconcile_text
from kvplan.schemas.reconcile import ReconcileOverrides, ReconcileRequest
from kvplan.services.models import ModelRef, model_ref
from kvplan.services.query import RESERVED, decode_pairs
from kvplan.services.reconcile import hf_model, reconcile

from ..errors import ApiError
from ..http import answer, answer_format, decoder, query_pairs, registry_of
from ..hubfetch import prefetch
from ..hygiene import BODY_MEDIA_TYPES
from ..metrics import counted
from ..offload import run_heavy
from ..openapi import reconcile_doc

MiB = 1 << 20
# A raw log as people send it: `curl --data-binary @engine.log` says form-urlencoded.
LOG_MEDIA_TYPES = ("application/json", "text/plain", "application/x-www-form-urlencoded",
                   "application/octet-stream")  # fmt: skip


def _decode(body: bytes, content_type: str) -> ReconcileRequest:
    if not body.strip():
        raise ApiError(400, "The request body is empty: send vLLM's start-up log.", field="log")
    is_json = content_type.split(";")[0].strip().lower() == "application/json"
    if is_json or body.lstrip()[:1] == b"{":
        try:
            return decoder(ReconcileRequest).decode(body)
        except msgspec.ValidationError:
            raise  # JSON of the request's shape with a bad field: a 400 naming it, whatever the type
        except msgspec.DecodeError:
            if is_json:
                raise
    if len(body) > MAX_LOG_BYTES:
        detail = f"The log is {len(body):,} bytes; send at most {MAX_LOG_BYTES:,} (the start-up part)."
        raise ApiError(413, detail, title="Request Entity Too Large", field="log")
    if b"\0" in body[:65536]:
        raise InvalidInput("log", "the body is binary (NUL bytes): send the log as text")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput("log", f"not UTF-8 text (byte {e.start}): send the log as UTF-8") from None
    return ReconcileRequest(log=text)


def _with_query(query_string: bytes, req: ReconcileRequest) -> ReconcileRequest:
    """Overrides given as query parameters, by GET /v1/budget's rules: a log sent as text has no
    other place for them (`?gpu=h100-sxm-80gb&tensor_parallel_size=2`). Beside a JSON body's
    overrides they add to them; a field given both ways with two values is refused, naming it."""
    pairs = [(k, v) for k, v in query_pairs(query_string) if k not in RESERVED] if query_string else []
    if not pairs:
        return req
    if any("hf_config" in k.split(".") for k, _ in pairs):
        raise InvalidInput("hf_config", "is the model's config.json: send it in a JSON body's overrides")
    query = decode_pairs(pairs, ReconcileOverrides)
    given = {f: v for f in query.__struct_fields__ if (v := getattr(query, f)) is not None}
    body = req.overrides or ReconcileOverrides()
    if "model" in given and body.hf_config is not None:
        raise InvalidInput("overrides.model", "given in the query while the body gives the model's hf_config")
    for name, value in given.items():
        sent = getattr(body, name)
        if sent is not None and sent != value:
            ours, theirs = (msgspec.json.encode(v).decode() for v in (value, sent))
            raise InvalidInput(
                f"overrides.{name}", f"given twice, {ours} in the query and {theirs} in the body"
            )
    return msgspec.structs.replace(req, overrides=msgspec.structs.replace(body, **given))


@post(
    "/v1/reconcile",
    status_code=200,
    request_max_body_size=MAX_LOG_BYTES + 4 * MiB,
    opt={BODY_MEDIA_TYPES: LOG_MEDIA_TYPES},
    **reconcile_doc(),
)
async def reconcile_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """What a vLLM engine printed at start-up beside kvplan's plan for the same inputs: each figure
    with its line, kvplan's value, a verdict and where the paths part; the overhead the engine saw
    (as non_kv_bytes); what-ifs. Body: the log as text (`curl --data-binary @engine.log`), or JSON
    `{"log": …, "metrics": …, "overrides": {…}}`; overrides may also be query parameters."""
    reg = registry_of(request)
    fmt = answer_format(request)
    body = await request.body()
    req = _with_query(request.scope["query_string"], _decode(body, request.headers.get("content-type", "")))
    # Read the log first (off the loop) to learn its model, fetch a Hub model, then plan. A model
    # the caller names must resolve (else a 4xx naming it); one the log names may not (a local
    # path, a served name, a Hub the cluster cannot reach): the answer then says so, and plans
    # from a preset of the same name where one matches.
    log = await run_heavy(request, "reconcile", lambda stop: read_log(req.log, stop))
    o = req.overrides or ReconcileOverrides()
    ref: ModelRef | None = None
    unresolved: str | None = None
    if o.model is not None or o.hf_config is not None:
        try:
            ref = model_ref(reg, o.model if o.hf_config is None else hf_model(o.hf_config, log))
        except InvalidInput as e:
            raise InvalidInput("overrides.model", e.reason) from None
        try:
            await prefetch(reg, [ref])
        except HubError as e:
            e.field = "overrides.model"
            raise
    elif isinstance(name := log.value("model"), str) and not name.startswith(("/", "./", "~", "..")):
        try:
            ref = model_ref(reg, name)
            await prefetch(reg, [ref])
        except (InvalidInput, HubError) as e:
            ref, unresolved = None, e.reason
    result = await run_heavy(
        request,
        "reconcile",
        lambda stop: counted("reconcile", lambda: reconcile(reg, log, req.metrics, o, ref, stop, unresolved)),
    )
    if fmt == "text":
        return answer(reconcile_text(result), True)
    return answer(msgspec.json.encode(result), False)
