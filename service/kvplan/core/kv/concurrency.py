"""Requests the pool holds: blocks per request, the largest context that fits, and the
smallest utilization for a target (docs/vllm-rules.md §4, §8)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..model.geometry import CHUNKED, CIRCULAR_BUFFER, MAMBA, MAMBA_REPLICATED, SCONV, SLIDING, SLIDING_MLA

# Groups of one shape need the same blocks, so the solver works on shape classes:
# (kind, block_size, bound, number of groups of this shape). The bound is the kind's own:
# W − 1 + F tokens for sliding layers, chunk + F tokens for chunked-local layers, the state
# blocks a request holds for Mamba layers, 1 for a ring (CircularBufferSpec), 0 for layers that
# keep every token.
GroupShape = tuple[str, int, int, int]

# gpu_memory_utilization is set with 4 decimals: u = k / UTILIZATION_STEPS.
UTILIZATION_STEPS = 10_000


# Kinds that keep a window of tokens (SlidingWindowSpec's rule: SlidingWindowMLASpec and Inkling's
# conv state follow it), that hold a fixed number of state blocks (Mamba, replicated states, a
# ring), and every kind whose blocks stop growing with the context.
WINDOWED = (SLIDING, SLIDING_MLA, SCONV)
STATES = (MAMBA, MAMBA_REPLICATED, CIRCULAR_BUFFER)
BOUNDED = (*WINDOWED, CHUNKED, *STATES)


def blocks_for_shape(kind: str, bs: int, bound: int, tokens: int, dcp: int) -> int:
    """Blocks one request of `tokens` needs in one group of this shape
    (max_memory_usage_bytes / page in vllm/v1/kv_cache_interface.py)."""
    if kind in WINDOWED:
        return -(-min(bound, tokens) // bs) + 1
    if kind == CHUNKED:  # ChunkedLocalAttentionSpec.max_admission_blocks_per_request: no + 1
        return -(-min(bound, tokens) // bs)
    if kind in STATES:  # the state blocks a request holds; a ring one (CircularBufferSpec)
        return bound
    return -(-tokens // (bs * dcp))


def total_blocks(shapes: Sequence[GroupShape], tokens: int, dcp: int) -> int:
    return sum(n * blocks_for_shape(k, bs, bound, tokens, dcp) for k, bs, bound, n in shapes)


def largest_context(shapes: Sequence[GroupShape], allowed: int, cap: int, dcp: int) -> int:
    """Largest T ≤ cap with total_blocks(T) ≤ allowed; 0 when not even one token fits.
    total_blocks is non-decreasing in T, so a closed form is tried and a binary search
    (as vLLM's estimate_max_model_len) covers the rest: on integers in [1, cap], so it halves
    the range at most ⌈log₂ cap⌉ + 1 times (41 for cap = MAX_TOKENS = 2⁴⁰), whatever the input."""
    if allowed <= 0 or total_blocks(shapes, 1, dcp) > allowed:
        return 0
    if total_blocks(shapes, cap, dcp) <= allowed:
        return cap
    growing = [(bs * dcp, n) for kind, bs, _, n in shapes if kind not in BOUNDED]
    if growing and len({u for u, _ in growing}) == 1:
        unit = growing[0][0]
        saturate = max((bound for kind, _, bound, _ in shapes if kind in (*WINDOWED, CHUNKED)), default=0)
        # Past the saturation point every bounded group needs its fixed number of blocks.
        fixed = sum(n * blocks_for_shape(kind, bs, bound, saturate, dcp) for kind, bs, bound, n in shapes
                    if kind in BOUNDED)  # fmt: skip
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
    """Smallest utilization u = k / 10 000 (k a whole number from 1 to 10 000, as a person sets
    it) for which vLLM's ceil(total × u) ≥ needed_requested (vllm/v1/worker/utils.py); None
    when not even u = 1.0 reaches it.

    Closed form, no search: in exact arithmetic ceil(total × k / 10 000) ≥ need ⇔
    total × k / 10 000 > need − 1 ⇔ k ≥ (need − 1) × 10 000 // total + 1 =: k*. vLLM multiplies
    in floats, which can move the product by a relative 2⁻⁵¹ at most: less than the step
    total / 10 000 between two k, so the float answer is k* − 1, k* or k* + 1, and ceil of the
    float product is non-decreasing in k, so the first of the three that passes is the smallest."""
    if total_memory < 1:
        return None
    exact = max(1, (needed_requested - 1) * UTILIZATION_STEPS // total_memory + 1)
    for k in (exact - 1, exact, exact + 1):
        if not 1 <= k <= UTILIZATION_STEPS:
            continue
        u = k / UTILIZATION_STEPS
        # requested_memory as budget.memory computes it: ceil(total × u) in floats, like vLLM.
        if math.ceil(total_memory * u) >= needed_requested:
            return u
    return None
