"""The budget for one scenario: the layout's capacity (capacity.py), then what requests of
the asked context need and how many fit."""

from __future__ import annotations

import math
from functools import lru_cache
from operator import attrgetter

from msgspec import inspect as mi
from msgspec.structs import replace

from .. import warnings as w
from ..errors import InvalidInput
from ..kv.concurrency import BOUNDED, blocks_for_shape, largest_context, min_utilization
from ..kv.pertoken import for_context
from ..limits import MAX_TOKENS, MEMO_MAX_LAYERS
from ..memo import register_clear
from ..model.geometry import KIND_NAMES
from ..units import cdiv
from ..validate import integer, positive_int
from .capacity import LayoutCapacity, layout_capacity
from .explain import budget_ledger
from .invariants import check_budget
from .kv_cache_utils import (
    get_kv_cache_capacity,
    get_max_concurrency_for_kv_cache_config,
)
from .speculation import with_speculation
from .types import Band, Budget, BudgetInput, Concurrency, DataParallel, EngineSettings, GroupResult, Pooled


def _int_settings() -> tuple[tuple[str, int, int], ...]:
    """Each integer setting and its bounds, as EngineSettings' types state them (the wire's)."""
    out = []
    info = mi.type_info(EngineSettings)
    assert isinstance(info, mi.StructType)
    for f in info.fields:
        for t in f.type.types if isinstance(f.type, mi.UnionType) else (f.type,):
            t = t.type if isinstance(t, mi.Metadata) else t  # a description around the bounds
            if isinstance(t, mi.IntType):
                assert t.ge is not None and t.le is not None, f.name  # every setting is bounded
                out.append((f.name, t.ge, t.le))
    return tuple(out)


_INT_SETTINGS = _int_settings()
_INT_FIELDS = tuple(name for name, _, _ in _INT_SETTINGS)
_int_fields = attrgetter(*_INT_FIELDS)
_INT_OR_NONE = frozenset({int, type(None)})
# Bounded where they are used, after the layout's own checks, so that a request with two faults
# is told of the same one as ever: the values a sweep varies (context_tokens below, the parallel
# sizes in core/kv/parallel.py, gpu_memory_utilization in defaults.py).
_BOUNDED_IN_PLACE = frozenset(
    {"context_tokens", "tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size"}
)
_BOUNDED_HERE = tuple(x for x in _INT_SETTINGS if x[0] not in _BOUNDED_IN_PLACE)


def check_types(inp: BudgetInput) -> None:
    """The integer settings are ints (one pass in C; the loop names the field) and the
    utilization a number: the memo's key equality would treat True as 1 and 8192.0 as 8192."""
    values = _int_fields(inp)
    if not _INT_OR_NONE.issuperset(map(type, values)):
        for name, value in zip(_INT_FIELDS, values, strict=True):
            if value is not None and type(value) is not int:
                integer(value, name, math.inf)
    u = inp.gpu_memory_utilization
    if u is not None and type(u) is not float and type(u) is not int:
        raise InvalidInput("gpu_memory_utilization", f"must be a number, got {u!r}")


def check_bounds(inp: BudgetInput) -> None:
    """Each integer setting within the bounds EngineSettings states (the wire refuses a request's
    values by the same bounds at decoding; these are for values that reach the core another way)."""
    for name, low, high in _BOUNDED_HERE:
        value = getattr(inp, name)
        if value is not None and not low <= value <= high:
            integer(value, name, high, low)


def compute_budget(inp: BudgetInput, explain: bool = False) -> Budget:
    """The budget for one scenario. Pure, so answers are memoised; the input is checked by the
    one integer rule (core/validate.py): its types first, its bounds on a memo miss (a hit's key
    passed them)."""
    check_types(inp)
    if inp.geometry.num_layers > MEMO_MAX_LAYERS:  # an entry would hold too much: compute anew
        return _compute_budget(inp, explain)
    try:
        return _memo(inp, explain)
    except TypeError:  # an unhashable field (a list for skip layers): compute without the memo
        return _compute_budget(inp, explain)


@lru_cache(maxsize=4096)
def _memo(inp: BudgetInput, explain: bool) -> Budget:
    return _compute_budget(inp, explain)


register_clear(_memo.cache_clear)


def _compute_budget(inp: BudgetInput, explain: bool) -> Budget:
    """The budget for one scenario, unmemoised (compute_budget's memo calls it on a miss): the
    layout's capacity, then the blocks a request of the asked context needs in each group, how
    many such requests the blocks and the bytes hold, the largest context that fits, what a target
    concurrency allows and needs, and the warnings; checked by the budget's invariants, and with
    its ledger when explain is asked."""
    check_bounds(inp)
    inp = with_speculation(inp)
    cap = layout_capacity(inp)
    g, settings, plan, shapes = inp.geometry, cap.settings, cap.plan, cap.shapes
    dcp = cap.parallel.decode_context
    mml = settings.max_model_len
    tokens = (
        mml if inp.context_tokens is None else positive_int(inp.context_tokens, "context_tokens", MAX_TOKENS)
    )
    target = inp.target_concurrency
    pt = for_context(cap.per_token, g, cap.layer_bytes, cap.parallel, tokens)
    num_blocks, usable, available = cap.num_blocks, cap.usable_blocks, cap.available_kv_bytes

    per_shape = [blocks_for_shape(kind, bs, bound, tokens, dcp) for kind, bs, bound, _ in shapes]
    blocks_per_request = sum(n * b for (_, _, _, n), b in zip(shapes, per_shape, strict=True))
    guaranteed = usable // blocks_per_request
    reported = get_max_concurrency_for_kv_cache_config(
        inp.profile, num_blocks, blocks_per_request, plan.min_block_size, tokens
    )
    kv_per_request = pt.kv_bytes_per_request or 0
    n_groups = len(plan.groups)
    kv_size_tokens = get_kv_cache_capacity(
        inp.profile, reported, tokens, num_blocks, n_groups, plan.min_block_size, dcp
    )
    tail_waste = _tail_waste(cap, tokens)
    # The largest context that fits, up to max_model_len or the asked T when that is longer.
    if tokens <= mml:
        max_ctx, cap_len = cap.max_context_tokens, mml
    else:
        max_ctx, cap_len = largest_context(shapes, cap.fit_blocks, tokens, dcp), tokens
    max_ctx_target, min_util = _for_target(inp, cap, cap_len, blocks_per_request)
    pooled = None
    if cap.pooled is not None:
        pool = cap.pooled
        pool_kv = pt.kv_bytes_per_request_model or 0
        pooled = Pooled(
            cap.parallel.workers,
            pool.memory_bytes,
            pool.requested_bytes,
            pool.available_kv_bytes,
            pool_kv,
            *_requests_held(pool.available_kv_bytes, pool_kv),
        )
    band = _band(cap, blocks_per_request)
    warnings = _request_warnings(cap, tokens, g.max_position_embeddings, guaranteed, blocks_per_request,
                                 max_ctx, pooled)  # fmt: skip
    schedulable = min(guaranteed, settings.max_num_seqs)
    dp = inp.data_parallel_size
    data_parallel = (
        DataParallel(dp, dp * cap.parallel.workers, dp * schedulable, dp * kv_size_tokens) if dp > 1 else None
    )
    result = Budget(
        engine=inp.profile.id,
        context_tokens=tokens,
        max_model_len=mml,
        gpu_memory_bytes=inp.gpu_memory_bytes,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        requested_bytes=cap.requested_bytes,
        weights_bytes=cap.weights_bytes,
        weights_bytes_per_gpu=cap.weights_bytes_per_gpu,
        non_kv_bytes=cap.non_kv_bytes,
        cudagraph_bytes=cap.cudagraph_bytes,
        available_kv_bytes=available,
        block_size=settings.block_size,
        bytes_per_block=cap.bytes_per_block,
        bytes_per_block_by_stage=cap.bytes_per_block_by_stage,
        num_blocks_computed=cap.num_blocks_computed,
        num_blocks=num_blocks,
        usable_blocks=usable,
        token_slots=usable // n_groups * plan.min_block_size * dcp,
        blocks_per_request=blocks_per_request,
        groups=tuple(
            GroupResult(KIND_NAMES[kind], n, layers, bs, blocks)
            for (kind, bs, n), layers, blocks in zip(plan.classes, plan.class_layers, per_shape, strict=True)
        ),
        group_size=plan.group_size,
        padding_slots=plan.padding_slots,
        kv_bytes_per_request=kv_per_request,
        tail_waste_tokens=tail_waste,
        concurrency=Concurrency(
            guaranteed,
            usable / blocks_per_request,
            reported,
            *_requests_held(available, kv_per_request),
            schedulable,
        ),
        kv_cache_size_tokens=kv_size_tokens,
        max_context_tokens=max_ctx,
        max_context_limited_by="max_model_len" if max_ctx == cap_len else "kv_cache",
        fits_max_model_len=cap.fits_max_model_len,
        memory=cap.memory,
        band=band,
        tensor_parallel_size=cap.parallel.tensor,
        pipeline_parallel_size=cap.parallel.pipeline,
        target_concurrency=target,
        max_context_for_target=max_ctx_target,
        min_gpu_memory_utilization=min_util,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        max_num_seqs=settings.max_num_seqs,
        sliding_inflight_tokens=cap.sliding_inflight_tokens,
        pooled=pooled,
        per_token=pt,
        warnings=warnings,
        kv_memory_shortfall_bytes=cap.kv_memory_shortfall_bytes,
        weights_offloaded_bytes=cap.placement.offloaded,
        data_parallel=data_parallel,
        lora_bytes_per_gpu=cap.lora_bytes,
    )
    check_budget(result)
    if explain:
        result = replace(result, ledger=budget_ledger(inp, result, cap))
    return result


def _for_target(
    inp: BudgetInput, cap: LayoutCapacity, cap_len: int, blocks_per_request: int
) -> tuple[int | None, float | None]:
    """For a target concurrency (both None without one): the largest context (up to cap_len)
    that many requests hold at once, and the smallest gpu_memory_utilization that holds that
    many of the asked context, None where the GPU's memory does not size the budget (no GPU
    memory, or a KV memory size or a block count given) or even 1.0 does not reach it."""
    target = inp.target_concurrency
    if target is None:
        return None, None
    max_ctx_target = largest_context(
        cap.shapes, cap.usable_blocks // target, cap_len, cap.parallel.decode_context
    )
    if (
        inp.gpu_memory_bytes is None
        or inp.kv_cache_memory_bytes is not None
        or inp.num_gpu_blocks_override is not None
    ):
        return max_ctx_target, None
    need = (
        (target * blocks_per_request + 1) * cap.bytes_per_block
        + cap.weights_bytes_per_gpu
        + cap.non_kv_bytes
        + cap.cudagraph_bytes
    )
    return max_ctx_target, min_utilization(inp.gpu_memory_bytes, need)


def _requests_held(available: int, kv_per_request: int) -> tuple[int, float]:
    """The seed's budget ÷ KV-per-request method, for the engine's budget and the pooled one
    alike: the requests a KV budget of `available` bytes holds, floored and unrounded (none
    without a budget left or a KV cost)."""
    return (
        available // kv_per_request if available > 0 and kv_per_request else 0,
        max(0.0, available / kv_per_request) if kv_per_request else 0.0,
    )


def _band(cap: LayoutCapacity, blocks_per_request: int) -> Band | None:
    """Available KV at the ends of the estimate's calibration residuals, and the requests each
    end holds (the same blocks arithmetic as the answer's own)."""
    if cap.band is None:
        return None
    (low, low_blocks), (high, high_blocks) = cap.band
    return Band(available_kv_low_bytes=low, available_kv_high_bytes=high,
                concurrency_low=low_blocks // blocks_per_request,
                concurrency_high=high_blocks // blocks_per_request)  # fmt: skip


def _tail_waste(cap: LayoutCapacity, tokens: int) -> int:
    """Unused slots in the last block of the first group that keeps every token."""
    dcp = cap.parallel.decode_context
    for kind, bs, _, _ in cap.shapes:
        if kind not in BOUNDED:
            return cdiv(tokens, bs * dcp) * bs * dcp - tokens
    return 0


def _request_warnings(
    cap: LayoutCapacity,
    tokens: int,
    max_position: int,
    guaranteed: int,
    blocks_per_request: int,
    max_ctx: int,
    pooled: Pooled | None,
) -> tuple[w.Warning, ...]:
    """The budget's warnings: the layout's own (cap.warnings), then those that depend on the
    asked context, in this order: no request fits (with the largest context that does, and the
    memory shortfall), the context exceeds max_position_embeddings, max_num_seqs caps the
    requests the cache holds, and pooling the workers misleads. A function of its own because
    the layout's warnings are shared by every context of a sweep: the common case, none of
    these, returns them as they are."""
    max_num_seqs = cap.settings.max_num_seqs
    if not (guaranteed == 0 or tokens > max_position or pooled is not None or guaranteed > max_num_seqs):
        return cap.warnings
    extra = []
    if guaranteed == 0:
        extra.append(w.Warning(
            w.BUDGET_INSUFFICIENT,
            f"No request of {tokens:,} tokens fits: it needs {blocks_per_request:,} blocks and "
            f"{cap.usable_blocks:,} are usable. The largest context that fits is {max_ctx:,} tokens."
            + (
                f" The weights and reserved memory exceed the budget by {cap.kv_memory_shortfall_bytes:,} B."
                if cap.kv_memory_shortfall_bytes
                else ""
            ),
        ))  # fmt: skip
    if tokens > max_position:
        extra.append(w.Warning(
            w.CONTEXT_EXCEEDS_MAX_POSITION,
            f"{tokens:,} tokens exceed the model's max_position_embeddings {max_position:,}.",
        ))  # fmt: skip
    if guaranteed > max_num_seqs:
        extra.append(w.Warning(
            w.MAX_NUM_SEQS_LIMITS,
            f"The KV cache holds {guaranteed:,} requests of {tokens:,} tokens, but vLLM runs at most "
            f"max_num_seqs = {max_num_seqs:,} at once; raise max_num_seqs to use the rest.",
        ))  # fmt: skip
    if pooled is not None and pooled.concurrency != guaranteed:  # the trap only where it misleads
        extra.append(w.Warning(
            w.POOLED_NOT_DEPLOYABLE,
            f"Pooling {cap.parallel.workers} GPUs into one budget gives {pooled.concurrency:,} requests; "
            "that is arithmetic, not a deployment: each worker holds its own KV "
            f"and the engine guarantees {guaranteed:,}.",
        ))  # fmt: skip
    return (*cap.warnings, *extra)
