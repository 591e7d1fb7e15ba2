"""Domain metrics. Created once per process: prometheus-client's registry is global.
With several worker processes, prometheus-client's multiprocess mode aggregates them
(PROMETHEUS_MULTIPROC_DIR, set by `kvplan serve --workers N`)."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from prometheus_client import Counter, Gauge, Histogram

from kvplan.core.errors import KvplanError
from kvplan.hub import HubError, HubUnavailable

T = TypeVar("T")

CALCULATIONS = Counter(
    "kvplan_calculations_total", "Calculations answered, by endpoint and outcome", ["endpoint", "outcome"]
)
CORE_BUCKETS = (1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.1)
CORE_SECONDS = Histogram(
    "kvplan_core_compute_seconds",
    "Time spent in the calculation core per call",
    ["endpoint"],
    buckets=CORE_BUCKETS,
)
WARNINGS = Counter("kvplan_warnings_total", "Warnings attached to answers, by code", ["code"])
UNHANDLED_ERRORS = Counter("kvplan_unhandled_errors_total", "Requests that failed with a 500")
BUILD_INFO = Gauge("kvplan_build_info", "kvplan version", ["version"], multiprocess_mode="max")
SIMULATOR_INFO = Gauge(
    "kvplan_simulator_info",
    "The simulator this process runs: compiled (by mypyc) or python (its source); "
    "`kvplan compiled status` says why",
    ["build"],
    multiprocess_mode="max",
)
REGISTRY_INFO = Gauge(
    "kvplan_registry_info", "Preset registry loaded", ["version", "models", "gpus"], multiprocess_mode="max"
)
CONNECTIONS_REJECTED = Counter(
    "kvplan_http_connections_rejected_total",
    "Requests and connections refused by the HTTP protocol layer, each closing its connection: "
    "header_too_large (431), header_timeout (408, or a silent close when nothing was sent), "
    "body_timeout and body_too_slow (408), body_budget (503), connection_limit (503, or a close)",
    ["reason"],
)


_outcomes: dict[tuple[str, str], Any] = {}


def count(endpoint: str, outcome: str, n: int = 1) -> None:
    """One calculation answered (outcome ok), refused as bad input (invalid) or stopped."""
    child = _outcomes.get((endpoint, outcome))
    if child is None:
        child = _outcomes[endpoint, outcome] = CALCULATIONS.labels(endpoint, outcome)
    child.inc(n)


def counted(endpoint: str, compute: Callable[[], T]) -> T:
    """Every route counts its calculations this way: bad input as invalid, the rest as ok.
    Failures (500s) are counted where they become answers (errors.py)."""
    try:
        result = compute()
    except KvplanError:
        count(endpoint, "invalid")
        raise
    except HubError as e:
        count(endpoint, "hub_unavailable" if isinstance(e, HubUnavailable) else "invalid")
        raise
    count(endpoint, "ok")
    return result


_warning_children: dict[str, Any] = {}


def count_warnings(codes: Iterable[str] | Mapping[str, int]) -> None:
    """Count each warning code once, or as often as a mapping says (a batch counts its answers'
    codes together: one increment a code, not one a scenario)."""
    if not codes:
        return
    # A dict, not the Mapping ABC: isinstance against an ABC costs a microsecond a request.
    items = codes.items() if isinstance(codes, dict) else ((code, 1) for code in codes)
    for code, times in items:
        child = _warning_children.get(code)
        if child is None:
            child = _warning_children[code] = WARNINGS.labels(code)
        child.inc(times)


def observe_all(histogram: Any, seconds: Sequence[float]) -> None:
    """Many observations of one histogram child at once, recorded as `observe` records them one
    by one (a batch times each scenario's core run: kvplan_core_compute_seconds counts core runs).
    prometheus-client's `observe` takes a lock and walks the buckets in Python each time, a
    twentieth of a batch scenario's cost; here each bucket and the sum are incremented once. It
    reads the child's buckets as prometheus-client 0.2x keeps them: tests/api/test_metrics_bulk.py
    checks that both ways give the same samples."""
    if not seconds:
        return
    bounds = histogram._upper_bounds
    for index, n in Tally(bisect_left(bounds, s) for s in seconds).items():
        histogram._buckets[index].inc(n)
    histogram._sum.inc(sum(seconds))
