"""What a layout holds, before any context length is asked: the settings, the KV groups, the
memory, the blocks and the start-up fit check. It is memoised per layout, so a sweep over
context lengths pays only for the per-request part (compute.py)."""

from __future__ import annotations

from dataclasses import replace as replace_dataclass
from functools import lru_cache

import msgspec
from msgspec.structs import replace

from .. import warnings as w
from ..engine.cudagraphs import Graphs, capture_sizes, cudagraph_mode, eager_forward, graphs
from ..engine.dtypes import MODEL_DTYPES
from ..engine.nonkv import estimate_non_kv
from ..engine.profiles import InflightRule
from ..errors import InvalidInput, InvalidLayout
from ..kv import dsv4
from ..kv.concurrency import WINDOWED, GroupShape, total_blocks
from ..kv.groups import GroupPlan, KvGroup, plan_dsv4, plan_groups
from ..kv.layers import LayerBytes, layer_bytes
from ..kv.parallel import Parallel, pp_stage_ranges, valid_tensor_sizes
from ..kv.pertoken import PerToken, per_token_of
from ..limits import MEMO_MAX_LAYERS
from ..memo import register_clear
from ..model.geometry import (
    CHUNKED,
    CIRCULAR_BUFFER,
    FULL,
    KIND_NAMES,
    MAMBA,
    MAMBA_REPLICATED,
    MLA,
    SCONV,
    SLIDING,
    SLIDING_MLA,
    Geometry,
)
from ..model.gpu_arch import for_gpu, sm_major
from ..model.lora import LoraSettings, LoraSlot, lora_bytes, lora_slots
from ..model.mamba import ALIGN, mamba_cache_mode, state_blocks_per_request, with_cache_dtypes
from ..model.served_dtype import with_served_dtype
from ..model.towers import tower_skipped, without_tower
from ..units import fmt_bytes, fmt_gib
from .defaults import Settings, resolve_settings
from .kv_cache_utils import (
    check_enough_kv_cache_memory,
    estimate_max_model_len,
    fit_check_blocks,
    get_num_blocks,
    may_override_num_blocks,
    usable_blocks,
)
from .memory import (
    WeightsPlacement,
    available_kv_cache_memory,
    check_moe_parallel,
    mxfp4_padding_unmodelled,
    requested_memory,
    resolve_weights,
    weights_placement,
)
from .speculation import draft_weights, with_speculation
from .types import BudgetInput, MemoryTerms


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class PooledMemory(msgspec.Struct, frozen=True, gc=False):
    """The seed's pooled arithmetic: every worker's memory as one budget (not a deployment)."""

    memory_bytes: int
    requested_bytes: int
    available_kv_bytes: int


class LayoutCapacity(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    # The geometry as it runs on the named GPU (core/model/gpu_arch.py for_gpu), which was planned.
    geometry: Geometry
    parallel: Parallel
    settings: Settings
    layer_bytes: LayerBytes
    per_token: PerToken  # without a context: a request adds its own figures (pertoken.for_context)
    plan: GroupPlan
    # One entry per shape of KV group: (kind, block size, sliding bound W − 1 + F, groups).
    shapes: tuple[GroupShape, ...]
    sliding_inflight_tokens: int | None
    weights_bytes: int
    weights_how: str
    weights_bytes_per_gpu: int
    placement: WeightsPlacement
    # The LoRA adapter slots on one GPU, kind by kind (core/model/lora.py); None without LoRA, or
    # when the model's wrapped modules are not known (a lora_not_modelled warning says so).
    lora_slots: tuple[LoraSlot, ...] | None
    lora_bytes: int
    non_kv_bytes: int
    cudagraph_bytes: int
    memory: MemoryTerms | None
    requested_bytes: int | None
    available_kv_bytes: int
    kv_memory_shortfall_bytes: int
    bytes_per_block_by_stage: tuple[int, ...]
    bytes_per_block: int
    num_blocks_computed: int
    num_blocks: int
    usable_blocks: int
    fit_blocks: int
    fits_max_model_len: bool
    max_context_tokens: int
    pooled: PooledMemory | None
    # The estimate's band: (available KV, usable blocks) at its low and high end, None unless
    # the non-KV memory is estimated. Per layout, so a request only divides.
    band: tuple[tuple[int, int], tuple[int, int]] | None
    warnings: tuple[w.Warning, ...]
    # The speculative drafter's weights (in weights_bytes too) and how they were found.
    draft_weights_bytes: int = 0
    draft_weights_how: str = ""


def layout_capacity(inp: BudgetInput) -> LayoutCapacity:
    """The capacity of inp's layout, memoised (context and target do not change it)."""
    inp = with_speculation(inp)
    if inp.geometry.num_layers > MEMO_MAX_LAYERS:  # an entry would hold too much: compute anew
        return _layout_capacity(inp)
    try:
        return _memo(replace(inp, context_tokens=None, target_concurrency=None))
    except TypeError:  # an unhashable field (a list of skip layers): no memo
        return _layout_capacity(inp)


@lru_cache(maxsize=1024)
def _memo(key: BudgetInput) -> LayoutCapacity:
    return _layout_capacity(key)


register_clear(_memo.cache_clear)


# Data-center Blackwell (SM 10.x): vLLM's default capture ceiling is 1024 there (cudagraphs.py).
BLACKWELL_SM = 10


def _check_memory_inputs(inp: BudgetInput) -> None:
    if (
        inp.gpu_memory_bytes is None
        and inp.kv_cache_memory_bytes is None
        and inp.num_gpu_blocks_override is None
    ):
        raise InvalidInput(
            "gpu", "give a gpu preset, gpu_memory_bytes, kv_cache_memory_bytes or num_gpu_blocks_override"
        )


def check_dsv4_layout(inp: BudgetInput, par: Parallel) -> None:
    """DeepSeek-V4's layouts vLLM 0.33.0 fails on (DCP, the hybrid manager off) and the skip
    layers kvplan does not model."""
    # InvalidLayout: a fleet plan marks such a layout infeasible and plans the others.
    if par.decode_context > 1:
        # Its sliding-window caches are DCP-sharded specs (AttentionSpec's default), whose
        # SlidingWindowSpec.max_memory_usage_bytes asserts "DCP not support sliding window".
        raise InvalidLayout(
            "decode_context_parallel_size",
            "vLLM 0.33.0 does not plan DeepSeek-V4 with DCP: its sliding-window caches assert DCP 1",
        )
    if not inp.hybrid_kv_cache_manager:
        # unify_hybrid_kv_cache_specs rebuilds the sliding-window MLA specs as MLAAttentionSpec,
        # which has no bounded_replay field: vLLM 0.33.0 raises TypeError (checked with the oracle).
        raise InvalidInput(
            "hybrid_kv_cache_manager",
            "vLLM 0.33.0 does not start DeepSeek-V4 with the hybrid KV cache manager off (it cannot "
            "promote the sliding-window MLA caches to full attention)",
        )
    if inp.kv_cache_dtype_skip_layers:
        raise InvalidInput(
            "kv_cache_dtype_skip_layers",
            "DeepSeek-V4 keeps every cache in fp8_ds_mla; no layer can be skipped",
        )


def sliding_inflight_tokens(inp: BudgetInput, settings: Settings, par: Parallel) -> int:
    """F, the tokens a sliding-window or chunked-local layer may hold beyond its window (profile
    rule; vllm/config/vllm.py max_in_flight_tokens, read by SlidingWindowSpec and
    ChunkedLocalAttentionSpec in vllm/v1/kv_cache_interface.py)."""
    if inp.profile.sliding_inflight_rule is InflightRule.BATCHES:
        batches = inp.profile.inflight_batches(par.pipeline, settings.async_scheduling)
        return batches * settings.max_num_batched_tokens
    return settings.max_num_batched_tokens


def _non_kv(inp: BudgetInput, settings: Settings, par: Parallel) -> tuple[int, int, MemoryTerms | None]:
    """(non_kv_bytes, cudagraph_bytes subtracted, their terms): the caller's figures when given,
    else the profile's estimate of vLLM's profiling run (core/engine/nonkv.py). Terms None when nothing
    is given and no GPU memory is budgeted (no gpu_memory_bytes, or kv_cache_memory_bytes given)."""
    if inp.non_kv_bytes is not None or inp.cudagraph_bytes is not None:
        non_kv, cudagraph = inp.non_kv_bytes or 0, inp.cudagraph_bytes or 0
        return non_kv, cudagraph, MemoryTerms(non_kv_source="given", cudagraph_bytes=cudagraph)
    if inp.gpu_memory_bytes is None or inp.kv_cache_memory_bytes is not None:
        return 0, 0, None
    g, rules = inp.geometry, inp.profile.memory
    if g.shape is None:
        return 0, 0, MemoryTerms(non_kv_source="not estimated")
    captured = captured_graphs(inp, settings)
    est = estimate_non_kv(
        rules,
        g.shape,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        tensor=par.tensor,
        layers_on_worker=-(-g.decoder_layer_count // par.pipeline),
        enforce_eager=inp.enforce_eager,
        graphs_captured=captured.captured,
    )
    terms = MemoryTerms(
        non_kv_source="estimated",
        activation_bytes=est.activation_bytes,
        non_torch_bytes=est.non_torch_bytes,
        cudagraph_bytes=est.cudagraph_bytes,
        cudagraph_subtracted=rules.cudagraph_subtracted,
        calibration=rules.calibration,
        cudagraph_mode=captured.mode,
        cudagraph_capture_sizes=len(captured.sizes),
        cudagraphs_captured=captured.captured,
    )
    return est.non_kv_bytes, est.cudagraph_subtracted_bytes, terms


def captured_graphs(inp: BudgetInput, settings: Settings) -> Graphs:
    """The CUDA graphs vLLM captures for these settings (core/engine/cudagraphs.py): the mode the
    flags leave, the capture sizes given or vLLM's default list, and the graphs of both routines."""
    mode = cudagraph_mode(inp.cudagraph_mode, inp.compilation_mode, inp.optimization_level, inp.enforce_eager)
    eager = eager_forward(inp.compilation_mode, inp.optimization_level, inp.enforce_eager)
    if mode == "none":
        return replace(graphs(mode, (), settings.max_num_seqs), eager_forward=eager)
    sizes = capture_sizes(
        given=inp.cudagraph_capture_sizes,
        given_max=inp.max_cudagraph_capture_size,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        blackwell=sm_major(inp.gpu_name) == BLACKWELL_SM if inp.gpu_name else False,
    )
    return replace(graphs(mode, sizes, settings.max_num_seqs), eager_forward=eager)


def _layout_capacity(inp: BudgetInput) -> LayoutCapacity:
    """Everything about inp's layout that no context length changes: its KV groups and their
    shapes, the memory left for KV, the blocks it makes and the start-up fit check, with the
    layout's warnings. The one computation layout_capacity memoises, so a sweep over contexts
    (and a fleet's repeated layouts) pays for it once; on the GPU-adjusted geometry (for_gpu)."""
    if (served := with_served_dtype(inp.geometry, inp.dtype)) is not inp.geometry:
        inp = replace(inp, geometry=served)
    if (on_gpu := for_gpu(inp.geometry, inp.gpu_name)) is not inp.geometry:
        inp = replace(inp, geometry=on_gpu)
    text_only = inp.language_model_only or bool(inp.mm_limit_zero)
    no_tower = text_only and not inp.geometry.tower_modalities
    if tower_skipped(inp.geometry.tower_modalities, inp.language_model_only, inp.mm_limit_zero):
        inp = replace(inp, geometry=without_tower(inp.geometry))
    check_moe_parallel(inp)
    if (in_dtypes := _mamba_in_cache_dtypes(inp)) is not inp.geometry:
        inp = replace(inp, geometry=in_dtypes)
    g, profile = inp.geometry, inp.profile
    par = Parallel(inp.tensor_parallel_size, inp.pipeline_parallel_size, inp.decode_context_parallel_size)
    _check_memory_inputs(inp)
    settings = resolve_settings(inp)
    _check_lookahead(inp, settings.max_num_batched_tokens)
    lb = layer_bytes(g, inp.kv_cache_dtype, tuple(inp.kv_cache_dtype_skip_layers), par)
    non_kv, cudagraph, memory = _non_kv(inp, settings, par)
    plan = _group_plan(inp, settings, par, lb)
    inflight, shapes = _group_shapes(inp, settings, par, plan)

    weights, weights_how = resolve_weights(inp)
    drafted, drafted_how = draft_weights(inp, weights)
    placement, slots, lora, weights_per_gpu = _gpu_weights(inp, weights, drafted, par)
    weights += drafted
    requested = None
    if inp.kv_cache_memory_bytes is not None:
        available = inp.kv_cache_memory_bytes
    elif inp.gpu_memory_bytes is not None:
        requested = requested_memory(inp.gpu_memory_bytes, settings.gpu_memory_utilization)
        available = available_kv_cache_memory(requested, weights_per_gpu, non_kv, cudagraph)
    else:
        available = 0
    # vLLM computes a negative figure and refuses to start; the answer says 0 and the shortfall.
    shortfall = max(0, -available)
    available = max(0, available)
    stage_bpb = plan.stage_bytes_per_block
    computed = get_num_blocks(available, stage_bpb)
    num_blocks = may_override_num_blocks(computed, inp.num_gpu_blocks_override)
    fit = fit_check_blocks(num_blocks, profile)
    mml = settings.max_model_len
    pooled = _pooled(inp, settings, par, weights, lora + non_kv + cudagraph)
    cap = LayoutCapacity(
        geometry=g,
        parallel=par,
        settings=settings,
        layer_bytes=lb,
        per_token=per_token_of(g, inp.kv_cache_dtype, lb, par, None),
        plan=plan,
        shapes=shapes,
        sliding_inflight_tokens=inflight,
        weights_bytes=weights,
        weights_how=weights_how,
        weights_bytes_per_gpu=weights_per_gpu,
        placement=placement,
        lora_slots=slots,
        lora_bytes=lora,
        non_kv_bytes=non_kv,
        cudagraph_bytes=cudagraph,
        memory=memory,
        requested_bytes=requested,
        available_kv_bytes=available,
        kv_memory_shortfall_bytes=shortfall,
        bytes_per_block_by_stage=stage_bpb,
        bytes_per_block=max(stage_bpb),
        num_blocks_computed=computed,
        num_blocks=num_blocks,
        usable_blocks=usable_blocks(num_blocks, profile),
        fit_blocks=fit,
        fits_max_model_len=check_enough_kv_cache_memory(shapes, fit, mml, par.decode_context),
        max_context_tokens=estimate_max_model_len(shapes, fit, mml, par.decode_context),
        pooled=pooled,
        band=_band(inp, memory, requested, weights_per_gpu + non_kv + cudagraph, stage_bpb),
        warnings=(),
        draft_weights_bytes=drafted,
        draft_weights_how=drafted_how,
    )
    said = (w.Warning(w.NO_TOWER_KNOWN, w.CODES[w.NO_TOWER_KNOWN]),) if no_tower else ()
    return replace(cap, warnings=(*_layout_warnings(inp, cap), *said))


# The layer kinds the V0 engine's one-cache-a-layer plan is modelled for.
_V0_KINDS = frozenset({FULL, SLIDING, CHUNKED, MLA})


def _mamba_in_cache_dtypes(inp: BudgetInput) -> Geometry:
    """The geometry with its Mamba state in the dtypes --mamba-cache-dtype and
    --mamba-ssm-cache-dtype give (core/model/mamba.py with_cache_dtypes); itself when both are auto."""
    g = inp.geometry
    if (inp.mamba_cache_dtype, inp.mamba_ssm_cache_dtype) == ("auto", "auto") or MAMBA not in g.layer_pattern:
        return g
    field = "mamba_cache_dtype" if inp.mamba_cache_dtype != "auto" else "mamba_ssm_cache_dtype"
    if g.mamba is None:
        raise InvalidInput(
            field, "the geometry gives mamba_state_bytes, not the state's dims: its dtype cannot change"
        )
    if g.mamba.replicated_state_bytes and inp.mamba_cache_dtype != "auto":
        raise InvalidInput(field, "Qwen4-exp's replicated PLE state in another dtype is not modelled")
    return replace(g, mamba=with_cache_dtypes(g.mamba, inp.mamba_cache_dtype, inp.mamba_ssm_cache_dtype))


def cache_mode(inp: BudgetInput) -> str:
    """The Mamba layers' mamba_cache_mode: "align" with prefix caching, else "none" (core/model/mamba.py)."""
    return mamba_cache_mode(inp.enable_prefix_caching, inp.geometry.attention_free)


def mamba_block_size(inp: BudgetInput, settings: Settings, mode: str) -> int:
    """The Mamba layers' block (MambaModelConfig): --mamba-block-size, else the block, under
    prefix caching; max_model_len without (where vLLM refuses --mamba-block-size). A hybrid's
    platform then aligns it to the attention block in "align" mode (Platform._align_hybrid_block_size)."""
    mml = settings.max_model_len
    if mode == ALIGN:
        return inp.mamba_block_size or settings.block_size
    if inp.mamba_block_size is not None and inp.mamba_block_size != mml:
        raise InvalidInput(
            "mamba_block_size", "can only be set with prefix caching on (vLLM raises: --mamba-block-size "
            "can only be set with --enable-prefix-caching)",
        )  # fmt: skip
    return mml


def _lora_slots(inp: BudgetInput, par: Parallel) -> tuple[LoraSlot, ...] | None:
    """The LoRA adapter slots vLLM makes on one GPU with --enable-lora (vllm/lora/model_manager.py),
    None without LoRA or for a model whose wrapped modules are not known. Under pipeline parallel
    every stage is counted with the embedding and LM head's slots (the first and last stage hold
    one each): an upper bound for any stage."""
    g = inp.geometry
    if not inp.enable_lora or g.lora is None:
        return None
    dtype = g.dtype if inp.lora_dtype == "auto" else inp.lora_dtype  # vllm/config/lora.py: auto → model dtype
    settings = LoraSettings(
        max_loras=inp.max_loras,
        max_lora_rank=inp.max_lora_rank,
        dtype_bytes=MODEL_DTYPES[dtype],
        fully_sharded=inp.fully_sharded_loras,
        target_modules=inp.lora_target_modules,
        moe_shared=inp.enable_moe_shared_loras,
        mixed_moe_format=inp.enable_mixed_moe_lora_format,
    )
    layers = -(-g.lora.layers // par.pipeline)
    modules = (
        g.lora
        if layers == g.lora.layers
        else replace(
            g.lora,
            layers=layers,
            dense_layers=-(-g.lora.dense_layers // par.pipeline),
            moe_layers=-(-g.lora.moe_layers // par.pipeline),
        )
    )
    return lora_slots(modules, settings, par.tensor)


def _check_lookahead(inp: BudgetInput, max_num_batched_tokens: int) -> None:
    """vLLM refuses a batch that cannot hold a request's draft slots: max_num_batched_tokens must
    exceed num_lookahead_tokens, num_speculative_tokens for a drafter with layers
    (vllm/config/vllm.py _set_max_num_scheduled_tokens, num_lookahead_tokens)."""
    spec = inp.speculation
    if spec is not None and spec.draft_layers and max_num_batched_tokens <= spec.num_speculative_tokens:
        raise InvalidInput(
            "max_num_batched_tokens",
            f"{max_num_batched_tokens} does not exceed num_lookahead_tokens={spec.num_speculative_tokens}: "
            "vLLM has no slot left to schedule a token",
        )


def _group_plan(inp: BudgetInput, settings: Settings, par: Parallel, lb: LayerBytes) -> GroupPlan:
    """The KV groups vLLM's manager makes of the layers (DeepSeek-V4's own plan, or the general
    one), after refusing the layouts vLLM or kvplan does not plan. The Mamba groups' block is
    their own (mamba_block_size): max_model_len without prefix caching."""
    g = inp.geometry
    mode = cache_mode(inp) if MAMBA in g.layer_pattern else ALIGN
    mamba_block = mamba_block_size(inp, settings, mode) if MAMBA in g.layer_pattern else 0
    block = mamba_block if g.attention_free else settings.block_size
    if g.kpool_indexer is not None and par.decode_context > 1:
        raise InvalidInput("decode_context_parallel_size", "GLM-5-next's packed layout: modelled without DCP")
    if not inp.profile.hybrid_manager and set(g.layer_pattern) - _V0_KINDS:
        raise InvalidInput(
            "engine",
            f"{inp.profile.title}: kvplan models its KV cache for attention layers only "
            "(full, sliding-window, chunked, MLA); plan this model with a V1 profile",
        )
    if g.dsv4 is None:
        plan = plan_groups(lb, block, inp.hybrid_kv_cache_manager and inp.profile.hybrid_manager)
        if mode == ALIGN or g.attention_free:
            return plan
        if plan.packing is not None:
            raise InvalidInput(
                "enable_prefix_caching",
                "a packed layout's Mamba layers are modelled with prefix caching on only",
            )
        # "none" mode: a hybrid's Mamba groups keep blocks of max_model_len (not aligned).
        groups = tuple(
            KvGroup(x.kind, mamba_block, x.layers, x.window, x.caches)
            if x.kind in (MAMBA, MAMBA_REPLICATED)
            else x
            for x in plan.groups
        )
        return replace_dataclass(plan, groups=groups)
    check_dsv4_layout(inp, par)
    dsv4.check_gpu(g.dsv4, inp.gpu_name)
    stages = pp_stage_ranges(g.decoder_layer_count, par.pipeline)
    dsv4.check_stages(g.dsv4, stages)
    return plan_dsv4(g.dsv4, block, stages)


def _group_shapes(
    inp: BudgetInput, settings: Settings, par: Parallel, plan: GroupPlan
) -> tuple[int | None, tuple[GroupShape, ...]]:
    """(F, one shape a class of group): F the in-flight tokens a windowed or chunked layer may hold
    beyond its window (None when no group is one), and each class's (kind, block size, blocks'
    worth of tokens a request keeps — its window or state bound —, groups), what the block counts
    and the start-up fit check read."""
    g = inp.geometry
    inflight = None
    if any(kind in (*WINDOWED, CHUNKED) for kind, _, _ in plan.classes):
        inflight = sliding_inflight_tokens(inp, settings, par)
    # Speculative decoding: multi-module MTP keeps extra_retained_tokens more in every sliding
    # window (kv_cache_planning.py get_global_kv_cache_groups); a Mamba state keeps one more block
    # a proposed token (MambaSpec num_speculative_blocks).
    spec = inp.speculation
    extra = spec.extra_retained_tokens if spec is not None else 0
    drafts = spec.num_speculative_blocks if spec is not None else 0
    reach = (inflight or 0) + extra
    bounds: dict[str, int] = {
        SLIDING: (g.sliding_window or 0) - 1 + reach,
        SLIDING_MLA: (g.sliding_window or 0) - 1 + reach,
        SCONV: (g.sconv_kernel_size or 0) - 1 + reach,
        CHUNKED: (g.attention_chunk_size or 0) + (inflight or 0),
        MAMBA: state_blocks_per_request(g.mamba, cache_mode(inp)) + drafts,
        CIRCULAR_BUFFER: 1,  # CircularBufferSpec.max_memory_usage_bytes: one ring a request
        # A replicated state (Qwen4-exp's PLE) holds as many as a Mamba state, without a checkpoint.
        MAMBA_REPLICATED: state_blocks_per_request(None, cache_mode(inp)) + drafts,
    }
    shapes = tuple(
        (kind, bs, bounds.get(kind, 0) if window is None else window - 1 + reach, n)
        for (kind, bs, n), window in zip(plan.classes, plan.class_windows, strict=True)
    )
    return inflight, shapes


def _pooled(
    inp: BudgetInput, settings: Settings, par: Parallel, weights: int, reserved_per_gpu: int
) -> PooledMemory | None:
    """The seed's pooled figures for a layout of several workers sized by GPU memory: every
    worker's memory as one budget, less the whole weights and each worker's reserved memory."""
    if par.workers <= 1 or inp.gpu_memory_bytes is None or inp.kv_cache_memory_bytes is not None:
        return None
    if inp.data_parallel_size > 1:  # the engines' weights are not one engine's: data_parallel totals them
        return None
    if inp.cpu_offload_bytes:  # part of the weights sit in CPU memory: the pool would count them
        return None
    pool_memory = inp.gpu_memory_bytes * par.workers
    pool_requested = requested_memory(pool_memory, settings.gpu_memory_utilization)
    return PooledMemory(
        pool_memory, pool_requested, max(0, pool_requested - weights - reserved_per_gpu * par.workers)
    )


def _band(
    inp: BudgetInput,
    memory: MemoryTerms | None,
    requested: int | None,
    reserved: int,
    stage_bpb: tuple[int, ...],
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Available KV and usable blocks at the ends of the estimate's calibration residuals."""
    if memory is None or memory.non_kv_source != "estimated" or requested is None:
        return None
    rules, available = inp.profile.memory, requested - reserved

    def end(kv: int) -> tuple[int, int]:
        blocks = may_override_num_blocks(get_num_blocks(kv, stage_bpb), inp.num_gpu_blocks_override)
        return kv, max(0, blocks - 1)

    return end(max(0, available + rules.band_low_bytes)), end(max(0, available + rules.band_high_bytes))


def _gpu_weights(
    inp: BudgetInput, model: int, drafted: int, par: Parallel
) -> tuple[WeightsPlacement, tuple[LoraSlot, ...] | None, int, int]:
    """What one GPU holds on this layout, as "Model loading took" counts it: the model's share
    (placed, less an offload), its LoRA slots (made in load_model), and the drafter's share (it
    loads with the target, vllm/v1/worker/gpu/model_runner.py load_model, sharded over the target's
    TP on the last pipeline stage). The placement, the slots, their bytes and the sum."""
    placement = weights_placement(inp, model, par)
    slots = _lora_slots(inp, par)
    lora = lora_bytes(slots) if slots is not None else 0
    return placement, slots, lora, placement.per_gpu + lora + -(-drafted // par.tensor)


def _weights_at(inp: BudgetInput, cap: LayoutCapacity, par: Parallel) -> int:
    """One GPU's weights on another layout, counted as on this one."""
    model = cap.weights_bytes - cap.draft_weights_bytes
    return _gpu_weights(inp, model, cap.draft_weights_bytes, par)[3]


def _tp_sizes_that_fit(inp: BudgetInput, cap: LayoutCapacity) -> list[int]:
    """Tensor-parallel sizes (powers of two that divide the heads, up to 64) whose weights and
    reserved memory leave room for KV on each GPU, with the same GPU and pipeline."""
    if cap.requested_bytes is None:
        return []
    out = []
    for tp in valid_tensor_sizes(inp.geometry, 64):  # what vLLM accepts for this model
        if tp <= cap.parallel.tensor or tp & (tp - 1) or tp % cap.parallel.decode_context:
            continue
        par = Parallel(tp, cap.parallel.pipeline, cap.parallel.decode_context)
        non_kv, cudagraph, _ = _non_kv(inp, cap.settings, par)
        if _weights_at(inp, cap, par) + non_kv + cudagraph < cap.requested_bytes:
            out.append(tp)
    return out


def _layout_warnings(inp: BudgetInput, cap: LayoutCapacity) -> tuple[w.Warning, ...]:
    """The warnings every request on this layout shares (weights that do not fit, a context vLLM
    refuses, estimated non-KV memory, padded groups, raised blocks, overrides, …), the layer
    bytes' own first: computed once a layout with its capacity, so a request adds only its own."""
    plan, out = cap.plan, list(cap.layer_bytes.warnings)
    if cap.kv_memory_shortfall_bytes and cap.requested_bytes is not None:
        fits = _tp_sizes_that_fit(inp, cap)
        over = cap.kv_memory_shortfall_bytes
        out.append(w.Warning(
            w.WEIGHTS_DO_NOT_FIT,
            f"The weights ({fmt_gib(cap.weights_bytes_per_gpu)} per GPU) and reserved memory exceed "
            f"what vLLM may use of this GPU ({fmt_gib(cap.requested_bytes)}) by {fmt_bytes(over)}: "
            "vLLM would not start. "
            + (f"Tensor-parallel sizes that fit: {', '.join(map(str, fits[:3]))}"
               + (" and larger." if len(fits) > 3 else ".") if fits
               else "No tensor-parallel size up to 64 fits: use more memory per GPU or pipeline stages."),
        ))  # fmt: skip
    if inp.enable_lora and cap.lora_slots is None:
        out.append(w.Warning(
            w.LORA_NOT_MODELLED,
            f"LoRA is enabled, but kvplan does not know which modules vLLM wraps in "
            f"{inp.geometry.name} (it models the Llama-layout architectures read from config.json): "
            "its adapter slots are not subtracted, and the KV figures are optimistic by their size.",
        ))  # fmt: skip
    if mxfp4_padding_unmodelled(inp):
        out.append(w.Warning(
            w.MXFP4_PADDING_NOT_MODELLED,
            f"On this GPU ({inp.gpu_name}) vLLM runs gpt-oss's MXFP4 experts on ROCm's AITER kernels, "
            "which pad them to an alignment that depends on the kernel and the CDNA generation; kvplan "
            "does not model it and plans the checkpoint's bytes, so the weights may be larger and the "
            "KV figures optimistic (on NVIDIA GPUs it is up to 12 % of the experts: docs/vllm-rules.md "
            "§3.2).",
        ))  # fmt: skip
    mml = cap.settings.max_model_len
    derived = inp.geometry.max_position_embeddings
    if mml > derived:
        # vllm/config/model.py _get_and_verify_max_len raises unless the env var allows it.
        out.append(w.Warning(
            w.MAX_MODEL_LEN_EXCEEDS_DERIVED,
            f"max_model_len {mml:,} is above the model's derived maximum of {derived:,} tokens: vLLM "
            "refuses to start unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set. The figures below hold "
            "only if overridden, and positions past the derived maximum are outside what the model "
            "was trained on.",
        ))  # fmt: skip
    if not cap.fits_max_model_len:
        needed = total_blocks(cap.shapes, mml, cap.parallel.decode_context)
        out.append(w.Warning(
            w.MAX_MODEL_LEN_DOES_NOT_FIT,
            f"vLLM would refuse to start with max_model_len {mml:,}: one such request "
            f"needs {needed:,} blocks of {max(cap.fit_blocks, 0):,}. "
            + (f"Set max_model_len ≤ {cap.max_context_tokens:,} or free memory."
               if cap.max_context_tokens else "No context fits: free memory first."),
        ))  # fmt: skip
    m = cap.memory
    if m is not None and m.non_kv_source == "estimated":
        out.append(w.Warning(
            w.NON_KV_ESTIMATED,
            f"Besides the weights, vLLM takes about {fmt_gib(cap.non_kv_bytes + cap.cudagraph_bytes)} "
            "for its activation peak, non-torch"
            + (" and CUDA-graph" if m.cudagraph_subtracted else "")
            + f" memory. That is kvplan's estimate for {inp.profile.id}, fitted on {m.calibration}. "
            "For the exact figure, give non_kv_bytes from your engine's log; 0 gives the seed's "
            "weights-only budget.",
        ))  # fmt: skip
    elif m is not None and m.non_kv_source == "not estimated":
        out.append(w.Warning(
            w.NON_KV_NOT_ESTIMATED,
            f"Nothing besides the weights is subtracted: {inp.geometry.name}'s hidden size and "
            "vocabulary are unknown (an inline geometry), so vLLM's activation peak cannot be "
            "estimated. The figures are optimistic: give non_kv_bytes.",
        ))  # fmt: skip
    if plan.padding_slots:
        out.append(w.Warning(
            w.HYBRID_PADDING,
            f"{plan.padding_slots} empty layer slots pad the KV groups to {plan.group_size} layers each.",
        ))  # fmt: skip
    pattern = inp.geometry.layer_pattern
    hybrid = inp.hybrid_kv_cache_manager and inp.profile.hybrid_manager
    if not hybrid and (SLIDING in pattern or CHUNKED in pattern):
        out.append(w.Warning(
            w.HYBRID_MANAGER_DISABLED,
            "Sliding-window and chunked-local layers are sized as full-attention layers.",
        ))  # fmt: skip
    for kind, old, new in plan.raised_block_sizes:
        out.append(w.Warning(
            w.BLOCK_SIZE_RAISED,
            f"vLLM raised the block size of the {KIND_NAMES.get(kind, kind).replace('_', ' ')} layers "
            f"from {old} to {new} so that every "
            + ("group's page has the same size." if inp.geometry.kpool_indexer is None
               else "latent page holds a KDA state, in whole indexer kernel blocks."),
        ))  # fmt: skip
    if inp.num_gpu_blocks_override is not None:
        out.append(w.Warning(
            w.NUM_GPU_BLOCKS_OVERRIDDEN,
            f"The {cap.num_blocks:,} blocks are the num_gpu_blocks_override you gave; the memory "
            f"would give {cap.num_blocks_computed:,}.",
        ))  # fmt: skip
    if inp.kv_offloading_bytes:
        out.append(w.Warning(
            w.OFFLOAD_IS_NOT_CONCURRENCY,
            "CPU offload keeps more KV for reuse; it adds no GPU blocks and no concurrency.",
        ))  # fmt: skip
    pl = cap.placement
    if pl.offloaded:
        out.append(w.Warning(
            w.WEIGHTS_OFFLOADED,
            f"--cpu-offload-gb keeps {fmt_gib(pl.offloaded)} of each GPU's weights in CPU memory. vLLM "
            "moves whole parameters of the decoder layers, in order, until the budget is reached: it "
            "may offload up to one parameter more (more KV memory than planned), and never the "
            "embeddings or the LM head (less, where the budget exceeds the layers' weights).",
        ))  # fmt: skip
    if inp.data_parallel_size > 1:
        out.append(w.Warning(
            w.DATA_PARALLEL_ENGINES,
            f"Each of the {inp.data_parallel_size} DP ranks is its own engine of {cap.parallel.workers} "
            "GPU(s) with its own KV cache: the figures are one engine's, data_parallel totals them.",
        ))  # fmt: skip
    if inp.gpu_memory_nominal:
        out.append(w.Warning(
            w.NOMINAL_GPU_MEMORY,
            "This GPU's memory is its nominal size; the driver reports less, "
            "so give gpu_memory_bytes from torch.cuda.mem_get_info() to be exact.",
        ))  # fmt: skip
    return tuple(out)
