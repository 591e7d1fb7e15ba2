"""Runs of decode steps, advanced at once (scheduler.py runs the loop around them).

Between arrivals, admissions, prefill chunks and finishes every running request just decodes one
token a step, and the only change to the pool is a decoding request taking its next block when
its tokens cross a block boundary: every block_size steps, from a phase fixed when it starts
decoding. The scheduler keeps the decoding requests on a wheel of block_size buckets by that
phase, in admission order (the order a step serves them), so a run of steps takes its blocks
from the free queue at once and hands them out in step order, up to the first step whose
crossings the free blocks do not cover (that step the scheduler runs whole: it preempts).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from ..units import cdiv
from .request import Request
from .snapshot import Snapshot

Point = tuple[int, int, int]  # (step, blocks in use after it, cached free blocks after it)
RunObserver = Callable[[list[Any]], None]  # the scheduler's Observer tuples of a run's steps
# The scheduler (scheduler.py, which imports this module), typed loosely as snapshot.py types it.
Scheduler = Any


def covered_until(sched: Scheduler, a: int, b: int) -> int:
    """The first step of a..b − 1 whose block boundaries the free blocks do not cover (b when
    they cover all): every block_size steps, each decoding request crosses one."""
    n: int = sched.n_dec
    if n == 0 or b <= a:
        return b
    bs: int = sched.bs
    free: int = sched.pool.num_free
    full, rem = divmod(b - a, bs)
    cycles, left = free // n, free % n  # whole cycles covered, then `left` more crossings
    if bs > 4 * n:  # large blocks: by the requests' offsets from a, not the steps of a cycle
        offsets: list[int] = sorted([(q.phase - a) % bs for q in sched.running.values() if q.phase >= 0])
        if full * n + bisect.bisect_left(offsets, rem) <= free:
            return b
        return a + cycles * bs + offsets[left]
    sizes = [len(sched.wheel[(a + j) % bs]) for j in range(bs)]  # crossings at a, a + 1, …
    if full * n + sum(sizes[:rem]) <= free:
        return b
    j = 0
    while sizes[j] <= left:
        left -= sizes[j]
        j += 1
    return a + cycles * bs + j


def advance(
    sched: Scheduler, end: int, pending: list[int], snapshots: list[Snapshot], crossed: list[Point]
) -> int:
    """Steps sched.t + 1 .. end − 1, in which requests only decode: their block boundaries
    crossed at once, the snapshots asked of them taken on the way. Returns the step to visit
    next: `end`, or the first step whose boundaries the free blocks do not cover (it preempts).
    Appends (step, blocks in use, cached free) after each step that crossed one."""
    at = sched.t + 1
    while True:
        while pending and pending[0] < at:  # the pool is as it was after these steps
            s = pending.pop(0)
            if s >= sched.t:
                snapshots.append(sched.snapshot(s))
        if at >= end:
            return end
        stop = min(end, pending[0] + 1) if pending else end
        reached = cross(sched, at, stop, crossed)
        if reached < stop:
            while pending and pending[0] < reached:
                snapshots.append(sched.snapshot(pending.pop(0)))
            return reached
        at = stop


def cross(sched: Scheduler, a: int, b: int, crossed: list[Point]) -> int:
    """The block boundaries of steps a..b − 1, as far as the free blocks cover them: the
    blocks taken from the pool at once and handed out in the order the steps would (step by
    step, admission order within one). Returns the first step not covered."""
    pool, bs, wheel = sched.pool, sched.bs, sched.wheel
    n = sched.n_dec
    if n == 0:
        sched.used_area += pool.in_use * (b - a)
        return b
    if cdiv(b - a, bs) * n > pool.num_free:  # the pool may run out first
        b = covered_until(sched, a, b)
    if b - a > 4 * n:  # few crossings a step: walk the crossings, not the steps
        return cross_sparse(sched, a, b, crossed)
    buckets = [wheel[s % bs] for s in range(a, b)]
    used, cached, uncached = pool.in_use, pool.cached_free, pool.uncached_free
    blocks = pool.allocate(sum(map(len, buckets)))
    named = sched.block_ids  # else the tables catch up when read (Scheduler._catch_up)
    pos = area = 0
    for s, bucket in enumerate(buckets, a):
        m = len(bucket)
        if m:
            if named:
                for q, block in zip(bucket, blocks[pos : pos + m], strict=True):
                    q.blocks.append(block)
            pos += m
            crossed.append((s, used + pos, cached - max(0, pos - uncached)))
        area += used + pos
        if not (s - a + 1) & 4095:
            sched.stop_if_asked()
    sched.used_area += area
    sched.peak_used = max(sched.peak_used, pool.in_use)
    return b


def cross_sparse(sched: Scheduler, a: int, b: int, crossed: list[Point]) -> int:
    """cross for a run much longer than the requests decoding in it (large blocks, few
    requests): each request's crossings, in step and then admission order."""
    pool, bs = sched.pool, sched.bs
    steps: list[tuple[int, int, Request]] = []
    for q in sched.running.values():
        if q.phase >= 0:
            first = a + (q.phase - a) % bs
            steps += [(s, q.seq, q) for s in range(first, b, bs)]
    steps.sort()
    used, cached, uncached = pool.in_use, pool.cached_free, pool.uncached_free
    blocks = pool.allocate(len(steps))
    named = sched.block_ids
    area = (b - a) * used  # each block counts from its step to the run's end
    for pos, ((s, _, q), block) in enumerate(zip(steps, blocks, strict=True), 1):
        if named:
            q.blocks.append(block)
        area += b - s
        if pos == len(steps) or steps[pos][0] != s:  # the step's last crossing
            crossed.append((s, used + pos, cached - max(0, pos - uncached)))
        if not pos & 4095:
            sched.stop_if_asked()
    sched.used_area += area
    sched.peak_used = max(sched.peak_used, pool.in_use)
    return b


def observe_run(sched: Scheduler, crossed: list[Point], observe: RunObserver) -> None:
    running, waiting = len(sched.running), sched.n_waiting
    clock = sched.clock
    if clock is None:
        observe([(s, used, cached, running, waiting) for s, used, cached in crossed])
        return
    # Timed: each step starts when the run's steps before it have lasted.
    n = sched.n_dec
    run_start = sched.t + 1
    starts = clock.decode_starts(
        n, sched.dec_base + n * run_start, [s - run_start for s, _, _ in crossed], sched.step_end
    )
    observe([(s, u, c, running, waiting, at) for (s, u, c), at in zip(crossed, starts, strict=True)])
