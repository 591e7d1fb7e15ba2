"""Parameter counts estimated from config.json, checked against the presets' recorded counts."""

from __future__ import annotations

import json

import pytest

from kvplan.core.geometry import from_hf_config
from kvplan.core.params import estimate_params
from kvplan.presets.registry import BUILTIN_DIR

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
