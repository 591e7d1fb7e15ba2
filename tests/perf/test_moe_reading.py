"""A MoE layer's compute efficiency is read at the tokens an expert gets (m·top-k/E), not at m."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.perf.coeffs import MoeFit
from kvplan.core.perf.steptime import moe_seconds

# Compute-bound (η_mem huge): what is left of a layer's time is ρ(x)·m·n·k after the launch floor.
FIT = MoeFit(t0_s=1e-5, eta_mem=1e9, tokens_per_expert=(0.5, 2.0, 8.0), s_per_mnk=(4e-15, 2e-15, 1e-15))
NK = 100_000_000


def compute(m: int, experts: int, top_k: int) -> float:
    return (moe_seconds(FIT, m, NK, 1.0, experts, top_k, 2880, 1e12) - FIT.t0_s) / (m * NK)


def test_shapes_with_the_same_tokens_an_expert_run_at_the_same_efficiency() -> None:
    # gpt-oss (top-4 of 128) at 64 tokens and a top-16-of-896 model at 112: two tokens an expert.
    assert math.isclose(compute(64, 128, 4), compute(112, 896, 16))
    assert math.isclose(compute(64, 128, 4), 2e-15)


def test_between_fitted_bins_the_efficiency_is_linear_in_log2_of_tokens_an_expert() -> None:
    assert math.isclose(compute(32, 128, 4), 3e-15)  # one token an expert: halfway from 0.5 to 2
    assert math.isclose(compute(128, 128, 4), 1.5e-15)  # four: halfway from 2 to 8


@given(st.integers(1, 15), st.integers(8192, 100_000))
def test_beyond_the_fitted_bins_the_end_values_hold(few: int, many: int) -> None:
    assert math.isclose(compute(few, 128, 4), 4e-15)  # under half a token an expert
    assert math.isclose(compute(many, 128, 4), 1e-15)  # 256 and more tokens an expert
