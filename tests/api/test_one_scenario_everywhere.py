"""One scenario resolves to the same engine settings on every endpoint: budget, simulate, fleet
and sweep all take vLLM's defaults from the engine profile through the same path."""

from __future__ import annotations

from typing import Any

import pytest

SETTINGS = ("max_num_seqs", "max_num_batched_tokens", "block_size", "num_blocks")

SCENARIOS = [
    # The review's case: on an H200 vLLM runs up to 1,024 requests; the simulator said 256.
    {"model": "llama-3.1-8b", "gpu": "h200-141gb", "context_tokens": 8192},
    {"model": "llama-3.1-8b", "gpu": "a100-80gb", "context_tokens": 8192},
    {"model": "llama-3.1-8b", "gpu": "b200-180gb", "context_tokens": 4096, "engine": "vllm@0.33"},
    {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "context_tokens": 8192, "engine": "vllm@0.10"},
    {"model": "llama-3-70b", "gpu": "h100-sxm-80gb", "context_tokens": 8192, "tensor_parallel_size": 4},
    {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "max_num_seqs": 64, "max_num_batched_tokens": 4096},
    {"model": "deepseek-v2-lite", "gpu": "h100-sxm-80gb", "context_tokens": 16384},
]


def _budget(client: Any, sc: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/budget", json=sc)
    assert r.status_code == 200, r.text
    return {k: r.json()[k] for k in SETTINGS}


def _simulate(client: Any, sc: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in sc.items() if k != "context_tokens"}
    body["workload"] = {"requests": [{"prompt_tokens": 100, "output_tokens": 4}]}
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    return {k: r.json()[k] for k in SETTINGS}


def _fleet(client: Any, sc: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in sc.items() if k not in ("gpu", "context_tokens", "tensor_parallel_size")}
    body["workload"] = {"context_tokens": sc.get("context_tokens", 8192)}
    body["fleet"] = [{"gpu": sc["gpu"], "count": 8}]
    body["layouts"] = [{"tensor_parallel_size": sc.get("tensor_parallel_size", 1)}]
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 200, r.text
    layout = r.json()["gpu_types"][0]["layouts"][0]
    return {k: layout[k] for k in SETTINGS}


def _sweep(client: Any, sc: dict[str, Any]) -> dict[str, Any]:
    params = {k: str(v) for k, v in sc.items() if k != "context_tokens"}
    params |= {"vary": "context_tokens", "values": str(sc.get("context_tokens", 131072))}
    r = client.get("/v1/sweep", params=params)
    assert r.status_code == 200, r.text
    point = r.json()["points"][0]
    return {k: point[k] for k in SETTINGS}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda sc: "-".join(str(v) for v in sc.values()))
def test_budget_simulate_fleet_and_sweep_resolve_the_same_settings(client, scenario):
    budget = _budget(client, scenario)
    assert _simulate(client, scenario) == budget
    assert _fleet(client, scenario) == budget
    assert _sweep(client, scenario) == budget


def test_an_h200_runs_1024_requests_in_the_simulator_as_in_the_budget(client):
    sc = SCENARIOS[0]
    assert _budget(client, sc)["max_num_seqs"] == 1024
    assert _simulate(client, sc)["max_num_seqs"] == 1024


def test_a_pool_given_by_size_takes_the_profiles_defaults_for_its_gpu(client):
    body = {"num_blocks": 1000, "gpu": "h200-141gb", "engine": "vllm@0.33"}
    body["workload"] = {"requests": [{"prompt_tokens": 100, "output_tokens": 4}]}
    r = client.post("/v1/simulate", json=body).json()
    assert (r["num_blocks"], r["block_size"], r["max_num_seqs"], r["max_num_batched_tokens"]) == (
        1000,
        16,
        1024,
        8192,
    )
    bare = {"num_blocks": 1000, "workload": body["workload"], "engine": "vllm@0.33"}
    r = client.post("/v1/simulate", json=bare).json()
    assert (r["block_size"], r["max_num_seqs"], r["max_num_batched_tokens"]) == (16, 256, 2048)
