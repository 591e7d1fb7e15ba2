"""vLLM's block pool without block ids where no one can tell them apart (blockpool.py's rules).

Which physical block a request gets changes nothing an answer reports unless someone can look
the block up later: a prefix-cache hit finds a block by its key. Most blocks never get a key: a
request's own content is keyed only once it is preempted (it looks its blocks up when it comes
back), and a finished request's own full blocks are sealed (blockpool.py `seal`). So this pool
names a block only when it is keyed (a key already cached elsewhere too: the block then stays
unhashed, but named, so that a table's named blocks come first); every other block is an
anonymous entry in a request's block table (ANON, or SEALED_ANON once sealed), and the free queue
holds counts of them:

- the unhashed free blocks (the head run and the never-used run, handed out first) as one count;
- the tail (hashed free blocks, evicted oldest first) as named blocks and runs of sealed ones,
  in LRU order: a request's sealed blocks free together, next to each other in the tail.

A request's table holds its named blocks first: they are its hits and the blocks it keyed, and
keys are given from the table's start (Scheduler._cache_full). The figures are BlockPool's
exactly (free, cached free, in use, which keyed block is evicted when); the snapshots, which
show block ids, run on BlockPool (simulate.py), as does every caller that does not ask for this.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

from ..errors import PoolExhausted, SchedulerStateError
from .blockpool import SEALED, Pool

# Entries of a block table, never block ids (those are positive). Not hashes: SEALED, also −1, is
# a hash value (blockpool.py), and never sits in a table.
ANON = -1  # a block no one can look up, unhashed
SEALED_ANON = -2  # the same, sealed: it frees to the tail


class AnonymousPool(Pool):
    __slots__ = ("_next_id", "_next_run", "_tail", "cached_free", "hash_of", "ref", "uncached_free")

    def __init__(self, num_blocks: int) -> None:
        super().__init__(num_blocks)
        self.ref: dict[int, int] = {}  # named blocks (in use or in the tail): ref_cnt
        self.hash_of: dict[int, Hashable | None] = {}
        # The tail, LRU first: a named block id (> 0) → 1, or a run's number (< 0) → its length.
        self._tail: OrderedDict[int, int] = OrderedDict()
        self._next_id = 1
        self._next_run = -1
        self.uncached_free = num_blocks - 1  # the head and never-used runs together
        self.cached_free = 0  # the tail's blocks

    def allocate(self, n: int) -> list[int]:
        """n anonymous blocks for a request's table (take)."""
        self.take(n)
        return [ANON] * n

    def take(self, n: int) -> None:
        """n blocks off the head: unhashed ones first, then the tail's oldest, whose keys leave
        the cache."""
        if n > self.num_free:
            raise PoolExhausted(n)
        take = min(n, self.uncached_free)
        self.uncached_free -= take
        left = n - take
        if left:
            self.cached_free -= left
            tail, ref, hash_of, cached = self._tail, self.ref, self.hash_of, self._cached
            while left:
                entry = next(iter(tail))
                count = tail[entry]
                if entry < 0 and count > left:  # part of a run: the rest stays oldest
                    tail[entry] = count - left
                    break
                del tail[entry]
                if entry > 0:  # a named block, evicted
                    key = hash_of.pop(entry)
                    del ref[entry]
                    if key != SEALED:
                        del cached[key]
                    left -= 1
                else:
                    left -= count
        self.num_free -= n
        self.allocated += n

    def touch(self, blocks: Sequence[int]) -> None:
        """A cache hit (named blocks): out of the tail if idle; ref_cnt + 1."""
        ref = self.ref
        for b in blocks:
            if ref[b] == 0:
                del self._tail[b]
                self.cached_free -= 1
                self.num_free -= 1
            ref[b] += 1

    def free(self, blocks: Sequence[int]) -> None:
        """Release a request's table, last first (BlockPool.free): its anonymous blocks (the table's
        end) to the head, or as one run to the tail once sealed; then its named blocks, hashed to the
        tail, unhashed to the head."""
        sealed = blocks.count(SEALED_ANON)
        unhashed = blocks.count(ANON)
        named = len(blocks) - sealed - unhashed
        if named and blocks[named - 1] < 0:
            raise SchedulerStateError("a block table's named blocks are not its first")
        freed = sealed + unhashed
        tail = self._tail
        if sealed:
            tail[self._next_run] = sealed
            self._next_run -= 1
            self.cached_free += sealed
        self.uncached_free += unhashed
        ref, hash_of = self.ref, self.hash_of
        for j in range(named - 1, -1, -1):
            b = blocks[j]
            r = ref[b] - 1
            if r:
                ref[b] = r
                continue
            freed += 1
            if hash_of[b] is not None:
                ref[b] = 0
                tail[b] = 1
                self.cached_free += 1
            else:  # no one can look it up again: it loses its name
                del ref[b], hash_of[b]
                self.uncached_free += 1
        self.num_free += freed

    def cache_run(self, blocks: list[int], keys: Sequence[Hashable], lo: int, hi: int) -> None:
        """BlockPool.cache_run; an anonymous block keyed here gets a name in the table."""
        cached, hash_of, ref = self._cached, self.hash_of, self.ref
        for j in range(lo, hi):
            b, key = blocks[j], keys[j]
            if b < 0:
                b = blocks[j] = self._next_id
                self._next_id += 1
                ref[b] = 1
                hash_of[b] = None
            if hash_of[b] is None and key not in cached:
                cached[key] = b
                hash_of[b] = key

    def seal(self, blocks: list[int], lo: int, hi: int) -> None:
        """BlockPool.seal: anonymous blocks become sealed ones; a named block is sealed by its hash."""
        if lo < hi and blocks[lo] < 0:  # the table's end: all anonymous (named blocks come first)
            blocks[lo:hi] = [SEALED_ANON] * (hi - lo)
            return
        for j in range(lo, hi):
            b = blocks[j]
            if b == ANON:
                blocks[j] = SEALED_ANON
            elif b > 0 and self.hash_of[b] is None:
                self.hash_of[b] = SEALED
