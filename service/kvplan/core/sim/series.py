"""The pool over time, as the simulation answers it: at most MAX_SERIES points, the busiest step of
each slice of the run, in bounded memory however long the run.

Every step the loop visits is a record, and so is every step of a decode run that crosses a block
boundary. A run's records are not made one by one: the run (runs.Crossings) computes any of them
on demand, and within a run the blocks in use only rise, so of its steps in one slice (or bin)
only the last can be the busiest. A slice spanned by a run costs one candidate, not its steps,
and a record (with its clock) only if the answer shows it."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..errors import SchedulerStateError
from ..limits import MAX_SERIES
from .runs import Crossings, Record

# Records the answer slices exactly (past them it slices bins), and records or runs held before
# folding: 65,536 records are about 16 MB (as many runs, about 22 MB); the sizes benchmark's runs
# are answered exactly.
SERIES_EXACT_RECORDS = 1 << 16
# Bins kept while folding: each fold halves them, so the recorder holds at most this many.
SERIES_FOLD_BINS = 4096


class SeriesPoint(msgspec.Struct, frozen=True, array_like=False):
    step: int
    blocks_used: int
    cached_free_blocks: int
    running: int
    waiting: int


class TimedSeriesPoint(SeriesPoint, frozen=True):
    time_s: float


# A candidate for a slice or bin: a record, or (step, blocks used, run, j), a run's crossing j whose
# record is made only if it is still the busiest when the answer is read (a record's clock costs
# more than the comparisons that discard most candidates).
Candidate = Record | tuple[int, int, Crossings, int]


def _keep(kept: dict[int, Candidate], k: int, r: Candidate) -> None:
    """r in slice (or bin) k, if busier than what it holds: the first of equals stays."""
    old = kept.get(k)
    if old is None or r[1] > old[1]:
        kept[k] = r


def _candidate(run: Crossings, j: int) -> Candidate:
    return (run.step(j), run.used + run.taken(j), run, j)


def _make_records(candidates: list[Candidate]) -> list[Record]:
    return [c[2].records([c[3]])[0] if len(c) == 4 else c for c in candidates]


def _busiest(items: Sequence[Candidate | Crossings], count: int, bins: int) -> list[Record]:
    """At most `bins` records of the `count` that `items` hold: per equal slice of the steps, the
    busiest (most blocks used; the first of equals). The peak survives."""
    if count <= bins:
        return [r for item in items for r in _records(item)]
    first, last = _first_step(items[0]), _last_step(items[-1])
    width = (last - first + 1) / bins

    def slice_of(step: int) -> int:
        return min(bins - 1, int((step - first) / width))

    kept: dict[int, Candidate] = {}
    # A slice's last step in a run is found by bisection on the slices themselves: their width is
    # a float, which no formula inverts to the same integer steps.
    for run in items:
        if isinstance(run, tuple):  # a record or candidate: its step and blocks used are all it takes
            _keep(kept, slice_of(run[0]), run)
            continue
        j = 0
        while j < run.count:  # the run's last step in each slice it spans
            k = slice_of(run.step(j))
            lo, hi = j, run.count - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if slice_of(run.step(mid)) == k else (lo, mid - 1)
            _keep(kept, k, _candidate(run, lo))
            j = lo + 1
    return _make_records([kept[k] for k in sorted(kept)])


def _records(item: Candidate | Crossings) -> list[Record]:
    return _make_records([item]) if isinstance(item, tuple) else item.records(range(item.count))


def _first_step(item: Candidate | Crossings) -> int:
    return item[0] if isinstance(item, tuple) else item.step(0)


def _last_step(item: Candidate | Crossings) -> int:
    return item[0] if isinstance(item, tuple) else item.step(item.count - 1)


class SeriesRecorder:
    """The pool over time in bounded memory. Up to SERIES_EXACT_RECORDS records the answer is
    exactly MAX_SERIES slices of them; past that, records fold into at most SERIES_FOLD_BINS bins
    of a power-of-two width, each keeping its busiest record, which the answer slices again. Either
    way the busiest step overall is in the answer. Records and runs are kept as they come (a run
    as itself: it makes its records on demand) until SERIES_EXACT_RECORDS of them are held, and
    folded then, or when the answer is read: a fold at the width the answer needs keeps the same
    record per bin as folding each as it came into narrower bins merged since, for less work."""

    def __init__(self) -> None:
        self.items: list[Record | Crossings] = []
        self.count = 0  # the records items hold
        self.bins: dict[int, Candidate] | None = None  # once folding: bin index → busiest candidate
        self.first = 0
        self.width = 1

    def add(
        self, step: int, used: int, cached: int, running: int, waiting: int, time_s: float | None = None
    ) -> None:
        """One visited step (and, timed, the seconds at which it started)."""
        bins = self.bins
        if bins is not None:  # most steps are not their bin's busiest: known before any record is made
            kept = bins.get((step - self.first) // self.width)
            if kept is not None and used <= kept[1]:
                return
        r: Record = (
            (step, used, cached, running, waiting)
            if time_s is None
            else (step, used, cached, running, waiting, time_s)
        )
        if self.bins is None:
            self.items.append(r)
            self.count += 1
            if len(self.items) > SERIES_EXACT_RECORDS:
                self._start_folding()
            return
        self._fold_in(r)

    def add_run(self, run: Crossings) -> None:
        """The steps of one decode run that crossed a block boundary (told as the run ends)."""
        if self.bins is None:
            run.observed()  # its records are made later
            self.items.append(run)
            self.count += run.count
            if len(self.items) > SERIES_EXACT_RECORDS:
                self._start_folding()
            return
        self._fold_run(run)

    def _start_folding(self) -> None:
        self.first = _first_step(self.items[0])
        self.bins = {}
        # As wide as the records held need at once: folding them into narrower bins and merging
        # pairs as they come keeps the same record per bin (the first of the busiest).
        while (_last_step(self.items[-1]) - self.first) // self.width >= SERIES_FOLD_BINS:
            self.width *= 2
        for item in self.items:
            if isinstance(item, tuple):
                self._fold_in(item)
            else:
                self._fold_run(item)
        self.items = []
        self.count = 0

    def _fold_run(self, run: Crossings) -> None:
        """The run's last step in each bin it spans: its busiest there (blocks only rise in a run),
        made only when it is busier than what the bin holds."""
        bins = self.bins
        assert bins is not None
        last = run.count - 1
        k = (run.step(last) - self.first) // self.width
        if k < SERIES_FOLD_BINS and (run.step(0) - self.first) // self.width == k:  # in one bin
            kept = bins.get(k)
            if kept is None or run.used + run.taken(last) > kept[1]:
                run.observed()
                bins[k] = _candidate(run, last)
            return
        j = 0
        while j < run.count:
            k = self._widen_for(run.step(j))
            last = run.last_before(self.first + (k + 1) * self.width)
            if last < j:
                raise SchedulerStateError(f"a run's step {run.step(j):,} is not before its bin's end")
            assert self.bins is not None  # widening may have merged it into a new dict
            kept = self.bins.get(k)
            if kept is None or run.used + run.taken(last) > kept[1]:  # else not worth keeping
                run.observed()
                self._fold_in(_candidate(run, last))
            j = last + 1

    def _widen_for(self, step: int) -> int:
        """The bin of `step`, the bins widened (pairs merged) until it is one of them."""
        bins = self.bins
        assert bins is not None
        k = (step - self.first) // self.width
        while k >= SERIES_FOLD_BINS:  # steps only grow: widen every bin, merging pairs
            self.width *= 2
            k //= 2
            merged: dict[int, Candidate] = {}
            for j in sorted(bins):
                _keep(merged, j // 2, bins[j])
            self.bins = bins = merged
        return k

    def _fold_in(self, r: Candidate) -> None:
        k = self._widen_for(r[0])
        assert self.bins is not None
        _keep(self.bins, k, r)

    def series(self) -> tuple[SeriesPoint, ...]:
        if self.bins is None and self.count > SERIES_EXACT_RECORDS:
            self._start_folding()
        if self.bins is None:
            records = _busiest(self.items, self.count, MAX_SERIES)
        else:
            bins = self.bins
            records = _busiest([bins[k] for k in sorted(bins)], len(bins), MAX_SERIES)
        return tuple((TimedSeriesPoint if len(r) == 6 else SeriesPoint)(*r) for r in records)
