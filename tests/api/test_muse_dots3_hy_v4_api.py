"""Muse Spark, Dots3 and HY-V4's per-layer layouts through the API: the text answer names Dots3's
sliding-window MLA groups, and what vLLM refuses is a 400 naming the field (that a config and its
resolved geometry plan as vLLM does is test_hybrid_architectures_api's)."""

from __future__ import annotations

import pytest

from tests.oracle.cases import budget_request, oracle_case
from tests.oracle.generate import load_config


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
