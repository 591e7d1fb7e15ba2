"""Fleet planning across GPU types and layouts."""

from __future__ import annotations

import msgspec
import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.fleet.plan import (
    InfeasibleReason,
    Layout,
    cheapest_mix,
    plan_fleet,
)
from tests.core.fleets import fleet_input
from tests.seed import B


@pytest.fixture
def fleet_of(registry):
    def make(model, gpus, ctx=8192, layouts=None, target=None, **knobs):
        return fleet_input(registry, model, gpus, ctx, target=target, layouts=layouts, **knobs)

    return make


def by_name(plan, gpu: str) -> dict:
    return {p.name: p for t in plan.gpu_types if t.gpu == gpu for p in t.layouts}


def test_deepseek_v3_on_8x141_gib_tp8_holds_24_a_replica_not_the_pooled_192(fleet_of):
    plan = plan_fleet(
        fleet_of(
            B["model"],
            [(B["gpu"], 8, None)],
            B["context_tokens"],
            weights_bytes=B["weights_bytes"],
            layouts=(Layout(tensor_parallel_size=B["tensor_parallel_size"]),),
        )
    )
    tp8 = by_name(plan, B["gpu"])["TP8"]
    assert tp8.concurrency_per_replica == 24
    assert tp8.replicas == 1 and tp8.total_concurrency == 24
    assert tp8.pooled_concurrency == 192
    assert "pooled_not_deployable" in {w.code for w in plan.warnings}


def test_llama3_70b_on_h100_tp1_does_not_fit_and_tp8_is_best(fleet_of):
    plan = plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)]))
    layouts = by_name(plan, "h100-sxm-80gb")
    assert not layouts["TP1"].feasible
    assert layouts["TP1"].reason.startswith("weights")
    assert {n: layouts[n].concurrency_per_replica for n in ("TP2", "TP4", "TP8")} == {
        "TP2": 6,
        "TP4": 64,
        "TP8": 181,
    }
    assert {n: layouts[n].replicas for n in ("TP2", "TP4", "TP8")} == {"TP2": 4, "TP4": 2, "TP8": 1}
    assert plan.gpu_types[0].best.name == "TP8"
    assert plan.total_concurrency == 181


def test_pipeline_stages_are_added_only_where_weights_do_not_fit(fleet_of):
    layouts = by_name(plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)])), "h100-sxm-80gb")
    assert "TP1×PP2" in layouts and layouts["TP1×PP2"].feasible
    assert not any(name.startswith(("TP2×", "TP4×", "TP8×")) for name in layouts)


def test_mla_per_gpu_kv_does_not_shrink_with_tp(fleet_of):
    layouts = by_name(plan_fleet(fleet_of("deepseek-v3", [("h200-141gb", 8, None)], 32768)), "h200-141gb")
    tp_only = [p for name, p in layouts.items() if name.startswith("TP") and "PP" not in name]
    assert [p.name for p in tp_only] == ["TP1", "TP2", "TP4", "TP8"]
    assert {p.bytes_per_token_per_gpu for p in tp_only} == {70272}


def test_data_parallel_attention_holds_its_own_kv_per_rank_after_replicated_weights(fleet_of, registry):
    geo = registry.model("deepseek-v3").geometry
    layouts = by_name(plan_fleet(fleet_of("deepseek-v3", [("h200-141gb", 8, None)], 32768)), "h200-141gb")
    dp8 = layouts["DP8-attention+EP"]
    rank = dp8.per_rank
    dense = geo.params_total - geo.params_expert  # fp8 native: one byte a parameter
    assert rank.dense_weights_bytes == dense
    assert rank.expert_weights_bytes_per_rank == -(-geo.params_expert // 8)
    assert rank.weights_bytes_per_rank == dense + rank.expert_weights_bytes_per_rank
    assert dp8.concurrency_per_replica == 8 * rank.concurrency_per_rank
    assert dp8.concurrency_per_replica > layouts["TP8"].concurrency_per_replica


def test_a_mixed_workload_reports_expected_beside_worst_case(fleet_of):
    plan = plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)], [(2048, 0.8), (8192, 0.2)]))
    best = plan.gpu_types[0].best
    assert plan.context_tokens == 8192
    assert best.expected_concurrency_per_replica > best.concurrency_per_replica
    assert plan.total_expected_concurrency == best.total_expected_concurrency


def test_inverse_sizing_for_1000_llama3_70b_requests_and_the_cheapest_mix(fleet_of):
    gpus = [("h100-sxm-80gb", 64, 2.5), ("a100-80gb", 64, 1.6), ("h200-141gb", 32, 3.5)]
    plan = plan_fleet(fleet_of("llama-3-70b", gpus, target=1000))
    sizing = {t.gpu: t.target for t in plan.gpu_types}
    assert sizing["h100-sxm-80gb"].replicas == -(-1000 // sizing["h100-sxm-80gb"].concurrency_per_replica)
    assert sizing["h200-141gb"].gpus == sizing["h200-141gb"].replicas * 8
    mix = plan.cheapest_mix
    assert mix is not None and mix.within_fleet and mix.method == "exact"
    assert mix.concurrency >= 1000
    # No single GPU type on its own is cheaper than the mix.
    for s in sizing.values():
        if s.available:
            assert mix.cost_per_hour <= s.cost_per_hour + 1e-9
    assert plan.target_met_by_fleet


def test_cheapest_mix_is_exact_on_a_small_case(fleet_of):
    from kvplan.core.fleet.plan import LayoutPlan

    def opt(gpu, per, gpr, replicas):
        return LayoutPlan(
            gpu=gpu,
            layout=Layout(),
            name="TP1",
            feasible=True,
            gpus_per_replica=gpr,
            replicas=replicas,
            concurrency_per_replica=per,
        )

    # Need 10: two of A (5 each, 2/h) cost 4; one B (10, 5/h) costs 5; so 2×A.
    mix = cheapest_mix([(opt("a", 5, 1, 3), 2.0), (opt("b", 10, 1, 3), 5.0)], 10)
    assert [(p.gpu, p.replicas) for p in mix.parts] == [("a", 2)]
    assert mix.cost_per_hour == 4.0


@pytest.mark.parametrize(
    ("gpus", "field"),
    [
        ([], "fleet"),
        ([("h100-sxm-80gb", 0, None)], "fleet[0].count"),
        ([("h100-sxm-80gb", 8, None), ("h100-sxm-80gb", 8, None)], "fleet[1].gpu"),
        ([("h100-sxm-80gb", 8, -1.0)], "fleet[0].cost_per_hour"),
    ],
)
def test_bad_fleets_name_the_field(fleet_of, gpus, field):
    with pytest.raises(InvalidInput) as e:
        plan_fleet(fleet_of("llama-3-70b", gpus))
    assert e.value.field == field


def test_gpus_per_node_smaller_than_every_layout_is_refused(fleet_of, registry):
    from msgspec.structs import replace

    inp = fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)], layouts=(Layout(tensor_parallel_size=8),))
    inp = replace(inp, fleet=(replace(inp.fleet[0], gpus_per_node=4),))
    with pytest.raises(InvalidInput) as e:
        plan_fleet(inp)
    assert e.value.field == "fleet[0].gpus_per_node"


def test_a_replica_runs_at_most_max_num_seqs(fleet_of):
    plan = plan_fleet(fleet_of("llama-3.1-8b", [("b200-180gb", 8, None)], 1024))
    tp1 = by_name(plan, "b200-180gb")["TP1"]
    assert tp1.concurrency_per_replica == 1024


def test_infeasible_layouts_carry_a_reason_code_beside_the_reason(fleet_of):
    plan = plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)]))
    tp1 = by_name(plan, "h100-sxm-80gb")["TP1"]
    assert tp1.reason_code is InfeasibleReason.NO_KV_MEMORY
    assert tp1.reason.startswith("weights")
    assert b'"reason_code":"no_kv_memory"' in msgspec.json.encode(tp1)
    assert all((p.reason_code is None) == p.feasible for t in plan.gpu_types for p in t.layouts)


@pytest.mark.parametrize(
    ("layout", "ctx", "code"),
    [
        (Layout(tensor_parallel_size=16), 8192, InfeasibleReason.TP_EXCEEDS_NODE),
        (Layout(tensor_parallel_size=8, pipeline_parallel_size=8), 8192, InfeasibleReason.NOT_ENOUGH_GPUS),
        (
            Layout(tensor_parallel_size=2, pipeline_parallel_size=2, data_parallel_attention=True),
            8192,
            InfeasibleReason.DP_ATTENTION_WITH_PIPELINE,
        ),
        (Layout(tensor_parallel_size=3), 8192, InfeasibleReason.INVALID_LAYOUT),
        (Layout(tensor_parallel_size=8), 4_000_000, InfeasibleReason.REQUEST_DOES_NOT_FIT),
    ],
)
def test_each_reason_a_layout_cannot_run_has_its_own_code(fleet_of, layout, ctx, code):
    plan = plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 32, None)], ctx, layouts=(layout, Layout())))
    (p,) = [p for p in plan.gpu_types[0].layouts if p.layout == layout]
    assert not p.feasible and p.reason_code is code and p.reason


def test_the_pipeline_search_starts_at_the_first_stage_count_whose_weights_fit(fleet_of):
    # 405B in bf16 on 24 GB GPUs: TP1 needs 37 stages, far beyond a search started at 2. The start
    # comes from the memory a GPU has for weights and KV, not from the (clamped) KV figure.
    layouts = by_name(plan_fleet(fleet_of("llama-3.1-405b", [("l4-24gb", 64, None)])), "l4-24gb")
    staged = {name: p.feasible for name, p in layouts.items() if "PP" in name}
    assert staged == {"TP1×PP37": True, "TP2×PP19": True, "TP4×PP10": True, "TP8×PP5": True}


def test_the_pooled_trap_is_flagged_only_where_pooling_says_more_than_a_replica_holds(fleet_of):
    plan = plan_fleet(fleet_of("llama-3-70b", [("h100-sxm-80gb", 8, None)], non_kv_bytes=0))
    layouts = [p for t in plan.gpu_types for p in t.layouts]
    pooled = {p.name: (p.pooled_concurrency, p.concurrency_per_replica) for p in layouts}
    assert pooled["TP8"] == (181, 181), pooled
    assert all(a is None or a == b for a, b in pooled.values()), pooled  # GQA splits: pooling agrees
    assert "pooled_not_deployable" not in {w.code for w in plan.warnings}
