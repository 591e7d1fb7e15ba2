"""Flint (vllm/models/flint; vLLM's FlintConfig, vllm/models/flint/configs.py): full attention
unless layer_types says otherwise, whatever the window."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..layers import given_layer_types


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed (or Llama-4's chunks), else every layer full: FlintConfig fills layer_types in so."""
    given = given_layer_types(cfg, n)
    return given if given is not None else tuple("full_attention" for _ in range(n))
