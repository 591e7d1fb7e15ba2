"""The block-pool simulator: vLLM's scheduler, step by step, on its block pool."""

from __future__ import annotations

import os

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.sim.anonpool import AnonymousPool
from kvplan.core.sim.scheduler import Scheduler
from kvplan.core.sim.simulate import (
    Conversations,
    Fixed,
    Generator,
    SimConfig,
    SimRequest,
    simulate,
)
from kvplan.core.sim.workload import plan
from tests.core.simulations import loaded_server, requests_from_spec, workload_specs


def test_a_workload_beyond_capacity_preempts_and_recomputes_as_traced_by_hand():
    # Block 4 tokens, 4 usable blocks. A and B (prompt 4, output 6) arrive together.
    # Step 0: A and B prefill into one block each and sample token 1.
    # Step 1: both cross into a second block (tokens 5): the pool is now full.
    # Step 5: A needs a third block (tokens 9): B, the last running, is preempted with
    #         4 + 5 − 1 = 8 tokens computed; its two full blocks are cached and freed.
    #         A takes B's second block (evicting its hash) and finishes at the end of the step.
    # Step 6: B comes back: 9 tokens, its first block is still cached (4 tokens hit); it
    #         computes the other 5, samples its 6th and last token and finishes.
    cfg = SimConfig(num_blocks=5, block_size=4, max_num_seqs=2, max_num_batched_tokens=100)
    r = simulate(
        cfg, [SimRequest(prompt_tokens=4, output_tokens=6), SimRequest(prompt_tokens=4, output_tokens=6)]
    )
    assert (r.steps, r.completed, r.preemptions, r.recomputed_tokens) == (7, 2, 1, 8)
    assert (r.cache_hit_tokens, r.prompt_tokens) == (4, 4 + 4 + 9)
    assert r.peak_blocks_in_use == 4
    assert r.peak_running == 2
    assert r.tail_waste_tokens_mean == 3
    assert [w.code for w in r.warnings] == ["preemption"]
    assert "more KV memory" in r.warnings[0].message


def test_a_shared_system_prompt_holds_more_than_the_formula_and_hits_as_computed():
    # 20 requests of 512 shared + 16 own prompt tokens and 16 output tokens, all at step 0.
    # Worst case: cdiv(544, 16) = 34 blocks each, 100 usable → the formula holds 2.
    # Shared: 32 prefix blocks once + 2 own blocks each → all 20 fit (32 + 40 = 72).
    cfg = SimConfig(num_blocks=101, block_size=16, max_num_seqs=256, max_num_batched_tokens=8192)
    reqs = [
        SimRequest(prompt_tokens=528, output_tokens=16, prefix_id="sys", prefix_tokens=512) for _ in range(20)
    ]
    r = simulate(cfg, reqs)
    assert r.formula_concurrency == 2
    assert r.peak_running == 20 > r.formula_concurrency
    assert r.preemptions == 0 and r.completed == 20
    # The first request computes the prefix; the other 19 hit all 32 of its blocks.
    assert r.cache_hit_tokens == 19 * 512
    assert r.cache_hit_rate_tokens == pytest.approx(19 * 512 / (20 * 528))
    assert r.cache_hit_rate_blocks == pytest.approx(19 * 32 / (20 * 33))
    assert r.peak_blocks_in_use == 32 + 20 * 2


def test_unique_prompts_hit_nothing():
    cfg = SimConfig(
        max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=300, block_size=16
    )  # 10 × cdiv(319, 16) = 200 blocks fit in 299
    r = simulate(cfg, [SimRequest(prompt_tokens=300, output_tokens=20, arrival_step=i) for i in range(10)])
    assert r.cache_hit_tokens == 0 and r.preemptions == 0 and r.completed == 10


def test_multi_turn_conversations_reuse_their_history():
    cfg = SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=4000, block_size=16)
    g = Generator(
        count=50,
        arrival_rate=0.05,
        prompt=Fixed(value=256),
        output=Fixed(value=64),
        conversations=Conversations(share=1.0, turns=3, user_tokens=32, think_steps=5),
        seed=3,
    )
    r = simulate(cfg, generator=g)
    assert r.requests == 150 and r.completed == 150
    assert r.cache_hit_rate_tokens > 0.4


def test_a_given_seed_always_gives_the_same_result():
    cfg, g = loaded_server(300)
    assert simulate(cfg, generator=g) == simulate(cfg, generator=g)
    assert simulate(cfg, generator=g) != simulate(cfg, generator=msgspec_replace(g, seed=8))


def msgspec_replace(g, **kw):
    from msgspec.structs import replace

    return replace(g, **kw)


def test_priority_policy_preempts_the_lowest_priority():
    cfg = SimConfig(num_blocks=5, block_size=4, max_num_seqs=2, max_num_batched_tokens=100, policy="priority")
    reqs = [
        SimRequest(prompt_tokens=4, output_tokens=6, priority=5),
        SimRequest(prompt_tokens=4, output_tokens=6),
    ]
    r = simulate(cfg, reqs)
    assert r.preemptions == 1 and r.completed == 2


def test_the_series_is_sampled_to_at_most_500_points():
    cfg = SimConfig(max_num_batched_tokens=8192, num_blocks=500, block_size=16, max_num_seqs=32)
    g = Generator(count=2000, arrival_rate=0.3, prompt=Fixed(value=200), output=Fixed(value=100), seed=1)
    r = simulate(cfg, generator=g)
    assert 1 < len(r.series) <= 500
    assert max(p.blocks_used for p in r.series) == r.peak_blocks_in_use


@pytest.mark.parametrize(
    ("reqs", "field"),
    [
        ([SimRequest(prompt_tokens=-5, output_tokens=3)], "workload.requests[0].prompt_tokens"),
        ([SimRequest(prompt_tokens=5, output_tokens=0)], "workload.requests[0].output_tokens"),
        (
            [SimRequest(prompt_tokens=5, output_tokens=3, arrival_step=-1)],
            "workload.requests[0].arrival_step",
        ),
        (
            [SimRequest(prompt_tokens=5, output_tokens=3, prefix_id="p", prefix_tokens=9)],
            "workload.requests[0].prefix_tokens",
        ),
        (
            [SimRequest(prompt_tokens=4, output_tokens=3), SimRequest(prompt_tokens=400, output_tokens=100)],
            "workload.requests[1]",
        ),
    ],
)
def test_bad_workloads_name_the_field(reqs, field):
    with pytest.raises(InvalidInput) as e:
        simulate(SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=20, block_size=16), reqs)
    assert e.value.field == field


def test_a_request_longer_than_the_pool_is_answered_not_looped():
    with pytest.raises(InvalidInput) as e:
        simulate(
            SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=3, block_size=16),
            [SimRequest(prompt_tokens=100, output_tokens=1)],
        )
    assert "can never run" in e.value.reason


def test_sizes_past_the_limits_are_refused():
    with pytest.raises(InvalidInput):
        simulate(
            SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=100, block_size=16),
            generator=Generator(count=10**6, arrival_rate=1, prompt=Fixed(value=4000), output=Fixed(value=9)),
        )


class AuditedSim(Scheduler):
    """Checks the pool's invariants after every simulated step."""

    def step(self, t: int) -> None:
        super().step(t)
        pool = self.pool
        if isinstance(pool, AnonymousPool):
            self._audit_counts(pool)
            return
        free = set(pool.free_queue())
        assert len(free) == pool.num_free
        assert 0 not in free
        for b in range(1, pool.num_blocks):
            assert (b in free) == (pool.ref_cnt(b) == 0), b  # never both free and referenced
        held = sum(len(q.blocks) for q in self.running.values())
        assert pool.in_use <= pool.usable
        assert held >= pool.in_use  # shared blocks are counted once by the pool

    def _audit_counts(self, pool: AnonymousPool) -> None:
        """The pool without block ids: its counts add up, and what it names is consistent."""
        tail = pool._tail
        assert sum(tail.values()) == pool.cached_free
        assert pool.uncached_free + pool.cached_free == pool.num_free <= pool.usable
        assert len(pool.ref) <= pool.usable
        for b, r in pool.ref.items():
            assert (b in tail) == (r == 0), b  # a named block idle in the tail, or referenced
            if r == 0:
                assert pool.hash_of[b] is not None, b  # only hashed blocks wait in the tail
        for key, b in pool._cached.items():
            assert pool.hash_of[b] == key
        for q in self.running.values():
            named = [x > 0 for x in q.blocks]
            assert named == sorted(named, reverse=True), q.id  # named blocks first


@pytest.mark.source
@settings(
    max_examples=int(os.environ.get("KVPLAN_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
)
@given(
    workload_specs(arrival=30, prompt=60, output=40, size=25),
    st.integers(6, 40),
    st.sampled_from([4, 8, 16]),
    st.integers(1, 8),
    st.sampled_from(["fcfs", "priority"]),
    st.booleans(),
)
def test_pool_invariants_hold_and_every_request_finishes(spec, blocks, bs, seqs, policy, block_ids):
    reqs = requests_from_spec(spec)
    cfg = SimConfig(
        num_blocks=blocks, block_size=bs, max_num_seqs=seqs, max_num_batched_tokens=64, policy=policy
    )
    fits = [r for r in reqs if -(-(r.prompt_tokens + r.output_tokens - 1) // bs) <= blocks - 1]
    assume(fits)  # an example where nothing fits is not a pass
    sim = AuditedSim(cfg, plan(fits, None), block_ids=block_ids)
    sim.run()
    assert sim.completed == len(fits)
    assert sim.pool.in_use == 0
    assert sim.peak_used <= sim.pool.usable


def test_snapshots_show_block_tables_ref_counts_and_the_free_queue():
    # The seed's picture: A and B share two prefix blocks; A has 6 private blocks, B 4 (then 5).
    cfg = SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=16, block_size=16)
    reqs = [
        SimRequest(prompt_tokens=120, output_tokens=9, prefix_id="sys", prefix_tokens=32),
        SimRequest(prompt_tokens=72, output_tokens=17, prefix_id="sys", prefix_tokens=32),
    ]
    both, a_done, all_done = simulate(cfg, reqs, snapshot_steps=[4, 10, 20]).snapshots
    a, b = both.tables
    assert a.blocks[:2] == b.blocks[:2] == (1, 2)
    assert len(a.blocks) == 8 and len(b.blocks) == 5
    assert both.ref_cnt[1] == both.ref_cnt[2] == 2
    assert a_done.finished == (0,) and a_done.ref_cnt[1] == a_done.ref_cnt[2] == 1
    assert all_done.ref_cnt == {} and all_done.free_queue[-2:] == (2, 1)
    assert set(all_done.cached) >= {1, 2}
