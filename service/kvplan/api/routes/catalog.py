"""What kvplan knows: models, GPUs, engine profiles; and resolving a config.json."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.openapi import ResponseSpec
from litestar.params import FromPath

from kvplan.hub import HubRef
from kvplan.schemas import Problem
from kvplan.services.catalog import (
    EngineList,
    GpuAnswer,
    GpuList,
    ModelDetail,
    ModelList,
    Resolution,
    engine_list,
    gpu_answer,
    gpu_list,
    gpu_list_text,
    hub_config,
    model_detail,
    model_list,
    model_list_text,
    resolution,
)
from kvplan.services.models import model_ref

from ..errors import ApiError
from ..http import answer, answer_format, decode_body, registry_of, structured
from ..hubfetch import prefetch
from ..offload import run_heavy
from ..openapi import ConfigBody, listing, single

_problem404 = ResponseSpec(
    data_container=Problem,
    description="unknown preset, with close matches",
    media_type="application/problem+json",
    generate_examples=False,
)


@get("/v1/models", **listing(ModelList, "every model preset"))
async def list_models(request: Request[Any, Any, Any]) -> Response[Any]:
    """Every model preset, with its attention kind and bf16 per-token bytes."""
    models = model_list(registry_of(request))
    if answer_format(request) == "text":
        return answer(model_list_text(models), True)
    return answer(msgspec.json.encode(models), False)


@get("/v1/models/{model_id:path}", **single(ModelDetail, "one model", _problem404))
async def get_model(request: Request[Any, Any, Any], model_id: FromPath[str]) -> Response[bytes]:
    """One model preset: its geometry (sendable inline), parameters and their sources.
    Accepts the preset id, its name or its Hugging Face repository."""
    reg = registry_of(request)
    ref = model_ref(reg, model_id.lstrip("/"))
    await prefetch(reg, [ref])  # a Hub model, off the event loop; read once per commit
    detail = model_detail(reg, ref)  # type: ignore[arg-type]  # a string is no inline model
    return structured(request, detail, f"kvplan model · {detail.id}")


@get("/v1/gpus", **listing(GpuList, "every GPU preset"))
async def list_gpus(request: Request[Any, Any, Any]) -> Response[Any]:
    """Every GPU preset with its memory in bytes and where that figure comes from."""
    reg = registry_of(request)
    if answer_format(request) == "text":
        return answer(gpu_list_text(reg), True)
    return answer(msgspec.json.encode(gpu_list(reg)), False)


@get("/v1/gpus/{gpu_id:str}", **single(GpuAnswer, "one GPU", _problem404))
async def get_gpu(request: Request[Any, Any, Any], gpu_id: FromPath[str]) -> Response[bytes]:
    """One GPU preset."""
    g = gpu_answer(registry_of(request), gpu_id)
    return structured(request, g, f"kvplan GPU · {g.id}")


@get("/v1/engines", **single(EngineList, "the engine profiles"))
async def list_engines(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The engine profiles: the vLLM rules that differ between versions. Every answer names one."""
    return structured(request, engine_list(), "kvplan engine profiles")


@post(
    "/v1/models/resolve",
    status_code=200,
    tags=["catalog"],
    operation_class=ConfigBody,
    responses={
        400: ResponseSpec(
            data_container=Problem,
            description="the config cannot be interpreted",
            media_type="application/problem+json",
            generate_examples=False,
        )
    },
)
async def resolve_config(request: Request[Any, Any, Any]) -> Resolution:
    """A Hugging Face config.json in (or a Hub id as a JSON string, `"org/name@rev"`); the
    geometry kvplan derives from it out. Reading a config (up to thousands of layers) runs in the
    heavy pool, off the event loop; a Hub id is fetched first, in the Hub pool."""
    config = await decode_body(request, dict[str, Any] | str)
    if (
        isinstance(config, dict)
        and set(config) <= {"hf_config", "name"}
        and isinstance(config.get("hf_config"), dict)
    ):
        config = config["hf_config"]  # the shape the other endpoints take a model in: {"hf_config": {…}}
    if isinstance(config, str):
        reg = registry_of(request)
        ref = model_ref(reg, config)
        if not isinstance(ref, HubRef):
            detail = "a JSON string must be a Hub id (org/name[@revision]); presets: GET /v1/models/{id}"
            raise ApiError(400, detail, field="model")
        await prefetch(reg, [ref])
        config = hub_config(reg, ref)
    return await run_heavy(request, "resolve", lambda stop: resolution(config, stop))
