"""Runs of decode steps advanced at once (core/sim/runs.py) leave the pool exactly as visiting
every step does: the same block tables, ref counts and free queue after every step, the same
preemptions and finish order, the same area under the pool's use."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kvplan.core.sim import runs
from kvplan.core.sim.config import SimConfig
from kvplan.core.sim.request import Request
from kvplan.core.sim.scheduler import Scheduler
from kvplan.core.sim.workload import SimRequest, plan
from tests.core.simulations import requests_from_spec, workload_specs


class EveryStep(Scheduler):
    """The reference: visits every step while anything runs or waits, so each step's block
    boundaries are crossed by the step itself."""

    def next_step(self) -> int | None:
        if self.running or self.n_waiting:
            return self.t + 1
        return super().next_step()


def run(kind: type[Scheduler], cfg: SimConfig, spec, steps: list[int]) -> tuple[Scheduler, list]:  # type: ignore[no-untyped-def]
    sched = kind(cfg, plan(requests_from_spec(spec), None))
    return sched, sched.run(steps)


@pytest.mark.source
@settings(max_examples=150, deadline=None)
@given(
    workload_specs(arrival=60, prompt=90, output=200, size=14),
    st.integers(8, 120),
    st.sampled_from([1, 2, 4, 16, 64]),
    st.integers(1, 8),
    st.sampled_from(["fcfs", "priority"]),
    st.booleans(),
    st.lists(st.integers(0, 300), max_size=6),
)
def test_advancing_decode_runs_at_once_leaves_the_pool_as_every_step_does(
    spec, blocks, bs, seqs, policy, caching, steps
):
    cfg = SimConfig(
        num_blocks=blocks,
        block_size=bs,
        max_num_seqs=seqs,
        max_num_batched_tokens=max(seqs, 64),
        policy=policy,
        prefix_caching=caching,
    )
    spec = [s for s in spec if -(-(s[1] + (16 if s[3] else 0) + s[2] - 1) // bs) <= blocks - 1]
    assume(spec)
    fast, fast_snaps = run(Scheduler, cfg, spec, steps)
    slow, slow_snaps = run(EveryStep, cfg, spec, steps)
    assert fast_snaps == slow_snaps
    assert fast.finish_order == slow.finish_order and fast.t == slow.t
    assert (fast.preemptions, fast.recomputed) == (slow.preemptions, slow.recomputed)
    assert (fast.used_area, fast.peak_used) == (slow.used_area, slow.peak_used)
    assert fast.pool.free_queue() == slow.pool.free_queue()
    assert fast.visited <= slow.visited


@pytest.mark.source
def test_a_long_run_of_large_blocks_walks_its_crossings_not_its_steps(monkeypatch):
    # 4 requests decoding 4M tokens each in blocks of 65,536: 4M steps, 61 of them crossing. Visiting
    # every step of the run would take seconds; the crossings alone, milliseconds.
    cfg = SimConfig(num_blocks=2000, block_size=65536, max_num_seqs=4, max_num_batched_tokens=65536)
    sched = Scheduler(cfg, plan([SimRequest(prompt_tokens=10, output_tokens=4_000_000)] * 4, None))
    walked: list[int] = []
    hand_out = runs._hand_out

    def counted(s: Scheduler, run: runs.Crossings, blocks: list[int]) -> None:
        walked.append(run.count)
        hand_out(s, run, blocks)

    monkeypatch.setattr(runs, "_hand_out", counted)
    sched.run()
    assert sched.t + 1 == 4_000_000 and sched.visited < 10 and sum(walked) == 61  # steps crossing
    assert sched.pool.allocated == 4 * 62


class OneAtATime(EveryStep):
    """The reference for a step's crossings: each takes its block in turn (Scheduler._alloc)."""

    def _cross_at_once(self, crossing: list[Request], t: int) -> None:
        return


@pytest.mark.source
@settings(max_examples=150, deadline=None)
@given(
    workload_specs(arrival=20, prompt=120, output=60, size=12),
    st.integers(8, 80),
    st.sampled_from([1, 2, 4]),
    st.integers(2, 6),
    st.integers(6, 24),
    st.booleans(),
    st.lists(st.integers(0, 120), max_size=6),
)
def test_a_steps_crossings_taken_at_once_get_the_blocks_one_at_a_time_gets(
    spec, blocks, bs, seqs, budget, caching, steps
):
    cfg = SimConfig(
        num_blocks=blocks,
        block_size=bs,
        max_num_seqs=seqs,
        max_num_batched_tokens=max(seqs, budget),  # small: prompts go in chunks beside decodes
        prefix_caching=caching,
    )
    spec = [s for s in spec if -(-(s[1] + (16 if s[3] else 0) + s[2] - 1) // bs) <= blocks - 1]
    assume(spec)
    fast, fast_snaps = run(EveryStep, cfg, spec, steps)
    slow, slow_snaps = run(OneAtATime, cfg, spec, steps)
    assert fast_snaps == slow_snaps
    assert fast.finish_order == slow.finish_order
    assert (fast.preemptions, fast.recomputed) == (slow.preemptions, slow.recomputed)
    assert fast.pool.free_queue() == slow.pool.free_queue()
