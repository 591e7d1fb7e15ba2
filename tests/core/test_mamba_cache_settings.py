"""The Mamba state's dtypes (--mamba-cache-dtype, --mamba-ssm-cache-dtype) and its cache mode
(--enable-prefix-caching, --mamba-block-size), as vLLM 0.33 settles them. The blocks they make
are asserted against vLLM's own planner in the oracle's layout- cases
(tests/core/test_oracle_cases.py); these check the rules one by one."""

from __future__ import annotations

import pytest

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.mamba import mamba_cache_mode, with_cache_dtypes
from tests.oracle.generate import FALCON_H1, MAMBA2, NEMOTRON_H, QWEN3_NEXT, load_config


def _state(config: str):  # type: ignore[no-untyped-def]
    m = from_hf_config(load_config(config), name=config).mamba
    assert m is not None
    return m


def test_nemotron_h_keeps_its_ssm_state_in_float32_unless_a_dtype_is_given():
    """NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype (vllm/model_executor/models/config.py):
    "auto" becomes float32; a dtype given wins."""
    m = _state(NEMOTRON_H)
    assert (m.conv_dtype, m.ssm_dtype, m.ssm_follows_conv) == ("bfloat16", "float32", False)
    assert with_cache_dtypes(m, "auto", "auto") is m
    assert with_cache_dtypes(m, "auto", "bfloat16").ssm_dtype == "bfloat16"
    # --mamba-cache-dtype moves the conv state only: the SSM state keeps the model's float32.
    conv = with_cache_dtypes(m, "float16", "auto")
    assert (conv.conv_dtype, conv.ssm_dtype) == ("float16", "float32")


def test_without_a_hook_auto_keeps_the_ssm_state_in_the_conv_dtype():
    """MambaStateDtypeCalculator._mamba_state_dtype: mamba_ssm_cache_dtype auto is the conv dtype,
    which is mamba_cache_dtype (auto: the model dtype). Qwen3-Next and Falcon-H1 have no hook."""
    for config in (QWEN3_NEXT, FALCON_H1):
        m = _state(config)
        assert m.ssm_follows_conv
        both = with_cache_dtypes(m, "float32", "auto")
        assert (both.conv_dtype, both.ssm_dtype) == ("float32", "float32")
        ssm = with_cache_dtypes(m, "auto", "float32")
        assert (ssm.conv_dtype, ssm.ssm_dtype) == ("bfloat16", "float32")


def test_prefix_caching_default_is_on_for_hybrids_and_off_for_attention_free_models():
    """vllm/engine/arg_utils.py _set_default_chunked_prefill_and_prefix_caching_args takes
    ModelConfig.is_prefix_caching_supported; MambaModelConfig maps it to the cache mode."""
    assert mamba_cache_mode(None, attention_free=False) == "align"
    assert mamba_cache_mode(None, attention_free=True) == "none"
    assert mamba_cache_mode(False, attention_free=False) == "none"
    assert mamba_cache_mode(True, attention_free=True) == "align"


def _budget(config: str, **kw: object):  # type: ignore[no-untyped-def]
    return compute_budget(
        BudgetInput(
            geometry=from_hf_config(load_config(config), name=config),
            profile=get_profile("vllm@0.33"),
            kv_cache_memory_bytes=20 << 30,
            max_model_len=16384,
            **kw,  # type: ignore[arg-type]
        )
    )


def test_a_hybrid_without_prefix_caching_keeps_one_state_in_a_block_of_max_model_len():
    on, off = _budget(FALCON_H1), _budget(FALCON_H1, enable_prefix_caching=False)
    assert [(g.block_size, g.blocks_per_request) for g in on.groups if g.kind == "mamba"] == [(1568, 3)]
    assert [(g.block_size, g.blocks_per_request) for g in off.groups if g.kind == "mamba"] == [(16384, 1)]
    assert off.blocks_per_request == on.blocks_per_request - 2 and off.bytes_per_block == on.bytes_per_block


def test_mamba_block_size_is_refused_without_prefix_caching_as_vllm_raises():
    """VllmConfig.validate_mamba_block_size: --mamba-block-size only with --enable-prefix-caching."""
    with pytest.raises(InvalidInput) as e:
        _budget(QWEN3_NEXT, enable_prefix_caching=False, mamba_block_size=64)
    assert e.value.field == "mamba_block_size"
    assert (
        _budget(QWEN3_NEXT, enable_prefix_caching=False, mamba_block_size=16384).num_blocks > 0
    )  # = max_model_len


def test_a_hybrids_mamba_block_follows_the_attention_block_whatever_mamba_block_size_says():
    """Platform._align_hybrid_block_size sets mamba_block_size to the block in "align" mode."""
    assert _budget(QWEN3_NEXT, mamba_block_size=64).groups == _budget(QWEN3_NEXT).groups


def test_an_attention_free_model_with_prefix_caching_keeps_two_states_and_the_checkpoint():
    off, on = _budget(MAMBA2), _budget(MAMBA2, enable_prefix_caching=True, mamba_block_size=256)
    assert [(g.block_size, g.blocks_per_request) for g in off.groups] == [(16384, 1)]
    assert [(g.block_size, g.blocks_per_request) for g in on.groups] == [(256, 3)]
