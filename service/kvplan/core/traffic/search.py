"""The highest arrival rate one replica sustains within latency targets, by simulation.

`sustainable_rate` simulates the same workload (the same requests, their arrival gaps scaled by
1 / rate, so the lengths and sharing never change) at chosen rates and keeps the highest that meets
every target. Method: rates double from a first guess until one fails (or halve until one meets),
then bisection on log(rate) until the highest rate that meets and the lowest that fails are within
the relative `tolerance`; the last step simulates rate × (1 + tolerance) itself, so that the answer
holds by construction: at max_rate_per_s every target is met, at max_rate_per_s × (1 + tolerance)
one is not. Latency is not strictly monotone in the rate (a different rate shifts which requests
share a step), so each point is a simulation, never an interpolation.

The number of simulations is bounded (`max_points`), and the workload's size is checked by the
caller before any runs: the search's work is points × one simulation's bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from ..errors import InvalidInput
from ..limits import MAX_ARRIVAL_RATE_PER_S
from ..sim.simulate import TimedSimResult
from .binding import Binding, binding
from .point import RatePoint, point
from .slo import Slo

# The rate a search starts at when the caller gives no hint, requests a second.
FIRST_RATE = 1.0
# The lowest rate a search tries: below it a replica is idle between requests, and a target
# missed there is missed at every rate.
MIN_RATE = 1e-4


class RateSearch(msgspec.Struct, frozen=True, kw_only=True):
    max_rate_per_s: float  # 0: no rate meets every target
    tolerance: float
    method: str
    at_max: RatePoint | None  # the simulation at max_rate_per_s
    above_max: RatePoint | None  # at max_rate_per_s × (1 + tolerance): some target missed
    binding: Binding
    curve: tuple[RatePoint, ...]  # every simulated rate, ascending
    points: int
    reason: str = ""  # when no rate meets: why


Simulate = Callable[[float], TimedSimResult]


def sustainable_rate(
    simulate: Simulate,
    slo: Slo,
    *,
    tolerance: float,
    max_points: int,
    first_rate: float = FIRST_RATE,
    max_rate: float = MAX_ARRIVAL_RATE_PER_S,
    min_rate: float = MIN_RATE,
) -> RateSearch:
    """The search above. `simulate(rate)` runs the workload at `rate` requests a second; min_rate,
    the lowest it probes (at least MIN_RATE: a longer workload's arrivals at MIN_RATE would pass
    the simulator's last arrival time)."""
    least = max(min_rate, MIN_RATE)
    if not 0 < tolerance < 1:
        raise InvalidInput("search.tolerance", "must be between 0 and 1 (a share of the rate)")
    seen: dict[float, RatePoint] = {}

    def at(rate: float) -> RatePoint:
        if rate not in seen:
            if len(seen) >= max_points:
                raise _Exhausted
            seen[rate] = point(rate, simulate(rate), slo)
        return seen[rate]

    lo: float | None = None  # highest rate known to meet
    hi: float | None = None  # lowest rate known to fail
    reason = ""
    try:
        rate = min(max(first_rate, least), max_rate)
        if at(rate).meets:
            lo = rate
            while hi is None:
                if rate >= max_rate:
                    break
                before = at(rate)
                rate = min(rate * 2, max_rate)
                if at(rate).meets:
                    lo = rate
                    if _same(before, at(rate)):  # the workload already arrives as one burst
                        reason = (
                            f"every rate from about {before.rate_per_s:.4g}/s on meets the targets: the "
                            f"workload's requests then arrive as one burst, which the replica serves "
                            "within them; give more requests (count) to load it"
                        )
                        break
                else:
                    hi = rate
        else:
            hi = rate
            # Missed at the first rate: the lowest rate settles whether any rate meets (an idle
            # replica's latency is the least the workload sees); then bisection between the two.
            if rate > least and at(least).meets:
                lo = least
        while lo is not None and hi is not None:
            if hi <= lo * (1 + tolerance) * (1 + 1e-12):
                edge = lo * (1 + tolerance)
                if at(edge).meets:  # not monotone here: search on above it
                    lo, hi = edge, max(hi, edge * (1 + tolerance))
                    continue
                break
            mid = math.sqrt(lo * hi)
            if at(mid).meets:
                lo = mid
            else:
                hi = mid
    except _Exhausted:
        reason = f"the search used its {max_points} simulations before the bracket closed"
        if hi is not None and hi not in seen:  # the bound set above a non-monotone edge, not yet run:
            misses = [r for r in seen if lo is not None and r > lo and not seen[r].meets]
            hi = min(misses, default=None)  # the lowest rate above lo that ran and missed
    curve = tuple(seen[r] for r in sorted(seen))
    if lo is None:
        low = seen[min(seen)]
        missed = ", ".join(
            f"{c.target} {c.value_ms:,.1f} ms > {c.limit_ms:,.1f}" for c in low.checks if not c.met
        )
        return RateSearch(
            max_rate_per_s=0.0,
            tolerance=tolerance,
            method=METHOD,
            at_max=None,
            above_max=low,
            binding=binding(low, idle=low.rate_per_s <= least),
            curve=curve,
            points=len(seen),
            reason=reason
            or f"no rate meets every target: even at {low.rate_per_s:.4g} requests/s, where the replica is "
            f"idle between requests, {missed}. The workload's requests alone take that long on this "
            "model, GPU and layout: relax the targets, or give a faster layout",
        )
    above = seen.get(lo * (1 + tolerance)) or (seen[hi] if hi is not None else None)
    return RateSearch(
        max_rate_per_s=lo,
        tolerance=tolerance,
        method=METHOD,
        at_max=seen[lo],
        above_max=above,
        binding=binding(above if above is not None else seen[lo]),
        curve=curve,
        points=len(seen),
        reason=reason
        or (
            ""
            if hi is not None
            else f"every rate up to the search's ceiling ({max_rate:g}/s) met the targets"
        ),
    )


METHOD = (
    "simulated rates: doubling from the first rate until one misses the targets (or, when the first "
    "misses, the lowest rate, 0.0001/s, to see whether any rate meets), then bisection on log(rate) "
    "until the highest rate that meets and the lowest that misses are within the tolerance; the rate "
    "× (1 + tolerance) is simulated last, so every target holds at max_rate_per_s and one fails above it"
)


def _same(a: RatePoint, b: RatePoint) -> bool:
    """Two rates whose every target figure agrees to 0.1 %."""
    return all(
        abs(x.value_ms - y.value_ms) <= 1e-3 * max(x.value_ms, y.value_ms)
        for x, y in zip(a.checks, b.checks, strict=True)
    )


class _Exhausted(Exception):
    pass
