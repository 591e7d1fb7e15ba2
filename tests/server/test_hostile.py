"""Every class of hostile input the attacker review found (issue 11), several variants each,
against a real server: each is answered with a 4xx naming the problem or a correct figure, never
a 500, and /healthz still answers promptly afterwards. A hang shows as the client's timeout."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.live import Server, start_server

U32 = 4294967295
DEEP = {"model_type": "llama", "num_hidden_layers": 4096, "num_attention_heads": 8, "num_key_value_heads": 8,
        "hidden_size": 1024, "max_position_embeddings": 4096}  # fmt: skip
QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def live() -> Iterator[Server]:
    s = start_server(workers=1, env={"KVPLAN_HEAVY_DEADLINE_SECONDS": "5"})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def http(live: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url, timeout=15) as c:
        yield c


def _healthz_is_prompt(http: httpx.Client) -> None:
    t0 = time.monotonic()
    r = http.get("/healthz", timeout=2)
    assert r.status_code == 200 and time.monotonic() - t0 < 2


def _answered(r: httpx.Response, field: str | None = None) -> dict[str, Any]:
    assert r.status_code < 500, r.text[:500]
    body = r.json() if r.headers.get("content-type", "").startswith("application/") else {}
    if r.status_code >= 400 and field is not None:
        assert field in (body.get("field") or "") or field in body.get("detail", ""), body
    return body


UNBOUNDED_LOOPS = [
    {"model": "llama-3-8b", "gpu": "h100-sxm-80gb", "context_tokens": 1 << 40, "target_concurrency": U32},
    {"model": "llama-3-8b", "gpu_memory_bytes": 1 << 20, "weights_bytes": 0, "target_concurrency": U32},
    {"model": "deepseek-v3", "gpu_memory_bytes": 3, "kv_cache_dtype": "fp8", "target_concurrency": U32},
    {"model": "gemma-3-27b", "gpu_memory_bytes": 1 << 60, "target_concurrency": U32, "context_tokens": 1},
    {"model": "gpt-oss-120b", "gpu": "pool-160gib", "target_concurrency": 12345, "context_tokens": 1 << 40},
]


@pytest.mark.parametrize("params", UNBOUNDED_LOOPS)
def test_targets_and_contexts_at_their_limits_are_answered_not_looped(http, params):
    r = http.get("/v1/budget", params={k: str(v) for k, v in params.items()})
    body = _answered(r)
    if r.status_code == 200:
        u = body["min_gpu_memory_utilization"]
        assert u is None or 0 < u <= 1
    _healthz_is_prompt(http)


HEAVY = [
    ("GET", "/v1/fleet", {"model": "llama-3-8b", "gpu": "h100-sxm-80gb", "count": "8",
                          "context_tokens": "8192", "target_concurrency": str(U32)}),
    ("POST", "/v1/fleet", {"model": "llama-3-70b", "workload": {"context_tokens": 131072},
                           "layouts": [{"tensor_parallel_size": 1}], "target_concurrency": 1_000_000,
                           "fleet": [{"gpu": "h100-sxm-80gb", "count": 1_000_000, "cost_per_hour": 2.5},
                                     {"gpu": "h200-141gb", "count": 1_000_000, "cost_per_hour": 3.5}]}),
    ("POST", "/v1/fleet", {"model": "llama-3-70b", "workload": {"mix": [{"context_tokens": 2**k, "share": 1}
                                                                        for k in range(10, 27)]},
                           "target_concurrency": U32,
                           "fleet": [{"gpu": g, "count": 1_000_000, "cost_per_hour": 1 + i}
                                     for i, g in enumerate(["h100-sxm-80gb", "h200-141gb", "a100-80gb",
                                                            "l40s-48gb", "b200-180gb", "mi300x-192gb"])]}),
    ("POST", "/v1/budget/batch", {"scenarios": [
        {"model": {"hf_config": DEEP}, "gpu": "h100-sxm-80gb", "weights_bytes": 1,
         "pipeline_parallel_size": 1024, "context_tokens": 4096 - i}
        for i in range(1000)]}),
    ("GET", "/v1/sweep", {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "vary": "context_tokens",
                          "values": ",".join(str(2**k) for k in range(0, 41))}),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "payload"), HEAVY, ids=lambda x: x if isinstance(x, str) else "")
def test_heavy_requests_are_bounded_before_they_start(http, method, path, payload):
    r = http.get(path, params=payload) if method == "GET" else http.post(path, json=payload)
    _answered(r)
    _healthz_is_prompt(http)


SILENTLY_WRONG = [
    ({**QWEN3_MOE, "mlp_only_layers": list(range(60))}, "mlp_only_layers"),
    ({**QWEN3_MOE, "mlp_only_layers": [3, 3, 4]}, "mlp_only_layers"),
    ({**QWEN3_MOE, "mlp_only_layers": [-1]}, "mlp_only_layers"),
    ({**QWEN3_MOE, "model_type": "deepseek_v3", "kv_lora_rank": 512, "qk_rope_head_dim": 64,
      "first_k_dense_replace": 61, "n_routed_experts": 256}, "first_k_dense_replace"),
    ({**QWEN3_MOE, "num_experts_per_tok": 1000}, "num_experts_per_tok"),
]  # fmt: skip


@pytest.mark.parametrize(("config", "field"), SILENTLY_WRONG)
def test_impossible_configs_are_refused_naming_the_field(http, config, field):
    r = http.post("/v1/budget", json={"model": {"hf_config": config}, "gpu": "h100-sxm-80gb"})
    assert r.status_code == 400, r.text
    assert field in r.json()["field"]


@pytest.mark.parametrize("utilization", [1e-9, 1e-6, 0.0001, 0.001])
def test_tiny_utilizations_give_no_negative_figure(http, utilization):
    r = http.post(
        "/v1/budget",
        json={"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "gpu_memory_utilization": utilization,
              "tensor_parallel_size": 2, "target_concurrency": 3},
    )  # fmt: skip
    body = _answered(r)
    c = body["concurrency"]
    assert body["available_kv_bytes"] >= 0
    assert min(c["guaranteed"], c["guaranteed_unrounded"], c["budget_floor"], c["budget_unrounded"]) >= 0
    assert body["pooled"]["concurrency_unrounded"] >= 0


SIM_REQUEST = {"prompt_tokens": 1 << 22, "output_tokens": 1}
TINY = {"prompt_tokens": 10, "output_tokens": 1}
SIMULATOR = [
    ({"num_blocks": 1 << 20, "block_size": 16, "max_num_batched_tokens": 1, "max_num_seqs": 1,
      "workload": {"requests": [SIM_REQUEST] * 5}}, None),
    ({"num_blocks": 1 << 20, "block_size": 16, "max_num_batched_tokens": 8, "max_num_seqs": 8,
      "workload": {"requests": [SIM_REQUEST] * 50}}, None),
    ({"num_blocks": 1 << 31, "block_size": 16, "workload": {"requests": [TINY]}}, "num_blocks"),
    ({"num_blocks": 20_000_000, "block_size": 16,
      "workload": {"requests": [{"prompt_tokens": 10, "output_tokens": 1}]}}, "num_blocks"),
    ({"num_blocks": 100_000, "block_size": 16, "workload": {"generator": {
        "count": 100_000, "arrival_rate": 1000, "prompt": {"kind": "fixed", "value": 2000},
        "output": {"kind": "fixed", "value": 10},
        "conversations": {"share": 1, "turns": 64, "user_tokens": 1 << 20}}}}, None),
    ({"num_blocks": 1000, "block_size": 16, "workload": {"generator": {
        "count": 10, "arrival_rate": 5e-324, "prompt": {"kind": "fixed", "value": 20},
        "output": {"kind": "fixed", "value": 2}}}}, None),
    ({"model": "llama-3-8b", "gpu_memory_bytes": 1 << 60, "weights_bytes": 0,
      "workload": {"requests": [{"prompt_tokens": 10, "output_tokens": 1}]}}, None),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), SIMULATOR)
def test_the_simulator_stays_inside_its_limits(http, body, field):
    r = http.post("/v1/simulate", json=body)
    _answered(r, field)
    if field is not None:
        assert r.status_code == 400
    _healthz_is_prompt(http)


@pytest.mark.parametrize("value", ["²", "１２", "3²", "0x10", "1e3", "8192.0", " 5"])
def test_lookalike_numbers_in_query_strings_are_refused_as_post_refuses_them(http, value):
    params = {"model": "gemma-3-27b", "gpu": "h100-sxm-80gb", "kv_cache_dtype": "fp8"}
    if value.strip() == value:  # list items are comma-split and trimmed: "1, 5" is a fine list
        r = http.get("/v1/budget", params={**params, "kv_cache_dtype_skip_layers": value})
        assert r.status_code == 400, r.text
    r = http.get("/v1/budget", params={**params, "context_tokens": value})
    assert r.status_code == 400, r.text
    assert r.json()["field"] == "context_tokens"


def test_the_server_is_alive_and_counted_no_5xx_after_the_hostile_suite(http):
    text = http.get("/metrics").text
    fives = [
        line
        for line in text.splitlines()
        if line.startswith("kvplan_http_requests_total")
        and 'status_code="5' in line
        and not line.endswith(" 0.0")
    ]
    assert fives == [], fives
    assert json.loads(http.get("/healthz").text)["status"] == "ok"
