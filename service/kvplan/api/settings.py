"""Service settings, from the environment (every variable is listed in docs/operations.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

MiB = 1024 * 1024


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}: must be an integer, got {raw!r}") from None


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
    extra_presets: str = field(default_factory=lambda: os.environ.get("KVPLAN_EXTRA_PRESETS", ""))
    """A directory of extra presets (models/*.json, *.toml), loaded after the built-in ones."""
    bench_routes: bool = field(default_factory=lambda: os.environ.get("KVPLAN_BENCH_ROUTES") == "1")
    """Adds /bench/constant, a bare handler the benchmarks compare against. Off in production."""
