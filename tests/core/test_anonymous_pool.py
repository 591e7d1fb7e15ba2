"""The pool that names only the blocks a lookup can find (core/sim/anonpool.py) gives every figure
the pool of block ids gives: the same steps, preemptions, hits, finish order, and blocks in use
and cached free after every step the loop sees."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.errors import SchedulerStateError
from kvplan.core.sim.anonpool import AnonymousPool
from kvplan.core.sim.config import SimConfig
from kvplan.core.sim.scheduler import Scheduler
from kvplan.core.sim.workload import SimRequest, plan

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


def figures(cfg: SimConfig, reqs: list[SimRequest], block_ids: bool) -> tuple[object, ...]:
    seen: list[Point] = []
    sched = Scheduler(cfg, plan(reqs, None), block_ids=block_ids)
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


def test_a_scheduler_without_block_ids_refuses_a_snapshot():
    cfg = SimConfig(num_blocks=10, block_size=4, max_num_seqs=2, max_num_batched_tokens=64)
    sched = Scheduler(cfg, plan([SimRequest(prompt_tokens=5, output_tokens=3)], None), block_ids=False)
    try:
        sched.run([1])
    except SchedulerStateError as e:
        assert "block ids" in str(e)
    else:
        raise AssertionError("a snapshot of anonymous blocks was taken")
