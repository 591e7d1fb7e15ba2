"""The memory budget, the blocks it makes and the requests they hold (docs/vllm-rules.md §3,
§4, §8). One module a job: types (question and answer), defaults (the engine profile's
settings), memory (requested, weights, available), kv_cache_utils (vLLM's planning steps under
their own names), capacity (a layout's blocks and fit check), compute (one context), explain
(the ledger)."""

from .capacity import LayoutCapacity, layout_capacity
from .compute import compute_budget
from .defaults import Settings, resolve_settings, settings_for
from .memory import resolve_weights, weight_split
from .types import Band, Budget, BudgetInput, Concurrency, DataParallel, GroupResult, MemoryTerms, Pooled

__all__ = [
    "Band",
    "Budget",
    "BudgetInput",
    "Concurrency",
    "DataParallel",
    "GroupResult",
    "LayoutCapacity",
    "MemoryTerms",
    "Pooled",
    "Settings",
    "compute_budget",
    "layout_capacity",
    "resolve_settings",
    "resolve_weights",
    "settings_for",
    "weight_split",
]
