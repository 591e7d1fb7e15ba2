"""The server in front of the engine, timed: requests sent and not yet through its tokenizer
(core/perf/serving.py ServingPrior). They reach it request_path_s after they are sent and pass in
the order sent; then they reach the engine (vllm/renderers/base.py: one worker by default).

Two ways through, as the engine profile says (its tokenizer_batch_wait_s):
- one prompt after another, each held for its admission_seconds (vLLM 0.23 and later);
- in micro-batches (vllm/utils/async_utils.py AsyncMicrobatchTokenizer, vLLM 0.10–0.22): the
  tokenizer's loop takes the first request waiting when it is free, waits tokenizer_batch_wait_s
  for more (up to tokenizer_batch_max), tokenizes them in one call (batch_seconds) and hands them
  all to the engine at once."""

from __future__ import annotations

import heapq
import math
from collections import deque

from .clock import Server

Sent = tuple[float, int, int]  # (seconds sent, request id, prompt tokens)


class Frontend:
    """Sends wait in the order sent. Most come in that order (a workload's requests by arrival,
    planned at once): they queue at the back of `ordered`, a deque; a send earlier than the last
    queued (a closed loop's or a conversation's next turn) goes to `early`, a heap. The next to
    pass is the lesser of the two heads: the order of one heap of them all, without its
    logarithmic cost on a million requests."""

    __slots__ = (
        "batch",
        "batch_tokens",
        "deadline",
        "early",
        "free",
        "last",
        "opened",
        "ordered",
        "seen",
        "server",
    )

    def __init__(self, server: Server) -> None:
        self.server = server
        self.ordered: deque[Sent] = deque()
        self.early: list[Sent] = []
        self.free = -math.inf  # when the tokenizer thread is next free
        # Micro-batching: the batch being gathered (request ids), its prompt tokens, when the
        # tokenizer's loop opened it, when its wait ends, and the last send time that reaches the
        # tokenizer by then (deadline − request path: one float, so joining and closing agree).
        self.batch: list[int] = []
        self.batch_tokens = 0
        self.opened = self.deadline = self.last = 0.0
        self.seen = -math.inf  # micro-batching: the latest `until` passed (all sent by then are here)

    def send(self, at: float, rid: int, prompt: int) -> None:
        sent = (at, rid, prompt)
        if not self.ordered or self.ordered[-1] < sent:
            self.ordered.append(sent)
        else:
            heapq.heappush(self.early, sent)

    def first(self) -> Sent | None:
        """The send that passes next, if any."""
        ordered, early = self.ordered, self.early
        if ordered and (not early or ordered[0] < early[0]):
            return ordered[0]
        return early[0] if early else None

    def _pop(self, until: float) -> Sent | None:
        """The next send, if it was sent at or before `until`."""
        ordered, early = self.ordered, self.early
        if ordered and (not early or ordered[0] < early[0]):
            return ordered.popleft() if ordered[0][0] <= until else None
        if early and early[0][0] <= until:
            return heapq.heappop(early)
        return None

    def through(self, until: float, arrivals: list[tuple[float, int]]) -> None:
        """Pass the requests sent at or before `until`, in the order sent, onto the engine's
        arrivals heap at the time each is tokenized. The caller passes only times by which every
        request that will be sent so early has been: none can come later and go first. One request
        path for all keeps the order sent the order they reach the tokenizer (a path that varied by
        request would break the two queues)."""
        if self.server.tokenizer_batch_wait_s > 0:
            self._batches(until, arrivals)
            return
        ordered, early, free = self.ordered, self.early, self.free
        hold, path = self.server.admission_seconds, self.server.request_path_s
        while True:  # _pop inlined: this loop passes every request of a trace
            if ordered and (not early or ordered[0] < early[0]):
                if ordered[0][0] > until:
                    break
                at, rid, prompt = ordered.popleft()
            elif early and early[0][0] <= until:
                at, rid, prompt = heapq.heappop(early)
            else:
                break
            free = max(at + path, free) + hold(prompt)
            heapq.heappush(arrivals, (free, rid))
        self.free = free

    def _batches(self, until: float, arrivals: list[tuple[float, int]], one: bool = False) -> None:
        """through() in micro-batches, as AsyncMicrobatchTokenizer._batch_encode_loop gathers them.
        A batch is settled when it is full or when no request sent after `until` could still reach
        the tokenizer before its wait ends; until then it stays open here. With `one`, stop after
        settling one."""
        server = self.server
        self.seen = max(self.seen, until)
        path, wait, most = server.request_path_s, server.tokenizer_batch_wait_s, server.tokenizer_batch_max
        batch = self.batch
        while True:
            if not batch:
                sent = self._pop(until)
                if sent is None:
                    return
                self.opened = max(sent[0] + path, self.free)
                self.deadline = self.opened + wait
                self.last = self.deadline - path
                batch.append(sent[1])
                self.batch_tokens = sent[2]
            closed = -math.inf
            while len(batch) < most and (head := self.first()) is not None:
                if head[0] > self.last or (sent := self._pop(until)) is None:
                    break
                batch.append(sent[1])
                self.batch_tokens += sent[2]
                closed = sent[0] + path
            if len(batch) == most:
                closed = max(self.opened, closed)
            elif self.last <= until:
                closed = self.deadline
            else:
                return  # a request sent after `until` may still join
            self.free = done = closed + server.batch_seconds(self.batch_tokens, len(batch))
            for rid in batch:
                heapq.heappush(arrivals, (done, rid))
            batch.clear()
            if one:
                return

    def next_through(self) -> float | None:
        """When the first request still waiting would reach the engine; with micro-batching, a
        lower bound (the scheduler looks again at a later step): its batch may still grow, which
        can shorten the call's share of each prompt, and it closes when its wait ends or sooner,
        when sends not made yet fill it."""
        server = self.server
        path = server.request_path_s
        if self.batch:
            return max(self.opened, min(self.deadline, self.seen + path))
        head = self.first()
        if head is None:
            return None
        at, _, prompt = head
        opened = max(at + path, self.free)
        return opened if server.tokenizer_batch_wait_s > 0 else opened + server.admission_seconds(prompt)

    def settle(self, arrivals: list[tuple[float, int]]) -> None:
        """The engine idles: nothing is sent until a request reaches it (a send follows a step's
        end). With nothing on its way to the engine, the next batch settles as the requests
        already sent make it (a later send would reach the tokenizer after it closed), so the
        engine's next arrival is known exactly, not a lower bound."""
        while not arrivals:
            if self.batch:
                self._batches(max(self.seen, self.last), arrivals, one=True)
            elif (head := self.first()) is not None:
                self.through(head[0], arrivals)
            else:
                return
