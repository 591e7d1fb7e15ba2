"""The simulator's clock: a timed run schedules exactly as the untimed scheduler does, and its
closed-form sums over skipped decode steps give the times a run visiting every step gives."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.sim import series as series_module
from kvplan.core.sim import workload
from kvplan.core.sim.clock import Batch, Clock, _first_reaching, _sum
from kvplan.core.sim.config import SimConfig
from kvplan.core.sim.latency import percentile
from kvplan.core.sim.scheduler import Scheduler
from kvplan.core.sim.series import SeriesRecorder
from kvplan.core.sim.simulate import GoodputTargets, TimedSimResult, Timing, TimingNote, simulate
from kvplan.core.sim.workload import Fixed, Generator, SimRequest, Uniform


class LinearTimer:
    """A step-time model for tests: affine in every part of the batch; its decode line changes
    slope at `bend` tokens of context, so runs cross a piece boundary."""

    def __init__(self, bend: int = 1 << 60) -> None:
        self.bend = bend

    def _b(self, c: int) -> float:
        return 1e-6 if c < self.bend else 2e-6

    def seconds(self, b: Batch) -> float:
        c = b.decode_context
        decode = self._b(c) * c - (1e-6 * self.bend if c >= self.bend else 0.0)
        return 0.002 + 3e-5 * b.decode_requests + decode + 5e-5 * b.prefill_tokens + 1e-9 * b.prefill_context

    def decode_line(self, n: int, context: int) -> tuple[float, float, int]:
        a = 0.002 + 3e-5 * n
        if context < self.bend:
            return a, 1e-6, self.bend - 1
        return a - 1e-6 * self.bend, 2e-6, 1 << 62


NOTE = TimingNote(exact="scheduling", modelled="durations", step_time_model="test", validation="none")


class EveryStep(Scheduler):
    """The reference: visits every step (no decode run is skipped), so each step's duration comes
    from its own batch."""

    def _next_timed(self, clock: Clock) -> tuple[int | None, float]:
        end = self.step_end
        if self.running or self.prefilling or self.n_waiting:
            return self.t + 1, end
        if self.arrivals:
            return self.t + 1, max(end, self.arrivals[0][0])
        return None, end


def cfg(blocks: int = 400, seqs: int = 16, budget: int = 256) -> SimConfig:
    return SimConfig(num_blocks=blocks, block_size=16, max_num_seqs=seqs, max_num_batched_tokens=budget)


class Frontend:
    """A serving path for tests (core/perf/serving.py ServingPrior's shape): one tokenizer thread
    at 20 µs a token, `path` seconds of request path, steps scheduled one ahead when `ahead`, and
    micro-batches that wait `wait` seconds (0: none) for up to 4 prompts, a call on n of them
    taking 1/√n of their tokens' time."""

    tokenizer_batch_max = 4

    def __init__(self, ahead: bool = True, path: float = 0.0, wait: float = 0.0) -> None:
        self.scheduled_ahead = ahead
        self.request_path_s = path
        self.tokenizer_batch_wait_s = wait

    def admission_seconds(self, prompt_tokens: int) -> float:
        return 2e-5 * prompt_tokens

    def batch_seconds(self, prompt_tokens: int, prompts: int) -> float:
        return 2e-5 * prompt_tokens / math.sqrt(prompts)


class EveryStepServed(EveryStep):
    """The reference with a server: visits every step; a step sees what reached the engine by the
    start of its predecessor when scheduled ahead, unless the engine idled before it."""

    def _next_timed(self, clock: Clock) -> tuple[int | None, float]:
        end = self.step_end
        assert self.front is not None
        self.front.through(end, self.arrivals)
        if self.running or self.prefilling or self.n_waiting:
            self.visible = clock.now if self.ahead else None
            return self.t + 1, end
        self.visible = None
        self.front.settle(self.arrivals)
        arrival = self._next_arrival()
        return (None, end) if arrival is None else (self.t + 1, max(end, arrival))


def run(
    sched_type: type[Scheduler],
    c: SimConfig,
    requests: list[SimRequest],
    timer: LinearTimer,
    k: int | None = None,
    server: Frontend | None = None,
) -> Scheduler:
    planned = workload.plan(requests, None)
    s = sched_type(c, planned, None, Clock(timer, server), k)
    s.run()
    return s


timed_requests = st.lists(
    st.builds(
        lambda t, p, o: SimRequest(arrival_time=t, prompt_tokens=p, output_tokens=o),
        st.floats(0, 2.0, allow_nan=False),
        st.integers(1, 400),
        st.integers(1, 120),
    ),
    min_size=1,
    max_size=25,
)


def assert_same_schedule_and_times(fast: Scheduler, slow: Scheduler) -> None:
    """The same finish order and steps, and each request's times to 1e-9."""
    assert fast.finish_order == slow.finish_order
    assert fast.t == slow.t
    for a, b in zip(fast.reqs, slow.reqs, strict=True):
        assert a.t_arrive == pytest.approx(b.t_arrive, rel=1e-9, abs=1e-12)
        assert a.t_sched == pytest.approx(b.t_sched, rel=1e-9, abs=1e-12)
        assert a.t_first == pytest.approx(b.t_first, rel=1e-9, abs=1e-12)
        assert a.t_done == pytest.approx(b.t_done, rel=1e-9, abs=1e-12)


@pytest.mark.source
@settings(max_examples=60, deadline=None)
@given(timed_requests, st.sampled_from([1 << 60, 900, 3000]), st.sampled_from([None, 1, 3]))
def test_skipping_decode_runs_gives_the_times_of_visiting_every_step(requests, bend, k):
    timer = LinearTimer(bend)
    fast = run(Scheduler, cfg(), requests, timer, k)
    slow = run(EveryStep, cfg(), requests, timer, k)
    assert_same_schedule_and_times(fast, slow)
    assert fast.preemptions == slow.preemptions
    assert fast.itl.count == slow.itl.count
    assert fast.itl.total == pytest.approx(slow.itl.total, rel=1e-9)


def _points(sched: Scheduler, recorder: SeriesRecorder | None = None) -> list[tuple[Any, ...]]:
    """What the run shows the series: every record one by one, or the series a recorder keeps
    (runs stored whole and made at the end, or folded as they come)."""
    seen: list[tuple[Any, ...]] = []
    if recorder is None:
        sched.run(observe=lambda *p: seen.append(p))
        return seen
    sched.run(observe=recorder.add, observe_run=recorder.add_run)
    return [tuple(msgspec.structs.astuple(p)) for p in recorder.series()]


@pytest.mark.source
@settings(max_examples=60, deadline=None)
@given(
    timed_requests,
    st.sampled_from([1 << 60, 900]),
    st.sampled_from([None, 3]),
    st.booleans(),
    st.sampled_from([None, (1 << 16, 4096), (40, 8)]),
)
def test_a_timed_runs_points_are_the_steps_visiting_every_step_gives(requests, bend, k, block_ids, limits):
    """Each step a decode run shows the series (its crossings, made on demand from what the run
    kept of the scheduler) is that step as visiting it gives: the pool after it, the queues, and
    when it started."""
    timer = LinearTimer(bend)
    every: dict[int, tuple[Any, ...]] = {}
    slow = EveryStep(cfg(), workload.plan(requests, None), None, Clock(timer), k)
    slow.run(observe=lambda *p: every.setdefault(p[0], p))
    saved = series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS
    try:
        if limits is not None:
            series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS = limits
        fast = Scheduler(cfg(), workload.plan(requests, None), None, Clock(timer), k, block_ids=block_ids)
        points = _points(fast, None if limits is None else SeriesRecorder())
    finally:
        series_module.SERIES_EXACT_RECORDS, series_module.SERIES_FOLD_BINS = saved
    assert points
    for p in points:
        step = every[p[0]]
        assert p[1:5] == step[1:5], p
        assert p[5] == pytest.approx(step[5], rel=1e-9, abs=1e-12), p


@pytest.mark.source
@settings(max_examples=60, deadline=None)
@given(
    timed_requests,
    st.sampled_from([1 << 60, 900]),
    st.sampled_from([None, 1, 3]),
    st.booleans(),
    st.sampled_from([0.0, 2e-4, 3e-3]),
)
def test_skipping_decode_runs_gives_the_times_of_visiting_every_step_behind_a_server(
    requests, bend, k, ahead, wait
):
    """With micro-batches too, whose next_through() is only a lower bound while a batch may grow."""
    timer = LinearTimer(bend)
    fast = run(Scheduler, cfg(), requests, timer, k, Frontend(ahead, path=5e-4, wait=wait))
    slow = run(EveryStepServed, cfg(), requests, timer, k, Frontend(ahead, path=5e-4, wait=wait))
    assert_same_schedule_and_times(fast, slow)


def test_requests_sent_at_once_reach_the_engine_one_tokenization_apart():
    requests = [SimRequest(arrival_time=0.0, prompt_tokens=100, output_tokens=3) for _ in range(3)]
    s = run(Scheduler, cfg(budget=100), requests, LinearTimer(), server=Frontend(ahead=False))
    assert [q.t_arrive for q in s.reqs] == [0.0, 0.0, 0.0]  # TTFT counts from the send
    assert s.reqs[0].t_sched == pytest.approx(2e-3)  # 100 tokens at 20 µs
    # The second was tokenized by 4 ms, during the first's prefill: it joins the next step.
    assert s.reqs[1].t_sched == pytest.approx(2e-3 + LinearTimer().seconds(Batch(0, 0, 1, 100, 100 * 100)))


def test_a_micro_batched_tokenizer_holds_a_lone_request_its_wait_and_passes_a_wave_together():
    lone = [SimRequest(arrival_time=0.0, prompt_tokens=100, output_tokens=3)]
    s = run(Scheduler, cfg(), lone, LinearTimer(), server=Frontend(ahead=False, wait=2e-3))
    assert s.reqs[0].t_sched == pytest.approx(2e-3 + 2e-3)  # the wait, then 100 tokens at 20 µs
    wave = lone * 4
    s = run(Scheduler, cfg(budget=400), wave, LinearTimer(), server=Frontend(ahead=False, wait=2e-3))
    # One batch of four: no wait (it is full), one call of 400 tokens at 1/√4 of their time.
    assert [q.t_sched for q in s.reqs] == [pytest.approx(400 * 2e-5 / 2)] * 4


def test_the_request_path_delays_the_first_token_and_not_the_later_ones():
    requests = [SimRequest(arrival_time=0.0, prompt_tokens=100, output_tokens=5)]
    bare = run(Scheduler, cfg(), requests, LinearTimer(), server=Frontend(ahead=False)).reqs[0]
    path = run(Scheduler, cfg(), requests, LinearTimer(), server=Frontend(ahead=False, path=5e-3)).reqs[0]
    assert path.t_arrive == bare.t_arrive == 0.0  # TTFT counts from the send
    assert path.t_first - bare.t_first == pytest.approx(5e-3)
    assert path.t_done - path.t_first == pytest.approx(bare.t_done - bare.t_first)


def test_scheduled_ahead_a_request_reaching_a_busy_engine_joins_the_step_after_next():
    timer = LinearTimer()
    requests = [
        SimRequest(arrival_time=0.0, prompt_tokens=16, output_tokens=200),
        SimRequest(arrival_time=0.1, prompt_tokens=16, output_tokens=2),
    ]
    plain = run(Scheduler, cfg(), requests, timer, server=Frontend(ahead=False)).reqs[1]
    ahead = run(Scheduler, cfg(), requests, timer, server=Frontend(ahead=True)).reqs[1]
    shortest, longest = (timer.seconds(Batch(1, c, 0, 0, 0)) for c in (16, 16 + 200))
    assert plain.t_sched - (0.1 + 16 * 2e-5) < longest
    assert shortest <= ahead.t_sched - plain.t_sched <= longest  # one decode step later


def test_an_idle_engine_schedules_an_arrival_at_once_even_scheduled_ahead():
    requests = [SimRequest(arrival_time=0.5, prompt_tokens=50, output_tokens=4)]
    s = run(Scheduler, cfg(), requests, LinearTimer(), server=Frontend(ahead=True))
    assert s.reqs[0].t_sched == pytest.approx(0.5 + 50 * 2e-5)


@pytest.mark.source
@settings(max_examples=40, deadline=None)
@given(timed_requests)
def test_a_small_pool_preempts_the_same_requests_timed_or_not(requests):
    small = cfg(blocks=30, seqs=8, budget=64)
    untimed = [SimRequest(prompt_tokens=r.prompt_tokens, output_tokens=r.output_tokens) for r in requests]
    fits = all(math.ceil((r.prompt_tokens + r.output_tokens - 1) / 16) <= 29 for r in requests)
    if not fits:
        return
    fast = run(Scheduler, small, requests, LinearTimer())
    slow = run(EveryStep, small, requests, LinearTimer())
    assert fast.finish_order == slow.finish_order and fast.preemptions == slow.preemptions
    # All arriving at once, timed and untimed runs are the same schedule.
    at_once = [
        SimRequest(arrival_time=0.0, prompt_tokens=r.prompt_tokens, output_tokens=r.output_tokens)
        for r in requests
    ]
    timed = run(Scheduler, small, at_once, LinearTimer())
    plain = Scheduler(small, workload.plan(untimed, None))
    plain.run()
    assert timed.finish_order == plain.finish_order and timed.t == plain.t


def test_one_request_sees_its_prefill_as_ttft_and_its_decode_steps_as_tpot():
    timer = LinearTimer()
    s = run(Scheduler, cfg(), [SimRequest(arrival_time=1.5, prompt_tokens=100, output_tokens=11)], timer)
    q = s.reqs[0]
    prefill = timer.seconds(Batch(0, 0, 1, 100, 100 * 100))
    decodes = [timer.seconds(Batch(1, 100 + j, 0, 0, 0)) for j in range(1, 11)]
    assert q.t_sched == 1.5
    assert q.t_first == pytest.approx(1.5 + prefill)
    assert q.t_done == pytest.approx(1.5 + prefill + sum(decodes))
    assert (q.t_done - q.t_first) / 10 == pytest.approx(sum(decodes) / 10)


def test_a_closed_loop_sends_the_next_request_when_one_finishes():
    requests = [SimRequest(arrival_time=0.0, prompt_tokens=50 + i, output_tokens=5 + 3 * i) for i in range(9)]
    s = run(Scheduler, cfg(), requests, LinearTimer(), k=3)
    done = sorted(q.t_done for q in s.reqs)
    sent = sorted(q.t_arrive for q in s.reqs)
    assert sent[:3] == [0.0, 0.0, 0.0]
    assert sent[3:] == pytest.approx(done[:6])  # each later request goes as one finishes
    for q in s.reqs:  # never more than three in flight
        assert sum(1 for r in s.reqs if r.t_arrive <= q.t_arrive < r.t_done) <= 3


def test_an_arrival_waits_for_the_first_step_that_starts_after_it():
    timer = LinearTimer()
    requests = [
        SimRequest(arrival_time=0.0, prompt_tokens=16, output_tokens=200),
        SimRequest(arrival_time=0.1, prompt_tokens=16, output_tokens=2),
    ]
    s = run(Scheduler, cfg(), requests, timer)
    late = s.reqs[1]
    assert late.t_sched >= 0.1
    # The step before it started before 0.1 s: it lasted at most one decode step.
    assert late.t_sched - 0.1 < timer.seconds(Batch(1, 16 + 200, 0, 0, 0))


@given(
    st.floats(1e-4, 1e-1),
    st.floats(0, 1e-5),
    st.integers(1, 300),
    st.integers(0, 10**6),
    st.integers(1, 5000),
    st.floats(0, 1.0),
)
def test_the_first_step_reaching_a_time_is_found_exactly(a, b, n, c0, k, share):
    target = _sum(a, b, n, c0, k) * share
    if target <= 0:
        return
    j = _first_reaching(a, b, n, c0, k, target)
    assert _sum(a, b, n, c0, j) >= target
    assert j == 0 or _sum(a, b, n, c0, j - 1) < target


def test_simulate_answers_latency_and_throughput_when_timed():
    g = Generator(
        count=200, arrival_rate_per_s=20.0, prompt=Uniform(low=50, high=400), output=Fixed(value=40)
    )
    r = simulate(
        cfg(blocks=2000, seqs=64, budget=512),
        generator=g,
        timing=Timing(LinearTimer(), NOTE, slo=GoodputTargets(ttft_ms=50)),
    )
    assert isinstance(r, TimedSimResult)
    assert r.completed == 200
    lat = r.latency
    assert 0 < lat.ttft_ms.p50 <= lat.ttft_ms.p90 <= lat.ttft_ms.p99
    assert lat.e2e_ms.mean > lat.ttft_ms.mean
    assert r.throughput.requests_per_s == pytest.approx(200 / r.throughput.duration_s)
    assert r.throughput.output_tokens_per_s == pytest.approx(200 * 40 / r.throughput.duration_s)
    # Only a TTFT target: at least half meet it when the median does, fewer than half otherwise.
    assert r.goodput is not None and r.goodput.share_met == r.goodput.requests_met / 200
    assert (lat.ttft_ms.p50 <= 50) == (r.goodput.share_met >= 0.5)
    assert all(hasattr(p, "time_s") for p in r.series)


def test_a_timed_workload_without_a_step_time_model_is_refused_naming_the_gpu():
    with pytest.raises(InvalidInput) as e:
        simulate(cfg(), requests=[SimRequest(arrival_time=0.0, prompt_tokens=5, output_tokens=5)])
    assert e.value.field == "gpu"


def test_arrival_time_and_steps_cannot_be_mixed():
    with pytest.raises(InvalidInput) as e:
        simulate(
            cfg(),
            requests=[
                SimRequest(arrival_time=0.0, prompt_tokens=5, output_tokens=5),
                SimRequest(arrival_step=3, prompt_tokens=5, output_tokens=5),
            ],
            timing=Timing(LinearTimer(), NOTE),
        )
    assert e.value.field == "workload.requests[1].arrival_time"


def test_timed_generators_draw_the_same_lengths_at_every_rate():
    kw = dict(count=50, prompt=Uniform(low=1, high=999), output=Uniform(low=1, high=99), seed=4)
    slow = workload.generate(Generator(arrival_rate_per_s=1.0, **kw))
    fast = workload.generate(Generator(arrival_rate_per_s=50.0, **kw))
    loop = workload.generate(Generator(concurrency=4, **kw))
    lengths = [(r.prompt_tokens, r.output_tokens) for r in slow]
    assert (
        lengths
        == [(r.prompt_tokens, r.output_tokens) for r in fast]
        == [(r.prompt_tokens, r.output_tokens) for r in loop]
    )
    assert [r.arrival_time for r in fast] == pytest.approx([r.arrival_time / 50 for r in slow])
    assert {r.arrival_time for r in loop} == {0.0}


def test_percentiles_interpolate_as_numpy_does():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([10.0, 20.0], 99) == pytest.approx(19.9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10)), min_size=1, max_size=40))
def test_the_peak_in_flight_counts_a_finish_before_a_send_at_the_same_instant(spans):
    from types import SimpleNamespace

    from kvplan.core.sim.simulate import _peak_in_flight

    reqs = [SimpleNamespace(t_arrive=float(a), t_done=float(a + d)) for a, d in spans]
    edges = sorted([(q.t_arrive, 1) for q in reqs] + [(q.t_done, -1) for q in reqs])
    now = peak = 0
    for _, change in edges:
        now += change
        peak = max(peak, now)
    assert _peak_in_flight(SimpleNamespace(reqs=reqs)) == peak  # type: ignore[arg-type]
