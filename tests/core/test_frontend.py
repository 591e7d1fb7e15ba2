"""The server's one tokenizer thread passes requests in the order sent, whatever order they were
sent in (core/sim/frontend.py): the order of one heap of them all."""

from __future__ import annotations

import heapq
import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.sim.frontend import Frontend

Sent = tuple[float, int, int]


class _Hold:
    scheduled_ahead = True

    def __init__(self, path: float = 0.0, wait: float = 0.0, most: int = 32) -> None:
        self.request_path_s = path
        self.tokenizer_batch_wait_s = wait
        self.tokenizer_batch_max = most

    def admission_seconds(self, prompt_tokens: int) -> float:
        return prompt_tokens * 1e-6

    def batch_seconds(self, prompt_tokens: int, prompts: int) -> float:
        return prompt_tokens * 1e-6 / prompts**0.5  # any cost that shrinks with the batch


def _one_heap(batches: list[list[Sent]], untils: list[float], path: float) -> list[tuple[float, int]]:
    """What the front did when every send waited in one heap: batch i sent, then a pass to untils[i]."""
    heap: list[Sent] = []
    free, out = float("-inf"), []
    for batch, until in zip(batches, untils, strict=True):
        for sent in batch:
            heapq.heappush(heap, sent)
        while heap and heap[0][0] <= until:
            at, rid, prompt = heapq.heappop(heap)
            free = max(at + path, free) + prompt * 1e-6
            heapq.heappush(out, (free, rid))  # the engine's arrivals heap, as Frontend.through fills it
    return out


def test_a_send_earlier_than_those_queued_passes_first():
    front = Frontend(_Hold())
    front.send(1.0, 0, 100)
    front.send(2.0, 1, 100)
    front.send(0.5, 2, 100)  # a closed loop's next request, sent before the queued ones
    assert front.first() == (0.5, 2, 100)
    arrivals: list[tuple[float, int]] = []
    front.through(1.5, arrivals)
    assert [rid for _, rid in sorted(arrivals)] == [2, 0]
    assert front.next_through() == 2.0 + 100e-6


def test_a_request_reaches_the_tokenizer_its_request_path_after_it_is_sent():
    """The way in and out outside the engine (ServingPrior.request_path_s) delays every request
    alike: the order sent is kept, and the tokenizer thread still holds each in turn."""

    front = Frontend(_Hold(path=5e-3))
    front.send(1.0, 0, 1000)
    front.send(1.0005, 1, 1000)  # sent while the first is still on its way
    arrivals: list[tuple[float, int]] = []
    front.through(2.0, arrivals)
    assert sorted(arrivals) == [
        (pytest.approx(1.005 + 1e-3), 0),
        (pytest.approx(1.005 + 2e-3), 1),  # queued behind the first's tokenization
    ]
    front.send(3.0, 2, 10)
    assert front.next_through() == pytest.approx(3.005 + 10e-6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 10), st.integers(0, 5000)), max_size=60),
    st.lists(st.floats(0, 12), min_size=1, max_size=8),
    st.floats(0, 0.01),
    st.data(),
)
def test_requests_pass_when_and_as_one_heap_of_them_all_would_let_them(sends, untils, path, data):
    """Sends in any order (ties included), in batches with passes between, each reaching the
    tokenizer the same request path after it is sent (which keeps the order sent)."""
    items = [(at, rid, prompt) for rid, (at, prompt) in enumerate(sends)]
    untils = [*sorted(untils), 13.0]
    cuts = sorted(
        data.draw(st.lists(st.integers(0, len(items)), min_size=len(untils) - 1, max_size=len(untils) - 1))
    )
    bounds = [0, *cuts, len(items)]
    batches = [items[a:b] for a, b in pairwise(bounds)]
    front, arrivals = Frontend(_Hold(path)), []
    for batch, until in zip(batches, untils, strict=True):
        for sent in batch:
            front.send(*sent)
        front.through(until, arrivals)
    assert arrivals == _one_heap(batches, untils, path)
    assert front.first() is None


def _asyncio_loop(sends: list[Sent], server: _Hold) -> dict[int, float]:
    """When each request reaches the engine, as vLLM 0.10–0.22's AsyncMicrobatchTokenizer loop
    lets them (vllm/utils/async_utils.py _batch_encode_loop), every send known: free, it takes the
    first waiting, waits until its deadline for more or stops at the largest batch, and hands the
    batch over after one call."""
    reach = [(at + server.request_path_s, rid, prompt, at) for at, rid, prompt in sorted(sends)]
    free, i, out = float("-inf"), 0, {}
    while i < len(reach):
        opened = max(reach[i][0], free)
        batch = [reach[i]]
        i += 1
        last = opened + server.tokenizer_batch_wait_s - server.request_path_s  # the last send to join
        while len(batch) < server.tokenizer_batch_max and i < len(reach):
            if reach[i][3] > last:
                break
            batch.append(reach[i])
            i += 1
        full = len(batch) == server.tokenizer_batch_max
        closed = max(opened, batch[-1][0]) if full else opened + server.tokenizer_batch_wait_s
        free = closed + server.batch_seconds(sum(b[2] for b in batch), len(batch))
        out |= {b[1]: free for b in batch}
    return out


def test_a_lone_request_waits_for_company_and_a_wave_passes_together():
    front, arrivals = Frontend(_Hold(path=5e-3, wait=2e-3)), []
    front.send(1.0, 0, 1000)
    front.through(1.0, arrivals)
    assert not arrivals  # its batch is open: one sent by 1.002 may still join
    assert front.next_through() == pytest.approx(1.005)  # a lower bound: it may yet fill up
    front.through(1.002, arrivals)
    assert arrivals == [(pytest.approx(1.005 + 2e-3 + 1e-3), 0)]  # the wait, then the call
    for rid in (1, 2, 3):
        front.send(2.0, rid, 1000)
    front.through(2.0, arrivals)
    front.through(2.01, arrivals)
    done = 2.005 + 2e-3 + 3000e-6 / 3**0.5
    assert sorted(arrivals)[1:] == [(pytest.approx(done), rid) for rid in (1, 2, 3)]


def test_a_full_batch_stops_waiting():
    front, arrivals = Frontend(_Hold(wait=2e-3, most=2)), []
    for rid in range(3):
        front.send(0.0, rid, 100)
    front.through(0.0, arrivals)
    first = 200e-6 / 2**0.5  # two prompts at once, no wait
    assert sorted(arrivals)[:2] == [(pytest.approx(first), 0), (pytest.approx(first), 1)]
    front.through(1.0, arrivals)  # the third alone: waits, after the first batch's call
    assert max(arrivals) == (pytest.approx(first + 2e-3 + 100e-6), 2)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 0.05), st.integers(0, 5000)), max_size=60),
    st.sampled_from([0.0, 5e-3]),
    st.sampled_from([1e-3, 2e-3, 8e-3]),
    st.sampled_from([1, 3, 32]),
    st.data(),
)
def test_micro_batches_passed_a_piece_at_a_time_are_the_loop_that_saw_every_send(
    sends, path, wait, most, data
):
    """Sends revealed as a simulation reveals them (every send made by a pass's `until` is there
    before it), passes at any such times: each request reaches the engine when vLLM's loop, knowing
    every send, hands it over; and while one waits, next_through() is never later than that."""
    items = sorted((at, rid, prompt) for rid, (at, prompt) in enumerate(sends))
    server = _Hold(path, wait, most)
    truth = _asyncio_loop(items, server)
    front, arrivals, made, until = Frontend(server), [], 0, 0.0
    for _ in range(data.draw(st.integers(0, 8))):
        more = data.draw(st.integers(made, len(items)))
        for sent in items[made:more]:
            front.send(*sent)
        made = more
        bound = items[made][0] if made < len(items) else 1.0
        if bound <= until:
            continue
        until = data.draw(st.floats(until, bound, exclude_max=True))
        front.through(until, arrivals)
        if (head := front.next_through()) is not None:
            passed = {rid for _, rid in arrivals}
            assert head <= min(t for rid, t in truth.items() if rid not in passed) + 1e-12
    for sent in items[made:]:
        front.send(*sent)
    front.through(10.0, arrivals)
    assert len(arrivals) == len(truth)
    assert {rid: at for at, rid in arrivals} == {rid: pytest.approx(t, abs=1e-12) for rid, t in truth.items()}


def test_joining_a_batch_and_closing_it_test_the_same_float():
    """A batch takes the sends made by deadline − request path, one float for both joining and
    closing: this send is one float later, so the batch closes without it, although in floats it
    reaches the tokenizer (sent + path) by the deadline."""
    server = _Hold(path=5e-3, wait=2e-3)
    at = 0.0011428193144282783
    last = at + 5e-3 + 2e-3 - 5e-3  # the batch's deadline − request path, as the Frontend has it
    late = math.nextafter(last, math.inf)
    assert late + 5e-3 <= at + 5e-3 + 2e-3  # the test a reach-time join would have made
    front, arrivals = Frontend(server), []
    front.send(at, 0, 100)
    front.send(late, 1, 100)
    front.through(10.0, arrivals)
    done = {rid: t for t, rid in arrivals}
    assert done == _asyncio_loop([(at, 0, 100), (late, 1, 100)], server)
    assert done[0] < done[1]


def test_an_idle_engine_settles_the_next_batch_and_no_later_one():
    """A later batch is left for the steps to pass: a closed loop's next request, sent when the
    first finishes, may come before it."""
    front, arrivals = Frontend(_Hold(path=5e-3, wait=2e-3)), []
    front.send(0.0, 0, 100)
    front.send(0.5, 1, 100)
    front.settle(arrivals)
    assert [rid for _, rid in arrivals] == [0] and front.first() == (0.5, 1, 100)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 0.05), st.integers(0, 5000)), min_size=1, max_size=60),
    st.sampled_from([0.0, 5e-3]),
    st.sampled_from([0.0, 1e-3, 2e-3, 8e-3]),
    st.sampled_from([1, 3, 32]),
)
def test_an_idle_engine_settles_each_next_arrival_as_the_loop_that_saw_every_send(sends, path, wait, most):
    """settle() alone, the engine taking each arrival at once and sending nothing: every request
    reaches the engine exactly when vLLM's loop hands it over (one prompt at a time with no wait)."""
    items = sorted((at, rid, prompt) for rid, (at, prompt) in enumerate(sends))
    server = _Hold(path, wait, most)
    front, arrivals, got = Frontend(server), [], {}
    for sent in items:
        front.send(*sent)
    for _ in range(len(items)):
        front.settle(arrivals)
        while arrivals:
            at, rid = heapq.heappop(arrivals)
            got[rid] = at
    if wait == 0:
        free, truth = -math.inf, {}
        for at, rid, prompt in items:
            free = truth[rid] = max(at + path, free) + server.admission_seconds(prompt)
    else:
        truth = _asyncio_loop(items, server)
    assert got == {rid: pytest.approx(t, abs=1e-12) for rid, t in truth.items()}
