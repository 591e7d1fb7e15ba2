"""One figure a vLLM start-up log states, with its line and the worker that printed it."""

from __future__ import annotations

import re

import msgspec


class Figure(msgspec.Struct, frozen=True, kw_only=True):
    """One figure the log states. `decimals` is how many the log printed (its rounding)."""

    name: str
    value: float | int | str | bool
    unit: str = ""
    decimals: int = 0
    line: int  # 1-based line number in what was sent
    text: str  # the line, cleaned of colours, at most 300 characters
    rank: str = ""  # the worker that printed it, where the line says (Worker_TP1, …)


def rank_order(rank: str) -> int:
    """0 for rank 0 (every number in the tag is 0), 1 for the driver or engine (no tag, or no
    number), 2 for any other worker: the figure a log's reader wants first is rank 0's."""
    numbers = re.findall(r"\d+", rank)
    if not rank or (not numbers and rank != "VllmWorkerProcess"):
        return 1
    return 0 if numbers and all(int(n) == 0 for n in numbers) else 2
