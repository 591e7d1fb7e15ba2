"""Parameter counts estimated from config.json, checked against the presets' recorded counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.hf.params import estimate_params
from kvplan.core.hf.reader import from_hf_config
from kvplan.presets.registry import BUILTIN_DIR
from tests.core.budgets import config_refusal

EXACT = [
    "llama-2-7b",
    "llama-3-8b",
    "llama-3.1-405b",
    "llama-3.1-70b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "qwen3-8b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "mistral-7b-v0.3",
    "mixtral-8x7b",
    "deepseek-v2-lite",
    "deepseek-v3",
    "deepseek-r1",
    "kimi-k2",
    "gpt-oss-20b",
    "gpt-oss-120b",
]
CLOSE = ["deepseek-v3.2", "glm-4.5", "glm-5", "gemma-3-27b"]  # published counts, rounded


def preset(mid: str) -> dict:
    return json.loads((BUILTIN_DIR / "models" / f"{mid}.json").read_text())


@pytest.mark.parametrize("mid", EXACT)
def test_estimate_equals_the_computed_preset_count(mid):
    doc = preset(mid)
    est = estimate_params(doc["config"])
    assert est is not None
    assert est.total == doc["params"]["total"]
    assert est.expert == (doc["params"]["expert"] or 0)


@pytest.mark.parametrize("mid", CLOSE)
def test_estimate_is_within_two_percent_of_published_counts(mid):
    doc = preset(mid)
    est = estimate_params(doc["config"])
    assert est is not None
    assert abs(est.total - doc["params"]["total"]) / doc["params"]["total"] < 0.02


def test_deepseek_v3_active_parameters_are_about_37b():
    est = estimate_params(preset("deepseek-v3")["config"])
    assert est is not None and 36e9 < est.active < 39e9


def test_a_sent_config_gets_estimated_parameters_and_says_so():
    geo = from_hf_config(preset("llama-3-70b")["config"])
    assert geo.params_total == 70_553_706_496
    assert geo.params_estimated


def test_presets_carry_recorded_parameters(registry):
    assert not registry.model("llama-3-70b").geometry.params_estimated


def test_too_sparse_config_has_no_estimate():
    assert estimate_params({"num_hidden_layers": 2, "num_attention_heads": 4}) is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"mlp_only_layers": list(range(60))}, "mlp_only_layers[48]"),  # 48 layers: gave negative weights
        ({"mlp_only_layers": [3, 7, 3]}, "mlp_only_layers[2]"),
        ({"mlp_only_layers": [-1]}, "mlp_only_layers[0]"),
        ({"first_k_dense_replace": 49}, "first_k_dense_replace"),
        ({"decoder_sparse_step": 0}, "decoder_sparse_step"),
        ({"moe_layer_freq": 0}, "moe_layer_freq"),
        ({"num_experts": -8}, "num_experts"),
        ({"num_experts_per_tok": 129}, "num_experts_per_tok"),
        ({"moe_intermediate_size": 768.5}, "moe_intermediate_size"),
    ],
)
def test_a_qwen3_moe_config_with_impossible_layer_counts_is_refused_naming_the_field(change, field):
    cfg = {**preset("qwen3-30b-a3b")["config"], **change}
    assert config_refusal(cfg) == field


def test_moe_layer_freq_two_puts_experts_on_every_other_layer():
    cfg = preset("deepseek-v3")["config"]  # 61 layers, the first 3 dense
    every = estimate_params(cfg)
    other = estimate_params({**cfg, "moe_layer_freq": 2})  # layers 4, 6, …, 60
    assert every is not None and other is not None
    assert other.expert * 58 == every.expert * 29


def test_a_config_giving_sizes_per_layer_has_no_estimate():
    cfg = {**preset("llama-3-8b")["config"], "intermediate_size": [14336] * 32}
    assert estimate_params(cfg) is None
    assert from_hf_config(cfg).params_total is None


def calibration_config(name: str) -> dict:
    return json.loads((Path(__file__).parents[1] / "calibration" / "data" / "hf-configs" / name).read_text())


def test_phi_2_counts_its_two_matrix_mlp_and_biases_exactly():
    """microsoft/phi-2 has 2,779,683,840 parameters (fc1/fc2 with biases, biased attention,
    LM head bias)."""
    assert estimate_params(calibration_config("microsoft--phi-2.json")).total == 2_779_683_840


def test_a_gemma_3_text_config_without_a_vocabulary_reads_transformers_default():
    count = estimate_params(calibration_config("google--gemma-3-4b-it.json"))
    assert count is not None and count.total > 4_000_000_000


@pytest.mark.parametrize(
    ("name", "loaded_gib"),
    [
        # "Model loading took" in vLLM 0.19 (bf16): the vision tower and projector included
        ("mistralai--Mistral-Small-3.1-24B-Instruct-2503.json", 44.76),
        ("moonshotai--Kimi-VL-A3B-Instruct.json", 30.74),
    ],
)
def test_a_vision_tower_is_counted_within_one_percent_of_what_vllm_loads(name, loaded_gib):
    total = estimate_params(calibration_config(name)).total
    assert abs(total * 2 / 1024**3 - loaded_gib) / loaded_gib < 0.01


def test_a_llama_config_that_does_not_say_ties_nothing():
    cfg = json.loads((BUILTIN_DIR / "models" / "llama-3.1-8b.json").read_text())["config"]
    cfg.pop("tie_word_embeddings", None)
    assert estimate_params(cfg).total == 8_030_261_248


def test_a_geometry_read_from_a_config_keeps_the_name_it_was_given():
    cfg = json.loads((BUILTIN_DIR / "models" / "llama-3.1-8b.json").read_text())["config"]
    assert from_hf_config(cfg, name="my-llama").name == "my-llama"


@pytest.mark.parametrize(
    ("mid", "within"), [("jamba-1.5-mini", 0.02), ("granite-4.0-h-small", 0.02), ("qwen3-next-80b-a3b", 0.02)]
)
def test_a_hybrids_recurrent_layers_count_their_mixers_weights_not_attention(mid, within):
    """Read through the geometry, which knows which layers keep a state: Jamba-1.5-Mini was 92B
    when every layer counted attention and an MoE block; it is 52B."""
    doc = preset(mid)
    total = from_hf_config(doc["config"]).params_total
    assert abs(total - doc["params"]["total"]) / doc["params"]["total"] < within


@pytest.mark.parametrize(
    ("name", "published"),
    [("synthetic--nemotron-h-8b-shaped.json", 8e9), ("synthetic--zamba2-2.7b-shaped.json", 2.7e9)],
)
def test_only_the_layers_with_a_feed_forward_block_count_one(name, published):
    """Nemotron-H's Mamba and attention layers have no MLP; Zamba2's shared blocks are two."""
    total = from_hf_config(
        json.loads((Path(__file__).parent / "data" / "hf-configs" / name).read_text())
    ).params_total
    assert abs(total - published) / published < 0.1
