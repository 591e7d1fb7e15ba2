"""The pool that names only the blocks a lookup can find (core/sim/anonpool.py) gives every figure
the pool of block ids gives: the same steps, preemptions, hits, finish order, and blocks in use
and cached free after every step the loop sees."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.errors import SchedulerStateError
from kvplan.core.sim.anonpool import ANON, AnonymousPool
from kvplan.core.sim.clock import Clock
from kvplan.core.sim.config import SimConfig
from kvplan.core.sim.scheduler import Scheduler
from kvplan.core.sim.workload import Conversations, Generator, SimRequest, Uniform, plan
from tests.core.test_sim_clock import LinearTimer

Point = tuple[int, ...]

requests = st.lists(
    st.tuples(
        st.integers(0, 80),  # arrival step
        st.integers(1, 120),  # prompt tokens beyond the prefix
        st.integers(1, 160),  # output tokens
        st.sampled_from([None, "a", "b"]),  # the shared prefix
        st.integers(1, 70),  # its tokens
    ),
    min_size=1,
    max_size=16,
)


def figures(
    cfg: SimConfig, reqs: list[SimRequest] | None, block_ids: bool, generator: Generator | None = None
) -> tuple[object, ...]:
    seen: list[Point] = []
    timed = generator is not None and generator.arrival_rate_per_s is not None
    sched = Scheduler(
        cfg, plan(reqs, generator), None, Clock(LinearTimer()) if timed else None, block_ids=block_ids
    )
    sched.run(observe=lambda *p: seen.append(p))
    return (
        sched.t,
        sched.finish_order,
        sched.preemptions,
        sched.recomputed,
        sched.hit_tokens,
        sched.hit_blocks,
        sched.used_area,
        sched.peak_used,
        sched.tail_waste_total,
        sched.pool.num_free,
        sched.pool.cached_free,
        sched.pool.allocated,
        seen,
    )


@settings(max_examples=200, deadline=None)
@given(
    requests,
    st.integers(6, 100),
    st.sampled_from([1, 2, 4, 16]),
    st.integers(1, 8),
    st.sampled_from(["fcfs", "priority"]),
    st.booleans(),
    st.booleans(),
)
def test_naming_only_keyed_blocks_changes_no_figure(spec, blocks, bs, seqs, policy, caching, full_sequence):
    cfg = SimConfig(
        num_blocks=blocks,
        block_size=bs,
        max_num_seqs=seqs,
        max_num_batched_tokens=max(seqs, 48),
        policy=policy,
        prefix_caching=caching,
        admit_full_sequence=full_sequence,
    )
    reqs = [
        SimRequest(
            arrival_step=a,
            prompt_tokens=p + (k if prefix else 0),
            output_tokens=o,
            prefix_id=prefix,
            prefix_tokens=k if prefix else 0,
            priority=a % 3,
        )
        for a, p, o, prefix, k in spec
    ]
    reqs = [r for r in reqs if -(-(r.prompt_tokens + r.output_tokens - 1) // bs) <= blocks - 1]
    assume(reqs)
    assert figures(cfg, reqs, block_ids=False) == figures(cfg, reqs, block_ids=True)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 60),
    st.sampled_from([0.3, 3.0]),
    st.floats(0, 1),
    st.integers(1, 3),
    st.integers(8, 120),
    st.sampled_from([1, 4, 16]),
    st.booleans(),
    st.integers(0, 10_000),
)
def test_conversations_and_system_prompts_timed_or_not_see_the_same_figures_without_block_ids(
    count, rate, share, turns, blocks, bs, timed, seed
):
    cfg = SimConfig(num_blocks=blocks, block_size=bs, max_num_seqs=6, max_num_batched_tokens=64)
    usable = (blocks - 1) * bs
    gen = Generator(
        count=count,
        arrival_rate=None if timed else rate,
        arrival_rate_per_s=rate * 10 if timed else None,
        prompt=Uniform(low=1, high=max(1, usable // (4 * turns + 4))),
        output=Uniform(low=1, high=max(1, usable // (4 * turns + 4))),
        system_prompt_share=share,
        system_prompt_tokens=min(24, usable // 8),
        conversations=Conversations(
            share=share, turns=turns, user_tokens=3, think_steps=2, think_time_s=0.01
        ),
        seed=seed,
    )
    try:
        reference = figures(cfg, None, True, gen)
    except Exception as e:  # a conversation's last turn that fits no pool: refused alike
        with pytest.raises(type(e)):
            figures(cfg, None, False, gen)
        return
    assert figures(cfg, None, False, gen) == reference


def test_a_preempted_requests_blocks_get_names_and_free_to_the_tail():
    pool = AnonymousPool(10)
    table = pool.allocate(4)
    pool.cache_run(table, [11, 12, 13], 0, 3)  # keyed, as a preempted request's full blocks
    assert all(b > 0 for b in table[:3])
    pool.free(table)
    assert (pool.num_free, pool.cached_free, pool.uncached_free) == (9, 3, 6)
    assert pool.longest_hit([11, 12, 99], 3) == table[:2]


def test_sealed_blocks_are_evicted_oldest_first_and_take_their_keys_with_them():
    pool = AnonymousPool(7)
    first = pool.allocate(3)
    pool.cache_run(first, [1], 0, 1)
    pool.seal(first, 1, 3)
    pool.free(first)  # tail: its sealed run (2), then its keyed block
    second = pool.allocate(3)
    pool.free(second)  # unhashed: back to the head
    assert pool.cached_free == 3 and pool.longest_hit([1], 1) == first[:1]
    pool.allocate(6)  # 3 unhashed, then the sealed run, then the keyed block
    assert pool.cached_free == 0 and pool.longest_hit([1], 1) == []


def test_part_of_a_sealed_run_is_evicted_and_the_rest_stays_oldest():
    pool = AnonymousPool(9)
    first = pool.allocate(4)
    pool.seal(first, 0, 4)
    pool.free(first)  # tail: a run of 4 sealed blocks
    keyed = pool.allocate(5)  # the 4 unhashed, then one of the run
    pool.cache_run(keyed, [7], 0, 1)
    pool.free(keyed)  # tail: the run's 3 left, then the keyed block
    assert (pool.cached_free, pool.uncached_free) == (4, 4)
    pool.allocate(7)  # the 4 unhashed, then the run's 3: the keyed block, newest, stays
    assert pool.longest_hit([7], 1) == keyed[:1] and pool.cached_free == 1


def test_a_table_whose_named_blocks_are_not_first_is_refused():
    pool = AnonymousPool(9)
    table = pool.allocate(2)
    pool.cache_run(table, [4, 5], 1, 2)  # names the second block only
    with pytest.raises(SchedulerStateError, match="named blocks"):
        pool.free(table)
    assert table[0] == ANON


def test_a_scheduler_without_block_ids_refuses_a_snapshot():
    cfg = SimConfig(num_blocks=10, block_size=4, max_num_seqs=2, max_num_batched_tokens=64)
    sched = Scheduler(cfg, plan([SimRequest(prompt_tokens=5, output_tokens=3)], None), block_ids=False)
    with pytest.raises(SchedulerStateError, match="block ids"):
        sched.run([1])
