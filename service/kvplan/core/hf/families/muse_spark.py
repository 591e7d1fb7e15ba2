"""Muse Spark (vllm/models/muse_spark/nvidia/model.py MuseSpark1xAttention; its text config,
vllm/transformers_utils/configs/muse_spark.py MuseSparkTextConfig): plain attention, windowed by
sliding_window where layer_types says sliding_attention. Its config class has no defaults and
refuses what it cannot serve: the same fields are refused here, by name."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import InvalidConfig
from ..family import Config

_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})


def config_class(cfg: Config, n: int) -> Config:
    """The config as MuseSparkTextConfig takes it: a full or sliding type a layer, the keys its
    attention reads present, the window where a layer slides, and default RoPE only."""
    types = cfg.get("layer_types")
    if (
        not isinstance(types, list)
        or len(types) != n
        or not all(isinstance(t, str) and t in _LAYER_TYPES for t in types)
    ):
        raise InvalidConfig(
            "layer_types", f"Muse Spark needs full_attention or sliding_attention for each of the {n} layers"
        )
    for key in ("num_key_value_heads", "head_dim"):  # read as attributes, no default
        if cfg.get(key) is None:
            raise InvalidConfig(key, "Muse Spark's attention reads it and its config class has no default")
    if "sliding_attention" in types and not cfg.get("sliding_window"):
        raise InvalidConfig("sliding_window", "Muse Spark's sliding_attention layers read it")
    rope = cfg.get("rope_parameters")
    if not isinstance(rope, Mapping) or rope.get("rope_type") != "default":
        raise InvalidConfig("rope_parameters", "Muse Spark serves only rope_type 'default'")
    return cfg
