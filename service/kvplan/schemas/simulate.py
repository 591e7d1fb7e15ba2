"""Wire schemas of /v1/simulate: the pool and the workload. The workload's types are the core's
own (kvplan.core.sim.workload): their constraints are the validation, here and in the core."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from kvplan.core.limits import MAX_LISTED_REQUESTS
from kvplan.core.sim.workload import Generator, SimRequest
from kvplan.core.validate import Input

from .common import Concurrency, settings_but, takes


class SimWorkload(Input):
    """Exactly one of requests (listed) or generator (seeded; it gives its own concurrency)."""

    requests: Annotated[list[SimRequest], Meta(min_length=1, max_length=MAX_LISTED_REQUESTS)] | None = None
    generator: Generator | None = None
    concurrency: Concurrency | None = None


# A simulation's requests give their own lengths: no context_tokens (nor a concurrency target).
@takes(
    "workload num_blocks scheduling_policy enable_prefix_caching snapshot_steps model? gpu",
    *settings_but("context_tokens", "target_concurrency"),
    "quantization engine goodput tokenize_us_per_token",
)
class SimulateRequest(Input):
    """The pool from the budget's inputs (model, gpu, …) or from num_blocks and block_size. A
    workload whose arrivals are in seconds runs timed, on the model and GPU's step-time model."""

    workload: SimWorkload


_decoder = msgspec.json.Decoder(SimulateRequest)
_LENGTHS = ("prompt", "output")


def decode_simulate_request(body: bytes) -> SimulateRequest:
    """Decode and validate a body. A length distribution without "kind" is fixed, as it was before
    lengths became a tagged union (msgspec has no default tag): such a body takes a second path
    that fills the kind in and converts, under the same constraints and with the same error paths."""
    try:
        return _decoder.decode(body)
    except msgspec.ValidationError:
        raw = msgspec.json.decode(body)
        generator = _member(_member(raw, "workload"), "generator")
        lengths = {k: _member(generator, k) for k in _LENGTHS}
        kindless = [k for k, v in lengths.items() if isinstance(v, dict) and "kind" not in v]
        if not kindless:
            raise
        for k in kindless:
            generator[k] = {"kind": "fixed", **generator[k]}
        return msgspec.convert(raw, SimulateRequest)


def _member(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


# A trace as the body (text/csv, application/x-ndjson): the pool and the run's options as query
# parameters, as GET /v1/budget takes them.
@takes(
    "num_blocks scheduling_policy enable_prefix_caching snapshot_steps model? gpu",
    *settings_but("context_tokens", "target_concurrency"),
    "quantization engine goodput concurrency time_scale tokenize_us_per_token",
)
class SimulateTraceQuery(Input):
    """The query of a trace body: the pool (as SimulateRequest's), a closed loop's concurrency,
    and time_scale, which stretches the trace's arrival times (2: half the rate)."""
