"""Bad input raises a core error naming the field; nothing escapes as another exception."""

from __future__ import annotations

import math

import pytest

from kvplan.core.errors import InvalidInput, InvalidLayout, KvplanError, UnknownName
from kvplan.core.units import GiB
from tests.seed import W_LLAMA_3_8B_BF16, A


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpu_memory_bytes", 0),
        ("gpu_memory_bytes", -1),
        ("gpu_memory_bytes", 1.5),
        ("gpu_memory_bytes", 10**400),
        ("gpu_memory_utilization", 0),
        ("gpu_memory_utilization", 1.01),
        ("gpu_memory_utilization", -0.5),
        ("gpu_memory_utilization", math.nan),
        ("gpu_memory_utilization", math.inf),
        ("gpu_memory_utilization", "0.9"),
        ("context_tokens", 0),
        ("context_tokens", -8192),
        ("context_tokens", math.nan),
        ("block_size", 0),
        ("weights_bytes", -1),
        ("weights_bytes", math.inf),
        ("non_kv_bytes", -5),
        ("cudagraph_bytes", math.nan),
        ("kv_cache_memory_bytes", -1),
        ("num_gpu_blocks_override", 0),
        ("max_num_batched_tokens", 0),
        ("target_concurrency", 0),
        ("max_model_len", -1),
        ("tensor_parallel_size", 0),
        ("pipeline_parallel_size", -2),
        ("decode_context_parallel_size", 0),
        ("tensor_parallel_size", True),
    ],
)
def test_bad_number_names_its_field(budget, field, value):
    kw = {"gpu": "pool-80gib", "weights_bytes": W_LLAMA_3_8B_BF16, field: value}
    with pytest.raises(InvalidInput) as e:
        budget("llama-3-8b", **kw)
    assert e.value.field == field


def test_tp_not_dividing_heads_is_an_invalid_layout(budget):
    with pytest.raises(InvalidLayout) as e:
        budget(**A, tensor_parallel_size=3)
    assert e.value.field == "tensor_parallel_size"


def test_unknown_dtype_preset_and_profile_are_unknown_names(budget, registry):
    with pytest.raises(UnknownName) as e:
        budget("llama-3-8b", gpu="pool-80gib", kv_cache_dtype="fp9")
    assert e.value.field == "kv_cache_dtype"
    with pytest.raises(UnknownName) as e:
        budget("llama-3-8b", gpu="pool-80gib", engine="vllm@nope")
    assert e.value.field == "engine"
    with pytest.raises(UnknownName) as e:
        registry.model("llama-3-7b")
    assert e.value.suggestions and "llama-3-8b" in e.value.suggestions
    with pytest.raises(UnknownName) as e:
        registry.gpu("h100")
    assert e.value.field == "gpu"
    with pytest.raises(UnknownName) as e:
        budget("llama-3-8b", gpu="pool-80gib", weight_dtype="int3")
    assert e.value.field == "weight_dtype"


def test_a_budget_needs_some_memory(budget):
    with pytest.raises(InvalidInput) as e:
        budget("llama-3-8b")
    assert e.value.field == "gpu"


def test_a_model_without_parameters_needs_weights(registry):
    from kvplan.core.budget import BudgetInput, compute_budget
    from kvplan.core.engine.profiles import get_profile
    from kvplan.core.model.geometry import make_geometry

    geo = make_geometry(name="x", num_layers=2, num_attention_heads=8, head_dim=64)
    with pytest.raises(InvalidInput) as e:
        compute_budget(BudgetInput(geometry=geo, profile=get_profile(None), gpu_memory_bytes=GiB))
    assert e.value.field == "weights_bytes"


def test_every_core_error_is_a_kvplan_error():
    for cls in (InvalidInput, InvalidLayout, UnknownName):
        assert issubclass(cls, KvplanError)
