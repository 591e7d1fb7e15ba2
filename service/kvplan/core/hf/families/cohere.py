"""Command-R 7B, Cohere2 (vllm/model_executor/models/commandr.py; transformers' Cohere2Config):
sliding layers around every sliding_window_pattern-th global one, each window counting the
current token too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...model.geometry import pos_int
from ..layers import windowed_layer_types


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed (or Llama-4's chunks), else, with a window, every sliding_window_pattern-th layer
    (4) global (Cohere2Config)."""

    def pattern() -> tuple[str, ...]:
        period = pos_int(cfg.get("sliding_window_pattern", 4), "sliding_window_pattern", n + 1, InvalidConfig)
        return tuple("full_attention" if (i + 1) % period == 0 else "sliding_attention" for i in range(n))

    return windowed_layer_types(cfg, n, window, pattern)


def window(window: int) -> int:
    """The window plus the current token (commandr.py)."""
    return window + 1
