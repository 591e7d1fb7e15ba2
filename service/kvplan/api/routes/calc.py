"""Calculations: /v1/per-token, /v1/budget (GET and POST) and /v1/budget/batch."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import msgspec
from litestar import Request, Response, get, post

from kvplan.core.budget import Budget
from kvplan.core.errors import KvplanError, WorkStopped
from kvplan.core.limits import MAX_BATCH_LAYER_PASSES
from kvplan.hub import HubError
from kvplan.presets import Registry
from kvplan.render import batch_text, budget_text, command_text, per_token_text
from kvplan.schemas import BatchRequest, BudgetRequest, PerTokenRequest, unknown_field
from kvplan.schemas.plan import PlanRequest
from kvplan.services.answers import budget_answer, encode_answer, per_token_answer
from kvplan.services.cache import Answer, AnswerCache
from kvplan.services.models import Inline, ModelRef, cacheable, model_layers, model_ref
from kvplan.services.plan import budget_question, plan_budget
from kvplan.services.query import decode_pairs
from kvplan.services.scenarios import Resolutions, draft_name

from .. import metrics
from ..errors import ApiError, problem_for
from ..http import (
    answer,
    answer_format,
    decode_body,
    decoder,
    explain_wanted,
    header,
    not_modified,
    query_pairs,
    query_param,
    registry_of,
    text_wanted,
    text_width,
    wants_explain,
)
from ..hubfetch import prefetch
from ..metrics import count, count_warnings, counted
from ..offload import ShouldStop, run_heavy
from ..openapi import doc, plan_doc
from ..settings import Settings

T = TypeVar("T")
_core_budget = metrics.CORE_SECONDS.labels("budget")
_core_batch = metrics.CORE_SECONDS.labels("budget_batch")
_core_pt = metrics.CORE_SECONDS.labels("per_token")
_core_plan = metrics.CORE_SECONDS.labels("plan")
# A command longer than this is read in the heavy pool: ~2 ms of reading on the event loop at most
# (a 64 KiB command of thousands of flags takes ~35 ms).
LONG_COMMAND_CHARS = 4096


def _never() -> bool:
    return False


async def _light_or_heavy(
    request: Request[Any, Any, Any], endpoint: str, inline: bool, work: Callable[[ShouldStop], T]
) -> T:
    """Presets are answered on the event loop (memoised, microseconds); a model sent inline
    (a config.json to read, up to thousands of layers) goes to the heavy pool, where the work
    asks should_stop() between reading the model and planning it."""
    if not inline:
        return work(_never)
    return await run_heavy(request, endpoint, work)


async def _per_token(request: Request[Any, Any, Any], req: PerTokenRequest) -> Response[bytes]:
    reg = registry_of(request)
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    text, explain = answer_format(request) == "text", wants_explain(request)
    pt, labels = await _light_or_heavy(
        request,
        "per_token",
        not isinstance(req.model, str),
        lambda stop: counted(
            "per_token", lambda: per_token_answer(reg, req, explain or text, _core_pt.observe, ref, stop)
        ),
    )
    count_warnings(tuple(w.code for w in pt.warnings))
    if text:
        width = text_width(query_param(request, "width"))
        return answer(per_token_text(pt, labels["model"], labels["engine"], reg.version, width), True)
    return answer(encode_answer(labels, pt), False)


def _budget_bytes(
    reg: Registry,
    req: BudgetRequest,
    ref: ModelRef,
    explain: bool,
    resolutions: Resolutions | None = None,
    observe: Callable[[float], None] = _core_budget.observe,
    should_stop: ShouldStop | None = None,
) -> tuple[Budget, str, str | None, bytes]:
    b, labels = budget_answer(reg, req, explain, observe, resolutions, ref, should_stop)
    return b, labels["model"], labels["gpu"], encode_answer(labels, b)


# One answer cache per worker for every budget and per-token answer (services/cache.py).
_cache = AnswerCache(Settings().answer_cache_bytes)


async def _prefetch_draft(reg: Registry, req: BudgetRequest) -> None:
    """The speculative draft a request names, fetched like its model; a draft the Hub cannot give
    is left for the answer to refuse, naming speculative_model."""
    name = draft_name(req)
    if name is not None:
        await prefetch(reg, [name], each_alone=True)


async def _budget(request: Request[Any, Any, Any], req: BudgetRequest) -> Response[bytes]:
    reg = registry_of(request)
    ref = model_ref(reg, req.model)
    await prefetch(reg, [ref])
    await _prefetch_draft(reg, req)
    text, explain = answer_format(request) == "text", wants_explain(request)
    b, label, gpu, body = await _light_or_heavy(
        request,
        "budget",
        not isinstance(req.model, str),
        lambda stop: counted(
            "budget", lambda: _budget_bytes(reg, req, ref, explain or text, should_stop=stop)
        ),
    )
    count_warnings(tuple(w.code for w in b.warnings))
    if text:
        width = text_width(query_param(request, "width"))
        return answer(budget_text(b, label, gpu, reg.version, width, reg.gpus.get(gpu or "")), True)
    return answer(body, False)


@post("/v1/per-token", status_code=200, **doc("per_token", PerTokenRequest, "post"))
async def per_token_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Bytes one token of KV costs: per layer kind, on one GPU after TP/PP, and for the model."""
    return await _per_token(request, await decode_body(request, PerTokenRequest))


@get("/v1/per-token", **doc("per_token", PerTokenRequest, "get"))
async def per_token_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The same as POST, with the fields as query parameters (nested ones dotted)."""
    return await _get(request, "per_token")


@post("/v1/budget", status_code=200, **doc("budget", BudgetRequest, "post"))
async def budget_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """How much of the GPU is left for KV, the blocks it makes and the requests they hold."""
    if answer_format(request) == "text":
        return await _budget(request, await decode_body(request, BudgetRequest))
    reg, explain = registry_of(request), wants_explain(request)
    raw = await request.body()
    seen = _cache.indexed(_cache.prefix(reg.version, "raw-budget", str(explain)) + raw)
    if seen is not None:
        body, codes = seen[0]
        count("budget", "ok")
    else:
        req = await decode_body(request, BudgetRequest)
        ref = model_ref(reg, req.model)
        await prefetch(reg, [ref])

        def compute(stop: ShouldStop) -> Answer:
            b, _, _, body = _budget_bytes(reg, req, ref, explain, should_stop=stop)
            return body, tuple(w.code for w in b.warnings)

        body, codes = await _light_or_heavy(
            request,
            "budget",
            not isinstance(req.model, str),
            lambda stop: counted(
                "budget", lambda: _cache.budget_json(reg, req, ref, explain, raw, lambda: compute(stop))
            ),
        )
    count_warnings(codes)
    return answer(body, False)


@get("/v1/budget", **doc("budget", BudgetRequest, "get"))
async def budget_get(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The same as POST, with the fields as query parameters (nested ones dotted)."""
    return await _get(request, "budget")


async def _get(request: Request[Any, Any, Any], kind: str) -> Response[bytes]:
    accept_text = text_wanted(None, header(request, b"accept"))
    query = request.scope["query_string"]
    reg = registry_of(request)
    named: tuple[str, ModelRef] | None = None
    if b"/" in query or b"%2f" in query.lower():  # a Hub id (org/name) may be in the query
        models = [v for k, v in query_pairs(query) if k == "model"]
        refs = [model_ref(reg, m) for m in models]
        await prefetch(reg, refs)
        named = (models[-1], refs[-1]) if models else None  # the one the request decodes to
    body, text, etag, codes = await _light_or_heavy(
        request,
        kind,
        b"model." in query,  # an inline model, spelled out in dotted parameters
        lambda stop: counted(kind, lambda: _get_answer(reg, kind, query, accept_text, named, stop)),
    )
    count_warnings(codes)
    return not_modified(request, etag) or answer(body, text, etag)


def _get_answer(
    reg: Registry,
    kind: str,
    query: bytes,
    accept_text: bool,
    named: tuple[str, ModelRef] | None,
    should_stop: ShouldStop,
) -> tuple[bytes, bool, str, tuple[str, ...]]:
    """A GET answer, its format, ETag and warning codes (kept in the answer cache)."""
    raw_key = _cache.prefix(reg.version, "raw-get", kind, str(accept_text)) + query
    seen = _cache.indexed(raw_key)
    if seen is not None:
        (body, codes), etag, text = seen
        return body, text, etag, codes
    pairs = query_pairs(query)
    params = dict(pairs)
    fmt, explain_raw = params.get("format"), params.get("explain")
    text, explain = text_wanted(fmt, "text/plain" if accept_text else ""), explain_wanted(explain_raw)
    req_type = BudgetRequest if kind == "budget" else PerTokenRequest
    req = decode_pairs(pairs, req_type)
    width = text_width(params.get("width")) if text else 100
    ref = named[1] if named is not None and req.model == named[0] else model_ref(reg, req.model)
    flavour = (kind, "text" if text else "json", str(explain), str(width))
    return _cache.get_answer(
        reg,
        raw_key,
        req,
        ref,
        flavour,
        text,
        lambda: _compute_get(reg, req, ref, text, explain, width, should_stop),
    )


def _compute_get(
    reg: Registry,
    req: BudgetRequest | PerTokenRequest,
    ref: ModelRef,
    text: bool,
    explain: bool,
    width: int,
    should_stop: ShouldStop,
) -> Answer:
    if isinstance(req, BudgetRequest):
        b, label, gpu, body = _budget_bytes(reg, req, ref, explain or text, should_stop=should_stop)
        codes = tuple(w.code for w in b.warnings)
        if text:
            body = budget_text(b, label, gpu, reg.version, width, reg.gpus.get(gpu or "")).encode()
    else:
        pt, labels = per_token_answer(reg, req, explain or text, _core_pt.observe, ref, should_stop)
        codes = tuple(w.code for w in pt.warnings)
        if text:
            body = per_token_text(pt, labels["model"], labels["engine"], reg.version, width).encode()
        else:
            body = encode_answer(labels, pt)
    return body, codes


@post("/v1/budget/batch", status_code=200, **doc("batch", BatchRequest, "post"))
async def budget_batch(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Up to 1000 budget scenarios in one call (MAX_BATCH). Each gets a result or an error, in order;
    one bad scenario does not fail the others. The batch's work is bounded before it starts, and it
    runs off the event loop (decoding included)."""
    body = await request.body()
    if not body.strip():
        await decode_body(request, BatchRequest)  # the empty-body problem
    reg, explain = registry_of(request), wants_explain(request)
    text = answer_format(request) == "text"
    named: dict[str, ModelRef | Exception] = {}
    if b"/" in body or b"\\u002f" in body.lower():  # a scenario may name a Hub model (org/name)
        named = await run_heavy(request, "budget_batch", lambda _stop: _batch_models(reg, body))
        await prefetch(reg, [r for r in named.values() if not isinstance(r, Exception)], each_alone=True)
    result = await run_heavy(request, "budget_batch", lambda stop: _batch(reg, body, explain, stop, named))
    if text:
        return answer(batch_text(msgspec.json.decode(result)["results"]), True)
    return answer(result, False)


class _ModelOf(msgspec.Struct):
    model: Any = None


def _batch_models(reg: Registry, body: bytes) -> dict[str, ModelRef | Exception]:
    """The models a batch's scenarios name, parsed, read before the Hub ones are fetched; a model
    that does not parse (or a scenario that does not decode) fails its scenario alone, in _batch."""
    decode, named = decoder(_ModelOf).decode, {}
    for raw in decoder(BatchRequest).decode(body).scenarios:
        try:
            model = decode(raw).model
        except (msgspec.MsgspecError, RecursionError):
            continue
        if isinstance(model, str) and model not in named:
            try:
                named[model] = model_ref(reg, model)
            except KvplanError as e:
                named[model] = e
    return named


# A batch item: an answer found under its raw form, a decoded scenario with the key its answer
# will be kept under, or the error that decoding it raised. A batch keys answers by the raw
# scenario (one lookup, no re-encoding): the scenarios of a batch an autoscaler repeats come back
# byte for byte, and the cache stays bounded in bytes whatever the spelling.
class _Pending(NamedTuple):
    req: BudgetRequest
    key: bytes
    ref: ModelRef


Scenario = Answer | _Pending | Exception


def _batch(
    reg: Registry, body: bytes, explain: bool, should_stop: ShouldStop, named: dict[str, ModelRef | Exception]
) -> bytes:
    """Each scenario decoded, its model parsed (once a batch for a named one: `named` holds those
    parsed before the Hub ones were fetched) and its work counted, then answered in order."""
    batch = decoder(BatchRequest).decode(body)
    scenarios: list[Scenario] = []
    passes = 0
    prefix = _cache.prefix(reg.version, "batch", str(explain))
    decode = decoder(BudgetRequest).decode
    layers: dict[str, int] = {}  # a named model's layers, read once a batch
    for raw in batch.scenarios:
        key = prefix + bytes(raw)
        seen = _cache.answers.get(key)
        if seen is not None:
            scenarios.append(seen)
            continue
        try:
            req = decode(raw)
            model = req.model
            if isinstance(model, str):
                ref = named.get(model)
                if ref is None:
                    ref = named[model] = model_ref(reg, model)
                elif isinstance(ref, Exception):
                    raise ref
                n = layers.get(model)
                if n is None:
                    n = layers[model] = model_layers(reg, ref)
            else:
                ref = model_ref(reg, model)
                n = model_layers(reg, ref)
            passes += n + req.pipeline_parallel_size
            scenarios.append(_Pending(req, key, ref))
        except msgspec.ValidationError as e:
            scenarios.append(unknown_field(e, BudgetRequest) or e)
        except (KvplanError, HubError, msgspec.MsgspecError, RecursionError) as e:
            scenarios.append(e)
    if passes > MAX_BATCH_LAYER_PASSES:
        raise ApiError(
            400,
            f"the batch needs {passes:,} layer passes (Σ layers + pipeline stages over its scenarios); "
            f"the limit is {MAX_BATCH_LAYER_PASSES:,}: split it",
            field="scenarios",
        )
    return _run_batch(reg, scenarios, explain, should_stop)


def _run_batch(reg: Registry, scenarios: list[Scenario], explain: bool, should_stop: ShouldStop) -> bytes:
    """The batch answer's JSON bytes: {"results": [...]}, one item a scenario in order, its
    answer ({"index", "result"}) or its problem ({"index", "error"}, the field prefixed with
    scenarios[i]). Apart from _batch, which decodes and counts the whole batch's work before any
    is done, so that a batch over the limit is refused whole: this runs the scenarios, answers a
    repeated one once, offers the answers of cacheable models to the answer cache, stops between
    scenarios when asked (WorkStopped), and records the core's time, the warnings and the
    outcomes once for the batch."""
    # The answer's pieces, joined once at the end: each answer's bytes are copied once, not twice.
    parts = [b'{"results":[']
    ok = bad = 0
    answered: dict[bytes, Answer] = {}  # a scenario repeated within the batch
    keep: dict[ModelRef, bool] = {}  # whether a named model's answers may be cached, once a model
    warned: dict[tuple[str, ...], int] = {}  # answers by their warning codes (most share one tuple)
    resolutions = Resolutions(reg)
    core_seconds: list[float] = []  # each scenario's core run, observed at once at the end
    t0 = time.perf_counter()
    try:
        for i, item in enumerate(scenarios):
            if should_stop():
                raise WorkStopped(f"{i} of {len(scenarios)} scenarios answered")
            try:
                if isinstance(item, Exception):
                    raise item
                if isinstance(item, _Pending):
                    req, key, ref = item
                    hit = answered.get(key)
                    if hit is None:
                        b, _, _, body = _budget_bytes(
                            reg, req, ref, explain, resolutions, core_seconds.append
                        )
                        hit = answered[key] = (body, tuple(w.code for w in b.warnings))
                        inline = isinstance(ref, Inline)  # each inline model is its own (and unhashable)
                        cache = None if inline else keep.get(ref)
                        if cache is None:
                            cache = cacheable(ref)
                            if not inline:
                                keep[ref] = cache
                        if cache:
                            _cache.answers.offer(key, hit, len(body))
                    body, codes = hit
                else:
                    body, codes = item
            except (KvplanError, HubError, msgspec.MsgspecError, RecursionError) as e:
                bad += 1
                problem = problem_for(e)
                if problem.field:
                    problem = msgspec.structs.replace(problem, field=f"scenarios[{i}].{problem.field}")
                parts += (
                    b',{"index":%d,"error":' % i if i else b'{"index":0,"error":',
                    msgspec.json.encode(problem),
                    b"}",
                )
                continue
            ok += 1
            warned[codes] = warned.get(codes, 0) + 1
            parts += (b',{"index":%d,"result":' % i if i else b'{"index":0,"result":', body, b"}")
    finally:  # a batch stopped midway still counts the core runs it made
        metrics.observe_all(_core_budget, core_seconds)
    _core_batch.observe(time.perf_counter() - t0)
    by_code: Counter[str] = Counter()
    for codes, n in warned.items():
        for code in codes:
            by_code[code] += n
    count_warnings(by_code)
    count("budget_batch", "ok", ok)
    if bad:
        count("budget_batch", "invalid", bad)
    parts.append(b"]}")
    return b"".join(parts)


@post("/v1/plan", status_code=200, **plan_doc())
async def plan_post(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The plan of a `vllm serve` command (or vLLM's `non-default args` line): the same answer as
    /v1/budget for what the command says, with any budget field sent beside it winning, and how
    each flag was read (`command`)."""
    reg = registry_of(request)
    body = await request.body()
    req = await decode_body(request, PlanRequest)
    given = set(msgspec.json.decode(body))  # decoded above: a JSON object
    text, explain = answer_format(request) == "text", wants_explain(request)
    # A long command (up to MAX_COMMAND_CHARS, thousands of words) is read off the event loop.
    question, command = await _light_or_heavy(
        request,
        "plan",
        len(req.command) + len(str(req.config or "")) > LONG_COMMAND_CHARS,
        lambda stop: counted("plan", lambda: budget_question(req, given)),
    )
    ref = model_ref(reg, question.model)
    await prefetch(reg, [ref])
    await _prefetch_draft(reg, question)
    b, labels, command = await _light_or_heavy(
        request,
        "plan",
        not isinstance(question.model, str),
        lambda stop: counted(
            "plan", lambda: plan_budget(reg, question, command, explain or text, _core_plan.observe, stop)
        ),
    )
    count_warnings(tuple(w.code for w in b.warnings))
    if text:
        width = text_width(query_param(request, "width"))
        gpu = labels["gpu"]
        return answer(
            command_text(command, width).lstrip("\n")
            + "\n"
            + budget_text(b, labels["model"], gpu, reg.version, width, reg.gpus.get(gpu or "")),
            True,
        )
    return answer(encode_answer({**labels, "command": command}, b), False)
