"""Service settings, from the environment (every variable is listed in docs/operations.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

KiB = 1024
MiB = 1024 * KiB


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}: must be an integer, got {raw!r}") from None


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default  # a default of 0 means unset: the caller reads it as None
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"{name}: must be a number, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise SystemExit(f"{name}: must be a positive number of seconds, got {raw!r}")
    return value


@dataclass(frozen=True)
class Settings:
    host: str = field(default_factory=lambda: os.environ.get("KVPLAN_HOST", "127.0.0.1"))
    """Address to listen on."""
    port: int = field(default_factory=lambda: _int("KVPLAN_PORT", 8000))
    """Port to listen on."""
    workers: int = field(default_factory=lambda: _int("KVPLAN_WORKERS", 1))
    """Server processes; above 1, Prometheus metrics aggregate through multiprocess mode."""
    log_level: str = field(default_factory=lambda: os.environ.get("KVPLAN_LOG_LEVEL", "INFO"))
    """structlog level: DEBUG, INFO, WARNING, ERROR."""
    log_json: bool = field(default_factory=lambda: os.environ.get("KVPLAN_LOG_FORMAT", "json") == "json")
    """json (default) or console."""
    max_body_bytes: int = field(default_factory=lambda: _int("KVPLAN_MAX_BODY_BYTES", MiB))
    """Request bodies above this get 413."""
    drain_seconds: int = field(default_factory=lambda: _int("KVPLAN_DRAIN_SECONDS", 20))
    """On SIGTERM, in-flight requests get this long to finish."""
    header_max_bytes: int = field(default_factory=lambda: _int("KVPLAN_HEADER_MAX_BYTES", 32 * KiB))
    """Request line plus headers above this get 431 and the connection closes. 32 KiB is what an
    nginx ingress in front passes by default (4 buffers of 8 KiB); kvplan's own URLs are < 2 KiB."""
    header_timeout_seconds: float = field(
        default_factory=lambda: _float("KVPLAN_HEADER_TIMEOUT_SECONDS", 10.0)
    )
    """The request line and headers must arrive within this long of the connection opening (or of the
    first byte of a later request on it): else 408 (nothing sent yet: a silent close). Also bounds how
    long a body the service answered early (413, 415, 404) is read and discarded."""
    keep_alive_seconds: float = field(default_factory=lambda: _float("KVPLAN_KEEP_ALIVE_SECONDS", 5.0))
    """An idle keep-alive connection closes after this long. Keep it above the idle timeout of any
    proxy that pools connections to the pods (ingress-nginx upstream: 60 s, so 65)."""
    unread_body_bytes: int = field(default_factory=lambda: _int("KVPLAN_UNREAD_BODY_BYTES", 8 * MiB))
    """When the answer comes before the body was read (413, 415, 404, 405), up to this many bytes of it
    are read and discarded first, so the client, still sending, reads the answer instead of a reset.
    A longer body: the answer says `Connection: close` and the rest is not read."""
    extra_presets: str = field(default_factory=lambda: os.environ.get("KVPLAN_EXTRA_PRESETS", ""))
    """A directory of extra presets (models/*.json, *.toml), loaded after the built-in ones."""
    bench_routes: bool = field(default_factory=lambda: os.environ.get("KVPLAN_BENCH_ROUTES") == "1")
    """Adds /bench/constant, a bare handler the benchmarks compare against. Off in production."""
    answer_cache_bytes: int = field(default_factory=lambda: _int("KVPLAN_CACHE_BYTES", 32 * MiB))
    """Bytes of encoded answers each worker keeps for repeated scenarios (0 turns the cache off)."""
    heavy_threads: int = field(default_factory=lambda: _int("KVPLAN_HEAVY_THREADS", 1))
    """Threads per worker for CPU-heavy answers (batch, fleet, sweep, simulate), off the event loop.
    They share one interpreter lock: a second thread adds no CPU and, measured, halves batch
    throughput under concurrent batches; scale with workers (processes) instead."""
    hub_threads: int = field(default_factory=lambda: _int("KVPLAN_HUB_THREADS", 4))
    """Threads per worker fetching Hub models: they wait on the network, not the CPU."""
    hub_queue: int = field(default_factory=lambda: _int("KVPLAN_HUB_QUEUE", 32))
    """Distinct Hub models a worker fetches at once (one fetch each, however many requests wait
    for it); past that a request for another model answers 503 at once."""
    heavy_queue: int = field(default_factory=lambda: _int("KVPLAN_HEAVY_QUEUE", 64))
    """Heavy requests that may wait for a thread; past threads + queue a worker answers 503 at once."""
    heavy_deadline_seconds: float | None = field(
        default_factory=lambda: _float("KVPLAN_HEAVY_DEADLINE_SECONDS", 0.0) or None
    )
    """When set, every heavy route's deadline (an operator's override of the measured table below);
    unset, each route has its own."""
    heavy_deadline_scale: float = field(default_factory=lambda: _float("KVPLAN_HEAVY_DEADLINE_SCALE", 1.0))
    """Each heavy route's deadline (api/offload.py ROUTE_DEADLINES, set from the slowest input its
    work bounds admit, measured) is multiplied by this: raise it on a machine slower than the one
    they were measured on, so no admitted request is stopped for its size."""
    body_timeout_seconds: float = field(default_factory=lambda: _float("KVPLAN_BODY_TIMEOUT_SECONDS", 30.0))
    """A request body must have arrived whole within this long of its head: else 408 and the
    connection closes. Routes whose bodies are streamed by design have their own bound below."""
    streamed_body_timeout_seconds: float = field(
        default_factory=lambda: _float("KVPLAN_STREAMED_BODY_TIMEOUT_SECONDS", 120.0)
    )
    """The same, for routes whose bodies are large by design (/v1/reconcile's pasted logs,
    /v1/simulate's traces)."""
    body_min_rate: int = field(default_factory=lambda: _int("KVPLAN_BODY_MIN_BYTES_PER_SECOND", 16 * KiB))
    """After its first `body_rate_grace_seconds`, a body still arriving must have come at least this
    fast on average since its head (bytes a second): else 408. 0 turns the rate bound off."""
    body_rate_grace_seconds: float = field(
        default_factory=lambda: _float("KVPLAN_BODY_RATE_GRACE_SECONDS", 5.0)
    )
    """How long a body may arrive at any rate before the minimum rate applies."""
    body_budget_bytes: int = field(default_factory=lambda: _int("KVPLAN_BODY_BUDGET_BYTES", 32 * MiB))
    """Body bytes one worker holds for requests still arriving: a declared Content-Length counts whole
    from its head, a chunked body as it arrives. A body that would exceed it gets 503 with
    Retry-After at once. Keep it above the largest body a route takes (/v1/reconcile: 12 MiB)."""
    max_connections: int = field(default_factory=lambda: _int("KVPLAN_MAX_CONNECTIONS", 2048))
    """Open connections per worker. Past it a new connection is refused at once (503 with
    Retry-After, or closed if it sends nothing within a second); /healthz, /readyz and /metrics
    are still answered on it, so probes and scrapes keep working under a flood."""
    deployments: str = field(default_factory=lambda: os.environ.get("KVPLAN_DEPLOYMENTS", ""))
    """A TOML file of the fleet's vLLM deployments (docs/autoscaling.md): each is planned, published
    as kvplan_deployment_* series and answered at /v1/deployments. Unset: none."""
    deployments_reload_seconds: float = field(
        default_factory=lambda: _float("KVPLAN_DEPLOYMENTS_RELOAD_SECONDS", 10.0)
    )
    """How often the deployments file is checked for changes (it is re-planned only when its bytes
    changed, or on SIGHUP)."""
