"""The server in front of the engine, timed: requests sent and not yet through its one tokenizer
thread (core/perf/serving.py ServingPrior). They pass in the order sent, each held for its
admission_seconds, and then reach the engine (vllm/renderers/base.py: one worker by default)."""

from __future__ import annotations

import heapq
import math

from .clock import Server


class Frontend:
    __slots__ = ("free", "sent", "server")

    def __init__(self, server: Server) -> None:
        self.server = server
        self.sent: list[tuple[float, int, int]] = []  # heap of (seconds sent, request id, prompt tokens)
        self.free = -math.inf  # when the tokenizer thread is next free

    def send(self, at: float, rid: int, prompt: int) -> None:
        heapq.heappush(self.sent, (at, rid, prompt))

    def through(self, until: float, arrivals: list[tuple[float, int]]) -> None:
        """Pass the requests sent at or before `until`, in the order sent, onto the engine's
        arrivals heap at the time each is tokenized. The caller passes only times by which every
        request that will be sent so early has been: none can come later and go first."""
        while self.sent and self.sent[0][0] <= until:
            at, rid, prompt = heapq.heappop(self.sent)
            self.free = max(at, self.free) + self.server.admission_seconds(prompt)
            heapq.heappush(arrivals, (self.free, rid))

    def next_through(self) -> float | None:
        """When the first request still waiting would reach the engine."""
        if not self.sent:
            return None
        at, _, prompt = self.sent[0]
        return max(at, self.free) + self.server.admission_seconds(prompt)
