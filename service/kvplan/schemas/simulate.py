"""Wire schemas of /v1/simulate: the pool and the workload. The workload's types are the core's
own (kvplan.core.sim.workload): their constraints are the validation, here and in the core."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from kvplan.core.budget.types import (
    BlockSize,
    CudagraphBytes,
    EnforceEager,
    GpuMemoryBytes,
    GpuMemoryUtilization,
    KvCacheDtype,
    KvCacheMemoryBytes,
    MaxNumSeqs,
    NonKvBytes,
    ParallelSize,
    Tokens,
    WeightDtype,
    WeightsBytes,
)
from kvplan.core.limits import MAX_ARRIVAL_STEP, MAX_LISTED_REQUESTS, MAX_NUM_BLOCKS, MAX_SNAPSHOTS
from kvplan.core.sim.workload import Generator, SimRequest
from kvplan.core.validate import Input

from .common import EngineId, GpuId, ModelField, Quantization


class SimWorkload(Input):
    """Exactly one of requests (listed) or generator (seeded)."""

    requests: Annotated[list[SimRequest], Meta(min_length=1, max_length=MAX_LISTED_REQUESTS)] | None = None
    generator: Generator | None = None


class SimulateRequest(Input):
    """The pool from the budget's inputs (model, gpu, …) or from num_blocks and block_size."""

    workload: SimWorkload
    num_blocks: Annotated[int, Meta(ge=2, le=MAX_NUM_BLOCKS)] | None = None
    block_size: BlockSize | None = None
    max_num_seqs: MaxNumSeqs | None = None
    max_num_batched_tokens: Tokens | None = None
    scheduling_policy: Literal["fcfs", "priority"] = "fcfs"
    enable_prefix_caching: bool = True
    snapshot_steps: Annotated[
        tuple[Annotated[int, Meta(ge=0, le=MAX_ARRIVAL_STEP)], ...],
        Meta(
            max_length=MAX_SNAPSHOTS,
            description="steps after which to return the pool: block tables, ref_cnt, free queue",
        ),
    ] = ()
    model: ModelField | None = None
    gpu: GpuId | None = None
    gpu_memory_bytes: GpuMemoryBytes | None = None
    gpu_memory_utilization: GpuMemoryUtilization | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    weights_bytes: WeightsBytes | None = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: NonKvBytes | None = None
    cudagraph_bytes: CudagraphBytes | None = None
    enforce_eager: EnforceEager = False
    quantization: Quantization | None = None
    kv_cache_memory_bytes: KvCacheMemoryBytes | None = None
    engine: EngineId | None = None


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
