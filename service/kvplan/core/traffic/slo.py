"""Latency targets (SLOs) on the figures a timed simulation answers: a statistic (mean, p50, p90,
p99) of a latency (queue, TTFT, TPOT, ITL, end-to-end), in milliseconds. A run meets the targets
when every one given holds."""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated

import msgspec
from msgspec import Meta

from ..errors import InvalidInput
from ..limits import MAX_SLO_MS
from ..sim.latency import Distribution, Latency

Target = Annotated[float, Meta(gt=0, le=MAX_SLO_MS, description="milliseconds")]
METRICS = ("queue", "ttft", "tpot", "itl", "e2e")
STATS = ("mean", "p50", "p90", "p99")
NAMES = {"queue": "queue time", "ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "end-to-end latency"}


class Slo(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Targets, each optional: `<metric>_<stat>_ms`, e.g. ttft_p90_ms, tpot_p99_ms, e2e_p99_ms."""

    queue_mean_ms: Target | None = None
    queue_p50_ms: Target | None = None
    queue_p90_ms: Target | None = None
    queue_p99_ms: Target | None = None
    ttft_mean_ms: Target | None = None
    ttft_p50_ms: Target | None = None
    ttft_p90_ms: Target | None = None
    ttft_p99_ms: Target | None = None
    tpot_mean_ms: Target | None = None
    tpot_p50_ms: Target | None = None
    tpot_p90_ms: Target | None = None
    tpot_p99_ms: Target | None = None
    itl_mean_ms: Target | None = None
    itl_p50_ms: Target | None = None
    itl_p90_ms: Target | None = None
    itl_p99_ms: Target | None = None
    e2e_mean_ms: Target | None = None
    e2e_p50_ms: Target | None = None
    e2e_p90_ms: Target | None = None
    e2e_p99_ms: Target | None = None


class TargetCheck(msgspec.Struct, frozen=True):
    """One target against what a run gave."""

    target: str  # the field, e.g. ttft_p90_ms
    limit_ms: float
    value_ms: float
    met: bool


def targets(slo: Slo) -> list[tuple[str, str, str, float]]:
    """(field, metric, stat, limit) of every target given, in METRICS × STATS order; at least one,
    and no two that contradict each other (a lower percentile above a higher one's limit is fine;
    a higher percentile's limit below a lower one's is not: p99 ≥ p90 ≥ p50 always)."""
    out = [
        (f"{m}_{s}_ms", m, s, limit)
        for m in METRICS
        for s in STATS
        if (limit := getattr(slo, f"{m}_{s}_ms")) is not None
    ]
    if not out:
        raise InvalidInput("slo", "give at least one target, e.g. ttft_p90_ms or tpot_p99_ms")
    for m in METRICS:
        given = [(s, limit) for f, mm, s, limit in out if mm == m and s != "mean"]
        for (s1, l1), (s2, l2) in pairwise(given):
            if l2 < l1:  # STATS order: p50 < p90 < p99, so a higher percentile's target is tighter
                raise InvalidInput(
                    f"slo.{m}_{s2}_ms",
                    f"{l2:g} ms is below {m}_{s1}_ms ({l1:g} ms): the {s2} of a distribution is never "
                    f"below its {s1}, so {m}_{s1}_ms can never bind; give the {s2} target at least {l1:g} ms",
                )
    for _, m, s, limit in out:
        if m != "ttft":
            continue
        e2e = getattr(slo, f"e2e_{s}_ms")
        if e2e is not None and e2e < limit:
            raise InvalidInput(
                f"slo.e2e_{s}_ms",
                f"{e2e:g} ms is below ttft_{s}_ms ({limit:g} ms): a request's end-to-end latency "
                "includes its TTFT, so the TTFT target can never bind",
            )
    return out


def check(slo: Slo, latency: Latency) -> tuple[TargetCheck, ...]:
    """Every target against the run's latency."""
    out = []
    for field, metric, stat, limit in targets(slo):
        d: Distribution = getattr(latency, f"{metric}_ms")
        value = float(getattr(d, stat))
        out.append(TargetCheck(field, limit, value, value <= limit))
    return tuple(out)
