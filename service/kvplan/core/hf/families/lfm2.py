"""LFM2 and LFM2-MoE (vllm/model_executor/models/lfm2.py, lfm2_moe.py): short-convolution layers
beside attention, as layer_types lists them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.mamba import MambaState, Mixer
from ..fields import cfg_dim


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A short convolution's state: LFM2 reads conv_dim, LFM2-MoE the hidden size."""
    return MambaState(
        mixer=Mixer.SHORT_CONV,
        intermediate_size=cfg_dim(cfg, "conv_dim" if model_type == "lfm2" else "hidden_size"),
        conv_kernel=cfg_dim(cfg, "conv_L_cache"),
        conv_dtype=dtype,
        ssm_dtype=dtype,
    )
