"""vLLM's block pool (vllm/v1/core/block_pool.py, docs/vllm-rules.md §7).

A fixed pool of physical blocks; block 0 is the null block and is never handed out. Blocks with
ref_cnt 0 sit in one free queue (vllm/v1/core/kv_cache_utils.py, FreeKVCacheBlockQueue). Freeing
a request walks its blocks in reverse: a block whose ref_cnt drops to 0 goes to the tail if it
has a hash (cached: evicted in LRU order) and to the head if it has none (reused first).
Allocation pops from the head; a cached block popped for reuse loses its hash. A cache hit
`touch`es the block: out of the free queue, ref_cnt + 1.

The queue starts as 1, 2, …, num_blocks − 1, and what is freed goes to either end, so it is
always three runs: unhashed freed blocks (head side), the blocks never handed out (still in
order), and hashed freed blocks (tail side, oldest first). Holding the middle run as a counter
makes the pool's memory grow with the blocks a simulation touches, not with num_blocks, and
every operation O(1).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Iterator, Sequence
from itertools import islice

from ..errors import InvalidInput, PoolExhausted
from ..limits import (
    MAX_NUM_BLOCKS,
)

NULL_BLOCK = 0
# The hash of a block whose content nobody can ever look up (`seal`).
SEALED = -1


class Pool:
    """What every block pool counts (this one, and anonpool.py's without block ids): its size, its
    free blocks, the blocks handed out over its life, and the prefix cache's map of keys to blocks."""

    __slots__ = ("_cached", "allocated", "num_blocks", "num_free", "usable")

    def __init__(self, num_blocks: int) -> None:
        if num_blocks < 2:
            raise InvalidInput("num_blocks", "a pool needs the null block and at least one more")
        if num_blocks > MAX_NUM_BLOCKS:
            raise InvalidInput(
                "num_blocks",
                f"{num_blocks:,} blocks: the simulator takes pools of at most {MAX_NUM_BLOCKS:,} "
                "(no real GPU holds more); simulate a sample of the pool, or a larger block_size",
            )
        self.num_blocks = num_blocks
        self.usable = num_blocks - 1  # every block but the null block
        self.num_free = num_blocks - 1
        self.allocated = 0  # blocks handed out over the pool's life
        self._cached: dict[Hashable, int] = {}

    @property
    def in_use(self) -> int:
        return self.usable - self.num_free

    def longest_hit(self, keys: Sequence[Hashable], n: int) -> list[int]:
        """The cached blocks of keys[0], keys[1], … up to the first miss, at most n."""
        get = self._cached.get
        hits = []
        for j in range(n):
            b = get(keys[j])
            if b is None:
                break
            hits.append(b)
        return hits


class BlockPool(Pool):
    __slots__ = ("_fresh", "_head", "_tail", "hash_of", "ref")

    def __init__(self, num_blocks: int) -> None:
        super().__init__(num_blocks)
        # ref_cnt and hash of the blocks handed out so far, by block id; blocks from
        # len(self.ref) on have never been handed out (ref_cnt 0, no hash).
        self.ref = [0]
        self.hash_of: list[Hashable | None] = [None]
        self._head: deque[int] = deque()  # freed unhashed blocks, next to be reused first
        self._fresh = NULL_BLOCK + 1  # the never-used run: _fresh .. num_blocks − 1
        self._tail: OrderedDict[int, None] = OrderedDict()  # freed hashed blocks, LRU first

    # -- the free queue -------------------------------------------------------------------
    @property
    def cached_free(self) -> int:
        """Free blocks that still hold a hash (a prefix-cache hit can revive them)."""
        return len(self._tail)

    def free_queue(self) -> list[int]:
        """The free queue from head (allocated next) to tail (evicted last)."""
        return [*self._head, *range(self._fresh, self.num_blocks), *self._tail]

    def _unlink(self, b: int) -> None:
        """Take a free block that was handed out before out of the queue."""
        if b in self._tail:
            del self._tail[b]
        else:
            self._head.remove(b)  # an unhashed block is never a cache hit; kept for completeness
        self.num_free -= 1

    # -- pool operations ------------------------------------------------------------------
    def allocate(self, n: int) -> list[int]:
        """Pop n blocks from the head; a cached block loses its hash (_maybe_evict_cached_block).
        The never-used run is handed out whole: a run of decode steps takes thousands at once."""
        if n > self.num_free:
            raise PoolExhausted(n)
        head, ref, hash_of = self._head, self.ref, self.hash_of
        out = [head.popleft() for _ in range(min(n, len(head)))]  # freed unhashed: no hash
        for b in out:
            ref[b] = 1
        fresh = min(n - len(out), self.num_blocks - self._fresh)
        if fresh > 0:
            out += range(self._fresh, self._fresh + fresh)
            ref += [1] * fresh
            hash_of += [None] * fresh
            self._fresh += fresh
        if n > len(out):  # the oldest cached blocks, evicted: their hashes leave the cache
            tail, cached = self._tail, self._cached
            evicted = list(islice(tail, n - len(out)))
            for b in evicted:
                del tail[b]
                key = hash_of[b]
                if key != SEALED:  # a sealed block's content is in no lookup
                    del cached[key]
                hash_of[b] = None
                ref[b] = 1
            out += evicted
        self.num_free -= n
        self.allocated += n
        return out

    @property
    def uncached_free(self) -> int:
        """Free blocks handed out before those that hold a hash: the head and never-used runs."""
        return len(self._head) + self.num_blocks - self._fresh

    def touch(self, blocks: Sequence[int]) -> None:
        """A cache hit: the blocks leave the free queue if idle; ref_cnt + 1."""
        for b in blocks:
            if self.ref[b] == 0:
                self._unlink(b)
            self.ref[b] += 1

    def free(self, blocks: Sequence[int]) -> None:
        """Release a request's blocks, last first: hashed to the tail, unhashed to the head."""
        ref, hash_of, tail, head = self.ref, self.hash_of, self._tail, self._head
        freed = 0
        for b in reversed(blocks):
            r = ref[b] - 1
            ref[b] = r
            if r == 0:
                freed += 1
                if hash_of[b] is not None:
                    tail[b] = None
                else:
                    head.appendleft(b)
        self.num_free += freed

    def cache(self, b: int, key: Hashable) -> None:
        """Give a block in use its hash. A content already cached in another block stays uncached
        here (a duplicate: it is freed to the head like any unhashed block)."""
        if self.hash_of[b] is None and key not in self._cached:
            self._cached[key] = b
            self.hash_of[b] = key

    def cache_run(self, blocks: Sequence[int], keys: Sequence[Hashable], lo: int, hi: int) -> None:
        """cache(blocks[j], keys[j]) for j in lo..hi − 1 (a request's newly full blocks)."""
        cached, hash_of = self._cached, self.hash_of
        for j in range(lo, hi):
            b, key = blocks[j], keys[j]
            if hash_of[b] is None and key not in cached:
                cached[key] = b
                hash_of[b] = key

    def seal(self, blocks: Sequence[int], lo: int, hi: int) -> None:
        """Give blocks[lo:hi] a hash no lookup will ever ask for: the full blocks of a finished
        request's own content (its keys hold its id: no other request computes them). They free
        to the tail and are evicted in their turn, as vLLM's hashed blocks are, without being
        keyed in the cache."""
        hash_of = self.hash_of
        for b in blocks[lo:hi]:
            if hash_of[b] is None:
                hash_of[b] = SEALED

    def lookup(self, key: Hashable) -> int | None:
        return self._cached.get(key)

    def ref_cnt(self, b: int) -> int:
        return self.ref[b] if b < len(self.ref) else 0

    def is_cached(self, b: int) -> bool:
        return b < len(self.hash_of) and self.hash_of[b] is not None

    def referenced(self) -> Iterator[tuple[int, int]]:
        """(block, ref_cnt) of every block in use, by block id."""
        return ((b, r) for b, r in enumerate(self.ref) if r and b != NULL_BLOCK)
