"""The server's one tokenizer thread passes requests in the order sent, whatever order they were
sent in (core/sim/frontend.py): the order of one heap of them all."""

from __future__ import annotations

import heapq
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.core.sim.frontend import Frontend

Sent = tuple[float, int, int]


class _Hold:
    scheduled_ahead = True

    def __init__(self, path: float = 0.0) -> None:
        self.request_path_s = path

    def admission_seconds(self, prompt_tokens: int) -> float:
        return prompt_tokens * 1e-6


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
