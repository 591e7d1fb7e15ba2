"""Runs of decode steps, advanced at once (scheduler.py runs the loop around them).

Between arrivals, admissions, prefill chunks and finishes every running request just decodes one
token a step, and the only change to the pool is a decoding request taking its next block when
its tokens cross a block boundary: every block_size steps, from a phase fixed when it starts
decoding. The scheduler keeps the decoding requests on a wheel of block_size buckets by that
phase, in admission order (the order a step serves them), so a run of steps takes its blocks
from the free queue at once and hands them out in step order, up to the first step whose
crossings the free blocks do not cover (that step the scheduler runs whole: it preempts).

A run's crossings repeat every block_size steps, so what a run does is arithmetic in its length,
not a walk over its steps: the blocks it takes, the area under the pool's use, and any step's
pool (Crossings, which the series asks for a few of its steps). Only block ids (a pool that names
every block) are handed out crossing by crossing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import SchedulerStateError
from ..units import cdiv
from .snapshot import Snapshot

# Told of each run as it ends (series.py SeriesRecorder.add_run); one that keeps the run to make
# its records later calls its observed() first.
RunObserver = Callable[["Crossings"], None]
# The scheduler (scheduler.py, which imports this module), typed loosely as snapshot.py types it.
Scheduler = Any
# A step as the series shows it (series.py): step, blocks used, cached free blocks, running,
# waiting[, seconds at the step's start]
Record = tuple[int, int, int, int, int] | tuple[int, int, int, int, int, float]


class Crossings:
    """The steps of a run a..b − 1 that cross a block boundary, and the pool after each, made on
    demand. The decoding requests sit at fixed offsets from a modulo block_size: `offs` (those
    with any, ascending) and `pre` (prefix sums of how many sit at each), so the j-th crossing
    step and the blocks handed out up to it are arithmetic; only offsets with requests are kept,
    so every crossing step takes a block and the blocks in use rise strictly along the run (the
    series keeps a run's last step in a slice as its busiest). The pool before the run, the
    queues and, timed, the run's clock are kept to make the records."""

    __slots__ = (
        "a", "bs", "cached", "clock", "context", "count", "decoding", "offs", "pre", "run_start",
        "running", "sched", "start_s", "uncached", "used", "waiting",
    )  # fmt: skip
    a: int
    bs: int
    offs: list[int]
    pre: list[int]
    count: int

    def __init__(self, sched: Scheduler, a: int, b: int, offs: list[int], pre: list[int]) -> None:
        pool = sched.pool
        self.a, self.bs, self.offs, self.pre = a, sched.bs, offs, pre
        full, rem = divmod(b - a, self.bs)
        self.count = full * len(offs) + bisect.bisect_left(offs, rem)
        self.used, self.cached, self.uncached = pool.in_use, pool.cached_free, pool.uncached_free
        self.sched: Scheduler = sched  # until observed
        self.running = self.waiting = self.decoding = self.context = self.run_start = 0
        self.clock: Any = None
        self.start_s = 0.0

    def blocks(self) -> int:
        """Blocks the run hands out."""
        return self.taken(self.count - 1) if self.count else 0

    def step(self, j: int) -> int:
        cycle, i = divmod(j, len(self.offs))
        return self.a + cycle * self.bs + self.offs[i]

    def taken(self, j: int) -> int:
        """Blocks handed out at crossing steps 0..j."""
        cycle, i = divmod(j, len(self.offs))
        return cycle * self.pre[-1] + self.pre[i + 1]

    def last_before(self, step: int) -> int:
        """The last crossing step before `step` (−1: none; at most the run's last)."""
        d = step - 1 - self.a
        if d < 0:
            return -1
        cycle, rem = divmod(d, self.bs)
        return min(self.count - 1, cycle * len(self.offs) + bisect.bisect_right(self.offs, rem) - 1)

    def observed(self) -> None:
        """Keeps the queues during the run and, timed, its clock (the run started at step
        sched.t + 1, when the step before it ended): before the scheduler moves on, if its
        records are to be made later."""
        sched = self.sched
        if sched is None:
            return
        if sched.t >= self.a:
            raise SchedulerStateError("a run's records are kept after the scheduler moved past it")
        self.sched = None
        self.running, self.waiting = len(sched.running), sched.n_waiting
        if sched.clock is not None:
            self.clock, self.start_s = sched.clock, sched.step_end
            self.decoding, self.run_start = sched.n_dec, sched.t + 1
            self.context = sched.dec_base + self.decoding * self.run_start

    def records(self, js: Sequence[int]) -> list[Record]:
        """The records of crossing steps js (ascending): the pool after each; timed, when it started."""
        self.observed()
        steps = [self.step(j) for j in js]
        used, cached, uncached = self.used, self.cached, self.uncached
        out: list[Record] = []
        for j, s in zip(js, steps, strict=True):
            taken = self.taken(j)
            out.append((s, used + taken, cached - max(0, taken - uncached), self.running, self.waiting))
        if self.clock is None:
            return out
        starts = self.clock.decode_starts(
            self.decoding, self.context, [s - self.run_start for s in steps], self.start_s
        )
        return [(*r, at) for r, at in zip(out, starts, strict=True)]


def covered_until(sched: Scheduler, a: int, b: int) -> int:
    """The first step of a..b − 1 whose block boundaries the free blocks do not cover (b when
    they cover all): every block_size steps, each decoding request crosses one."""
    if sched.n_dec == 0 or b <= a:
        return b
    offs, pre = _offsets(sched, a, a + sched.bs)
    return min(b, _first_uncovered(offs, pre, a, sched.bs, sched.pool.num_free))


def _first_uncovered(offs: list[int], pre: list[int], a: int, bs: int, free: int) -> int:
    """The step of the crossing that `free` blocks leave without one: whole cycles of block_size
    steps first, then the first offset whose crossings so far exceed what is left."""
    cycles, left = divmod(free, pre[-1])
    return a + cycles * bs + offs[bisect.bisect_right(pre, left) - 1]


def advance(
    sched: Scheduler, end: int, pending: list[int], snapshots: list[Snapshot], crossed: list[Crossings]
) -> int:
    """Steps sched.t + 1 .. end − 1, in which requests only decode: their block boundaries
    crossed at once, the snapshots asked of them taken on the way. Returns the step to visit
    next: `end`, or the first step whose boundaries the free blocks do not cover (it preempts).
    Appends the crossings of each stretch it crossed at once."""
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


def _offsets(sched: Scheduler, a: int, b: int) -> tuple[list[int], list[int]]:
    """The decoding requests' offsets from step a at which they cross (ascending; those before
    b − a, a run shorter than a block crossing no more), and the prefix sums of how many cross
    at each."""
    bs, wheel = sched.bs, sched.wheel
    span = min(bs, b - a)
    offs: list[int] = []
    pre = [0]
    if bs <= 4 * sched.n_dec:
        for j in range(span):
            m = len(wheel[(a + j) % bs])
            if m:
                offs.append(j)
                pre.append(pre[-1] + m)
        return offs, pre
    for j in sorted([o for q in sched.running.values() if q.phase >= 0 and (o := (q.phase - a) % bs) < span]):
        if offs and offs[-1] == j:
            pre[-1] += 1
        else:
            offs.append(j)
            pre.append(pre[-1] + 1)
    return offs, pre


def cross(sched: Scheduler, a: int, b: int, crossed: list[Crossings]) -> int:
    """The block boundaries of steps a..b − 1, as far as the free blocks cover them: the
    blocks taken from the pool at once and, named, handed out in the order the steps would (step
    by step, admission order within one). Returns the first step not covered."""
    pool, bs = sched.pool, sched.bs
    if sched.n_dec == 0:
        sched.used_area += pool.in_use * (b - a)
        return b
    if cdiv(b - a, bs) * sched.n_dec > pool.num_free:  # the pool may run out first
        offs, pre = _offsets(sched, a, a + bs)
        b = min(b, _first_uncovered(offs, pre, a, bs, pool.num_free))
    else:
        offs, pre = _offsets(sched, a, b)
    run = Crossings(sched, a, b, offs, pre)
    if sched.block_ids:
        _hand_out(sched, run, pool.allocate(run.blocks()))
    else:  # the tables catch up when read (Scheduler._catch_up)
        pool.take(run.blocks())
    # The area under the pool's use: each block counts from its step to the run's end.
    full, rem = divmod(b - a, bs)
    area = (b - a) * run.used
    for i, j in enumerate(offs):
        c = full + (j < rem)  # this offset's crossings
        area += (pre[i + 1] - pre[i]) * (c * (b - a - j) - bs * c * (c - 1) // 2)
    sched.used_area += area
    if run.count:
        crossed.append(run)
    sched.peak_used = max(sched.peak_used, pool.in_use)
    return b


def _hand_out(sched: Scheduler, run: Crossings, blocks: list[int]) -> None:
    """Named blocks to the requests, in step order and admission order within a step."""
    wheel, bs = sched.wheel, sched.bs
    pos = 0
    for j in range(run.count):
        for q in wheel[run.step(j) % bs]:
            q.blocks.append(blocks[pos])
            pos += 1
        if not (j + 1) & 4095:
            sched.stop_if_asked()
