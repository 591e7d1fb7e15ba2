"""Fleet inputs for the core's fleet tests: GPU presets by id, counts and costs, one template (on
the seed's weights-only budget unless a test passes non_kv_bytes=None)."""

from __future__ import annotations

from typing import Any

from kvplan.core.budget import BudgetInput
from kvplan.core.engine.profiles import get_profile
from kvplan.core.fleet.types import FleetEntry, FleetInput, MixItem
from kvplan.presets import Registry


def fleet_input(
    registry: Registry,
    model: str,
    gpus: list[tuple[str, int, float | None]],
    ctx: int | list[tuple[int, float]] = 8192,
    target: int | None = None,
    layouts: Any = None,
    mix: tuple[MixItem, ...] | None = None,
    geometry: Any = None,
    **knobs: Any,
) -> FleetInput:
    entries = tuple(
        FleetEntry(
            gpu=g.id,
            gpu_name=g.name,
            memory_bytes=g.memory_bytes,
            nominal=g.nominal,
            count=n,
            cost_per_hour=cost,
        )
        for gid, n, cost in gpus
        for g in [registry.gpu(gid)]
    )
    if mix is None:
        mix = (MixItem(ctx, 1.0),) if isinstance(ctx, int) else tuple(MixItem(t, s) for t, s in ctx)
    geo = geometry if geometry is not None else registry.model(model).geometry
    knobs.setdefault("non_kv_bytes", 0)  # the seed's weights-only budget unless a test asks for None
    return FleetInput(
        template=BudgetInput(geometry=geo, profile=get_profile(None), **knobs),
        fleet=entries,
        mix=mix,
        layouts=layouts,
        target_concurrency=target,
    )
