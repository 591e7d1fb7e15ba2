"""Capacity under traffic (/v1/capacity): one replica's sustainable rate, by simulations of the
workload's shape at searched rates (core/traffic/search.py) on the timed simulator."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import msgspec

from kvplan.core.budget import compute_budget
from kvplan.core.errors import InvalidInput, WorkStopped
from kvplan.core.fleet.types import FleetPlan
from kvplan.core.limits import (
    MAX_ARRIVAL_TIME,
    MAX_CAPACITY_VARIANTS,
    MAX_FLEET_SEARCH_STEPS,
    MAX_SEARCH_STEPS,
)
from kvplan.core.sim import workload
from kvplan.core.sim.config import SimConfig, step_bound
from kvplan.core.sim.simulate import TimedSimResult, Timing, check_fits, simulate
from kvplan.core.traffic.fleet import FleetByTraffic, plan_traffic
from kvplan.core.traffic.search import METHOD, RateSearch, sustainable_rate
from kvplan.core.traffic.shape import TraceLoad, WorkloadShape
from kvplan.core.traffic.slo import Slo, targets
from kvplan.core.traffic.sweep import CapacitySweep, rank
from kvplan.presets import Registry
from kvplan.schemas import BudgetRequest, FleetRequest
from kvplan.schemas.capacity import CapacityRequest, CapacityTraceQuery, SearchOptions
from kvplan.schemas.simulate import SimulateRequest, SimWorkload

from .models import ModelRef
from .scenarios import _same_named, budget_input, simulation_input
from .timing import timing_for

Load = WorkloadShape | TraceLoad


class Replica:
    """One replica's timed simulator: its pool, step-time model, the workload (a generator's shape,
    or a trace whose rate is scaled), and the work one run may take."""

    def __init__(
        self, registry: Registry, sim: SimulateRequest, load: Load, ref: ModelRef | None, planned: Planned
    ) -> None:
        self.load = load
        self.cfg: SimConfig
        self.cfg, _, _, self.pool, self.engine = simulation_input(registry, sim, ref)
        self.timing: Timing = timing_for(registry, sim, ref, None, None)
        check_fits(self.cfg, planned, self.cfg.num_blocks - 1)  # every request fits the pool alone
        inp, _, _ = budget_input(registry, BudgetRequest(**_same_named(sim, BudgetRequest)), ref=ref)
        _check_context(planned, compute_budget(inp).max_model_len, load)
        self.steps, _ = step_bound(self.cfg, workload.size(planned, self.cfg.block_size))

    def run(self, rate: float, should_stop: Callable[[], bool] | None) -> TimedSimResult:
        load = self.load
        if isinstance(load, TraceLoad):
            result = simulate(
                self.cfg,
                load.at(rate),
                should_stop=should_stop,
                timing=self.timing,
                chains=load.chains,
                chain_block=load.chain_block,
            )
        else:
            result = simulate(self.cfg, generator=load.at(rate), should_stop=should_stop, timing=self.timing)
        assert isinstance(result, TimedSimResult)
        return result

    def search(self, slo: Slo, options: SearchOptions, should_stop: Callable[[], bool] | None) -> RateSearch:
        first = options.first_rate_per_s or (self.load.rate if isinstance(self.load, TraceLoad) else 1.0)
        return sustainable_rate(
            lambda rate: self.run(rate, should_stop),
            slo,
            tolerance=options.tolerance,
            max_points=options.max_points,
            first_rate=first,
            # The lowest rate whose arrivals end within the simulator's last second: Poisson arrivals
            # end about count ÷ rate, give or take √count gaps, which 1.5 × covers.
            min_rate=1.5 * _requests(self.load) / MAX_ARRIVAL_TIME,
        )


Planned = list[workload.Planned]


def _check_context(planned: Planned, max_model_len: int, load: Load) -> None:
    """vLLM's server refuses a request whose prompt plus requested output exceeds max_model_len
    (vllm/entrypoints/openai/serving_engine.py _validate_input): a search of traffic it would
    refuse measures nothing real, so it is a 4xx naming how many and the first."""
    over = [p.request for p in planned if p.request.prompt_tokens + p.request.output_tokens > max_model_len]
    if over:
        r = over[0]
        field = "trace" if isinstance(load, TraceLoad) else "workload.prompt"
        raise InvalidInput(
            field,
            f"{len(over):,} of {len(planned):,} requests ask for more than max_model_len ({max_model_len:,}) "
            f"tokens, e.g. {r.prompt_tokens:,} prompt + {r.output_tokens:,} output: vLLM refuses them; "
            "raise max_model_len or shorten the lengths",
        )


def _stop_if_asked(should_stop: Callable[[], bool] | None, where: str) -> None:
    """Between replicas being prepared (each a budget and a step-time model): stop when asked."""
    if should_stop is not None and should_stop():
        raise WorkStopped(f"stopped while {where}")


def _requests(load: Load) -> int:
    """The requests of the workload: a generator's count, or a trace's rows."""
    return len(load.requests) if isinstance(load, TraceLoad) else load.count


def _refuse_early(load: Load, runs: int, limit: int, field: str, what: str) -> None:
    """The searches' work refused from the request count alone, before the workload is generated
    (a million requests is seconds and hundreds of MB of it, a replica at a time): every request
    is at least one step of a simulation (core/sim/config.py step_bound counts six), so a count
    over limit ÷ runs is refused later anyway."""
    count = _requests(load)
    if count * runs > limit:
        raise InvalidInput(
            field,
            f"{what}: {runs:,} simulations of {count:,} requests, each at least a step, is over the "
            f"limit of {limit:,} steps: give fewer requests",
        )


def planned_once(load: Load, should_stop: Callable[[], bool] | None) -> Planned:
    """The load as the scheduler takes it, at rate 1: planned once a request, whatever the number of
    replicas (layouts, settings) it is sized on; only its size and fit are read from it."""
    if isinstance(load, TraceLoad):
        load.rate  # noqa: B018 — a trace with no span is refused before any run
        return workload.plan(list(load.requests), None, should_stop, load.chains, load.chain_block)
    return workload.plan(None, load.at(1.0), should_stop)


def _simulation(req: Any, load: Load, **given: Any) -> SimulateRequest:
    """The SimulateRequest of a replica: req's model and settings, the workload at rate 1."""
    same = {k: v for k, v in _same_named(req, SimulateRequest).items() if k != "workload"}
    work = (
        SimWorkload(requests=list(load.requests))
        if isinstance(load, TraceLoad)
        else SimWorkload(generator=load.at(1.0))
    )
    return SimulateRequest(workload=work, **{**same, **given})


VARIED = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "tensor_parallel_size")


def capacity_sweep(
    registry: Registry,
    req: CapacityRequest | CapacityTraceQuery,
    load: Load,
    should_stop: Callable[[], bool] | None,
    ref: ModelRef | None,
) -> tuple[CapacitySweep, Replica]:
    """A search for each combination of req.vary's settings, all their work bounded before the
    first runs; ranked by sustainable requests a second per GPU. A combination the pool or the
    step-time model cannot run is listed with the reason. Also a replica that ran (for labels)."""
    assert req.slo is not None and req.vary is not None
    lists = [(name, getattr(req.vary, name)) for name in VARIED if getattr(req.vary, name) is not None]
    if not lists:
        raise InvalidInput("vary", f"give one or more of {', '.join(VARIED)}, each a list of values")
    names = [n for n, _ in lists]
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in lists))]
    if len(combos) > MAX_CAPACITY_VARIANTS:
        raise InvalidInput(
            "vary", f"{len(combos)} combinations; at most {MAX_CAPACITY_VARIANTS}: try fewer values"
        )
    _refuse_early(
        load,
        len(combos) * req.search.max_points,
        MAX_FLEET_SEARCH_STEPS,
        "vary",
        f"{len(combos)} combinations",
    )
    planned = planned_once(load, should_stop)
    replicas: list[tuple[dict[str, Any], int, Replica]] = []
    refused: list[tuple[dict[str, Any], int, str]] = []
    for i, combo in enumerate(combos):
        _stop_if_asked(should_stop, f"preparing combination {i + 1} of {len(combos)}")
        sim = _simulation(req, load, **combo)
        gpus = (sim.tensor_parallel_size or 1) * (sim.pipeline_parallel_size or 1)
        try:
            replicas.append((combo, gpus, Replica(registry, sim, load, ref, planned)))
        except InvalidInput as e:
            refused.append((combo, gpus, str(e)))
    if not replicas:
        raise InvalidInput("vary", f"no combination runs: {_words(refused[0][0])}: {refused[0][2]}")
    work = sum(r.steps for _, _, r in replicas) * req.search.max_points
    if work > MAX_FLEET_SEARCH_STEPS:
        raise InvalidInput(
            "vary",
            f"{len(combos)} combinations × up to {req.search.max_points} simulations is up to "
            f"{work:,} steps, over the limit of {MAX_FLEET_SEARCH_STEPS:,}: try fewer values or fewer "
            "requests (workload.count)",
        )
    done = [(combo, gpus, r.search(req.slo, req.search, should_stop)) for combo, gpus, r in replicas]
    return rank(done, refused, req.search.tolerance, METHOD), replicas[0][2]


def _words(combo: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in combo.items())


def capacity_answer(
    registry: Registry,
    req: CapacityRequest | CapacityTraceQuery,
    should_stop: Callable[[], bool] | None = None,
    ref: ModelRef | None = None,
    trace: TraceLoad | None = None,
) -> tuple[RateSearch | CapacitySweep, dict[str, Any]]:
    """The search (with `vary`: a search a combination of settings, ranked) and the labels of the
    replica it ran on; the workload is req's shape, or a trace whose rate is scaled. The search's
    work (simulations × one simulation's step bound) is refused before any runs when it exceeds
    MAX_SEARCH_STEPS."""
    assert req.slo is not None  # required on this request (takes "slo!")
    targets(req.slo)  # contradictions and an empty slo are 4xx before any work
    load: Load
    if trace is not None:
        load = trace
    else:
        assert isinstance(req, CapacityRequest)
        load = req.workload
    if req.vary is not None:
        sweep, ran = capacity_sweep(registry, req, load, should_stop, ref)
        return sweep, _labels(registry, req, ran)
    points = req.search.max_points
    field = "workload.count" if trace is None else "trace"
    _refuse_early(load, points, MAX_SEARCH_STEPS, field, f"a search of up to {points} simulations")
    replica = Replica(registry, _simulation(req, load), load, ref, planned_once(load, should_stop))
    if replica.steps * points > MAX_SEARCH_STEPS:
        raise InvalidInput(
            field,
            f"a search of up to {points} simulations of up to {replica.steps:,} steps each "
            f"({replica.steps * points:,}) exceeds the limit of {MAX_SEARCH_STEPS:,} steps: give fewer "
            "requests (count) or fewer search.max_points",
        )
    return replica.search(req.slo, req.search, should_stop), _labels(registry, req, replica)


def _labels(
    registry: Registry, req: CapacityRequest | CapacityTraceQuery, replica: Replica
) -> dict[str, Any]:
    return {
        "model": req.model if isinstance(req.model, str) else "inline",
        "gpu": req.gpu,
        "engine": replica.engine,
        "registry_version": registry.version,
        "pool": replica.pool,
        "num_blocks": replica.cfg.num_blocks,
        "max_num_seqs": replica.cfg.max_num_seqs,
        "max_num_batched_tokens": replica.cfg.max_num_batched_tokens,
        "timing": replica.timing.note,
    }


def fleet_by_traffic(
    registry: Registry,
    req: FleetRequest,
    plan: FleetPlan,
    ref: ModelRef | None,
    should_stop: Callable[[], bool] | None = None,
) -> FleetByTraffic:
    """The fleet plan with, for req.target_rate, each feasible layout's sustainable rate (a
    search each), the replicas each needs and the cheapest mix. All the searches' work is
    bounded before the first runs (MAX_FLEET_SEARCH_STEPS)."""
    if req.slo is None or req.traffic is None:
        missing = "slo" if req.slo is None else "traffic"
        raise InvalidInput(
            missing, "target_rate needs slo (latency targets) and traffic (the workload's shape)"
        )
    if req.target_concurrency is not None:
        raise InvalidInput("target_rate", "give target_concurrency or target_rate, not both")
    target = req.target_rate
    assert target is not None
    targets(req.slo)
    options = SearchOptions()
    searched = sum(
        p.feasible and not p.layout.data_parallel_attention for t in plan.gpu_types for p in t.layouts
    )
    _refuse_early(
        req.traffic,
        searched * options.max_points,
        MAX_FLEET_SEARCH_STEPS,
        "traffic.count",
        f"{searched} layouts",
    )
    planned = planned_once(req.traffic, should_stop)
    replicas: dict[tuple[str, str], Replica] = {}
    refused: dict[tuple[str, str], str] = {}
    for t in plan.gpu_types:
        for p in t.layouts:
            _stop_if_asked(should_stop, f"preparing {p.gpu} {p.name}")
            if not p.feasible:
                continue
            if p.layout.data_parallel_attention:
                refused[(p.gpu, p.name)] = "data-parallel attention is not in the step-time model"
                continue
            sim = _simulation(
                req,
                req.traffic,
                gpu=p.gpu,
                tensor_parallel_size=p.layout.tensor_parallel_size,
                pipeline_parallel_size=p.layout.pipeline_parallel_size,
            )
            try:
                replicas[(p.gpu, p.name)] = Replica(registry, sim, req.traffic, ref, planned)
            except InvalidInput as e:  # a layout the simulator or the step-time model cannot run
                refused[(p.gpu, p.name)] = str(e)
    work = sum(r.steps for r in replicas.values()) * options.max_points
    if work > MAX_FLEET_SEARCH_STEPS:
        raise InvalidInput(
            "traffic.count",
            f"{len(replicas)} layouts × up to {options.max_points} simulations of the traffic is up to "
            f"{work:,} steps, over the limit of {MAX_FLEET_SEARCH_STEPS:,}: give fewer requests "
            "(traffic.count), fewer GPU types or the layouts to try (layouts)",
        )
    searches = {key: r.search(req.slo, options, should_stop) for key, r in replicas.items()}
    prices = [next((g.cost_per_hour for g in req.fleet if g.gpu == t.gpu), None) for t in plan.gpu_types]
    traffic = plan_traffic(target, plan.gpu_types, prices, searches, METHOD)
    if refused:
        notes = "; ".join(f"{gpu} {name}: {why}" for (gpu, name), why in refused.items())
        traffic = msgspec.structs.replace(traffic, method=f"{traffic.method}. Not searched: {notes}")
    return FleetByTraffic(**msgspec.structs.asdict(plan), traffic=traffic)
