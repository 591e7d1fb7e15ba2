"""Wire schema of POST /v1/capacity: a replica (every /v1/budget input), a workload's shape
without its rate, latency targets, and how closely to search."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from kvplan.core.budget.types import Tokens
from kvplan.core.limits import MAX_ARRIVAL_RATE_PER_S, MAX_NUM_SEQS, MAX_SEARCH_POINTS
from kvplan.core.traffic.shape import WorkloadShape
from kvplan.core.validate import Input

from .common import settings_but, takes


class SearchOptions(Input):
    """How closely the rate is searched (core/traffic/search.py)."""

    tolerance: Annotated[
        float, Meta(ge=0.001, le=0.5, description="relative: the answer is within this share of the limit")
    ] = 0.02
    max_points: Annotated[int, Meta(ge=4, le=MAX_SEARCH_POINTS, description="simulations at most")] = 20
    first_rate_per_s: (
        Annotated[float, Meta(gt=0, le=MAX_ARRIVAL_RATE_PER_S, description="where the search starts")] | None
    ) = None


class Vary(Input):
    """Settings to try, each a list: every combination is searched (at most MAX_CAPACITY_VARIANTS)."""

    # (MAX_CAPACITY_VARIANTS is checked on the product of the lists, in the service.)

    max_num_seqs: (
        Annotated[list[Annotated[int, Meta(ge=1, le=MAX_NUM_SEQS)]], Meta(min_length=1, max_length=16)] | None
    ) = None
    max_num_batched_tokens: Annotated[list[Tokens], Meta(min_length=1, max_length=16)] | None = None
    gpu_memory_utilization: (
        Annotated[list[Annotated[float, Meta(gt=0, le=1)]], Meta(min_length=1, max_length=16)] | None
    ) = None
    tensor_parallel_size: (
        Annotated[list[Annotated[int, Meta(ge=1, le=64)]], Meta(min_length=1, max_length=8)] | None
    ) = None


@takes(
    "workload slo! model gpu",
    *settings_but("context_tokens", "target_concurrency"),
    "quantization engine num_blocks scheduling_policy search vary tokenize_us_per_token",
)
class CapacityRequest(Input):
    """The highest request rate one replica sustains while meeting every latency target."""

    workload: WorkloadShape
    search: SearchOptions = SearchOptions()
    vary: Vary | None = None


# A trace as the body: the replica, targets and search as query parameters (dotted: slo.ttft_p90_ms).
@takes(
    "slo! model gpu",
    *settings_but("context_tokens", "target_concurrency"),
    "quantization engine num_blocks scheduling_policy search vary tokenize_us_per_token",
)
class CapacityTraceQuery(Input):
    """The query of a trace body: as CapacityRequest without its workload (the trace is it)."""

    search: SearchOptions = SearchOptions()
    vary: Vary | None = None
