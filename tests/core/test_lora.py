"""The LoRA adapter slots vLLM 0.33 preallocates (core/model/lora.py), by hand from vLLM's
create_lora_weights shapes, and how the budget subtracts them. The oracle cases
(tests/core/test_lora_oracle_cases.py) check the same figures against vLLM's own LoRA manager."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.lora import LORA_RANKS, LoraSettings, lora_bytes, lora_slots

PRESETS = Path(__file__).resolve().parents[2] / "service" / "kvplan" / "presets" / "data" / "models"
GiB = 1 << 30


def config(preset: str) -> dict:  # type: ignore[type-arg]
    return json.loads((PRESETS / f"{preset}.json").read_text())["config"]  # type: ignore[no-any-return]


LLAMA = from_hf_config(config("llama-3.1-8b"))
QWEN3_MOE = from_hf_config(config("qwen3-30b-a3b"))


def slots(geometry, tensor=1, **kw):  # type: ignore[no-untyped-def]
    s = LoraSettings(**{"max_loras": 4, "max_lora_rank": 16, "dtype_bytes": 2, **kw})
    return {x.kind: x for x in lora_slots(geometry.lora, s, tensor)}


def test_llama_3_1_8b_four_rank_16_slots_by_hand():
    """vllm/lora/layers/column_parallel_linear.py MergedColumnParallelLinearWithLoRA.create_lora_weights:
    A [n, 1, r, hidden] a slice, B [n, 1, slice / TP, r]; the QKV's slices are q (32 × 128) and
    k, v (8 × 128 each); base_linear.py for the row-parallel o_proj and down_proj."""
    s = slots(LLAMA)
    n, r, b, H = 4, 16, 2, 4096
    assert s["qkv"].a_bytes == 3 * n * r * H * b  # 1,572,864
    assert s["qkv"].b_bytes == n * (4096 + 1024 + 1024) * r * b  # 786,432
    assert s["o_proj"].a_bytes + s["o_proj"].b_bytes == n * r * 4096 * b + n * H * r * b
    assert s["gate_up"].b_bytes == 2 * n * 14336 * r * b
    assert s["down_proj"].a_bytes == n * r * 14336 * b
    # vocab_parallel_embedding.py: A [n, vocab, r]; logits_processor.py: B [n, 1, vocab, r].
    assert s["embed"].bytes == s["lm_head"].bytes == n * 128256 * r * b + n * H * r * b == 16_941_056
    assert lora_bytes(tuple(s.values())) == 369_426_432  # = the oracle case lora-llama-3.1-8b-r16-x4


def test_tensor_parallel_splits_the_outputs_and_fully_sharded_also_the_rank():
    """TP 2: column B and row A halve; fully sharded (S-LoRA) also halves column A's rank and
    row B's output (base_linear.py, divide(max_lora_rank, tp_size), divide(output_size, tp_size))."""
    one, two, sharded = slots(LLAMA), slots(LLAMA, 2), slots(LLAMA, 2, fully_sharded=True)
    assert two["qkv"].a_bytes == one["qkv"].a_bytes and two["qkv"].b_bytes == one["qkv"].b_bytes // 2
    assert sharded["qkv"].a_bytes == one["qkv"].a_bytes // 2
    assert sharded["down_proj"].b_bytes == one["down_proj"].b_bytes // 2
    assert sharded["embed"] == one["embed"]  # the embedding and LM head slots are not sharded
    assert lora_bytes(tuple(two.values())) == 260_374_528
    assert lora_bytes(tuple(sharded.values())) == 201_654_272


def test_fused_moe_slots_are_one_a_and_b_per_expert():
    """fused_moe.py FusedMoEWithLoRA: gate and up A [n, E, r, hidden] and B [n, E, I / t, r],
    down A [n, E, r, I / t] and B [n, E, hidden, r]; the router a replicated linear (E outputs)."""
    s = slots(QWEN3_MOE, max_loras=2, max_lora_rank=8)
    n, r, b, E, H, Im = 2, 8, 2, 128, 2048, 768
    per_layer = (2 * n * E * r * H + n * E * r * Im + 2 * n * E * Im * r + n * E * H * r) * b
    assert s["experts"].bytes == 48 * per_layer == 1_660_944_384
    assert s["router"].bytes == 48 * (n * r * H + n * E * r) * b
    shared = slots(QWEN3_MOE, max_loras=2, max_lora_rank=8, moe_shared=True)["experts"]
    assert shared.bytes == 48 * (2 * n * r * H + n * E * r * Im + 2 * n * E * Im * r + n * H * r) * b


def test_a_target_module_names_its_packed_parent_whole():
    """vllm/lora/utils.py is_in_target_modules: q_proj matches qkv_proj, whose three slices all
    get slots; modules not named get none."""
    s = slots(LLAMA, target_modules=("q_proj", "o_proj"))
    assert set(s) == {"qkv", "o_proj"} and s["qkv"] == slots(LLAMA)["qkv"]


def test_a_rank_tp_does_not_divide_is_refused_when_fully_sharded():
    with pytest.raises(InvalidInput, match="fully_sharded_loras"):
        slots(LLAMA, 16, max_lora_rank=8, fully_sharded=True)


def test_a_vocabulary_above_258048_is_refused_as_vllm_refuses_it():
    assert LLAMA.lora is not None
    big = replace(LLAMA.lora, vocab_size=258_049)
    with pytest.raises(InvalidInput, match="vocabulary"):
        lora_slots(big, LoraSettings(max_loras=1, max_lora_rank=8, dtype_bytes=2), 1)


@given(st.integers(1, 64), st.sampled_from(LORA_RANKS), st.integers(1, 8))
def test_the_slots_grow_in_proportion_to_slots_and_rank(n, rank, k):
    base = lora_bytes(tuple(slots(LLAMA, max_loras=n, max_lora_rank=rank).values()))
    assert lora_bytes(tuple(slots(LLAMA, max_loras=n * k, max_lora_rank=rank).values())) == k * base
    assert base == n * rank * lora_bytes(tuple(slots(LLAMA, max_loras=1, max_lora_rank=1).values()))


def budget(**kw):  # type: ignore[no-untyped-def]
    return compute_budget(
        BudgetInput(geometry=LLAMA, profile=get_profile("vllm@0.33"), gpu_memory_bytes=80 * GiB, **kw), True
    )


def test_the_kv_budget_loses_exactly_the_slots_counted_with_the_weights():
    plain, lora = budget(), budget(enable_lora=True, max_loras=4, max_lora_rank=16)
    assert lora.lora_bytes_per_gpu == 369_426_432
    assert lora.weights_bytes_per_gpu - plain.weights_bytes_per_gpu == 369_426_432
    assert plain.available_kv_bytes - lora.available_kv_bytes == 369_426_432
    assert budget(max_loras=4).lora_bytes_per_gpu == 0  # without --enable-lora no slot is made


def test_lora_dtype_auto_is_the_models_dtype():
    """vllm/config/lora.py verify_with_model_config: auto → model_config.dtype."""
    fp32 = replace(LLAMA, dtype="float32")
    given = {
        "geometry": fp32,
        "profile": get_profile("vllm@0.33"),
        "gpu_memory_bytes": 80 * GiB,
        "enable_lora": True,
    }
    auto = compute_budget(BudgetInput(**given))
    half = compute_budget(BudgetInput(**given, lora_dtype="bfloat16"))
    assert auto.lora_bytes_per_gpu == 2 * half.lora_bytes_per_gpu
