"""The memory budget, the blocks it makes and the requests they hold
(VLLM_FACTS §3, §4, §8; vllm/v1/worker/utils.py, vllm/v1/worker/gpu_worker.py,
vllm/v1/core/kv_cache_utils.py)."""

from __future__ import annotations

import math
from functools import lru_cache

import msgspec
from msgspec.structs import replace

from . import warnings as w
from .concurrency import GroupShape, blocks_for_shape, largest_context, min_utilization, total_blocks
from .dtypes import normalize_weight_dtype, weight_bytes
from .errors import InvalidInput
from .geometry import KIND_NAMES, MAMBA, SLIDING, Geometry
from .groups import GroupPlan, plan_groups
from .ledger import LedgerBuilder, Step
from .parallel import Parallel
from .pertoken import LayerBytes, PerToken, layer_bytes, per_token_ledger, per_token_of
from .profiles import EngineProfile
from .units import GiB, cdiv

MAX_BYTES = 1 << 60
MAX_TOKENS = 1 << 40
MAX_BLOCK_SIZE = 1 << 16
MAX_CONCURRENCY = 1 << 32

SRC_REQUESTED = "vllm/v1/worker/utils.py (requested_memory = ceil(total × util))"
SRC_AVAILABLE = "vllm/v1/worker/gpu_worker.py (available_kv_cache_memory)"
SRC_BLOCKS = "vllm/v1/core/kv_cache_utils.py (get_num_blocks)"
SRC_GROUPS = "vllm/v1/core/kv_cache_utils.py (_get_kv_cache_groups_uniform_page_size)"
SRC_CONC = "vllm/v1/core/kv_cache_utils.py (get_max_concurrency_for_kv_cache_config)"
SRC_FIT = "vllm/v1/core/kv_cache_utils.py (check_enough_kv_cache_memory, estimate_max_model_len)"
SRC_POOL = "vllm/v1/core/block_pool.py (null block 0)"
SRC_SLIDING = "vllm/v1/kv_cache_interface.py (SlidingWindowSpec.max_memory_usage_bytes)"
SRC_MNBT = "vllm/engine/arg_utils.py (get_batch_defaults)"


class BudgetInput(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the budget depends on. Bytes are per GPU worker unless named total."""

    geometry: Geometry
    profile: EngineProfile
    gpu_memory_bytes: int | None = None
    gpu_name: str = ""
    gpu_memory_nominal: bool = False
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str = "auto"
    kv_cache_dtype_skip_layers: tuple[int | str, ...] = ()
    block_size: int | None = None
    context_tokens: int | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    weights_bytes: int | None = None
    weight_dtype: str | None = None
    non_kv_bytes: int = 0
    cudagraph_bytes: int = 0
    kv_cache_memory_bytes: int | None = None
    num_gpu_blocks_override: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    async_scheduling: bool | None = None
    max_model_len: int | None = None
    target_concurrency: int | None = None
    hybrid_kv_cache_manager: bool = True
    extensible_kv_cache: bool = False
    kv_offloading_bytes: int | None = None


class GroupResult(msgspec.Struct, frozen=True):
    """KV-cache groups of one shape: `groups` of them, `layers` real layers in all, each group
    needing `blocks_per_request` blocks of `block_size` tokens for one request."""

    kind: str
    groups: int
    layers: int
    block_size: int
    blocks_per_request: int


class Concurrency(msgspec.Struct, frozen=True):
    """guaranteed: requests the usable blocks hold at once; schedulable: what vLLM runs at once,
    also bounded by max_num_seqs; vllm_reported: vLLM's start-up log line; budget_floor: the
    seed's budget ÷ KV-per-request method."""

    guaranteed: int
    guaranteed_unrounded: float
    vllm_reported: float
    budget_floor: int
    budget_unrounded: float
    schedulable: int


class Pooled(msgspec.Struct, frozen=True):
    gpus: int
    memory_bytes: int
    requested_bytes: int
    available_kv_bytes: int
    kv_bytes_per_request: int
    concurrency: int
    concurrency_unrounded: float


class Budget(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    engine: str
    context_tokens: int
    max_model_len: int
    gpu_memory_bytes: int | None
    gpu_memory_utilization: float
    requested_bytes: int | None
    weights_bytes: int
    weights_bytes_per_gpu: int
    non_kv_bytes: int
    cudagraph_bytes: int
    available_kv_bytes: int
    block_size: int
    bytes_per_block: int
    bytes_per_block_by_stage: tuple[int, ...]
    num_blocks_computed: int
    num_blocks: int
    usable_blocks: int
    token_slots: int
    blocks_per_request: int
    groups: tuple[GroupResult, ...]
    group_size: int
    padding_slots: int
    kv_bytes_per_request: int
    tail_waste_tokens: int
    concurrency: Concurrency
    kv_cache_size_tokens: int
    max_context_tokens: int
    max_context_limited_by: str
    fits_max_model_len: bool
    target_concurrency: int | None
    max_context_for_target: int | None
    min_gpu_memory_utilization: float | None
    max_num_batched_tokens: int
    max_num_seqs: int
    sliding_inflight_tokens: int | None
    pooled: Pooled | None
    per_token: PerToken
    warnings: tuple[w.Warning, ...]
    ledger: tuple[Step, ...] = ()


def _nonneg_int(value: object, field: str, maximum: int = MAX_BYTES) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, f"must be an integer, got {value!r}")
    if value < 0:
        raise InvalidInput(field, f"must not be negative, got {value}")
    if value > maximum:
        raise InvalidInput(field, f"must be at most {maximum}, got {value}")
    return value


def _pos_int(value: object, field: str, maximum: int) -> int:
    v = _nonneg_int(value, field, maximum)
    if v == 0:
        raise InvalidInput(field, "must be at least 1")
    return v


def _utilization(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput("gpu_memory_utilization", f"must be a number, got {value!r}")
    u = float(value)
    if not math.isfinite(u):
        raise InvalidInput("gpu_memory_utilization", "must be a finite number")
    if not 0.0 < u <= 1.0:
        raise InvalidInput("gpu_memory_utilization", f"must be in (0, 1], got {u}")
    return u


def default_max_num_batched_tokens(memory: int | None, gpu_name: str, profile: EngineProfile) -> int:
    """vllm serve's default: 8192 on ≥ 70 GiB GPUs other than A100, 16384 on the largest
    where the profile has that tier, 2048 otherwise. Mirrors vllm/engine/arg_utils.py (get_batch_defaults)."""
    if memory is None:
        return 2048
    big = profile.large_gpu_batched_tokens_min_bytes
    if big is not None and memory >= big:
        return 16384
    if memory >= 70 * GiB and "a100" not in gpu_name.lower():
        return 8192
    return 2048


def weight_split(inp: BudgetInput) -> tuple[int, int, str]:
    """Weights bytes of the dense part and of the routed experts, and how they were found.
    Given weights_bytes are apportioned by the parameter split (data-parallel attention needs it)."""
    g = inp.geometry
    expert_params = g.params_expert or 0
    if inp.weights_bytes is not None:
        total = _nonneg_int(inp.weights_bytes, "weights_bytes")
        expert = total * expert_params // g.params_total if g.params_total and expert_params else 0
        return total - expert, expert, "given"
    if g.params_total is None:
        if inp.kv_cache_memory_bytes is not None or inp.num_gpu_blocks_override is not None:
            return 0, 0, "not needed (KV memory given)"
        raise InvalidInput("weights_bytes", f"model {g.name!r} has no parameter count; give weights_bytes")
    dense_params = g.params_total - expert_params
    if inp.weight_dtype is not None:
        dt = normalize_weight_dtype(inp.weight_dtype)
        return (weight_bytes(dense_params, dt), weight_bytes(expert_params, dt),
                f"{g.params_total:,} params × {dt}")  # fmt: skip
    dense_dt = g.weight_dtype or g.dtype
    expert_dt = g.expert_weight_dtype or dense_dt
    how = f"{g.params_total:,} params × {dense_dt}"
    if expert_dt != dense_dt and expert_params:
        how = f"{expert_params:,} expert params × {expert_dt} + {dense_params:,} × {dense_dt}"
    return weight_bytes(dense_params, dense_dt), weight_bytes(expert_params, expert_dt), how


def default_max_num_seqs(memory: int | None, gpu_name: str) -> int:
    """vllm serve's default: 1024 on ≥ 70 GiB GPUs other than A100, else 256. Mirrors
    vllm/engine/arg_utils.py (get_batch_defaults; not in VLLM_FACTS, checked against the source)."""
    if memory is not None and memory >= 70 * GiB and "a100" not in gpu_name.lower():
        return 1024
    return 256


def resolve_weights(inp: BudgetInput) -> tuple[int, str]:
    """Total weights bytes and how they were found (the description is for the ledger)."""
    dense, expert, how = weight_split(inp)
    return dense + expert, how


def _shapes(plan: GroupPlan, bound: int) -> tuple[GroupShape, ...]:
    return tuple((kind, bs, bound, n) for kind, bs, n in plan.classes)


_INT_FIELDS = (
    "gpu_memory_bytes", "block_size", "context_tokens", "tensor_parallel_size",
    "pipeline_parallel_size", "decode_context_parallel_size", "weights_bytes", "non_kv_bytes",
    "cudagraph_bytes", "kv_cache_memory_bytes", "num_gpu_blocks_override", "max_num_batched_tokens",
    "max_model_len", "target_concurrency", "kv_offloading_bytes", "max_num_seqs",
)  # fmt: skip


def compute_budget(inp: BudgetInput, explain: bool = False) -> Budget:
    """The budget for one scenario. Pure, so answers are memoised; the types are checked first
    because the memo's key equality would treat True as 1 and 8192.0 as 8192."""
    for name in _INT_FIELDS:
        v = getattr(inp, name)
        if v is not None and type(v) is not int:
            raise InvalidInput(name, f"must be an integer, got {v!r}")
    u = inp.gpu_memory_utilization
    if u is not None and type(u) is not float and type(u) is not int:
        raise InvalidInput("gpu_memory_utilization", f"must be a number, got {u!r}")
    try:
        return _memo(inp, explain)
    except TypeError:  # an unhashable field (a list for skip layers): compute without the memo
        return _compute_budget(inp, explain)


@lru_cache(maxsize=4096)
def _memo(inp: BudgetInput, explain: bool) -> Budget:
    return _compute_budget(inp, explain)


class _Capacity:
    """Everything about a scenario that does not depend on the context T or the target N:
    the layout, the memory, the blocks and the fit check. Memoised, so a sweep over T on one
    layout pays only for the per-T part."""

    __slots__ = (
        "async_sched",
        "available",
        "block_size",
        "bpb",
        "computed",
        "cudagraph",
        "dcp",
        "fit_allowed",
        "fits_max",
        "inflight",
        "lb",
        "max_ctx",
        "max_model_len",
        "mnbt",
        "mns",
        "non_kv",
        "num_blocks",
        "par",
        "plan",
        "pool",
        "requested",
        "shapes",
        "stage_bpb",
        "static_warnings",
        "usable",
        "util",
        "weights_gpu",
        "weights_how",
        "weights_total",
    )  # fmt: skip

    def __init__(self, inp: BudgetInput) -> None:
        g, prof = inp.geometry, inp.profile
        self.par = par = Parallel(
            inp.tensor_parallel_size, inp.pipeline_parallel_size, inp.decode_context_parallel_size
        )
        if inp.gpu_memory_bytes is not None:
            _pos_int(inp.gpu_memory_bytes, "gpu_memory_bytes", MAX_BYTES)
        if inp.kv_cache_memory_bytes is not None:
            _nonneg_int(inp.kv_cache_memory_bytes, "kv_cache_memory_bytes")
        if inp.num_gpu_blocks_override is not None:
            _pos_int(inp.num_gpu_blocks_override, "num_gpu_blocks_override", MAX_BYTES)
        self.non_kv = non_kv = _nonneg_int(inp.non_kv_bytes, "non_kv_bytes")
        self.cudagraph = cudagraph = _nonneg_int(inp.cudagraph_bytes, "cudagraph_bytes")
        if (
            inp.gpu_memory_bytes is None
            and inp.kv_cache_memory_bytes is None
            and inp.num_gpu_blocks_override is None
        ):
            raise InvalidInput(
                "gpu", "give a gpu preset, gpu_memory_bytes, kv_cache_memory_bytes or num_gpu_blocks_override"
            )
        if inp.gpu_memory_utilization is not None:
            util = _utilization(inp.gpu_memory_utilization)
        elif inp.extensible_kv_cache and prof.extensible_kv_cache_utilization is not None:
            util = prof.extensible_kv_cache_utilization
        else:
            util = prof.default_gpu_memory_utilization
        self.util = util
        if inp.block_size is not None:
            block_size = _pos_int(inp.block_size, "block_size", MAX_BLOCK_SIZE)
        else:
            block_size = prof.mla_block_size if g.is_mla else prof.default_block_size
        self.block_size = block_size
        self.max_model_len = mml = (
            g.max_position_embeddings
            if inp.max_model_len is None
            else _pos_int(inp.max_model_len, "max_model_len", MAX_TOKENS)
        )
        self.mnbt = mnbt = (
            default_max_num_batched_tokens(inp.gpu_memory_bytes, inp.gpu_name, prof)
            if inp.max_num_batched_tokens is None
            else _pos_int(inp.max_num_batched_tokens, "max_num_batched_tokens", MAX_TOKENS)
        )
        self.mns = (
            default_max_num_seqs(inp.gpu_memory_bytes, inp.gpu_name)
            if inp.max_num_seqs is None
            else _pos_int(inp.max_num_seqs, "max_num_seqs", 1 << 20)
        )
        self.async_sched = (
            prof.async_scheduling_default if inp.async_scheduling is None else inp.async_scheduling
        )
        self.lb = lb = layer_bytes(g, inp.kv_cache_dtype, tuple(inp.kv_cache_dtype_skip_layers), par)
        self.plan = plan = plan_groups(lb, block_size, inp.hybrid_kv_cache_manager)

        # Sliding-window in-flight bound F (profile rule), and the window's block bound W − 1 + F.
        self.inflight = None
        bound = 0
        if any(c[0] == SLIDING for c in plan.classes):
            if prof.sliding_inflight_rule == "batches":
                batches = par.pipeline if par.pipeline > 1 else (2 if self.async_sched else 1)
                self.inflight = batches * mnbt
            else:
                self.inflight = mnbt
            bound = (g.sliding_window or 0) - 1 + self.inflight
        self.shapes = shapes = _shapes(plan, bound)
        self.dcp = dcp = par.decode_context

        # Budget per worker.
        self.weights_total, self.weights_how = resolve_weights(inp)
        self.weights_gpu = cdiv(self.weights_total, par.workers)
        self.requested = None
        if inp.kv_cache_memory_bytes is not None:
            available = inp.kv_cache_memory_bytes
        elif inp.gpu_memory_bytes is not None:
            self.requested = math.ceil(inp.gpu_memory_bytes * util)
            available = self.requested - self.weights_gpu - non_kv - cudagraph
        else:
            available = 0
        self.available = available
        self.stage_bpb = stage_bpb = plan.stage_bytes_per_block
        self.computed = computed = min(max(0, available // b) if b else 0 for b in stage_bpb)
        self.num_blocks = num_blocks = (
            computed if inp.num_gpu_blocks_override is None else inp.num_gpu_blocks_override
        )
        self.usable = max(0, num_blocks - 1)
        self.bpb = max(stage_bpb)
        self.fit_allowed = fit = num_blocks - (1 if prof.null_block_in_fit_check else 0)
        self.fits_max = total_blocks(shapes, mml, dcp) <= fit
        self.max_ctx = largest_context(shapes, fit, mml, dcp)
        self.pool = None
        if par.workers > 1 and inp.gpu_memory_bytes is not None and inp.kv_cache_memory_bytes is None:
            pool_mem = inp.gpu_memory_bytes * par.workers
            pool_req = math.ceil(pool_mem * util)
            self.pool = (
                pool_mem,
                pool_req,
                pool_req - self.weights_total - (non_kv + cudagraph) * par.workers,
            )
        self.static_warnings = self._warnings(inp)

    def _warnings(self, inp: BudgetInput) -> tuple[w.Warning, ...]:
        plan, out = self.plan, list(self.lb.warnings)
        if not self.fits_max:
            needed = total_blocks(self.shapes, self.max_model_len, self.dcp)
            out.append(w.Warning(
                w.MAX_MODEL_LEN_DOES_NOT_FIT,
                f"vLLM would refuse to start with max_model_len {self.max_model_len:,}: one such request "
                f"needs {needed:,} blocks of {self.fit_allowed:,}. "
                f"Set max_model_len ≤ {self.max_ctx:,} or free memory.",
            ))  # fmt: skip
        if plan.padding_slots:
            out.append(w.Warning(
                w.HYBRID_PADDING,
                f"{plan.padding_slots} empty layer slots pad the KV groups to {plan.group_size} layers each.",
            ))  # fmt: skip
        if not inp.hybrid_kv_cache_manager and SLIDING in inp.geometry.layer_pattern:
            out.append(
                w.Warning(
                    w.HYBRID_MANAGER_DISABLED, "Sliding-window layers are sized as full-attention layers."
                )
            )
        for kind, old, new in plan.raised_block_sizes:
            out.append(w.Warning(
                w.BLOCK_SIZE_RAISED,
                f"{kind} layers use block size {new} instead of {old} so that every group's page "
                "has the same size.",
            ))  # fmt: skip
        if inp.num_gpu_blocks_override is not None:
            out.append(w.Warning(
                w.NUM_GPU_BLOCKS_OVERRIDDEN,
                f"num_blocks {self.num_blocks:,} comes from num_gpu_blocks_override "
                f"(memory would give {self.computed:,}).",
            ))  # fmt: skip
        if inp.kv_offloading_bytes:
            out.append(w.Warning(
                w.OFFLOAD_IS_NOT_CONCURRENCY,
                "CPU offload keeps more KV for reuse; it adds no GPU blocks and no concurrency.",
            ))  # fmt: skip
        if inp.gpu_memory_nominal:
            out.append(w.Warning(
                w.NOMINAL_GPU_MEMORY,
                "This GPU's memory is its nominal size; the driver reports less, "
                "so give gpu_memory_bytes from torch.cuda.mem_get_info() to be exact.",
            ))  # fmt: skip
        return tuple(out)


@lru_cache(maxsize=1024)
def _capacity(key: BudgetInput) -> _Capacity:
    return _Capacity(key)


def _compute_budget(inp: BudgetInput, explain: bool) -> Budget:
    try:
        cap = _capacity(replace(inp, context_tokens=None, target_concurrency=None))
    except TypeError:  # an unhashable field: no memo
        cap = _Capacity(inp)
    g, prof, plan, shapes, dcp = inp.geometry, inp.profile, cap.plan, cap.shapes, cap.dcp
    mml = cap.max_model_len
    T = mml if inp.context_tokens is None else _pos_int(inp.context_tokens, "context_tokens", MAX_TOKENS)
    target = (
        None
        if inp.target_concurrency is None
        else _pos_int(inp.target_concurrency, "target_concurrency", MAX_CONCURRENCY)
    )
    pt = per_token_of(g, inp.kv_cache_dtype, cap.lb, cap.par, T)
    num_blocks, usable, available = cap.num_blocks, cap.usable, cap.available

    per_class = [blocks_for_shape(k, bs, bd, T, dcp) for k, bs, bd, _ in shapes]
    bpr = 0
    for (_, _, _, n), b in zip(shapes, per_class, strict=True):
        bpr += n * b
    guaranteed = usable // bpr
    reported = num_blocks / bpr
    kv_req = pt.kv_bytes_per_request or 0
    n_groups = len(plan.groups)
    if prof.kv_cache_size_rule == "concurrency_x_tokens":
        kv_size_tokens = int(reported * T)
    else:
        kv_size_tokens = num_blocks // n_groups * plan.min_block_size * dcp
    # Tail waste of the first group that keeps every token (full attention or MLA).
    tail_waste = 0
    for k, bs, _, _ in shapes:
        if k is not SLIDING and k is not MAMBA:
            tail_waste = cdiv(T, bs * dcp) * bs * dcp - T
            break
    # The largest context that fits, up to max_model_len or the asked T when that is longer.
    if T <= mml:
        max_ctx, cap_len = cap.max_ctx, mml
    else:
        max_ctx, cap_len = largest_context(shapes, cap.fit_allowed, T, dcp), T
    max_ctx_target = None
    min_util = None
    if target is not None:
        max_ctx_target = largest_context(shapes, usable // target, cap_len, dcp)
        if (
            inp.gpu_memory_bytes is not None
            and inp.kv_cache_memory_bytes is None
            and inp.num_gpu_blocks_override is None
        ):
            need = (target * bpr + 1) * cap.bpb + cap.weights_gpu + cap.non_kv + cap.cudagraph
            min_util = min_utilization(inp.gpu_memory_bytes, need)
    pooled = None
    if cap.pool is not None:
        pool_mem, pool_req, pool_avail = cap.pool
        pool_kv = pt.kv_bytes_per_request_model or 0
        pooled = Pooled(
            cap.par.workers, pool_mem, pool_req, pool_avail, pool_kv,
            pool_avail // pool_kv if pool_avail > 0 and pool_kv else 0,
            pool_avail / pool_kv if pool_kv else 0.0,
        )  # fmt: skip

    warns = cap.static_warnings
    if guaranteed == 0 or T > g.max_position_embeddings or pooled is not None or guaranteed > cap.mns:
        extra = []
        if guaranteed == 0:
            extra.append(w.Warning(
                w.BUDGET_INSUFFICIENT,
                f"No request of {T:,} tokens fits: it needs {bpr:,} blocks and {usable:,} are usable. "
                f"The largest context that fits is {max_ctx:,} tokens."
                + ("" if available > 0 else " The weights and reserved memory exceed the budget."),
            ))  # fmt: skip
        if T > g.max_position_embeddings:
            extra.append(w.Warning(
                w.CONTEXT_EXCEEDS_MAX_POSITION,
                f"{T:,} tokens exceed the model's max_position_embeddings {g.max_position_embeddings:,}.",
            ))  # fmt: skip
        if guaranteed > cap.mns:
            extra.append(
                w.Warning(
                    w.MAX_NUM_SEQS_LIMITS,
                    f"The KV cache holds {guaranteed:,} requests of {T:,} tokens, but vLLM runs at most "
                    f"max_num_seqs = {cap.mns:,} at once; raise max_num_seqs to use the rest.",
                )
            )
        if pooled is not None:
            extra.append(w.Warning(
                w.POOLED_NOT_DEPLOYABLE,
                f"Pooling {cap.par.workers} GPUs into one budget gives {pooled.concurrency:,} requests; "
                "that is arithmetic, not a deployment: each worker holds its own KV "
                f"and the engine guarantees {guaranteed:,}.",
            ))  # fmt: skip
        warns = (*warns, *extra)

    result = Budget(
        engine=prof.id,
        context_tokens=T,
        max_model_len=mml,
        gpu_memory_bytes=inp.gpu_memory_bytes,
        gpu_memory_utilization=cap.util,
        requested_bytes=cap.requested,
        weights_bytes=cap.weights_total,
        weights_bytes_per_gpu=cap.weights_gpu,
        non_kv_bytes=cap.non_kv,
        cudagraph_bytes=cap.cudagraph,
        available_kv_bytes=available,
        block_size=cap.block_size,
        bytes_per_block=cap.bpb,
        bytes_per_block_by_stage=cap.stage_bpb,
        num_blocks_computed=cap.computed,
        num_blocks=num_blocks,
        usable_blocks=usable,
        token_slots=usable // n_groups * plan.min_block_size * dcp,
        blocks_per_request=bpr,
        groups=tuple(
            GroupResult(KIND_NAMES[k], n, layers, bs, b)
            for (k, bs, n), layers, b in zip(plan.classes, plan.class_layers, per_class, strict=True)
        ),
        group_size=plan.group_size,
        padding_slots=plan.padding_slots,
        kv_bytes_per_request=kv_req,
        tail_waste_tokens=tail_waste,
        concurrency=Concurrency(
            guaranteed,
            usable / bpr,
            reported,
            available // kv_req if available > 0 and kv_req else 0,
            available / kv_req if kv_req else 0.0,
            min(guaranteed, cap.mns),
        ),
        kv_cache_size_tokens=kv_size_tokens,
        max_context_tokens=max_ctx,
        max_context_limited_by="max_model_len" if max_ctx == cap_len else "kv_cache",
        fits_max_model_len=cap.fits_max,
        target_concurrency=target,
        max_context_for_target=max_ctx_target,
        min_gpu_memory_utilization=min_util,
        max_num_batched_tokens=cap.mnbt,
        max_num_seqs=cap.mns,
        sliding_inflight_tokens=cap.inflight,
        pooled=pooled,
        per_token=pt,
        warnings=warns,
    )
    if explain:
        ledger = _ledger(
            inp, result, cap.lb, cap.par, plan, cap.weights_how, cap.fit_allowed, cap.async_sched
        )
        result = replace(result, ledger=ledger)
    return result


def _ledger(
    inp: BudgetInput,
    b: Budget,
    lb: LayerBytes,
    par: Parallel,
    plan: GroupPlan,
    weights_how: str,
    fit_allowed: int,
    async_sched: bool,
) -> tuple[Step, ...]:
    g = inp.geometry
    led = LedgerBuilder()
    led.add(
        "engine_profile", "rules used for every vLLM-version-dependent step", b.engine, "", "VLLM_FACTS §9"
    )
    per_token_ledger(g, lb, par, b.per_token, into=led)
    if inp.kv_cache_memory_bytes is not None:
        led.add(
            "available_kv_bytes",
            "kv_cache_memory_bytes (replaces the whole budget)",
            b.available_kv_bytes,
            "B",
            "vllm/config/cache.py (kv_cache_memory_bytes)",
            GiB=round(b.available_kv_bytes / GiB, 6),
        )
    elif b.requested_bytes is not None:
        led.add(
            "requested_bytes",
            "ceil(total_memory × gpu_memory_utilization)",
            b.requested_bytes,
            "B",
            SRC_REQUESTED,
            total_memory=b.gpu_memory_bytes,
            gpu_memory_utilization=b.gpu_memory_utilization,
            GiB=round(b.requested_bytes / GiB, 6),
        )
        led.add(
            "weights_bytes",
            weights_how,
            b.weights_bytes,
            "B",
            "request / preset",
            GiB=round(b.weights_bytes / GiB, 6),
        )
        led.add(
            "weights_bytes_per_gpu",
            "ceil(weights_bytes / (TP × PP))",
            b.weights_bytes_per_gpu,
            "B",
            "weights are split over the TP × PP workers",
            TP=par.tensor,
            PP=par.pipeline,
            GiB=round(b.weights_bytes_per_gpu / GiB, 6),
        )
        led.add(
            "available_kv_bytes",
            "requested − weights_per_gpu − non_kv_bytes − cudagraph_bytes",
            b.available_kv_bytes,
            "B",
            SRC_AVAILABLE,
            requested=b.requested_bytes,
            weights_per_gpu=b.weights_bytes_per_gpu,
            non_kv_bytes=b.non_kv_bytes,
            cudagraph_bytes=b.cudagraph_bytes,
            GiB=round(b.available_kv_bytes / GiB, 6),
        )
    if plan.uniform:
        led.add(
            "bytes_per_block",
            "Σ layers' pages = bytes_per_token × block_size",
            b.bytes_per_block,
            "B",
            SRC_BLOCKS,
            bytes_per_token=b.per_token.bytes_per_token,
            block_size=b.block_size,
        )
    else:
        led.add(
            "group_size",
            "smallest kind's layer count, or the largest if < 1.5 × smallest",
            plan.group_size,
            "layers",
            SRC_GROUPS,
            groups=len(plan.groups),
            padding_slots=plan.padding_slots,
        )
        led.add(
            "bytes_per_block",
            "group_size × page (page = bytes per token-layer × block)",
            b.bytes_per_block,
            "B",
            SRC_GROUPS,
            group_size=plan.group_size,
            page=plan.page_bytes,
        )
    if par.pipeline > 1:
        led.add(
            "bytes_per_block_by_stage",
            "each stage's own layers",
            ",".join(str(x) for x in b.bytes_per_block_by_stage),
            "B",
            SRC_BLOCKS,
        )
    led.add(
        "num_blocks",
        "min over workers of available // bytes_per_block"
        + (" (num_gpu_blocks_override)" if inp.num_gpu_blocks_override is not None else ""),
        b.num_blocks,
        "blocks",
        SRC_BLOCKS,
        available=b.available_kv_bytes,
        bytes_per_block=b.bytes_per_block,
        computed=b.num_blocks_computed,
    )
    led.add(
        "usable_blocks", "num_blocks − 1 (block 0 is the null block)", b.usable_blocks, "blocks", SRC_POOL
    )
    led.add(
        "token_slots",
        "usable_blocks // groups × block_size × DCP",
        b.token_slots,
        "tokens",
        SRC_POOL,
        groups=len(plan.groups),
        block_size=plan.min_block_size,
    )
    if b.sliding_inflight_tokens is not None:
        led.add(
            "max_num_batched_tokens",
            "given"
            if inp.max_num_batched_tokens is not None
            else "vllm serve default: 16384 on GPUs ≥ 160 GiB (where the profile has that tier), "
            "8192 on ≥ 70 GiB other than A100, else 2048",
            b.max_num_batched_tokens,
            "tokens",
            SRC_MNBT,
            gpu_memory_bytes=inp.gpu_memory_bytes,
            gpu=inp.gpu_name or None,
        )
        led.add(
            "sliding_inflight_tokens",
            "max_concurrent_batches × max_num_batched_tokens"
            if inp.profile.sliding_inflight_rule == "batches"
            else "max_num_batched_tokens",
            b.sliding_inflight_tokens,
            "tokens",
            SRC_SLIDING,
            max_num_batched_tokens=b.max_num_batched_tokens,
            async_scheduling=async_sched,
            PP=par.pipeline,
        )
    for gr in b.groups:
        if gr.kind == "sliding_attention":
            formula = "ceil(min(W − 1 + F, T) / block_size) + 1"
            src = SRC_SLIDING
        elif gr.kind == "mamba":
            formula, src = "one state block", "vllm/v1/kv_cache_interface.py (MambaSpec)"
        else:
            formula = "ceil(T / (block_size × DCP))"
            src = "vllm/v1/core/single_type_kv_cache_manager.py"
        led.add(
            f"blocks_per_request[{gr.kind} × {gr.groups} groups]",
            formula,
            gr.blocks_per_request,
            "blocks",
            src,
            T=b.context_tokens,
            block_size=gr.block_size,
            W=g.sliding_window if gr.kind == "sliding_attention" else None,
            F=b.sliding_inflight_tokens if gr.kind == "sliding_attention" else None,
            DCP=par.decode_context,
        )
    led.add(
        "blocks_per_request", "Σ over groups (groups × blocks each)", b.blocks_per_request, "blocks", SRC_CONC
    )
    c = b.concurrency
    led.add(
        "concurrency.guaranteed",
        "floor(usable_blocks / blocks_per_request)",
        c.guaranteed,
        "requests",
        SRC_POOL,
        usable_blocks=b.usable_blocks,
        blocks_per_request=b.blocks_per_request,
        unrounded=round(c.guaranteed_unrounded, 4),
    )
    led.add(
        "concurrency.schedulable",
        "min(guaranteed, max_num_seqs); max_num_seqs default: 1024 on ≥ 70 GiB GPUs but A100, else 256",
        c.schedulable,
        "requests",
        SRC_MNBT,
        guaranteed=c.guaranteed,
        max_num_seqs=b.max_num_seqs,
    )
    led.add(
        "concurrency.vllm_reported",
        "num_blocks / blocks_per_request (vLLM's log line)",
        round(c.vllm_reported, 4),
        "×",
        SRC_CONC,
        num_blocks=b.num_blocks,
    )
    led.add(
        "concurrency.budget_floor",
        "floor(available_kv_bytes / kv_bytes_per_request)",
        c.budget_floor,
        "requests",
        "seed table 2",
        available=b.available_kv_bytes,
        kv_bytes_per_request=b.kv_bytes_per_request,
        unrounded=round(c.budget_unrounded, 4),
    )
    led.add(
        "kv_cache_size_tokens",
        "int(vllm_reported × T)"
        if inp.profile.kv_cache_size_rule == "concurrency_x_tokens"
        else "num_blocks // groups × block_size",
        b.kv_cache_size_tokens,
        "tokens",
        "vllm/v1/core/kv_cache_utils.py (_report_kv_cache_config)",
    )
    led.add(
        "tail_waste_tokens",
        "ceil(T / block_size) × block_size − T",
        b.tail_waste_tokens,
        "tokens",
        "VLLM_FACTS §4",
    )
    led.add(
        "max_context_tokens",
        "largest T with blocks_per_request(T) ≤ fit budget",
        b.max_context_tokens,
        "tokens",
        SRC_FIT,
        fit_budget_blocks=fit_allowed,
        null_block_reserved=inp.profile.null_block_in_fit_check,
        limited_by=b.max_context_limited_by,
    )
    if b.target_concurrency is not None:
        led.add(
            "max_context_for_target",
            "largest T with N × blocks_per_request(T) ≤ usable",
            b.max_context_for_target,
            "tokens",
            SRC_CONC,
            N=b.target_concurrency,
        )
        led.add(
            "min_gpu_memory_utilization",
            "smallest u (4 decimals) with ceil(total × u) ≥ (N × blocks + 1) × bytes_per_block"
            " + weights + non_kv + cudagraph",
            b.min_gpu_memory_utilization,
            "",
            SRC_REQUESTED,
            N=b.target_concurrency,
        )
    if b.pooled is not None:
        p = b.pooled
        led.add(
            "pooled.concurrency",
            "floor((ceil(GPUs × memory × util) − weights) / (T × bytes_per_token_model))",
            p.concurrency,
            "requests",
            "seed table 2 (pooled arithmetic, not deployable)",
            gpus=p.gpus,
            available=p.available_kv_bytes,
            kv_bytes_per_request=p.kv_bytes_per_request,
            unrounded=round(p.concurrency_unrounded, 4),
        )
    return led.build()
