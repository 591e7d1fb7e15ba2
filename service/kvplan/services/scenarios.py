"""The service layer: a decoded request becomes the core's input. Names become presets, inline
models become geometry, and every engine default is left to the profile (core/budget/defaults.py),
so budget, fleet, sweep and simulate resolve one scenario the same way. The HTTP routes and the
CLI both call this; neither builds core inputs itself. A request's model is parsed once, into a
ModelRef (services/models.py), which the caller may pass in (the routes parse it to fetch a Hub
model first)."""

from __future__ import annotations

from operator import attrgetter
from typing import Any, NamedTuple

import msgspec

from kvplan.core.budget import BudgetInput, compute_budget, settings_for
from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput, KvplanError
from kvplan.core.fleet.types import FleetEntry, FleetInput, Layout, MixItem
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.parallel import Parallel
from kvplan.core.model.geometry import Geometry
from kvplan.core.model.quant import quantization_arg
from kvplan.core.model.speculative import MTP_METHODS, NO_DRAFT
from kvplan.core.sim.simulate import Generator, SimConfig, SimRequest
from kvplan.hub import HubError, HubRef, default_hub
from kvplan.presets import Registry
from kvplan.presets.registry import GpuPreset
from kvplan.schemas import (
    BudgetRequest,
    FleetGpu,
    FleetQuery,
    FleetRequest,
    PerTokenRequest,
    SimulateRequest,
    Workload,
)

from .inline import geometry_from_spec, spec_from_geometry
from .models import (
    Inline,
    ModelRef,
    Preset,
    Resolved,
    hub_geometry,
    model_layers,
    model_ref,
    resolve,
    resolve_model,
)

__all__ = [  # with the names of models.py and inline.py that callers import from here
    "Inline",
    "ModelRef",
    "Preset",
    "Resolutions",
    "Resolved",
    "ResolvedGpu",
    "budget_input",
    "estimates_non_kv",
    "fleet_input",
    "fleet_request_from_query",
    "geometry_from_spec",
    "hub_geometry",
    "model_layers",
    "model_ref",
    "per_token_args",
    "preset_memory",
    "resolve",
    "resolve_gpu",
    "resolve_model",
    "simulation_input",
    "spec_from_geometry",
    "with_quantization",
]


# A budget request's engine settings but the first (gpu_memory_bytes, which budget_input resolves),
# in EngineSettings' order: BudgetInput takes them positionally (one C call, not 24 keywords).
assert ENGINE_SETTINGS[0] == "gpu_memory_bytes"
_settings_after_memory = attrgetter(*ENGINE_SETTINGS[1:])


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
    how it is quantized keeps that: vLLM refuses a conflicting flag, and takes one naming the
    config's own scheme (vllm/config/model.py _verify_quantization), as `vllm serve` lines do."""
    if name is None:
        return geometry
    if geometry.quant is not None and geometry.quant == quantization_arg(name):
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
        self._models: dict[ModelRef, Resolved] = {}
        self._gpus: dict[tuple[str | None, int | None, bool], ResolvedGpu] = {}

    def model(self, ref: ModelRef) -> Resolved:
        if isinstance(ref, Inline):  # an inline model: each is its own
            return resolve(self.registry, ref)
        resolved = self._models.get(ref)
        if resolved is None:
            resolved = self._models[ref] = resolve(self.registry, ref)
        return resolved

    def gpu(self, gpu: str | None, memory_bytes: int | None, as_vllm_sees: bool) -> ResolvedGpu:
        key = (gpu, memory_bytes, as_vllm_sees)
        resolved = self._gpus.get(key)
        if resolved is None:
            resolved = self._gpus[key] = resolve_gpu(self.registry, gpu, memory_bytes, as_vllm_sees)
        return resolved


def budget_input(
    registry: Registry,
    req: BudgetRequest,
    resolutions: Resolutions | None = None,
    ref: ModelRef | None = None,
) -> tuple[BudgetInput, Resolved, str | None]:
    """The core's input for a budget request: its engine settings as they are, the model and the
    GPU resolved. `ref` is req.model parsed (model_ref), when the caller holds it."""
    as_vllm_sees = estimates_non_kv(req)
    if ref is None:
        ref = model_ref(registry, req.model)
    if resolutions is None:
        model = resolve(registry, ref)
        gpu = resolve_gpu(registry, req.gpu, req.gpu_memory_bytes, as_vllm_sees)
    else:
        model = resolutions.model(ref)
        gpu = resolutions.gpu(req.gpu, req.gpu_memory_bytes, as_vllm_sees)
    if req.quantization is not None:
        model = Resolved(with_quantization(model.geometry, req.quantization), model.label, model.hub)
    gpu_id, gpu_name, memory, nominal, source = gpu
    draft = draft_geometry(registry, req, resolutions)
    inp = BudgetInput(
        memory,  # the request's, else the preset's
        *_settings_after_memory(req),  # the request's engine settings as they are
        geometry=model.geometry,
        profile=get_profile(req.engine),
        gpu_name=gpu_name,
        gpu_memory_nominal=nominal,
        gpu_memory_source=source,
        draft=draft,
    )
    return inp, model, gpu_id


def draft_name(req: BudgetRequest) -> str | None:
    """The draft model a request names for the Hub to fetch (the routes prefetch it beside
    `model`), or None when it names none to read."""
    name, method = req.speculative_model, req.speculative_method
    if getattr(req, "speculative_hf_config", None) is not None or name is None:
        return None
    return None if method in NO_DRAFT or method in MTP_METHODS or name in ("ngram", "[ngram]") else name


def draft_geometry(
    registry: Registry, req: BudgetRequest, resolutions: Resolutions | None
) -> Geometry | None:
    """The draft model a request's speculative decoding names, resolved as `model` is: its inline
    config.json, else a preset, else a Hub model kvplan holds (no network here). None for MTP (its
    layers are the target's), n-gram and suffix drafting (none) and no speculation. A draft that
    cannot be read is InvalidInput naming the field."""
    inline = getattr(req, "speculative_hf_config", None)
    if inline is not None:
        name = str(inline.get("_name_or_path") or req.speculative_model or "draft")[:200]
        try:
            return from_hf_config(inline, name=name)
        except InvalidInput as e:
            raise InvalidInput(f"speculative_hf_config.{e.field}", e.reason) from None
    name = draft_name(req)
    if name is None:
        return None
    try:
        ref = model_ref(registry, name)
        if isinstance(ref, HubRef):
            found = default_hub().cached(ref, stale_ok=True)
            if found is None:
                raise InvalidInput(
                    "speculative_model",
                    f"{name!r} is not a preset and kvplan has not read it from the Hub: send its config.json "
                    "as speculative_hf_config",
                )
            return hub_geometry(found)
        return (resolutions.model(ref) if resolutions is not None else resolve(registry, ref)).geometry
    except HubError as e:
        raise InvalidInput("speculative_model", f"{name!r}: {e}") from None
    except KvplanError as e:
        if e.field == "speculative_model":
            raise
        raise InvalidInput("speculative_model", f"{name!r}: {e.reason}") from None


def per_token_args(req: PerTokenRequest) -> tuple[str, tuple[int | str, ...], Parallel]:
    par = Parallel(req.tensor_parallel_size, req.pipeline_parallel_size, req.decode_context_parallel_size)
    return req.kv_cache_dtype, tuple(req.kv_cache_dtype_skip_layers), par


def _same_named(source: msgspec.Struct, target: type[msgspec.Struct]) -> dict[str, Any]:
    """The fields of `source` that `target` has too, by name, in target's order: what a fleet or
    a simulate request shares with a budget request (the budget it stands for), and a fleet
    query's fields as a fleet request's."""
    have = type(source).__struct_fields__
    return {f: getattr(source, f) for f in target.__struct_fields__ if f in have}


def fleet_input(registry: Registry, req: FleetRequest, ref: ModelRef | None = None) -> FleetInput:
    """The core's input for a fleet request: the budget input of its model and engine settings
    (resolved by budget_input, as /v1/budget resolves them) as the template every GPU type is
    planned from, each fleet entry's preset and memory, the workload's context mix (refused
    unless exactly one of context_tokens or mix is given) and the layouts asked for (None:
    every valid one)."""
    template, _, _ = budget_input(registry, BudgetRequest(**_same_named(req, BudgetRequest)), ref=ref)
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
        **_same_named(q, FleetRequest),
        workload=Workload(context_tokens=q.context_tokens),
        fleet=[
            FleetGpu(
                gpu=q.gpu,
                count=q.count or q.gpus_per_node,
                gpus_per_node=q.gpus_per_node,
                cost_per_hour=q.cost_per_hour,
            )
        ],
    )


def simulation_input(
    registry: Registry, req: SimulateRequest, ref: ModelRef | None = None
) -> tuple[SimConfig, list[SimRequest] | None, Generator | None, str, str]:
    """The simulator's pool and workload; also the pool's source and the engine profile."""
    if ref is None and req.model is not None:
        ref = model_ref(registry, req.model)
    profile = get_profile(req.engine)
    if req.num_blocks is not None:
        # A pool given by its size: the same defaults budget would use for this model and GPU.
        geometry = None if ref is None else resolve(registry, ref).geometry
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
        inp, _, _ = budget_input(registry, BudgetRequest(**_same_named(req, BudgetRequest)), ref=ref)
        b = compute_budget(inp)
        # One group of the requested block (DeepSeek-V4's lone sliding group keeps 64-token blocks).
        if len(b.groups) != 1 or b.groups[0].groups != 1 or b.groups[0].block_size != b.block_size:
            raise InvalidInput(
                "model",
                "the simulator models one KV-cache group; for a hybrid model give num_blocks and block_size "
                f"(this plan's budget: num_blocks {b.num_blocks}, block_size {b.block_size}, all its groups' "
                "blocks; the simulator counts the full-attention ones only)",
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
        prefix_caching=req.enable_prefix_caching is not False,  # unset: vLLM's default, on
        admit_full_sequence=profile.admit_full_sequence,
    )
    engine = profile.id
    w = req.workload  # the core's own workload types: decoding validated them, plan() checks the rest
    return cfg, w.requests, w.generator, source, engine
