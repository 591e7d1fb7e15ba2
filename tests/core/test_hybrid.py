"""Hybrid sliding-window models: docs/vllm-rules.md §8's Gemma-3-27B and gpt-oss-120b examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InvalidConfig
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.units import cdiv
from tests.core.budgets import budget_033, config_refusal

H100 = dict(gpu="h100-sxm-80gb")  # max_num_batched_tokens defaults to 8192 here


def test_gemma3_27b_groups_into_1_full_and_6_sliding_with_8_padding_slots(budget):
    b = budget("gemma-3-27b", block_size=16, context_tokens=8192, **H100)
    assert b.group_size == 10
    by_kind = {g.kind: (g.groups, g.layers) for g in b.groups}
    assert by_kind == {"sliding_attention": (6, 52), "full_attention": (1, 10)}
    assert b.padding_slots == 8
    assert b.bytes_per_block == 1_310_720  # 10 × page 131,072
    assert "hybrid_padding" in {w.code for w in b.warnings}


def test_gemma3_27b_blocks_per_request_at_8k_and_128k(budget):
    # F = 2 × 8192 (async scheduling); W − 1 + F = 17,407 ≥ 8192: each sliding group costs 513.
    short = budget("gemma-3-27b", block_size=16, context_tokens=8192, **H100)
    assert short.sliding_inflight_tokens == 16384
    assert {g.kind: g.blocks_per_request for g in short.groups} == {
        "sliding_attention": 513,
        "full_attention": 512,
    }
    assert short.blocks_per_request == 512 + 6 * 513
    long = budget("gemma-3-27b", block_size=16, context_tokens=131072, **H100)
    assert long.blocks_per_request == 8192 + 6 * (cdiv(1023 + 16384, 16) + 1)
    assert long.blocks_per_request == 8192 + 6 * 1089


def test_gpt_oss_120b_has_two_groups_of_18_and_no_padding(budget):
    b = budget("gpt-oss-120b", block_size=16, context_tokens=131072, **H100)
    assert b.group_size == 18
    assert sorted(g.kind for g in b.groups) == ["full_attention", "sliding_attention"]
    assert b.padding_slots == 0
    assert b.bytes_per_block == 18 * 8 * 16 * (64 + 64) * 2 == 589_824
    by_kind = {g.kind: g.blocks_per_request for g in b.groups}
    assert by_kind == {"full_attention": 8192, "sliding_attention": cdiv(127 + 16384, 16) + 1}
    assert b.blocks_per_request == 8192 + 1033


def test_sliding_layer_costs_one_block_more_than_full_when_window_covers_the_request(budget):
    b = budget("gpt-oss-120b", block_size=16, context_tokens=8192, **H100)
    by_kind = {g.kind: g.blocks_per_request for g in b.groups}
    assert by_kind["sliding_attention"] == by_kind["full_attention"] + 1


def test_old_profile_bounds_the_window_by_max_num_batched_tokens_alone(budget):
    b = budget("gpt-oss-120b", engine="vllm@0.10", context_tokens=131072, **H100)
    assert b.block_size == 16
    assert b.sliding_inflight_tokens == 8192
    by_kind = {g.kind: g.blocks_per_request for g in b.groups}
    assert by_kind["sliding_attention"] == cdiv(127 + 8192, 16) + 1


def test_pipeline_parallel_raises_the_in_flight_bound_to_pp_batches(budget):
    b = budget("gpt-oss-120b", block_size=16, context_tokens=131072, pipeline_parallel_size=4, **H100)
    assert b.sliding_inflight_tokens == 4 * 8192


def test_disabling_the_hybrid_manager_sizes_sliding_layers_as_full(budget):
    b = budget("gpt-oss-120b", block_size=16, context_tokens=131072, hybrid_kv_cache_manager=False, **H100)
    assert [(g.kind, g.groups) for g in b.groups] == [("full_attention", 1)]
    assert b.blocks_per_request == 8192
    assert b.bytes_per_block == 36 * 32768
    assert "hybrid_manager_disabled" in {w.code for w in b.warnings}


def test_skipping_sliding_layers_from_fp8_raises_the_full_layers_block_size(budget):
    # Sliding layers stay bf16 (page 32 KiB), full layers fp8 (16 KiB): vLLM doubles their block.
    b = budget(
        "gpt-oss-120b",
        block_size=16,
        kv_cache_dtype="fp8",
        kv_cache_dtype_skip_layers=("sliding_window",),
        context_tokens=8192,
        **H100,
    )
    by_kind = {g.kind: g.block_size for g in b.groups}
    assert by_kind == {"sliding_attention": 16, "full_attention": 32}
    assert "block_size_raised" in {w.code for w in b.warnings}


def test_max_context_of_a_hybrid_model_fits_and_one_token_more_does_not(budget):
    b = budget(
        "gemma-3-27b",
        block_size=16,
        gpu_memory_utilization=0.3,
        weights_bytes=0,
        max_model_len=10_000_000,
        **H100,
    )
    t = b.max_context_tokens
    assert b.max_context_limited_by == "kv_cache"
    fit = b.num_blocks - 1
    fits = budget(
        "gemma-3-27b",
        block_size=16,
        gpu_memory_utilization=0.3,
        weights_bytes=0,
        context_tokens=t,
        max_model_len=10_000_000,
        **H100,
    )
    over = budget(
        "gemma-3-27b",
        block_size=16,
        gpu_memory_utilization=0.3,
        weights_bytes=0,
        context_tokens=t + 1,
        max_model_len=10_000_000,
        **H100,
    )
    assert fits.blocks_per_request <= fit < over.blocks_per_request


def test_the_ledger_explains_the_sliding_bound_and_each_groups_blocks(budget):
    b = budget("gpt-oss-120b", block_size=16, context_tokens=131072, explain=True, **H100)
    steps = {s.name: s for s in b.ledger}
    assert steps["max_num_batched_tokens"].value == 8192
    assert steps["max_num_batched_tokens"].source.startswith("vllm/engine/arg_utils.py")
    assert steps["sliding_inflight_tokens"].value == 16384
    assert steps["blocks_per_request[sliding_attention × 1 groups]"].value == cdiv(127 + 16384, 16) + 1
    assert steps["group_size"].value == 18


@pytest.mark.parametrize(
    ("model", "groups"),
    [
        ("llama-4-scout", {"chunked_attention": 3, "full_attention": 1}),
        ("qwen3-next-80b-a3b", {"mamba": 3, "full_attention": 1}),
        ("jamba-1.5-mini", {"mamba": 7, "full_attention": 1}),
        ("granite-4.0-h-small", {"mamba": 9, "full_attention": 1}),
        ("command-r7b", {"sliding_attention": 3, "full_attention": 1}),
        ("falcon-h1-7b", {"full_attention": 1, "mamba": 1}),
    ],
)
def test_each_new_family_preset_groups_its_layers_as_vllm(budget, model, groups):
    b = budget(model, gpu="h100-sxm-80gb", engine="vllm@0.33", weights_bytes=0)
    assert {g.kind: g.groups for g in b.groups} == groups


def test_pipeline_stages_split_decoder_layers_and_kv_layers_follow_them(registry):
    """Falcon-H1 keeps two KV layers in each of its 44 decoder layers: 3 stages take 15, 15 and
    14 decoder layers (vllm/distributed/utils.py get_pp_indices), so 30, 30 and 28 KV layers."""
    from kvplan.core.kv.parallel import kv_stage_ranges

    falcon = registry.model("falcon-h1-7b").geometry
    assert kv_stage_ranges(falcon, 3) == ((0, 30), (30, 60), (60, 88))
    dense = registry.model("llama-3-8b").geometry
    assert kv_stage_ranges(dense, 3) == ((0, 11), (11, 22), (22, 32))


def _config(name: str) -> dict:
    return json.loads((Path(__file__).parent / "data" / "hf-configs" / name).read_text())


def test_a_qwen3_5_config_without_layer_types_or_interval_has_every_fourth_layer_full():
    """Qwen3_5*Config fills layer_types in with full_attention_interval 4 when neither is given."""
    cfg = _config("Qwen--Qwen3.6-35B-A3B.json")
    stated = from_hf_config(cfg).layer_pattern
    left_out = ("layer_types", "full_attention_interval")
    bare = {k: v for k, v in cfg["text_config"].items() if k not in left_out}
    assert from_hf_config({**cfg, "text_config": bare}).layer_pattern == stated
    assert stated.count("F") == 10 and stated[3::4] == "F" * 10


def test_an_olmo_hybrid_config_without_layer_types_keeps_its_last_layer_full_when_short():
    """OlmoHybridConfig: every 4th layer full, and the last when that leaves none."""
    stated = _config("synthetic--olmo-hybrid-defaults.json")
    cfg = {k: v for k, v in stated.items() if k != "layer_types"}
    assert from_hf_config(cfg).layer_pattern == from_hf_config(stated).layer_pattern
    assert from_hf_config({**cfg, "num_hidden_layers": 3}).layer_pattern[-1] == "F"


def test_an_aliceai_config_is_known_by_its_architecture_and_needs_its_layer_types():
    stated = _config("synthetic--alice-ai-shaped.json")
    g = from_hf_config({**stated, "model_type": "whatever_its_repository_calls_it"})
    assert g.layer_pattern == from_hf_config(stated).layer_pattern
    assert g.layer_counts() == {"full_attention": 10, "mamba": 30}
    assert config_refusal({k: v for k, v in stated.items() if k != "layer_types"}) == "layer_types"
    assert config_refusal({**stated, "linear_value_head_dim": 64}) == "linear_value_head_dim"


@pytest.mark.parametrize("arch", ["DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM"])
def test_an_architecture_with_a_kv_layout_of_its_own_is_refused_not_read_as_attention(arch):
    llama_shaped = {"architectures": [arch], "model_type": "something", "num_hidden_layers": 4,
                    "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512}  # fmt: skip
    with pytest.raises(InvalidConfig) as e:
        from_hf_config(llama_shaped)
    assert e.value.field == "architectures" and arch in e.value.reason


MUSE = {"architectures": ["MuseSparkForConditionalGeneration"], "model_type": "muse_spark",
        "text_config": {"model_type": "muse_spark_text", "num_hidden_layers": 4, "num_attention_heads": 8,
                        "num_key_value_heads": 2, "head_dim": 128, "hidden_size": 1024,
                        "sliding_window": 1024, "rope_parameters": {"rope_type": "default"},
                        "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}}  # fmt: skip


def _muse(**text: object) -> dict:
    return {**MUSE, "text_config": {**MUSE["text_config"], **text}}  # type: ignore[dict-item]


def test_muse_spark_reads_its_sliding_and_full_layers_from_layer_types():
    g = from_hf_config(MUSE)
    assert g.layer_counts() == {"sliding_attention": 3, "full_attention": 1}
    assert (g.sliding_window, g.num_kv_heads, g.head_dim) == (1024, 2, 128)


@pytest.mark.parametrize(
    "text, field",
    [
        ({"layer_types": None}, "layer_types"),
        ({"layer_types": ["sliding_attention"] * 3}, "layer_types"),
        ({"layer_types": ["chunked_attention"] * 4}, "layer_types"),
        ({"num_key_value_heads": None}, "num_key_value_heads"),
        ({"head_dim": None}, "head_dim"),
        ({"sliding_window": None}, "sliding_window"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}, "rope_parameters"),
    ],
)
def test_muse_spark_fields_its_config_class_refuses_are_refused_by_name(text, field):
    assert config_refusal(_muse(**text)) == field


def _dots3(**changes: object) -> dict:
    return {**_config("synthetic--dots3-note-shaped.json"), **changes}


def test_dots3_reads_sliding_window_mla_beside_sparse_mla_padded_to_the_sliding_width():
    g = from_hf_config(_dots3())
    assert g.layer_counts() == {"mla": 10, "sliding_window_mla": 30}
    assert (g.sliding_window, g.sliding_mla_dim, g.mla_row_dim) == (4096, 1024 + 64, 1024 + 64)
    assert g.mla_latent_dim == 512 + 64 and g.index_head_dim == 128


def test_dots3_sparse_layers_that_reuse_a_top_k_keep_no_indexer_cache():
    """IndexCache (DeepseekV2MLAAttention): by its index among all layers, a sparse layer computes
    its top-k when max(i - offset + 1, 0) % index_topk_freq == 0, or per index_topk_pattern."""
    every_third = from_hf_config(_dots3(index_topk_freq=3))  # sparse layers 3, 7, 11, …, 39
    assert every_third.mla_indexer_layers == (7, 19, 31)
    assert from_hf_config(_dots3(index_topk_pattern="FFFS" * 10)).mla_indexer_layers == ()
    assert from_hf_config(_dots3()).mla_indexer_layers is None  # every sparse layer has its own


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"layer_types": None}, "layer_types"),
        ({"swa_kv_lora_rank": None}, "swa_kv_lora_rank"),
        ({"swa_kv_lora_rank": 256}, "swa_kv_lora_rank"),  # narrower than the sparse latent
        ({"sliding_window_size": None}, "sliding_window_size"),
        ({"index_head_dim": None}, "index_head_dim"),
        ({"index_topk_freq": 0}, "index_topk_freq"),
        ({"index_topk_pattern": 4}, "index_topk_pattern"),
    ],
)
def test_dots3_fields_kvplan_cannot_read_are_refused_by_name(changes, field):
    assert config_refusal(_dots3(**changes)) == field


@pytest.mark.parametrize(
    "inputs, field",
    [
        ({"kv_cache_dtype": "fp8"}, "kv_cache_dtype"),  # FlashAttnMLASparseImpl: 16-bit KV only
        ({"block_size": 16}, "block_size"),  # the sparse and indexer kernels take multiples of 64
        ({"hybrid_kv_cache_manager": False}, "hybrid_kv_cache_manager"),
        ({"pipeline_parallel_size": 2}, "pipeline_parallel_size"),
        ({"tensor_parallel_size": 2, "decode_context_parallel_size": 2}, "decode_context_parallel_size"),
    ],
)
def test_dots3_settings_vllm_refuses_or_kvplan_does_not_plan_are_refused_by_name(inputs, field):
    from kvplan.core.errors import InvalidInput

    geometry = from_hf_config(_dots3())
    with pytest.raises(InvalidInput) as e:
        budget_033(geometry, **{"block_size": 64, **inputs})
    assert e.value.field == field


def test_flint_and_beam_without_layer_types_read_as_their_config_classes_fill_them():
    """FlintConfig: every layer full; BeamConfig: every layer sliding (window 4096)."""
    flint = {k: v for k, v in _config("synthetic--flint-shaped.json").items() if k != "layer_types"}
    assert set(from_hf_config(flint).layer_pattern) == {"F"}
    beam = from_hf_config({"architectures": ["BeamForCausalLM"], "model_type": "beam"})
    assert beam.layer_counts() == {"sliding_attention": 24} and beam.sliding_window == 4096


HY_V4 = {"architectures": ["HYV4ForCausalLM"], "model_type": "hy_v4", "num_hidden_layers": 8}
OWN = ["full"] * 8  # indexer_types: every layer computes its own top-k


def test_hy_v4_with_no_sparse_layer_is_dense_mla_without_an_indexer_though_index_topk_is_set():
    """HYV4Config's defaults: 34 layers, no layer_types, index_topk 2048 (vllm/models/hy_v4)."""
    defaults = from_hf_config({"architectures": ["HYV4ForCausalLM"], "model_type": "hy_v4"})
    assert defaults.layer_counts() == {"mla": 34} and defaults.head_dim == 512 + 64
    assert defaults.index_head_dim is None
    full = from_hf_config({**HY_V4, "layer_types": ["full_attention"] * 8})
    assert full.layer_counts() == {"mla": 8} and full.index_head_dim is None


def test_hy_v4_with_every_layer_sparse_and_its_own_indexer_is_the_deepseek_v32_layout():
    g = from_hf_config({**HY_V4, "layer_types": ["sparse_attention"] * 4 + ["indexed_attention"] * 4,
                        "indexer_types": OWN})  # fmt: skip
    assert g.layer_counts() == {"mla": 8} and g.index_head_dim == 128


def test_hy_v4_sparse_layers_that_reuse_a_top_k_keep_no_indexer_cache():
    """HYV4Config's indexer_types: layer 0 and every 4th from layer 1 compute their top-k."""
    g = from_hf_config({**HY_V4, "layer_types": ["sparse"] * 8})
    assert g.layer_counts() == {"mla": 8} and g.index_head_dim == 128
    assert (g.sparse_mla_layers, g.mla_indexer_layers) == (None, (0, 1, 5))


def test_hy_v4_dense_layers_beside_sparse_ones_are_mla_without_an_indexer():
    g = from_hf_config(
        {**HY_V4, "layer_types": ["sparse"] * 4 + ["full_attention"] * 4, "indexer_types": OWN}
    )
    assert g.layer_counts() == {"mla": 8}
    assert (g.sparse_mla_layers, g.mla_indexer_layers) == ((0, 1, 2, 3), None)


def test_hy_v4_without_the_learnable_sink_plans_as_with_it():
    sink = from_hf_config({**HY_V4, "layer_types": ["sparse"] * 8, "indexer_types": OWN})
    plain = from_hf_config(
        {**HY_V4, "layer_types": ["sparse"] * 8, "indexer_types": OWN, "learnable_sink": False}
    )
    assert sink == plain


def test_hy_v4_fp8_with_dense_layers_beside_sparse_ones_is_refused_naming_kv_cache_dtype():
    """The first sparse layer turns the shared cache dtype into fp8_ds_mla, which no dense MLA
    backend takes: vLLM does not start."""
    from kvplan.core.errors import InvalidInput
    from kvplan.core.kv.pertoken import per_token

    g = from_hf_config(
        {**HY_V4, "layer_types": ["sparse"] * 4 + ["full_attention"] * 4, "indexer_types": OWN}
    )
    assert per_token(g, "auto").bytes_per_token == 8 * 1152 + 4 * 132
    with pytest.raises(InvalidInput) as e:
        per_token(g, "fp8")
    assert e.value.field == "kv_cache_dtype"


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"layer_types": ["sliding_attention"] * 8}, "layer_types[0]"),
        ({"layer_types": ["sparse"] * 8, "indexer_types": ["full"] * 7}, "indexer_types"),
    ],
)
def test_hy_v4_fields_kvplan_cannot_read_are_refused_naming_the_field(changes, field):
    assert config_refusal({**HY_V4, **changes}) == field


def test_a_window_beside_layer_types_of_only_full_attention_is_no_window():
    cfg = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
           "sliding_window": 4096, "layer_types": ["full_attention"] * 4}  # fmt: skip
    g = from_hf_config(cfg)
    assert set(g.layer_pattern) == {"F"} and g.sliding_window is None


def test_a_refused_architecture_is_named_before_any_field_is_read():
    assert config_refusal({"architectures": ["DeepseekV4ForCausalLM"]}) == "architectures"
    with pytest.raises(InvalidConfig) as e:
        from_hf_config({"architectures": "DeepseekV4ForCausalLM", "model_type": "llama",
                        "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256})  # fmt: skip
    assert e.value.field == "architectures"  # a string, not a list, is not read past


def test_an_empty_zamba2_block_list_is_refused_not_replaced_by_the_default():
    cfg = {**_config("synthetic--zamba2-defaults.json"), "layers_block_type": []}
    assert config_refusal(cfg) == "layers_block_type"


def test_gemma_3n_kv_shared_layers_keep_no_kv_cache_of_their_own():
    g = from_hf_config(_config("synthetic--gemma-3n-defaults.json"))
    assert (g.num_layers, g.decoder_layer_count) == (20, 35)  # the last 15 read earlier layers' KV
    assert g.layer_counts() == {"full_attention": 4, "sliding_attention": 16}


def test_gemma_4_full_layers_keep_their_own_head_dim_and_kv_heads():
    text = {"model_type": "gemma4_text", "num_hidden_layers": 6, "num_attention_heads": 8,
            "num_key_value_heads": 4, "head_dim": 256, "hidden_size": 2304, "sliding_window": 512,
            "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}  # fmt: skip
    g = from_hf_config(text)  # global_head_dim is 512 unless the config says
    assert (g.head_dim, g.full_head_dim, g.full_kv_heads) == (256, 512, 4)
    g = from_hf_config({**text, "per_layer_config": {"5": {"head_dim": 512, "num_key_value_heads": 2}}})
    assert (g.full_head_dim, g.full_kv_heads) == (512, 2)
    last_forced = from_hf_config({**text, "layer_types": ["sliding_attention"] * 6})
    assert last_forced.layer_pattern.endswith("F")  # Gemma4TextConfig makes the last layer full
    assert (
        config_refusal({**text, "per_layer_config": {"2": {"head_dim": 512}}}) == "per_layer_config.2"
    )  # a sliding layer's override is not read
    for odd in ("²", "9" * 5000):  # digits to str.isdigit(), not to int()
        assert (
            config_refusal({**text, "per_layer_config": {odd: {"head_dim": 512}}})
            == f"per_layer_config.{odd}"
        )
    eight = {**text, "num_hidden_layers": 8, "num_kv_shared_layers": 2,
             "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2}  # fmt: skip
    shared = from_hf_config(eight)  # layers 6 and 7 read layers 2's and 3's KV
    assert (shared.num_layers, shared.decoder_layer_count, shared.full_head_dim) == (6, 8, 512)
    assert shared.layer_counts() == {"full_attention": 1, "sliding_attention": 5}


def test_the_ledger_states_gemma_4_full_layers_own_head_dim_and_kv_heads():
    from kvplan.core.kv.parallel import Parallel
    from kvplan.core.kv.pertoken import per_token

    g = from_hf_config(_config("synthetic--gemma-4-shared-shaped.json"))
    steps = {s.name: s for s in per_token(g, "auto", (), Parallel(2), 8192, explain=True).ledger}
    for kind in ("sliding_attention", "full_attention"):
        s = steps[f"bytes_per_token_per_layer[{kind}]"]
        assert s.value == s.inputs["Hkv_per_gpu"] * (s.inputs["D_k"] + s.inputs["D_v"]) * 2  # bf16
    assert steps["bytes_per_token_per_layer[full_attention]"].inputs["D_k"] == 512


def _deci(groups: list[int]) -> dict:
    """A Nemotron-NAS (DeciLM) config: n_heads_in_group per layer, 0 for a no-op attention."""
    blocks = [{"attention": {"no_op": True} if g == 0 else {"n_heads_in_group": g, "no_op": False},
               "ffn": {"ffn_mult": 2.0}} for g in groups]  # fmt: skip
    return {"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas",
            "num_hidden_layers": len(groups), "num_attention_heads": 64, "hidden_size": 8192,
            "block_configs": blocks}  # fmt: skip


def test_nemotron_nas_no_op_attention_blocks_keep_no_kv_and_the_rest_share_one_kv_width():
    g = from_hf_config(_deci([8, 0, 8, 8, 0, 8]))  # vllm/model_executor/models/nemotron_nas.py
    assert (g.num_layers, g.decoder_layer_count, g.num_kv_heads, g.head_dim) == (4, 6, 8, 128)
    assert config_refusal(_deci([8, 4, 8])) == "block_configs"  # KV widths per layer: not read as one


def test_aliceai_runs_without_pipeline_parallelism_as_vllm_refuses_it():
    from kvplan.core.errors import InvalidLayout
    from kvplan.core.kv.parallel import Parallel, validate

    g = from_hf_config(_config("synthetic--alice-ai-shaped.json"))
    validate(g, Parallel(2, 1))
    with pytest.raises(InvalidLayout) as e:
        validate(g, Parallel(1, 2))
    assert e.value.field == "pipeline_parallel_size"


K3 = "synthetic--kimi-k3-shaped.json"


def _k3(text: dict | None = None, lac: dict | None = None, top: dict | None = None) -> dict:
    """The Kimi-K3-shaped config with text_config / linear_attn_config keys changed."""
    cfg = _config(K3)
    t = cfg["text_config"]
    t = {**t, "linear_attn_config": {**t["linear_attn_config"], **(lac or {})}, **(text or {})}
    return {**cfg, **(top or {}), "text_config": t}


def test_kimi_k3_is_read_from_its_text_config_as_kimi_linear_with_a_flashkda_checkpoint():
    """KimiK3Config's text_config is a KimiLinearConfig: every 4th layer MLA, the rest KDA, whose
    full-rank gate prefills with FlashKDA (head dim 128, bf16, a gate bound) and so keeps a
    prefill checkpoint (vllm/models/kimi_k3/nvidia/kda.py)."""
    g = from_hf_config(_config(K3))
    assert g.layer_counts() == {"mla": 16, "mamba": 48} and g.head_dim == 512 + 64
    assert g.mamba is not None and g.mamba.checkpoint_blocks == 1
    assert (g.mamba.num_v_heads, g.mamba.head_v_dim, g.mamba.ssm_dtype) == (64, 128, "float32")


@pytest.mark.parametrize(
    "text, lac, top",
    [
        ({}, {"gate_lower_bound": None}, {}),  # FlashKDA needs a bounded gate
        ({}, {"head_dim": 64}, {}),  # and a head dim of 128
        ({"torch_dtype": "float16"}, {}, {"torch_dtype": "float16"}),  # and a bf16 model
        ({}, {"use_full_rank_gate": False}, {}),  # Kimi-Linear's low-rank-gate KDA: never
    ],
)
def test_kimi_k3_kda_keeps_no_checkpoint_where_flashkda_does_not_prefill_it(text, lac, top):
    g = from_hf_config(_k3(text, lac, top))
    assert g.mamba is not None and g.mamba.checkpoint_blocks == 0


def test_kimi_k3_reads_what_its_text_config_leaves_out_from_kimi_linear_config():
    """KimiLinearConfig's defaults: 32 layers, 32 heads, 4096 positions."""
    g = from_hf_config(_config("synthetic--kimi-k3-defaults.json"))
    assert g.layer_counts() == {"mla": 8, "mamba": 24}
    assert g.max_position_embeddings == 4096 and g.num_attention_heads == 32


@pytest.mark.parametrize(
    "cfg, field",
    [
        (_k3(lac={"gate_lower_bound": 0.5}), "linear_attn_config.gate_lower_bound"),
        (_k3(lac={"gate_lower_bound": -6}), "linear_attn_config.gate_lower_bound"),
        (_k3(text={"model_type": "kimi_k3_text"}), "text_config.model_type"),
        (_k3(text={"linear_attn_config": None}), "linear_attn_config"),
    ],
)
def test_a_kimi_k3_config_vllm_would_not_build_is_refused_naming_the_field(cfg, field):
    assert config_refusal(cfg) == field


GLM5_NEXT = {"architectures": ["Glm5NextForCausalLM"], "model_type": "glm5_next_text",
             "torch_dtype": "bfloat16"}  # fmt: skip


def test_glm5_next_reads_glm5_next_text_config_defaults_with_every_fourth_layer_sparse_mla():
    """Glm5NextTextConfig: 45 layers, layer i sparse MLA when i % 4 == 3, the rest KDA; NoPE MLA
    (a 512 latent); a kpool indexer of 128 dims a pool of 16 tokens."""
    g = from_hf_config(GLM5_NEXT)
    assert g.layer_counts() == {"mla": 11, "mamba": 34}
    assert g.layer_pattern[3::4] == "M" * 11 and g.head_dim == 512
    assert g.kpool_indexer == (128, 16) and g.index_head_dim is None
    assert g.mamba is not None and g.mamba.checkpoint_blocks == 1  # FlashKDA: bounded gate, 128, bf16


@pytest.mark.parametrize(
    "changes, checkpoint",
    [
        ({"linear_lower_bound": None}, 0),  # an unbounded gate prefills with Triton
        ({"linear_attn_config": {"gate_lower_bound": None}}, 1),  # safe_gate bounds it at −5
        ({"linear_attn_config": {"gate_lower_bound": None, "safe_gate": False}}, 0),
        ({"linear_head_dim": 64}, 0),
    ],
)
def test_glm5_next_kda_keeps_flashkdas_checkpoint_only_where_flashkda_prefills(changes, checkpoint):
    g = from_hf_config({**GLM5_NEXT, **changes})
    assert g.mamba is not None and g.mamba.checkpoint_blocks == checkpoint


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"index_topk": None}, "index_topk"),  # the config class types it int: always sparse
        ({"index_topk": 2040}, "index_topk"),  # not a multiple of index_kpool
        ({"index_kpool": 1}, "index_kpool"),
        ({"index_kpool_always_select_tail": False}, "index_kpool_always_select_tail"),
        ({"qk_rope_head_dim": 64}, "qk_rope_head_dim"),
        ({"num_key_value_heads": 8}, "num_key_value_heads"),
        ({"layer_types": ["indexed_attention"] * 45}, "layer_types"),
        ({"layer_types": ["linear_attention"] * 44}, "layer_types"),
    ],
)
def test_a_glm5_next_config_vllm_would_not_serve_or_kvplan_does_not_model_names_the_field(changes, field):
    assert config_refusal({**GLM5_NEXT, **changes}) == field


@pytest.mark.parametrize(
    "setting, field",
    [
        ({"pipeline_parallel_size": 2}, "pipeline_parallel_size"),
        ({"decode_context_parallel_size": 2, "tensor_parallel_size": 2}, "decode_context_parallel_size"),
        ({"hybrid_kv_cache_manager": False}, "hybrid_kv_cache_manager"),
    ],
)
def test_glm5_next_packed_layout_is_refused_where_kvplan_does_not_model_it(setting, field):
    from kvplan.core.errors import InvalidInput

    geometry = from_hf_config(GLM5_NEXT)
    with pytest.raises(InvalidInput) as e:
        budget_033(geometry, kv_cache_memory_bytes=40 << 30, max_model_len=8192, **setting)
    assert e.value.field == field and "GLM-5-next" in e.value.reason
