"""Weights from quantization_config when a checkpoint's tensors cannot be listed: the packed
weights with their scales and zero points, embeddings and norms in the model dtype."""

from __future__ import annotations

import pytest

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidConfig
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.quant import QuantScheme, quant_scheme
from tests.hub.repos import AWQ, FP8_DYNAMIC, QWEN3_8B_BASE, W4A16, expected_total_bytes


def weights_from_config(config: dict) -> int:
    geo = from_hf_config(config)
    return compute_budget(
        BudgetInput(geometry=geo, profile=get_profile(None), kv_cache_memory_bytes=1 << 30)
    ).weights_bytes


@pytest.mark.parametrize("repo", [QWEN3_8B_BASE, FP8_DYNAMIC, W4A16, AWQ], ids=lambda r: r.repo_id)
def test_the_config_alone_comes_within_a_tenth_of_a_percent_of_the_stored_bytes(repo):
    """The served tensors are the checkpoints' real layouts; the estimate misses only per-row
    scales and `weight_shape` tensors."""
    estimate, stored = weights_from_config(repo.config), expected_total_bytes(repo)
    assert abs(estimate - stored) / stored < 0.001, (estimate, stored)


@pytest.mark.parametrize(
    ("qc", "scheme"),
    [
        (
            {"quant_method": "awq", "bits": 4, "group_size": 128},
            QuantScheme("awq int4 g128", 4 * 128 + 16 + 4, 1024),
        ),
        (
            # qzeros are stored even for a symmetric GPTQ checkpoint
            {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True},
            QuantScheme("gptq int4 g128", 532, 1024),
        ),
        (
            {"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False},
            QuantScheme("gptq int4 per channel", 4, 8),
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "group_0": {
                        "weights": {
                            "num_bits": 4,
                            "type": "float",
                            "strategy": "tensor_group",
                            "group_size": 16,
                            "symmetric": True,
                        }
                    }
                },
            },
            QuantScheme("compressed-tensors fp4 tensor_group 16", 4 * 16 + 8, 128),  # NVFP4: fp8 scale a 16
        ),
        (
            {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
            QuantScheme("modelopt nvfp4 g16", 72, 128),
        ),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, QuantScheme("modelopt fp8", 1, 1)),
        (
            {"quant_method": "fp8", "weight_block_size": [128, 128]},
            QuantScheme("fp8 block 128×128", 16388, 16384),
        ),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, QuantScheme("bitsandbytes nf4", 288, 512)),
        ({"quant_method": "mxfp4"}, None),  # gpt-oss: the experts' own dtype (weight_dtype rules)
    ],
)
def test_each_format_charges_its_scales_and_zero_points(qc, scheme):
    assert quant_scheme({"quantization_config": qc}) == scheme


@pytest.mark.parametrize("group", [0, -2, 1.5, True])
def test_a_group_size_that_is_not_a_size_or_per_channel_is_refused(group):
    with pytest.raises(InvalidConfig, match="group size"):
        quant_scheme({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": group}})
