"""A fleet question and its answer as plain values: the GPU types and layouts asked about, and per
type and layout what it holds, the sizing for a target and the cheapest mix (planned in plan.py)."""

from __future__ import annotations

from enum import StrEnum

import msgspec

from .. import warnings as w
from ..budget import BudgetInput


class InfeasibleReason(StrEnum):
    """Why a layout cannot run: a stable code beside the human `reason`, as warnings carry one.
    Codes never change meaning; clients branch on them, never on the text."""

    TP_EXCEEDS_NODE = "tp_exceeds_node"  # tensor parallel spans more GPUs than a node has
    NOT_ENOUGH_GPUS = "not_enough_gpus"  # one replica needs more GPUs than the fleet has
    DP_ATTENTION_WITH_PIPELINE = "dp_attention_with_pipeline"  # not a layout the planner sizes
    INVALID_LAYOUT = "invalid_layout"  # vLLM refuses it: the heads or layers do not split so
    NO_KV_MEMORY = "no_kv_memory"  # weights and reserved memory leave no room for KV blocks
    REQUEST_DOES_NOT_FIT = "request_does_not_fit"  # blocks exist, but not one longest request's


class FleetEntry(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    gpu_name: str
    memory_bytes: int
    nominal: bool = False
    count: int
    gpus_per_node: int = 8
    cost_per_hour: float | None = None


class Layout(msgspec.Struct, frozen=True, kw_only=True):
    """tensor_parallel_size × pipeline_parallel_size GPUs a replica; with data_parallel_attention
    the tensor_parallel_size GPUs are attention ranks (attention TP 1) with experts split over them."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_attention: bool = False

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def label(self) -> str:
        if self.data_parallel_attention:
            return f"DP{self.tensor_parallel_size}-attention+EP"
        return f"TP{self.tensor_parallel_size}" + (
            f"×PP{self.pipeline_parallel_size}" if self.pipeline_parallel_size > 1 else ""
        )


class MixItem(msgspec.Struct, frozen=True):
    context_tokens: int
    share: float


class FleetInput(msgspec.Struct, frozen=True, kw_only=True):
    """`template` carries the model and the memory knobs of /v1/budget; the fleet supplies the GPU
    memory and the layouts."""

    template: BudgetInput
    fleet: tuple[FleetEntry, ...]
    mix: tuple[MixItem, ...]
    layouts: tuple[Layout, ...] | None = None
    target_concurrency: int | None = None


class RankFigures(msgspec.Struct, frozen=True):
    """Data-parallel attention: what one attention rank holds."""

    ranks: int
    concurrency_per_rank: int
    weights_bytes_per_rank: int
    dense_weights_bytes: int
    expert_weights_bytes_per_rank: int
    available_kv_bytes_per_rank: int


class LayoutPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    gpu: str
    layout: Layout
    name: str
    feasible: bool
    reason: str | None = None
    reason_code: InfeasibleReason | None = None
    gpus_per_replica: int
    replicas: int = 0
    idle_gpus: int = 0
    concurrency_per_replica: int = 0
    expected_concurrency_per_replica: int | None = None
    total_concurrency: int = 0
    total_expected_concurrency: int | None = None
    kv_tokens_per_replica: int = 0
    bytes_per_token_per_gpu: int | None = None
    weights_bytes_per_gpu: int | None = None
    available_kv_bytes_per_gpu: int | None = None
    num_blocks: int | None = None
    # The engine settings the layout's budget ran with (the profile's defaults unless given).
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    per_rank: RankFigures | None = None
    pooled_concurrency: int | None = None
    cost_per_hour: float | None = None
    cost_per_concurrent_request: float | None = None
    warnings: tuple[w.Warning, ...] = ()


class TargetSizing(msgspec.Struct, frozen=True, kw_only=True):
    gpu: str
    layout: str
    concurrency_per_replica: int
    replicas: int
    gpus: int
    available: bool
    cost_per_hour: float | None = None


class MixPart(msgspec.Struct, frozen=True):
    gpu: str
    layout: str
    replicas: int
    gpus: int
    concurrency: int
    cost_per_hour: float


# CheapestMix.method: proven cheapest, or the best the search found within MAX_MIX_SEARCH_NODES.
MIX_EXACT = "exact"
MIX_BEST_FOUND = "best found (search limit)"


class CheapestMix(msgspec.Struct, frozen=True, kw_only=True):
    """The cheapest replicas per GPU type reaching the target. within_fleet: using only the GPUs the
    fleet has; if those cannot reach it, the mix says what to add (within_fleet false)."""

    parts: tuple[MixPart, ...]
    concurrency: int
    cost_per_hour: float
    method: str
    within_fleet: bool


class GpuTypePlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    gpu: str
    gpu_name: str
    count: int
    gpus_per_node: int
    best: LayoutPlan | None = None
    layouts: tuple[LayoutPlan, ...] = ()
    target: TargetSizing | None = None


class FleetPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    engine: str
    context_tokens: int
    mix: tuple[MixItem, ...]
    total_concurrency: int
    total_expected_concurrency: int | None = None
    gpu_types: tuple[GpuTypePlan, ...]
    target_concurrency: int | None = None
    target_met_by_fleet: bool | None = None
    cheapest_mix: CheapestMix | None = None
    warnings: tuple[w.Warning, ...] = ()
