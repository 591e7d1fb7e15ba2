"""The scheduler's state machine, driven by real runs, and the bound on the steps it takes."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput, SchedulerStateError, SimulationStopped
from kvplan.core.sim import scheduler
from kvplan.core.sim.config import SimConfig, step_bound
from kvplan.core.sim.scheduler import Event, Scheduler, State
from kvplan.core.sim.simulate import simulate
from kvplan.core.sim.workload import SimRequest, plan, size
from tests.core.simulations import loaded_server, requests_from_spec, workload_specs

EXAMPLES = int(os.environ.get("KVPLAN_PROPERTY_EXAMPLES", "60"))
# A pool that holds two of these requests at most: with prefix caching off, every block the
# oldest takes throws a younger one's work away (25 preemptions).
THRASH_CFG = SimConfig(
    num_blocks=30, block_size=8, max_num_seqs=3, max_num_batched_tokens=3, prefix_caching=False
)
THRASH = [SimRequest(prompt_tokens=120, output_tokens=100, arrival_step=i) for i in range(6)]
# On the same pool, shorter prompts: prefilling and decoding requests are both preempted (14
# times), and each step moves a request by one event, so every edge of the lifecycle shows.
PREEMPTING = [SimRequest(prompt_tokens=60, output_tokens=100, arrival_step=i) for i in range(6)]

# vLLM's request lifecycle (vllm/v1/request.py RequestStatus, vllm/v1/core/sched/scheduler.py),
# written here independently of the scheduler's table: every other (state, event) is refused.
LIFECYCLE = {
    (State.PENDING, Event.ARRIVE): State.WAITING,
    (State.WAITING, Event.SCHEDULE): State.PREFILLING,
    (State.PREEMPTED, Event.SCHEDULE): State.PREFILLING,  # recomputed from its first token
    (State.PREFILLING, Event.PREFILL_DONE): State.DECODING,
    (State.PREFILLING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.PREEMPT): State.PREEMPTED,
    (State.DECODING, Event.FINISH): State.FINISHED,
}
QUEUED = {State.WAITING, State.PREEMPTED}
RUNNING = {State.PREFILLING, State.DECODING}


def visited_steps(cfg: SimConfig, requests: list[SimRequest]) -> tuple[Scheduler, int]:
    sched = Scheduler(cfg, plan(requests, None))
    steps = []
    sched.run((), lambda *point: steps.append(point[0]))
    return sched, len(steps)


def states(sched: Scheduler) -> list[State]:
    return [q.state for q in sched.reqs]


def picture(sched: Scheduler) -> tuple[Any, ...]:
    """Everything a caller can see of a scheduler between steps: every request's state, the
    queues, the block tables and the pool."""
    pool = sched.pool
    return (
        states(sched),
        sched.snapshot(sched.t),
        list(sched.running),
        list(sched.prefilling),
        sched.n_waiting,
        (pool.num_free, pool.allocated, pool.cached_free, pool.in_use),
    )


def run_observing(cfg: SimConfig, requests: list[SimRequest], look: Callable[[Scheduler], None]) -> Scheduler:
    """A real run; `look` sees the scheduler after every step the loop visits."""
    sched = Scheduler(cfg, plan(requests, None))
    sched.run((), lambda *point: look(sched))
    return sched


def reachable(start: State, end: State) -> bool:
    """Whether the lifecycle leads from start to end in zero or more events (a step can send a
    request several: admitted, prefilled and sampled in one)."""
    seen, todo = {start}, [start]
    while todo:
        s = todo.pop()
        for (frm, _), to in LIFECYCLE.items():
            if frm is s and to not in seen:
                seen.add(to)
                todo.append(to)
    return end in seen


def test_in_every_state_a_run_reaches_an_event_outside_the_lifecycle_is_refused_and_changes_nothing():
    refused: set[tuple[State, Event]] = set()
    behind_the_head = 0
    checked: set[tuple[int, State]] = set()

    def refuse(sched: Scheduler, rid: int, event: Event, why: str) -> None:
        before = picture(sched)
        with pytest.raises(SchedulerStateError) as e:
            sched.process_event(rid, event)
        assert why in str(e.value)
        assert picture(sched) == before

    def send_every_refused_event(sched: Scheduler) -> None:
        nonlocal behind_the_head
        waiting = sched.snapshot(sched.t).waiting
        for q in sched.reqs:
            if (q.id, q.state) in checked:
                continue
            checked.add((q.id, q.state))
            for event in Event:
                if (q.state, event) not in LIFECYCLE:
                    refuse(sched, q.id, event, f"no transition from {q.state.value} on {event.value}")
                    refused.add((q.state, event))
                elif event is Event.SCHEDULE and q.id != waiting[0]:  # admission takes the head only
                    refuse(sched, q.id, event, "admitted from behind the queue's head")
                    behind_the_head += 1

    sched = run_observing(THRASH_CFG, PREEMPTING, send_every_refused_event)
    assert sched.preemptions > 0 and states(sched) == [State.FINISHED] * len(PREEMPTING)
    # The run put requests in all six states, so every pair outside the lifecycle was sent.
    assert {s for _, s in checked} == set(State)
    assert refused == {(s, e) for s in State for e in Event} - set(LIFECYCLE)
    assert behind_the_head > 0


def test_every_request_of_a_run_follows_vllms_lifecycle_and_sits_in_the_queue_its_state_names():
    seen: list[list[State]] = []
    moves: set[tuple[State, State]] = set()

    def look(sched: Scheduler) -> None:
        now = states(sched)
        if seen:
            for i, (was, is_) in enumerate(zip(seen[-1], now, strict=True)):
                assert reachable(was, is_), f"request {i}: {was.value} → {is_.value}"
                if was is not is_:
                    moves.add((was, is_))
        seen.append(now)
        snap = sched.snapshot(sched.t)
        assert {t.request: t.state for t in snap.tables} == {
            i: s.value for i, s in enumerate(now) if s in RUNNING
        }
        assert sorted(snap.waiting) == [i for i, s in enumerate(now) if s in QUEUED]
        assert list(snap.finished) == [i for i, s in enumerate(now) if s is State.FINISHED]

    sched = run_observing(THRASH_CFG, PREEMPTING, look)
    assert seen[0][0] is State.PREFILLING and seen[0][1:] == [State.PENDING] * 5  # one arrival a step
    assert seen[-1] == [State.FINISHED] * len(PREEMPTING) and sched.completed == len(PREEMPTING)
    # Every edge of the lifecycle happened, each on its own step, and nothing else did.
    assert moves == {(frm, to) for (frm, _), to in LIFECYCLE.items()}


def test_a_preempted_request_waits_at_the_front_of_the_queue_and_the_others_in_arrival_order():
    preempted_at_front = 0
    last: list[State] = []

    def look(sched: Scheduler) -> None:
        nonlocal preempted_at_front, last
        now = states(sched)
        waiting = list(sched.snapshot(sched.t).waiting)
        just_preempted = {
            i for i, s in enumerate(now) if s is State.PREEMPTED and last and last[i] is not State.PREEMPTED
        }
        if just_preempted:
            assert set(waiting[: len(just_preempted)]) == just_preempted
            preempted_at_front += 1
        behind = [i for i in waiting if now[i] is State.WAITING]
        assert waiting[len(waiting) - len(behind) :] == sorted(behind)  # arrival order: ids here
        last = now

    run_observing(THRASH_CFG, PREEMPTING, look)
    assert preempted_at_front > 5


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
    cfg, g = loaded_server(10_000)
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


def test_should_stop_is_asked_once_every_few_steps_and_changes_nothing_when_false(monkeypatch):
    # Besides once every STOP_CHECK_INTERVAL steps visited (a run of decode steps counts the
    # steps that cross a block boundary, and is checked at its end), it is asked once the requests
    # are checked, once as they are queued, and every STOP_CHECK_REQUESTS requests handled within
    # steps (off here).
    monkeypatch.setattr(scheduler, "STOP_CHECK_REQUESTS", 1 << 40)
    calls = []
    _, visited = visited_steps(THRASH_CFG, THRASH)
    quiet = simulate(THRASH_CFG, THRASH, should_stop=lambda: bool(calls.append(1)))
    assert 2 < len(calls) <= (visited - 1) // scheduler.STOP_CHECK_INTERVAL + 2
    assert quiet == simulate(THRASH_CFG, THRASH)


def test_a_request_that_added_to_the_shared_empty_table_voids_its_run_and_empties_it_for_the_next():
    from kvplan.core.sim.request import NO_BLOCKS

    NO_BLOCKS.append(7)  # as a request appending to the table it shares with every other would
    with pytest.raises(SchedulerStateError, match="shared empty block table"):
        Scheduler(THRASH_CFG, plan(THRASH, None)).run()
    assert NO_BLOCKS == []
    assert simulate(THRASH_CFG, THRASH).completed == len(THRASH)
