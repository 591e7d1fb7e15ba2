"""A workload's shape without its rate: what a capacity search keeps while it varies the rate."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta
from msgspec.structs import asdict

from ..limits import MAX_REQUESTS, MAX_SEED, MAX_SYSTEM_PROMPT_TOKENS
from ..sim.workload import Conversations, Generator, Length, Share, WorkloadStruct


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
