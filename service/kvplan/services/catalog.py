"""What kvplan knows, as answers: the model and GPU presets, the engine profiles, one model's
details (a preset, or a Hub model at its commit), and what a config.json means. The catalog
routes (api/routes/catalog.py) decode and encode; every answer is built here, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from kvplan.core.engine.profiles import DEFAULT_PROFILE_ID, PROFILES, EngineProfile
from kvplan.core.errors import WorkStopped
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.parallel import valid_tensor_sizes
from kvplan.core.kv.pertoken import per_token
from kvplan.core.model.geometry import Geometry
from kvplan.core.model.weights import LoadedWeights
from kvplan.core.units import gib
from kvplan.hub import HubRef
from kvplan.presets import GpuInfo, GpuPreset, ModelPreset, Registry
from kvplan.schemas import GeometrySpec

from .inline import spec_from_geometry
from .models import Preset, resolve

# The largest tensor-parallel size a model's detail lists as valid.
LISTED_TP_UP_TO = 64


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


class GpuList(msgspec.Struct):
    registry_version: str
    gpus: list[GpuInfo]


class GpuAnswer(GpuInfo, kw_only=True):
    registry_version: str


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


def model_list(registry: Registry) -> ModelList:
    """Every model preset, with its attention kind and bf16 per-token bytes."""
    return ModelList(registry.version, [_summary(m) for m in registry.models.values()])


def _params(g: Geometry, source: str | None = None) -> ParamsInfo:
    """The parameter counts and where they come from (a config read: estimated from it, or not)."""
    if source is None:
        source = "estimated from config.json" if g.params_estimated else ""
    return ParamsInfo(g.params_total, g.params_active, g.params_expert, g.params_estimated, source)


def model_detail(registry: Registry, ref: Preset | HubRef) -> ModelDetail:
    """One model: its geometry (sendable inline), parameters and their sources. A preset by its
    id, name or repository; a Hub model at the commit the Hub client holds (fetched first)."""
    if isinstance(ref, Preset):
        m = registry.model(ref.name, field="model_id")
        params = _params(m.geometry, m.params_source)
        return _detail(
            registry, m.geometry, m.id, m.name, m.hf_repo, list(m.aliases), params, m.config_source
        )  # fmt: skip
    resolved = resolve(registry, ref)
    hm, g = resolved.hub, resolved.geometry
    assert hm is not None
    source = f"config.json of {hm.repo_id} at commit {hm.sha} on the Hub" + (
        " (from the cache: the Hub could not be asked)" if hm.from_cache else ""
    )
    return _detail(
        registry, g, hm.label, hm.repo_id, hm.repo_id, [], _params(g), source,
        HubInfo(hm.repo_id, hm.revision, hm.sha, hm.from_cache), g.loaded_weights,
    )  # fmt: skip


def _detail(
    registry: Registry, g: Geometry, id: str, name: str, hf_repo: str, aliases: list[str], params: ParamsInfo,
    config_source: str, hub: HubInfo | None = None, loaded_weights: LoadedWeights | None = None,
) -> ModelDetail:  # fmt: skip
    pt = per_token(g)
    return ModelDetail(
        id, name, hf_repo, aliases, g.attention_kind, g.layer_counts(), spec_from_geometry(g), params,
        config_source, pt.bytes_per_token, pt.mha_equivalent_ratio, valid_tensor_sizes(g, LISTED_TP_UP_TO),
        registry.version, hub, loaded_weights,
    )  # fmt: skip


def resolution(config: dict[str, Any], should_stop: Callable[[], bool] | None = None) -> Resolution:
    """What a config.json means: read as an inline hf_config is (name from _name_or_path).
    should_stop() is asked once the config is read, before its figures are computed."""
    g = from_hf_config(config, name=str(config.get("_name_or_path") or "custom")[:200])
    if should_stop is not None and should_stop():
        raise WorkStopped("stopped after reading the config")
    pt = per_token(g)
    return Resolution(
        spec_from_geometry(g),
        g.attention_kind,
        g.layer_counts(),
        pt.bytes_per_token,
        pt.mha_equivalent_ratio,
        _params(g),
        valid_tensor_sizes(g, LISTED_TP_UP_TO),
    )


def hub_config(registry: Registry, ref: HubRef) -> dict[str, Any]:
    """The config.json of a Hub model at the commit the Hub client holds (fetched first)."""
    hm = resolve(registry, ref).hub
    assert hm is not None
    return hm.config


def _gpu_fields(g: GpuPreset) -> dict[str, Any]:
    """What the catalog shows of a preset: its GpuInfo fields."""
    return {f: getattr(g, f) for f in GpuInfo.__struct_fields__}


def gpu_list(registry: Registry) -> GpuList:
    """Every GPU preset with its memory in bytes and where that figure comes from."""
    return GpuList(registry.version, [GpuInfo(**_gpu_fields(g)) for g in registry.gpus.values()])


def gpu_answer(registry: Registry, gpu_id: str) -> GpuAnswer:
    """One GPU preset."""
    g = registry.gpu(gpu_id, field="gpu_id")
    return GpuAnswer(**_gpu_fields(g), registry_version=registry.version)


def engine_list() -> EngineList:
    """The engine profiles: the vLLM rules that differ between versions."""
    return EngineList(DEFAULT_PROFILE_ID, list(PROFILES.values()))


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join(fmt.format(*r) for r in [header, *rows]) + "\n"


def model_list_text(models: ModelList) -> str:
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
        for m in models.models
    ]
    return _table(["model", "attn", "L", "Hkv", "D", "B/token", "params"], rows)


def gpu_list_text(registry: Registry) -> str:
    rows = [
        [g.id, g.name, f"{g.memory_bytes:,}", gib(g.memory_bytes), "nominal" if g.nominal else "driver"]
        for g in registry.gpus.values()
    ]
    return _table(["gpu", "name", "bytes", "GiB", "source"], rows)
