"""The budget question the model-family tests ask: one model (a Geometry, or a config.json read
as kvplan reads it) on a fixed KV pool (`kv_cache_memory_bytes`, 20 GiB unless given) under vLLM
0.33's rules, with its ledger when asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kvplan.core.budget import Budget, BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidConfig
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.geometry import Geometry, make_geometry


def budget_033(model: Geometry | Mapping[str, Any], *, explain: bool = False, **inputs: Any) -> Budget:
    geometry = model if isinstance(model, Geometry) else from_hf_config(dict(model))
    args = {"kv_cache_memory_bytes": 20 << 30, **inputs}
    return compute_budget(BudgetInput(geometry=geometry, profile=get_profile("vllm@0.33"), **args), explain)


def mamba_hybrid(mamba: int, full: int, **extra: Any) -> Geometry:
    """A toy hybrid: `mamba` Mamba layers of 1 MiB of state each, then `full` full-attention layers
    of 8 KV heads of 64."""
    return make_geometry(
        name="h",
        num_layers=mamba + full,
        num_attention_heads=8,
        num_kv_heads=8,
        head_dim=64,
        layer_types=("mamba",) * mamba + ("full_attention",) * full,
        mamba_state_bytes=1 << 20,
        **extra,
    )


def config_refusal(config: Mapping[str, Any]) -> str:
    """The field kvplan names when it refuses to read `config` (InvalidConfig), failing the test
    when the config is read."""
    with pytest.raises(InvalidConfig) as e:
        from_hf_config(config)
    return e.value.field
