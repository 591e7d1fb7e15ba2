"""The incident-review request (/v1/reconcile)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from kvplan.core.budget.types import ENGINE_SETTINGS
from kvplan.core.limits import MAX_LOG_BYTES, MAX_METRICS_BYTES
from kvplan.core.validate import Input

from .common import takes


# Every setting optional (None: what the log says); model "" is refused by the service, naming it.
@takes("model? hf_config gpu?", *(f"{f}?" for f in ENGINE_SETTINGS), "quantization? engine?")
class ReconcileOverrides(Input):
    """Inputs the log does not state (or states as a local path), or that should be replaced:
    every /v1/budget input, each replacing what the log says, and the model's config.json."""

    hf_config: (
        Annotated[
            dict[str, Any],
            Meta(
                description="the model's config.json, verbatim: plans a model the log names by a local path"
            ),
        ]
        | None
    ) = None


class ReconcileRequest(Input):
    """A vLLM start-up log, and optionally its /metrics scrape and inputs the log lacks."""

    log: Annotated[str, Meta(min_length=1, max_length=MAX_LOG_BYTES)]
    metrics: Annotated[str, Meta(max_length=MAX_METRICS_BYTES)] | None = None
    overrides: ReconcileOverrides | None = None
