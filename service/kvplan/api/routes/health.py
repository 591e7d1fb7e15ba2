"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.openapi import ResponseSpec


class Health(msgspec.Struct, omit_defaults=True):
    status: str
    registry_version: str | None = None


@get("/healthz", tags=["operations"])
async def healthz() -> Health:
    """The process answers."""
    return Health("ok")


@get(
    "/readyz",
    tags=["operations"],
    responses={503: ResponseSpec(Health, description="presets not loaded yet", generate_examples=False)},
)
async def readyz(request: Request[Any, Any, Any]) -> Response[Health]:
    """Ready once the presets are loaded."""
    reg = getattr(request.app.state, "registry", None)
    if reg is None:
        return Response(Health("starting"), status_code=503)
    return Response(Health("ready", reg.version))
