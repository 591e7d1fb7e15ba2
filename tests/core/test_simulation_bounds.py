"""A simulation's work is bounded before it starts: over-limit inputs are refused naming the field,
the limit and the value; what is accepted answers in bounded time and memory."""

from __future__ import annotations

import time
import tracemalloc
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.limits import (
    MAX_BLOCK_EVENTS,
    MAX_NUM_BLOCKS,
    MAX_SERIES,
    MAX_SIMULATED_STEPS,
    MAX_TOTAL_TOKENS,
)
from kvplan.core.sim import series as series_module
from kvplan.core.sim import simulate as simulate_module
from kvplan.core.sim.blockpool import BlockPool
from kvplan.core.sim.config import SimConfig
from kvplan.core.sim.runs import Crossings
from kvplan.core.sim.series import SeriesRecorder, _busiest
from kvplan.core.sim.simulate import simulate
from kvplan.core.sim.workload import Conversations, Fixed, Generator, SimRequest, plan, size


def refused(cfg: SimConfig, requests=None, generator=None) -> InvalidInput:
    t0 = time.perf_counter()
    with pytest.raises(InvalidInput) as e:
        simulate(cfg, requests, generator)
    assert time.perf_counter() - t0 < 1.0
    return e.value


@pytest.mark.parametrize(
    ("budget", "seqs", "prompt", "count"),
    [
        (1, 1, 16_000_000, 2),  # two 16M-token prompts, one token a step
        (8, 8, 16_000_000, 11),
        (16, 16, 16_000_000, 21),
        (24, 24, 16_000_000, 31),
    ],
)
def test_a_tiny_token_budget_with_huge_prompts_is_refused_naming_max_num_batched_tokens(
    budget, seqs, prompt, count
):
    cfg = SimConfig(
        num_blocks=MAX_NUM_BLOCKS, block_size=16, max_num_seqs=seqs, max_num_batched_tokens=budget
    )
    e = refused(cfg, [SimRequest(prompt_tokens=prompt, output_tokens=10)] * count)
    assert e.field == "max_num_batched_tokens"
    assert f"{MAX_SIMULATED_STEPS:,}" in e.reason and f"max_num_batched_tokens = {budget:,}" in e.reason


def test_a_tiny_token_budget_with_a_short_prompt_still_answers_exactly():
    # One token a step: the prompt's 1,000 tokens take steps 0..999, the last of which samples the
    # first output token; the other 9 follow in steps 1,000..1,008.
    cfg = SimConfig(num_blocks=1000, block_size=16, max_num_seqs=1, max_num_batched_tokens=1)
    r = simulate(cfg, [SimRequest(prompt_tokens=1000, output_tokens=10)])
    assert (r.steps, r.completed, r.prompt_tokens) == (1009, 1, 1000)
    assert 400 < len(r.series) <= MAX_SERIES


def conversations(count: int, turns: int, user: int, prompt: int = 1000, output: int = 100) -> Generator:
    return Generator(
        count=count,
        arrival_rate=1,
        prompt=Fixed(value=prompt),
        output=Fixed(value=output),
        conversations=Conversations(share=1, turns=turns, user_tokens=user),
    )


@pytest.mark.parametrize(
    ("count", "turns", "user"),
    [
        (1000, 64, 1000),  # counted turn by turn without history: 70M; with it, 2.3G
        (1, 64, 1 << 20),
        (50_000, 16, 500),
        (2000, 40, 2000),
    ],
)
def test_many_turns_with_long_user_tokens_count_their_history_against_the_token_limit(count, turns, user):
    g = conversations(count, turns, user)
    e = refused(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=MAX_NUM_BLOCKS, block_size=64),
        generator=g,
    )
    assert e.field == "workload" and "with its history" in e.reason
    assert f"{MAX_TOTAL_TOKENS:,}" in e.reason or f"{MAX_BLOCK_EVENTS:,} blocks" in e.reason
    assert f"{size(plan(None, g), 64).prompt_tokens:,} of prompts" in e.reason


def test_the_prompt_tokens_counted_up_front_are_those_the_simulation_processes():
    g = conversations(30, 5, 40, prompt=200, output=30)
    r = simulate(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=20_000, block_size=16),
        generator=g,
    )
    assert r.preemptions == 0 and r.requests == 150
    assert r.prompt_tokens == size(plan(None, g), 16).prompt_tokens == 30 * (5 * 200 + 70 * 10)


def test_a_conversation_that_outgrows_the_pool_is_refused_before_it_runs_naming_its_turn():
    e = refused(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=40, block_size=16),
        generator=conversations(3, 5, 100, prompt=100, output=50),
    )
    assert e.field == "workload.generator.conversations"
    assert e.reason.startswith("turn 5 of the conversation opened by request 0 grows to 750 tokens")


@pytest.mark.parametrize("num_blocks", [MAX_NUM_BLOCKS + 1, 20_000_000, 1 << 31])
def test_a_pool_above_the_block_limit_is_refused_naming_num_blocks(num_blocks):
    e = refused(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=num_blocks, block_size=16),
        [SimRequest(prompt_tokens=10, output_tokens=5)],
    )
    assert e.field == "num_blocks" and f"{MAX_NUM_BLOCKS:,}" in e.reason and f"{num_blocks:,}" in e.reason


def test_the_largest_pool_costs_memory_only_for_the_blocks_it_hands_out():
    tracemalloc.start()
    try:
        pool = BlockPool(MAX_NUM_BLOCKS)
        pool.free(pool.allocate(1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert pool.num_free == pool.usable == MAX_NUM_BLOCKS - 1
    r = simulate(
        SimConfig(max_num_seqs=256, max_num_batched_tokens=8192, num_blocks=MAX_NUM_BLOCKS, block_size=16),
        [SimRequest(prompt_tokens=100, output_tokens=5)],
    )
    assert r.usable_blocks == MAX_NUM_BLOCKS - 1 and r.peak_blocks_in_use == 7


def test_the_series_holds_every_step_up_to_its_exact_limit_exactly_as_before():
    recorder = SeriesRecorder()
    records = [(t * 3, (t * 7919) % 1000, t % 5, t % 11, t % 13) for t in range(20_000)]
    for r in records:
        recorder.add(*r)
    assert recorder.bins is None
    points = [(p.step, p.blocks_used, p.cached_free_blocks, p.running, p.waiting) for p in recorder.series()]
    assert points == _busiest(records, len(records), MAX_SERIES)


def test_past_its_exact_limit_the_series_folds_into_bounded_bins_and_keeps_the_peak(monkeypatch):
    monkeypatch.setattr(series_module, "SERIES_EXACT_RECORDS", 1000)
    monkeypatch.setattr(series_module, "SERIES_FOLD_BINS", 64)
    recorder = SeriesRecorder()
    peak_at = 123_457
    held = 0
    for t in range(200_000):
        recorder.add(t, 5000 if t == peak_at else t % 977, 0, 1, 0)
        held = max(held, len(recorder.items) + len(recorder.bins or ()))
    assert held <= 1001
    series = recorder.series()
    assert len(series) <= MAX_SERIES
    assert max(p.blocks_used for p in series) == 5000
    assert [p.step for p in series] == sorted(p.step for p in series)


@pytest.mark.source
def test_a_long_run_holds_a_bounded_number_of_records(monkeypatch):
    monkeypatch.setattr(series_module, "SERIES_EXACT_RECORDS", 1000)
    monkeypatch.setattr(series_module, "SERIES_FOLD_BINS", 64)
    held = []

    class Watched(SeriesRecorder):
        def add(self, *point: int) -> None:
            super().add(*point)
            held.append(len(self.items) + len(self.bins or ()))

        def add_run(self, run: Crossings) -> None:
            super().add_run(run)
            held.extend([len(self.items) + len(self.bins or ())] * run.count)

    monkeypatch.setattr(simulate_module, "SeriesRecorder", Watched)
    # One token of prefill a step: every one of the 100,002 steps is visited and recorded.
    cfg = SimConfig(num_blocks=10_000, block_size=16, max_num_seqs=1, max_num_batched_tokens=1)
    r = simulate(cfg, [SimRequest(prompt_tokens=100_000, output_tokens=3)])
    assert r.steps == len(held) == 100_002
    assert max(held) <= 1001 and len(r.series) <= MAX_SERIES
    assert max(p.blocks_used for p in r.series) == r.peak_blocks_in_use


def _run(a: int, length: int, bs: int, sizes: list[int], used: int, cached: int, uncached: int) -> Crossings:
    """A run of steps a..a + length − 1 whose requests cross at offsets j with sizes[j] > 0."""
    offs = [j for j in range(bs) if sizes[j]]
    pre = [0]
    for j in offs:
        pre.append(pre[-1] + sizes[j])
    pool = SimpleNamespace(in_use=used, cached_free=cached, uncached_free=uncached)
    sched = SimpleNamespace(pool=pool, bs=bs, running=[1, 2, 3], n_waiting=1, clock=None, t=a - 1)
    return Crossings(sched, a, a + length, offs, pre)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 120),  # the run's length in steps
            st.integers(0, 30),  # blocks in use before it
            st.integers(1, 400),  # steps before it starts
            st.sampled_from([1, 2, 4, 16]),  # block size
            st.lists(st.integers(0, 3), min_size=16, max_size=16),  # requests at each offset
            st.integers(0, 40),  # cached free blocks, and unhashed ones, before it
            st.integers(0, 40),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([(50, 8), (1000, 64), (10**6, 4096)]),
)
def test_a_run_made_on_demand_leaves_the_series_as_its_steps_one_by_one(runs, limits):
    saved = series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS
    series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS = limits
    try:
        one, whole = SeriesRecorder(), SeriesRecorder()
        step = 0
        for length, used, gap, bs, sizes, cached, uncached in runs:
            step += gap
            one.add(step, used, cached, 3, 1)  # the visited step before it
            whole.add(step, used, cached, 3, 1)
            run = _run(step + 1, length, bs, sizes[:bs], used, cached, uncached)
            step += length
            if not run.count:
                continue
            for r in run.records(range(run.count)):
                one.add(*r)
            whole.add_run(run)
        assert whole.series() == one.series()
    finally:
        series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS = saved


def test_a_runs_records_are_its_crossing_steps_and_the_pool_after_each():
    # Block size 4; one request crosses at offset 1, two at offset 3: steps 11, 13, 15, 17 of 10..17.
    run = _run(10, 8, 4, [0, 1, 0, 2], used=5, cached=4, uncached=3)
    assert run.count == 4 and run.blocks() == 6
    assert run.records(range(4)) == [
        (11, 6, 4, 3, 1),
        (13, 8, 4, 3, 1),
        (15, 9, 3, 3, 1),  # the fourth block is a cached one: the unhashed ran out
        (17, 11, 1, 3, 1),
    ]
    assert [run.last_before(s) for s in (10, 11, 12, 16, 99)] == [-1, -1, 0, 2, 3]
