"""The budget question the model-family tests ask: one model (a Geometry, or a config.json read
as kvplan reads it) on a fixed KV pool (`kv_cache_memory_bytes`, 20 GiB unless given) under vLLM
0.33's rules, with its ledger when asked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.core.budget import Budget, BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.geometry import Geometry


def budget_033(model: Geometry | Mapping[str, Any], *, explain: bool = False, **inputs: Any) -> Budget:
    geometry = model if isinstance(model, Geometry) else from_hf_config(dict(model))
    args = {"kv_cache_memory_bytes": 20 << 30, **inputs}
    return compute_budget(BudgetInput(geometry=geometry, profile=get_profile("vllm@0.33"), **args), explain)
