"""Step5 and Qwen4-exp through the API: a config.json and its resolved inline geometry plan as
vLLM 0.33.0 does (the oracle's figures), and a layout vLLM refuses is a 4xx naming the field."""

from __future__ import annotations

import pytest

from tests.api.test_hybrid_architectures_api import budget_request, oracle_case
from tests.oracle.generate import load_config

CASES = ["step5-shaped-64k", "step5-shaped-256k-tp8-fp8-block32", "step5-dense-sliding-64k",
         "qwen4-exp-defaults-8k-tp16", "qwen4-exp-qsa-shaped-128k-tp4-fp8",
         "qwen4-exp-qsa-vl-shaped-32k-tp2-fp8", "qwen4-exp-qsa-ple-shaped-64k-tp8-fp8"]  # fmt: skip


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


def test_the_text_answer_names_the_packed_groups(client):
    case = oracle_case("qwen4-exp-qsa-ple-shaped-32k")
    body = budget_request({"hf_config": load_config(case["config"])}, case)
    text = client.post("/v1/budget", json=body, headers={"Accept": "text/plain"})
    assert text.status_code == 200, text.text
    assert all(k in text.text for k in ("circular_buffer", "compressed_mla", "mamba_replicated"))


def test_a_block_whose_page_cannot_hold_the_step5_ring_is_a_400_naming_block_size(client):
    case = oracle_case("step5-shaped-256k-tp8-fp8-block32")
    body = budget_request({"hf_config": load_config(case["config"])}, case) | {"block_size": 16}
    r = client.post("/v1/budget", json=body)
    assert r.status_code == 400 and "block_size" in r.text
