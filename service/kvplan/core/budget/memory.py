"""Memory per GPU worker: what vLLM requests, what the weights take, what is left for KV
(docs/vllm-rules.md §3)."""

from __future__ import annotations

import math

from ..engine.dtypes import normalize_weight_dtype, weight_bytes
from ..errors import InvalidInput
from ..kv.parallel import Parallel
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


def weights_per_worker(inp: BudgetInput, weights: int, par: Parallel) -> int:
    """One GPU's weights: a checkpoint's tensors as vLLM shards them when they are known and the
    request did not set the weights; else an even split over TP × PP."""
    g = inp.geometry
    if g.loaded_weights is not None and inp.weights_bytes is None and inp.weight_dtype is None:
        return bytes_per_rank(
            g.loaded_weights, par.tensor, par.pipeline, g.num_attention_heads, g.num_kv_heads
        )
    return -(-weights // par.workers)


def resolve_weights(inp: BudgetInput) -> tuple[int, str]:
    """Total weights bytes and how they were found (the description is for the ledger)."""
    dense, expert, how = weight_split(inp)
    return dense + expert, how
