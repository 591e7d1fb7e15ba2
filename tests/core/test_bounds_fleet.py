"""Issue 11: fleet planning does bounded work. The cheapest mix of one GPU type is a division, the
branch and bound stops at its node limit and says so, and a fleet too large to plan is refused,
naming the limit, before any work starts."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from kvplan.core import warnings as w
from kvplan.core.errors import InvalidInput
from kvplan.core.fleet import plan as fleet_module
from kvplan.core.fleet.plan import (
    MIX_BEST_FOUND,
    MIX_EXACT,
    FleetInput,
    Layout,
    MixItem,
    cheapest_replica_counts,
    fleet_work,
    plan_fleet,
)
from kvplan.core.limits import (
    MAX_CONCURRENCY,
    MAX_FLEET_BUDGETS,
    MAX_FLEET_LAYER_PASSES,
    MAX_GPU_COUNT,
    MAX_GPUS_PER_NODE,
    MAX_MIX_SEARCH_NODES,
    MAX_PARALLEL_SIZE,
)
from kvplan.core.model.geometry import make_geometry
from kvplan.core.units import GiB, cdiv
from tests.core.fleets import fleet_input


def synthetic_fleet(registry, types: int, mix_lengths: int = 1, geometry=None, **knobs) -> FleetInput:
    """`types` GPU types of distinct memory sizes, each 64 GPUs at 8 a node."""
    h100 = registry.gpu("h100-sxm-80gb")
    inp = fleet_input(
        registry,
        "llama-3.1-70b",
        [("h100-sxm-80gb", 64, 2.0)],
        mix=tuple(MixItem(1024 * (j + 1), 1.0) for j in range(mix_lengths)),
        geometry=geometry,
        **knobs,
    )
    entries = tuple(
        replace(inp.fleet[0], gpu=f"gpu-{i}", memory_bytes=h100.memory_bytes + i * GiB) for i in range(types)
    )
    return replace(inp, fleet=entries)


def test_a_one_type_fleet_sizes_a_huge_target_with_one_division(registry):
    # This took 12.5 s: the search counted replicas down from ⌈n / gain⌉, one at a time.
    n = 4294967295
    plan = plan_fleet(fleet_input(registry, "llama-3-8b", [("h100-sxm-80gb", 8, 2.5)], target=n))
    mix = plan.cheapest_mix
    assert mix is not None and mix.method == MIX_EXACT and not mix.within_fleet
    (part,) = mix.parts
    per_replica = part.concurrency // part.replicas
    assert part.replicas == cdiv(n, per_replica)
    found = cheapest_replica_counts([per_replica], [part.cost_per_hour / part.replicas], [part.replicas], n)
    assert found is not None and found.nodes == 0 and found.counts == (part.replicas,)


def test_a_two_type_fleet_at_131072_tokens_sizes_a_huge_target(registry):
    # This took 105 s: past its node limit the search kept looping over the first type's counts.
    n = 4294967294
    gpus = [("h100-sxm-80gb", 8, 2.5), ("a100-80gb", 8, 1.6)]
    plan = plan_fleet(
        fleet_input(registry, "llama-3-8b", gpus, 131072, target=n, layouts=(Layout(tensor_parallel_size=1),))
    )
    mix = plan.cheapest_mix
    assert mix is not None and mix.method == MIX_EXACT
    assert mix.concurrency >= n
    for sizing in (t.target for t in plan.gpu_types):
        assert sizing is not None and mix.cost_per_hour <= sizing.cost_per_hour


def test_the_mix_search_stops_at_its_node_limit_and_keeps_the_best_found():
    # Even gains and an odd target: no cover costs exactly n, so the LP bound (n) never prunes
    # and the search would count the first type down from n / 2: a hang without the node limit.
    gains, costs, n = [2, 4, 6], [2.0, 4.0, 6.0], 4294967295
    found = cheapest_replica_counts(gains, costs, [10**10] * 3, n)
    assert found is not None
    assert found.nodes == MAX_MIX_SEARCH_NODES and not found.exact
    assert sum(c * g for c, g in zip(found.counts, gains, strict=True)) >= n
    assert found.cost == n + 1  # the greedy start is already the cheapest


def test_a_fleet_whose_mix_search_stopped_says_the_mix_is_the_best_found(registry, monkeypatch):
    monkeypatch.setattr(fleet_module, "MAX_MIX_SEARCH_NODES", 1)
    gpus = [("h100-sxm-80gb", 64, 2.5), ("a100-80gb", 64, 1.6), ("h200-141gb", 32, 3.5)]
    plan = plan_fleet(fleet_input(registry, "llama-3-70b", gpus, target=1000))
    assert plan.cheapest_mix is not None and plan.cheapest_mix.method == MIX_BEST_FOUND
    assert w.CHEAPEST_MIX_SEARCH_LIMIT in {x.code for x in plan.warnings}


def test_a_finished_mix_search_adds_no_warning(registry):
    gpus = [("h100-sxm-80gb", 64, 2.5), ("a100-80gb", 64, 1.6), ("h200-141gb", 32, 3.5)]
    plan = plan_fleet(fleet_input(registry, "llama-3-70b", gpus, target=1000))
    assert plan.cheapest_mix is not None and plan.cheapest_mix.method == MIX_EXACT
    assert w.CHEAPEST_MIX_SEARCH_LIMIT not in {x.code for x in plan.warnings}


@settings(max_examples=200, deadline=None)
@given(
    options=st.lists(
        st.tuples(st.integers(1, 9), st.integers(0, 40), st.integers(0, 6)), min_size=1, max_size=3
    ),
    n=st.integers(1, 40),
)
def test_the_mix_search_finds_the_cheapest_counts_of_an_exhaustive_enumeration(options, n):
    gains = [g for g, _, _ in options]
    costs = [c / 4 for _, c, _ in options]
    bounds = [b for _, _, b in options]
    covering = [
        xs
        for xs in itertools.product(*(range(b + 1) for b in bounds))
        if sum(x * g for x, g in zip(xs, gains, strict=True)) >= n
    ]
    found = cheapest_replica_counts(gains, costs, bounds, n)
    if not covering:
        assert found is None
        return
    assert found is not None and found.exact
    assert found.counts in covering
    cheapest = min(sum(x * c for x, c in zip(xs, costs, strict=True)) for xs in covering)
    assert found.cost == pytest.approx(cheapest, abs=1e-9)


def test_a_fleet_above_the_budget_evaluation_limit_is_refused_before_planning(registry, monkeypatch):
    inp = synthetic_fleet(registry, types=64, mix_lengths=32)
    work = fleet_work(inp)
    assert work.budgets > MAX_FLEET_BUDGETS
    monkeypatch.setattr(fleet_module, "compute_budget", lambda *a, **k: pytest.fail("planning started"))
    with pytest.raises(InvalidInput) as e:
        plan_fleet(inp)
    assert e.value.field == "fleet"
    assert "MAX_FLEET_BUDGETS" in e.value.reason and f"{work.budgets:,}" in e.value.reason


def test_a_fleet_of_a_very_deep_model_is_refused_above_the_layer_pass_limit(registry):
    deep = make_geometry(name="deep", num_layers=4096, num_attention_heads=8, num_kv_heads=8, head_dim=128)
    inp = synthetic_fleet(registry, types=64, geometry=deep, weights_bytes=10 * GiB)
    work = fleet_work(inp)
    assert work.budgets <= MAX_FLEET_BUDGETS  # the layers, not the budget count, make it too big
    assert work.layer_passes > MAX_FLEET_LAYER_PASSES
    with pytest.raises(InvalidInput) as e:
        plan_fleet(inp)
    assert e.value.field == "fleet"
    assert "MAX_FLEET_LAYER_PASSES" in e.value.reason and f"{work.layer_passes:,}" in e.value.reason


def test_a_deepseek_v4_layer_counts_twice_toward_the_layer_pass_limit(registry):
    """Its layers carry up to five packed caches each: about twice another layer's planning."""
    from kvplan.core.hf.reader import from_hf_config
    from tests.oracle.generate import load_config

    v4 = from_hf_config(load_config("synthetic--deepseek-v4-defaults.json"))
    plain = replace(v4, dsv4=None)
    work = fleet_work(synthetic_fleet(registry, types=4, geometry=v4, weights_bytes=10 * GiB))
    same = fleet_work(synthetic_fleet(registry, types=4, geometry=plain, weights_bytes=10 * GiB))
    assert work.budgets == same.budgets and work.layer_passes == 2 * same.layer_passes


@pytest.mark.parametrize(
    ("model", "gpus", "mix", "knobs"),
    [
        ("llama-3-70b", [("h100-sxm-80gb", 8, 2.5), ("l4-24gb", 16, 0.8)], [(8192, 1.0)], {}),
        (
            "deepseek-v3",
            [("h200-141gb", 8, None), ("h100-sxm-80gb", 16, None)],
            [(2048, 0.5), (32768, 0.5)],
            {},
        ),
        ("llama-3.1-405b", [("a100-80gb", 32, None)], [(1024, 0.2), (4096, 0.3), (16384, 0.5)], {}),
    ],
)
def test_fleet_work_bounds_the_budget_evaluations_planning_makes(
    registry, monkeypatch, model, gpus, mix, knobs
):
    inp = fleet_input(registry, model, gpus, mix=tuple(MixItem(t, s) for t, s in mix), target=500, **knobs)
    calls = []
    real = fleet_module.compute_budget
    monkeypatch.setattr(fleet_module, "compute_budget", lambda *a, **k: calls.append(1) or real(*a, **k))
    plan_fleet(inp)
    assert 0 < len(calls) <= fleet_work(inp).budgets


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"count": MAX_GPU_COUNT + 1}, "fleet[0].count"),
        ({"gpus_per_node": MAX_GPUS_PER_NODE + 1}, "fleet[0].gpus_per_node"),
        ({"gpus_per_node": 0}, "fleet[0].gpus_per_node"),
        ({"cost_per_hour": float("inf")}, "fleet[0].cost_per_hour"),
    ],
)
def test_fleet_entries_beyond_the_limits_name_the_field(registry, change, field):
    inp = fleet_input(registry, "llama-3-8b", [("h100-sxm-80gb", 8, 2.5)])
    with pytest.raises(InvalidInput) as e:
        plan_fleet(replace(inp, fleet=(replace(inp.fleet[0], **change),)))
    assert e.value.field == field


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"target_concurrency": MAX_CONCURRENCY + 1}, "target_concurrency"),
        ({"layouts": (Layout(tensor_parallel_size=0),)}, "layouts[0].tensor_parallel_size"),
        (
            {"layouts": (Layout(), Layout(pipeline_parallel_size=MAX_PARALLEL_SIZE + 1))},
            "layouts[1].pipeline_parallel_size",
        ),
        ({"mix": (MixItem(1 << 41, 1.0),)}, "workload.mix[0].context_tokens"),
        ({"mix": (MixItem(1024, float("nan")),)}, "workload.mix[0].share"),
    ],
)
def test_fleet_questions_beyond_the_limits_name_the_field(registry, change, field):
    inp = fleet_input(registry, "llama-3-8b", [("h100-sxm-80gb", 8, 2.5)])
    with pytest.raises(InvalidInput) as e:
        plan_fleet(replace(inp, **change))
    assert e.value.field == field
