"""A MoE layer's compute efficiency is read at the tokens an expert gets (m·top-k/E), not at m, and
its time never falls as m grows."""

from __future__ import annotations

import math
from itertools import pairwise

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.perf.coeffs import MoeFit
from kvplan.core.perf.steptime import moe_seconds
from kvplan.presets.perf import load_coefficients

# Compute-bound (η_mem huge): what is left of a layer's time is w(x)·E/k·n·k after the launch floor,
# i.e. ρ(x)·m·n·k with ρ = w/x: 4e-15 at half a token an expert, 2e-15 at 2, 1e-15 at 8.
FIT = MoeFit(t0_s=1e-5, eta_mem=1e9, tokens_per_expert=(0.5, 2.0, 8.0), s_per_weight=(2e-15, 4e-15, 8e-15))
NK = 100_000_000


def rho(m: int, experts: int, top_k: int) -> float:
    return (moe_seconds(FIT, m, NK, 1.0, experts, top_k, 2880, 1e12) - FIT.t0_s) / (m * NK)


def test_shapes_with_the_same_tokens_an_expert_run_at_the_same_efficiency() -> None:
    # gpt-oss (top-4 of 128) at 64 tokens and a top-16-of-896 model at 112: two tokens an expert.
    assert math.isclose(rho(64, 128, 4), rho(112, 896, 16))
    assert math.isclose(rho(64, 128, 4), 2e-15)


def test_between_fitted_bins_the_work_a_weight_is_linear_in_log2_of_tokens_an_expert() -> None:
    assert math.isclose(rho(32, 128, 4), 3e-15)  # one token an expert: w halfway from 2e-15 to 4e-15
    assert math.isclose(rho(128, 128, 4), 1.5e-15)  # four: w halfway from 4e-15 to 8e-15


@given(st.integers(1, 15), st.integers(256, 100_000))
def test_beyond_the_fitted_bins_the_end_efficiencies_hold(few: int, many: int) -> None:
    assert math.isclose(rho(few, 128, 4), 4e-15)  # under half a token an expert
    assert math.isclose(rho(many, 128, 4), 1e-15)  # eight tokens an expert and more


TABLES = [(s, k, f) for s, c in load_coefficients().systems.items() for k, f in c.moe.items()]
# (experts, top-k, hidden, intermediate): gpt-oss-120b, Qwen3-235B-A22B, DeepSeek-V3.
SHAPES = ((128, 4, 2880, 2880), (128, 8, 4096, 1536), (256, 8, 7168, 2048))
TOKENS = [*range(1, 1025), *range(1040, 65_537, 16)]


@pytest.mark.parametrize(("system", "key", "fit"), TABLES, ids=[f"{s}-{k}" for s, k, _ in TABLES])
def test_no_shipped_table_makes_a_layer_faster_for_more_tokens(system, key, fit) -> None:
    for experts, top_k, hidden, inter in SHAPES:
        nk, expert_bytes = top_k * 3 * hidden * inter, 3 * hidden * inter * 0.53
        times = [moe_seconds(fit, m, nk, expert_bytes, experts, top_k, hidden, 3.35e12) for m in TOKENS]
        assert all(b >= a for a, b in pairwise(times)), (experts, top_k)


@pytest.mark.parametrize(
    ("xs", "w"),
    [((), ()), ((1.0, 2.0), (1e-15,)), ((2.0, 1.0), (1e-15, 2e-15)), ((1.0, 2.0), (2e-15, 1e-15))],
)
def test_a_fit_with_a_broken_grid_is_refused_on_load(xs, w) -> None:
    raw = msgspec.json.encode({"t0_s": 0.0, "eta_mem": 1.0, "tokens_per_expert": xs, "s_per_weight": w})
    with pytest.raises(msgspec.ValidationError, match="tokens_per_expert"):
        msgspec.json.decode(raw, type=MoeFit)
