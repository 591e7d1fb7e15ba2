"""DeepSeek-V4 (core/kv/dsv4.py, core/hf/families/deepseek_v4.py): the config reader, the caches and
what kvplan refuses. The figures themselves are asserted against vLLM 0.33.0 in
test_oracle_cases.py (the dsv4-* cases)."""

from __future__ import annotations

import json
import math
from functools import partial
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv import dsv4
from kvplan.core.kv.packing import pack
from tests.core.budgets import budget_033, config_refusal

DATA = Path(__file__).resolve().parent / "data" / "hf-configs"


def _config(name: str) -> dict:
    return json.loads((DATA / name).read_text())


FLASH = _config("synthetic--deepseek-v4-flash-shaped.json")
DEFAULTS = _config("synthetic--deepseek-v4-defaults.json")


_budget = partial(budget_033, kv_cache_memory_bytes=40 << 30, max_model_len=65536)


def test_legacy_compress_ratios_drop_the_mtp_entry_and_give_two_sliding_layers_first():
    g = from_hf_config(FLASH)
    assert g.dsv4 is not None and len(g.dsv4.ratios) == 43
    assert g.dsv4.ratios[:4] == (1, 1, 4, 128) and g.dsv4.ratios[-1] == 4
    assert g.layer_counts() == {"sliding_window_mla": 43, "compressed_mla": 41}
    assert g.decoder_layer_count == 43 and g.max_position_embeddings == 1048576


def test_a_config_with_no_layer_types_takes_the_config_class_pattern():
    bare = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4"}
    g = from_hf_config(bare)
    assert g.dsv4 is not None and g.dsv4 == from_hf_config(DEFAULTS).dsv4
    assert g.dsv4.ratios[:3] == (128, 128, 128) and g.dsv4.ratios[3] == 4


def test_the_rope_scaling_factor_does_not_scale_the_longest_context():
    assert FLASH["rope_scaling"]["factor"] == 16
    assert from_hf_config(FLASH).max_position_embeddings == FLASH["max_position_embeddings"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"compress_ratios": [0, 4, 8] + [4] * 41}, "compress_ratios[2]"),
        ({"compress_ratios": [0, 4]}, "compress_ratios"),
        ({"compress_rates": {"compressed_sparse_attention": 8}}, "compress_rates"),
        ({"head_dim": 256}, "head_dim"),
        ({"index_head_dim": 64}, "index_head_dim"),
        ({"compress_ratios": None, "layer_types": ["mla"] * 43}, "layer_types[0]"),
        ({"compress_ratios": [0, 128] * 22}, "layer_types"),
    ],
)
def test_a_layout_vllm_does_not_build_is_refused_naming_its_field(change, field):
    assert config_refusal({**FLASH, **change}) == field


def test_the_architecture_with_another_model_type_is_refused_not_read_as_attention():
    assert config_refusal({**FLASH, "model_type": "deepseek_v3"}) == "architectures"


def test_the_block_size_defaults_to_256_and_must_be_a_multiple_of_it():
    assert _budget(FLASH).block_size == dsv4.KERNEL_BLOCK
    with pytest.raises(InvalidInput) as e:
        _budget(FLASH, block_size=64)
    assert e.value.field == "block_size"


@pytest.mark.parametrize("kv_dtype", ["auto", "fp8", "fp8_e5m2", "fp8_per_token_head"])
def test_auto_and_every_fp8_run_as_fp8_ds_mla(kv_dtype):
    b = _budget(FLASH, kv_cache_dtype=kv_dtype)
    assert b.per_token.kv_cache_dtype == "fp8_ds_mla" and b.bytes_per_block == 1_002_240


@pytest.mark.parametrize("kv_dtype", ["bfloat16", "float16", "nvfp4"])
def test_a_cache_dtype_other_than_fp8_is_refused(kv_dtype):
    with pytest.raises(InvalidInput) as e:
        _budget(FLASH, kv_cache_dtype=kv_dtype)
    assert e.value.field == "kv_cache_dtype"


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"tensor_parallel_size": 2, "decode_context_parallel_size": 2}, "decode_context_parallel_size"),
        ({"hybrid_kv_cache_manager": False}, "hybrid_kv_cache_manager"),
        ({"kv_cache_dtype_skip_layers": [0]}, "kv_cache_dtype_skip_layers"),
    ],
)
def test_the_layouts_vllm_fails_on_or_not_modelled_yet_are_refused_naming_their_field(kw, field):
    with pytest.raises(InvalidInput) as e:
        _budget(FLASH, **kw)
    assert e.value.field == field


def test_each_layer_keeps_its_caches_in_registration_order():
    g = from_hf_config(FLASH)
    assert g.dsv4 is not None
    roles = [(s.layer, s.role) for s in dsv4.cache_specs(g.dsv4, 256) if s.layer in (1, 2, 3)]
    assert roles == [
        (1, "swa"),
        (2, "indexer"),
        (2, "indexer_compressor"),
        (2, "swa"),
        (2, "compressed"),
        (2, "compressor"),
        (3, "swa"),
        (3, "compressed"),
        (3, "compressor"),
    ]


def test_pages_are_rounded_up_to_576_bytes():
    g = from_hf_config(FLASH)
    assert g.dsv4 is not None
    pages = {s.role: s.page_bytes for s in dsv4.cache_specs(g.dsv4, 256) if s.layer in (2, 3)}
    # 64 × 584 = 37,376 → 37,440; 64 × 132 = 8,448 → 8,640; 4 × 2,048 = 8,192 → 8,640;
    # 8 × 4,096 = 32,768 → 32,832 (ratio 128) and 4 × 8,192 → 32,832 (ratio 4).
    assert pages["swa"] == 37_440 and pages["indexer"] == 8_640 and pages["indexer_compressor"] == 8_640
    assert pages["compressor"] == 32_832
    assert [s.page_bytes for s in dsv4.cache_specs(g.dsv4, 256) if s.role == "compressed"][:2] == [
        37_440,
        1_728,
    ]


def test_the_flash_groups_are_two_sliding_one_compressed_and_two_rings():
    """The dsv4-flash-shaped-64k-block256 case: F = 2 batches × 8,192 tokens in flight."""
    b = _budget(FLASH, max_num_batched_tokens=8192)
    assert [(g.kind, g.groups, g.layers, g.block_size, g.blocks_per_request) for g in b.groups] == [
        ("sliding_window_mla", 2, 43, 64, 259),
        ("mla", 1, 62, 256, 256),
        ("sliding_window_mla", 1, 42, 4, 4099),
        ("sliding_window_mla", 1, 20, 8, 2065),
    ]
    assert b.blocks_per_request == 6938 and b.bytes_per_block == 1_002_240


def test_every_layer_sliding_is_one_group_of_all_layers():
    cfg = {**DEFAULTS, "layer_types": ["sliding_attention"] * 43}
    b = _budget(cfg)
    assert [(g.kind, g.groups, g.layers, g.block_size) for g in b.groups] == [
        ("sliding_window_mla", 1, 43, 64)
    ]
    assert b.bytes_per_block == 43 * 37_440


def test_the_ledger_explains_each_deepseek_v4_group():
    b = _budget(FLASH, explain=True)
    names = [s.name for s in b.ledger]
    assert "kv_cache_groups[dsv4]" in names
    groups = [s for s in b.ledger if s.name.startswith("kv_cache_group[")]
    assert len(groups) == 5 and all("vllm/" in s.source for s in groups)


def test_the_vision_architecture_keeps_the_text_model_caches():
    """DeepseekV4ForConditionalGeneration (a config with vision_n_layers) wraps the same decoder:
    its vision tower's attention keeps no KV cache."""
    vl = {**FLASH, "architectures": ["DeepseekV4ForConditionalGeneration"], "vision_n_layers": 24}
    assert from_hf_config(vl).dsv4 == from_hf_config(FLASH).dsv4


V41 = _config("synthetic--deepseek-v4.1-shaped.json")
H100 = "NVIDIA H100 80GB HBM3"


def test_deepseek_v41_kv_sources_own_the_compressed_caches_the_next_layers_read():
    g = from_hf_config(V41)
    assert g.dsv4 is not None and g.dsv4.v41
    assert g.layer_counts() == {"sliding_window_mla": 40, "compressed_mla": 6}
    roles = [(s.layer, s.role) for s in dsv4.cache_specs(g.dsv4, 64) if 2 <= s.layer <= 3]
    assert roles == [(2, "compressed"), (2, "indexer"), (2, "swa"), (2, "ring"), (3, "swa")]


@pytest.mark.parametrize("gpu", ["NVIDIA B200", "NVIDIA GeForce RTX 5090", "AMD Instinct MI300X"])
def test_deepseek_v41_is_planned_on_sm90_and_refused_naming_the_gpu_elsewhere(gpu):
    with pytest.raises(InvalidInput) as e:
        _budget(V41, gpu_name=gpu)
    assert e.value.field == "gpu"
    assert _budget(V41, gpu_name=H100).block_size == 64


@pytest.mark.parametrize("gpu", ["", "a GPU kvplan cannot place"])
def test_deepseek_v41_without_a_gpu_kvplan_knows_is_planned_as_on_sm90(gpu):
    """As GLM-5-next and DeepSeek-V4 are: the figures are the H100's."""
    assert _budget(V41, gpu_name=gpu).num_blocks == _budget(V41, gpu_name=H100).num_blocks


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"compress_ratios": [0, 0, 4] + [1] * 37}, "compress_ratios[2]"),
        ({"kv_source_layer_ids": [8, 14, 20, 26, 32]}, "kv_source_layer_ids"),
        ({"kv_source_layer_ids": [0, 2, 8, 14, 20, 26, 32]}, "kv_source_layer_ids"),
    ],
)
def test_a_deepseek_v41_topology_vllm_refuses_is_refused_naming_its_field(change, field):
    assert config_refusal({**V41, "text_config": {**V41["text_config"], **change}}) == field


def test_each_pipeline_stage_holds_its_own_layers_share_of_every_group():
    """dsv4-flash-shaped-64k-pp2-block256: layers 0–21 and 22–42; the second stage's block is the
    wider (11 ratio-4 layers with their indexers, against 10)."""
    b = _budget(FLASH, pipeline_parallel_size=2, max_num_batched_tokens=8192, kv_cache_memory_bytes=20 << 30)
    assert b.bytes_per_block_by_stage == (478_080, 524_160) and b.bytes_per_block == 524_160
    assert b.blocks_per_request == 10_266  # 3 batches in flight at PP 2


def test_a_pipeline_split_inside_a_deepseek_v41_kv_sharing_group_is_refused():
    """40 layers on 3 stages start stage 2 at layer 13, whose kv source (8) is on stage 1
    (attention.py raises NotImplementedError there)."""
    from kvplan.core.errors import InvalidLayout

    with pytest.raises(InvalidLayout) as e:
        _budget(V41, gpu_name=H100, pipeline_parallel_size=3)
    assert e.value.field == "pipeline_parallel_size" and "layer 13" in e.value.reason
    assert _budget(V41, gpu_name=H100, pipeline_parallel_size=2).num_blocks > 0


@pytest.mark.parametrize(
    ("gpu", "planned"),
    [("", True), ("NVIDIA H100 80GB HBM3", True), ("NVIDIA B200", True), ("80 GiB pool (seed)", True),
     ("NVIDIA A100-SXM4-80GB", False), ("NVIDIA L40S", False), ("AMD Instinct MI300X", False)],
)  # fmt: skip
def test_deepseek_v4_is_planned_for_flashmla_gpus_and_refused_on_another_named_gpu(gpu, planned):
    if planned:
        assert _budget(FLASH, gpu_name=gpu).bytes_per_block == 1_002_240
        return
    with pytest.raises(InvalidInput) as e:
        _budget(FLASH, gpu_name=gpu)
    assert e.value.field == "gpu"


@pytest.mark.parametrize(("kv_dtype", "planned"), [("fp8", True), ("fp8_ds_mla", True), ("fp8_e4m3", False),
                                                   ("nvfp4", False)])  # fmt: skip
def test_deepseek_v41_takes_auto_fp8_and_fp8_ds_mla_only(kv_dtype, planned):
    """V4.1's resolver keeps a *_ds_mla name and raises for any other but auto / fp8."""
    if planned:
        assert _budget(V41, gpu_name=H100, kv_cache_dtype=kv_dtype).bytes_per_block == 209_088
        return
    with pytest.raises(InvalidInput) as e:
        _budget(V41, gpu_name=H100, kv_cache_dtype=kv_dtype)
    assert e.value.field == "kv_cache_dtype"


@pytest.mark.parametrize("key", ["compress_rate_csa", "compress_rate_hca"])
def test_a_bad_legacy_compress_rate_is_refused_naming_the_key_it_came_from(key):
    assert config_refusal({**DEFAULTS, key: 7}) == key


@given(st.lists(st.integers(1, 8), min_size=1, max_size=12), st.sampled_from([256, 512]))
def test_every_pipeline_stages_block_bytes_come_from_one_pass_as_from_one_stage_at_a_time(cuts, bs):
    """Stage by stage, 1,024 stages of a 4,096-layer model scanned every cache a stage: seconds."""
    g = from_hf_config(FLASH)
    assert g.dsv4 is not None
    packing = pack(dsv4.cache_specs(g.dsv4, bs))
    layers = len(g.dsv4.ratios)
    bounds = sorted({min(sum(cuts[:i]), layers) for i in range(len(cuts) + 1)} | {layers})
    stages = list(pairwise(bounds))
    assert packing.stages_bytes_per_block(stages) == tuple(one_stage(packing, a, b) for a, b in stages)


def one_stage(packing, first: int, end: int) -> int:
    """A stage's block bytes as kvplan computed them before the one pass: its caches scanned alone."""
    mine = [[s for s in g.specs if first <= s.layer < end] for g in packing.groups]
    widest = max(sum(s.page_bytes for s in specs) for specs in mine)
    align = math.lcm(*(s.stride_alignment for specs in mine for s in specs))
    return -(-widest // align) * align
