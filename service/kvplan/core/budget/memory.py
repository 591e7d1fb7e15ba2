"""Memory per GPU worker: what vLLM requests, what the weights take, what is left for KV
(docs/vllm-rules.md §3)."""

from __future__ import annotations

import math

import msgspec
from msgspec.structs import replace

from ..engine.dtypes import normalize_weight_dtype, weight_bytes
from ..errors import InvalidInput
from ..kv.parallel import Parallel
from ..model.gpu_arch import sm_major
from ..model.mxfp4 import Mxfp4Experts, gpt_oss_experts, gpt_oss_kernel, has_gpt_oss_mxfp4_experts
from ..model.weights import bytes_per_rank
from .types import BudgetInput

SRC_REQUESTED = "vllm/v1/worker/utils.py (requested_memory = ceil(total × util))"
SRC_AVAILABLE = "vllm/v1/worker/gpu_worker.py (available_kv_cache_memory)"


def requested_memory(total_memory: int, gpu_memory_utilization: float) -> int:
    """What one worker may use; mirrors vllm/v1/worker/utils.py (ceil, not floor)."""
    return math.ceil(total_memory * gpu_memory_utilization)


def available_kv_cache_memory(requested: int, weights_per_gpu: int, non_kv: int, cudagraph: int) -> int:
    """requested − weights − activation peak and non-torch − CUDA graphs; mirrors
    vllm/v1/worker/gpu_worker.py determine_available_memory. Negative when they do not fit."""
    return requested - weights_per_gpu - non_kv - cudagraph


def weight_split(inp: BudgetInput) -> tuple[int, int, str]:
    """Weights bytes of the dense part and of the routed experts, and how they were found.
    Given weights_bytes are apportioned by the parameter split (data-parallel attention needs it)."""
    g = inp.geometry
    expert_params = g.params_expert or 0
    if inp.weights_bytes is not None:
        total = inp.weights_bytes
        expert = total * expert_params // g.params_total if g.params_total and expert_params else 0
        return total - expert, expert, "given"
    if g.loaded_weights is not None and inp.weight_dtype is None:
        w = g.loaded_weights
        return w.total_bytes - w.expert_bytes, w.expert_bytes, f"the checkpoint's tensors ({w.source})"
    if g.params_total is None:
        if inp.kv_cache_memory_bytes is not None or inp.num_gpu_blocks_override is not None:
            return 0, 0, "not needed (KV memory given)"
        raise InvalidInput("weights_bytes", f"model {g.name!r} has no parameter count; give weights_bytes")
    dense_params = g.params_total - expert_params
    if g.quant is not None and inp.weight_dtype is None and g.expert_weight_dtype is None:
        q, kept = g.quant, g.params_unquantized or 0
        kept_bytes = weight_bytes(kept, g.dtype)
        quantized = -(-(g.params_total - kept) * q.num // q.den)
        share = expert_params * quantized // max(1, g.params_total - kept)
        how = f"{g.params_total - kept:,} params × {q.num}/{q.den} B ({q.name}) + {kept:,} × {g.dtype}"
        return kept_bytes + quantized - share, share, how
    if inp.weight_dtype is not None:
        dt = normalize_weight_dtype(inp.weight_dtype)
        return (
            weight_bytes(dense_params, dt),
            weight_bytes(expert_params, dt),
            f"{g.params_total:,} params × {dt}",
        )
    dense_dt = g.weight_dtype or g.dtype
    expert_dt = g.expert_weight_dtype or dense_dt
    how = f"{g.params_total:,} params × {dense_dt}"
    if expert_dt != dense_dt and expert_params:
        how = f"{expert_params:,} expert params × {expert_dt} + {dense_params:,} × {dense_dt}"
    return weight_bytes(dense_params, dense_dt), weight_bytes(expert_params, expert_dt), how


class WeightsPlacement(msgspec.Struct, frozen=True, gc=False):
    """One GPU's weights and how they were placed: the dense part (split over TP), the routed
    experts (over TP, or TP × DP under data parallelism; whole experts under expert parallelism),
    the pipeline split, and what --cpu-offload-gb moved to CPU memory. `experts_per_rank` and
    `expert_ranks` are set where experts are placed whole; `per_gpu` is what the GPU holds."""

    per_gpu: int
    before_offload: int
    offloaded: int = 0
    dense_per_gpu: int | None = None
    expert_per_gpu: int | None = None
    expert_ranks: int = 1
    experts_per_rank: int | None = None
    num_experts: int | None = None
    mxfp4: Mxfp4Experts | None = None  # gpt-oss's experts as vLLM allocates them (padded)


def num_routed_experts(inp: BudgetInput) -> int:
    """The model's routed experts as its config names them (0 when it has none or kvplan does not
    know)."""
    s = inp.geometry.shape
    return s.num_experts if s is not None else 0


def has_experts(inp: BudgetInput) -> bool:
    g = inp.geometry
    lw = g.loaded_weights
    return bool(g.params_expert or num_routed_experts(inp) or (lw is not None and lw.expert_bytes))


def check_moe_parallel(inp: BudgetInput) -> None:
    """vLLM refuses expert parallelism for a model without experts (vllm/config/model.py
    _verify_with_expert_parallelism); without it, data parallelism splits each expert's
    intermediate size over TP × DP, which must divide it (vllm/model_executor/layers/fused_moe/
    config.py FusedMoEConfig.__post_init__ asserts so)."""
    if inp.enable_expert_parallel and not has_experts(inp):
        raise InvalidInput(
            "enable_expert_parallel",
            f"model {inp.geometry.name!r} has no experts: vLLM refuses expert parallelism for it "
            "('Number of experts in the model must be greater than 0', vllm/config/model.py)",
        )
    s = inp.geometry.shape
    ranks = inp.tensor_parallel_size * inp.data_parallel_size
    if (
        inp.data_parallel_size > 1
        and not inp.enable_expert_parallel
        and s is not None
        and s.num_experts
        and s.moe_intermediate_size % ranks
    ):
        raise InvalidInput(
            "data_parallel_size",
            f"TP × DP = {ranks} does not divide the experts' intermediate size {s.moe_intermediate_size:,}: "
            "without expert parallelism vLLM splits each expert over TP × DP and fails to start "
            "(vllm/model_executor/layers/fused_moe/config.py FusedMoEConfig); add --enable-expert-parallel",
        )


def _expert_share(inp: BudgetInput, expert: int, par: Parallel) -> tuple[int, int, int | None, int | None]:
    """(one GPU's expert bytes before the pipeline split, the ranks the experts are spread over,
    experts on the fullest rank, routed experts). vLLM's MoE layers flatten TP over DP
    (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make: tp = TP × DP);
    with expert parallelism each rank holds whole experts, the first E mod R ranks one more
    (vllm/model_executor/layers/fused_moe/expert_map_manager.py determine_expert_map)."""
    ranks = par.tensor * inp.data_parallel_size
    n = num_routed_experts(inp)
    if not inp.enable_expert_parallel or ranks == 1 or n == 0:
        return -(-expert // ranks), ranks, None, n or None
    most = -(-n // ranks)
    return -(-expert * most // n), ranks, most, n


def _gpt_oss_mxfp4(inp: BudgetInput) -> bool:
    """gpt-oss with MXFP4 experts, its shape known."""
    s = inp.geometry.shape
    return has_gpt_oss_mxfp4_experts(inp.geometry) and s is not None and bool(s.num_experts)


def own_weights(inp: BudgetInput) -> bool:
    """The model's own weights are planned: none given, no weight dtype imposed."""
    return inp.weights_bytes is None and inp.weight_dtype is None


def mxfp4_experts(inp: BudgetInput, par: Parallel) -> Mxfp4Experts | None:
    """gpt-oss's MXFP4 experts on one GPU as vLLM allocates them (core/model/mxfp4.py), when the
    model's own weights are planned (not given weights or a weight dtype), else None. Either way a
    --moe-backend vLLM refuses for them is refused (the kernel is chosen once)."""
    if not _gpt_oss_mxfp4(inp):
        return None
    g, s, sm = inp.geometry, inp.geometry.shape, sm_major(inp.gpu_name)
    assert s is not None
    if not own_weights(inp) or not s.moe_intermediate_size:
        gpt_oss_kernel(sm, inp.moe_backend, inp.flashinfer_moe_mxfp4_mxfp8)  # refuses as vLLM does
        return None
    return gpt_oss_experts(  # chooses the kernel, refusing as vLLM does
        sm=sm,
        moe_backend=inp.moe_backend,
        mxfp8=inp.flashinfer_moe_mxfp4_mxfp8,
        hidden=s.hidden_size,
        intermediate=s.moe_intermediate_size,
        experts=s.num_experts,
        layers=g.num_layers,
        ranks=par.tensor * inp.data_parallel_size,
        expert_parallel=inp.enable_expert_parallel,
    )


def mxfp4_padding_unmodelled(inp: BudgetInput) -> bool:
    """gpt-oss's MXFP4 experts planned from the model on an AMD GPU, where vLLM runs ROCm's AITER
    kernels, whose padding kvplan does not model (core/model/mxfp4.py gpt_oss_kernel)."""
    return _gpt_oss_mxfp4(inp) and own_weights(inp) and sm_major(inp.gpu_name) == 0


def weights_placement(inp: BudgetInput, weights: int, par: Parallel) -> WeightsPlacement:
    """One GPU's weights: a checkpoint's tensors as vLLM shards them when they are known and the
    request did not set the weights, else an even split over TP × PP; the routed experts over
    TP × DP under data or expert parallelism, and gpt-oss's MXFP4 experts as vLLM allocates them
    (padded for its kernel); less what --cpu-offload-gb keeps in CPU memory."""
    g = inp.geometry
    loaded = g.loaded_weights is not None and own_weights(inp)
    mx = mxfp4_experts(inp, par)
    spread = (inp.data_parallel_size > 1 or inp.enable_expert_parallel or mx is not None) and has_experts(inp)
    dense_per = expert_per = most = n = None
    ranks = 1
    if not spread:
        if loaded:
            assert g.loaded_weights is not None
            per = bytes_per_rank(
                g.loaded_weights, par.tensor, par.pipeline, g.num_attention_heads, g.num_kv_heads
            )
        else:
            per = -(-weights // par.workers)
    else:
        if loaded:
            assert g.loaded_weights is not None
            lw = g.loaded_weights
            dense_w = replace(lw, total_bytes=lw.total_bytes - lw.expert_bytes, expert_bytes=0)
            dense_per = bytes_per_rank(dense_w, par.tensor, 1, g.num_attention_heads, g.num_kv_heads)
            expert = lw.expert_bytes
        else:
            dense, expert, _ = weight_split(inp)
            dense_per = -(-dense // par.tensor)
        expert_per, ranks, most, n = _expert_share(inp, expert, par)
        if mx is not None:
            expert_per = mx.bytes
        per = -(-(dense_per + expert_per) // par.pipeline)
    offloaded = min(inp.cpu_offload_bytes or 0, per)
    return WeightsPlacement(
        per_gpu=per - offloaded,
        before_offload=per,
        offloaded=offloaded,
        dense_per_gpu=dense_per,
        expert_per_gpu=expert_per,
        expert_ranks=ranks,
        experts_per_rank=most,
        num_experts=n,
        mxfp4=mx,
    )


def weights_per_worker(inp: BudgetInput, weights: int, par: Parallel) -> int:
    """One GPU's weights as placed (weights_placement)."""
    return weights_placement(inp, weights, par).per_gpu


def resolve_weights(inp: BudgetInput) -> tuple[int, str]:
    """Total weights bytes and how they were found (the description is for the ledger)."""
    dense, expert, how = weight_split(inp)
    return dense + expert, how
