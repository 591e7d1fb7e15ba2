"""The budget's question and answer as plain values.

`EngineSettings` is the one definition of the engine arguments a scenario sets: each field's
type carries its bounds and description (msgspec Meta), which the wire schemas take with its
default as they are (schemas/common.py FIELDS: every request type names the settings it takes),
so a request is refused at decoding by the same bounds the core checks (`check_settings`) and
OpenAPI documents. `BudgetInput` is those settings plus what the service
layer resolved (the geometry, the engine profile, the GPU)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

import msgspec
from msgspec import Meta

from .. import warnings as w
from ..engine.dtypes import KV_CACHE_DTYPES, WEIGHT_DTYPE_ALIASES, WEIGHT_DTYPES
from ..engine.profiles import EngineProfile
from ..kv.pertoken import PerToken
from ..ledger import Step
from ..limits import (
    MAX_BLOCK_SIZE,
    MAX_BYTES,
    MAX_CONCURRENCY,
    MAX_CUDAGRAPH_CAPTURE_SIZES,
    MAX_LAYERS,
    MAX_LORA_TARGETS,
    MAX_LORAS,
    MAX_NAME_LENGTH,
    MAX_NUM_SEQS,
    MAX_PARALLEL_SIZE,
    MAX_SPECULATIVE_TOKENS,
    MAX_TOKENS,
)
from ..model.geometry import Geometry
from ..model.speculative import METHODS as SPECULATIVE_METHODS
from ..model.speculative import Speculation

# The types of the settings, named once; a request type declares a setting with its type here.
if TYPE_CHECKING:  # the names, for mypy (which cannot read a Literal built from a tuple)
    KvCacheDtype = str
    WeightDtype = str
    SpeculativeMethodName = str
else:  # the names, for msgspec: refused at decoding, listed in OpenAPI
    KvCacheDtype = Literal[tuple(KV_CACHE_DTYPES)]
    WeightDtype = Literal[tuple(sorted({*WEIGHT_DTYPES, *WEIGHT_DTYPE_ALIASES}))]
    SpeculativeMethodName = Literal[SPECULATIVE_METHODS]
Bytes = Annotated[int, Meta(ge=0, le=MAX_BYTES)]
Tokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS)]
ParallelSize = Annotated[int, Meta(ge=1, le=MAX_PARALLEL_SIZE)]
BlockSize = Annotated[int, Meta(ge=1, le=MAX_BLOCK_SIZE)]
MaxNumSeqs = Annotated[int, Meta(ge=1, le=MAX_NUM_SEQS, description="vLLM's cap on requests run at once")]
ConcurrencyTarget = Annotated[int, Meta(ge=1, le=MAX_CONCURRENCY)]
GpuMemoryBytes = Annotated[int, Meta(ge=1, le=MAX_BYTES, description="total memory of one GPU")]
GpuMemoryUtilization = Annotated[float, Meta(gt=0, le=1, examples=[0.92])]
ContextTokens = Annotated[int, Meta(ge=1, le=MAX_TOKENS, examples=[8192])]
SkipLayers = Annotated[
    tuple[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)] | Literal["sliding_window"], ...],
    Meta(max_length=MAX_LAYERS),
]
WeightsBytes = Annotated[
    int,
    Meta(ge=0, le=MAX_BYTES, description="total model weights, split over TP × PP", examples=[139586437120]),
]
NonKvBytes = Annotated[
    int,
    Meta(
        ge=0,
        le=MAX_BYTES,
        description="activation peak + non-torch memory, per GPU. Unset (with cudagraph_bytes): "
        "the engine profile's estimate; 0: the seed's weights-only budget",
    ),
]
CudagraphBytes = Annotated[
    int, Meta(ge=0, le=MAX_BYTES, description="CUDA-graph memory subtracted, per GPU (unset: estimated)")
]
EnforceEager = Annotated[bool, Meta(description="vLLM's --enforce-eager: no CUDA graphs are captured")]
# vllm/config/cache.py MambaDType: "auto" is the model's own choice (core/model/mamba.py).
MambaDtype = Literal["auto", "float32", "bfloat16", "float16"]
MambaCacheDtype = Annotated[
    MambaDtype,
    Meta(description="--mamba-cache-dtype: the Mamba conv (and SSM) states' dtype; auto: the model dtype"),
]
MambaSsmCacheDtype = Annotated[
    MambaDtype,
    Meta(
        description="--mamba-ssm-cache-dtype: the Mamba SSM state's dtype; auto: the model's own "
        "(else the conv dtype)"
    ),
]
EnablePrefixCaching = Annotated[
    bool,
    Meta(
        description="--enable-prefix-caching; unset: vLLM's default (on, off for attention-free models). "
        "Off, a hybrid model's Mamba layers keep one state a request (mamba_cache_mode none)"
    ),
]
MambaBlockSize = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_TOKENS,
        description="--mamba-block-size (with prefix caching only; hybrids align it to the block)",
    ),
]
CudagraphMode = Annotated[
    Literal["none", "piecewise", "full", "full_decode_only", "full_and_piecewise"],
    Meta(
        description="--compilation-config cudagraph_mode; unset: the optimization level's "
        "(O2: full_and_piecewise)"
    ),
]
MoeBackend = Annotated[
    Literal[
        "aiter", "aiter_mega_moe", "aiter_triton_mxfp4_bf16", "aiter_triton_mxfp4_mxfp4", "auto", "b12x",
        "batched_triton", "cutlass", "deep_gemm", "deep_gemm_mega_moe", "emulation", "flashinfer_b12x",
        "flashinfer_cutedsl", "flashinfer_cutlass", "flashinfer_moe_ep_cutedsl",
        "flashinfer_moe_ep_mega_deep_gemm", "flashinfer_trtllm", "flydsl", "hpc", "humming", "marlin",
        "rdna3", "triton", "triton_unfused",
    ],
    Meta(
        description="--moe-backend: the MoE kernel vLLM runs (auto: its choice for the GPU). gpt-oss's "
        "MXFP4 experts are budgeted at the sizes that kernel pads them to (a kernel vLLM has no MXFP4 "
        "variant of is refused); 'marlin' prices MXFP4 experts on AIConfigurator's Marlin table. Other "
        "kernels' weight layouts and workspaces are not in the memory budget"
    ),
]  # fmt: skip
MoeMxfp8Activations = Annotated[
    bool,
    Meta(
        description="MXFP8 activations for MXFP4 experts: vLLM 0.33's --quantization-config "
        '\'{"moe": {"activation": "mxfp8"}}\' (earlier vLLM: VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1). '
        "FlashInfer's TRT-LLM MXFP4 × MXFP8 kernel on data-center Blackwell; elsewhere vLLM falls back to "
        "BF16 activations. Timed only: prices the experts on AIConfigurator's MXFP4 × MXFP8 MoE table"
    ),
]
CompilationMode = Annotated[
    Literal["none", "stock_torch_compile", "dynamo_trace_once", "vllm_compile"],
    Meta(description="--compilation-config mode; other than vllm_compile, no piecewise CUDA graphs"),
]
CaptureSizes = Annotated[
    tuple[Annotated[int, Meta(ge=1, le=MAX_TOKENS)], ...],
    Meta(min_length=1, max_length=MAX_CUDAGRAPH_CAPTURE_SIZES,
         description="--cudagraph-capture-sizes: the batch sizes CUDA graphs are captured for"),
]  # fmt: skip
MaxCaptureSize = Annotated[
    int, Meta(ge=1, le=MAX_TOKENS, description="--max-cudagraph-capture-size: the largest batch captured")
]
OptimizationLevel = Annotated[
    Literal[0, 1, 2, 3], Meta(description="-O / --optimization-level; 0: no compilation, no CUDA graphs")
]
KvCacheMemoryBytes = Annotated[int, Meta(ge=0, le=MAX_BYTES, description="replaces the whole budget")]
NumGpuBlocks = Annotated[int, Meta(ge=1, le=MAX_BYTES)]
LanguageModelOnly = Annotated[
    bool, Meta(description="vLLM's --language-model-only: no multimodal tower is built or profiled")
]
MmLimitZero = Annotated[
    tuple[Literal["image", "video", "audio"], ...],
    Meta(
        max_length=8,
        description="the modalities vLLM's --limit-mm-per-prompt sets to 0: a tower none of whose "
        "modalities is left is not built or profiled",
        examples=[["image", "video"]],
    ),
]
ModelDtype = Annotated[
    Literal["auto", "bfloat16", "float", "float16", "float32", "half"],
    Meta(
        description="vLLM's --dtype: the unquantized weights' dtype, and the KV cache's under "
        "kv_cache_dtype auto"
    ),
]
DataParallelSize = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_PARALLEL_SIZE,
        description="vLLM's --data-parallel-size: engines of TP × PP GPUs each; the answer is one engine's, "
        "the pooled figures over all",
    ),
]
EnableExpertParallel = Annotated[
    bool, Meta(description="vLLM's --enable-expert-parallel: routed experts sharded whole over TP × DP ranks")
]
CpuOffloadBytes = Annotated[
    int,
    Meta(
        ge=0,
        le=MAX_BYTES,
        description="vLLM's --cpu-offload-gb in bytes: decoder-layer weights per GPU kept in CPU memory",
    ),
]
# LoRA (vllm/config/lora.py LoRAConfig; the slots: core/model/lora.py).
EnableLora = Annotated[
    bool, Meta(description="vLLM's --enable-lora: adapter slots preallocated on every GPU")
]
MaxLoras = Annotated[int, Meta(ge=1, le=MAX_LORAS, description="--max-loras: adapter slots on the GPU")]
LoraRank = Annotated[
    Literal[1, 8, 16, 32, 64, 128, 256, 320, 512],
    Meta(description="--max-lora-rank: the rank each slot holds"),
]
LoraDtype = Annotated[
    Literal["auto", "bfloat16", "float16"],
    Meta(description="--lora-dtype: the slots' dtype (auto: the model's)"),
]
FullyShardedLoras = Annotated[
    bool, Meta(description="--fully-sharded-loras: column layers' A and row layers' B split over TP too")
]
LoraTargets = Annotated[
    tuple[Annotated[str, Meta(min_length=1, max_length=MAX_NAME_LENGTH)], ...],
    Meta(max_length=MAX_LORA_TARGETS, description="--lora-target-modules: only these modules get slots"),
]
MoeSharedLoras = Annotated[
    bool, Meta(description="--enable-moe-shared-loras: one gate/up A and down B for all experts")
]
MixedMoeLoraFormat = Annotated[
    bool, Meta(description="--enable-mixed-moe-lora-format: the 2D MoE LoRA wrapper for 3D-weight models")
]
SpeculativeMethod = Annotated[
    SpeculativeMethodName,
    Meta(
        description="vLLM's --speculative-config method (--spec-method): mtp and its model types, eagle, "
        "eagle3, draft_model, ngram, ngram_gpu, suffix are planned. Unset with speculative_model set: "
        "inferred as vLLM infers it"
    ),
]
SpeculativeModel = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        description="the draft (--speculative-config model, --spec-model): a preset id or a Hub id, read "
        "as `model` is; MTP needs none (its layers are the target's)",
    ),
]
NumSpeculativeTokens = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_SPECULATIVE_TOKENS,
        description="tokens the drafter proposes a step (--speculative-config num_speculative_tokens, "
        "--spec-tokens); MTP's default: its layers",
    ),
]


# gc=False (here and below): a frozen value whose fields are numbers, strings, tuples, other
# gc=False values, or (a ledger step's inputs) a dict of scalars built once, cannot be in a
# reference cycle; untracked, the thousands a batch builds cost the cycle collector nothing
# (tests/core/test_value_types.py checks every such field).
class EngineSettings(msgspec.Struct, frozen=True, gc=False):
    """The engine arguments a scenario sets (vllm serve's flags, and the budget's own knobs), as
    every request type and BudgetInput take them. Bytes are per GPU worker unless named total;
    None means "the engine profile's default" (resolved in defaults.py). Positional in this
    order (ENGINE_SETTINGS) too: the service layer copies a request's settings so, in C."""

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
    # Neither given: the engine profile's estimate (core/engine/nonkv.py). Either given: the given
    # figures (the other 0), the seed's simplified budget.
    non_kv_bytes: NonKvBytes | None = None
    cudagraph_bytes: CudagraphBytes | None = None
    enforce_eager: EnforceEager = False
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
    language_model_only: LanguageModelOnly = False
    mm_limit_zero: MmLimitZero = ()
    dtype: ModelDtype = "auto"
    data_parallel_size: DataParallelSize = 1
    enable_expert_parallel: EnableExpertParallel = False
    cpu_offload_bytes: CpuOffloadBytes | None = None
    mamba_cache_dtype: MambaCacheDtype = "auto"
    mamba_ssm_cache_dtype: MambaSsmCacheDtype = "auto"
    enable_prefix_caching: EnablePrefixCaching | None = None
    mamba_block_size: MambaBlockSize | None = None
    # CUDA graphs: what vLLM captures, which the non-KV estimate scales with (core/engine/cudagraphs.py).
    cudagraph_mode: CudagraphMode | None = None
    moe_backend: MoeBackend = "auto"  # the experts' kernel: gpt-oss's MXFP4 padding, the step-time table
    flashinfer_moe_mxfp4_mxfp8: MoeMxfp8Activations = False  # timed only: the step-time table
    compilation_mode: CompilationMode | None = None
    cudagraph_capture_sizes: CaptureSizes | None = None
    max_cudagraph_capture_size: MaxCaptureSize | None = None
    optimization_level: OptimizationLevel | None = None
    enable_lora: EnableLora = False
    max_loras: MaxLoras = 1
    max_lora_rank: LoraRank = 16
    lora_dtype: LoraDtype = "auto"
    fully_sharded_loras: FullyShardedLoras = False
    lora_target_modules: LoraTargets | None = None
    enable_moe_shared_loras: MoeSharedLoras = False
    enable_mixed_moe_lora_format: MixedMoeLoraFormat = False
    # Speculative decoding (core/model/speculative.py): None throughout, none.
    speculative_method: SpeculativeMethod | None = None
    speculative_model: SpeculativeModel | None = None
    num_speculative_tokens: NumSpeculativeTokens | None = None


ENGINE_SETTINGS: tuple[str, ...] = EngineSettings.__struct_fields__


class BudgetInput(EngineSettings, frozen=True, gc=False, kw_only=True):
    """Everything the budget depends on: the engine settings, and the model, profile and GPU the
    service layer resolved."""

    geometry: Geometry
    profile: EngineProfile
    gpu_name: str = ""
    gpu_memory_nominal: bool = False
    # Where gpu_memory_bytes comes from (for the ledger): the preset's driver figure, the
    # figure vLLM sees (torch.cuda.mem_get_info), or the request.
    gpu_memory_source: str = ""
    # The draft model speculative_model (or a request's speculative_hf_config) names, resolved by
    # the service layer.
    draft: Geometry | None = None
    # The speculative decoding planned (core/budget/speculation.py), once resolved: the geometry
    # then carries the draft's KV layers.
    speculation: Speculation | None = None


class GroupResult(msgspec.Struct, frozen=True, gc=False):
    """KV-cache groups of one shape: `groups` of them, `layers` real layers in all, each group
    needing `blocks_per_request` blocks of `block_size` tokens for one request."""

    kind: str
    groups: int
    layers: int
    block_size: int
    blocks_per_request: int


class Concurrency(msgspec.Struct, frozen=True, gc=False):
    """guaranteed: requests the usable blocks hold at once; schedulable: what vLLM runs at once,
    also bounded by max_num_seqs; vllm_reported: vLLM's start-up log line; budget_floor: the
    seed's budget ÷ KV-per-request method."""

    guaranteed: int
    guaranteed_unrounded: float
    vllm_reported: float
    budget_floor: int
    budget_unrounded: float
    schedulable: int


class Pooled(msgspec.Struct, frozen=True, gc=False):
    gpus: int
    memory_bytes: int
    requested_bytes: int
    available_kv_bytes: int
    kv_bytes_per_request: int
    concurrency: int
    concurrency_unrounded: float


class DataParallel(msgspec.Struct, frozen=True, gc=False):
    """Over the DP ranks, each its own engine of TP × PP GPUs with its own KV cache (vLLM's
    --data-parallel-size): the engines, their GPUs, and the requests and tokens they hold at once
    in all (each engine's figures × engines)."""

    engines: int
    gpus: int
    concurrency: int
    kv_cache_size_tokens: int


class MemoryTerms(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """What the budget subtracts besides the weights, term by term, and where each comes from."""

    non_kv_source: str  # "estimated", "given" or "not estimated"
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    cudagraph_bytes: int | None = None  # what graph capture takes
    cudagraph_subtracted: bool = False  # whether it comes off the KV budget under this profile
    calibration: str | None = None
    # What vLLM captures (core/engine/cudagraphs.py): the mode in force, the capture sizes, the
    # graphs of both routines; the graph estimate scales with the graphs where the profile says so.
    cudagraph_mode: str | None = None
    cudagraph_capture_sizes: int | None = None
    cudagraphs_captured: int | None = None


class Band(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """How far vLLM's available KV fell from the estimate on the calibration logs, as available
    KV and the requests it holds at each end: plan on the low one."""

    available_kv_low_bytes: int
    available_kv_high_bytes: int
    concurrency_low: int
    concurrency_high: int


class Budget(msgspec.Struct, frozen=True, gc=False, kw_only=True, omit_defaults=True):
    engine: str
    context_tokens: int
    max_model_len: int
    gpu_memory_bytes: int | None
    gpu_memory_utilization: float
    requested_bytes: int | None
    weights_bytes: int
    weights_bytes_per_gpu: int
    non_kv_bytes: int
    cudagraph_bytes: int
    available_kv_bytes: int
    block_size: int
    bytes_per_block: int
    bytes_per_block_by_stage: tuple[int, ...]
    num_blocks_computed: int
    num_blocks: int
    usable_blocks: int
    token_slots: int
    blocks_per_request: int
    groups: tuple[GroupResult, ...]
    group_size: int
    padding_slots: int
    kv_bytes_per_request: int
    tail_waste_tokens: int
    concurrency: Concurrency
    kv_cache_size_tokens: int
    max_context_tokens: int
    max_context_limited_by: str
    fits_max_model_len: bool
    target_concurrency: int | None
    max_context_for_target: int | None
    min_gpu_memory_utilization: float | None
    max_num_batched_tokens: int
    max_num_seqs: int
    sliding_inflight_tokens: int | None
    pooled: Pooled | None
    per_token: PerToken
    warnings: tuple[w.Warning, ...]
    # Bytes the weights and reserved memory exceed the budget by (vLLM refuses to start).
    kv_memory_shortfall_bytes: int = 0
    # The LoRA adapter slots on one GPU (--enable-lora), part of weights_bytes_per_gpu as vLLM
    # counts them ("Model loading took …"); 0 without LoRA.
    lora_bytes_per_gpu: int = 0
    memory: MemoryTerms | None = None
    band: Band | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    # Weights per GPU --cpu-offload-gb keeps in CPU memory (already off weights_bytes_per_gpu).
    weights_offloaded_bytes: int = 0
    data_parallel: DataParallel | None = None
    ledger: tuple[Step, ...] = ()
