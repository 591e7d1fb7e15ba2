"""Every engine setting is an input of every route (issue 26): a fleet, a simulation, a sweep and
an incident review plan with the same setting /v1/budget takes, to the same block. Which settings
each request takes is checked by tests/contract/test_one_definition.py; here they are followed
through to the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

BASE = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb"}
# Settings no route took beside /v1/budget before issue 26, each moving the blocks.
SETTINGS = [
    {"num_gpu_blocks_override": 5000},
    {"kv_cache_memory_bytes": 20 * 1024**3},
    {"kv_cache_dtype_skip_layers": [0, 1], "kv_cache_dtype": "fp8", "max_model_len": 16384},
    {"kv_offloading_bytes": 64 * 1024**3, "kv_cache_dtype": "fp8"},
]
LOG = (Path(__file__).parents[1] / "reconcile" / "data" / "engine-0.33-tp2.log").read_text()


def _blocks(client: Any, body: dict[str, Any]) -> int:
    r = client.post("/v1/budget", json=body)
    assert r.status_code == 200, r.text
    return int(r.json()["num_blocks"])


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: next(iter(s)))
def test_a_fleet_plans_a_setting_as_budget_does(client, setting):
    body = {
        "model": BASE["model"], **setting, "workload": {"context_tokens": 4096},
        "fleet": [{"gpu": BASE["gpu"], "count": 8}], "layouts": [{"tensor_parallel_size": 1}],
    }  # fmt: skip
    r = client.post("/v1/fleet", json=body)
    assert r.status_code == 200, r.text
    layout = r.json()["gpu_types"][0]["layouts"][0]
    assert layout["num_blocks"] == _blocks(client, {**BASE, **setting, "context_tokens": 4096})
    assert layout["num_blocks"] != _blocks(client, {**BASE, "context_tokens": 4096})


def test_a_fleet_query_plans_a_setting_as_budget_does(client):
    r = client.get(
        "/v1/fleet",
        params={"model": BASE["model"], "gpu": BASE["gpu"], "context_tokens": "4096",
                "num_gpu_blocks_override": "5000"},
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["gpu_types"][0]["layouts"][0]["num_blocks"] == 5000


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: next(iter(s)))
def test_a_simulation_pool_is_the_budget_of_the_same_setting(client, setting):
    body = {**BASE, **setting, "workload": {"requests": [{"prompt_tokens": 100, "output_tokens": 4}]}}
    r = client.post("/v1/simulate", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["num_blocks"] == _blocks(client, {**BASE, **setting})


def test_a_sweep_varies_one_axis_with_every_other_setting_held(client):
    params = {**BASE, "vary": "context_tokens", "values": "4096", "num_gpu_blocks_override": "5000"}
    r = client.get("/v1/sweep", params=params)
    assert r.status_code == 200, r.text
    assert r.json()["points"][0]["num_blocks"] == 5000


def test_a_reconcile_override_replaces_what_the_log_says(client):
    sent = {"log": LOG, "overrides": {"model": "llama-3.1-70b", "tensor_parallel_size": 4,
                                      "kv_cache_dtype": "fp8"}}  # fmt: skip
    body = client.post("/v1/reconcile", json=sent).json()
    used = {u["name"]: u for u in body["inputs"]}
    assert used["tensor_parallel_size"]["value"] == 4 and used["tensor_parallel_size"]["source"] == "override"
    assert used["kv_cache_dtype"]["source"] == "override"
    # The engine printed its weights on its own 2 GPUs: on TP 4 they are not those, kvplan weighs them.
    assert "weights_bytes" not in used
    assert body["plan"]["num_blocks"] == _blocks(
        client,
        {"model": "llama-3.1-70b", "gpu_memory_bytes": body["plan"]["gpu_memory_bytes"],
         "tensor_parallel_size": 4, "kv_cache_dtype": "fp8", "max_model_len": 4096,
         "gpu_memory_utilization": 0.92, "max_num_batched_tokens": 8192, "engine": body["engine"]},
    )  # fmt: skip


def test_a_logs_command_plans_with_every_flag_the_engine_ran_with(client):
    # --kv-cache-memory-bytes is no figure the log prints: only the command's reading carries it.
    log = LOG.replace("'gpu_memory_utilization': 0.92}", "'gpu_memory_utilization': 0.92, "
                      "'kv_cache_memory_bytes': 21474836480, 'num_gpu_blocks_override': 4000}")  # fmt: skip
    body = client.post("/v1/reconcile", json={"log": log, "overrides": {"model": "llama-3.1-70b"}}).json()
    used = {u["name"]: u for u in body["inputs"]}
    assert used["kv_cache_memory_bytes"]["value"] == 20 * 1024**3
    assert used["kv_cache_memory_bytes"]["source"] == "log line 2 (command)"
    assert body["plan"]["num_blocks"] == 4000
