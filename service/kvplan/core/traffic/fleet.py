"""Fleet by traffic: for a request rate and latency targets, each GPU type × layout's sustainable
rate per replica (search.py, one search a layout), the replicas each needs, and the cheapest mix
of replicas that serves the rate (the fleet planner's branch and bound, core/fleet/plan.py, on
rates counted in thousandths of a request a second, rounded down per replica and up for the
target, so a mix never claims more than its replicas sustain)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from ..fleet.plan import cheapest_replica_counts
from ..fleet.types import FleetPlan, GpuTypePlan, LayoutPlan
from .binding import Binding
from .search import RateSearch

MILLI = 1000  # rate units of the mix search: 1/1000 request a second


class TrafficLayout(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One GPU type × layout against the target rate."""

    gpu: str
    layout: str
    gpus_per_replica: int
    max_rate_per_s: float
    binding: Binding
    replicas_needed: int | None = None  # None: no rate meets the targets on this layout
    gpus_needed: int | None = None
    available: bool = False  # the fleet has that many GPUs of the type
    cost_per_hour: float | None = None
    reason: str = ""


class TrafficPart(msgspec.Struct, frozen=True):
    gpu: str
    layout: str
    replicas: int
    gpus: int
    rate_per_s: float
    cost_per_hour: float


class TrafficMix(msgspec.Struct, frozen=True, kw_only=True):
    """The cheapest replicas serving the target rate: within the fleet's GPUs when they can,
    else with as many as each type would need (within_fleet false)."""

    parts: tuple[TrafficPart, ...]
    rate_per_s: float
    cost_per_hour: float
    method: str
    within_fleet: bool


class TrafficPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    target_rate_per_s: float
    layouts: tuple[TrafficLayout, ...]
    cheapest_mix: TrafficMix | None = None
    method: str


class FleetByTraffic(FleetPlan, frozen=True, kw_only=True, omit_defaults=True):
    """The fleet plan (what each layout holds) and, for the target rate, the traffic sizing."""

    traffic: TrafficPlan


def plan_traffic(
    target_rate: float,
    types: Sequence[GpuTypePlan],
    prices: Sequence[float | None],
    searches: dict[tuple[str, str], RateSearch],
    method: str,
) -> TrafficPlan:
    """Replicas per layout and the cheapest mix, from the searches done per (gpu, layout name)."""
    rows: list[TrafficLayout] = []
    options: list[tuple[LayoutPlan, int, float]] = []  # plan, milli-rate a replica, price a GPU
    for t, price in zip(types, prices, strict=True):
        typed: list[tuple[LayoutPlan, int, float]] = []
        for p in t.layouts:
            s = searches.get((p.gpu, p.name))
            if s is None:
                continue
            row = TrafficLayout(
                gpu=p.gpu,
                layout=p.name,
                gpus_per_replica=p.gpus_per_replica,
                max_rate_per_s=s.max_rate_per_s if s.max_rate_per_s > 0 else 0.0,
                binding=s.binding,
                reason=s.reason,
            )
            if s.max_rate_per_s <= 0:  # no rate meets the targets
                rows.append(row)
                continue
            if s.above_max is None and target_rate > s.max_rate_per_s:
                # Every rate the search tried met the targets: its ceiling is no limit of a replica,
                # and target ÷ ceiling replicas would be a guess (services/deployments.py refuses it).
                why = f"the traffic does not load one replica up to {target_rate:g}/s: {s.reason}"
                rows.append(msgspec.structs.replace(row, reason=why))
                continue
            replicas = math.ceil(target_rate / s.max_rate_per_s - 1e-12)
            gpus = replicas * p.gpus_per_replica
            rows.append(
                msgspec.structs.replace(
                    row,
                    replicas_needed=replicas,
                    gpus_needed=gpus,
                    available=gpus <= t.count,
                    cost_per_hour=None if price is None else gpus * price,
                )
            )
            milli = math.floor(s.max_rate_per_s * MILLI)
            if price is not None and milli > 0:
                typed.append((p, milli, price))
        if typed:  # one layout a type, its cheapest a request/s: the type's GPUs are not shared
            options.append(min(typed, key=lambda o: (o[0].gpus_per_replica * o[2] / o[1], -o[1])))
    return TrafficPlan(
        target_rate_per_s=target_rate,
        layouts=tuple(rows),
        cheapest_mix=_mix(options, types, target_rate),
        method=method,
    )


def _mix(
    options: list[tuple[LayoutPlan, int, float]], types: Sequence[GpuTypePlan], rate: float
) -> TrafficMix | None:
    """The cheapest replicas of the options (one layout a type) reaching `rate`: within the
    fleet's GPUs of each type when they can, else with as many replicas as each would need."""
    if not options:
        return None
    n = math.ceil(rate * MILLI)
    gains = [g for _, g, _ in options]
    costs = [p.gpus_per_replica * price for p, _, price in options]
    count = {t.gpu: t.count for t in types}
    fleet_bounds = [count[p.gpu] // p.gpus_per_replica for p, _, _ in options]
    within = sum(g * b for g, b in zip(gains, fleet_bounds, strict=True)) >= n
    bounds = fleet_bounds if within else [math.ceil(n / g) for g in gains]
    found = cheapest_replica_counts(gains, costs, bounds, n)
    if found is None:
        return None
    parts = tuple(
        TrafficPart(p.gpu, p.name, k, k * p.gpus_per_replica, k * g / MILLI, k * c)
        for (p, g, _), k, c in zip(options, found.counts, costs, strict=True)
        if k
    )
    return TrafficMix(
        parts=parts,
        rate_per_s=sum(x.rate_per_s for x in parts),
        cost_per_hour=sum(x.cost_per_hour for x in parts),
        method="exact" if found.exact else "best found (search limit)",
        within_fleet=within,
    )
