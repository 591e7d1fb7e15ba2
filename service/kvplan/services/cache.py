"""Answers kept for repeated scenarios, bounded in bytes. Autoscalers and dashboards re-ask the
same scenarios on a schedule, and an answer is deterministic for a registry, so the encoded
answer is kept under the canonical form of the decoded scenario (whitespace, key order of the
body and query-string spelling do not make new entries). Large scenarios (an inline config.json)
are not kept; errors are never kept; nor an answer for a Hub revision that can move
(services/models.py cacheable).

`AnswerCache` is one worker's cache of budget and per-token answers: the HTTP routes hand it the
decoded request and its parsed model, and it decides the key, whether the answer may be kept, and
its ETag. In front of it, an index from the raw body or query string to that key lets a repeated
request skip decoding; it is bounded in bytes too, and a raw form longer than
MAX_CACHED_SCENARIO_BYTES (padding) is never indexed."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

from kvplan import __version__
from kvplan.core.limits import MAX_CACHED_SCENARIO_BYTES
from kvplan.presets import Registry

from .models import ModelRef, cacheable, hub_commit

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


# An encoded answer and the codes of its warnings (counted for /metrics on every hit).
Answer = tuple[bytes, tuple[str, ...]]


def etag(encoded_request: bytes, *parts: str) -> str:
    """A strong validator of a decoded request's answer: the request (as its cache key encodes
    it), what shapes the answer (registry version, format, width) and the service's version."""
    h = hashlib.blake2b(encoded_request, digest_size=12)
    for p in (*parts, __version__):
        h.update(b"\0" + p.encode())
    return f'"{h.hexdigest()}"'


class AnswerCache:
    """The answers of one worker, under the canonical form of the decoded scenario."""

    def __init__(self, max_bytes: int) -> None:
        self.answers: ByteBoundedCache[Answer] = ByteBoundedCache(max_bytes, MAX_CACHED_SCENARIO_BYTES)
        # A raw form (body or query string) → the answer's key, its ETag and whether it is text.
        self.raw_index: ByteBoundedCache[tuple[bytes, str, bool]] = ByteBoundedCache(
            max_bytes // 8, MAX_CACHED_SCENARIO_BYTES
        )
        self._prefixes: dict[tuple[str, ...], bytes] = {}

    def prefix(self, *parts: str) -> bytes:
        """A key's prefix: what shapes the answer besides the scenario (registry, kind, format)."""
        p = self._prefixes.get(parts)
        if p is None:
            p = self._prefixes[parts] = b"\0".join(x.encode() for x in parts) + b"\0"
        return p

    def indexed(self, raw_key: bytes) -> tuple[Answer, str, bool] | None:
        """A cached answer for a raw request seen before, with its ETag and format."""
        entry = self.raw_index.get(raw_key)
        if entry is None:
            return None
        hit = self.answers.get(entry[0])
        return None if hit is None else (hit, entry[1], entry[2])

    def budget_json(
        self, reg: Registry, req: msgspec.Struct, ref: ModelRef, explain: bool, raw: bytes | None,
        compute: Callable[[], Answer],
    ) -> Answer:  # fmt: skip
        """A JSON budget answer: from the cache when the scenario was seen, else computed (and
        kept when it may be). A scenario seen twice indexes its raw body, so the next time skips
        decoding."""
        flag = "True" if explain else "False"
        key = self.prefix(reg.version, "budget", "json", flag) + msgspec.json.encode(req)
        hit = self.answers.get(key)
        if hit is None:
            hit = compute()
            if cacheable(ref):
                self.answers.put(key, hit, len(hit[0]))
        elif raw is not None:
            self.raw_index.put(self.prefix(reg.version, "raw-budget", flag) + raw, (key, "", False), len(key))
        return hit

    def get_answer(
        self, reg: Registry, raw_key: bytes, req: msgspec.Struct, ref: ModelRef, flavour: tuple[str, ...],
        text: bool, compute: Callable[[], Answer],
    ) -> tuple[bytes, bool, str, tuple[str, ...]]:  # fmt: skip
        """A GET answer, its format, ETag and warning codes. Dashboards repeat the same URLs: the
        answer is kept under the decoded scenario, so spelling variants share one entry, and the
        raw query string is indexed to it. A Hub branch's answer is the commit's it names now:
        not kept, and its ETag names the commit."""
        encoded = msgspec.json.encode(req)
        key = self.prefix(reg.version, "get", *flavour) + encoded
        hit = self.answers.get(key)
        if hit is None:
            hit = compute()
            if not cacheable(ref):
                return hit[0], text, etag(encoded, reg.version, *flavour, hub_commit(ref)), hit[1]
            self.answers.put(key, hit, len(hit[0]))
        tag = etag(encoded, reg.version, *flavour)
        self.raw_index.put(raw_key, (key, tag, text), len(key) + len(tag))
        return hit[0], text, tag, hit[1]

    def clear(self) -> None:
        self.answers.clear()
        self.raw_index.clear()
