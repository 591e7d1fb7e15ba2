"""kvplan's LoRA slots against vLLM 0.33.0's own LoRA manager: every case in
tests/oracle/lora-cases-vllm-0.33.0.json was computed by vLLM wrapping the real model (built on
the meta device) with its real LoRA layers (tests/oracle/lora_oracle.py; regenerate with
tests/oracle/generate_lora.py), and kvplan's slot bytes must equal vLLM's on every TP rank."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.hf.reader import from_hf_config

ROOT = Path(__file__).resolve().parents[2]
ORACLE = json.loads((ROOT / "tests" / "oracle" / "lora-cases-vllm-0.33.0.json").read_text())
CASES = ORACLE["cases"]
PRESETS = ROOT / "service" / "kvplan" / "presets" / "data" / "models"


def lora_budget(case: dict, explain: bool = False):  # type: ignore[no-untyped-def]
    i = case["inputs"]
    config = json.loads((PRESETS / f"{case['preset']}.json").read_text())["config"]
    geometry = from_hf_config(config, name=case["name"])
    if i.get("is_3d_moe_weight"):  # the oracle marked the model class so: kvplan's modules the same
        assert geometry.lora is not None
        geometry = replace(geometry, lora=replace(geometry.lora, moe_3d_weights=True))
    return compute_budget(
        BudgetInput(
            geometry=geometry,
            profile=get_profile("vllm@0.33"),
            # Sized by GPU memory when explained: the ledger's memory steps are the budget's.
            kv_cache_memory_bytes=None if explain else 1 << 34,
            gpu_memory_bytes=80 << 30 if explain else None,
            max_model_len=4096,
            tensor_parallel_size=i.get("tensor_parallel_size", 1),
            enable_lora=True,
            max_loras=i["max_loras"],
            max_lora_rank=i["max_lora_rank"],
            lora_dtype=i.get("lora_dtype", "auto"),
            fully_sharded_loras=i.get("fully_sharded_loras", False),
            lora_target_modules=tuple(i["target_modules"]) if i.get("target_modules") else None,
            enable_moe_shared_loras=i.get("enable_moe_shared_loras", False),
            enable_mixed_moe_lora_format=i.get("enable_mixed_moe_lora_format", False),
        ),
        explain,
    )


def test_the_lora_cases_come_from_vllm_0_33_0():
    assert ORACLE["vllm"] == "0.33.0"
    assert len(CASES) >= 10 and all(c["name"].startswith("lora-") for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_kvplan_counts_each_ranks_lora_slots_to_the_byte(case):
    ranks = case["vllm"]["bytes_per_rank"]
    assert len(set(ranks)) == 1, "every TP rank holds the same slots"
    assert lora_budget(case).lora_bytes_per_gpu == ranks[0]


def test_the_ledger_sums_the_kinds_to_vllms_figure():
    (case,) = [c for c in CASES if c["name"] == "lora-qwen3-30b-a3b-r8-x2"]
    steps = {s.name: s for s in lora_budget(case, explain=True).ledger}
    kinds = [s for name, s in steps.items() if name.startswith("lora_slots[")]
    assert sum(s.value for s in kinds) == steps["lora_bytes"].value == case["vllm"]["bytes_per_rank"][0]
    # vLLM's FusedMoEWithLoRA slots, all 48 layers: kvplan's experts step.
    assert steps["lora_slots[experts]"].value == case["vllm"]["kinds"]["FusedMoEWithLoRA"][1]
