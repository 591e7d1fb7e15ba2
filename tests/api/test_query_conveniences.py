"""What people type: a misspelt field is answered with the closest real one, and a GET query
string takes 8k for 8,192 (binary K, M, G) where the field is an integer."""

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
    assert f"did you mean `{meant}`?" in problem["detail"]


def test_a_misspelt_query_parameter_gets_the_same_suggestion(client):
    problem = client.get(Q + "&context_token=8192").json()
    assert problem["field"] == "context_token" and problem["suggestions"] == ["context_tokens"]


def test_a_field_nothing_resembles_gets_no_suggestion(client):
    problem = client.post("/v1/budget", json={"model": "llama-3-70b", "zzzz": 1}).json()
    assert problem["field"] == "zzzz" and "suggestions" not in problem


@pytest.mark.parametrize(("typed", "tokens"), [("8k", 8192), ("8K", 8192), ("128k", 131072), ("1M", 1 << 20)])
def test_a_query_strings_context_takes_binary_suffixes(client, typed, tokens):
    suffixed = client.get(f"{Q}&context_tokens={typed}&max_model_len=1M").json()
    digits = client.get(f"{Q}&context_tokens={tokens}&max_model_len={1 << 20}").json()
    assert suffixed["context_tokens"] == tokens
    assert suffixed == digits


def test_a_size_in_a_query_string_takes_g(client):
    b = client.get("/v1/budget?model=llama-3-70b&gpu_memory_bytes=80G&tensor_parallel_size=4").json()
    assert b["gpu_memory_bytes"] == 80 << 30


@pytest.mark.parametrize("typed", ["8.5k", "8kb", "k", "8e3", "8T"])
def test_anything_else_in_an_integer_field_is_a_400_that_says_how_to_write_it(client, typed):
    r = client.get(f"{Q}&context_tokens={typed}")
    assert r.status_code == 400
    assert r.json()["field"] == "context_tokens" and "8k = 8,192" in r.json()["detail"]


def test_a_suffix_is_only_read_in_integer_fields_and_only_in_query_strings(client):
    assert (
        client.get("/v1/budget?model=8k&gpu=h100-sxm-80gb").json()["field"] == "model"
    )  # a name stays a name
    body = {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": "8k"}
    assert client.post("/v1/budget", json=body).status_code == 400  # a JSON body says what it means
