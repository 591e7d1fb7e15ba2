"""MiniMax-M3 and Inkling through the API: a config.json and its resolved inline geometry plan
as vLLM 0.33.0 does (the oracle's figures), and the text answer names every group."""

from __future__ import annotations

import pytest

from tests.api.test_hybrid_architectures_api import budget_request, oracle_case
from tests.oracle.generate import load_config

CASES = ["minimax-m3-defaults-512k-tp4-fp8-block128", "minimax-m3-shaped-64k-block256",
         "inkling-shaped-128k-tp4-fp8", "inkling-defaults-2k-block64"]  # fmt: skip


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


@pytest.mark.parametrize(
    ("name", "kinds"),
    [("minimax-m3-shaped-64k-block256", ["full_attention"]),
     ("inkling-shaped-128k-tp4-fp8", ["sconv", "sliding_attention"])],
)  # fmt: skip
def test_the_text_answer_names_each_group_kind(client, name, kinds):
    case = oracle_case(name)
    body = budget_request({"hf_config": load_config(case["config"])}, case)
    text = client.post("/v1/budget", json=body, headers={"Accept": "text/plain"})
    assert text.status_code == 200, text.text
    assert all(k in text.text for k in kinds)


def test_a_block_size_the_sparse_kernels_refuse_is_a_400_naming_block_size(client):
    case = oracle_case("minimax-m3-shaped-64k-block256")
    body = budget_request({"hf_config": load_config(case["config"])}, case) | {"block_size": 64}
    r = client.post("/v1/budget", json=body)
    assert r.status_code == 400 and "block_size" in r.text
