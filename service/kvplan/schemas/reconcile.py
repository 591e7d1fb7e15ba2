"""The incident-review request (/v1/reconcile)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from kvplan.core.limits import MAX_CONCURRENCY, MAX_LOG_BYTES, MAX_METRICS_BYTES, MAX_NAME_LENGTH

from .common import EngineId, ModelField, Tokens


class ReconcileOverrides(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Inputs the log does not state (or states as a local path), or that should be replaced."""

    model: ModelField | None = None  # "" is refused by the service, naming the field
    gpu: Annotated[str, Meta(max_length=MAX_NAME_LENGTH)] | None = None
    engine: EngineId | None = None
    target_concurrency: Annotated[int, Meta(ge=1, le=MAX_CONCURRENCY)] | None = None
    context_tokens: Tokens | None = None


class ReconcileRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A vLLM start-up log, and optionally its /metrics scrape and inputs the log lacks."""

    log: Annotated[str, Meta(min_length=1, max_length=MAX_LOG_BYTES)]
    metrics: Annotated[str, Meta(max_length=MAX_METRICS_BYTES)] | None = None
    overrides: ReconcileOverrides | None = None
