"""gpt-oss (vllm/model_executor/models/gpt_oss.py): sliding and full attention alternating."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..layers import windowed_layer_types


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed (or Llama-4's chunks), else, with a window, the even layer indices slide."""
    return windowed_layer_types(
        cfg,
        n,
        window,
        lambda: tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)),
    )
