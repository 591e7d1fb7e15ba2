"""Domain metrics. Created once per process: prometheus-client's registry is global.
With several worker processes, prometheus-client's multiprocess mode aggregates them
(PROMETHEUS_MULTIPROC_DIR, set by `kvplan serve --workers N`)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

CALCULATIONS = Counter(
    "kvplan_calculations_total", "Calculations answered, by endpoint and outcome", ["endpoint", "outcome"]
)
CORE_SECONDS = Histogram(
    "kvplan_core_compute_seconds",
    "Time spent in the calculation core per call",
    ["endpoint"],
    buckets=(1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.1),
)
WARNINGS = Counter("kvplan_warnings_total", "Warnings attached to answers, by code", ["code"])
UNHANDLED_ERRORS = Counter("kvplan_unhandled_errors_total", "Requests that failed with a 500")
BUILD_INFO = Gauge("kvplan_build_info", "kvplan version", ["version"], multiprocess_mode="max")
REGISTRY_INFO = Gauge(
    "kvplan_registry_info", "Preset registry loaded", ["version", "models", "gpus"], multiprocess_mode="max"
)
CONNECTIONS_REJECTED = Counter(
    "kvplan_http_connections_rejected_total",
    "Connections closed before a request reached the app: header_too_large (431), header_timeout "
    "(408, or a silent close when nothing was sent)",
    ["reason"],
)
