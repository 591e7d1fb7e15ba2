"""The service layer: a decoded request becomes the core's input. Names become presets, inline
models become geometry, and every engine default is left to the profile (core/budget/defaults.py),
so budget, fleet, sweep and simulate resolve one scenario the same way. The HTTP routes and the
CLI both call this; neither builds core inputs itself."""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import msgspec

from kvplan.core.budget import BudgetInput, compute_budget, settings_for
from kvplan.core.engine.dtypes import MODEL_DTYPE_ALIASES
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput
from kvplan.core.fleet.plan import FleetEntry, FleetInput, Layout, MixItem
from kvplan.core.hf.defaults import DEFAULTS
from kvplan.core.hf.reader import from_hf_config, language_config
from kvplan.core.kv.parallel import Parallel
from kvplan.core.model.geometry import (
    FULL,
    KIND_NAMES,
    MLA,
    Geometry,
    QsaCaches,
    make_dsv4_geometry,
    make_geometry,
)
from kvplan.core.model.mamba import MambaState, Mixer
from kvplan.core.model.quant import quantization_arg
from kvplan.core.sim.simulate import Generator, SimConfig, SimRequest
from kvplan.hub import Hub, HubModel, HubRef, ModelUnreadable, default_hub, looks_like_hub_id, parse_hub_ref
from kvplan.presets import Registry
from kvplan.presets.registry import GpuPreset
from kvplan.schemas import (
    BudgetRequest,
    FleetGpu,
    FleetQuery,
    FleetRequest,
    GeometrySpec,
    MambaStateSpec,
    ModelSpec,
    PerTokenRequest,
    QsaSpec,
    SimulateRequest,
    Workload,
)


class Resolved:
    """A model as the core needs it, plus the label answers carry."""

    __slots__ = ("geometry", "hub", "label")

    def __init__(self, geometry: Geometry, label: str, hub: HubModel | None = None) -> None:
        self.geometry = geometry
        self.label = label
        self.hub = hub

    def labels(self) -> dict[str, Any]:
        """What an answer says about its model: the label, and for a Hub model the commit it read
        and whether that came from the cache because the Hub could not be asked."""
        if self.hub is None:
            return {"model": self.label}
        h = self.hub
        return {
            "model": self.label,
            "hub": {"repo_id": h.repo_id, "revision": h.revision, "sha": h.sha, "from_cache": h.from_cache},
        }


def hub_ref_of(registry: Registry, model: object) -> HubRef | None:
    """The Hub reference a request's model names, or None for a preset or an inline model. A Hub id
    that is also a preset alias answers from the preset (offline) unless it pins a revision."""
    if not isinstance(model, str) or not looks_like_hub_id(model):
        return None
    if "@" not in model and registry.has_model(model):
        return None
    return parse_hub_ref(model)


_hub_geometries: dict[str, Geometry] = {}
_HUB_GEOMETRIES_KEPT = 256
_hub_geometries_lock = threading.Lock()


def hub_geometry(hm: HubModel) -> Geometry:
    """The geometry of a Hub model at its commit (read once per commit), with the checkpoint's
    own weights."""
    geo = _hub_geometries.get(hm.label)
    if geo is None:
        try:
            geo = from_hf_config(hm.config, name=hm.label, quantization=hm.weights is None)
        except InvalidInput as e:  # the repo's config, not the request, is at fault: a 422
            raise ModelUnreadable(f"{hm.label}'s config.json: {e.field}: {e.reason}") from None
        if hm.weights is not None:
            geo = msgspec.structs.replace(geo, loaded_weights=hm.weights)
        with _hub_geometries_lock:  # the event loop and the heavy pool's threads both read models
            while len(_hub_geometries) >= _HUB_GEOMETRIES_KEPT:
                _hub_geometries.pop(next(iter(_hub_geometries)))
            _hub_geometries[hm.label] = geo
    return geo


def resolve_model(registry: Registry, model: str | ModelSpec, hub: Hub | None = None) -> Resolved:
    if isinstance(model, str):
        ref = hub_ref_of(registry, model)
        if ref is None:
            preset = registry.model(model)
            return Resolved(preset.geometry, preset.id)
        hm = (hub or default_hub()).resolve(ref)
        return Resolved(hub_geometry(hm), hm.label, hm)
    given = (model.hf_config is not None) + (model.geometry is not None)
    if given != 1:
        raise InvalidInput("model", "give exactly one of hf_config or geometry (or a preset id string)")
    if model.hf_config is not None:
        name = model.name or str(model.hf_config.get("_name_or_path") or "custom")[:200]
        try:
            return Resolved(from_hf_config(model.hf_config, name=name), name)
        except InvalidInput as e:
            raise type(e)(f"model.hf_config.{e.field}", e.reason) from None
    assert model.geometry is not None
    return Resolved(geometry_from_spec(model.geometry, model.name), model.name or model.geometry.name)


# Fields the inline geometry and the core's Geometry share by name and meaning.
_SAME = ("num_layers", "num_attention_heads", "sliding_window", "dtype", "max_position_embeddings",
         "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "mla_v_head_dim", "index_head_dim",
         "mamba_state_bytes", "attention_chunk_size", "full_head_dim", "full_kv_heads",
         "sliding_mla_dim", "mla_row_dim", "indexer_dim", "sconv_kernel_size", "sconv_hidden_size",
         "num_decoder_layers", "params_total",
         "params_active", "params_expert", "weight_dtype")  # fmt: skip
_STATE_DIMS = ("conv_kernel", "state_size", "intermediate_size", "n_groups", "num_heads", "head_dim",
               "num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim", "checkpoint_blocks",
               "replicated_state_bytes")  # fmt: skip


def _dtype(name: str) -> str:
    return MODEL_DTYPE_ALIASES.get(name, name)


def geometry_from_spec(g: GeometrySpec, name: str | None = None) -> Geometry:
    if g.compress_ratios is not None:
        return _dsv4_from_spec(g, name)
    mamba = None
    if g.mamba is not None:
        mamba = MambaState(
            mixer=Mixer(g.mamba.mixer),
            conv_dtype=_dtype(g.mamba.conv_dtype),
            ssm_dtype=_dtype(g.mamba.ssm_dtype),
            **{f: getattr(g.mamba, f) for f in _STATE_DIMS},
        )
    same = {f: getattr(g, f) for f in _SAME}
    kpool = None
    if g.index_kpool is not None:  # GLM-5-next: index_head_dim is its kpool indexer's
        if g.index_head_dim is None:
            raise InvalidInput("model.geometry.index_head_dim", "required with index_kpool")
        kpool, same["index_head_dim"] = (g.index_head_dim, g.index_kpool), None
    return make_geometry(
        name=name or g.name,
        num_kv_heads=g.num_kv_heads,
        head_dim=g.head_dim,
        v_head_dim=g.v_head_dim,
        layer_types=tuple(g.layer_types) if g.layer_types is not None else None,
        mamba=mamba,
        decoder_layers=tuple(g.decoder_layers) if g.decoder_layers is not None else None,
        sparse_mla_layers=None if g.sparse_mla_layers is None else tuple(g.sparse_mla_layers),
        mla_indexer_layers=None if g.mla_indexer_layers is None else tuple(g.mla_indexer_layers),
        indexer_layers=tuple(g.indexer_layers) if g.indexer_layers is not None else None,
        qsa=None if g.qsa is None else QsaCaches(**msgspec.structs.asdict(g.qsa)),
        kpool_indexer=kpool,
        **same,
    )


# The inline fields a DeepSeek-V4 / V4.1 geometry reads (what `POST /v1/models/resolve` gives back).
_DSV4_SPEC_FIELDS = frozenset({
    "name", "num_layers", "num_attention_heads", "head_dim", "index_head_dim", "sliding_window", "dtype",
    "max_position_embeddings", "weight_dtype", "params_total", "params_active",
    "params_expert", "compress_ratios", "kv_source_layer_ids", "index_source_layer_ids", "layer_types",
    "decoder_layers",
})  # fmt: skip


def _dsv4_from_spec(g: GeometrySpec, name: str | None) -> Geometry:
    """DeepSeek-V4 inline: its decoder layers' ratios (core/kv/dsv4.py)."""
    p = "model.geometry."
    assert g.compress_ratios is not None
    if len(g.compress_ratios) != g.num_layers:
        raise InvalidInput(
            p + "compress_ratios", f"has {len(g.compress_ratios)} entries for {g.num_layers} layers"
        )
    if g.layer_types is not None or g.decoder_layers is not None:
        raise InvalidInput(
            p + "layer_types", "DeepSeek-V4's layers follow from compress_ratios: give no layer_types"
        )
    for f in msgspec.structs.fields(GeometrySpec):  # a field it does not read is not dropped silently
        if f.name not in _DSV4_SPEC_FIELDS and getattr(g, f.name) != f.default:
            raise InvalidInput(
                p + f.name, "DeepSeek-V4's caches follow from compress_ratios; it takes no such field"
            )
    defaults = DEFAULTS["deepseek_v4"]  # DeepseekV4Config's, as a config.json that leaves them out
    common: dict[str, Any] = {
        "name": name or g.name,
        "compress_ratios": tuple(g.compress_ratios),
        "num_attention_heads": g.num_attention_heads,
        "head_dim": g.head_dim or defaults["head_dim"],
        "index_head_dim": g.index_head_dim or defaults["index_head_dim"],
        "sliding_window": g.sliding_window or defaults["sliding_window"],
        "dtype": _dtype(g.dtype),
        "max_position_embeddings": g.max_position_embeddings,
        "weight_dtype": g.weight_dtype,
    }
    geometry = make_dsv4_geometry(
        # DeepSeek-V4.1 when its kv source layers are given.
        kv_sources=None if g.kv_source_layer_ids is None else tuple(g.kv_source_layer_ids),
        index_sources=tuple(g.index_source_layer_ids or ()),
        **common,
    )
    return msgspec.structs.replace(
        geometry,
        params_total=g.params_total,
        params_active=g.params_active,
        params_expert=g.params_expert,
    )


def spec_from_geometry(g: Geometry) -> GeometrySpec:
    """The inline form of a geometry, which `model: {geometry: …}` accepts back."""
    if g.dsv4 is not None:
        return GeometrySpec(
            name=g.name,
            num_layers=g.decoder_layer_count,
            num_attention_heads=g.num_attention_heads,
            head_dim=g.dsv4.head_dim,
            index_head_dim=g.dsv4.index_head_dim,
            sliding_window=g.dsv4.sliding_window,
            dtype=g.dtype,  # type: ignore[arg-type]
            max_position_embeddings=g.max_position_embeddings,
            compress_ratios=list(g.dsv4.ratios)
            if g.dsv4.v41
            else [0 if r == 1 else r for r in g.dsv4.ratios],
            kv_source_layer_ids=list(g.dsv4.kv_sources) if g.dsv4.v41 else None,
            index_source_layer_ids=list(g.dsv4.index_sources) if g.dsv4.v41 else None,
            params_total=g.params_total,
            params_active=g.params_active,
            params_expert=g.params_expert,
            weight_dtype=g.weight_dtype,  # type: ignore[arg-type]
        )
    # layer_types left out reads back as every layer full attention (MLA with kv_lora_rank): a
    # uniform pattern of another kind (every layer KDA, sliding MLA) is listed.
    uniform = len(set(g.layer_pattern)) == 1 and g.layer_pattern[0] in (FULL, MLA)
    # MLA dims come from kv_lora_rank, as make_geometry reads them, even with no MLA layer left
    # (a Kimi-K3 whose every layer is KDA).
    mla = g.is_mla or g.kv_lora_rank is not None
    return GeometrySpec(
        name=g.name,
        num_kv_heads=None if mla else g.num_kv_heads,
        head_dim=None if mla else g.head_dim,
        v_head_dim=None if mla or g.v_head_dim == g.head_dim else g.v_head_dim,
        layer_types=None if uniform else [KIND_NAMES[k] for k in g.layer_pattern],  # type: ignore[misc]
        decoder_layers=None if g.decoder_layers is None else list(g.decoder_layers),
        sparse_mla_layers=None if g.sparse_mla_layers is None else list(g.sparse_mla_layers),
        mla_indexer_layers=None if g.mla_indexer_layers is None else list(g.mla_indexer_layers),
        indexer_layers=None if g.indexer_layers is None else list(g.indexer_layers),
        qsa=None if g.qsa is None else QsaSpec(**msgspec.structs.asdict(g.qsa)),
        mamba=None
        if g.mamba is None
        else MambaStateSpec(
            mixer=g.mamba.mixer.value,  # type: ignore[arg-type]
            conv_dtype=g.mamba.conv_dtype,  # type: ignore[arg-type]
            ssm_dtype=g.mamba.ssm_dtype,  # type: ignore[arg-type]
            **{f: getattr(g.mamba, f) for f in _STATE_DIMS},
        ),
        index_kpool=None if g.kpool_indexer is None else g.kpool_indexer[1],
        **{f: getattr(g, f) for f in _SAME}
        | ({} if g.kpool_indexer is None else {"index_head_dim": g.kpool_indexer[0]}),
    )


class ResolvedGpu(NamedTuple):
    id: str | None
    name: str
    memory_bytes: int | None
    nominal: bool
    source: str = ""


def estimates_non_kv(req: BudgetRequest | FleetRequest | SimulateRequest) -> bool:
    """Neither non_kv_bytes nor cudagraph_bytes given: the engine profile's estimate applies."""
    return req.non_kv_bytes is None and req.cudagraph_bytes is None


def preset_memory(preset: GpuPreset, as_vllm_sees: bool) -> tuple[int, str]:
    """The preset's memory: what vLLM sees of it when the memory model budgets (and the logs
    print it), else the driver's (or nominal) figure the seed's simplified budget uses."""
    if as_vllm_sees and preset.vllm_memory_bytes is not None:
        return preset.vllm_memory_bytes, preset.vllm_memory_source
    return preset.memory_bytes, preset.memory_source


def resolve_gpu(
    registry: Registry, gpu: str | None, memory_bytes: int | None, as_vllm_sees: bool = False
) -> ResolvedGpu:
    """A GPU preset and/or a memory size: a given size wins over the preset's (and is exact)."""
    if gpu is None:
        return ResolvedGpu(None, "", memory_bytes, False, "request")
    preset = registry.gpu(gpu)
    if memory_bytes is None:
        memory, source = preset_memory(preset, as_vllm_sees)
        nominal = preset.nominal and memory == preset.memory_bytes
        return ResolvedGpu(preset.id, preset.name, memory, nominal, source)
    return ResolvedGpu(preset.id, preset.name, memory_bytes, False, "request")


def with_quantization(geometry: Geometry, name: str | None) -> Geometry:
    """The model loaded with vLLM's --quantization `name`: its linear layers in that scheme,
    embeddings, LM head and norms as they are. A checkpoint whose config or tensors already say
    how it is quantized keeps that (vLLM refuses a conflicting flag)."""
    if name is None:
        return geometry
    if geometry.loaded_weights is not None:
        raise InvalidInput("quantization", "the checkpoint's own tensors give its weights; leave it unset")
    if geometry.quant is not None or geometry.weight_dtype or geometry.expert_weight_dtype:
        said = (
            geometry.quant.name if geometry.quant else geometry.weight_dtype or geometry.expert_weight_dtype
        )
        raise InvalidInput(
            "quantization", f"the model's config.json already states its quantization ({said})"
        )
    if geometry.params_total is None:
        raise InvalidInput(
            "quantization", f"model {geometry.name!r} has no parameter count; give weights_bytes"
        )
    return msgspec.structs.replace(geometry, quant=quantization_arg(name))


class Resolutions:
    """The models and GPUs one batch names, each resolved once: a batch of a thousand scenarios
    (a sweep, an autoscaler's poll) mostly names one model and one GPU. Kept for the batch only,
    so it holds at most one entry a scenario."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._models: dict[str, Resolved] = {}
        self._gpus: dict[tuple[str | None, int | None, bool], ResolvedGpu] = {}

    def model(self, model: str | ModelSpec) -> Resolved:
        if not isinstance(model, str):  # an inline model: each is its own
            return resolve_model(self.registry, model)
        resolved = self._models.get(model)
        if resolved is None:
            resolved = self._models[model] = resolve_model(self.registry, model)
        return resolved

    def gpu(self, gpu: str | None, memory_bytes: int | None, as_vllm_sees: bool) -> ResolvedGpu:
        key = (gpu, memory_bytes, as_vllm_sees)
        resolved = self._gpus.get(key)
        if resolved is None:
            resolved = self._gpus[key] = resolve_gpu(self.registry, gpu, memory_bytes, as_vllm_sees)
        return resolved


def budget_input(
    registry: Registry, req: BudgetRequest, resolutions: Resolutions | None = None
) -> tuple[BudgetInput, Resolved, str | None]:
    as_vllm_sees = estimates_non_kv(req)
    if resolutions is None:
        model = resolve_model(registry, req.model)
        gpu = resolve_gpu(registry, req.gpu, req.gpu_memory_bytes, as_vllm_sees)
    else:
        model = resolutions.model(req.model)
        gpu = resolutions.gpu(req.gpu, req.gpu_memory_bytes, as_vllm_sees)
    if req.quantization is not None:
        model = Resolved(with_quantization(model.geometry, req.quantization), model.label, model.hub)
    gpu_id, gpu_name, memory, nominal, source = gpu
    inp = BudgetInput(
        geometry=model.geometry,
        profile=get_profile(req.engine),
        gpu_memory_bytes=memory,
        gpu_name=gpu_name,
        gpu_memory_nominal=nominal,
        gpu_memory_source=source,
        gpu_memory_utilization=req.gpu_memory_utilization,
        kv_cache_dtype=req.kv_cache_dtype,
        kv_cache_dtype_skip_layers=tuple(req.kv_cache_dtype_skip_layers),
        block_size=req.block_size,
        context_tokens=req.context_tokens,
        tensor_parallel_size=req.tensor_parallel_size,
        pipeline_parallel_size=req.pipeline_parallel_size,
        decode_context_parallel_size=req.decode_context_parallel_size,
        weights_bytes=req.weights_bytes,
        weight_dtype=req.weight_dtype,
        non_kv_bytes=req.non_kv_bytes,
        cudagraph_bytes=req.cudagraph_bytes,
        enforce_eager=req.enforce_eager,
        kv_cache_memory_bytes=req.kv_cache_memory_bytes,
        num_gpu_blocks_override=req.num_gpu_blocks_override,
        max_num_batched_tokens=req.max_num_batched_tokens,
        max_num_seqs=req.max_num_seqs,
        async_scheduling=req.async_scheduling,
        max_model_len=req.max_model_len,
        target_concurrency=req.target_concurrency,
        hybrid_kv_cache_manager=req.hybrid_kv_cache_manager,
        extensible_kv_cache=req.extensible_kv_cache,
        kv_offloading_bytes=req.kv_offloading_bytes,
    )
    return inp, model, gpu_id


def per_token_args(req: PerTokenRequest) -> tuple[str, tuple[int | str, ...], Parallel]:
    par = Parallel(req.tensor_parallel_size, req.pipeline_parallel_size, req.decode_context_parallel_size)
    return req.kv_cache_dtype, tuple(req.kv_cache_dtype_skip_layers), par


def fleet_input(registry: Registry, req: FleetRequest) -> FleetInput:
    shared = {
        f: getattr(req, f) for f in BudgetRequest.__struct_fields__ if f in FleetRequest.__struct_fields__
    }
    template, _, _ = budget_input(registry, BudgetRequest(**shared))
    entries = []
    for i, item in enumerate(req.fleet):
        g = registry.gpu(item.gpu, field=f"fleet[{i}].gpu")
        memory, _ = preset_memory(g, estimates_non_kv(req))
        entries.append(
            FleetEntry(
                gpu=g.id,
                gpu_name=g.name,
                memory_bytes=memory,
                nominal=g.nominal and memory == g.memory_bytes,
                count=item.count,
                gpus_per_node=item.gpus_per_node,
                cost_per_hour=item.cost_per_hour,
            )
        )
    w = req.workload
    if (w.context_tokens is None) == (w.mix is None):
        raise InvalidInput("workload", "give exactly one of context_tokens or mix")
    mix = (
        (MixItem(w.context_tokens, 1.0),)
        if w.context_tokens is not None
        else tuple(MixItem(m.context_tokens, m.share) for m in w.mix or ())
    )
    layouts = (
        None
        if req.layouts is None
        else tuple(
            Layout(
                tensor_parallel_size=x.tensor_parallel_size,
                pipeline_parallel_size=x.pipeline_parallel_size,
                data_parallel_attention=x.data_parallel_attention,
            )
            for x in req.layouts
        )
    )
    return FleetInput(
        template=template,
        fleet=tuple(entries),
        mix=mix,
        layouts=layouts,
        target_concurrency=req.target_concurrency,
    )


def fleet_request_from_query(q: FleetQuery) -> FleetRequest:
    return FleetRequest(
        model=q.model,
        workload=Workload(context_tokens=q.context_tokens),
        fleet=[
            FleetGpu(
                gpu=q.gpu,
                count=q.count or q.gpus_per_node,
                gpus_per_node=q.gpus_per_node,
                cost_per_hour=q.cost_per_hour,
            )
        ],
        target_concurrency=q.target_concurrency,
        gpu_memory_utilization=q.gpu_memory_utilization,
        kv_cache_dtype=q.kv_cache_dtype,
        weights_bytes=q.weights_bytes,
        weight_dtype=q.weight_dtype,
        block_size=q.block_size,
        engine=q.engine,
        non_kv_bytes=q.non_kv_bytes,
        cudagraph_bytes=q.cudagraph_bytes,
        enforce_eager=q.enforce_eager,
    )


def model_layers(registry: Registry, model: str | ModelSpec) -> int:
    """The layers a scenario's model has, read cheaply (before any per-layer work) to bound it."""
    if isinstance(model, str):
        if hub_ref_of(registry, model) is not None:
            return resolve_model(registry, model).geometry.num_layers
        return registry.model(model).geometry.num_layers
    if model.geometry is not None:
        return model.geometry.num_layers
    source = language_config(model.hf_config or {})
    n = source.get("num_hidden_layers")
    types = source.get("layer_types")
    counts = [n if type(n) is int else 0, len(types) if isinstance(types, list) else 0]
    per_layer = 2 if source.get("model_type") == "falcon_h1" else 1  # attention and Mamba in each
    return max(1, *counts) * per_layer


def simulation_input(
    registry: Registry, req: SimulateRequest
) -> tuple[SimConfig, list[SimRequest] | None, Generator | None, str, str]:
    """The simulator's pool and workload; also the pool's source and the engine profile."""
    profile = get_profile(req.engine)
    shared = {
        f: getattr(req, f) for f in BudgetRequest.__struct_fields__ if f in SimulateRequest.__struct_fields__
    }
    if req.num_blocks is not None:
        # A pool given by its size: the same defaults budget would use for this model and GPU.
        geometry = None if req.model is None else resolve_model(registry, req.model).geometry
        gpu = resolve_gpu(registry, req.gpu, req.gpu_memory_bytes, estimates_non_kv(req))
        settings = settings_for(
            geometry,
            profile,
            gpu_memory_bytes=gpu.memory_bytes,
            gpu_name=gpu.name,
            block_size=req.block_size,
            max_num_batched_tokens=req.max_num_batched_tokens,
            max_num_seqs=req.max_num_seqs,
        )
        cfg_blocks, block_size, source = req.num_blocks, settings.block_size, "given"
        max_num_seqs, max_num_batched_tokens = settings.max_num_seqs, settings.max_num_batched_tokens
    else:
        if req.model is None:
            raise InvalidInput("model", "required unless num_blocks is given")
        inp, _, _ = budget_input(registry, BudgetRequest(**shared))
        b = compute_budget(inp)
        # One group of the requested block (DeepSeek-V4's lone sliding group keeps 64-token blocks).
        if len(b.groups) != 1 or b.groups[0].groups != 1 or b.groups[0].block_size != b.block_size:
            raise InvalidInput(
                "model",
                "the simulator models one KV-cache group; for a hybrid model give num_blocks and block_size",
            )
        for i, r in enumerate(req.workload.requests or ()):
            if r.prompt_tokens > b.max_model_len:  # vllm/v1/engine/processor.py _validate_model_input
                raise InvalidInput(
                    f"workload.requests[{i}].prompt_tokens",
                    f"{r.prompt_tokens:,} tokens exceed max_model_len {b.max_model_len:,}: vLLM rejects it",
                )
        cfg_blocks, block_size = b.num_blocks, b.block_size
        max_num_seqs, max_num_batched_tokens = b.max_num_seqs, b.max_num_batched_tokens
        source = f"budget: {b.num_blocks:,} blocks of {b.block_size} tokens"
        if cfg_blocks < 2:
            raise InvalidInput("model", "the budget leaves no blocks: nothing to simulate")
    cfg = SimConfig(
        num_blocks=cfg_blocks,
        block_size=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        policy=req.scheduling_policy,
        prefix_caching=req.enable_prefix_caching,
        admit_full_sequence=profile.admit_full_sequence,
    )
    engine = profile.id
    w = req.workload  # the core's own workload types: decoding validated them, plan() checks the rest
    return cfg, w.requests, w.generator, source, engine
