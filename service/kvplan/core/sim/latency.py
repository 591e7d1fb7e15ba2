"""Latency and throughput of a timed simulation, counted as `vllm bench serve` counts them
(vllm/benchmarks/serve.py calculate_metrics).

Per request: queue time (arrival to first scheduled), TTFT (arrival to the end of the step that
samples the first token), end-to-end latency (arrival to the last token), and TPOT, (last − first
token) ÷ (output − 1) for requests of more than one output token. With a serving path
(core/perf/serving.py) the arrival is the client's send, so the first three hold its request path
(all charged before the engine: queue time holds the first token's way back too) and its
tokenization; TPOT holds neither. ITL pools every gap between two
tokens of a request: each is the duration of a step the request decoded in (or, after a
preemption, the time from its last token to the token its recomputation samples), so it is kept
as a histogram of step durations weighted by the requests decoding in them. Percentiles
interpolate linearly between ranks, as numpy.percentile does; ITL's come from that histogram, whose
bins are 0.1 % wide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

# Relative width of an ITL histogram bin: percentiles of ITL are within 0.1 % of the exact ones.
ITL_BIN_RATIO = 1.001
_LOG_BIN = math.log(ITL_BIN_RATIO)


class Distribution(msgspec.Struct, frozen=True):
    """Milliseconds: the mean, the 50th, 90th and 99th percentiles, and the standard deviation
    (numpy.std's, over the population)."""

    mean: float
    p50: float
    p90: float
    p99: float
    std: float


class Latency(msgspec.Struct, frozen=True):
    queue_ms: Distribution
    ttft_ms: Distribution
    tpot_ms: Distribution
    itl_ms: Distribution
    e2e_ms: Distribution


class Throughput(msgspec.Struct, frozen=True):
    """Per second of the run: from the first arrival to the last token."""

    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    input_tokens: int  # prompts as sent (each turn with its history)
    output_tokens: int


def percentile(ordered: Sequence[float], p: float) -> float:
    """numpy.percentile's default (linear) of ascending values."""
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * p / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def distribution(values_s: Sequence[float]) -> Distribution:
    """Seconds in, milliseconds out."""
    ordered = sorted(values_s)
    if not ordered:
        return Distribution(0.0, 0.0, 0.0, 0.0, 0.0)
    ms = 1000.0
    mean = math.fsum(ordered) / len(ordered)
    var = math.fsum((v - mean) ** 2 for v in ordered) / len(ordered)
    return Distribution(
        mean=mean * ms,
        p50=percentile(ordered, 50) * ms,
        p90=percentile(ordered, 90) * ms,
        p99=percentile(ordered, 99) * ms,
        std=math.sqrt(var) * ms,
    )


class GapHistogram:
    """Inter-token gaps: step durations, each weighted by the requests that decoded in it."""

    def __init__(self) -> None:
        self.bins: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.squares = 0.0

    def add(self, seconds: float, weight: int) -> None:
        if weight <= 0:
            return
        k = math.floor(math.log(seconds) / _LOG_BIN)
        self.bins[k] = self.bins.get(k, 0) + weight
        self.count += weight
        self.total += seconds * weight
        self.squares += seconds * seconds * weight

    def add_run(self, first: float, last: float, steps: int, total: float, weight: int) -> None:
        """`steps` steps whose durations rise evenly from `first` to `last` and sum to `total`,
        each with `weight` requests decoding: the mean exactly, and in each bin the steps whose
        duration falls in it."""
        if weight <= 0 or steps <= 0:
            return
        lo, hi = min(first, last), max(first, last)
        k, top = math.floor(math.log(lo) / _LOG_BIN), math.floor(math.log(hi) / _LOG_BIN)
        bins, below = self.bins, 0
        while k < top:  # steps j with lo + (hi − lo)·j/(steps − 1) under the bin's upper edge
            edge = math.exp((k + 1) * _LOG_BIN)
            under = min(steps, max(below, math.ceil((edge - lo) / (hi - lo) * (steps - 1))))
            bins[k] = bins.get(k, 0) + weight * (under - below)
            below, k = under, k + 1
        bins[top] = bins.get(top, 0) + weight * (steps - below)
        self.count += weight * steps
        self.total += total * weight
        # Σ d² of an arithmetic run: k·(mean² + spread²), spread² = (last − first)²·(k + 1)/(12(k − 1)).
        mean = total / steps
        spread = (last - first) ** 2 * (steps + 1) / (12 * (steps - 1)) if steps > 1 else 0.0
        self.squares += steps * (mean * mean + spread) * weight

    def distribution(self) -> Distribution:
        if not self.count:
            return Distribution(0.0, 0.0, 0.0, 0.0, 0.0)
        keys = sorted(self.bins)
        ms = 1000.0

        def at(p: float) -> float:
            # numpy's linear rank over the pooled gaps; a bin stands for its geometric centre.
            rank = (self.count - 1) * p / 100
            seen = 0
            for k in keys:
                seen += self.bins[k]
                if seen > rank:
                    return math.exp((k + 0.5) * _LOG_BIN) * ms
            return math.exp((keys[-1] + 0.5) * _LOG_BIN) * ms

        mean = self.total / self.count
        std = math.sqrt(max(0.0, self.squares / self.count - mean * mean))
        return Distribution(mean=mean * ms, p50=at(50), p90=at(90), p99=at(99), std=std * ms)
