"""The replica rule (core/autoscale/rule.py): worked examples, and invariants under hypothesis."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.autoscale.rule import UNCLAMPED_LIMIT, desired_replicas
from kvplan.core.autoscale.types import ReplicaLoad, Target

LLAMA_8B_H100 = Target(
    capacity_tokens=448_384, max_num_seqs=1024, target_utilization=0.8, context_tokens=8192, min_replicas=1,
    max_replicas=16,
)  # fmt: skip


def load(usage: float, running: float = 0, waiting: float = 0) -> ReplicaLoad:
    return ReplicaLoad(kv_cache_usage_perc=usage, num_requests_running=running, num_requests_waiting=waiting)


def test_two_replicas_at_90_and_70_percent_with_a_short_queue_ask_for_three():
    r = desired_replicas(LLAMA_8B_H100, [load(0.9, 40, 5), load(0.7, 30)], mean_prompt_tokens=2000)
    assert r.demand_tokens == 1.6 * 448_384 + 5 * 2000
    assert r.demand_requests == 75
    assert r.replicas_for_tokens == r.demand_tokens / (0.8 * 448_384)
    assert (r.unclamped_replicas, r.desired_replicas, r.binding, r.clamped_by) == (3, 3, "tokens", None)
    assert [s.name for s in r.ledger][-1] == "desired_replicas" and r.ledger[-1].value == 3


def test_a_demand_of_exactly_two_replicas_at_target_asks_for_two_not_three():
    # 0.56 + 0.93 + 0.11 = 1.6 = 2 × 0.8, but the float sum lands a hair above it (in another order,
    # as Prometheus may add, exactly on it): the rule's 1e-9 of a replica gives 2 either way.
    r = desired_replicas(LLAMA_8B_H100, [load(0.56), load(0.93), load(0.11)])
    assert r.replicas_for_tokens == 2.0000000000000004
    assert r.desired_replicas == 2


def test_an_idle_deployment_keeps_min_replicas():
    r = desired_replicas(LLAMA_8B_H100, [load(0.0), load(0.0)])
    assert (r.unclamped_replicas, r.desired_replicas, r.clamped_by) == (0, 1, "min_replicas")


def test_no_ready_replica_says_so_and_asks_for_min_replicas():
    r = desired_replicas(LLAMA_8B_H100, [])
    assert r.desired_replicas == 1 and [w.code for w in r.warnings] == ["no_ready_replicas"]


def test_requests_bind_when_max_num_seqs_is_small():
    t = Target(capacity_tokens=1_000_000, max_num_seqs=8, target_utilization=0.5, context_tokens=4096,
               min_replicas=1, max_replicas=10)  # fmt: skip
    r = desired_replicas(t, [load(0.1, 8, 4)])
    assert r.replicas_for_requests == 12 / 4 and r.binding == "requests" and r.desired_replicas == 3


def test_a_load_above_max_replicas_is_capped_and_warned():
    r = desired_replicas(LLAMA_8B_H100, [load(1.0, 100, 2000)] * 4, mean_prompt_tokens=4000)
    assert r.unclamped_replicas > 16 and r.desired_replicas == 16 and r.clamped_by == "max_replicas"
    assert "desired_above_max_replicas" in [w.code for w in r.warnings]


def test_waiting_requests_count_at_context_tokens_without_a_mean_and_say_so():
    r = desired_replicas(LLAMA_8B_H100, [load(0.5, 10, 3)])
    assert r.mean_prompt_tokens == 8192 and r.mean_prompt_tokens_source == "context_tokens"
    assert r.demand_tokens == 0.5 * 448_384 + 3 * 8192
    assert "mean_prompt_assumed" in [w.code for w in r.warnings]


loads = st.lists(
    st.builds(
        load,
        st.floats(0, 1),
        st.integers(0, 2000).map(float),
        st.integers(0, 5000).map(float),
    ),
    max_size=12,
)
targets = st.builds(
    Target,
    capacity_tokens=st.integers(1, 10_000_000),
    max_num_seqs=st.integers(1, 4096),
    target_utilization=st.floats(0.05, 1.0),
    context_tokens=st.integers(1, 1_000_000),
    min_replicas=st.integers(0, 5),
    max_replicas=st.integers(5, 100),
)


@settings(max_examples=300, deadline=None)
@given(targets, loads, st.one_of(st.none(), st.floats(1, 100_000)))
def test_the_count_stays_within_bounds_and_covers_the_demand_at_target(t, observed, prompt):
    r = desired_replicas(t, observed, prompt)
    assert t.min_replicas <= r.desired_replicas <= t.max_replicas
    need = max(r.replicas_for_tokens, r.replicas_for_requests)
    # Enough replicas to hold the demand at the target (within the rule's 1e-9), and not one more;
    # a demand past any fleet is counted as UNCLAMPED_LIMIT.
    if need - 1e-9 >= UNCLAMPED_LIMIT:
        assert r.unclamped_replicas == UNCLAMPED_LIMIT
    else:
        assert r.unclamped_replicas == max(0, math.ceil(need - 1e-9))
        assert r.unclamped_replicas >= need - 1e-9 and (
            r.unclamped_replicas == 0 or r.unclamped_replicas - 1 < need
        )


@settings(max_examples=200, deadline=None)
@given(targets, loads, st.floats(0, 1), st.integers(0, 100).map(float))
def test_more_load_never_asks_for_fewer_replicas(t, observed, usage, waiting):
    before = desired_replicas(t, observed, 1000.0).desired_replicas
    after = desired_replicas(t, [*observed, load(usage, 0, waiting)], 1000.0).desired_replicas
    assert after >= before
