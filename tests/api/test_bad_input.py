"""Bad input gets the right 4xx with a problem+json body naming the field; never a 5xx."""

from __future__ import annotations

import json

import pytest

from tests.seed import A


def problem(r, status: int, field: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["title"] and body["detail"]
    assert "Traceback" not in r.text
    if field is not None:
        assert body["field"] == field, body
        assert field in body["detail"]
    return body


def post(client, body: bytes | str, path: str = "/v1/budget"):
    return client.post(path, content=body, headers={"content-type": "application/json"})


def test_malformed_json_is_400(client):
    problem(post(client, b'{"model": "llama-3-70b",'), 400)


def test_empty_body_is_400(client):
    problem(post(client, b""), 400)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("context_tokens", "8192"),
        ("context_tokens", 8192.5),
        ("context_tokens", True),
        ("gpu_memory_utilization", "0.9"),
        ("tensor_parallel_size", [8]),
        ("model", 70),
        ("kv_cache_dtype", 8),
        ("block_size", {"x": 1}),
    ],
)
def test_wrong_types_name_the_field(client, field, value):
    problem(client.post("/v1/budget", json={**A, field: value}), 400, field)


def test_unknown_field_is_named(client):
    problem(client.post("/v1/budget", json={**A, "contxt_tokens": 8192}), 400, "contxt_tokens")


@pytest.mark.parametrize(
    ("field", "value", "hint"),
    [
        ("moe_backend", " marlin", "did you mean marlin?"),
        ("kv_cache_dtype", "FP8", "did you mean fp8?"),
        ("quantization", "int3", "valid: awq,"),
    ],
)
def test_a_value_outside_a_closed_set_names_the_values_it_takes(client, field, value, hint):
    body = problem(client.post("/v1/budget", json={**A, field: value}), 400, field)
    assert hint in body["detail"] and body["valid"]
    query = problem(client.get("/v1/budget", params={"model": "llama-3-70b", field: value}), 400, field)
    assert hint in query["detail"]


@pytest.mark.parametrize("value", ["maybe", "yes please", ""])
def test_a_query_strings_switch_says_how_it_is_spelled(client, value):
    params = {"model": "gpt-oss-120b", "flashinfer_moe_mxfp4_mxfp8": value}
    body = problem(client.get("/v1/budget", params=params), 400, "flashinfer_moe_mxfp4_mxfp8")
    assert "true or false" in body["detail"]


def test_integer_of_400_digits_is_400(client):
    problem(
        post(client, json.dumps(A)[:-1] + ', "gpu_memory_bytes": 1' + "0" * 400 + "}"),
        400,
        "gpu_memory_bytes",
    )


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_and_infinity_are_400(client, literal):
    r = post(client, json.dumps(A)[:-1] + f', "gpu_memory_utilization": {literal}}}')
    problem(r, 400)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpu_memory_utilization", 1.5),
        ("gpu_memory_utilization", 0),
        ("context_tokens", 0),
        ("context_tokens", -8192),
        ("weights_bytes", -1),
        ("tensor_parallel_size", 0),
        ("block_size", 0),
        ("gpu_memory_bytes", -1),
    ],
)
def test_out_of_range_numbers_name_the_field(client, field, value):
    problem(client.post("/v1/budget", json={**A, field: value}), 400, field)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e400", "abc"])
def test_bad_query_numbers_are_400(client, value):
    problem(
        client.get("/v1/budget", params={**A, "gpu_memory_utilization": value}), 400, "gpu_memory_utilization"
    )


def test_body_over_one_mib_is_413(client):
    big = json.dumps({**A, "model": {"hf_config": {"pad": "x" * (2 * 1024 * 1024)}}})
    problem(post(client, big), 413)


def test_deeply_nested_json_is_400(client):
    nested = '{"model": {"hf_config": {"a": ' + "[" * 50_000 + "]" * 50_000 + "}}}"
    problem(post(client, nested), 400)


def test_unknown_preset_is_404_with_close_matches(client):
    body = problem(client.post("/v1/budget", json={**A, "model": "llama-3-7b"}), 404, "model")
    assert "llama-3-70b" in body["suggestions"]
    body = problem(client.get("/v1/gpus/h100"), 404, "gpu_id")
    assert "h100-sxm-80gb" in body["suggestions"]


def test_unknown_gpu_in_budget_is_404(client):
    problem(client.post("/v1/budget", json={**A, "gpu": "h101"}), 404, "gpu")


def test_tp_not_dividing_heads_is_400(client):
    body = problem(
        client.post("/v1/budget", json={**A, "tensor_parallel_size": 3}), 400, "tensor_parallel_size"
    )
    assert "1, 2, 4, 8" in body["detail"]


def test_unknown_engine_lists_the_valid_ones(client):
    problem(client.post("/v1/budget", json={**A, "engine": "vllm@9"}), 400, "engine")


def test_model_with_both_or_neither_inline_form_is_400(client):
    problem(client.post("/v1/budget", json={**A, "model": {}}), 400, "model")


def test_uninterpretable_config_names_the_config_field(client):
    body = problem(
        client.post("/v1/budget", json={**A, "model": {"hf_config": {"num_attention_heads": 8}}}), 400
    )
    assert body["field"] == "model.hf_config.num_hidden_layers"
    problem(client.post("/v1/models/resolve", json={"num_hidden_layers": 0}), 400, "num_hidden_layers")


def test_unknown_route_is_404_and_wrong_method_is_405(client):
    problem(client.get("/v1/nope"), 404)
    problem(client.delete("/v1/budget"), 405)


def test_bad_format_and_explain_are_400(client):
    problem(client.get("/v1/budget", params={**A, "format": "xml"}), 400, "format")
    problem(client.get("/v1/budget", params={**A, "explain": "maybe"}), 400, "explain")


def test_missing_model_is_named(client):
    problem(client.post("/v1/budget", json={"gpu": "pool-80gib"}), 400, "model")


def test_unknown_field_inside_inline_geometry_names_its_full_path(client):
    geometry = {"num_layers": 2, "num_attention_heads": 8, "head_dim": 64, "bogus": 1}
    problem(
        client.post("/v1/budget", json={**A, "model": {"geometry": geometry}}), 400, "model.geometry.bogus"
    )
