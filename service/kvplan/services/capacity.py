"""Capacity under traffic (/v1/capacity): one replica's sustainable rate, by simulations of the
workload's shape at searched rates (core/traffic/search.py) on the timed simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import MAX_SEARCH_STEPS
from kvplan.core.sim import workload
from kvplan.core.sim.scheduler import step_bound
from kvplan.core.sim.simulate import TimedSimResult, simulate
from kvplan.core.traffic.search import RateSearch, sustainable_rate
from kvplan.core.traffic.slo import targets
from kvplan.presets import Registry
from kvplan.schemas.capacity import CapacityRequest
from kvplan.schemas.simulate import SimulateRequest, SimWorkload

from .models import ModelRef
from .scenarios import _same_named, simulation_input
from .timing import timing_for


def capacity_answer(
    registry: Registry,
    req: CapacityRequest,
    should_stop: Callable[[], bool] | None = None,
    ref: ModelRef | None = None,
) -> tuple[RateSearch, dict[str, Any]]:
    """The search and the labels of the replica it ran on. The search's work (simulations × one
    simulation's step bound) is refused before any runs when it exceeds MAX_SEARCH_STEPS."""
    targets(req.slo)  # contradictions and an empty slo are 4xx before any work
    shape = req.workload
    sim = SimulateRequest(
        workload=SimWorkload(generator=shape.at(1.0)),
        **{k: v for k, v in _same_named(req, SimulateRequest).items() if k != "workload"},
    )
    cfg, _, _, pool, engine = simulation_input(registry, sim, ref)
    timing = timing_for(registry, sim, ref, None, None)
    planned = workload.plan(None, shape.at(1.0), should_stop)
    steps, _ = step_bound(cfg, workload.size(planned, cfg.block_size))
    points = req.search.max_points
    if steps * points > MAX_SEARCH_STEPS:
        raise InvalidInput(
            "workload.count",
            f"a search of up to {points} simulations of up to {steps:,} steps each ({steps * points:,}) "
            f"exceeds the limit of {MAX_SEARCH_STEPS:,} steps: give fewer requests (count) or fewer "
            "search.max_points",
        )

    def run(rate: float) -> TimedSimResult:
        result = simulate(cfg, generator=shape.at(rate), should_stop=should_stop, timing=timing)
        assert isinstance(result, TimedSimResult)
        return result

    first = req.search.first_rate_per_s or 1.0
    search = sustainable_rate(
        run, req.slo, tolerance=req.search.tolerance, max_points=points, first_rate=first
    )
    labels = {
        "model": req.model if isinstance(req.model, str) else "inline",
        "gpu": req.gpu,
        "engine": engine,
        "registry_version": registry.version,
        "pool": pool,
        "num_blocks": cfg.num_blocks,
        "max_num_seqs": cfg.max_num_seqs,
        "max_num_batched_tokens": cfg.max_num_batched_tokens,
        "timing": timing.note,
    }
    return search, labels
