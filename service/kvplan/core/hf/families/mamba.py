"""Mamba, Falcon-Mamba and Mamba2 (vllm/model_executor/models/mamba.py, mamba2.py): attention-free
models, every layer keeping a recurrent state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HIDDEN_SIZE
from ...model.geometry import pos_int
from ...model.mamba import MambaState, Mixer
from ..family import Config
from ..fields import cfg_dim
from ..layers import listed_layer_types
from ..states import mamba2_state


def config_class(cfg: Config, n: int) -> Config:
    """No attention: placeholder heads when the config names none (the layout checks skip
    attention-free models; the state's own widths are checked against TP in core/model/mamba.py)."""
    if cfg.get("num_attention_heads") is None:
        return {"head_dim": 1, **cfg, "num_attention_heads": 1}
    return cfg


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed, else every layer Mamba."""
    listed = listed_layer_types(cfg)
    if listed is not None:
        return listed
    return tuple("mamba" for _ in range(n))


def _expand(cfg: Mapping[str, Any]) -> float:
    """The inner width's multiple of hidden_size (MambaConfig/Mamba2Config `expand`, 2 unless given):
    a positive number the width it makes is checked against MAX_HIDDEN_SIZE."""
    expand = cfg.get("expand", 2)
    number = not isinstance(expand, bool) and isinstance(expand, int | float)
    if not number or not 0 < expand <= MAX_HIDDEN_SIZE:
        said = f"must be a positive number at most {MAX_HIDDEN_SIZE:,}, got {expand!r}"
        raise InvalidConfig("expand", said)
    return float(expand)


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """Mamba1's (mamba.py: the inner width intermediate_size, else expand × hidden) or Mamba2's
    (mamba2.py) state, in the model dtype."""
    if model_type == "mamba2":
        inner = int(_expand(cfg) * cfg_dim(cfg, "hidden_size"))
        heads, head_dim = cfg_dim(cfg, "num_heads"), cfg_dim(cfg, "head_dim")
        return mamba2_state(cfg, ("state_size", "conv_kernel", "n_groups"), inner, heads, head_dim, dtype)
    inner = cfg.get("intermediate_size") or int(_expand(cfg) * cfg_dim(cfg, "hidden_size"))
    return MambaState(
        mixer=Mixer.MAMBA1,
        intermediate_size=pos_int(inner, "intermediate_size", MAX_HIDDEN_SIZE, InvalidConfig),
        state_size=cfg_dim(cfg, "state_size"),
        conv_kernel=cfg_dim(cfg, "conv_kernel"),
        conv_dtype=dtype,
        ssm_dtype=dtype,
    )
