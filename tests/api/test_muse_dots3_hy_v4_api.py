"""Muse Spark, Dots3 and HY-V4's per-layer layouts through the API: a config.json and its
resolved inline geometry plan as vLLM 0.33.0 does (the oracle's figures), the text answer names
Dots3's sliding-window MLA groups, and what vLLM refuses is a 400 naming the field."""

from __future__ import annotations

import pytest

from tests.api.test_hybrid_architectures_api import budget_request, oracle_case
from tests.oracle.generate import load_config

CASES = ["muse-spark-shaped-256k-tp8-fp8", "dots3-note-uneven-shaped-256k-tp2-block192",
         "hy-v4-sparse-shared-shaped-128k-tp4-fp8-block128", "hy-v4-mixed-shaped-64k-block64"]  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_a_config_and_its_resolved_geometry_plan_as_vllm_does(client, name):
    case = oracle_case(name)
    cfg = load_config(case["config"])
    from_config = client.post("/v1/budget", json=budget_request({"hf_config": cfg}, case))
    assert from_config.status_code == 200, from_config.text
    geometry = client.post("/v1/models/resolve", json=cfg).json()["geometry"]
    from_geometry = client.post("/v1/budget", json=budget_request({"geometry": geometry}, case))
    assert from_geometry.status_code == 200, from_geometry.text
    for body in (from_config.json(), from_geometry.json()):
        assert body["num_blocks"] == case["vllm"]["num_blocks"]
        assert body["blocks_per_request"] == case["vllm"]["blocks_per_request"]
        assert body["bytes_per_block"] == case["vllm"]["bytes_per_block"]


def test_the_text_answer_names_dots3s_sliding_window_mla_groups(client):
    case = oracle_case("dots3-note-shaped-32k-block64")
    body = budget_request({"hf_config": load_config(case["config"])}, case)
    text = client.post("/v1/budget", json=body, headers={"Accept": "text/plain"})
    assert text.status_code == 200, text.text
    assert "3 × sliding_window_mla" in text.text and "321 blocks each per request" in text.text


@pytest.mark.parametrize(
    ("name", "change", "field"),
    [("dots3-note-shaped-32k-block64", {"kv_cache_dtype": "fp8"}, "kv_cache_dtype"),
     ("dots3-note-shaped-32k-block64", {"block_size": 16}, "block_size"),
     ("hy-v4-mixed-shaped-64k-block64", {"kv_cache_dtype": "fp8"}, "kv_cache_dtype")],
)  # fmt: skip
def test_what_vllm_refuses_is_a_400_naming_the_field(client, name, change, field):
    case = oracle_case(name)
    body = budget_request({"hf_config": load_config(case["config"])}, case) | change
    r = client.post("/v1/budget", json=body)
    assert r.status_code == 400 and field in r.text, r.text
