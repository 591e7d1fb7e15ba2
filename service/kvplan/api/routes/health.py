"""Liveness, readiness and metrics."""

from __future__ import annotations

import os
from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.openapi import ResponseSpec
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from ..deployments import of as deployments_of
from ..http import structured
from ..openapi import TextAlternative

# Litestar appends "; charset=utf-8" to text/ media types: pass the type without it, once.
METRICS_TYPE = CONTENT_TYPE_LATEST.replace("; charset=utf-8", "")


class Health(msgspec.Struct, omit_defaults=True):
    status: str
    registry_version: str | None = None


@get(
    "/healthz",
    tags=["operations"],
    operation_class=TextAlternative,
    responses={200: ResponseSpec(Health, description="the process answers", generate_examples=False)},
)
async def healthz(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The process answers."""
    return structured(request, Health("ok"), "kvplan health")


@get(
    "/readyz",
    tags=["operations"],
    responses={503: ResponseSpec(Health, description="presets not loaded yet", generate_examples=False)},
)
async def readyz(request: Request[Any, Any, Any]) -> Response[Health]:
    """Ready once the presets are loaded, and the deployments file (when there is one) has been
    planned at least once: a pod started on a broken file takes no traffic."""
    reg = getattr(request.app.state, "registry", None)
    if reg is None or not deployments_of(request.app.state).ready:
        return Response(Health("starting"), status_code=503)
    return Response(Health("ready", reg.version))


@get("/metrics", tags=["operations"], media_type=METRICS_TYPE, sync_to_thread=False)
def prometheus_metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus metrics (text exposition). With several workers, the service's own aggregated
    across them; the deployments' plans (kvplan_deployment_*) as this worker planned them, which
    every worker does alike (api/deployments.py)."""
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return Response(
        generate_latest(registry) + deployments_of(request.app.state).exposition, media_type=METRICS_TYPE
    )
