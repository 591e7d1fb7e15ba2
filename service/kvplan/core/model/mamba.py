"""The recurrent state of Mamba and linear-attention layers: its size per GPU from the model's
config numbers, and the state blocks a request holds (docs/vllm-rules.md §8; mirrors
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator and
MambaStateDtypeCalculator, and MambaSpec in vllm/v1/kv_cache_interface.py)."""

from __future__ import annotations

from enum import StrEnum

import msgspec

from ..engine.dtypes import MODEL_DTYPES
from ..errors import InvalidLayout


class Mixer(StrEnum):
    """The state layout a model's recurrent layers keep, named as vLLM's shape calculator."""

    MAMBA1 = "mamba1"  # Jamba, Mamba: conv (I, k − 1) + SSM (I, d_state)
    MAMBA2 = "mamba2"  # Granite-4.0-H, Falcon-H1, Nemotron-H: conv (I + 2·G·N, k − 1) + SSM (H, P, N)
    GATED_DELTA_NET = "gated_delta_net"  # Qwen3-Next: conv (2·Hk·Dk + Hv·Dv, k − 1) + state (Hv, Dv, Dk)
    # (KDA, in Kimi-Linear and Bailing V3, is this layout with Hk = Hv and Dk = Dv.)
    SHORT_CONV = "short_conv"  # LFM2: conv (conv_dim, k − 1) only
    LINEAR_ATTENTION = "linear_attention"  # Bailing linear: one state (H, head_dim, head_dim), no conv


class MambaState(msgspec.Struct, frozen=True, kw_only=True):
    """A recurrent layer's state, as the config numbers vLLM's shape calculator reads.
    `intermediate_size` is the mixer's inner width (Mamba1/2); the gated delta net reads the
    key/value heads and dims instead; linear attention only num_heads and head_dim, and keeps
    its one state in conv_dtype (vLLM's mamba_cache_dtype; conv_kernel is not read).
    `checkpoint_blocks` is 1 for the mixers that export a prefill checkpoint (MambaMixer2:
    vllm/model_executor/layers/mamba/mamba_mixer2.py)."""

    mixer: Mixer
    conv_kernel: int
    state_size: int = 0
    intermediate_size: int = 0
    n_groups: int = 1
    num_heads: int = 0
    head_dim: int = 0
    num_k_heads: int = 0
    num_v_heads: int = 0
    head_k_dim: int = 0
    head_v_dim: int = 0
    conv_dtype: str = "bfloat16"
    ssm_dtype: str = "bfloat16"
    # Whether --mamba-ssm-cache-dtype auto keeps the SSM state in the conv state's dtype
    # (MambaStateDtypeCalculator._mamba_state_dtype), or in ssm_dtype, the model's own: Nemotron-H's
    # and Qwen3.5's config hooks (vllm/model_executor/models/config.py), KDA's float32.
    ssm_follows_conv: bool = True
    checkpoint_blocks: int = 0
    # A TP-replicated state vLLM's platform also sizes the attention block for, whether or not a
    # layer keeps it (Qwen4-exp's PLE short conv: vllm/platforms/interface.py
    # Platform._align_hybrid_block_size takes the largest of get_mamba_specs_from_config).
    replicated_state_bytes: int = 0


# Blocks a request's state holds (MambaSpec.max_memory_usage_bytes). Prefix caching (on by
# default, but for attention-free models: ModelConfig.is_prefix_caching_supported) sets
# mamba_cache_mode "align" (vllm/model_executor/models/config.py MambaModelConfig): the running
# state and the last cached one, plus any prefill checkpoint. Off: mode "none", one state.
ALIGN_MODE_STATE_BLOCKS = 2
NONE_MODE_STATE_BLOCKS = 1
ALIGN, NONE = "align", "none"
SRC_MODE = "vllm/model_executor/models/config.py (MambaModelConfig.verify_and_update_config)"
SRC_DTYPES = "vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateDtypeCalculator)"


def mamba_cache_mode(enable_prefix_caching: bool | None, attention_free: bool) -> str:
    """ "align" with prefix caching, else "none"; unset, vLLM's default: on unless the model is
    attention-free (vllm/engine/arg_utils.py _set_default_chunked_prefill_and_prefix_caching_args)."""
    on = not attention_free if enable_prefix_caching is None else enable_prefix_caching
    return ALIGN if on else NONE


def with_cache_dtypes(s: MambaState, mamba_cache_dtype: str, mamba_ssm_cache_dtype: str) -> MambaState:
    """The state in the dtypes the engine flags give (MambaStateDtypeCalculator): the conv state
    in --mamba-cache-dtype (auto: the model dtype, as read); the SSM state in
    --mamba-ssm-cache-dtype, else auto: the model's own where it names one (ssm_follows_conv
    False), else the conv dtype. Linear attention and the short conv keep one state, in the conv
    dtype."""
    conv = s.conv_dtype if mamba_cache_dtype == "auto" else mamba_cache_dtype
    if mamba_ssm_cache_dtype != "auto":
        ssm = mamba_ssm_cache_dtype
    else:
        ssm = conv if s.ssm_follows_conv else s.ssm_dtype
    if (conv, ssm) == (s.conv_dtype, s.ssm_dtype):
        return s
    return msgspec.structs.replace(s, conv_dtype=conv, ssm_dtype=ssm)


def _divide(n: int, tp: int, what: str) -> int:
    if n % tp:
        raise InvalidLayout(  # a layout vLLM refuses: a fleet marks it infeasible
            "tensor_parallel_size",
            f"{what} ({n}) is not divisible by tensor_parallel_size {tp}; vLLM cannot shard this state",
        )
    return n // tp


def _extra_groups_for_head_shards(n_groups: int, tp: int) -> int:
    """Groups replicated so that every head shard has its group (MambaStateShapeCalculator)."""
    return 0 if n_groups % tp == 0 else tp - n_groups


SRC_SHAPES = "vllm/model_executor/layers/mamba/mamba_utils.py (MambaStateShapeCalculator)"
SRC_SPEC = "vllm/v1/kv_cache_interface.py (MambaSpec)"


def state_shapes(s: MambaState, tp: int) -> tuple[tuple[int, ...], ...]:
    """(conv state shape, SSM state shape) on one GPU of tensor parallel `tp`; the short
    convolution keeps only the first, linear attention only its one state."""
    if s.mixer is Mixer.LINEAR_ATTENTION:  # linear_attention_state_shape
        return ((_divide(s.num_heads, tp, "the linear-attention heads"), s.head_dim, s.head_dim),)
    k = s.conv_kernel - 1
    if s.mixer is Mixer.SHORT_CONV:
        return ((_divide(s.intermediate_size, tp, "the short-conv width"), k),)
    if s.mixer is Mixer.MAMBA1:
        inner = _divide(s.intermediate_size, tp, "the Mamba intermediate size")
        return (inner, k), (inner, s.state_size)
    if s.mixer is Mixer.MAMBA2:
        groups = s.n_groups + _extra_groups_for_head_shards(s.n_groups, tp)
        conv_dim = s.intermediate_size + 2 * groups * s.state_size
        conv = (_divide(conv_dim, tp, "the Mamba2 conv width"), k)
        return conv, (_divide(s.num_heads, tp, "the Mamba2 heads"), s.head_dim, s.state_size)
    conv_dim = s.head_k_dim * s.num_k_heads * 2 + s.head_v_dim * s.num_v_heads
    conv = (_divide(conv_dim, tp, "the linear-attention conv width"), k)
    return conv, (_divide(s.num_v_heads, tp, "the linear-attention value heads"), s.head_v_dim, s.head_k_dim)


def state_bytes(s: MambaState, tp: int) -> int:
    """One layer's state on one GPU (MambaSpec.page_size_bytes before padding)."""
    dtypes = (s.conv_dtype, s.ssm_dtype)
    return sum(_prod(shape) * MODEL_DTYPES[d] for shape, d in zip(state_shapes(s, tp), dtypes, strict=False))


def state_blocks_per_request(s: MambaState | None, mode: str) -> int:
    """MambaSpec.max_memory_usage_bytes over its page: 2 + the prefill checkpoint in "align"
    mode, 1 in "none"."""
    if mode != ALIGN:
        return NONE_MODE_STATE_BLOCKS
    return ALIGN_MODE_STATE_BLOCKS + (s.checkpoint_blocks if s is not None else 0)


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
