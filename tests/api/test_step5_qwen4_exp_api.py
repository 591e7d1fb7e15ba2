"""Step5 and Qwen4-exp through the API: the text answer names the packed groups, and a layout
vLLM refuses is a 4xx naming the field (that a config and its resolved geometry plan as vLLM does
is test_hybrid_architectures_api's)."""

from __future__ import annotations

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config


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
