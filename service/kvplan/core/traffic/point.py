"""One simulated rate of a capacity search: what the latency was, and whether every target held."""

from __future__ import annotations

import msgspec

from ..sim.latency import Latency, Throughput
from ..sim.simulate import TimedSimResult
from .slo import Slo, TargetCheck, check


class RatePoint(msgspec.Struct, frozen=True, kw_only=True):
    """One simulated rate: the latency it gave and whether every target held."""

    rate_per_s: float
    meets: bool
    latency: Latency
    throughput: Throughput
    checks: tuple[TargetCheck, ...]
    preemptions: int
    waiting_s: dict[str, float]


def point(rate: float, result: TimedSimResult, slo: Slo) -> RatePoint:
    checks = check(slo, result.latency)
    return RatePoint(
        rate_per_s=rate,
        meets=all(c.met for c in checks),
        latency=result.latency,
        throughput=result.throughput,
        checks=checks,
        preemptions=result.preemptions,
        waiting_s=result.waiting_s,
    )
