"""Issue 11: the smallest utilization and the largest context are found in bounded work, whatever
the caller sends: a closed form on integers and a binary search over an explicit range."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.kv.concurrency import UTILIZATION_STEPS, largest_context, min_utilization, total_blocks
from kvplan.core.model.geometry import FULL, MAMBA, SLIDING

GIB = 1024**3


def reaches(total: int, k: int, need: int) -> bool:
    """vLLM's rule at u = k / 10 000: requested = ceil(total × u), multiplied in floats."""
    return math.ceil(total * (k / UTILIZATION_STEPS)) >= need


def brute_force(total: int, need: int) -> float | None:
    for k in range(1, UTILIZATION_STEPS + 1):
        if reaches(total, k, need):
            return k / UTILIZATION_STEPS
    return None


def test_min_utilization_is_found_in_closed_form_for_huge_targets(budget):
    # GET /v1/budget?model=llama-3-8b&gpu=h100-sxm-80gb&context_tokens=2^40&target_concurrency=2^32-1
    # stepped u by 0.0001 until past 2^39, where the step no longer changes the float: a hang.
    b = budget("llama-3-8b", gpu="h100-sxm-80gb", context_tokens=1 << 40, target_concurrency=4294967295)
    assert b.min_gpu_memory_utilization is None


def test_min_utilization_of_a_need_far_beyond_the_gpu_is_none_at_once():
    assert min_utilization(80 * GIB, 1 << 200) is None


@settings(max_examples=300, deadline=None)
@given(total=st.integers(1, 40_000), need=st.integers(-3, 45_000))
def test_min_utilization_equals_the_brute_force_search_on_small_numbers(total, need):
    assert min_utilization(total, need) == brute_force(total, need)


@settings(max_examples=500, deadline=None)
@given(total=st.integers(1, 1 << 60), need=st.integers(1, 1 << 61))
def test_min_utilization_is_the_first_step_that_reaches_the_need_at_any_size(total, need):
    u = min_utilization(total, need)
    if u is None:
        assert not reaches(total, UTILIZATION_STEPS, need)
        return
    k = round(u * UTILIZATION_STEPS)
    assert u == k / UTILIZATION_STEPS and 1 <= k <= UTILIZATION_STEPS
    assert reaches(total, k, need)
    assert k == 1 or not reaches(total, k - 1, need)  # ceil(total × u) only grows with k


def test_min_utilization_follows_vllms_float_product_not_exact_arithmetic():
    # 25 × 0.28 is 7.000000000000001 in floats, so vLLM requests 8 bytes at u = 0.28;
    # exact arithmetic would need 0.2801.
    assert min_utilization(25, 8) == 0.28


def test_min_utilization_of_no_need_is_the_smallest_setting():
    assert min_utilization(80 * GIB, 0) == 0.0001
    assert min_utilization(80 * GIB, -5) == 0.0001


@settings(max_examples=200, deadline=None)
@given(
    shapes=st.lists(
        st.tuples(
            st.sampled_from([FULL, SLIDING, MAMBA]),
            st.sampled_from([1, 16, 64, 256]),
            st.integers(1, 1 << 20),
            st.integers(1, 8),
        ),
        min_size=1,
        max_size=4,
    ),
    allowed=st.integers(-5, 1 << 45),
    cap=st.integers(1, 1 << 40),
    dcp=st.sampled_from([1, 2, 8]),
)
def test_largest_context_is_the_last_fitting_length_for_any_budget(shapes, allowed, cap, dcp):
    t = largest_context(shapes, allowed, cap, dcp)
    assert 0 <= t <= cap
    if t == 0:
        assert allowed <= 0 or total_blocks(shapes, 1, dcp) > allowed
        return
    assert total_blocks(shapes, t, dcp) <= allowed
    assert t == cap or total_blocks(shapes, t + 1, dcp) > allowed
