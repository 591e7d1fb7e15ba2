"""Fleet planning: which parallel layout of which GPU type holds how many requests, and what it
takes to reach a target (docs/vllm-rules.md §3, §6).

A replica is one vLLM engine. With tensor/pipeline parallel it spans TP × PP GPUs, each worker
computes its own blocks and the engine takes the minimum (that is `compute_budget`). With
data-parallel attention (DeepSeek-style MoE/MLA serving: `--data-parallel-size N
--enable-expert-parallel`), a replica of N GPUs runs N attention ranks, each with its own KV
cache and scheduler and a full copy of the attention and dense weights, while the routed
experts are split across the N ranks (expert parallel).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import msgspec
from msgspec.structs import replace

from .. import warnings as w
from ..budget import Budget, BudgetInput, compute_budget, weight_split
from ..errors import InvalidInput, InvalidLayout, WorkStopped
from ..kv.parallel import valid_tensor_sizes
from ..limits import (
    MAX_CONCURRENCY,
    MAX_COST_PER_HOUR,
    MAX_FLEET_BUDGETS,
    MAX_FLEET_LAYER_PASSES,
    MAX_FLEET_TYPES,
    MAX_GPU_COUNT,
    MAX_GPUS_PER_NODE,
    MAX_LAYOUTS,
    MAX_MIX,
    MAX_MIX_SEARCH_NODES,
    MAX_PARALLEL_SIZE,
    MAX_PIPELINE_STAGE_TRIES,
    MAX_SHARE,
    MAX_TOKENS,
)
from ..model.geometry import Geometry
from ..units import cdiv, fmt_gib
from ..validate import positive_int
from .types import (
    MIX_BEST_FOUND,
    MIX_EXACT,
    CheapestMix,
    FleetEntry,
    FleetInput,
    FleetPlan,
    GpuTypePlan,
    InfeasibleReason,
    Layout,
    LayoutPlan,
    MixItem,
    MixPart,
    RankFigures,
    TargetSizing,
)

# The caller's should_stop(): asked before each budget (a budget of a 4,096-layer model takes a
# few ms) and every STOP_CHECK_NODES nodes of the cheapest-mix search (each O(GPU types), µs).
ShouldStop = Callable[[], bool] | None
STOP_CHECK_NODES = 1024


def _stop_if_asked(should_stop: ShouldStop, where: str) -> None:
    if should_stop is not None and should_stop():
        raise WorkStopped(f"stopped while planning the fleet, at {where}")


def _check_input(inp: FleetInput) -> None:
    """Refuse, as a 400 naming the field, a fleet planning cannot take: an empty, oversized or
    repeated fleet, GPU counts, prices, mix shares or layouts out of range, a target beyond the
    limits; then a fleet whose work would hold a worker too long (_check_work). Returns nothing:
    plan_fleet runs only on what passes."""
    if not inp.fleet:
        raise InvalidInput("fleet", "must list at least one GPU type")
    if len(inp.fleet) > MAX_FLEET_TYPES:
        raise InvalidInput("fleet", f"at most {MAX_FLEET_TYPES} entries, got {len(inp.fleet)}")
    seen = set()
    for i, e in enumerate(inp.fleet):
        if e.gpu in seen:
            raise InvalidInput(f"fleet[{i}].gpu", f"{e.gpu!r} is listed twice; give one entry per GPU type")
        seen.add(e.gpu)
        positive_int(e.count, f"fleet[{i}].count", MAX_GPU_COUNT)
        positive_int(e.gpus_per_node, f"fleet[{i}].gpus_per_node", MAX_GPUS_PER_NODE)
        if e.cost_per_hour is not None and not (
            math.isfinite(e.cost_per_hour) and 0 <= e.cost_per_hour <= MAX_COST_PER_HOUR
        ):
            raise InvalidInput(
                f"fleet[{i}].cost_per_hour", f"must be a finite number from 0 to {MAX_COST_PER_HOUR:g}"
            )
    if not inp.mix or len(inp.mix) > MAX_MIX:
        raise InvalidInput("workload", f"give a context length or a mix of 1 to {MAX_MIX} lengths")
    for i, m in enumerate(inp.mix):
        positive_int(m.context_tokens, f"workload.mix[{i}].context_tokens", MAX_TOKENS)
        if not (math.isfinite(m.share) and 0 < m.share <= MAX_SHARE):
            raise InvalidInput(f"workload.mix[{i}].share", f"must be a finite number > 0 and ≤ {MAX_SHARE:g}")
    if inp.layouts is not None:
        if not 0 < len(inp.layouts) <= MAX_LAYOUTS:
            raise InvalidInput("layouts", f"give 1 to {MAX_LAYOUTS} layouts, or none for every valid one")
        for i, lay in enumerate(inp.layouts):
            _check_layout(lay, f"layouts[{i}].")
    if inp.target_concurrency is not None:
        positive_int(inp.target_concurrency, "target_concurrency", MAX_CONCURRENCY)
    _check_work(inp)


def _check_layout(layout: Layout, prefix: str) -> None:
    positive_int(layout.tensor_parallel_size, prefix + "tensor_parallel_size", MAX_PARALLEL_SIZE)
    positive_int(layout.pipeline_parallel_size, prefix + "pipeline_parallel_size", MAX_PARALLEL_SIZE)


class FleetWork(msgspec.Struct, frozen=True):
    """An upper bound on what planning a fleet computes, known from its inputs alone.
    budgets: budget evaluations = Σ over GPU types of (layouts + pipeline retries) plus, for a
    mix of M > 1 lengths, M more for each layout that can turn out feasible.
    layer_passes: budgets × the model's layers (a budget's first pass walks every layer)."""

    budgets: int
    layer_passes: int


def fleet_work(inp: FleetInput) -> FleetWork:
    g = inp.template.geometry
    per_length = len(inp.mix) if len(inp.mix) > 1 else 0
    budgets = 0
    for entry in inp.fleet:
        if inp.layouts is not None:
            layouts, staged = len(inp.layouts), 0
        else:
            candidates = candidate_layouts(g, entry)
            layouts = len(candidates)
            # Each TP layout whose weights do not fit may try MAX_PIPELINE_STAGE_TRIES stage
            # counts; at most one of them is feasible and evaluates the mix.
            staged = sum(1 for lay in candidates if not lay.data_parallel_attention)
        budgets += layouts * (1 + per_length) + staged * (MAX_PIPELINE_STAGE_TRIES + per_length)
    # A DeepSeek-V4 layer entry carries up to five caches (core/kv/dsv4.py), each packed and planned:
    # measured at about twice the cost a layer of the other kinds takes.
    per_layer = 2 if g.dsv4 is not None else 1
    return FleetWork(budgets, budgets * g.num_layers * per_layer)


def _check_work(inp: FleetInput) -> None:
    """Refuse, before any work, a fleet whose planning would hold a worker for seconds."""
    work = fleet_work(inp)
    shape = (
        f"{len(inp.fleet)} GPU types × "
        + ("every valid layout" if inp.layouts is None else f"{len(inp.layouts)} layouts")
        + f" × {len(inp.mix)} mix lengths"
    )
    if work.budgets > MAX_FLEET_BUDGETS:
        raise InvalidInput(
            "fleet",
            f"planning {shape} takes up to {work.budgets:,} budget evaluations, above the limit of "
            f"{MAX_FLEET_BUDGETS:,} (MAX_FLEET_BUDGETS); send fewer GPU types, layouts or mix lengths",
        )
    if work.layer_passes > MAX_FLEET_LAYER_PASSES:
        raise InvalidInput(
            "fleet",
            f"planning {shape} for a model of {inp.template.geometry.num_layers:,} layers takes up to "
            f"{work.layer_passes:,} layer passes, above the limit of {MAX_FLEET_LAYER_PASSES:,} "
            "(MAX_FLEET_LAYER_PASSES); send fewer GPU types, layouts or mix lengths",
        )


def _moe_or_mla(g: Geometry) -> bool:
    return bool(g.params_expert) or g.is_mla


def candidate_layouts(g: Geometry, entry: FleetEntry) -> list[Layout]:
    """Every TP the heads allow within a node; DP attention for MoE/MLA models. Pipeline stages
    are added later, only where the weights do not fit otherwise."""
    out = [
        Layout(tensor_parallel_size=t) for t in valid_tensor_sizes(g, min(entry.gpus_per_node, entry.count))
    ]
    if _moe_or_mla(g):
        dp = 2
        while dp <= min(entry.gpus_per_node, entry.count):
            out.append(Layout(tensor_parallel_size=dp, data_parallel_attention=True))
            dp *= 2
    return out


def _replicas(entry: FleetEntry, gpus_per_replica: int) -> int:
    if gpus_per_replica <= entry.gpus_per_node:
        nodes, rest = divmod(entry.count, entry.gpus_per_node)
        return nodes * (entry.gpus_per_node // gpus_per_replica) + rest // gpus_per_replica
    return entry.count // gpus_per_replica


def _expected_concurrency(
    budget_inp: BudgetInput, usable: int, mix: Sequence[MixItem], should_stop: ShouldStop = None
) -> int:
    """Requests the pool holds when lengths follow the mix: usable blocks over the expected
    blocks of one request, each length's blocks (as the engine counts them) weighted by its share."""
    total_share = sum(m.share for m in mix)
    expected_blocks = 0.0
    for m in mix:
        _stop_if_asked(should_stop, f"the mix length {m.context_tokens:,}")
        blocks = compute_budget(replace(budget_inp, context_tokens=m.context_tokens)).blocks_per_request
        expected_blocks += m.share / total_share * blocks
    return int(usable // expected_blocks) if expected_blocks else 0


def _infeasible(
    entry: FleetEntry,
    layout: Layout,
    code: InfeasibleReason,
    reason: str,
    b: Budget | None = None,
    per_rank: RankFigures | None = None,
) -> LayoutPlan:
    """A layout that cannot run, with its reason code and text, and the figures that explain it
    (from the budget computed before the refusal, if one was): every refusal of _plan_layout
    answers with this one shape, so a client reads infeasible layouts alike."""
    return LayoutPlan(
        gpu=entry.gpu,
        layout=layout,
        name=layout.label,
        feasible=False,
        reason=reason,
        reason_code=code,
        gpus_per_replica=layout.gpus,
        bytes_per_token_per_gpu=None if b is None else b.per_token.bytes_per_token,
        weights_bytes_per_gpu=None if b is None else b.weights_bytes_per_gpu,
        available_kv_bytes_per_gpu=None if b is None else b.available_kv_bytes,
        num_blocks=None if b is None else b.num_blocks,
        block_size=None if b is None else b.block_size,
        max_num_seqs=None if b is None else b.max_num_seqs,
        max_num_batched_tokens=None if b is None else b.max_num_batched_tokens,
        per_rank=per_rank,
    )


def plan_layout(inp: FleetInput, entry: FleetEntry, layout: Layout) -> LayoutPlan:
    """One GPU type under one layout; infeasibility is an answer with its reason."""
    return _plan_layout(inp, entry, layout)[0]


def _plan_layout(
    inp: FleetInput, entry: FleetEntry, layout: Layout, should_stop: ShouldStop = None
) -> tuple[LayoutPlan, Budget | None]:
    """The plan, and the budget behind it when one was computed (should_stop asked before each)."""
    _stop_if_asked(should_stop, f"{entry.gpu} {layout.label}")
    longest = max(m.context_tokens for m in inp.mix)
    gpr = layout.gpus
    tp, pp = layout.tensor_parallel_size, layout.pipeline_parallel_size
    _check_layout(layout, "layouts.")
    if tp > entry.gpus_per_node and not layout.data_parallel_attention:
        reason = (
            f"TP {tp} exceeds the {entry.gpus_per_node} GPUs of a node (tensor parallel stays within a node)"
        )
        return _infeasible(entry, layout, InfeasibleReason.TP_EXCEEDS_NODE, reason), None
    if gpr > entry.count:
        reason = f"needs {gpr} GPUs, the fleet has {entry.count}"
        return _infeasible(entry, layout, InfeasibleReason.NOT_ENOUGH_GPUS, reason), None
    tmpl = replace(
        inp.template,
        gpu_memory_bytes=entry.memory_bytes,
        gpu_name=entry.gpu_name,
        gpu_memory_nominal=entry.nominal,
        context_tokens=longest,
        target_concurrency=None,
    )
    per_rank = None
    multiplier = 1
    try:
        if layout.data_parallel_attention:
            if pp > 1:
                reason = "data-parallel attention with pipeline stages is not planned"
                return _infeasible(entry, layout, InfeasibleReason.DP_ATTENTION_WITH_PIPELINE, reason), None
            dense, expert, _ = weight_split(tmpl)
            expert_rank = cdiv(expert, tp)
            budget_inp = replace(
                tmpl,
                tensor_parallel_size=1,
                pipeline_parallel_size=1,
                decode_context_parallel_size=1,
                weights_bytes=dense + expert_rank,
            )
            b = compute_budget(budget_inp)
            per_rank = RankFigures(
                tp, b.concurrency.schedulable, dense + expert_rank, dense, expert_rank, b.available_kv_bytes
            )
            multiplier = tp
        else:
            budget_inp = replace(tmpl, tensor_parallel_size=tp, pipeline_parallel_size=pp)
            b = compute_budget(budget_inp)
    except InvalidLayout as e:
        return _infeasible(entry, layout, InfeasibleReason.INVALID_LAYOUT, e.reason), None
    if b.available_kv_bytes <= 0 or b.num_blocks < 2:
        reason = (
            f"weights ({fmt_gib(b.weights_bytes_per_gpu)} per GPU) leave no KV budget "
            f"(requested {fmt_gib(b.requested_bytes or 0)})"
        )
        return _infeasible(entry, layout, InfeasibleReason.NO_KV_MEMORY, reason, b, per_rank), b
    # What one engine runs at once: the blocks' guarantee, capped by max_num_seqs (each DP rank
    # is its own engine).
    per_replica = b.concurrency.schedulable * multiplier
    if per_replica == 0:
        reason = (
            f"no request of {longest:,} tokens fits: it needs {b.blocks_per_request:,} blocks, "
            f"{b.usable_blocks:,} are usable"
        )
        return _infeasible(entry, layout, InfeasibleReason.REQUEST_DOES_NOT_FIT, reason, b, per_rank), b
    replicas = _replicas(entry, gpr)
    expected = None
    if len(inp.mix) > 1:
        expected = (
            min(_expected_concurrency(budget_inp, b.usable_blocks, inp.mix, should_stop), b.max_num_seqs)
            * multiplier
        )
    total = replicas * per_replica
    cost = cost_per_req = None
    if entry.cost_per_hour is not None:
        cost = replicas * gpr * entry.cost_per_hour
        cost_per_req = cost / total
    return LayoutPlan(
        gpu=entry.gpu,
        layout=layout,
        name=layout.label,
        feasible=True,
        gpus_per_replica=gpr,
        replicas=replicas,
        idle_gpus=entry.count - replicas * gpr,
        concurrency_per_replica=per_replica,
        expected_concurrency_per_replica=expected,
        total_concurrency=total,
        total_expected_concurrency=None if expected is None else expected * replicas,
        kv_tokens_per_replica=b.token_slots * multiplier,
        bytes_per_token_per_gpu=b.per_token.bytes_per_token,
        weights_bytes_per_gpu=b.weights_bytes_per_gpu,
        available_kv_bytes_per_gpu=b.available_kv_bytes,
        num_blocks=b.num_blocks,
        block_size=b.block_size,
        max_num_seqs=b.max_num_seqs,
        max_num_batched_tokens=b.max_num_batched_tokens,
        per_rank=per_rank,
        pooled_concurrency=None if b.pooled is None else b.pooled.concurrency,
        cost_per_hour=cost,
        cost_per_concurrent_request=cost_per_req,
        warnings=b.warnings,
    ), b


def _with_pipeline(
    inp: FleetInput, entry: FleetEntry, plan: LayoutPlan, b: Budget, should_stop: ShouldStop = None
) -> LayoutPlan | None:
    """The fewest pipeline stages that make a weights-bound TP layout fit, if any. The failed
    budget gives the memory a GPU has for weights and KV (requested − non-KV − CUDA graphs), so
    the search starts at the first stage count whose weights share fits in it."""
    tp = plan.layout.tensor_parallel_size
    if b.requested_bytes is not None:
        room = b.requested_bytes - b.non_kv_bytes - b.cudagraph_bytes
    else:  # kv_cache_memory_bytes fixes the KV memory: stages cannot add to it
        room = b.available_kv_bytes + b.weights_bytes_per_gpu
    if room <= 0:
        return None
    start = max(2, b.weights_bytes_per_gpu // room + 1)
    max_pp = min(entry.count // tp, inp.template.geometry.decoder_layer_count, MAX_PARALLEL_SIZE)
    for pp in range(start, min(max_pp, start + MAX_PIPELINE_STAGE_TRIES - 1) + 1):
        cand = _plan_layout(
            inp, entry, Layout(tensor_parallel_size=tp, pipeline_parallel_size=pp), should_stop
        )[0]
        if cand.feasible:
            return cand
        if cand.reason_code is not InfeasibleReason.NO_KV_MEMORY:
            return cand if pp == start else None
    return None


def _target_sizing(entry: FleetEntry, feasible: Sequence[LayoutPlan], n: int) -> TargetSizing | None:
    """The layout needing the fewest GPUs for n concurrent requests (ties: fewer replicas)."""
    best: TargetSizing | None = None
    for p in feasible:
        replicas = cdiv(n, p.concurrency_per_replica)
        gpus = replicas * p.gpus_per_replica
        cand = TargetSizing(
            gpu=entry.gpu,
            layout=p.name,
            concurrency_per_replica=p.concurrency_per_replica,
            replicas=replicas,
            gpus=gpus,
            available=replicas <= p.replicas,
            cost_per_hour=None if entry.cost_per_hour is None else gpus * entry.cost_per_hour,
        )
        if best is None or (cand.gpus, cand.replicas) < (best.gpus, best.replicas):
            best = cand
    return best


def cheapest_mix(
    options: Sequence[tuple[LayoutPlan, float]], n: int, should_stop: ShouldStop = None
) -> CheapestMix | None:
    """Within the fleet if it can reach n, else with as many replicas as each type would need."""
    options = [(p, price) for p, price in options if p.concurrency_per_replica > 0]
    gains = [p.concurrency_per_replica for p, _ in options]
    within = sum(p.replicas * gain for (p, _), gain in zip(options, gains, strict=True)) >= n
    bounds = [p.replicas if within else cdiv(n, gain) for (p, _), gain in zip(options, gains, strict=True)]
    costs = [p.gpus_per_replica * price for p, price in options]
    found = cheapest_replica_counts(gains, costs, bounds, n, should_stop)
    if found is None:
        return None
    parts = []
    for (p, _), count, gain, cost in zip(options, found.counts, gains, costs, strict=True):
        if count:
            parts.append(
                MixPart(p.gpu, p.name, count, count * p.gpus_per_replica, count * gain, count * cost)
            )
    return CheapestMix(
        within_fleet=within,
        parts=tuple(parts),
        concurrency=sum(x.concurrency for x in parts),
        cost_per_hour=sum(x.cost_per_hour for x in parts),
        method=MIX_EXACT if found.exact else MIX_BEST_FOUND,
    )


class ReplicaCounts(msgspec.Struct, frozen=True):
    """Replicas of each option, their cost, the search nodes visited, and whether the search
    finished (exact) or stopped at MAX_MIX_SEARCH_NODES with the best counts found so far."""

    counts: tuple[int, ...]
    cost: float
    nodes: int
    exact: bool


def cheapest_replica_counts(
    gains: Sequence[int],
    costs: Sequence[float],
    bounds: Sequence[int],
    n: int,
    should_stop: ShouldStop = None,
) -> ReplicaCounts | None:
    """Min Σ cost_i·x_i with Σ gain_i·x_i ≥ n and 0 ≤ x_i ≤ bounds_i (gains ≥ 1, costs ≥ 0); None
    when even every bound falls short.

    One option is a division: x = ⌈n / gain⌉. Several: branch and bound over the options in order
    of cost per request, greedy first as the incumbent, pruned by the fractional (LP) bound, and
    the last option in closed form (⌈need / gain⌉). The work is bounded by nodes, never by the
    counts: each call of the search is a node, the search stops at MAX_MIX_SEARCH_NODES, and each
    step of a loop over x either calls the search, records the first (covering) x or ends the loop.
    Steps run from the largest x down, and the LP bound only grows as x falls (the options after
    it cost at least as much a request), so the first pruned x ends the loop."""
    m = len(gains)
    if sum(gain * bound for gain, bound in zip(gains, bounds, strict=True)) < n:
        return None
    if m == 1:
        x = cdiv(max(n, 0), gains[0])
        return ReplicaCounts((x,), x * costs[0], 0, True)
    order = sorted(range(m), key=lambda i: costs[i] / gains[i])

    def relaxed(k: int, need: int) -> float:
        """Cheapest fractional cover of `need` with the options from position k on."""
        total = 0.0
        for i in order[k:]:
            if need <= 0:
                break
            take = min(bounds[i] * gains[i], need)
            total += take / gains[i] * costs[i]
            need -= take
        return total if need <= 0 else math.inf

    best_counts = [0] * m
    need = n
    for i in order:  # greedy incumbent
        best_counts[i] = min(bounds[i], cdiv(max(need, 0), gains[i]))
        need -= best_counts[i] * gains[i]
    best_cost = sum(best_counts[i] * costs[i] for i in range(m))
    counts = [0] * m
    nodes = 0
    stopped = False

    def record(spent: float) -> None:
        nonlocal best_cost, best_counts
        if spent < best_cost - 1e-9:
            best_cost, best_counts = spent, counts[:]

    def search(k: int, need: int, spent: float) -> None:
        """Options from position k on cover `need` > 0, `spent` already paid."""
        nonlocal nodes, stopped
        if nodes >= MAX_MIX_SEARCH_NODES:
            stopped = True
            return
        nodes += 1
        if nodes % STOP_CHECK_NODES == 0:
            _stop_if_asked(should_stop, f"node {nodes:,} of the cheapest-mix search")
        i = order[k]
        if k == m - 1:  # the last option covers the rest with the fewest replicas, or cannot
            x = cdiv(need, gains[i])
            if x <= bounds[i]:
                counts[i] = x
                record(spent + x * costs[i])
                counts[i] = 0
            return
        for x in range(min(bounds[i], cdiv(need, gains[i])), -1, -1):
            counts[i] = x
            rest, paid = need - x * gains[i], spent + x * costs[i]
            if rest <= 0:
                record(paid)
                continue
            if paid + relaxed(k + 1, rest) >= best_cost - 1e-9:
                break
            search(k + 1, rest, paid)
            if stopped:
                break
        counts[i] = 0

    if n > 0 and relaxed(0, n) < best_cost - 1e-9:
        search(0, n, 0.0)
    return ReplicaCounts(tuple(best_counts), best_cost, nodes, not stopped)


def plan_fleet(inp: FleetInput, should_stop: ShouldStop = None) -> FleetPlan:
    """Every GPU type of the fleet under each layout (those asked for, else every valid one, with
    pipeline stages where the weights need them): the best layout of each type, the fleet's
    total, and with a target the layouts and the cheapest mix of replicas that reach it. The
    answer of /v1/fleet; one budget a layout, so its work is bounded first (_check_input), and
    should_stop() is asked before each budget and while the cheapest mix is searched."""
    _check_input(inp)
    n = inp.target_concurrency
    types: list[GpuTypePlan] = []
    sizing_options: list[tuple[LayoutPlan, float]] = []
    for idx, entry in enumerate(inp.fleet):
        plans = _type_plans(inp, entry, _layouts_for(inp, idx, entry), should_stop)
        feasible = [p for p in plans if p.feasible]
        best = max(
            feasible, key=lambda p: (p.total_concurrency, -p.replicas * p.gpus_per_replica), default=None
        )
        sizing = _target_sizing(entry, feasible, n) if n is not None else None
        types.append(
            GpuTypePlan(
                gpu=entry.gpu,
                gpu_name=entry.gpu_name,
                count=entry.count,
                gpus_per_node=entry.gpus_per_node,
                best=best,
                layouts=tuple(plans),
                target=sizing,
            )
        )
        if n is not None and entry.cost_per_hour is not None and feasible:
            price = entry.cost_per_hour
            efficient = min(
                feasible,
                key=lambda p: (
                    p.gpus_per_replica * price / p.concurrency_per_replica,
                    -p.concurrency_per_replica,
                ),
            )
            sizing_options.append((efficient, price))
    total = sum(t.best.total_concurrency for t in types if t.best)
    expected = None
    if len(inp.mix) > 1:
        expected = sum(t.best.total_expected_concurrency or 0 for t in types if t.best)
    mix = None
    if n is not None and sizing_options:
        mix = cheapest_mix(sizing_options, n, should_stop)
    return FleetPlan(
        engine=inp.template.profile.id,
        context_tokens=max(m.context_tokens for m in inp.mix),
        mix=inp.mix,
        total_concurrency=total,
        total_expected_concurrency=expected,
        gpu_types=tuple(types),
        target_concurrency=n,
        target_met_by_fleet=None if n is None else total >= n,
        cheapest_mix=mix,
        warnings=_fleet_warnings(types, total, n, mix),
    )


def _layouts_for(inp: FleetInput, idx: int, entry: FleetEntry) -> list[Layout]:
    """The layouts asked for (refused when none fits in one of this type's nodes), else every
    valid one for the model on this GPU type."""
    if inp.layouts is None:
        return candidate_layouts(inp.template.geometry, entry)
    layouts = list(inp.layouts)
    if all(
        lay.tensor_parallel_size > entry.gpus_per_node and not lay.data_parallel_attention for lay in layouts
    ):
        raise InvalidInput(
            f"fleet[{idx}].gpus_per_node",
            f"{entry.gpus_per_node} is smaller than the tensor parallel size of every layout asked for",
        )
    return layouts


def _type_plans(
    inp: FleetInput, entry: FleetEntry, layouts: Sequence[Layout], should_stop: ShouldStop = None
) -> list[LayoutPlan]:
    """One plan a layout; when the layouts are kvplan's choice, also the pipeline-staged layout
    that makes each weights-bound TP layout fit (after them, so the asked-for ones keep their
    order)."""
    planned = [_plan_layout(inp, entry, lay, should_stop) for lay in layouts]
    plans = [p for p, _ in planned]
    if inp.layouts is None:
        for p, b in planned:
            if (
                p.reason_code is InfeasibleReason.NO_KV_MEMORY
                and not p.layout.data_parallel_attention
                and b is not None
            ):
                staged = _with_pipeline(inp, entry, p, b, should_stop)
                if staged is not None:
                    plans.append(staged)
    return plans


def _fleet_warnings(
    types: Sequence[GpuTypePlan], total: int, n: int | None, mix: CheapestMix | None
) -> tuple[w.Warning, ...]:
    """What the fleet's answer warns of: pooled figures a replica does not hold, a cheapest mix
    the search did not prove, a target the fleet does not reach."""
    warns: list[w.Warning] = []
    misleading = [  # the trap only where pooling says other than what a replica holds
        f"{t.gpu} {p.name}"
        for t in types
        for p in t.layouts
        if p.pooled_concurrency is not None and p.pooled_concurrency != p.concurrency_per_replica
    ]
    if misleading:
        warns.append(
            w.Warning(
                w.POOLED_NOT_DEPLOYABLE,
                f"On {len(misleading)} layouts, such as {', '.join(misleading[:3])}, pooled_concurrency "
                "counts a replica's GPUs as one memory budget. No deployment shares memory that way: "
                "it is arithmetic only, so plan with concurrency_per_replica.",
            )
        )
    if mix is not None and mix.method == MIX_BEST_FOUND:
        warns.append(
            w.Warning(
                w.CHEAPEST_MIX_SEARCH_LIMIT,
                f"The cheapest-mix search stopped after {MAX_MIX_SEARCH_NODES:,} steps: the mix is the "
                "cheapest it found, not proven the cheapest.",
            )
        )
    if n is not None and total < n:
        warns.append(
            w.Warning(
                w.BUDGET_INSUFFICIENT,
                f"The fleet holds {total:,} concurrent requests under its best layouts; "
                f"the target is {n:,}. See each GPU type's target sizing.",
            )
        )
    return tuple(warns)
