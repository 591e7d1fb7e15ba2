"""A workload's shape without its rate: what a capacity search keeps while it varies the rate."""

from __future__ import annotations

from typing import Annotated, NamedTuple

from msgspec import Meta
from msgspec.structs import asdict, replace

from ..errors import InvalidInput
from ..limits import MAX_REQUESTS, MAX_SEED, MAX_SYSTEM_PROMPT_TOKENS
from ..sim.workload import Conversations, Generator, Length, Share, SimRequest, WorkloadStruct


class WorkloadShape(WorkloadStruct, frozen=True, kw_only=True):
    """The simulator's generator without its rate: `count` requests, their length distributions,
    shared system prompts and conversations; seeded, so every rate sees the same requests."""

    count: Annotated[int, Meta(ge=1, le=MAX_REQUESTS)]
    prompt: Length
    output: Length
    system_prompt_share: Share = 0.0
    system_prompt_tokens: Annotated[int, Meta(ge=0, le=MAX_SYSTEM_PROMPT_TOKENS)] = 0
    conversations: Conversations | None = None
    seed: Annotated[int, Meta(ge=0, le=MAX_SEED)] = 0

    def at(self, rate_per_s: float) -> Generator:
        """The generator of this shape arriving at rate_per_s (Poisson)."""
        return Generator(arrival_rate_per_s=rate_per_s, **asdict(self))


class TraceLoad(NamedTuple):
    """A recorded trace as a capacity search's workload: its requests' lengths and sharing kept,
    its arrival times scaled so that it arrives at the rate searched. Its own rate is (requests − 1)
    over the span from the first arrival to the last."""

    requests: tuple[SimRequest, ...]
    chains: tuple[tuple[int, ...], ...] | None
    chain_block: int

    @property
    def rate(self) -> float:
        times = [r.arrival_time or 0.0 for r in self.requests]
        span = max(times) - min(times)
        if len(times) < 2 or span <= 0:
            raise InvalidInput(
                "trace", "its requests all arrive at once: it has no rate to scale; send a trace with times"
            )
        return (len(times) - 1) / span

    def at(self, rate_per_s: float) -> list[SimRequest]:
        """The trace's requests arriving at rate_per_s: every time × (own rate ÷ rate_per_s)."""
        factor = self.rate / rate_per_s
        return [replace(r, arrival_time=(r.arrival_time or 0.0) * factor) for r in self.requests]
