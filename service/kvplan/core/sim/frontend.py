"""The server in front of the engine, timed: requests sent and not yet through its one tokenizer
thread (core/perf/serving.py ServingPrior). They reach it request_path_s after they are sent, pass
in the order sent, each held for its admission_seconds, and then reach the engine
(vllm/renderers/base.py: one worker by default)."""

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

    __slots__ = ("early", "free", "ordered", "server")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.ordered: deque[Sent] = deque()
        self.early: list[Sent] = []
        self.free = -math.inf  # when the tokenizer thread is next free

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

    def through(self, until: float, arrivals: list[tuple[float, int]]) -> None:
        """Pass the requests sent at or before `until`, in the order sent, onto the engine's
        arrivals heap at the time each is tokenized. The caller passes only times by which every
        request that will be sent so early has been: none can come later and go first. One request
        path for all keeps the order sent the order they reach the tokenizer (a path that varied by
        request would break the two queues)."""
        ordered, early, free = self.ordered, self.early, self.free
        hold, path = self.server.admission_seconds, self.server.request_path_s
        while True:
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

    def next_through(self) -> float | None:
        """When the first request still waiting would reach the engine."""
        head = self.first()
        if head is None:
            return None
        at, _, prompt = head
        return max(at + self.server.request_path_s, self.free) + self.server.admission_seconds(prompt)
