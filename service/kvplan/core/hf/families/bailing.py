"""Bailing hybrids (vllm/model_executor/models/registry.py: the two models of model_type
"bailing_hybrid"; bailing_moe_linear.py, Ring-2.5, with linear attention beside MLA, and
bailing_moe_v3.py, Bailing V3, with KDA; transformers' BailingHybridConfig)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...model.mamba import MambaState, Mixer
from ..fields import cfg_count, cfg_dim
from ..states import kda_state

_LINEAR = "BailingMoeV2_5ForCausalLM"
_KDA = "BailingMoeV3ForCausalLM"


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Every layer_group_size-th layer is MLA, the rest linear attention (bailing_moe_linear.py
    is_linear_layer); Bailing V3's layers past the last whole group are MLA too
    (bailing_moe_v3.py _is_kda_layer). layer_types is not read. Another model of this model
    type (the multimodal V3 wraps it in a config of its own) is refused."""
    if not {_LINEAR, _KDA} & set(archs):
        raise InvalidConfig(
            "architectures",
            f"kvplan reads model_type 'bailing_hybrid' as {_LINEAR} or {_KDA}; "
            "send other Bailing hybrids as inline geometry",
        )
    group = cfg_count(cfg, "layer_group_size")
    whole = n if _KDA not in archs else n // group * group
    return tuple("linear_attention" if (i + 1) % group and i < whole else "full_attention" for i in range(n))


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """Bailing V3: KDA (as Kimi-Linear's) over num_attention_heads of head_dim, which
    BailingHybridConfig sets to qk_rope_head_dim. Ring-2.5: one (heads, head_dim, head_dim) linear
    attention state in the model dtype, head_dim again qk_rope_head_dim whatever config.json says."""
    if _KDA in archs:
        heads, dim = cfg_dim(cfg, "num_attention_heads"), cfg_dim(cfg, "qk_rope_head_dim")
        return kda_state(heads, dim, cfg_dim(cfg, "short_conv_kernel_size"), dtype)
    return MambaState(
        mixer=Mixer.LINEAR_ATTENTION,
        conv_kernel=1,  # no convolution
        num_heads=cfg_dim(cfg, "num_attention_heads"),
        head_dim=cfg_dim(cfg, "qk_rope_head_dim"),
        conv_dtype=dtype,
        ssm_dtype=dtype,
    )
