"""The block pool at a step, as the simulator answers it (`snapshot_steps`): block tables,
ref_cnt, the free queue and what it still caches, the queues."""

from __future__ import annotations

from typing import Any

import msgspec

from .states import State


class TableEntry(msgspec.Struct, frozen=True):
    """One running request's block table: logical block i is physical block blocks[i]."""

    request: int
    state: str
    tokens: int
    blocks: tuple[int, ...]


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The pool after a step: block tables, ref_cnt of referenced blocks, and the free queue from
    head (allocated next) to tail (evicted last), with which free blocks still hold a hash."""

    step: int
    tables: tuple[TableEntry, ...]
    ref_cnt: dict[int, int]
    free_queue: tuple[int, ...]
    cached: tuple[int, ...]
    waiting: tuple[int, ...]
    finished: tuple[int, ...]


def snapshot(sched: Any, step: int) -> Snapshot:
    """The pool of `sched` (a Scheduler: typed loosely, it imports this) after step `step`: every
    running request's block table, ref_cnt, the free queue
    (head first) and which free blocks still hold a hash, the waiting queue, the finished."""
    pool = sched.pool
    tables = []
    for q in sched.running.values():
        tokens = sched._decode_tokens(q, step + 1) if q.state is State.DECODING else q.computed
        tables.append(TableEntry(q.id, q.state.value, tokens, tuple(q.blocks)))
    queue = tuple(pool.free_queue())
    waiting = (
        [q.id for q in sched.waiting]
        if sched.cfg.policy == "fcfs"
        else [e[2] for e in sorted(sched.waiting_heap)]
    )
    return Snapshot(
        step=step,
        tables=tuple(tables),
        ref_cnt=dict(pool.referenced()),
        free_queue=queue,
        cached=tuple(b for b in queue if pool.is_cached(b)),
        waiting=tuple(waiting),
        finished=tuple(q.id for q in sched.reqs if q.state is State.FINISHED),
    )
