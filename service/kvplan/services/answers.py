"""Answers: a decoded request in, the core's result and the labels every answer carries out.
The labels (model, gpu, engine, registry version) let a figure be reproduced later."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kvplan.core.budget import Budget, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput, WorkStopped
from kvplan.core.fleet.plan import plan_fleet
from kvplan.core.fleet.sweep import Sweep, sweep
from kvplan.core.fleet.types import FleetPlan
from kvplan.core.kv.pertoken import PerToken, per_token
from kvplan.core.sim.simulate import SimResult, simulate
from kvplan.core.sim.traces import Trace
from kvplan.presets import Registry
from kvplan.schemas import BudgetRequest, FleetRequest, PerTokenRequest, SimulateRequest

from .models import ModelRef, Preset, model_ref, resolve
from .scenarios import Resolutions, budget_input, fleet_input, per_token_args, simulation_input
from .timing import timing_for

Labels = dict[str, Any]
# Called with the seconds the core took (the routes feed a histogram; the CLI passes nothing).
Observe = Callable[[float], None] | None
# The heavy pool's stop signal (api/offload.py): true once the deadline passed or the client left.
ShouldStop = Callable[[], bool] | None


def stop_if_asked(should_stop: ShouldStop, where: str) -> None:
    """Between the steps of an answer (a model read, then its plan): WorkStopped if asked to stop."""
    if should_stop is not None and should_stop():
        raise WorkStopped(f"stopped after {where}")


def encode_answer(labels: Labels, result: Any) -> bytes:
    """The labels, then the result's own fields, as one JSON object (the result is encoded once)."""
    return msgspec.json.encode(labels)[:-1] + b"," + msgspec.json.encode(result)[1:]


def _timed(observe: Observe, compute: Callable[[], Any]) -> Any:
    if observe is None:
        return compute()
    t0 = time.perf_counter()
    result = compute()
    observe(time.perf_counter() - t0)
    return result


def per_token_answer(
    registry: Registry,
    req: PerTokenRequest,
    explain: bool,
    observe: Observe = None,
    ref: ModelRef | None = None,
    should_stop: ShouldStop = None,
) -> tuple[PerToken, Labels]:
    model = resolve(registry, model_ref(registry, req.model) if ref is None else ref)
    stop_if_asked(should_stop, "reading the model")
    engine = get_profile(req.engine).id
    dtype, skip, par = per_token_args(req)
    pt: PerToken = _timed(
        observe, lambda: per_token(model.geometry, dtype, skip, par, req.context_tokens, explain=explain)
    )
    return pt, {**model.labels(), "engine": engine, "registry_version": registry.version}


def budget_answer(
    registry: Registry,
    req: BudgetRequest,
    explain: bool,
    observe: Observe = None,
    resolutions: Resolutions | None = None,
    ref: ModelRef | None = None,
    should_stop: ShouldStop = None,
) -> tuple[Budget, Labels]:
    inp, model, gpu = budget_input(registry, req, resolutions, ref)
    stop_if_asked(should_stop, "reading the model")
    if observe is None:
        b = compute_budget(inp, explain)
    else:  # the hottest path: timed without the closure _timed takes
        t0 = time.perf_counter()
        b = compute_budget(inp, explain)
        observe(time.perf_counter() - t0)
    return b, {**model.labels(), "gpu": gpu, "registry_version": registry.version}


def fleet_answer(
    registry: Registry,
    req: FleetRequest,
    observe: Observe = None,
    ref: ModelRef | None = None,
    should_stop: ShouldStop = None,
) -> tuple[FleetPlan, Labels]:
    """The fleet plan for a concurrency target, and with target_rate each layout's sustainable rate
    searched by timed simulation (services/capacity.py). What only times those searches (slo,
    traffic, tokenize_us_per_token) is refused without target_rate rather than ignored."""
    if ref is None:
        ref = model_ref(registry, req.model)
    if req.target_rate is None and req.tokenize_us_per_token is not None:  # refused before any work
        raise InvalidInput(
            "tokenize_us_per_token", "times a fleet's simulations for a request rate: give target_rate"
        )
    inp = fleet_input(registry, req, ref)
    plan: FleetPlan = _timed(observe, lambda: plan_fleet(inp, should_stop))
    if req.target_rate is not None or req.slo is not None or req.traffic is not None:
        if req.target_rate is None:
            raise InvalidInput(
                "target_rate", "slo and traffic size a fleet for a request rate: give target_rate"
            )
        from .capacity import fleet_by_traffic  # the traffic path: a search a layout

        plan = fleet_by_traffic(registry, req, plan, ref, should_stop)
    label = ref.name if isinstance(ref, Preset) else inp.template.geometry.name
    return plan, {"model": label, "registry_version": registry.version}


def sweep_answer(
    registry: Registry,
    req: BudgetRequest,
    vary: str,
    values: Sequence[str] | None,
    observe: Observe = None,
    ref: ModelRef | None = None,
    should_stop: ShouldStop = None,
) -> tuple[Sweep, Labels]:
    template, model, _ = budget_input(registry, req, ref=ref)
    series: Sweep = _timed(observe, lambda: sweep(template, vary, values, should_stop))
    return series, {**model.labels(), "registry_version": registry.version}


def is_timed(req: SimulateRequest) -> bool:
    """Arrivals in seconds: a timed generator, or requests (a trace's too) with arrival_time."""
    g, rs = req.workload.generator, req.workload.requests
    return (g is not None and g.timed) or bool(rs and rs[0].arrival_time is not None)


def simulate_answer(
    registry: Registry,
    req: SimulateRequest,
    should_stop: Callable[[], bool] | None = None,
    observe: Observe = None,
    ref: ModelRef | None = None,
    trace: Trace | None = None,
) -> tuple[SimResult, Labels]:
    """A simulation and the pool it ran on: blocks, block size and the batch limits, resolved as
    budget resolves them. Arrivals in seconds (a timed generator, requests' arrival_time, a trace)
    run it timed, on the step-time model of the model and GPU (services/timing.py)."""
    w = req.workload
    timed = is_timed(req)
    concurrency = w.generator.concurrency if w.generator is not None else w.concurrency
    # Timed first: a model the step-time model cannot price is refused for that, not sent to give
    # a hybrid pool's num_blocks and refused only then.
    timing = timing_for(registry, req, ref, concurrency, req.goodput) if timed else None
    cfg, requests, generator, pool, engine = simulation_input(registry, req, ref)
    timed_only = {
        "workload.concurrency": w.concurrency,
        "goodput": req.goodput,
        "tokenize_us_per_token": req.tokenize_us_per_token,
    }
    given = [name for name, value in timed_only.items() if value is not None]
    if not timed and given:
        raise InvalidInput(
            given[0], "applies to a timed simulation: give arrivals in seconds (arrival_time, a trace)"
        )
    chains = trace.chains if trace is not None else None
    block = trace.chain_block if trace is not None else 0
    result: SimResult = _timed(
        observe,
        lambda: simulate(
            cfg,
            requests,
            generator,
            req.snapshot_steps,
            should_stop=should_stop,
            timing=timing,
            chains=chains,
            chain_block=block,
        ),
    )
    labels = {
        "model": req.model if isinstance(req.model, str) else ("inline" if req.model is not None else None),
        "gpu": req.gpu,
        "engine": engine,
        "registry_version": registry.version,
        "pool": pool,
        "num_blocks": cfg.num_blocks,
        "max_num_seqs": cfg.max_num_seqs,
        "max_num_batched_tokens": cfg.max_num_batched_tokens,
    }
    if timed:
        labels["concurrency"] = concurrency
        labels["request_rate"] = generator.arrival_rate_per_s if generator is not None else None
        labels["trace"] = trace.format if trace is not None else None
    return result, labels
