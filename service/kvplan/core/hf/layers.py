"""The standard layer-type rule, and the pieces of it a family's own rule reuses: layer_types as
the config lists them, Llama-4's chunked layers, and a model-wide window over every layer. The
rules are the ones transformers applies when the config class fills `layer_types` in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidConfig
from .fields import cfg_count


def listed_layer_types(cfg: Mapping[str, Any]) -> tuple[str, ...] | None:
    """layer_types (or layers_block_type) as the config lists them; None when it lists none."""
    layer_types = cfg.get("layer_types") or cfg.get("layers_block_type")
    if layer_types is None:
        return None
    if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
        raise InvalidConfig("layer_types", "must be a list of strings")
    return tuple(layer_types)


def chunked_layer_types(cfg: Mapping[str, Any], n: int) -> tuple[str, ...] | None:
    """Llama-4 (vllm/model_executor/models/llama4.py), any config with attention_chunk_size:
    layers with RoPE attend within their chunk; the NoPE layers (no_rope_layers[i] == 0, every
    4th by default) are global. None without attention_chunk_size."""
    if not cfg.get("attention_chunk_size"):
        return None
    no_rope = cfg.get("no_rope_layers")
    if not no_rope:
        every = cfg_count({"no_rope_layer_interval": 4, **cfg}, "no_rope_layer_interval")
        no_rope = [int((i + 1) % every != 0) for i in range(n)]
    if not isinstance(no_rope, list) or len(no_rope) != n:
        raise InvalidConfig("no_rope_layers", f"must list one flag for each of the {n} layers")
    return tuple("chunked_attention" if v else "full_attention" for v in no_rope)


def given_layer_types(cfg: Mapping[str, Any], n: int) -> tuple[str, ...] | None:
    """The layers as listed, else Llama-4's chunks; None when the config gives neither, for the
    family's own rule to decide."""
    listed = listed_layer_types(cfg)
    return listed if listed is not None else chunked_layer_types(cfg, n)


def windowed_layer_types(
    cfg: Mapping[str, Any], n: int, window: int | None, pattern: Callable[[], tuple[str, ...]] | None = None
) -> tuple[str, ...] | None:
    """The layers as listed, else Llama-4's chunks, else uniform (None) when the config has no
    window, else the family's windowed pattern (every layer sliding unless it has one)."""
    given = given_layer_types(cfg, n)
    if given is not None:
        return given
    if not window:
        return None
    return pattern() if pattern is not None else tuple("sliding_attention" for _ in range(n))


def standard_layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Per-layer types of a family with no rule of its own, or None for uniform."""
    return windowed_layer_types(cfg, n, window)
