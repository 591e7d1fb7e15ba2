"""MiniMax-M3 and Inkling through the API: the text answer names every group (that a config and
its resolved geometry plan as vLLM does is test_hybrid_architectures_api's)."""

from __future__ import annotations

import pytest

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config


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
