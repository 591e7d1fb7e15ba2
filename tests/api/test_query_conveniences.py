"""What people type: a misspelt field is answered with the closest field of the object it is in,
and a GET query string's integer fields read sizes as `vllm serve` reads --max-model-len
(vllm/utils/argparse_utils.py human_readable_int: 32k = 32,000, 32K = 32,768)."""

from __future__ import annotations

import pytest

Q = "/v1/budget?model=llama-3-70b&gpu=h100-sxm-80gb&tensor_parallel_size=4"


@pytest.mark.parametrize(
    ("body", "field", "meant"),
    [
        ({"tensor_paralel_size": 2}, "tensor_paralel_size", "tensor_parallel_size"),
        ({"gpu_memory_utilisation": 0.9}, "gpu_memory_utilisation", "gpu_memory_utilization"),
        ({"model": {"geometry": {"num_layer": 3}}}, "model.geometry.num_layer", "num_layers"),
    ],
)
def test_a_misspelt_field_is_a_400_that_names_the_field_it_meant(client, body, field, meant):
    r = client.post("/v1/budget", json={"model": "llama-3-70b", "gpu": "h100-sxm-80gb", **body})
    assert r.status_code == 400
    problem = r.json()
    assert problem["field"] == field and problem["suggestions"] == [meant]
    assert f"did you mean {meant}?" in problem["detail"]


def test_a_misspelt_query_parameter_gets_the_same_suggestion(client):
    problem = client.get(Q + "&context_token=8192").json()
    assert problem["field"] == "context_token" and problem["suggestions"] == ["context_tokens"]


def test_a_batch_scenarios_misspelt_field_is_named_with_its_index(client):
    scenario = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "tensor_paralel_size": 2}
    error = client.post("/v1/budget/batch", json={"scenarios": [scenario]}).json()["results"][0]["error"]
    assert error["field"] == "scenarios[0].tensor_paralel_size" and error["suggestions"] == [
        "tensor_parallel_size"
    ]


def test_a_field_of_another_endpoint_is_not_suggested_back_and_the_valid_ones_are_listed(client):
    problem = client.get("/v1/per-token?model=llama-3-70b&gpu=h100-sxm-80gb").json()
    assert problem["field"] == "gpu" and "suggestions" not in problem
    assert "context_tokens" in problem["valid"] and "gpu" not in problem["valid"]


def test_a_field_nothing_resembles_gets_no_suggestion(client):
    problem = client.post("/v1/budget", json={"model": "llama-3-70b", "zzzz": 1}).json()
    assert problem["field"] == "zzzz" and "suggestions" not in problem


def test_a_key_with_backticks_is_named_whole(client):
    problem = client.post("/v1/budget", json={"model": "llama-3-70b", "context`_tokens": 1}).json()
    assert problem["field"] == "context`_tokens"


@pytest.mark.parametrize(
    ("typed", "tokens"),
    [("8k", 8000), ("8K", 8192), ("128K", 131072), ("25.6k", 25600), ("1M", 1 << 20), ("1m", 10**6)],
)
def test_a_query_strings_context_reads_sizes_as_vllm_serve_does(client, typed, tokens):
    suffixed = client.get(f"{Q}&context_tokens={typed}&max_model_len=1M").json()
    digits = client.get(f"{Q}&context_tokens={tokens}&max_model_len={1 << 20}").json()
    assert suffixed["context_tokens"] == tokens
    assert suffixed == digits


def test_a_size_in_a_query_string_takes_g(client):
    b = client.get("/v1/budget?model=llama-3-70b&gpu_memory_bytes=80G&tensor_parallel_size=4").json()
    assert b["gpu_memory_bytes"] == 80 << 30


def test_a_sweeps_values_read_sizes_the_same_way(client):
    s = client.get("/v1/sweep?model=llama-3-70b&gpu=h100-sxm-80gb&tensor_parallel_size=4"
                   "&vary=context_tokens&values=8k,32K").json()  # fmt: skip
    assert [p["value"] for p in s["points"]] == [8000, 32768]


@pytest.mark.parametrize("typed", ["8kb", "k", "8e3", "8.5K", "9" * 5000 + "k", "9" * 5000])
def test_anything_else_in_an_integer_field_is_a_400_naming_it(client, typed):
    r = client.get(f"{Q}&context_tokens={typed}")
    assert r.status_code == 400
    assert r.json()["field"] == "context_tokens"


def test_null_still_means_the_default(client):
    assert client.get(f"{Q}&block_size=null").json() == client.get(Q).json()


def test_a_suffix_is_only_read_in_integer_fields_and_only_in_query_strings(client):
    assert (
        client.get("/v1/budget?model=8k&gpu=h100-sxm-80gb").json()["field"] == "model"
    )  # a name stays a name
    body = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": "8k"}
    assert client.post("/v1/budget", json=body).status_code == 400  # a JSON body says what it means
