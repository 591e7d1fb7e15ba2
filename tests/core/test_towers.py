"""A multimodal model's vision tower, left unbuilt as vLLM 0.33 leaves it: with
--language-model-only, or --limit-mm-per-prompt 0 for every modality the tower serves
(vllm/model_executor/models/interfaces.py _mark_tower_model; vllm/config/multimodal.py
get_limit_per_prompt gives an unlisted modality 999)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.budget import BudgetInput, compute_budget
from kvplan.core.engine.profiles import get_profile
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.model.towers import IMAGE_ONLY, tower_skipped, vision_modalities
from kvplan.core.model.weights import loaded_weights
from tests.engine.vision_towers import image_only_architectures

HERE = Path(__file__).parent / "data" / "hf-configs"
WHEEL = Path("/tmp/flags-vllm")
GiB = 1 << 30


def _config(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((HERE / name).read_text())  # type: ignore[no-any-return]


def _budget(cfg: dict, **settings: object) -> object:  # type: ignore[type-arg]
    g = from_hf_config(cfg, "m")
    return compute_budget(
        BudgetInput(gpu_memory_bytes=80 * GiB, geometry=g, profile=get_profile(None), **settings),  # type: ignore[arg-type]
        explain=True,
    )


def test_qwen_vl_towers_serve_video_too_and_gemma_3s_images_only():
    assert vision_modalities(
        {"vision_config": {}, "architectures": ["Qwen2_5_VLForConditionalGeneration"]}
    ) == (
        "image",
        "video",
    )
    assert vision_modalities({"vision_config": {}, "architectures": ["Gemma3ForConditionalGeneration"]}) == (
        "image",
    )
    assert vision_modalities({"architectures": ["LlamaForCausalLM"]}) == ()


@pytest.mark.parametrize(
    ("modalities", "only", "zero", "skipped"),
    [
        (("image", "video"), False, ("image",), False),  # video keeps its default of 999
        (("image", "video"), False, ("image", "video"), True),
        (("image",), False, ("image",), True),
        (("image",), True, (), True),
        ((), True, (), False),  # a text model has no tower to leave out
    ],
)
def test_a_tower_is_left_out_only_when_every_modality_it_serves_is_off(modalities, only, zero, skipped):
    assert tower_skipped(modalities, only, zero) is skipped


def test_a_checkpoints_tower_tensors_are_counted_apart():
    w = loaded_weights(
        [
            ("visual.blocks.0.attn.qkv.weight", "BF16", 1000),
            ("visual.blocks.0.norm1.weight", "BF16", 10),
            ("multi_modal_projector.linear_1.weight", "BF16", 100),
            ("model.layers.0.self_attn.q_proj.weight", "BF16", 5000),
        ],
        1,
        "test",
    )
    assert w.tower_bytes == 2 * 1110 and w.total_bytes == 2 * 6110


def test_leaving_qwen2_5_vls_tower_out_frees_exactly_its_weights_for_kv():
    cfg = _config("Qwen--Qwen2.5-VL-7B-Instruct.json")
    full = _budget(cfg)
    text = _budget(cfg, mm_limit_zero=("image", "video"))
    g = from_hf_config(cfg, "m")
    assert g.tower_params > 0
    assert full.weights_bytes - text.weights_bytes == 2 * g.tower_params  # bf16
    assert text.available_kv_bytes - full.available_kv_bytes == 2 * g.tower_params
    step = next(s for s in text.ledger if s.name == "tower_bytes_left_out")
    assert step.value == 2 * g.tower_params
    assert _budget(cfg, mm_limit_zero=("image",)).weights_bytes == full.weights_bytes


def test_the_image_only_table_is_vllm_0_33s():
    if not (WHEEL / "vllm" / "model_executor" / "models" / "registry.py").exists():
        pytest.skip("vLLM 0.33.0's wheel is not unzipped here (the table is committed)")
    assert set(image_only_architectures(WHEEL)) == IMAGE_ONLY


def test_a_text_only_flag_on_a_model_without_a_known_tower_says_nothing_was_taken_off():
    cfg = {k: v for k, v in _config("Qwen--Qwen2.5-VL-7B-Instruct.json").items() if k != "vision_config"}
    b = _budget(cfg, language_model_only=True)
    assert "no_tower_known" in {w.code for w in b.warnings}
    assert b.weights_bytes == _budget(cfg).weights_bytes
