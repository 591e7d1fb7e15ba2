"""What a workload does to vLLM's block pool: the public entry of the simulator.

`simulate` plans the workload (workload.py: requests or a seeded generator, conversations),
refuses it before running when its work exceeds the limits (config.visit_bound and friends),
runs vLLM's scheduler on the block pool (scheduler.py; blockpool.py, or anonpool.py when no
snapshot asks for block ids), and shapes the answer: the figures, a bounded series of the pool
over time (series.py), snapshots, and the preemption warning.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import count, repeat
from operator import sub
from typing import Annotated, NamedTuple

import msgspec
from msgspec import Meta

from .. import warnings as w
from ..errors import InvalidInput, SchedulerStateError, SimulationStopped
from ..ledger import Step as LedgerStep
from ..limits import (
    MAX_BLOCK_EVENTS,
    MAX_REQUESTS,
    MAX_SERIES,
    MAX_SIMULATED_STEPS,
    MAX_SLO_MS,
    MAX_SNAPSHOT_BLOCKS,
    MAX_SNAPSHOTS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TOTAL_TOKENS,
)
from ..units import cdiv
from . import workload
from .clock import Clock, Server, StepTimer
from .config import SimConfig, check_config, visit_bound
from .latency import Latency, Throughput, distribution
from .scheduler import Scheduler
from .series import SeriesPoint, SeriesRecorder
from .snapshot import Snapshot, TableEntry
from .workload import Conversations, Fixed, Generator, Length, Lognormal, SimRequest, Uniform, generate

__all__ = [
    "MAX_BLOCK_EVENTS",
    "MAX_REQUESTS",
    "MAX_SERIES",
    "MAX_SIMULATED_STEPS",
    "MAX_SNAPSHOTS",
    "MAX_SNAPSHOT_BLOCKS",
    "MAX_TOKENS_PER_REQUEST",
    "MAX_TOTAL_TOKENS",
    "Conversations",
    "Fixed",
    "Generator",
    "Length",
    "Lognormal",
    "SchedulerStateError",
    "SeriesPoint",
    "SimConfig",
    "SimRequest",
    "SimResult",
    "SimulationStopped",
    "Snapshot",
    "TableEntry",
    "Uniform",
    "generate",
    "simulate",
]


class SimResult(msgspec.Struct, frozen=True, kw_only=True):
    steps: int
    requests: int
    completed: int
    preemptions: int
    recomputed_tokens: int
    prompt_tokens: int
    cache_hit_tokens: int
    cache_hit_rate_tokens: float
    cache_hit_blocks: int
    cache_lookup_blocks: int
    cache_hit_rate_blocks: float
    usable_blocks: int
    block_size: int
    peak_blocks_in_use: int
    mean_blocks_in_use: float
    peak_running: int
    mean_running: float
    formula_concurrency: int
    formula_context_tokens: int = 0  # the longest request (prompt + output) the formula is for
    tail_waste_tokens_mean: float
    series: tuple[SeriesPoint, ...]
    warnings: tuple[w.Warning, ...]
    # Request ids in the order they finished (a step's finishers in running order).
    finish_order: tuple[int, ...] = ()
    snapshots: tuple[Snapshot, ...] = ()


class GoodputTargets(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Per-request targets a request must all meet to count in goodput (vllm bench serve
    --goodput ttft:… tpot:… e2el:…), in milliseconds."""

    ttft_ms: Annotated[float, Meta(gt=0, le=MAX_SLO_MS)] | None = None
    tpot_ms: Annotated[float, Meta(gt=0, le=MAX_SLO_MS)] | None = None
    e2e_ms: Annotated[float, Meta(gt=0, le=MAX_SLO_MS)] | None = None


class Goodput(msgspec.Struct, frozen=True):
    """Requests that met every one of the targets: their share, and their rate over the run."""

    targets: GoodputTargets
    requests_met: int
    share_met: float
    requests_per_s: float


class TimingNote(msgspec.Struct, frozen=True, kw_only=True):
    """Which figures are exact and which are modelled, and how well the model did where measured."""

    exact: str
    modelled: str
    step_time_model: str
    validation: str
    steps: tuple[LedgerStep, ...] = ()


class Timing(NamedTuple):
    """What a timed simulation needs beyond the pool: the step-time model and its note, the
    closed loop's limit (a trace's or listed requests'; a generator gives its own), and targets."""

    timer: StepTimer
    note: TimingNote
    concurrency: int | None = None
    slo: GoodputTargets | None = None
    server: Server | None = None  # the serving path outside the engine (core/perf/serving.py)


class TimedSimResult(SimResult, frozen=True, kw_only=True):
    """A timed simulation: the block pool's figures, and what the requests saw in time."""

    latency: Latency
    throughput: Throughput
    goodput: Goodput | None
    peak_in_flight: int  # requests sent and not finished, at most at once (the client's view)
    # Seconds during which requests waited in the queue, by what kept the head out: the KV pool
    # (a preemption or no blocks for it), max_num_seqs, or the step's token budget.
    waiting_s: dict[str, float]
    timing: TimingNote


# -- refusing before running ----------------------------------------------------------------------
def check_bounds(cfg: SimConfig, s: workload.Size) -> None:
    """Refuse, before running, a workload whose work exceeds the limits."""
    tokens = s.prompt_tokens + s.output_tokens
    blocks = tokens // cfg.block_size + s.requests  # ≥ Σ cdiv(prompt + output − 1, block_size)
    if tokens > MAX_TOTAL_TOKENS or blocks > MAX_BLOCK_EVENTS:
        raise InvalidInput(
            "workload",
            f"too large to simulate here: {tokens:,} tokens ({s.prompt_tokens:,} of prompts, every "
            f"conversation turn with its history) in {blocks:,} blocks of {cfg.block_size}; the "
            f"limits are {MAX_TOTAL_TOKENS:,} tokens and {MAX_BLOCK_EVENTS:,} blocks' worth: "
            "simulate a sample or a larger block size",
        )
    steps, prefill = visit_bound(cfg, s)
    if steps > MAX_SIMULATED_STEPS:
        small_budget = prefill * 2 > steps
        raise InvalidInput(
            "max_num_batched_tokens" if small_budget else "workload",
            f"up to {steps:,} scheduler steps to simulate ({prefill:,} of them spending a budget of "
            f"max_num_batched_tokens = {cfg.max_num_batched_tokens:,} tokens a step; {s.requests:,} "
            f"requests); the limit is {MAX_SIMULATED_STEPS:,}: "
            + (
                "raise max_num_batched_tokens"
                if small_budget
                else "simulate fewer requests or a larger block size"
            ),
        )


def check_fits(cfg: SimConfig, planned: Sequence[workload.Planned], usable: int) -> None:
    """Every request fits the pool alone (else vLLM would wait for it forever), first turns in
    order, then conversations' last, largest, turns."""
    bs = cfg.block_size
    for i, p in enumerate(planned):
        r = p.request
        worst = cdiv(r.prompt_tokens + r.output_tokens - 1, bs)
        if worst > usable:
            raise InvalidInput(
                f"workload.requests[{i}]",
                f"needs {worst:,} blocks of {bs} tokens and the pool has {usable:,} usable: it can never run",
            )
    for i, p in enumerate(planned):
        f = p.follow_up
        if f is None or workload.last_turn_tokens(p) - 1 <= usable * bs:
            continue
        # Turn k holds P + O − 1 + (k − 1)(O + U) tokens: the first of them past the pool.
        r = p.request
        grow = r.output_tokens + f.user_tokens
        turn = (usable * bs - (r.prompt_tokens + r.output_tokens - 1)) // grow + 2
        tokens = r.prompt_tokens + r.output_tokens + (turn - 1) * grow
        raise InvalidInput(
            "workload.generator.conversations",
            f"turn {turn} of the conversation opened by request {i} grows to {tokens:,} tokens: it "
            f"needs {cdiv(tokens - 1, bs):,} blocks of {bs} tokens and the pool has {usable:,} "
            "usable: it can never run; give fewer turns or user_tokens",
        )


def check_snapshots(cfg: SimConfig, snapshot_steps: Sequence[int]) -> None:
    if snapshot_steps and (len(snapshot_steps) > MAX_SNAPSHOTS or cfg.num_blocks > MAX_SNAPSHOT_BLOCKS):
        raise InvalidInput(
            "snapshot_steps",
            f"at most {MAX_SNAPSHOTS} snapshots, of pools of at most {MAX_SNAPSHOT_BLOCKS:,} blocks",
        )
    if any(s < 0 for s in snapshot_steps):
        raise InvalidInput("snapshot_steps", "steps are counted from 0")


# -- the entry -------------------------------------------------------------------------------------
def simulate(
    cfg: SimConfig,
    requests: Sequence[SimRequest] | None = None,
    generator: Generator | None = None,
    snapshot_steps: Sequence[int] = (),
    should_stop: Callable[[], bool] | None = None,
    timing: Timing | None = None,
    chains: Sequence[tuple[int, ...]] | None = None,
    chain_block: int = 0,
) -> SimResult:
    """Simulate the workload (requests, or a generator) on the pool cfg describes. Raises
    InvalidInput for inputs out of range or work over the limits (before running, or when
    preemptions push the run past them), SimulationStopped when should_stop() returns True
    (asked every STOP_CHECK_INTERVAL steps, and every few thousand requests handled). A workload
    whose arrivals are in seconds runs timed, on `timing`'s step-time model."""
    check_config(cfg)
    planned = workload.plan(requests, generator, should_stop, chains, chain_block)
    check_bounds(cfg, workload.size(planned, cfg.block_size))
    check_snapshots(cfg, snapshot_steps)
    timed = workload.is_timed(planned)
    if timed and timing is None:
        raise InvalidInput(
            "gpu",
            "arrivals in seconds need a step-time model: give the model and a GPU that has specs",
        )
    clock = Clock(timing.timer, timing.server) if timed and timing is not None else None
    concurrency = None
    if clock is not None and timing is not None:
        concurrency = generator.concurrency if generator is not None else timing.concurrency
    sched = Scheduler(cfg, planned, should_stop, clock, concurrency, block_ids=bool(snapshot_steps))
    check_fits(cfg, planned, sched.pool.usable)
    recorder = SeriesRecorder()
    snapshots = sched.run(snapshot_steps, recorder.add, recorder.add_run)
    steps = sched.t + 1
    longest = max(q.prompt + q.output for q in sched.reqs)
    formula = sched.pool.usable // cdiv(longest, sched.bs)
    warns = []
    if sched.preemptions:
        warns.append(
            w.Warning(
                w.PREEMPTION,
                f"{sched.preemptions:,} preemptions threw away {sched.recomputed:,} computed tokens to "
                f"be recomputed. To avoid them: more KV memory (the pool peaked at {sched.peak_used:,} "
                f"of {sched.pool.usable:,} usable blocks), a shorter context (the longest request was "
                f"{longest:,} tokens), or fewer sequences (max_num_seqs below the {sched.peak_running:,} "
                "that ran at once).",
            )
        )
    figures = dict(
        steps=steps,
        requests=len(sched.reqs),
        completed=sched.completed,
        preemptions=sched.preemptions,
        recomputed_tokens=sched.recomputed,
        prompt_tokens=sched.prompt_tokens,
        cache_hit_tokens=sched.hit_tokens,
        cache_hit_rate_tokens=sched.hit_tokens / sched.prompt_tokens if sched.prompt_tokens else 0.0,
        cache_hit_blocks=sched.hit_blocks,
        cache_lookup_blocks=sched.lookup_blocks,
        cache_hit_rate_blocks=sched.hit_blocks / sched.lookup_blocks if sched.lookup_blocks else 0.0,
        usable_blocks=sched.pool.usable,
        block_size=sched.bs,
        peak_blocks_in_use=sched.peak_used,
        mean_blocks_in_use=sched.used_area / steps,
        peak_running=sched.peak_running,
        mean_running=sched.running_area / steps,
        formula_concurrency=formula,
        formula_context_tokens=longest,
        tail_waste_tokens_mean=sched.tail_waste_total / sched.completed if sched.completed else 0.0,
        series=recorder.series(),
        warnings=tuple(warns),
        finish_order=tuple(sched.finish_order),
        snapshots=tuple(snapshots),
    )
    if clock is None or timing is None:
        return SimResult(**figures)  # type: ignore[arg-type]
    latency, throughput, goodput = timed_figures(sched, timing.slo)
    return TimedSimResult(
        **figures,  # type: ignore[arg-type]
        latency=latency,
        throughput=throughput,
        goodput=goodput,
        peak_in_flight=_peak_in_flight(sched),
        waiting_s=dict(sorted(sched.waited.items())),
        timing=timing.note,
    )


def _peak_in_flight(sched: Scheduler) -> int:
    """The most requests sent and not yet finished at one time (a finish before a send at the same
    instant: a closed loop's next request replaces the one that ended)."""
    sent = sorted([q.t_arrive for q in sched.reqs])
    done = sorted([q.t_done for q in sched.reqs])
    # The k-th send (from 1) less those finished by then, the same instant included; in C loops.
    in_flight = map(sub, count(1), map(bisect_right, repeat(done), sent))
    return max(0, max(in_flight, default=0))


def timed_figures(sched: Scheduler, slo: GoodputTargets | None) -> tuple[Latency, Throughput, Goodput | None]:
    """What the requests saw, as vllm bench serve counts it (latency.py)."""
    reqs = sched.reqs
    queue = [q.t_sched - q.t_arrive for q in reqs]
    ttft = [q.t_first - q.t_arrive for q in reqs]
    e2e = [q.t_done - q.t_arrive for q in reqs]
    tpot = [(q.t_done - q.t_first) / (q.output - 1) for q in reqs if q.output > 1]
    start = min(q.t_arrive for q in reqs)
    duration = max(q.t_done for q in reqs) - start
    prompt = sum(q.prompt for q in reqs)
    output = sum(q.output for q in reqs)
    per_s = 1 / duration if duration > 0 else 0.0
    latency = Latency(
        queue_ms=distribution(queue),
        ttft_ms=distribution(ttft),
        tpot_ms=distribution(tpot),
        itl_ms=sched.itl.distribution(),
        e2e_ms=distribution(e2e),
    )
    throughput = Throughput(
        duration_s=duration,
        requests_per_s=len(reqs) * per_s,
        output_tokens_per_s=output * per_s,
        total_tokens_per_s=(prompt + output) * per_s,
        input_tokens=prompt,
        output_tokens=output,
    )
    if slo is None:
        return latency, throughput, None
    met = 0
    for q, first, whole in zip(reqs, ttft, e2e, strict=True):
        per_token = (q.t_done - q.t_first) / (q.output - 1) if q.output > 1 else 0.0
        if (
            (slo.ttft_ms is None or first * 1000 <= slo.ttft_ms)
            and (slo.tpot_ms is None or per_token * 1000 <= slo.tpot_ms)
            and (slo.e2e_ms is None or whole * 1000 <= slo.e2e_ms)
        ):
            met += 1
    return latency, throughput, Goodput(slo, met, met / len(reqs), met * per_s)
