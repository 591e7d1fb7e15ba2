"""The oracle's cases (tests/oracle/cases-vllm-0.33.0.json, written by `make oracle`) and the
budget request that asks kvplan's API the same question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "cases-vllm-0.33.0.json"
ORACLE: dict[str, Any] = json.loads(DATA.read_text())
CASES: list[dict[str, Any]] = ORACLE["cases"]


def oracle_case(name: str) -> dict[str, Any]:
    return next(c for c in CASES if c["name"] == name)


def budget_request(model: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    i = case["inputs"]
    return {
        "model": model,
        "engine": "vllm@0.33",
        "kv_cache_memory_bytes": i["available_memory_bytes"],
        "max_model_len": i["max_model_len"],
        "block_size": i["block_size"],
        "kv_cache_dtype": i["dtype"],
        "tensor_parallel_size": i["tensor_parallel_size"],
        "max_num_batched_tokens": i["max_num_batched_tokens"],
        "async_scheduling": i["async_scheduling"],
    } | {k: i[k] for k in LAYOUT_INPUTS if k in i}


# The Mamba state's dtypes and prefix caching (the "layout-" cases), given only where a case sets them.
LAYOUT_INPUTS = ("mamba_cache_dtype", "mamba_ssm_cache_dtype", "enable_prefix_caching", "mamba_block_size")
