"""The sustainable-rate search: it holds by construction (met at the answer, missed at the answer
× (1 + tolerance)), says so when no rate meets, and refuses contradictory targets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.sim.latency import Distribution, Latency
from kvplan.core.sim.simulate import TimedSimResult
from kvplan.core.traffic.search import sustainable_rate
from kvplan.core.traffic.slo import Slo, targets


def _build(lat: Latency) -> TimedSimResult:
    import msgspec

    ints = (
        "steps requests completed preemptions recomputed_tokens prompt_tokens cache_hit_tokens "
        "cache_hit_blocks cache_lookup_blocks usable_blocks block_size peak_blocks_in_use peak_running "
        "formula_concurrency "
        "formula_context_tokens peak_in_flight"
    )
    base = dict.fromkeys(ints.split(), 0)
    names = (
        "cache_hit_rate_tokens cache_hit_rate_blocks mean_blocks_in_use mean_running tail_waste_tokens_mean"
    )
    floats = dict.fromkeys(names.split(), 0.0)
    return msgspec.convert(
        {
            **base,
            **floats,
            "series": [],
            "warnings": [],
            "latency": msgspec.to_builtins(lat),
            "throughput": {
                "duration_s": 100.0,
                "requests_per_s": 1.0,
                "output_tokens_per_s": 1.0,
                "total_tokens_per_s": 1.0,
                "input_tokens": 1,
                "output_tokens": 1,
            },
            "goodput": None,
            "waiting_s": {},
            "timing": {"exact": "", "modelled": "", "step_time_model": "", "validation": ""},
        },
        TimedSimResult,
    )


def queueing(capacity: float, base_ms: float = 20.0):
    """TTFT that grows like a queue's as the rate nears `capacity`."""

    def run(rate: float) -> TimedSimResult:
        load = min(rate / capacity, 0.999)
        return _build(fake_latency(base_ms / (1 - load), 5.0 + 10 * load))

    return run


def fake_latency(ttft_ms: float, tpot_ms: float) -> Latency:
    d = lambda v: Distribution(v, v, v, v, 0.0)  # noqa: E731
    return Latency(
        queue_ms=d(0.0), ttft_ms=d(ttft_ms), tpot_ms=d(tpot_ms), itl_ms=d(tpot_ms), e2e_ms=d(ttft_ms)
    )


@settings(max_examples=50, deadline=None)
@given(st.floats(0.5, 500), st.floats(25, 2000), st.floats(0.005, 0.2))
def test_the_rate_found_meets_every_target_and_the_rate_above_it_does_not(capacity, target, tol):
    run = queueing(capacity)
    s = sustainable_rate(run, Slo(ttft_p90_ms=target), tolerance=tol, max_points=40)
    assert s.max_rate_per_s > 0 and s.at_max is not None and s.above_max is not None
    assert s.at_max.meets and s.at_max.rate_per_s == s.max_rate_per_s
    assert not s.above_max.meets
    assert s.above_max.rate_per_s == pytest.approx(s.max_rate_per_s * (1 + tol))
    # Against the queue's closed form: load = 1 − 20 / target.
    assert s.max_rate_per_s <= capacity * (1 - 20 / target) * (1 + 1e-9)
    assert s.max_rate_per_s * (1 + tol) > capacity * (1 - 20 / target) * (1 - 1e-9)


def test_targets_no_rate_meets_get_an_answer_that_says_why():
    s = sustainable_rate(queueing(10.0, base_ms=50.0), Slo(ttft_p90_ms=30.0), tolerance=0.02, max_points=20)
    assert s.max_rate_per_s == 0.0 and s.points == 2
    assert "no rate meets" in s.reason and "ttft_p90_ms" in s.reason


def test_the_search_stops_at_its_point_budget():
    s = sustainable_rate(queueing(100.0), Slo(ttft_p90_ms=40.0), tolerance=0.001, max_points=5)
    assert s.points == 5 and "5 simulations" in s.reason


@pytest.mark.parametrize(
    ("slo", "field"),
    [
        (Slo(), "slo"),
        (Slo(ttft_p50_ms=500, ttft_p99_ms=100), "slo.ttft_p99_ms"),
        (Slo(ttft_p90_ms=500, e2e_p90_ms=100), "slo.e2e_p90_ms"),
    ],
)
def test_contradictory_or_empty_targets_are_refused_naming_the_field(slo, field):
    with pytest.raises(InvalidInput) as e:
        targets(slo)
    assert e.value.field == field
