"""Nemotron-H (vllm/model_executor/models/nemotron_h.py; vllm/model_executor/models/config.py
NemotronHForCausalLMConfig): hybrid_override_pattern's Mamba (M) and attention (*) layers keep a
state or KV; its MLP and MoE layers (-, E) keep none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ...errors import InvalidConfig
from ...model.mamba import MambaState
from ..family import KvSlots
from ..fields import cfg_dim
from ..states import mamba2_state


def kv_slots(cfg: Mapping[str, Any], model_type: str, n: int) -> KvSlots:
    """A KV layer for each M and * of hybrid_override_pattern, one character a decoder layer."""
    pattern = cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
        raise InvalidConfig(
            "hybrid_override_pattern", f"must be one of M, *, -, E for each of the {n} layers"
        )
    kinds = {"M": "mamba", "*": "full_attention"}
    slots = tuple((kinds[c], i) for i, c in enumerate(pattern) if c in kinds)
    if not slots:
        raise InvalidConfig("hybrid_override_pattern", "has no Mamba or attention layer")
    return slots, n


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A Mamba2 state of mamba_num_heads of mamba_head_dim, the SSM state kept in float32 unless the
    config names its own mamba_ssm_cache_dtype (NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype,
    which --mamba-ssm-cache-dtype overrides; a config's "auto" leaves it to the conv dtype)."""
    heads, head_dim = cfg_dim(cfg, "mamba_num_heads"), cfg_dim(cfg, "mamba_head_dim")
    raw = str(cfg.get("mamba_ssm_cache_dtype", "float32"))
    keys = ("ssm_state_size", "conv_kernel", "n_groups")
    if raw == "auto":
        return mamba2_state(cfg, keys, heads * head_dim, heads, head_dim, dtype)
    ssm_dtype = MODEL_DTYPE_ALIASES.get(raw, raw)
    if ssm_dtype not in MODEL_DTYPES:
        raise InvalidConfig("mamba_ssm_cache_dtype", f"unsupported dtype {ssm_dtype!r}")
    return mamba2_state(cfg, keys, heads * head_dim, heads, head_dim, dtype, ssm_dtype)
