"""Requests the pool holds: blocks per request, the largest context that fits, and the
smallest utilization for a target (VLLM_FACTS §4, §8)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .geometry import MAMBA, SLIDING
from .units import cdiv

# Groups of one shape need the same blocks, so the solver works on shape classes:
# (kind, block_size, sliding bound W − 1 + F, number of groups of this shape).
GroupShape = tuple[str, int, int, int]


def blocks_for_shape(kind: str, bs: int, bound: int, tokens: int, dcp: int) -> int:
    """Blocks one request of `tokens` needs in one group of this shape
    (max_memory_usage_bytes / page in vllm/v1/kv_cache_interface.py)."""
    if kind == SLIDING:
        return -(-min(bound, tokens) // bs) + 1
    if kind == MAMBA:
        return 1
    return -(-tokens // (bs * dcp))


def total_blocks(shapes: Sequence[GroupShape], tokens: int, dcp: int) -> int:
    return sum(n * blocks_for_shape(k, bs, bound, tokens, dcp) for k, bs, bound, n in shapes)


def largest_context(shapes: Sequence[GroupShape], allowed: int, cap: int, dcp: int) -> int:
    """Largest T ≤ cap with total_blocks(T) ≤ allowed; 0 when not even one token fits.
    total_blocks is non-decreasing in T, so a closed form is tried and a binary search
    (as vLLM's estimate_max_model_len) covers the rest."""
    if allowed <= 0 or total_blocks(shapes, 1, dcp) > allowed:
        return 0
    if total_blocks(shapes, cap, dcp) <= allowed:
        return cap
    growing = [(bs * dcp, n) for kind, bs, _, n in shapes if kind not in (SLIDING, MAMBA)]
    if growing and len({u for u, _ in growing}) == 1:
        unit = growing[0][0]
        saturate = max((bound for kind, _, bound, _ in shapes if kind == SLIDING), default=0)
        fixed = sum(n * (cdiv(bound, bs) + 1) for kind, bs, bound, n in shapes if kind == SLIDING)
        fixed += sum(n for kind, _, _, n in shapes if kind == MAMBA)
        k = (allowed - fixed) // sum(n for _, n in growing)
        t = k * unit
        if (
            t >= max(saturate, 1)
            and total_blocks(shapes, t, dcp) <= allowed
            and total_blocks(shapes, t + 1, dcp) > allowed
        ):
            return min(t, cap)
    lo, hi = 1, cap
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if total_blocks(shapes, mid, dcp) <= allowed:
            lo = mid
        else:
            hi = mid - 1
    return lo


def min_utilization(total_memory: int, needed_requested: int) -> float | None:
    """Smallest utilization, rounded up to 4 decimals as a person would set it, for which
    ceil(total × u) ≥ needed_requested (the rule of vllm/v1/worker/utils.py); None above 1."""
    if needed_requested <= 0:
        return 0.0001
    u = math.ceil(needed_requested * 10_000 / total_memory) / 10_000
    while math.ceil(total_memory * u) < needed_requested:
        u = round(u + 0.0001, 4)
    return u if u <= 1.0 else None
