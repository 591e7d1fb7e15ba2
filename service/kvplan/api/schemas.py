"""Wire schemas: what callers send. msgspec Structs whose constraints are the validation and
flow into OpenAPI. Answers are the core's own value types (kvplan.core.budget.Budget, …)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from kvplan.core.dtypes import KV_CACHE_DTYPES, WEIGHT_DTYPE_ALIASES, WEIGHT_DTYPES
from kvplan.core.profiles import PROFILES

# Documented limits.
MAX_BYTES = 1 << 60
MAX_TOKENS = 1 << 40
MAX_BATCH = 1000

KvCacheDtype = Literal[tuple(KV_CACHE_DTYPES)]  # type: ignore[valid-type]
WeightDtype = Literal[tuple(sorted({*WEIGHT_DTYPES, *WEIGHT_DTYPE_ALIASES}))]  # type: ignore[valid-type]
EngineId = Literal[tuple(PROFILES)]  # type: ignore[valid-type]
LayerType = Literal["full_attention", "sliding_attention", "mla", "mamba", "linear_attention"]
ModelDtype = Literal["bfloat16", "float16", "float32", "bf16", "fp16", "fp32"]

Bytes = Annotated[int, Meta(ge=0, le=MAX_BYTES)]
PosBytes = Annotated[int, Meta(ge=1, le=MAX_BYTES)]
Tokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS)]
ParallelSize = Annotated[int, Meta(ge=1, le=1024)]
Dim = Annotated[int, Meta(ge=1, le=65536)]
Params = Annotated[int, Meta(ge=1, le=1 << 50)]


class GeometrySpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A model's attention geometry given inline (what `POST /v1/models/resolve` returns).
    Give `kv_lora_rank` and `qk_rope_head_dim` for MLA; `head_dim` otherwise."""

    name: Annotated[str, Meta(max_length=200)] = "custom"
    num_layers: Annotated[int, Meta(ge=1, le=4096, description="KV-carrying layers (L)", examples=[80])]
    num_attention_heads: Annotated[int, Meta(ge=1, le=65536, description="query heads", examples=[64])]
    num_kv_heads: Annotated[int, Meta(ge=1, le=65536, description="KV heads (Hkv)", examples=[8])] | None = (
        None
    )
    head_dim: Annotated[int, Meta(ge=1, le=65536, description="K head dim (D)", examples=[128])] | None = None
    v_head_dim: Dim | None = None
    layer_types: Annotated[list[LayerType], Meta(max_length=4096)] | None = None
    sliding_window: Tokens | None = None
    dtype: ModelDtype = "bfloat16"
    max_position_embeddings: Tokens = 131072
    kv_lora_rank: Dim | None = None
    qk_rope_head_dim: Dim | None = None
    qk_nope_head_dim: Dim | None = None
    mla_v_head_dim: Dim | None = None
    index_head_dim: Dim | None = None
    mamba_state_bytes: PosBytes | None = None
    params_total: Params | None = None
    params_active: Params | None = None
    params_expert: Params | None = None
    weight_dtype: WeightDtype | None = None


class ModelSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A model not in the presets: a Hugging Face config.json, or inline geometry (one of them)."""

    hf_config: Annotated[dict[str, Any], Meta(description="a config.json, verbatim")] | None = None
    geometry: GeometrySpec | None = None
    name: Annotated[str, Meta(max_length=200)] | None = None


ModelField = Annotated[
    str | ModelSpec,
    Meta(
        description="a preset id (see /v1/models), or {hf_config: …}, or {geometry: …}",
        examples=["llama-3-70b"],
    ),
]
SkipLayers = Annotated[
    list[Annotated[int, Meta(ge=0, le=4095)] | Literal["sliding_window"]], Meta(max_length=4096)
]


class PerTokenRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Bytes of KV one token costs, per layer kind, per GPU and for the whole model."""

    model: ModelField
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = []
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    decode_context_parallel_size: ParallelSize = 1
    context_tokens: Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[8192])] | None = None
    engine: EngineId | None = None


class BudgetRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One capacity scenario: a model on a GPU (or a memory size) under vLLM's budget rules."""

    model: ModelField
    gpu: (
        Annotated[
            str, Meta(max_length=200, description="a GPU preset id (see /v1/gpus)", examples=["pool-160gib"])
        ]
        | None
    ) = None
    gpu_memory_bytes: (
        Annotated[int, Meta(ge=1, le=MAX_BYTES, description="total memory of one GPU")] | None
    ) = None
    gpu_memory_utilization: Annotated[float, Meta(gt=0, le=1, examples=[0.92])] | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = []
    block_size: Annotated[int, Meta(ge=1, le=65536)] | None = None
    context_tokens: Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[8192])] | None = None
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    decode_context_parallel_size: ParallelSize = 1
    weights_bytes: (
        Annotated[
            int,
            Meta(
                ge=0,
                le=MAX_BYTES,
                description="total model weights, split over TP × PP",
                examples=[139586437120],
            ),
        ]
        | None
    ) = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: Annotated[
        int, Meta(ge=0, le=MAX_BYTES, description="activation peak + non-torch, per GPU")
    ] = 0
    cudagraph_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES, description="CUDA graph estimate, per GPU")] = 0
    kv_cache_memory_bytes: (
        Annotated[int, Meta(ge=0, le=MAX_BYTES, description="replaces the whole budget")] | None
    ) = None
    num_gpu_blocks_override: Annotated[int, Meta(ge=1, le=MAX_BYTES)] | None = None
    max_num_batched_tokens: Tokens | None = None
    max_num_seqs: (
        Annotated[int, Meta(ge=1, le=1 << 20, description="vLLM's cap on requests run at once")] | None
    ) = None
    async_scheduling: bool | None = None
    max_model_len: Tokens | None = None
    target_concurrency: Annotated[int, Meta(ge=1, le=1 << 32)] | None = None
    hybrid_kv_cache_manager: bool = True
    extensible_kv_cache: bool = False
    kv_offloading_bytes: Bytes | None = None
    engine: EngineId | None = None


class BatchRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Many budget scenarios in one call; each is answered on its own, in order."""

    scenarios: Annotated[list[msgspec.Raw], Meta(min_length=1, max_length=MAX_BATCH)]


class BatchRequestDoc(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The documented shape of BatchRequest (scenarios are decoded one by one)."""

    scenarios: Annotated[list[BudgetRequest], Meta(min_length=1, max_length=MAX_BATCH)]


class Problem(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """An RFC 9457 problem: what went wrong, and the field it is about."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    field: str | None = None
    suggestions: list[str] | None = None
    valid: list[str] | None = None
    instance: str | None = None
    request_id: str | None = None


MAX_FLEET = 64
MAX_LAYOUTS = 64


class FleetGpu(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """GPUs of one type in the fleet."""

    gpu: Annotated[str, Meta(max_length=200, description="a GPU preset id", examples=["h100-sxm-80gb"])]
    count: Annotated[int, Meta(ge=1, le=1_000_000, description="how many GPUs of this type")]
    gpus_per_node: Annotated[int, Meta(ge=1, le=1024, description="tensor parallel stays within a node")] = 8
    cost_per_hour: Annotated[float, Meta(ge=0, le=1e9, description="per GPU-hour, any currency")] | None = (
        None
    )


class LayoutSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A replica's layout: TP × PP GPUs; with data_parallel_attention, tensor_parallel_size GPUs as
    attention ranks (each its own KV, attention TP 1) with the experts split across them."""

    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    data_parallel_attention: bool = False


class MixSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    context_tokens: Tokens
    share: Annotated[float, Meta(gt=0, le=1e9, description="relative share of requests of this length")]


class Workload(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One context length, or a mix of lengths with shares (one of them)."""

    context_tokens: Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[8192])] | None = None
    mix: Annotated[list[MixSpec], Meta(min_length=1, max_length=32)] | None = None


class FleetRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Which layout of which GPU type serves how many requests, and what a target takes."""

    model: ModelField
    workload: Workload
    fleet: Annotated[list[FleetGpu], Meta(min_length=1, max_length=MAX_FLEET)]
    layouts: Annotated[list[LayoutSpec], Meta(min_length=1, max_length=MAX_LAYOUTS)] | None = None
    target_concurrency: Annotated[int, Meta(ge=1, le=1 << 32)] | None = None
    gpu_memory_utilization: Annotated[float, Meta(gt=0, le=1)] | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = []
    block_size: Annotated[int, Meta(ge=1, le=65536)] | None = None
    weights_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] | None = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] = 0
    cudagraph_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] = 0
    max_num_batched_tokens: Tokens | None = None
    max_num_seqs: Annotated[int, Meta(ge=1, le=1 << 20)] | None = None
    async_scheduling: bool | None = None
    max_model_len: Tokens | None = None
    hybrid_kv_cache_manager: bool = True
    decode_context_parallel_size: ParallelSize = 1
    engine: EngineId | None = None


class FleetQuery(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """GET /v1/fleet: one GPU type, one context length."""

    model: ModelField
    gpu: Annotated[str, Meta(max_length=200, examples=["h100-sxm-80gb"])]
    count: Annotated[int, Meta(ge=1, le=1_000_000, examples=[8])]
    context_tokens: Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[8192])]
    gpus_per_node: Annotated[int, Meta(ge=1, le=1024)] = 8
    cost_per_hour: Annotated[float, Meta(ge=0, le=1e9)] | None = None
    target_concurrency: Annotated[int, Meta(ge=1, le=1 << 32)] | None = None
    gpu_memory_utilization: Annotated[float, Meta(gt=0, le=1)] | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    weights_bytes: Annotated[int, Meta(ge=0, le=MAX_BYTES)] | None = None
    weight_dtype: WeightDtype | None = None
    block_size: Annotated[int, Meta(ge=1, le=65536)] | None = None
    engine: EngineId | None = None


SweepAxis = Literal["context_tokens", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size"]


class SweepQuery(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """GET /v1/sweep: the budget's fields, plus the axis to vary and (optionally) its values."""

    vary: SweepAxis
    values: (
        Annotated[
            str,
            Meta(
                max_length=4000,
                description="comma-separated; default: a sensible range",
                examples=["1024,8192,32768,131072"],
            ),
        ]
        | None
    ) = None


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
    max_num_seqs: Annotated[int, Meta(ge=1, le=65536)] = 256
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
