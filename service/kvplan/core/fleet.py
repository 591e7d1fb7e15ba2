"""Fleet planning: which parallel layout of which GPU type holds how many requests, and what it
takes to reach a target (VLLM_FACTS §3, §6).

A replica is one vLLM engine. With tensor/pipeline parallel it spans TP × PP GPUs, each worker
computes its own blocks and the engine takes the minimum (that is `compute_budget`). With
data-parallel attention (DeepSeek-style MoE/MLA serving: `--data-parallel-size N
--enable-expert-parallel`), a replica of N GPUs runs N attention ranks, each with its own KV
cache and scheduler and a full copy of the attention and dense weights, while the routed
experts are split across the N ranks (expert parallel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from . import warnings as w
from .budget import Budget, BudgetInput, compute_budget, weight_split
from .errors import InvalidInput, InvalidLayout
from .geometry import Geometry
from .parallel import valid_tensor_sizes
from .units import GiB, cdiv

MAX_FLEET_ENTRIES = 64
MAX_LAYOUTS = 64
MAX_MIX = 32
MAX_SEARCH_NODES = 20_000


class FleetEntry(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    gpu_name: str
    memory_bytes: int
    nominal: bool = False
    count: int
    gpus_per_node: int = 8
    cost_per_hour: float | None = None


class Layout(msgspec.Struct, frozen=True, kw_only=True):
    """tensor_parallel_size × pipeline_parallel_size GPUs a replica; with data_parallel_attention
    the tensor_parallel_size GPUs are attention ranks (attention TP 1) with experts split over them."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_attention: bool = False

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def label(self) -> str:
        if self.data_parallel_attention:
            return f"DP{self.tensor_parallel_size}-attention+EP"
        return f"TP{self.tensor_parallel_size}" + (
            f"×PP{self.pipeline_parallel_size}" if self.pipeline_parallel_size > 1 else ""
        )


class MixItem(msgspec.Struct, frozen=True):
    context_tokens: int
    share: float


class FleetInput(msgspec.Struct, frozen=True, kw_only=True):
    """`template` carries the model and the memory knobs of /v1/budget; the fleet supplies the GPU
    memory and the layouts."""

    template: BudgetInput
    fleet: tuple[FleetEntry, ...]
    mix: tuple[MixItem, ...]
    layouts: tuple[Layout, ...] | None = None
    target_concurrency: int | None = None


class RankFigures(msgspec.Struct, frozen=True):
    """Data-parallel attention: what one attention rank holds."""

    ranks: int
    concurrency_per_rank: int
    weights_bytes_per_rank: int
    dense_weights_bytes: int
    expert_weights_bytes_per_rank: int
    available_kv_bytes_per_rank: int


class LayoutPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    gpu: str
    layout: Layout
    name: str
    feasible: bool
    reason: str | None = None
    gpus_per_replica: int
    replicas: int = 0
    idle_gpus: int = 0
    concurrency_per_replica: int = 0
    expected_concurrency_per_replica: int | None = None
    total_concurrency: int = 0
    total_expected_concurrency: int | None = None
    kv_tokens_per_replica: int = 0
    bytes_per_token_per_gpu: int | None = None
    weights_bytes_per_gpu: int | None = None
    available_kv_bytes_per_gpu: int | None = None
    num_blocks: int | None = None
    per_rank: RankFigures | None = None
    pooled_concurrency: int | None = None
    cost_per_hour: float | None = None
    cost_per_concurrent_request: float | None = None
    warnings: tuple[w.Warning, ...] = ()


class TargetSizing(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    layout: str
    concurrency_per_replica: int
    replicas: int
    gpus: int
    available: bool
    cost_per_hour: float | None = None


class MixPart(msgspec.Struct, frozen=True):
    gpu: str
    layout: str
    replicas: int
    gpus: int
    concurrency: int
    cost_per_hour: float


class CheapestMix(msgspec.Struct, frozen=True, kw_only=True):
    """The cheapest replicas per GPU type reaching the target. within_fleet: using only the GPUs the
    fleet has; if those cannot reach it, the mix says what to add (within_fleet false)."""

    parts: tuple[MixPart, ...]
    concurrency: int
    cost_per_hour: float
    method: str
    within_fleet: bool


class GpuTypePlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    gpu: str
    gpu_name: str
    count: int
    gpus_per_node: int
    best: LayoutPlan | None = None
    layouts: tuple[LayoutPlan, ...] = ()
    target: TargetSizing | None = None


class FleetPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    engine: str
    context_tokens: int
    mix: tuple[MixItem, ...]
    total_concurrency: int
    total_expected_concurrency: int | None = None
    gpu_types: tuple[GpuTypePlan, ...]
    target_concurrency: int | None = None
    target_met_by_fleet: bool | None = None
    cheapest_mix: CheapestMix | None = None
    warnings: tuple[w.Warning, ...] = ()


def _check_input(inp: FleetInput) -> None:
    if not inp.fleet:
        raise InvalidInput("fleet", "must list at least one GPU type")
    if len(inp.fleet) > MAX_FLEET_ENTRIES:
        raise InvalidInput("fleet", f"at most {MAX_FLEET_ENTRIES} entries, got {len(inp.fleet)}")
    seen = set()
    for i, e in enumerate(inp.fleet):
        if e.gpu in seen:
            raise InvalidInput(f"fleet[{i}].gpu", f"{e.gpu!r} is listed twice; give one entry per GPU type")
        seen.add(e.gpu)
        if e.count < 1:
            raise InvalidInput(f"fleet[{i}].count", f"must be at least 1, got {e.count}")
        if e.gpus_per_node < 1:
            raise InvalidInput(f"fleet[{i}].gpus_per_node", "must be at least 1")
        if e.cost_per_hour is not None and not (math.isfinite(e.cost_per_hour) and e.cost_per_hour >= 0):
            raise InvalidInput(f"fleet[{i}].cost_per_hour", "must be a finite number ≥ 0")
    if not inp.mix or len(inp.mix) > MAX_MIX:
        raise InvalidInput("workload", f"give a context length or a mix of 1 to {MAX_MIX} lengths")
    for i, m in enumerate(inp.mix):
        if m.context_tokens < 1:
            raise InvalidInput(f"workload.mix[{i}].context_tokens", "must be at least 1")
        if not (math.isfinite(m.share) and m.share > 0):
            raise InvalidInput(f"workload.mix[{i}].share", "must be a finite number > 0")
    if inp.layouts is not None and not 0 < len(inp.layouts) <= MAX_LAYOUTS:
        raise InvalidInput("layouts", f"give 1 to {MAX_LAYOUTS} layouts, or none for every valid one")
    if inp.target_concurrency is not None and inp.target_concurrency < 1:
        raise InvalidInput("target_concurrency", "must be at least 1")


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


def _expected_concurrency(budget_inp: BudgetInput, usable: int, mix: Sequence[MixItem]) -> int:
    """Requests the pool holds when lengths follow the mix: usable blocks over the expected
    blocks of one request, each length's blocks (as the engine counts them) weighted by its share."""
    total_share = sum(m.share for m in mix)
    expected_blocks = sum(
        m.share
        / total_share
        * compute_budget(replace(budget_inp, context_tokens=m.context_tokens)).blocks_per_request
        for m in mix
    )
    return int(usable // expected_blocks) if expected_blocks else 0


def _infeasible(
    entry: FleetEntry,
    layout: Layout,
    reason: str,
    b: Budget | None = None,
    per_rank: RankFigures | None = None,
) -> LayoutPlan:
    return LayoutPlan(
        gpu=entry.gpu,
        layout=layout,
        name=layout.label,
        feasible=False,
        reason=reason,
        gpus_per_replica=layout.gpus,
        bytes_per_token_per_gpu=None if b is None else b.per_token.bytes_per_token,
        weights_bytes_per_gpu=None if b is None else b.weights_bytes_per_gpu,
        available_kv_bytes_per_gpu=None if b is None else b.available_kv_bytes,
        num_blocks=None if b is None else b.num_blocks,
        per_rank=per_rank,
    )


def plan_layout(inp: FleetInput, entry: FleetEntry, layout: Layout) -> LayoutPlan:
    """One GPU type under one layout; infeasibility is an answer with its reason."""
    longest = max(m.context_tokens for m in inp.mix)
    gpr = layout.gpus
    tp, pp = layout.tensor_parallel_size, layout.pipeline_parallel_size
    if tp < 1 or pp < 1:
        raise InvalidInput("layouts", "tensor_parallel_size and pipeline_parallel_size must be at least 1")
    if tp > entry.gpus_per_node and not layout.data_parallel_attention:
        reason = (
            f"TP {tp} exceeds the {entry.gpus_per_node} GPUs of a node (tensor parallel stays within a node)"
        )
        return _infeasible(entry, layout, reason)
    if gpr > entry.count:
        return _infeasible(entry, layout, f"needs {gpr} GPUs, the fleet has {entry.count}")
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
                return _infeasible(
                    entry, layout, "data-parallel attention with pipeline stages is not planned"
                )
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
        return _infeasible(entry, layout, e.reason)
    if b.available_kv_bytes <= 0 or b.num_blocks < 2:
        reason = (
            f"weights ({b.weights_bytes_per_gpu / GiB:,.1f} GiB a GPU) leave no KV budget "
            f"(requested {(b.requested_bytes or 0) / GiB:,.1f} GiB)"
        )
        return _infeasible(entry, layout, reason, b, per_rank)
    # What one engine runs at once: the blocks' guarantee, capped by max_num_seqs (each DP rank
    # is its own engine).
    per_replica = b.concurrency.schedulable * multiplier
    if per_replica == 0:
        reason = (
            f"no request of {longest:,} tokens fits: it needs {b.blocks_per_request:,} blocks, "
            f"{b.usable_blocks:,} are usable"
        )
        return _infeasible(entry, layout, reason, b, per_rank)
    replicas = _replicas(entry, gpr)
    expected = None
    if len(inp.mix) > 1:
        expected = (
            min(_expected_concurrency(budget_inp, b.usable_blocks, inp.mix), b.max_num_seqs) * multiplier
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
        per_rank=per_rank,
        pooled_concurrency=None if b.pooled is None else b.pooled.concurrency,
        cost_per_hour=cost,
        cost_per_concurrent_request=cost_per_req,
        warnings=b.warnings,
    )


def _with_pipeline(inp: FleetInput, entry: FleetEntry, plan: LayoutPlan) -> LayoutPlan | None:
    """The fewest pipeline stages that make a weights-bound TP layout fit, if any. The failed plan's
    own figures give the memory a GPU has for weights and KV (available + weights), so the search
    starts at the first stage count whose weights share fits in it."""
    tp = plan.layout.tensor_parallel_size
    room = (plan.available_kv_bytes_per_gpu or 0) + (plan.weights_bytes_per_gpu or 0)
    if room <= 0 or plan.weights_bytes_per_gpu is None:
        return None
    start = max(2, plan.weights_bytes_per_gpu // room + 1)
    max_pp = min(entry.count // tp, inp.template.geometry.num_layers)
    for pp in range(start, min(max_pp, start + 8) + 1):
        cand = plan_layout(inp, entry, Layout(tensor_parallel_size=tp, pipeline_parallel_size=pp))
        if cand.feasible:
            return cand
        if cand.reason and not cand.reason.startswith("weights"):
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


def cheapest_mix(options: Sequence[tuple[LayoutPlan, float]], n: int) -> CheapestMix | None:
    """Within the fleet if it can reach n, else with as many replicas as each type would need."""
    within = sum(p.replicas * p.concurrency_per_replica for p, _ in options) >= n
    bounds = [p.replicas if within else cdiv(n, p.concurrency_per_replica) for p, _ in options]
    return _cheapest(options, bounds, n, within)


def _cheapest(
    options: Sequence[tuple[LayoutPlan, float]], bounds: Sequence[int], n: int, within: bool
) -> CheapestMix | None:
    """Min Σ cost_i·x_i with Σ gain_i·x_i ≥ n, 0 ≤ x_i ≤ bounds_i: branch and bound over the types in
    order of cost per request, pruned by the fractional (LP) bound; greedy is the first incumbent."""
    m = len(options)
    gain = [p.concurrency_per_replica for p, _ in options]
    cost = [p.gpus_per_replica * price for p, price in options]
    order = sorted(range(m), key=lambda i: cost[i] / gain[i])
    if sum(gain[i] * bounds[i] for i in range(m)) < n:
        return None

    def relaxed(k: int, need: int) -> float:
        """Cheapest fractional cover of `need` with the types from position k on."""
        total = 0.0
        for i in order[k:]:
            if need <= 0:
                break
            take = min(bounds[i] * gain[i], need)
            total += take / gain[i] * cost[i]
            need -= take
        return total if need <= 0 else float("inf")

    best_counts = [0] * m
    need = n
    for i in order:  # greedy incumbent
        best_counts[i] = min(bounds[i], cdiv(max(need, 0), gain[i]))
        need -= best_counts[i] * gain[i]
    best_cost = sum(best_counts[i] * cost[i] for i in range(m))
    counts = [0] * m
    nodes = 0
    exhausted = True

    def search(k: int, need: int, spent: float) -> None:
        nonlocal best_cost, best_counts, nodes, exhausted
        if need <= 0:
            if spent < best_cost - 1e-9:
                best_cost, best_counts = spent, counts[:]
            return
        nodes += 1
        if k == m or nodes > MAX_SEARCH_NODES:
            exhausted = exhausted and k == m
            return
        if spent + relaxed(k, need) >= best_cost - 1e-9:
            return
        i = order[k]
        for x in range(min(bounds[i], cdiv(need, gain[i])), -1, -1):
            counts[i] = x
            search(k + 1, need - x * gain[i], spent + x * cost[i])
        counts[i] = 0

    search(0, n, 0.0)
    parts = []
    for i, c in enumerate(best_counts):
        if c:
            p, _price = options[i]
            parts.append(MixPart(p.gpu, p.name, c, c * p.gpus_per_replica, c * gain[i], c * cost[i]))
    return CheapestMix(
        within_fleet=within,
        parts=tuple(parts),
        concurrency=sum(x.concurrency for x in parts),
        cost_per_hour=sum(x.cost_per_hour for x in parts),
        method="exact" if exhausted else "best found (search limit)",
    )


def plan_fleet(inp: FleetInput) -> FleetPlan:
    _check_input(inp)
    g = inp.template.geometry
    n = inp.target_concurrency
    types: list[GpuTypePlan] = []
    sizing_options: list[tuple[LayoutPlan, float]] = []
    for idx, entry in enumerate(inp.fleet):
        if inp.layouts is not None:
            layouts = list(inp.layouts)
            if all(
                lay.tensor_parallel_size > entry.gpus_per_node and not lay.data_parallel_attention
                for lay in layouts
            ):
                raise InvalidInput(
                    f"fleet[{idx}].gpus_per_node",
                    f"{entry.gpus_per_node} is smaller than the tensor parallel size of every "
                    "layout asked for",
                )
        else:
            layouts = candidate_layouts(g, entry)
        plans = [plan_layout(inp, entry, lay) for lay in layouts]
        if inp.layouts is None:
            for p in list(plans):
                if (
                    not p.feasible
                    and not p.layout.data_parallel_attention
                    and p.reason
                    and p.reason.startswith("weights")
                ):
                    staged = _with_pipeline(inp, entry, p)
                    if staged is not None:
                        plans.append(staged)
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
    warns: list[w.Warning] = []
    if any(p.pooled_concurrency is not None for t in types for p in t.layouts):
        warns.append(
            w.Warning(
                w.POOLED_NOT_DEPLOYABLE,
                "pooled_concurrency figures pool a replica's memory as one budget: arithmetic "
                "only. Plan with concurrency_per_replica.",
            )
        )
    mix = None
    if n is not None and sizing_options:
        mix = cheapest_mix(sizing_options, n)
    if n is not None and total < n:
        warns.append(
            w.Warning(
                w.BUDGET_INSUFFICIENT,
                f"The fleet holds {total:,} concurrent requests under its best layouts; "
                f"the target is {n:,}. See each GPU type's target sizing.",
            )
        )
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
        warnings=tuple(warns),
    )
