"""The scheduler's state machine, and the bound on the steps it takes."""

from __future__ import annotations

import os

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InternalInconsistency, InvalidInput, KvplanError, WorkStopped
from kvplan.core.sim import scheduler
from kvplan.core.sim.scheduler import (
    TRANSITIONS,
    Event,
    Scheduler,
    SchedulerStateError,
    SimConfig,
    SimulationStopped,
    State,
    step_bound,
)
from kvplan.core.sim.simulate import simulate
from kvplan.core.sim.workload import SimRequest, plan, size
from tests.core.simulations import requests_from_spec, workload_specs

EXAMPLES = int(os.environ.get("KVPLAN_PROPERTY_EXAMPLES", "60"))
# A pool that holds two of these requests at most: with prefix caching off, every block the
# oldest takes throws a younger one's work away (25 preemptions).
THRASH_CFG = SimConfig(
    num_blocks=30, block_size=8, max_num_seqs=3, max_num_batched_tokens=3, prefix_caching=False
)
THRASH = [SimRequest(prompt_tokens=120, output_tokens=100, arrival_step=i) for i in range(6)]


def visited_steps(cfg: SimConfig, requests: list[SimRequest]) -> tuple[Scheduler, int]:
    sched = Scheduler(cfg, plan(requests, None))
    steps = []
    sched.run((), lambda *point: steps.append(point[0]))
    return sched, len(steps)


def test_every_pair_outside_the_transition_table_is_refused_as_a_scheduler_defect():
    sched = Scheduler(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=8, block_size=4),
        plan([SimRequest(prompt_tokens=4, output_tokens=2)], None),
    )
    q = sched.reqs[0]
    refused = 0
    for state in State:
        for event in Event:
            if (state, event) in TRANSITIONS:
                continue
            q.state = state
            with pytest.raises(SchedulerStateError):
                sched._transition(q, event)
            refused += 1
    assert refused == len(State) * len(Event) - len(TRANSITIONS)


def test_a_request_walks_pending_waiting_prefilling_decoding_finished_and_the_queues_follow():
    sched = Scheduler(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=8, block_size=4),
        plan([SimRequest(prompt_tokens=4, output_tokens=2)], None),
    )
    q = sched.reqs[0]
    sched._transition(q, Event.ARRIVE)
    assert q.state is State.WAITING and sched.n_waiting == 1
    sched._transition(q, Event.SCHEDULE)
    assert q.state is State.PREFILLING and sched.n_waiting == 0
    assert q.id in sched.running and q.id in sched.prefilling
    sched._transition(q, Event.PREFILL_DONE)
    assert q.state is State.DECODING and q.id in sched.running and q.id not in sched.prefilling
    sched._transition(q, Event.PREEMPT)
    assert q.state is State.PREEMPTED and q.id not in sched.running and sched.n_waiting == 1
    sched._transition(q, Event.SCHEDULE)
    sched._transition(q, Event.PREFILL_DONE)
    sched._transition(q, Event.FINISH)
    assert q.state is State.FINISHED and not sched.running and sched.n_waiting == 0


def test_a_preempted_request_goes_back_to_the_front_of_the_waiting_queue():
    sched = Scheduler(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=8, block_size=4),
        plan(
            [SimRequest(prompt_tokens=4, output_tokens=2), SimRequest(prompt_tokens=4, output_tokens=2)], None
        ),
    )
    a, b = sched.reqs
    sched._transition(a, Event.ARRIVE)
    sched._transition(a, Event.SCHEDULE)
    sched._transition(b, Event.ARRIVE)
    sched._transition(a, Event.PREEMPT)
    assert [q.id for q in sched.waiting] == [a.id, b.id]


@settings(max_examples=EXAMPLES, deadline=None, derandomize=bool(os.environ.get("CI")))
@given(
    workload_specs(arrival=40, prompt=90, output=60, size=30),
    st.integers(8, 200),
    st.sampled_from([1, 4, 16]),
    st.integers(1, 8),
    st.integers(0, 40),
    st.sampled_from(["fcfs", "priority"]),
    st.booleans(),
)
def test_the_steps_visited_never_exceed_the_documented_bound(
    spec, blocks, bs, seqs, extra_budget, policy, caching
):
    requests = requests_from_spec(spec)
    cfg = SimConfig(
        num_blocks=blocks,
        block_size=bs,
        max_num_seqs=seqs,
        max_num_batched_tokens=seqs + extra_budget,
        policy=policy,
        prefix_caching=caching,
    )
    fits = [r for r in requests if -(-(r.prompt_tokens + r.output_tokens - 1) // bs) <= blocks - 1]
    assume(fits)  # an example where nothing fits is not a pass
    sched, visited = visited_steps(cfg, fits)
    workload = size(plan(fits, None), bs)
    bound, _ = step_bound(cfg, workload)
    if sched.preemptions == 0:
        assert visited <= bound
        tokens = workload.prompt_tokens + workload.output_tokens
        assert sched.pool.allocated <= tokens // bs + workload.requests
    else:  # recompute costs its tokens in chunks and a few steps a preemption (see step_bound)
        recompute = -(-sched.recomputed // cfg.max_num_batched_tokens)
        assert visited <= bound + recompute + 10 * sched.preemptions


def test_the_bound_holds_for_a_queue_behind_one_sequence_that_takes_three_steps_a_request():
    # Each request: the step it arrives (while another decodes), the step it is admitted and
    # prefilled, the step it samples its last token.
    cfg = SimConfig(num_blocks=100, block_size=64, max_num_seqs=1, max_num_batched_tokens=8192)
    queue = [SimRequest(prompt_tokens=10, output_tokens=30, arrival_step=i) for i in range(20)]
    _, visited = visited_steps(cfg, queue)
    bound, prefill = step_bound(cfg, size(plan(queue, None), 64))
    assert visited == 59 and prefill == 1
    assert visited <= bound


def test_the_steps_bound_is_tight_enough_for_the_sizes_benchmark():
    # 10,000 requests of ~1,200 tokens are bounded by ~210,000 steps, far below the limit.
    from kvplan.core.sim.workload import Generator, Lognormal

    g = Generator(
        count=10_000,
        arrival_rate=0.2,
        prompt=Lognormal(mean=1000, sigma=0.5),
        output=Lognormal(mean=200, sigma=0.5),
        system_prompt_share=0.3,
        system_prompt_tokens=512,
        seed=11,
    )
    cfg = SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=40 * 1300 // 16, block_size=16)
    bound, _ = step_bound(cfg, size(plan(None, g), 16))
    assert 150_000 < bound < 250_000 < scheduler.MAX_SIMULATED_STEPS


def test_preemptions_that_recompute_past_the_step_limit_stop_the_run_with_a_400(monkeypatch):
    sched, visited = visited_steps(THRASH_CFG, THRASH)
    bound, _ = step_bound(THRASH_CFG, size(plan(THRASH, None), 8))
    assert sched.preemptions > 10 and visited > bound  # recompute costs steps the bound leaves out
    monkeypatch.setattr(scheduler, "MAX_SIMULATED_STEPS", (bound + visited) // 2)
    with pytest.raises(InvalidInput) as e:
        simulate(THRASH_CFG, THRASH)
    assert e.value.field == "workload" and "preemptions" in e.value.reason


def test_preemptions_that_recompute_past_the_block_limit_stop_the_run_with_a_400(monkeypatch):
    sched, _ = visited_steps(THRASH_CFG, THRASH)
    up_front = (6 * 220) // 8 + 6
    assert sched.pool.allocated > up_front
    monkeypatch.setattr(scheduler, "MAX_BLOCK_EVENTS", (up_front + sched.pool.allocated) // 2)
    with pytest.raises(InvalidInput) as e:
        simulate(THRASH_CFG, THRASH)
    assert e.value.field == "workload" and "blocks handed out" in e.value.reason


def test_should_stop_stops_the_run_at_its_next_check():
    calls = []

    def stop_on_third_call() -> bool:
        calls.append(1)
        return len(calls) >= 3

    with pytest.raises(SimulationStopped) as e:
        simulate(THRASH_CFG, THRASH, should_stop=stop_on_third_call)
    assert len(calls) == 3 and "stopped at simulated step" in e.value.reason


def test_should_stop_is_asked_once_every_few_steps_and_changes_nothing_when_false():
    calls = []
    _, visited = visited_steps(THRASH_CFG, THRASH)
    quiet = simulate(THRASH_CFG, THRASH, should_stop=lambda: bool(calls.append(1)))
    assert len(calls) == (visited - 1) // scheduler.STOP_CHECK_INTERVAL
    assert quiet == simulate(THRASH_CFG, THRASH)


def test_a_stopped_simulation_is_no_input_error_and_a_scheduler_defect_is_an_internal_one():
    # Stopped work is neither bad input (4xx) nor a defect (500): the API answers 503.
    assert issubclass(SimulationStopped, WorkStopped) and not issubclass(SimulationStopped, KvplanError)
    assert issubclass(SchedulerStateError, InternalInconsistency)
    assert not issubclass(SchedulerStateError, KvplanError)
