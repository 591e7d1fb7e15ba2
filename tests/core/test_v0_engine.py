"""The V0 engine's plan (docs/vllm-rules.md §9.1): no null block, every layer sized for the whole
context, concurrency printed as num_gpu_blocks × block_size ÷ T (vllm/executor/executor_base.py)."""

from __future__ import annotations

import pytest

from kvplan.core.engine.profiles import V0_PROFILE_ID, get_profile, profile_for_version
from kvplan.core.errors import InvalidInput
from kvplan.presets import load_registry
from kvplan.schemas import BudgetRequest
from kvplan.services.answers import budget_answer

REG = load_registry(extra_dir="")


def _budget(**fields):  # type: ignore[no-untyped-def]
    b, _ = budget_answer(REG, BudgetRequest(**fields), explain=True)
    return b


@pytest.mark.parametrize(
    ("version", "profile"), [("0.6.3", "vllm@v0"), ("0.4.0", "vllm@v0"), ("0.8.2", "vllm@0.8")]
)
def test_versions_before_0_8_are_the_v0_engine(version, profile):
    found = profile_for_version(version)
    assert found is not None and found.id == profile


def test_v0_keeps_no_null_block_and_prints_concurrency_as_tokens_over_the_length():
    # 8,001 tokens: not a whole number of blocks, where V0's and V1's printed figures part.
    b = _budget(model="llama-3.1-8b", gpu="h100-sxm-80gb", engine=V0_PROFILE_ID, context_tokens=8001)
    assert b.usable_blocks == b.num_blocks and b.block_size == 16
    assert b.concurrency.vllm_reported == b.num_blocks * 16 / 8001
    assert b.concurrency.guaranteed == b.num_blocks // 501  # ⌈8001 / 16⌉ blocks a request
    steps = {s.name: s for s in b.ledger}
    assert steps["usable_blocks"].formula == "num_blocks (V0 keeps no null block)"


def test_v0_sizes_a_sliding_window_layer_for_the_whole_context():
    v0 = _budget(model="gemma-3-27b", gpu="h100-sxm-80gb", engine=V0_PROFILE_ID, context_tokens=32768)
    flat = _budget(model="gemma-3-27b", gpu="h100-sxm-80gb", engine=V0_PROFILE_ID, context_tokens=32768,
                   hybrid_kv_cache_manager=False)  # fmt: skip
    assert v0.num_blocks == flat.num_blocks and "hybrid_manager_disabled" in {w.code for w in v0.warnings}


def test_v0_refuses_a_model_whose_caches_it_did_not_have():
    with pytest.raises(InvalidInput) as e:
        _budget(model="qwen3-next-80b-a3b", gpu="h100-sxm-80gb", engine=V0_PROFILE_ID, tensor_parallel_size=4)
    assert e.value.field == "engine"


def test_the_v0_profile_is_listed_with_the_others():
    assert get_profile("vllm@v0").title.startswith("vLLM 0.4")
