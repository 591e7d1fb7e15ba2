"""The seed's block-table picture, replayed on vLLM's block pool."""

from __future__ import annotations

import pytest

from kvplan.core.errors import PoolExhausted
from kvplan.core.sim.blockpool import BlockPool

PREFIX = [("system", 0), ("system", 1)]


def admit(pool: BlockPool, prefix_keys: list, private: int) -> list[int]:
    """Prefix blocks by cache hit when present, else newly allocated and cached; then private ones."""
    hits = [b for b in (pool.lookup(k) for k in prefix_keys) if b is not None]
    pool.touch(hits)
    fresh = pool.allocate(len(prefix_keys) - len(hits))
    for b, k in zip(fresh, prefix_keys[len(hits) :], strict=True):
        pool.cache(b, k)
    return hits + fresh + pool.allocate(private)


def test_block_zero_is_the_null_block_and_never_handed_out():
    pool = BlockPool(8)
    assert pool.usable == 7
    assert 0 not in pool.allocate(7)
    with pytest.raises(PoolExhausted):
        pool.allocate(1)


def test_two_requests_share_two_prefix_blocks_with_ref_cnt_2():
    pool = BlockPool(32)
    a = admit(pool, PREFIX, 6)
    b = admit(pool, PREFIX, 4)
    assert a[:2] == b[:2] == [1, 2]
    assert a[2:] == [3, 4, 5, 6, 7, 8]
    assert b[2:] == [9, 10, 11, 12]
    assert [pool.ref[x] for x in (1, 2)] == [2, 2]
    assert not set(a[2:]) & set(b[2:])


def test_ref_cnt_falls_as_requests_finish_and_cached_blocks_wait_at_the_tail():
    pool = BlockPool(32)
    a = admit(pool, PREFIX, 6)
    b = admit(pool, PREFIX, 4)
    pool.free(a)
    assert [pool.ref[x] for x in (1, 2)] == [1, 1]
    pool.free(b)
    assert [pool.ref[x] for x in (1, 2)] == [0, 0]
    queue = pool.free_queue()
    # Freed last-first: the private (unhashed) blocks go to the head, the hashed prefix to the tail.
    assert queue[-2:] == [2, 1]
    assert pool.cached_free == 2
    assert pool.lookup(("system", 0)) == 1


def test_unhashed_blocks_are_reused_lifo_and_the_lru_cached_block_is_evicted_first():
    pool = BlockPool(8)  # 7 usable
    x = pool.allocate(2)  # [1, 2]
    pool.cache(x[0], "k1")
    pool.cache(x[1], "k2")
    pool.free(x)  # hashed: 2 then 1 to the tail
    y = pool.allocate(3)  # [3, 4, 5] from the head
    pool.free(y)  # unhashed, last first to the head: head is now 3, 4, 5
    assert pool.free_queue()[:3] == [3, 4, 5]
    assert pool.allocate(1) == [3]  # the block just freed comes back first
    # Use up the unhashed ones (4, 5 and the never-used 6, 7); the next allocation evicts the
    # LRU cached block: 2, which reached the tail first.
    assert pool.allocate(4) == [4, 5, 6, 7]
    assert pool.lookup("k2") == 2
    assert pool.allocate(1) == [2]
    assert pool.lookup("k2") is None  # a reused cached block loses its hash
    assert pool.lookup("k1") == 1


def test_a_cache_hit_on_a_free_block_takes_it_out_of_the_queue():
    pool = BlockPool(8)
    b = pool.allocate(1)
    pool.cache(b[0], "k")
    pool.free(b)
    assert pool.num_free == 7 and pool.cached_free == 1
    pool.touch([pool.lookup("k")])
    assert pool.num_free == 6 and pool.cached_free == 0 and pool.ref[b[0]] == 1
