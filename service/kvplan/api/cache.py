"""Answers kept for repeated scenarios, bounded in bytes. Autoscalers and dashboards re-ask the
same scenarios on a schedule, and an answer is deterministic for a registry, so the encoded
answer is kept under the canonical form of the decoded scenario (whitespace, key order of the
body and query-string spelling do not make new entries). Large scenarios (an inline config.json)
are not kept; errors are never kept."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

V = TypeVar("V")
# Bytes an entry costs beyond its key and value (the dict slot, the tuple, the bytes headers).
ENTRY_OVERHEAD = 200
# Keys `offer` has seen once (their hashes), cleared when full: a doorkeeper, as in TinyLFU.
# 16,384 is more than one batch (1,000 scenarios) times the batches an autoscaler sends between
# repeats, and as many hashes cost about 1 MiB beside the answer cache's own budget.
DOORKEEPER_KEYS = 16384


class ByteBoundedCache(Generic[V]):
    """LRU whose keys and values together stay under max_bytes."""

    def __init__(self, max_bytes: int, max_key_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_key_bytes = max_key_bytes
        self._entries: OrderedDict[bytes, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._seen_once: set[int] = set()

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> V | None:
        if key not in self._entries:  # a miss needs no lock (a racing put only makes it a miss)
            return None
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key: bytes, value: V, value_bytes: int) -> None:
        if len(key) > self.max_key_bytes:
            return
        cost = len(key) + value_bytes + ENTRY_OVERHEAD
        if cost > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(key) + old[1] + ENTRY_OVERHEAD
            self._entries[key] = (value, value_bytes)
            self._bytes += cost
            while self._bytes > self.max_bytes:
                k, (_, size) = self._entries.popitem(last=False)
                self._bytes -= len(k) + size + ENTRY_OVERHEAD

    def offer(self, key: bytes, value: V, value_bytes: int) -> None:
        """`put` on the key's second sight. A batch of distinct scenarios (a sweep, a one-off
        study) would otherwise evict every answer that repeats and churn the cache's memory for
        nothing; an autoscaler's repeated batch is kept from its second call."""
        if len(key) > self.max_key_bytes:  # put would not keep it: it should not fill the doorkeeper
            return
        h = hash(key)
        with self._lock:
            if h not in self._seen_once:
                if len(self._seen_once) >= DOORKEEPER_KEYS:
                    self._seen_once.clear()
                self._seen_once.add(h)
                return
            self._seen_once.discard(h)
        self.put(key, value, value_bytes)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._seen_once.clear()
            self._bytes = 0
