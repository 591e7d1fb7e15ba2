"""AliceAI (vllm/model_executor/models/alice_ai.py): KDA layers beside attention, as layer_types
lists them. It has no config class in transformers (its config.json comes with the repository's
own), so it is known by its architecture and read under the model type alice_ai."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...model.mamba import MambaState
from ..family import Reading
from ..fields import cfg_dim
from ..layers import listed_layer_types
from ..states import kda_state

MODEL_TYPE = "alice_ai"


def claim(r: Reading) -> Reading:
    """A config naming AliceAIForCausalLM is read as AliceAI whatever model type it states."""
    return r._replace(model_type=MODEL_TYPE)


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """AliceAI's layers are read from layer_types: no rule fills them in."""
    if (cfg.get("layer_types") or cfg.get("layers_block_type")) is None:
        raise InvalidConfig("layer_types", "AliceAI's layers are read from layer_types, which is missing")
    return listed_layer_types(cfg)


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """KDA (as Kimi-Linear's) of linear_num_key_heads heads of linear_key_head_dim; the value
    heads and dims must match (alice_ai.py _make_kimi_kda_config)."""
    heads, dim = cfg_dim(cfg, "linear_num_key_heads"), cfg_dim(cfg, "linear_key_head_dim")
    for key, same in (("linear_num_value_heads", heads), ("linear_value_head_dim", dim)):
        if cfg.get(key, same) != same:
            raise InvalidConfig(key, "AliceAI's KDA needs as many value heads and dims as key ones")
    return kda_state(heads, dim, cfg_dim(cfg, "linear_conv_kernel_dim"), dtype)
