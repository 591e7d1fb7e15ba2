"""Wire schemas: what callers send. msgspec Structs whose constraints are the validation and
flow into OpenAPI. Answers are the core's own value types (kvplan.core.budget.Budget, …)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from kvplan.core.budget.types import (
    BlockSize,
    Bytes,
    ConcurrencyTarget,
    ContextTokens,
    CudagraphBytes,
    EnforceEager,
    GpuMemoryBytes,
    GpuMemoryUtilization,
    KvCacheDtype,
    KvCacheMemoryBytes,
    MaxNumSeqs,
    NonKvBytes,
    NumGpuBlocks,
    ParallelSize,
    SkipLayers,
    Tokens,
    WeightDtype,
    WeightsBytes,
)
from kvplan.core.engine.profiles import PROFILES
from kvplan.core.limits import (
    MAX_BATCH,
    MAX_BYTES,
    MAX_COST_PER_HOUR,
    MAX_FLEET_TYPES,
    MAX_GPU_COUNT,
    MAX_GPUS_PER_NODE,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_LAYOUTS,
    MAX_MIX,
    MAX_NAME_LENGTH,
    MAX_PARAMS,
    MAX_SHARE,
    MAX_STATE_BYTES,
    MAX_SWEEP_VALUES_LENGTH,
    MAX_TOKENS,
)
from kvplan.core.model.quant import QUANTIZATION_ARGS
from kvplan.core.validate import Input

# The engine settings' types (KvCacheDtype, ContextTokens, …) are the core's own
# (kvplan.core.budget.types.EngineSettings): a request declares a setting with the core's type, and
# tests/contract/test_one_definition.py fails when one does not.

# A profile id, or a vLLM version as people write it ("0.19.0", "vllm@0.11.1", "0.33"), which
# core/engine/profiles.py maps to the profile that governs it (named in the answer).
EngineId = Annotated[
    str,
    Meta(
        max_length=64,
        pattern=r"^[A-Za-z0-9@._+-]+$",
        description="an engine profile (" + ", ".join(PROFILES) + ") or a vLLM version such as 0.19.0",
        examples=list(PROFILES),
    ),
]
LayerType = Literal[
    "full_attention", "sliding_attention", "chunked_attention", "mla", "mamba", "linear_attention", "sconv",
    "sliding_window_mla", "circular_buffer", "sparse_summary", "compressed_mla", "mamba_replicated",
]  # fmt: skip
ModelDtype = Literal["bfloat16", "float16", "float32", "bf16", "fp16", "fp32"]

PosBytes = Annotated[int, Meta(ge=1, le=MAX_BYTES)]
Dim = Annotated[int, Meta(ge=1, le=MAX_HEAD_DIM)]
Params = Annotated[int, Meta(ge=1, le=MAX_PARAMS)]
Name = Annotated[str, Meta(max_length=MAX_NAME_LENGTH)]
GpuId = Annotated[
    str,
    Meta(max_length=MAX_NAME_LENGTH, description="a GPU preset id (see /v1/gpus)", examples=["pool-160gib"]),
]
GpuCount = Annotated[int, Meta(ge=1, le=MAX_GPU_COUNT)]
GpusPerNode = Annotated[
    int, Meta(ge=1, le=MAX_GPUS_PER_NODE, description="tensor parallel stays within a node")
]
CostPerHour = Annotated[float, Meta(ge=0, le=MAX_COST_PER_HOUR, description="per GPU-hour, any currency")]


StateDim = Annotated[int, Meta(ge=0, le=MAX_HIDDEN_SIZE)]


Quantization = Annotated[
    Literal[tuple(QUANTIZATION_ARGS)],  # type: ignore[valid-type]
    Meta(description="vLLM's --quantization, for a model whose config.json states none"),
]


class MambaStateSpec(Input):
    """A Mamba or linear-attention layer's state, as the config numbers vLLM's shape calculator
    reads (vllm/model_executor/layers/mamba/mamba_utils.py). mamba1: intermediate_size,
    state_size; mamba2: also n_groups, num_heads, head_dim; gated_delta_net: num_k_heads,
    num_v_heads, head_k_dim, head_v_dim; short_conv (LFM2): intermediate_size (conv_dim);
    linear_attention (Bailing): num_heads, head_dim, one state in conv_dtype (conv_kernel unread).
    checkpoint_blocks is 1 for Mamba2 mixers."""

    mixer: Literal["mamba1", "mamba2", "gated_delta_net", "short_conv", "linear_attention"]
    conv_kernel: Annotated[int, Meta(ge=1, le=MAX_HEAD_DIM, examples=[4])]
    state_size: StateDim = 0
    intermediate_size: StateDim = 0
    n_groups: StateDim = 1
    num_heads: StateDim = 0
    head_dim: StateDim = 0
    num_k_heads: StateDim = 0
    num_v_heads: StateDim = 0
    head_k_dim: StateDim = 0
    head_v_dim: StateDim = 0
    conv_dtype: ModelDtype = "bfloat16"
    ssm_dtype: ModelDtype = "bfloat16"
    checkpoint_blocks: Annotated[int, Meta(ge=0, le=1)] = 0
    replicated_state_bytes: Annotated[
        int,
        Meta(
            ge=0,
            le=MAX_STATE_BYTES,
            description="a TP-replicated state the attention block is also sized for, kept by the "
            "mamba_replicated layers (Qwen4-exp's PLE short conv)",
        ),
    ] = 0


class QsaSpec(Input):
    """Qwen4-exp QSA's side caches, one head on every TP rank: a circular_buffer ring of
    compress_ratio rows of ring_row_bytes (its block compress_ratio tokens) and a compressed_mla
    key of key_bytes per compress_ratio tokens."""

    compress_ratio: Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[4])]
    ring_row_bytes: Annotated[int, Meta(ge=1, le=MAX_STATE_BYTES, examples=[256])]
    key_bytes: Annotated[int, Meta(ge=1, le=MAX_STATE_BYTES, examples=[256])]


class GeometrySpec(Input, kw_only=True):
    """A model's attention geometry given inline (what `POST /v1/models/resolve` returns).
    Give `kv_lora_rank` and `qk_rope_head_dim` for MLA; `head_dim` otherwise."""

    name: Name = "custom"
    num_layers: Annotated[int, Meta(ge=1, le=MAX_LAYERS, description="KV-carrying layers (L)", examples=[80])]
    num_attention_heads: Annotated[int, Meta(ge=1, le=MAX_HEADS, description="query heads", examples=[64])]
    num_kv_heads: (
        Annotated[int, Meta(ge=1, le=MAX_HEADS, description="KV heads (Hkv)", examples=[8])] | None
    ) = None
    head_dim: (
        Annotated[int, Meta(ge=1, le=MAX_HEAD_DIM, description="K head dim (D)", examples=[128])] | None
    ) = None
    v_head_dim: Dim | None = None
    layer_types: Annotated[list[LayerType], Meta(max_length=MAX_LAYERS)] | None = None
    sliding_window: Tokens | None = None
    dtype: ModelDtype = "bfloat16"
    max_position_embeddings: Tokens = 131072
    kv_lora_rank: Dim | None = None
    qk_rope_head_dim: (
        Annotated[int, Meta(ge=0, le=MAX_HEAD_DIM, description="0: NoPE MLA, the latent alone")] | None
    ) = None
    qk_nope_head_dim: Dim | None = None
    mla_v_head_dim: Dim | None = None
    index_head_dim: Dim | None = None
    index_kpool: (
        Annotated[
            int,
            Meta(
                ge=2,
                le=MAX_HEAD_DIM,
                description="GLM-5-next: one indexer state (of index_head_dim) a pool of this many tokens, "
                "and a ring of them, beside each MLA layer; needs Mamba (KDA) layers too",
            ),
        ]
        | None
    ) = None
    mamba_state_bytes: (
        Annotated[int, Meta(ge=1, le=MAX_STATE_BYTES, description="one Mamba layer's state at TP 1")] | None
    ) = None
    mamba: MambaStateSpec | None = None
    attention_chunk_size: Tokens | None = None
    full_head_dim: (
        Annotated[
            int, Meta(ge=1, le=MAX_HEAD_DIM, description="full-attention layers' own head dim (Gemma-4)")
        ]
        | None
    ) = None
    full_kv_heads: (
        Annotated[int, Meta(ge=1, le=MAX_HEADS, description="full-attention layers' own KV heads (Gemma-4)")]
        | None
    ) = None
    sliding_mla_dim: (
        Annotated[
            int,
            Meta(
                ge=1, le=MAX_HEAD_DIM, description="sliding_window_mla layers' latent width per token (Dots3)"
            ),
        ]
        | None
    ) = None
    mla_row_dim: (
        Annotated[
            int,
            Meta(ge=1, le=MAX_HEAD_DIM, description="the width MLA layers pad their latent rows to (Dots3)"),
        ]
        | None
    ) = None
    sparse_mla_layers: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(
                max_length=MAX_LAYERS, description="with index_head_dim: the sparse MLA layers, when not all"
            ),
        ]
        | None
    ) = None
    indexer_layers: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(
                max_length=MAX_LAYERS,
                description="full layers that also keep a bf16 indexer key cache (MiniMax-M3 sparse layers)",
            ),
        ]
        | None
    ) = None
    mla_indexer_layers: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(
                max_length=MAX_LAYERS,
                description="with index_head_dim: the sparse layers keeping an indexer cache, when not all",
            ),
        ]
        | None
    ) = None
    sconv_kernel_size: (
        Annotated[int, Meta(ge=1, le=MAX_TOKENS, description="the short-conv states' kernel (Inkling)")]
        | None
    ) = None
    sconv_hidden_size: (
        Annotated[
            int,
            Meta(ge=1, le=MAX_HIDDEN_SIZE, description="the hidden size the short-conv streams are cut from"),
        ]
        | None
    ) = None
    indexer_dim: (
        Annotated[int, Meta(ge=1, le=MAX_HEAD_DIM, description="the indexer key's width (sparse_index_dim)")]
        | None
    ) = None
    qsa: QsaSpec | None = None
    decoder_layers: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(max_length=MAX_LAYERS, description="the decoder layer of each KV layer, when not one each"),
        ]
        | None
    ) = None
    num_decoder_layers: Annotated[int, Meta(ge=1, le=MAX_LAYERS)] | None = None
    params_total: Params | None = None
    params_active: Params | None = None
    params_expert: Params | None = None
    weight_dtype: WeightDtype | None = None
    compress_ratios: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=128)]],
            Meta(
                max_length=MAX_LAYERS,
                description="DeepSeek-V4: each decoder layer's compression ratio (0: sliding window only, "
                "4 with an indexer, 128), num_layers of them; head_dim 512, index_head_dim 128. "
                "DeepSeek-V4.1 (with kv_source_layer_ids): 0, 1 or 2",
            ),
        ]
        | None
    ) = None
    kv_source_layer_ids: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(max_length=MAX_LAYERS, description="DeepSeek-V4.1: the layers owning the compressed caches"),
        ]
        | None
    ) = None
    index_source_layer_ids: (
        Annotated[
            list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]],
            Meta(max_length=MAX_LAYERS, description="DeepSeek-V4.1: the layers with an indexer"),
        ]
        | None
    ) = None


class ModelSpec(Input):
    """A model not in the presets: a Hugging Face config.json, or inline geometry (one of them)."""

    hf_config: Annotated[dict[str, Any], Meta(description="a config.json, verbatim")] | None = None
    geometry: GeometrySpec | None = None
    name: Name | None = None


ModelField = Annotated[
    Name | ModelSpec,
    Meta(
        description="a preset id (see /v1/models), or {hf_config: …}, or {geometry: …}",
        examples=["llama-3-70b"],
    ),
]


class PerTokenRequest(Input):
    """Bytes of KV one token costs, per layer kind, per GPU and for the whole model."""

    model: ModelField
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = ()
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    decode_context_parallel_size: ParallelSize = 1
    context_tokens: ContextTokens | None = None
    engine: EngineId | None = None


# Every engine setting of kvplan.core.budget.types.EngineSettings (tests/contract/
# test_one_definition.py checks it), with the model, the GPU, --quantization and the profile.
class BudgetRequest(Input):
    """One capacity scenario: a model on a GPU (or a memory size) under vLLM's budget rules."""

    model: ModelField
    gpu: GpuId | None = None
    gpu_memory_bytes: GpuMemoryBytes | None = None
    gpu_memory_utilization: GpuMemoryUtilization | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = ()
    block_size: BlockSize | None = None
    context_tokens: ContextTokens | None = None
    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    decode_context_parallel_size: ParallelSize = 1
    weights_bytes: WeightsBytes | None = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: NonKvBytes | None = None
    cudagraph_bytes: CudagraphBytes | None = None
    enforce_eager: EnforceEager = False
    quantization: Quantization | None = None
    kv_cache_memory_bytes: KvCacheMemoryBytes | None = None
    num_gpu_blocks_override: NumGpuBlocks | None = None
    max_num_batched_tokens: Tokens | None = None
    max_num_seqs: MaxNumSeqs | None = None
    async_scheduling: bool | None = None
    max_model_len: Tokens | None = None
    target_concurrency: ConcurrencyTarget | None = None
    hybrid_kv_cache_manager: bool = True
    extensible_kv_cache: bool = False
    kv_offloading_bytes: Bytes | None = None
    engine: EngineId | None = None


class BatchRequest(Input):
    """Many budget scenarios in one call; each is answered on its own, in order."""

    scenarios: Annotated[list[msgspec.Raw], Meta(min_length=1, max_length=MAX_BATCH)]


class BatchRequestDoc(Input):
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


class FleetGpu(Input):
    """GPUs of one type in the fleet."""

    gpu: GpuId
    count: Annotated[int, Meta(ge=1, le=MAX_GPU_COUNT, description="how many GPUs of this type")]
    gpus_per_node: GpusPerNode = 8
    cost_per_hour: CostPerHour | None = None


class LayoutSpec(Input):
    """A replica's layout: TP × PP GPUs; with data_parallel_attention, tensor_parallel_size GPUs as
    attention ranks (each its own KV, attention TP 1) with the experts split across them."""

    tensor_parallel_size: ParallelSize = 1
    pipeline_parallel_size: ParallelSize = 1
    data_parallel_attention: bool = False


class MixSpec(Input):
    context_tokens: Tokens
    share: Annotated[float, Meta(gt=0, le=MAX_SHARE, description="relative share of requests of this length")]


class Workload(Input):
    """One context length, or a mix of lengths with shares (one of them)."""

    context_tokens: ContextTokens | None = None
    mix: Annotated[list[MixSpec], Meta(min_length=1, max_length=MAX_MIX)] | None = None


class FleetRequest(Input):
    """Which layout of which GPU type serves how many requests, and what a target takes."""

    model: ModelField
    workload: Workload
    fleet: Annotated[list[FleetGpu], Meta(min_length=1, max_length=MAX_FLEET_TYPES)]
    layouts: Annotated[list[LayoutSpec], Meta(min_length=1, max_length=MAX_LAYOUTS)] | None = None
    target_concurrency: ConcurrencyTarget | None = None
    gpu_memory_utilization: GpuMemoryUtilization | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    kv_cache_dtype_skip_layers: SkipLayers = ()
    block_size: BlockSize | None = None
    weights_bytes: WeightsBytes | None = None
    weight_dtype: WeightDtype | None = None
    non_kv_bytes: NonKvBytes | None = None
    cudagraph_bytes: CudagraphBytes | None = None
    enforce_eager: EnforceEager = False
    quantization: Quantization | None = None
    max_num_batched_tokens: Tokens | None = None
    max_num_seqs: MaxNumSeqs | None = None
    async_scheduling: bool | None = None
    max_model_len: Tokens | None = None
    hybrid_kv_cache_manager: bool = True
    decode_context_parallel_size: ParallelSize = 1
    engine: EngineId | None = None


class FleetQuery(Input, kw_only=True):
    """GET /v1/fleet: one GPU type, one context length."""

    model: ModelField
    gpu: GpuId
    count: (
        Annotated[
            int,
            Meta(ge=1, le=MAX_GPU_COUNT, examples=[8], description="GPUs of the type (default: one node)"),
        ]
        | None
    ) = None
    context_tokens: ContextTokens
    gpus_per_node: GpusPerNode = 8
    cost_per_hour: CostPerHour | None = None
    target_concurrency: ConcurrencyTarget | None = None
    gpu_memory_utilization: GpuMemoryUtilization | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    weights_bytes: WeightsBytes | None = None
    weight_dtype: WeightDtype | None = None
    block_size: BlockSize | None = None
    engine: EngineId | None = None
    non_kv_bytes: NonKvBytes | None = None
    cudagraph_bytes: CudagraphBytes | None = None
    enforce_eager: EnforceEager = False


SweepAxis = Literal["context_tokens", "gpu_memory_utilization", "kv_cache_dtype", "tensor_parallel_size"]


class SweepQuery(Input):
    """GET /v1/sweep: the budget's fields, plus the axis to vary and (optionally) its values."""

    vary: SweepAxis
    values: (
        Annotated[
            str,
            Meta(
                max_length=MAX_SWEEP_VALUES_LENGTH,
                description="comma-separated; default: a sensible range",
                examples=["1024,8192,32768,131072"],
            ),
        ]
        | None
    ) = None
