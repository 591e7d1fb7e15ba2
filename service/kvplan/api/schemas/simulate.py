"""Wire schemas of /v1/simulate: the pool and the workload."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from .common import (
    MAX_BYTES,
    EngineId,
    KvCacheDtype,
    MaxNumSeqs,
    ModelField,
    ParallelSize,
    Tokens,
    WeightDtype,
)


class SimRequestSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One request: requests with the same prefix_id share their first prefix_tokens tokens."""

    arrival_step: Annotated[int, Meta(ge=0, le=1 << 40)] = 0
    prompt_tokens: Annotated[int, Meta(ge=1, le=1 << 24)]
    output_tokens: Annotated[int, Meta(ge=1, le=1 << 24)]
    prefix_id: Annotated[str, Meta(max_length=200)] | None = None
    prefix_tokens: Annotated[int, Meta(ge=0, le=1 << 24)] = 0
    priority: Annotated[int, Meta(ge=-(1 << 20), le=1 << 20)] = 0


class LengthSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """fixed: value; uniform: low..high; lognormal: mean (of the lengths) and sigma."""

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    value: Annotated[int, Meta(ge=1, le=1 << 24)] | None = None
    low: Annotated[int, Meta(ge=1, le=1 << 24)] | None = None
    high: Annotated[int, Meta(ge=1, le=1 << 24)] | None = None
    mean: Annotated[float, Meta(ge=1, le=1 << 24)] | None = None
    sigma: Annotated[float, Meta(ge=0, le=5)] | None = None


class ConversationsSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    share: Annotated[float, Meta(ge=0, le=1)]
    turns: Annotated[int, Meta(ge=1, le=64)]
    user_tokens: Annotated[int, Meta(ge=1, le=1 << 20)]
    think_steps: Annotated[int, Meta(ge=0, le=1 << 30)] = 0


class GeneratorSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A seeded workload: Poisson arrivals, length distributions, an optional shared system prompt
    on a share of the requests, and optional multi-turn conversations."""

    count: Annotated[int, Meta(ge=1, le=100_000)]
    arrival_rate: Annotated[float, Meta(gt=0, le=1e6, description="requests a step")]
    prompt: LengthSpec
    output: LengthSpec
    system_prompt_share: Annotated[float, Meta(ge=0, le=1)] = 0.0
    system_prompt_tokens: Annotated[int, Meta(ge=0, le=1 << 20)] = 0
    conversations: ConversationsSpec | None = None
    seed: Annotated[int, Meta(ge=0, le=1 << 62)] = 0


class SimWorkload(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    requests: Annotated[list[SimRequestSpec], Meta(min_length=1, max_length=20_000)] | None = None
    generator: GeneratorSpec | None = None


class SimulateRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The pool from the budget's inputs (model, gpu, …) or from num_blocks and block_size."""

    workload: SimWorkload
    num_blocks: Annotated[int, Meta(ge=2, le=1 << 31)] | None = None
    block_size: Annotated[int, Meta(ge=1, le=65536)] | None = None
    max_num_seqs: MaxNumSeqs | None = None
    max_num_batched_tokens: Tokens | None = None
    scheduling_policy: Literal["fcfs", "priority"] = "fcfs"
    enable_prefix_caching: bool = True
    snapshot_steps: Annotated[
        list[Annotated[int, Meta(ge=0, le=1 << 40)]],
        Meta(
            max_length=10,
            description="steps after which to return the pool: block tables, ref_cnt, free queue",
        ),
    ] = []
    model: ModelField | None = None
    gpu: Annotated[str, Meta(max_length=200)] | None = None
    gpu_memory_bytes: Annotated[int, Meta(ge=1, le=MAX_BYTES)] | None = None
    gpu_memory_utilization: Annotated[float, Meta(gt=0, le=1)] | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    weights_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] | None = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] = 0
    cudagraph_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] = 0
    kv_cache_memory_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] | None = None
    engine: EngineId | None = None
