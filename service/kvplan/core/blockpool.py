"""vLLM's block pool (vllm/v1/core/block_pool.py, VLLM_FACTS §7).

A fixed pool of physical blocks; block 0 is the null block and is never handed out. Blocks with
ref_cnt 0 sit in one free queue. Freeing a request walks its blocks in reverse: a block whose
ref_cnt drops to 0 goes to the tail if it has a hash (cached: evicted in LRU order) and to the
head if it has none (reused first). Allocation pops from the head; a cached block popped for
reuse loses its hash. A cache hit `touch`es the block: out of the free queue, ref_cnt + 1.

The queue is a doubly linked list over arrays, so every operation is O(1).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from .errors import InvalidInput

NULL_BLOCK = 0


class PoolExhausted(Exception):
    """Fewer free blocks than asked for; the caller preempts or waits."""


class BlockPool:
    __slots__ = ("_cached", "_next", "_prev", "cached_free", "hash_of", "num_blocks", "num_free", "ref")

    def __init__(self, num_blocks: int) -> None:
        if num_blocks < 2:
            raise InvalidInput("num_blocks", "a pool needs the null block and at least one more")
        self.num_blocks = num_blocks
        self.ref = [0] * num_blocks
        self.hash_of: list[Hashable | None] = [None] * num_blocks
        self._cached: dict[Hashable, int] = {}
        # Sentinel index num_blocks closes the circular list: _next[s] is the head, _prev[s] the tail.
        s = num_blocks
        self._next = [0] * (num_blocks + 1)
        self._prev = [0] * (num_blocks + 1)
        prev = s
        for b in range(NULL_BLOCK + 1, num_blocks):
            self._next[prev] = b
            self._prev[b] = prev
            prev = b
        self._next[prev] = s
        self._prev[s] = prev
        self.num_free = num_blocks - 1
        self.cached_free = 0

    # -- the free queue -------------------------------------------------------------------
    def _unlink(self, b: int) -> None:
        p, n = self._prev[b], self._next[b]
        self._next[p] = n
        self._prev[n] = p
        self.num_free -= 1
        if self.hash_of[b] is not None:
            self.cached_free -= 1

    def _append(self, b: int) -> None:
        s = self.num_blocks
        tail = self._prev[s]
        self._next[tail] = b
        self._prev[b] = tail
        self._next[b] = s
        self._prev[s] = b
        self.num_free += 1

    def _appendleft(self, b: int) -> None:
        s = self.num_blocks
        head = self._next[s]
        self._prev[head] = b
        self._next[b] = head
        self._prev[b] = s
        self._next[s] = b
        self.num_free += 1

    def free_queue(self) -> list[int]:
        """The free queue from head (allocated next) to tail (evicted last)."""
        out, b, s = [], self._next[self.num_blocks], self.num_blocks
        while b != s:
            out.append(b)
            b = self._next[b]
        return out

    # -- pool operations ------------------------------------------------------------------
    def allocate(self, n: int) -> list[int]:
        """Pop n blocks from the head; a cached block loses its hash (_maybe_evict_cached_block)."""
        if n > self.num_free:
            raise PoolExhausted(n)
        s = self.num_blocks
        out = []
        for _ in range(n):
            b = self._next[s]
            self._unlink(b)
            key = self.hash_of[b]
            if key is not None:
                del self._cached[key]
                self.hash_of[b] = None
            self.ref[b] = 1
            out.append(b)
        return out

    def touch(self, blocks: Sequence[int]) -> None:
        """A cache hit: the blocks leave the free queue if idle; ref_cnt + 1."""
        for b in blocks:
            if self.ref[b] == 0:
                self._unlink(b)
            self.ref[b] += 1

    def free(self, blocks: Sequence[int]) -> None:
        """Release a request's blocks, last first: hashed to the tail, unhashed to the head."""
        for b in reversed(blocks):
            r = self.ref[b] - 1
            self.ref[b] = r
            if r == 0:
                if self.hash_of[b] is not None:
                    self._append(b)
                    self.cached_free += 1
                else:
                    self._appendleft(b)

    def cache(self, b: int, key: Hashable) -> None:
        """Give a full block its hash. A content already cached in another block stays uncached
        here (a duplicate: it is freed to the head like any unhashed block)."""
        if self.hash_of[b] is None and key not in self._cached:
            self._cached[key] = b
            self.hash_of[b] = key

    def lookup(self, key: Hashable) -> int | None:
        return self._cached.get(key)

    @property
    def usable(self) -> int:
        return self.num_blocks - 1

    @property
    def in_use(self) -> int:
        return self.usable - self.num_free
