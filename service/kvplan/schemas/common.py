"""Wire schemas: what callers send. msgspec Structs whose constraints are the validation and
flow into OpenAPI. Answers are the core's own value types (kvplan.core.budget.Budget, …)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, get_args

import msgspec
from msgspec import NODEFAULT, Meta

from kvplan.core.budget.types import ENGINE_SETTINGS, EngineSettings, Tokens, WeightDtype
from kvplan.core.engine.profiles import PROFILES
from kvplan.core.limits import (
    MAX_ARRIVAL_RATE_PER_S,
    MAX_ARRIVAL_STEP,
    MAX_BATCH,
    MAX_BYTES,
    MAX_COST_PER_HOUR,
    MAX_FLEET_TYPES,
    MAX_GPU_COUNT,
    MAX_GPUS_PER_NODE,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_IN_FLIGHT,
    MAX_LAYERS,
    MAX_LAYOUTS,
    MAX_MIX,
    MAX_NAME_LENGTH,
    MAX_NUM_BLOCKS,
    MAX_PARAMS,
    MAX_SHARE,
    MAX_SNAPSHOTS,
    MAX_STATE_BYTES,
    MAX_SWEEP_VALUES_LENGTH,
    MAX_TIME_SCALE,
    MAX_TOKENIZE_US,
    MAX_TOKENS,
)
from kvplan.core.model.geometry import QsaCaches
from kvplan.core.model.mamba import MambaState, Mixer
from kvplan.core.model.quant import QUANTIZATION_ARGS
from kvplan.core.perf.serving import ServingPrior
from kvplan.core.sim.simulate import GoodputTargets
from kvplan.core.traffic.shape import WorkloadShape
from kvplan.core.traffic.slo import Slo
from kvplan.core.validate import Input

# Each field is declared once. A request type names the fields it takes (`takes`) from one table
# (FIELDS), whose engine settings are the core's own (kvplan.core.budget.types.EngineSettings: type
# with bounds and description, default), and declares only what no other request takes. The wire
# form of a core struct (`mirrors`) is the core's fields, in its order with its defaults, typed for
# the wire. tests/contract/test_one_definition.py fails when a request strays from either.

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
Heads = Annotated[int, Meta(ge=1, le=MAX_HEADS)]
HiddenSize = Annotated[int, Meta(ge=1, le=MAX_HIDDEN_SIZE)]
LayerCount = Annotated[int, Meta(ge=1, le=MAX_LAYERS)]
StateBytes = Annotated[int, Meta(ge=1, le=MAX_STATE_BYTES)]
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
LayerList = Annotated[list[Annotated[int, Meta(ge=0, le=MAX_LAYERS - 1)]], Meta(max_length=MAX_LAYERS)]
MixerName = Literal[tuple(m.value for m in Mixer)]  # type: ignore[valid-type]


Quantization = Annotated[
    Literal[tuple(QUANTIZATION_ARGS)],  # type: ignore[valid-type]
    Meta(description="vLLM's --quantization, for a model whose config.json states none"),
]


S = TypeVar("S", bound=type[Input])


def takes(*names: str, kw_only: bool = False) -> Callable[[S], S]:
    """The request type a class declares (its name, bases, docstring and own fields) with the
    fields it takes from FIELDS, all in the order `names` lists them (space-separated). `name!`:
    required here (its type without None); `name?`: optional here (None by default)."""

    def build(cls: S) -> S:
        own = {f.name: (f.type, f.default) for f in msgspec.structs.fields(cls)}
        listed = [n for group in names for n in group.split()]
        fields: list[tuple[Any, ...]] = []
        for n in listed:
            name = n.rstrip("!?")
            t, default = own[name] if name in own else FIELDS[name]
            if n.endswith("!"):
                t, default = _without_none(t), NODEFAULT
            elif n.endswith("?"):
                t, default = t | None, None
            fields.append((name, t) if default is NODEFAULT else (name, t, default))
        assert own.keys() <= {f[0] for f in fields}, f"{cls.__name__} lists not all its own fields"
        return _define(cls, fields, kw_only)

    return build


def _without_none(t: Any) -> Any:
    kept = [a for a in get_args(t) if a is not type(None)]
    assert len(kept) == 1, t
    return kept[0]


def mirrors(core: type[msgspec.Struct], by_type: dict[Any, Any] | None = None) -> Callable[[S], S]:
    """The wire form of a core struct: the core's field names, order and defaults, each with the
    type the class declares for it, else the wire type `by_type` gives for the core's."""

    def build(cls: S) -> S:
        own = {f.name: f.type for f in msgspec.structs.fields(cls)}
        assert own.keys() <= set(core.__struct_fields__), f"{cls.__name__}: not fields of {core.__name__}"
        fields: list[tuple[Any, ...]] = []
        for f in msgspec.structs.fields(core):
            t = own[f.name] if f.name in own else (by_type or {})[f.type]
            fields.append((f.name, t) if f.default is NODEFAULT else (f.name, t, f.default))
        return _define(cls, fields, kw_only=False)

    return build


def _define(cls: S, fields: list[tuple[Any, ...]], kw_only: bool) -> S:
    """`cls` (its name, module, bases and docstring) with these fields, in this order."""
    namespace = {"__doc__": cls.__doc__}
    return msgspec.defstruct(  # type: ignore[return-value]
        cls.__name__, fields, bases=cls.__bases__, module=cls.__module__, namespace=namespace, kw_only=kw_only
    )


@mirrors(MambaState, {int: StateDim, str: ModelDtype})
class MambaStateSpec(Input):
    """A Mamba or linear-attention layer's state, as the config numbers vLLM's shape calculator
    reads (vllm/model_executor/layers/mamba/mamba_utils.py). mamba1: intermediate_size,
    state_size; mamba2: also n_groups, num_heads, head_dim; gated_delta_net: num_k_heads,
    num_v_heads, head_k_dim, head_v_dim; short_conv (LFM2): intermediate_size (conv_dim);
    linear_attention (Bailing): num_heads, head_dim, one state in conv_dtype (conv_kernel unread).
    checkpoint_blocks is 1 for Mamba2 mixers."""

    # The wire types the rule above does not give (the names, order and defaults: MambaState's).
    mixer: MixerName
    conv_kernel: Annotated[int, Meta(ge=1, le=MAX_HEAD_DIM, examples=[4])]
    checkpoint_blocks: Annotated[int, Meta(ge=0, le=1)]
    ssm_follows_conv: Annotated[
        bool,
        Meta(
            description="--mamba-ssm-cache-dtype auto keeps the SSM state in the conv dtype "
            "(false: in ssm_dtype, the model's own, as Nemotron-H's float32)"
        ),
    ]
    replicated_state_bytes: Annotated[
        int,
        Meta(
            ge=0,
            le=MAX_STATE_BYTES,
            description="a TP-replicated state the attention block is also sized for, kept by the "
            "mamba_replicated layers (Qwen4-exp's PLE short conv)",
        ),
    ]


@mirrors(QsaCaches)
class QsaSpec(Input):
    """Qwen4-exp QSA's side caches, one head on every TP rank: a circular_buffer ring of
    compress_ratio rows of ring_row_bytes (its block compress_ratio tokens) and a compressed_mla
    key of key_bytes per compress_ratio tokens."""

    # The wire types (the names, order and defaults: QsaCaches').
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
    mamba_state_bytes: Annotated[StateBytes, Meta(description="one Mamba layer's state at TP 1")] | None = (
        None
    )
    mamba: MambaStateSpec | None = None
    attention_chunk_size: Tokens | None = None
    full_head_dim: (
        Annotated[Dim, Meta(description="full-attention layers' own head dim (Gemma-4)")] | None
    ) = None
    full_kv_heads: (
        Annotated[Heads, Meta(description="full-attention layers' own KV heads (Gemma-4)")] | None
    ) = None
    sliding_mla_dim: (
        Annotated[Dim, Meta(description="sliding_window_mla layers' latent width per token (Dots3)")] | None
    ) = None
    mla_row_dim: (
        Annotated[Dim, Meta(description="the width MLA layers pad their latent rows to (Dots3)")] | None
    ) = None
    sparse_mla_layers: (
        Annotated[LayerList, Meta(description="with index_head_dim: the sparse MLA layers, when not all")]
        | None
    ) = None
    indexer_layers: (
        Annotated[
            LayerList,
            Meta(
                description="full layers that also keep a bf16 indexer key cache (MiniMax-M3 sparse layers)"
            ),
        ]
        | None
    ) = None
    mla_indexer_layers: (
        Annotated[
            LayerList,
            Meta(description="with index_head_dim: the sparse layers keeping an indexer cache, when not all"),
        ]
        | None
    ) = None
    sconv_kernel_size: (
        Annotated[Tokens, Meta(description="the short-conv states' kernel (Inkling)")] | None
    ) = None
    sconv_hidden_size: (
        Annotated[HiddenSize, Meta(description="the hidden size the short-conv streams are cut from")] | None
    ) = None
    indexer_dim: Annotated[Dim, Meta(description="the indexer key's width (sparse_index_dim)")] | None = None
    qsa: QsaSpec | None = None
    decoder_layers: (
        Annotated[LayerList, Meta(description="the decoder layer of each KV layer, when not one each")] | None
    ) = None
    num_decoder_layers: LayerCount | None = None
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
        Annotated[LayerList, Meta(description="DeepSeek-V4.1: the layers owning the compressed caches")]
        | None
    ) = None
    index_source_layer_ids: (
        Annotated[LayerList, Meta(description="DeepSeek-V4.1: the layers with an indexer")] | None
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


SnapshotSteps = Annotated[
    tuple[Annotated[int, Meta(ge=0, le=MAX_ARRIVAL_STEP)], ...],
    Meta(
        max_length=MAX_SNAPSHOTS,
        description="steps after which to return the pool: block tables, ref_cnt, free queue",
    ),
]
Concurrency = Annotated[
    int,
    Meta(
        ge=1,
        le=MAX_IN_FLIGHT,
        description="timed: requests in flight at most, as vllm bench serve --max-concurrency (the "
        "next is sent when one finishes)",
    ),
]
TimeScale = Annotated[
    float, Meta(gt=0, le=MAX_TIME_SCALE, description="× a trace's arrival times (2: half the rate)")
]
TokenizeRate = Annotated[
    float,
    Meta(
        ge=0,
        le=MAX_TOKENIZE_US,
        description="timed: the API server's tokenizer on these prompts, µs a prompt token (default "
        f"{ServingPrior().tokenize_s_per_token * 1e6:g}: prose on a DGX H100's CPU; a benchmark's "
        "random-token prompts take 1.6–2.3)",
    ),
]


# Each field a request takes, declared once (type with bounds and description, and default): the
# engine settings as the core declares them (kvplan.core.budget.types.EngineSettings), then those
# of the requests themselves. A request type names the ones it takes (`takes`).
FIELDS: dict[str, tuple[Any, Any]] = {
    f.name: (f.type, f.default) for f in msgspec.structs.fields(EngineSettings)
}
FIELDS |= {
    "model": (ModelField, NODEFAULT),
    "gpu": (GpuId | None, None),
    "quantization": (Quantization | None, None),
    "engine": (EngineId | None, None),
    "gpus_per_node": (GpusPerNode, 8),
    "cost_per_hour": (CostPerHour | None, None),
    # A simulation's pool, policy, snapshots and timed options (/v1/simulate, its trace query).
    "num_blocks": (Annotated[int, Meta(ge=2, le=MAX_NUM_BLOCKS)] | None, None),
    "scheduling_policy": (Literal["fcfs", "priority"], "fcfs"),
    "snapshot_steps": (SnapshotSteps, ()),
    "goodput": (GoodputTargets | None, None),
    "concurrency": (Concurrency | None, None),
    "time_scale": (TimeScale, 1.0),
    "tokenize_us_per_token": (TokenizeRate | None, None),
    # Latency targets and the traffic they hold for (a capacity search's, a fleet's or a
    # deployment's by traffic).
    "slo": (Slo | None, None),
    "traffic": (WorkloadShape | None, None),
    # The draft model inline (the service resolves it as it resolves `model`'s hf_config).
    "speculative_hf_config": (
        Annotated[
            dict[str, Any],
            Meta(
                description="the speculative draft's config.json, verbatim, when speculative_model is "
                "neither a preset nor a Hub model kvplan has read"
            ),
        ]
        | None,
        None,
    ),
}


@takes(
    "model kv_cache_dtype kv_cache_dtype_skip_layers tensor_parallel_size pipeline_parallel_size"
    " decode_context_parallel_size context_tokens engine"
)
class PerTokenRequest(Input):
    """Bytes of KV one token costs, per layer kind, per GPU and for the whole model."""


_AT = ENGINE_SETTINGS.index("kv_cache_memory_bytes")  # --quantization stands before it


# Every engine setting of EngineSettings, in its order (tests/contract/test_one_definition.py
# checks it), with the model, the GPU, --quantization and the profile.
@takes(
    "model gpu",
    *ENGINE_SETTINGS[:_AT],
    "quantization",
    *ENGINE_SETTINGS[_AT:],
    "engine",
    "speculative_hf_config",
)
class BudgetRequest(Input):
    """One capacity scenario: a model on a GPU (or a memory size) under vLLM's budget rules."""


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


@takes("gpu! count gpus_per_node cost_per_hour")
class FleetGpu(Input):
    """GPUs of one type in the fleet."""

    count: Annotated[int, Meta(ge=1, le=MAX_GPU_COUNT, description="how many GPUs of this type")]


@takes("tensor_parallel_size pipeline_parallel_size data_parallel_attention")
class LayoutSpec(Input):
    """A replica's layout: TP × PP GPUs; with data_parallel_attention, tensor_parallel_size GPUs as
    attention ranks (each its own KV, attention TP 1) with the experts split across them."""

    data_parallel_attention: bool = False


class MixSpec(Input):
    context_tokens: Tokens
    share: Annotated[float, Meta(gt=0, le=MAX_SHARE, description="relative share of requests of this length")]


@takes("context_tokens mix")
class Workload(Input):
    """One context length, or a mix of lengths with shares (one of them)."""

    mix: Annotated[list[MixSpec], Meta(min_length=1, max_length=MAX_MIX)] | None = None


def settings_but(*owned: str) -> tuple[str, ...]:
    """Every engine setting but those a request states its own way (a fleet's GPUs give the memory,
    its layouts the parallelism, its workload the context), in EngineSettings' order."""
    return tuple(f for f in ENGINE_SETTINGS if f not in owned)


# What a fleet request states its own way instead of as an engine setting.
_FLEET_OWNS = ("gpu_memory_bytes", "tensor_parallel_size", "pipeline_parallel_size", "context_tokens")


@takes(
    "model workload fleet layouts",
    *settings_but(*_FLEET_OWNS),
    "quantization engine target_rate slo traffic tokenize_us_per_token",
)
class FleetRequest(Input):
    """Which layout of which GPU type serves how many requests, and what a target takes: a
    concurrency (target_concurrency), or a request rate under latency targets (target_rate, slo and
    the traffic's shape: each layout's sustainable rate is searched by simulation)."""

    workload: Workload
    fleet: Annotated[list[FleetGpu], Meta(min_length=1, max_length=MAX_FLEET_TYPES)]
    layouts: Annotated[list[LayoutSpec], Meta(min_length=1, max_length=MAX_LAYOUTS)] | None = None
    target_rate: (
        Annotated[float, Meta(gt=0, le=MAX_ARRIVAL_RATE_PER_S, description="requests a second to serve")]
        | None
    ) = None


@takes(
    "model gpu! count context_tokens! gpus_per_node cost_per_hour",
    *settings_but(*_FLEET_OWNS),
    "quantization engine",
    kw_only=True,
)
class FleetQuery(Input):
    """GET /v1/fleet: one GPU type, one context length."""

    count: (
        Annotated[
            int,
            Meta(ge=1, le=MAX_GPU_COUNT, examples=[8], description="GPUs of the type (default: one node)"),
        ]
        | None
    ) = None


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
