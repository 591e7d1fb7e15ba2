"""The recurrent-state layouts several families share, built from a config's own keys: a
MambaMixer2 layer, the gated delta net, and KDA (its layout with as many value heads as key
heads). A family's state hook picks the keys; the layout's rule lives here once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ..errors import InvalidConfig
from ..model.mamba import MambaState, Mixer
from .fields import cfg_dim

# Granite-4.0-H and Falcon-H1 name their Mamba2 state, conv kernel and groups alike.
MAMBA_D_KEYS = ("mamba_d_state", "mamba_d_conv", "mamba_n_groups")
# FlashKDA, the prefill backend a bounded-gate KDA picks on SM 9.x / 10.x / 12.x GPUs, takes this
# head dim only (vllm/models/kimi_k3/nvidia/kda.py is_flashkda_supported).
FLASHKDA_HEAD_DIM = 128
# The architectures whose Mamba SSM state vLLM keeps in the config's mamba_ssm_dtype
# (vllm/model_executor/models/config.py MODELS_CONFIG_MAP: Qwen3_5ForConditionalGenerationConfig).
_QWEN35_SSM_DTYPE_ARCHS = frozenset({
    "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "ColQwen3_5", "D3ForSequenceClassification",
    "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"})  # fmt: skip


def mamba2_state(
    cfg: Mapping[str, Any],
    keys: tuple[str, str, str],
    inner: int,
    heads: int,
    head_dim: int,
    dtype: str,
    ssm_dtype: str | None = None,
) -> MambaState:
    """A MambaMixer2 layer's state from a family's (state size, conv kernel, groups) keys; the
    mixer exports a prefill checkpoint, one block (vllm/model_executor/layers/mamba/mamba_mixer2.py)."""
    state_key, conv_key, groups_key = keys
    return MambaState(
        mixer=Mixer.MAMBA2,
        intermediate_size=inner,
        state_size=cfg_dim(cfg, state_key),
        conv_kernel=cfg_dim(cfg, conv_key),
        n_groups=cfg_dim(cfg, groups_key),
        num_heads=heads,
        head_dim=head_dim,
        conv_dtype=dtype,
        ssm_dtype=ssm_dtype or dtype,
        ssm_follows_conv=ssm_dtype is None,
        checkpoint_blocks=1,
    )


def gated_delta_net_state(cfg: Mapping[str, Any], dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A gated delta net's state from the linear_* keys (vllm/model_executor/models/qwen3_next.py).
    Qwen3.5 keeps it in its config's mamba_ssm_dtype (vllm/model_executor/models/config.py
    Qwen3_5ForConditionalGenerationConfig), an update vLLM makes for the Qwen3.5 architectures
    only: Qwen3-Next, and MiniCPM-V 4.6 around a Qwen3.5 text model, keep it in the model dtype."""
    own = not archs or any(a in _QWEN35_SSM_DTYPE_ARCHS for a in archs)
    named = cfg.get("mamba_ssm_dtype") if own else None
    ssm = str(named or dtype)
    ssm = MODEL_DTYPE_ALIASES.get(ssm, ssm)
    if ssm not in MODEL_DTYPES:
        raise InvalidConfig("mamba_ssm_dtype", f"unsupported dtype {ssm!r}")
    return MambaState(
        mixer=Mixer.GATED_DELTA_NET,
        conv_kernel=cfg_dim(cfg, "linear_conv_kernel_dim"),
        num_k_heads=cfg_dim(cfg, "linear_num_key_heads"),
        num_v_heads=cfg_dim(cfg, "linear_num_value_heads"),
        head_k_dim=cfg_dim(cfg, "linear_key_head_dim"),
        head_v_dim=cfg_dim(cfg, "linear_value_head_dim"),
        conv_dtype=dtype,
        ssm_dtype=ssm,
        ssm_follows_conv=not named,
    )


def kda_state(heads: int, dim: int, kernel: int, dtype: str) -> MambaState:
    """KDA, Kimi Delta Attention (vllm/model_executor/layers/mamba/mamba_utils.py kda_state_shape
    and kda_state_dtype): the gated delta net's layout with as many value heads as key heads, all
    of one dim, the recurrent state in float32 (mamba_ssm_cache_dtype "auto"); no prefill
    checkpoint (KimiGatedDeltaNetAttention keeps MambaBase's spec)."""
    return MambaState(
        mixer=Mixer.GATED_DELTA_NET,
        conv_kernel=kernel,
        num_k_heads=heads,
        num_v_heads=heads,
        head_k_dim=dim,
        head_v_dim=dim,
        conv_dtype=dtype,
        ssm_dtype="float32",
        ssm_follows_conv=False,
    )


def flashkda_checkpoint_blocks(dim: int, dtype: str, bounded: bool) -> int:
    """1 where vLLM prefills a KDA layer with FlashKDA, which keeps a prefill checkpoint: a head
    dim of 128, a bf16 model and a bounded gate (vllm/models/kimi_k3/nvidia/kda.py
    is_flashkda_supported; its SM 9.x / 10.x / 12.x condition is core/model/gpu_arch.py's)."""
    return int(bounded and dim == FLASHKDA_HEAD_DIM and dtype == "bfloat16")
