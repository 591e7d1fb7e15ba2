"""A block's cache key: its content and everything before it, as an int (the scheduler's prefix
cache, scheduler.py; the block pool keeps blocks by it, blockpool.py)."""

from __future__ import annotations

from typing import Protocol


class Keyed(Protocol):
    """What of a request its block keys depend on (scheduler.py _Request)."""

    id: int
    keys: list[int]
    prefix_id: str | None
    chain: tuple[int, ...]
    chain_block: int
    shared_len: int


# Bits of a block key that hold the block's index (core/limits: at most 2^25 tokens a request).
KEY_BITS = 26


def key_list(q: Keyed, n: int, bs: int, prefix_numbers: dict[str, int]) -> list[int]:
    """q's block keys up to block n, computed once a request. A key is an int: the block
    index j in the low bits, above it who owns the content (the request, its prefix_id's
    number, or its hash chain's node holding the block's last token: a chain names the
    prompt's content and all before it), and the kind in the lowest two bits, so that keys
    of different owners never meet."""
    keys = q.keys
    lo = len(keys)
    if lo >= n:
        return keys
    if not lo:  # its first keys: a list of its own (it shared the empty NO_BLOCKS)
        keys = q.keys = []
    shared = min(n, q.shared_len // bs) if q.prefix_id is not None or q.chain else 0
    if lo < shared:
        if q.prefix_id is not None:
            pid = prefix_numbers.setdefault(q.prefix_id, len(prefix_numbers))
            keys += [((pid << KEY_BITS | j) << 2) | 1 for j in range(lo, shared)]
        else:
            chain, cb = q.chain, q.chain_block
            keys += [((chain[((j + 1) * bs - 1) // cb] << KEY_BITS | j) << 2) | 2 for j in range(lo, shared)]
        lo = shared
    own = q.id << KEY_BITS
    keys += [(own | j) << 2 for j in range(lo, n)]
    return keys
