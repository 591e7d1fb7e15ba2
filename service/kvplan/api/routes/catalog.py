"""What kvplan knows: models, GPUs, engine profiles; and resolving a config.json."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.openapi import ResponseSpec
from litestar.params import FromPath

from kvplan.core.engine.profiles import DEFAULT_PROFILE_ID, PROFILES, EngineProfile
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.parallel import valid_tensor_sizes
from kvplan.core.kv.pertoken import per_token
from kvplan.core.model.weights import LoadedWeights
from kvplan.core.units import gib
from kvplan.presets import GpuPreset, ModelPreset, Registry
from kvplan.schemas import GeometrySpec, Problem
from kvplan.services.scenarios import hub_ref_of, resolve_model, spec_from_geometry

from ..errors import ApiError
from ..http import answer, answer_format, decode_body, registry_of, structured
from ..hubfetch import prefetch
from ..offload import run_heavy
from ..openapi import ConfigBody, listing, single


class ModelSummary(msgspec.Struct):
    id: str
    name: str
    hf_repo: str
    attention: str
    layers: int
    layer_counts: dict[str, int]
    kv_heads: int
    head_dim: int
    max_position_embeddings: int
    params_total: int | None
    bytes_per_token: int


class ParamsInfo(msgspec.Struct):
    total: int | None
    active: int | None
    expert: int | None
    estimated: bool
    source: str


class ModelDetail(msgspec.Struct):
    id: str
    name: str
    hf_repo: str
    aliases: list[str]
    attention: str
    layer_counts: dict[str, int]
    geometry: GeometrySpec
    params: ParamsInfo
    config_source: str
    bytes_per_token: int
    mha_equivalent_ratio: float
    valid_tensor_parallel_sizes: list[int]
    registry_version: str
    # A Hub model: the commit read, and the checkpoint's weights as its safetensors headers say.
    hub: HubInfo | None = None
    loaded_weights: LoadedWeights | None = None


class HubInfo(msgspec.Struct):
    repo_id: str
    revision: str
    sha: str
    from_cache: bool


class ModelList(msgspec.Struct):
    registry_version: str
    models: list[ModelSummary]


class GpuInfo(msgspec.Struct, kw_only=True):
    id: str
    name: str
    vendor: str
    memory_bytes: int
    memory_source: str
    nominal: bool


class GpuList(msgspec.Struct):
    registry_version: str
    gpus: list[GpuInfo]


class GpuAnswer(GpuInfo, kw_only=True):
    registry_version: str


def _gpu_fields(g: GpuPreset) -> dict[str, Any]:
    return {
        "id": g.id,
        "name": g.name,
        "vendor": g.vendor,
        "memory_bytes": g.memory_bytes,
        "memory_source": g.memory_source,
        "nominal": g.nominal,
    }


class EngineList(msgspec.Struct):
    default: str
    engines: list[EngineProfile]


class Resolution(msgspec.Struct):
    """What a config.json means to kvplan: the geometry `model: {geometry: …}` accepts, the
    layer kinds and per-token bytes (model dtype, TP = 1), and the estimated parameters."""

    geometry: GeometrySpec
    attention: str
    layer_counts: dict[str, int]
    bytes_per_token: int
    mha_equivalent_ratio: float
    params: ParamsInfo
    valid_tensor_parallel_sizes: list[int]


def _summary(m: ModelPreset) -> ModelSummary:
    g = m.geometry
    return ModelSummary(
        m.id,
        m.name,
        m.hf_repo,
        g.attention_kind,
        g.num_layers,
        g.layer_counts(),
        1 if g.is_mla else g.num_kv_heads,
        g.head_dim,
        g.max_position_embeddings,
        g.params_total,
        per_token(g).bytes_per_token,
    )


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in [header, *rows]) + "\n"


_problem404 = ResponseSpec(
    data_container=Problem,
    description="unknown preset, with close matches",
    media_type="application/problem+json",
    generate_examples=False,
)


@get("/v1/models", **listing(ModelList, "every model preset"))
async def list_models(request: Request[Any, Any, Any]) -> Response[Any]:
    """Every model preset, with its attention kind and bf16 per-token bytes."""
    reg = registry_of(request)
    models = [_summary(m) for m in reg.models.values()]
    if answer_format(request) == "text":
        rows = [
            [
                m.id,
                m.attention,
                str(m.layers),
                str(m.kv_heads),
                str(m.head_dim),
                f"{m.bytes_per_token:,}",
                f"{(m.params_total or 0) / 1e9:,.1f}B",
            ]
            for m in models
        ]
        return answer(_table(["model", "attn", "L", "Hkv", "D", "B/token", "params"], rows), True)
    return answer(msgspec.json.encode(ModelList(reg.version, models)), False)


@get("/v1/models/{model_id:path}", **single(ModelDetail, "one model", _problem404))
async def get_model(request: Request[Any, Any, Any], model_id: FromPath[str]) -> Response[bytes]:
    """One model preset: its geometry (sendable inline), parameters and their sources.
    Accepts the preset id, its name or its Hugging Face repository."""
    reg = registry_of(request)
    name = model_id.lstrip("/")
    if hub_ref_of(reg, name) is not None:
        hub = await _hub_model(reg, name)
        return structured(request, hub, f"kvplan model · {hub.id}")
    m = reg.model(name, field="model_id")
    g = m.geometry
    pt = per_token(g)
    return structured(
        request,
        ModelDetail(
            m.id,
            m.name,
            m.hf_repo,
            list(m.aliases),
            g.attention_kind,
            g.layer_counts(),
            spec_from_geometry(g),
            ParamsInfo(g.params_total, g.params_active, g.params_expert, g.params_estimated, m.params_source),
            m.config_source,
            pt.bytes_per_token,
            pt.mha_equivalent_ratio,
            valid_tensor_sizes(g, 64),
            reg.version,
        ),
        f"kvplan model · {m.id}",
    )


async def _hub_model(reg: Registry, name: str) -> ModelDetail:
    """A model named by its Hub id: fetched off the event loop, read once per commit."""
    await prefetch(reg, [name])
    resolved = resolve_model(reg, name)
    hm, g = resolved.hub, resolved.geometry
    assert hm is not None
    pt = per_token(g)
    return ModelDetail(
        hm.label,
        hm.repo_id,
        hm.repo_id,
        [],
        g.attention_kind,
        g.layer_counts(),
        spec_from_geometry(g),
        ParamsInfo(
            g.params_total,
            g.params_active,
            g.params_expert,
            g.params_estimated,
            "estimated from config.json" if g.params_estimated else "",
        ),
        f"config.json of {hm.repo_id} at commit {hm.sha} on the Hub"
        + (" (from the cache: the Hub could not be asked)" if hm.from_cache else ""),
        pt.bytes_per_token,
        pt.mha_equivalent_ratio,
        valid_tensor_sizes(g, 64),
        reg.version,
        HubInfo(hm.repo_id, hm.revision, hm.sha, hm.from_cache),
        g.loaded_weights,
    )


@get("/v1/gpus", **listing(GpuList, "every GPU preset"))
async def list_gpus(request: Request[Any, Any, Any]) -> Response[Any]:
    """Every GPU preset with its memory in bytes and where that figure comes from."""
    reg = registry_of(request)
    if answer_format(request) == "text":
        rows = [
            [
                g.id,
                g.name,
                f"{g.memory_bytes:,}",
                gib(g.memory_bytes),
                "nominal" if g.nominal else "driver",
            ]
            for g in reg.gpus.values()
        ]
        return answer(_table(["gpu", "name", "bytes", "GiB", "source"], rows), True)
    return answer(
        msgspec.json.encode(GpuList(reg.version, [GpuInfo(**_gpu_fields(g)) for g in reg.gpus.values()])),
        False,
    )


@get("/v1/gpus/{gpu_id:str}", **single(GpuAnswer, "one GPU", _problem404))
async def get_gpu(request: Request[Any, Any, Any], gpu_id: FromPath[str]) -> Response[bytes]:
    """One GPU preset."""
    reg = registry_of(request)
    g = reg.gpu(gpu_id, field="gpu_id")
    return structured(
        request, GpuAnswer(**_gpu_fields(g), registry_version=reg.version), f"kvplan GPU · {g.id}"
    )


@get("/v1/engines", **single(EngineList, "the engine profiles"))
async def list_engines(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The engine profiles: the vLLM rules that differ between versions. Every answer names one."""
    return structured(
        request, EngineList(DEFAULT_PROFILE_ID, list(PROFILES.values())), "kvplan engine profiles"
    )


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
        if hub_ref_of(reg, config) is None:
            detail = "a JSON string must be a Hub id (org/name[@revision]); presets: GET /v1/models/{id}"
            raise ApiError(400, detail, field="model")
        await prefetch(reg, [config])
        model = resolve_model(reg, config).hub
        assert model is not None
        config = model.config
    return await run_heavy(request, "resolve", lambda _stop: _resolution(config))


def _resolution(config: dict[str, Any]) -> Resolution:
    g = from_hf_config(config, name=str(config.get("_name_or_path") or "custom")[:200])
    pt = per_token(g)
    return Resolution(
        spec_from_geometry(g),
        g.attention_kind,
        g.layer_counts(),
        pt.bytes_per_token,
        pt.mha_equivalent_ratio,
        ParamsInfo(
            g.params_total,
            g.params_active,
            g.params_expert,
            g.params_estimated,
            "estimated from config.json" if g.params_estimated else "",
        ),
        valid_tensor_sizes(g, 64),
    )
